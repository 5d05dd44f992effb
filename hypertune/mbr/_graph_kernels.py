"""Compiled kernels of lattice MBR and consensus decoding (:mod:`hypertune.mbr.lattice`,
:mod:`hypertune.mbr.consensus`), each over one n-gram-split graph.

N-gram ids: an n-gram ``w_1 .. w_n`` is interned as a chain, ``id(w_1 .. w_n)`` being the id of the key
``(id(w_1 .. w_{n-1}), w_n)`` in the project's key table (:func:`hypertune.compiled.insert_key`), so ids are
exact for any vocabulary. Keys: ``prefix * stride + word`` with ``stride`` above every word id, and
``word - stride`` for a unigram (no prefix).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from hypertune.compiled import find_key, insert_key

_jit = numba.njit(cache=True, nogil=True)


class GramTable(NamedTuple):
    """An n-gram table: ``keys`` (a power-of-two region of the key table, ``shift = 64 - log2(size)``), each
    slot's id ``slot_ids``, and ``stride``, above every word id."""

    keys: np.ndarray
    slot_ids: np.ndarray
    shift: np.uint64
    stride: int


class SplitForest(NamedTuple):
    """What the passes over a split graph read: its edges grouped by head (``node_offsets``, ``tail_offsets``,
    ``tails``), the n-gram rows each edge creates (``gram_offsets``) and every row's n-gram id (``ids``)."""

    node_offsets: np.ndarray
    tail_offsets: np.ndarray
    tails: np.ndarray
    gram_offsets: np.ndarray
    ids: np.ndarray


@_jit
def intern_grams(grams, orders, table):  # pragma: no cover - compiled
    """The id of every n-gram row (``grams[r, :orders[r]]``) in ``table`` (a :class:`GramTable`), new ids
    numbered from 0 in order of first appearance (prefixes included); returns ``(ids, count, first, lengths)``:
    n-gram ``i`` is ``grams[first[i], :lengths[i]]``."""
    keys, slot_ids, shift, stride = table
    mask = keys.size - 1
    ids = np.empty(orders.size, np.int64)
    first = np.empty(orders.size * grams.shape[1] + 1, np.int64)
    lengths = np.empty(first.size, np.int64)
    count = 0
    for r in range(orders.size):
        prefix = -1
        for j in range(orders[r]):
            key = grams[r, j] - stride if prefix < 0 else prefix * stride + grams[r, j]
            slot = insert_key(keys, 0, mask, shift, key)
            if slot < 0:
                slot = -slot - 2
                slot_ids[slot] = count
                first[count] = r
                lengths[count] = j + 1
                count += 1
            prefix = slot_ids[slot]
        ids[r] = prefix
    return ids, count, first[:count].copy(), lengths[:count].copy()


