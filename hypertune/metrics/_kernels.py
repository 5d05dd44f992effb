"""Compiled (numba) kernels for BLEU sufficient statistics.

Representation (see :mod:`hypertune.metrics.bleu` for the public side):

* Every sentence gets a *local vocabulary*: the distinct word ids of its references, numbered
  ``1 .. R``; a hypothesis word outside it gets ``0`` and can match no n-gram.
* An n-gram of local ids ``(l_1, ..., l_n)`` is the integer ``sum_i l_i * B**(n-i)`` with
  ``B = R + 1``. All digits are non-zero, so the key is *exact*: different n-grams (of any order)
  never share a key. The caller checks ``B ** N < 2**63`` and uses the exact pure-Python path
  otherwise, so there are no hash collisions anywhere.
* Both maps (global word id -> local id, n-gram key -> maximum reference count) are regions (one per
  sentence) of the project's key table, :func:`hypertune.compiled.find_key` / ``insert_key``.
"""

from __future__ import annotations

from typing import NamedTuple

import numba as nb
import numpy as np

from hypertune.compiled import find_key, helper_jit, insert_key

# Reference-length strategies (the integer codes the kernels understand).
CLOSEST, SHORTEST, AVERAGE, IBM = 0, 1, 2, 3


class ReferenceTables(NamedTuple):
    """The reference side of a corpus, as the kernels read it: sentence ``s`` has references
    ``sent_ref_offsets[s]:sent_ref_offsets[s + 1]`` of lengths ``ref_lengths``; its word table (global id
    -> local id) is ``word_keys/word_values[word_offsets[s]:word_offsets[s + 1]]`` (``2**word_bits[s]``
    slots), its n-gram table (key -> maximum reference count) ``gram_keys/gram_counts[gram_offsets[s]:...]``,
    and ``bases[s]`` the numeral base of its n-gram keys."""

    sent_ref_offsets: np.ndarray
    ref_lengths: np.ndarray
    word_offsets: np.ndarray
    word_bits: np.ndarray
    word_keys: np.ndarray
    word_values: np.ndarray
    gram_offsets: np.ndarray
    gram_bits: np.ndarray
    gram_keys: np.ndarray
    gram_counts: np.ndarray
    bases: np.ndarray


class Hypotheses(NamedTuple):
    """Hypothesis ``h`` is ``tokens[offsets[h]:offsets[h + 1]]`` (word ids) of sentence ``sentence[h]``."""

    tokens: np.ndarray
    offsets: np.ndarray
    sentence: np.ndarray


@nb.njit(cache=True)
def build_tables(ref_tokens: np.ndarray, ref_offsets: np.ndarray, tables: ReferenceTables, max_order: int) -> None:
    """Fill the per-sentence word and n-gram tables (arrays pre-filled with ``EMPTY_KEY`` / 0 by the caller).

    ``gram_counts[slot]`` ends as the maximum count of that n-gram over the sentence's references
    (the clipping count of Papineni et al. 2002).
    """
    sent_ref_offsets, word_offsets, word_bits, gram_offsets, gram_bits = (
        tables.sent_ref_offsets,
        tables.word_offsets,
        tables.word_bits,
        tables.gram_offsets,
        tables.gram_bits,
    )
    word_keys, word_values, gram_keys, gram_counts, bases = (
        tables.word_keys,
        tables.word_values,
        tables.gram_keys,
        tables.gram_counts,
        tables.bases,
    )
    n_sent = sent_ref_offsets.shape[0] - 1
    max_gram = 0
    for s in range(n_sent):
        size = gram_offsets[s + 1] - gram_offsets[s]
        if size > max_gram:
            max_gram = size
    current = np.zeros(max_gram, dtype=np.int32)
    touched = np.empty(max_gram, dtype=np.int64)
    for s in range(n_sent):
        wbase = word_offsets[s]
        wmask = word_offsets[s + 1] - wbase - 1
        wshift = np.uint64(64 - word_bits[s])
        gbase = gram_offsets[s]
        gmask = gram_offsets[s + 1] - gbase - 1
        gshift = np.uint64(64 - gram_bits[s])
        # pass 1: local vocabulary
        n_local = 0
        for r in range(sent_ref_offsets[s], sent_ref_offsets[s + 1]):
            for t in range(ref_offsets[r], ref_offsets[r + 1]):
                slot = insert_key(word_keys, wbase, wmask, wshift, ref_tokens[t])
                if slot < -1:
                    n_local += 1
                    word_values[-slot - 2] = n_local
        base = np.int64(n_local + 1)
        bases[s] = base
        # pass 2: n-gram counts per reference, merged by maximum
        for r in range(sent_ref_offsets[s], sent_ref_offsets[s + 1]):
            start = ref_offsets[r]
            length = ref_offsets[r + 1] - start
            n_touched = 0
            for j in range(length):
                key = np.int64(0)
                top = min(max_order, length - j)
                for n in range(top):
                    w = find_key(word_keys, wbase, wmask, wshift, ref_tokens[start + j + n])
                    key = key * base + word_values[w]
                    slot = insert_key(gram_keys, gbase, gmask, gshift, key)
                    if slot < -1:
                        slot = -slot - 2
                    local = slot - gbase
                    if current[local] == 0:
                        touched[n_touched] = local
                        n_touched += 1
                    current[local] += 1
            for i in range(n_touched):
                local = touched[i]
                if current[local] > gram_counts[gbase + local]:
                    gram_counts[gbase + local] = current[local]
                current[local] = 0


