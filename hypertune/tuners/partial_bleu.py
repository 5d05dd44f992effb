"""The ``partial`` BLEU oracle search with a beam of K states per node (Li & Khudanpur 2009; Sokolov,
Wisniewski & Yvon 2012, PB-ℓ).

Each node keeps up to K partial derivations, each with its BLEU statistics and boundary words (first and
last N−1 words). An edge combines one state of each tail: it adds the n-grams it creates (within its own
words and across its tails' boundaries, clipped by the reference counts within the edge) to its tails'
statistics, with the reference length prorated by the share of the source the head covers, and is
ranked by BLEU+1 of those statistics. A node keeps its K best. With K = 1 this is the approximate hope
search of :mod:`hypertune.tuners.hope_fear` with the model score left out; its building blocks
(the word sequence of an edge, the n-grams it creates, the boundary words) are shared with it.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

import hypertune.numba_cache  # noqa: F401  # first: the kernels' cache stamps cover the whole package
from hypertune.metrics.bleu import bleu_plus_one
from hypertune.tuners.hope_fear import SearchScratch, count_new_ngrams, keep_boundary_words

_jit = numba.njit(cache=True, nogil=True)


class _Beam(NamedTuple):
    """Every state of the search (state ``v * K + i`` is node ``v``'s ``i``-th): statistics, boundary words,
    score, the edge it took and the state of each of that edge's tails; ``filled[v]`` states are in use."""

    stats: np.ndarray
    left: np.ndarray
    right: np.ndarray
    ylen: np.ndarray
    score: np.ndarray
    edge: np.ndarray
    choice: np.ndarray
    filled: np.ndarray


@_jit
def beam_search(forest, refs, order, beam, max_arity):  # pragma: no cover - compiled
    """Pre-order edges of the best derivation found with ``beam`` states per node (see the module docstring):
    ``forest`` a :class:`~hypertune.tuners.hope_fear.ForestArrays`, ``refs`` its sentence's
    :class:`~hypertune.tuners.hope_fear.ReferenceNgrams`, ``max_arity`` the graph's largest arity."""
    n = forest.node_offsets.size - 1
    k = order - 1
    size = 2 * order + 1
    states = n * beam
    b = _Beam(
        np.zeros((states, size)),
        np.zeros((states, max(k, 1)), dtype=np.int64),
        np.zeros((states, max(k, 1)), dtype=np.int64),
        np.zeros(states, dtype=np.int64),
        np.full(states, -np.inf),
        np.full(states, -1, dtype=np.int64),
        np.zeros((states, max(max_arity, 1)), dtype=np.int64),
        np.zeros(n, dtype=np.int64),
    )
    scratch = SearchScratch(
        np.empty(refs.max_sequence, dtype=np.int64),
        np.empty(refs.max_sequence, dtype=np.int64),
        np.empty(refs.max_sequence * order, dtype=np.int64),
        np.empty(refs.max_sequence * order, dtype=np.int64),
    )
    stats = np.empty(size)
    combo = np.zeros(max(max_arity, 1), dtype=np.int64)
    for v in range(n):
        for e in range(forest.node_offsets[v], forest.node_offsets[v + 1]):
            first, arity = forest.tail_offsets[e], forest.tail_offsets[e + 1] - forest.tail_offsets[e]
            if _any_empty(forest.tails, first, arity, b.filled):
                continue
            combo[:arity] = 0
            while True:
                length = _state_sequence(e, forest, combo, beam, b, k, scratch)
                stats[:] = 0.0
                for i in range(arity):
                    stats[: size - 1] += b.stats[forest.tails[first + i] * beam + combo[i], : size - 1]
                count_new_ngrams(length, scratch, order, refs, stats)
                stats[size - 1] = refs.fraction[v] * refs.ref_len
                _offer(v, e, combo, arity, stats, bleu_plus_one(stats, order), length, scratch, beam, k, b)
                if not _next_combo(combo, forest.tails, first, arity, b.filled):
                    break
    goal = n - 1
    return _edges_of(goal * beam, b, forest.tail_offsets, forest.tails, beam)


@_jit
def _any_empty(tails, first, arity, count):  # pragma: no cover - compiled
    for i in range(arity):
        if count[tails[first + i]] == 0:
            return True
    return False


@_jit
def _next_combo(combo, tails, first, arity, count):  # pragma: no cover - compiled
    """Advance the odometer of tail states; False when every combination was seen."""
    for i in range(arity - 1, -1, -1):
        combo[i] += 1
        if combo[i] < count[tails[first + i]]:
            return True
        combo[i] = 0
    return False


@_jit
def _state_sequence(e, forest, combo, beam, b, k, scratch):  # pragma: no cover - compiled
    """Edge ``e``'s words with each tail replaced by the chosen state's boundary words (-1 = gap)."""
    seq_word, seq_seg = scratch.seq_word, scratch.seq_seg
    length = 0
    for t in range(forest.target_offsets[e], forest.target_offsets[e + 1]):
        token = forest.target[t]
        if token >= 0:
            seq_word[length], seq_seg[length] = token, -1
            length += 1
            continue
        i = -token - 1
        u = forest.tails[forest.tail_offsets[e] + i] * beam + combo[i]
        words = min(b.ylen[u], k)
        for j in range(words):
            seq_word[length], seq_seg[length] = b.left[u, j], i
            length += 1
        if b.ylen[u] >= k:
            seq_word[length], seq_seg[length] = -1, i
            length += 1
            for j in range(k):
                seq_word[length], seq_seg[length] = b.right[u, j], i
                length += 1
    return length


@_jit
def _offer(v, e, combo, arity, stats, score, length, scratch, beam, k, b):  # pragma: no cover - compiled
    """Insert a candidate state into node ``v``'s K best (ties keep the earlier state)."""
    base = v * beam
    used = b.filled[v]
    slot = used
    while slot > 0 and score > b.score[base + slot - 1]:
        slot -= 1
    if slot >= beam:
        return
    last = min(used, beam - 1)
    for s in range(base + last, base + slot, -1):  # shift the worse states down one place
        b.stats[s], b.left[s], b.right[s] = b.stats[s - 1], b.left[s - 1], b.right[s - 1]
        b.ylen[s], b.score[s], b.edge[s], b.choice[s] = b.ylen[s - 1], b.score[s - 1], b.edge[s - 1], b.choice[s - 1]
    s = base + slot
    b.stats[s], b.score[s], b.edge[s] = stats, score, e
    b.choice[s, :arity] = combo[:arity]
    keep_boundary_words(s, length, scratch, k, b.left, b.right, b.ylen)
    b.filled[v] = min(used + 1, beam)


@_jit
def _edges_of(state, b, tail_offsets, tails, beam):  # pragma: no cover - compiled
    """Pre-order edges of the derivation below ``state``, following each state's tail choices."""
    out = np.empty(64, dtype=np.int64)
    stack = np.empty(64, dtype=np.int64)
    stack[0] = state
    top, count = 1, 0
    while top:
        top -= 1
        s = stack[top]
        e = b.edge[s]
        if count == out.size:
            out = np.concatenate((out, np.empty(out.size, dtype=np.int64)))
        out[count] = e
        count += 1
        arity = tail_offsets[e + 1] - tail_offsets[e]
        for i in range(arity - 1, -1, -1):
            if top == stack.size:
                stack = np.concatenate((stack, np.empty(stack.size, dtype=np.int64)))
            stack[top] = tails[tail_offsets[e] + i] * beam + b.choice[s, i]
            top += 1
    return out[:count]