@_jit
def repeatable_grams(forest, num_grams, block_words):  # pragma: no cover - compiled
    """Which n-grams some derivation contains at least twice: an edge creates one twice, creates one that a
    derivation of a tail can contain, or two tails (the same node twice included) can both contain it. ``R(v)``,
    the n-grams some derivation of ``v`` contains, is a bit set per node, ``block_words`` 64-bit words (bits of
    n-gram ids) at a time, bottom-up. Exact when every node lies on a derivation of the goal (a trimmed graph)."""
    node_offsets, tail_offsets, tails, gram_offsets, ids = forest
    n = node_offsets.size - 1
    out = np.zeros(num_grams, np.bool_)
    one = np.uint64(1)
    for start in range(0, num_grams, 64 * block_words):
        width = min(block_words, (num_grams - start + 63) // 64)
        bits = np.zeros((n, width), np.uint64)
        acc = np.zeros(width, np.uint64)
        for v in range(n):
            for e in range(node_offsets[v], node_offsets[v + 1]):
                acc[:] = 0
                for k in range(tail_offsets[e], tail_offsets[e + 1]):
                    u = tails[k]
                    for j in range(width):
                        both = acc[j] & bits[u, j]
                        if both:
                            for b in range(64):
                                if (both >> np.uint64(b)) & one:
                                    out[start + 64 * j + b] = True
                        acc[j] |= bits[u, j]
                for r in range(gram_offsets[e], gram_offsets[e + 1]):
                    g = ids[r] - start
                    if 0 <= g < 64 * width:
                        j, b = g >> 6, np.uint64(g & 63)
                        if (acc[j] >> b) & one:
                            out[ids[r]] = True
                        acc[j] |= one << b
                for j in range(width):
                    bits[v, j] |= acc[j]
    return out


@_jit
def at_least_once(forest, shares, goal, local, count, block):  # pragma: no cover - compiled
    """``P(w in d)`` for the n-grams with ``local[id] >= 0`` (``count`` of them; ``local`` numbers them) of a
    :class:`SplitForest`, under the distribution whose edge shares are ``shares`` (``pi(e)``: the probability that
    a derivation of the head uses ``e``), at ``goal``.
    Bottom-up, ``q(v, w) = sum_e pi(e) f_e(w)`` with ``f_e(w) = 1`` when ``e`` creates ``w``, else
    ``1 - prod_tails (1 - q(u, w))`` (the tails' sub-derivations are independent given ``e``), accumulated as
    ``f <- f + q (1 - f)`` so that small values lose no digits; ``block`` n-grams at a time."""
    node_offsets, tail_offsets, tails, gram_offsets, ids = forest
    n = node_offsets.size - 1
    out = np.zeros(count)
    for start in range(0, count, block):
        width = min(block, count - start)
        q = np.zeros((n, width))
        f = np.empty(width)
        for v in range(n):
            for e in range(node_offsets[v], node_offsets[v + 1]):
                share = shares[e]
                if share == 0.0:
                    continue
                k0, k1 = tail_offsets[e], tail_offsets[e + 1]
                if k0 == k1:
                    f[:] = 0.0
                else:
                    f[:] = q[tails[k0]]
                    for k in range(k0 + 1, k1):
                        u = tails[k]
                        for j in range(width):
                            f[j] += q[u, j] * (1.0 - f[j])
                for r in range(gram_offsets[e], gram_offsets[e + 1]):
                    j = local[ids[r]] - start
                    if 0 <= j < width:
                        f[j] = 1.0
                for j in range(width):
                    q[v, j] += share * f[j]
        out[start : start + width] = q[goal]
    return out


@_jit
def derivation_sum(best_edge, goal, tail_offsets, tails, values):  # pragma: no cover - compiled
    """``sum(values[e])`` over the edges of the derivation that takes ``best_edge[v]`` at every node from
    ``goal`` (an explicit stack: no recursion)."""
    stack = np.empty(64, np.int64)
    stack[0] = goal
    depth = 1
    total = 0.0
    while depth:
        depth -= 1
        e = best_edge[stack[depth]]
        total += values[e]
        for k in range(tail_offsets[e], tail_offsets[e + 1]):
            if depth == stack.size:
                stack = np.concatenate((stack, np.empty(stack.size, np.int64)))
            stack[depth] = tails[k]
            depth += 1
    return total


@_jit
def consensus_stats(tokens, token_offsets, order, table, expected, id_orders):  # pragma: no cover - compiled
    """BLEU statistics of every hypothesis ``tokens[token_offsets[h]:token_offsets[h+1]]`` against expected
    n-gram counts (``expected[id]``, ``id_orders[id]``: ids of ``table`` filled by :func:`intern_grams`; an n-gram
    not in the table matches nothing): per order ``n`` the clipped matches ``sum_g min(c_h(g), expected[g])`` and
    the n-gram count ``c_n``, then the length; rows ``[m_1, c_1, ..., m_N, c_N, length]`` as BLEU's statistics."""
    keys, slot_ids, shift, stride = table
    mask = keys.size - 1
    count = token_offsets.size - 1
    stats = np.zeros((count, 2 * order + 1))
    for h in range(count):
        lo, hi = token_offsets[h], token_offsets[h + 1]
        length = hi - lo
        stats[h, 2 * order] = length
        grams = np.full(max(1, length * order), -1, np.int64)
        n_grams = 0
        for i in range(lo, hi):
            prefix = -1
            for n in range(order):
                if i + n >= hi:
                    break
                stats[h, 2 * n + 1] += 1.0
                if n > 0 and prefix < 0:
                    continue
                word = tokens[i + n]
                slot = -1
                if 0 <= word < stride:
                    key = word - stride if n == 0 else prefix * stride + word
                    slot = find_key(keys, 0, mask, shift, key)
                prefix = slot_ids[slot] if slot >= 0 else -1
                if prefix >= 0:
                    grams[n_grams] = prefix
                    n_grams += 1
        found = np.sort(grams[:n_grams])
        i = 0
        while i < n_grams:
            j = i
            while j < n_grams and found[j] == found[i]:
                j += 1
            g = found[i]
            stats[h, 2 * (id_orders[g] - 1)] += min(float(j - i), expected[g])
            i = j
    return stats