@nb.njit(cache=True)
def _reference_length(ref_lengths: np.ndarray, lo: int, hi: int, hyp_len: int, mode: int) -> float:
    if hi <= lo:
        return 0.0
    if mode == SHORTEST:
        best = ref_lengths[lo]
        for i in range(lo + 1, hi):
            if ref_lengths[i] < best:
                best = ref_lengths[i]
        return float(best)
    if mode == AVERAGE:
        total = 0.0
        for i in range(lo, hi):
            total += ref_lengths[i]
        return total / (hi - lo)
    best = ref_lengths[lo]
    best_diff = abs(best - hyp_len)
    for i in range(lo + 1, hi):
        diff = abs(ref_lengths[i] - hyp_len)
        if diff < best_diff:
            best_diff = diff
            best = ref_lengths[i]
        elif diff == best_diff and mode == CLOSEST and ref_lengths[i] < best:
            best = ref_lengths[i]  # ties go to the shorter reference (sacrebleu, Moses, Z-MERT)
        # IBM (cdec): ties keep the earlier reference
    return float(best)


@helper_jit
def _stats_range(
    lo: int,
    hi: int,
    hyps: Hypotheses,
    tables: ReferenceTables,
    max_order: int,
    mode: int,
    clip: bool,
    out: np.ndarray,
    scratch: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> None:
    """Statistics of hypotheses ``lo:hi`` into ``out`` (``scratch``: clipping counts, touched slots, local ids)."""
    hyp_tokens, hyp_offsets, hyp_sentence = hyps
    (sent_ref_offsets, ref_lengths, word_offsets, word_bits, word_keys, word_values,
     gram_offsets, gram_bits, gram_keys, gram_counts, bases) = tables  # fmt: skip
    used, touched, local = scratch
    for h in range(lo, hi):
        s = hyp_sentence[h]
        start = hyp_offsets[h]
        length = hyp_offsets[h + 1] - start
        wbase = word_offsets[s]
        wmask = word_offsets[s + 1] - wbase - 1
        wshift = np.uint64(64 - word_bits[s])
        gbase = gram_offsets[s]
        gmask = gram_offsets[s + 1] - gbase - 1
        gshift = np.uint64(64 - gram_bits[s])
        base = bases[s]
        for j in range(length):
            w = find_key(word_keys, wbase, wmask, wshift, hyp_tokens[start + j])
            local[j] = word_values[w] if w >= 0 else 0
        for n in range(max_order):
            out[h, 2 * n] = 0.0
            c = length - n
            out[h, 2 * n + 1] = float(c) if c > 0 else 0.0
        n_touched = 0
        for j in range(length):
            key = np.int64(0)
            top = min(max_order, length - j)
            for n in range(top):
                digit = local[j + n]
                if digit == 0:
                    break
                key = key * base + digit
                slot = find_key(gram_keys, gbase, gmask, gshift, key)
                if slot < 0:
                    break  # no extension of an unseen n-gram can be seen either
                if clip:
                    k = slot - gbase
                    if used[k] == 0:
                        touched[n_touched] = k
                        n_touched += 1
                    used[k] += 1
                    if used[k] <= gram_counts[slot]:
                        out[h, 2 * n] += 1.0
                else:
                    out[h, 2 * n] += 1.0
        for i in range(n_touched):
            used[touched[i]] = 0
        out[h, 2 * max_order] = _reference_length(
            ref_lengths, sent_ref_offsets[s], sent_ref_offsets[s + 1], length, mode
        )


@nb.njit(cache=True)
def _clipping_scratch(max_gram: int, max_len: int, max_order: int) -> tuple:  # pragma: no cover - compiled
    """One worker's scratch for :func:`_stats_range`: per reference n-gram the count used so far, the
    n-grams touched (to reset them), and the hypothesis in local word ids."""
    used = np.zeros(max_gram, dtype=np.int32)
    touched = np.empty(max(1, max_len * max_order), dtype=np.int64)
    local = np.empty(max(1, max_len), dtype=np.int64)
    return used, touched, local


@nb.njit(cache=True, parallel=True)
def hypothesis_stats(
    hyps: Hypotheses,
    tables: ReferenceTables,
    max_order: int,
    mode: int,
    clip: bool,
    n_chunks: int,
    max_gram: int,
    max_len: int,
    out: np.ndarray,
) -> None:
    """BLEU statistics ``m1 c1 ... mN cN reflen`` of every hypothesis, written into ``out``.

    Hypothesis ``h`` is ``hyp_tokens[hyp_offsets[h]:hyp_offsets[h+1]]`` and is scored against the
    references of sentence ``hyp_sentence[h]``. Work is split into ``n_chunks`` contiguous ranges
    run in parallel, each with its own clipping scratch space.
    """
    n = hyps.offsets.shape[0] - 1
    step = (n + n_chunks - 1) // n_chunks
    for c in nb.prange(n_chunks):
        lo = c * step
        hi = min(n, lo + step)
        if lo >= hi:
            continue
        _stats_range(lo, hi, hyps, tables, max_order, mode, clip, out, _clipping_scratch(max_gram, max_len, max_order))


@nb.njit(cache=True)
def hypothesis_stats_serial(
    hyps: Hypotheses,
    tables: ReferenceTables,
    max_order: int,
    mode: int,
    clip: bool,
    n_chunks: int,
    max_gram: int,
    max_len: int,
    out: np.ndarray,
) -> None:
    """Single-threaded :func:`hypothesis_stats` (no thread start-up cost for small batches)."""
    scratch = _clipping_scratch(max_gram, max_len, max_order)
    _stats_range(0, hyps.offsets.shape[0] - 1, hyps, tables, max_order, mode, clip, out, scratch)
