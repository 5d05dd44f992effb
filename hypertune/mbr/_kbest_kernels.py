"""Compiled kernels of k-best MBR (:mod:`hypertune.mbr.kbest`): one call per corpus, the lists in parallel.

``expected_bleu_plus_one`` interns each list's n-grams once (an open-addressing table of ``(prefix id, word)``
keys, so an n-gram's id is exact for any vocabulary), keeps each hypothesis's distinct n-grams with their counts,
and scores every pair ``(e, e')`` by scattering ``e``'s counts into a dense array and walking ``e'``'s n-grams:
the clipped matches ``sum_g min(count_e(g), count_e'(g))`` per order, then BLEU+1 of ``e`` against ``e'``
(:func:`hypertune.metrics.bleu.bleu_plus_one`'s formula with its logarithms of integer counts tabulated).
"""

from __future__ import annotations

import numba
import numpy as np

import hypertune.numba_cache  # noqa: F401  # first: the kernels' cache stamps cover the whole package

_jit = numba.njit(cache=True, nogil=True)
_parallel = numba.njit(cache=True, nogil=True, parallel=True)

_EMPTY = np.int64(-1)
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


@_jit
def _intern(keys, ids, key, bits, next_id):  # pragma: no cover - compiled
    """The id of ``key`` in the table (``next_id`` and a new entry when absent); returns ``(id, next_id)``."""
    mask = (1 << bits) - 1
    slot = np.int64((np.uint64(key) * _MULTIPLIER) >> np.uint64(64 - bits)) & mask
    while True:
        stored = keys[slot]
        if stored == key:
            return ids[slot], next_id
        if stored == _EMPTY:
            keys[slot] = key
            ids[slot] = next_id
            return next_id, next_id + 1
        slot = (slot + 1) & mask


@_jit
def _distinct_ngrams(tokens, starts, order):  # pragma: no cover - compiled
    """Each hypothesis's distinct n-grams (orders 1..``order``) of one list, whose hypothesis ``h`` is
    ``tokens[starts[h]:starts[h+1]]``: ``(offsets, ids, counts, order_of)`` with hypothesis ``h``'s n-grams
    ``ids[offsets[h]:offsets[h+1]]`` (list-local ids), their counts in it, and each id's order (0-based)."""
    k = len(starts) - 1
    positions = starts[k] - starts[0]
    room = max(1, positions * order)
    bits = 1
    while (1 << bits) < 2 * room:
        bits += 1
    keys = np.full(1 << bits, _EMPTY, np.int64)
    table_ids = np.empty(1 << bits, np.int64)
    gram = np.full((order, positions), -1, np.int64)
    order_of = np.empty(room, np.int64)
    count = 0
    for h in range(k):
        lo, hi = starts[h] - starts[0], starts[h + 1] - starts[0]
        for n in range(order):
            for p in range(lo, hi - n):
                prefix = gram[n - 1, p] if n > 0 else -1
                key = ((prefix + 1) << 32) | tokens[starts[0] + p + n]
                g, count = _intern(keys, table_ids, key, bits, count)
                gram[n, p] = g
                order_of[g] = n
    seen = np.zeros(max(count, 1), np.int64)
    offsets = np.zeros(k + 1, np.int64)
    ids = np.empty(room, np.int64)
    counts = np.empty(room, np.int64)
    d = 0
    for h in range(k):
        lo, hi = starts[h] - starts[0], starts[h + 1] - starts[0]
        first = d
        for n in range(order):
            for p in range(lo, hi - n):
                g = gram[n, p]
                if seen[g] == 0:
                    ids[d] = g
                    d += 1
                seen[g] += 1
        for x in range(first, d):
            counts[x] = seen[ids[x]]
            seen[ids[x]] = 0
        offsets[h + 1] = d
    return offsets, ids, counts, order_of[: max(count, 1)], count


@_jit
def _postings(offsets, ids, counts, grams, used):  # pragma: no cover - compiled
    """Each n-gram's postings among the ``used`` hypotheses, in hypothesis order: ``holder[postings[g]:postings[g
    + 1]]`` hold n-gram ``g``, ``held`` times each; and the used hypotheses, ``members``."""
    k = len(offsets) - 1
    postings = np.zeros(grams + 1, np.int64)
    members = np.empty(k, np.int64)
    size = 0
    for h in range(k):
        if used[h]:
            members[size] = h
            size += 1
            for x in range(offsets[h], offsets[h + 1]):
                postings[ids[x] + 1] += 1
    for g in range(grams):
        postings[g + 1] += postings[g]
    fill = postings[:-1].copy()
    holder = np.empty(postings[grams], np.int64)
    held = np.empty(postings[grams], np.int64)
    for m in range(size):
        h = members[m]
        for x in range(offsets[h], offsets[h + 1]):
            g = ids[x]
            holder[fill[g]] = h
            held[fill[g]] = counts[x]
            fill[g] += 1
    return postings, holder, held, members[:size]


@_jit
def _all_but(matrix, holders, members, stamp, mark, v):  # pragma: no cover - compiled
    """``matrix`` (a pair matrix's upper triangle) less ``v`` for every pair of ``members`` not both among
    ``holders``: what adding ``v`` to all pairs gives too much, paid by the few members that lack the n-gram
    (``stamp``: scratch, one entry per hypothesis; ``mark``: a value it does not hold yet)."""
    for h in holders:
        stamp[h] = mark
    for x in range(len(members)):
        i = members[x]
        if stamp[i] == mark:
            continue
        for j in members:
            if j < i:
                matrix[j, i] -= v
            elif j > i:
                matrix[i, j] -= v
        for y in range(x + 1, len(members)):
            if stamp[members[y]] != mark:
                matrix[i, members[y]] += v


@_jit
def _pair_matches(offsets, ids, counts, order_of, grams, used, order):  # pragma: no cover - compiled
    """Clipped matches ``sum_g min(count_i(g), count_j(g))`` of every pair ``i < j`` of one list's ``used``
    hypotheses, per order: ``base[n] + matches[n, i, j]`` (upper triangle). From each n-gram's postings, so the
    cost is the number of n-grams pairs share, not the pairs' lengths; an n-gram that most hypotheses hold the
    same number of times ``v`` adds ``v`` to every pair (``base``) and takes it back from the pairs of the few
    that lack it."""
    k = len(offsets) - 1
    postings, holder, held, members = _postings(offsets, ids, counts, grams, used)
    size = len(members)
    matches = np.zeros((order, k, k), np.int32)
    base = np.zeros(order, np.int64)
    stamp = np.zeros(k, np.int64)
    for g in range(grams):
        n = order_of[g]
        lo, hi = postings[g], postings[g + 1]
        v = held[lo]
        uniform = True
        for a in range(lo, hi):
            uniform &= held[a] == v
        if uniform and 2 * (size - (hi - lo)) * size < (hi - lo) * (hi - lo):
            base[n] += v
            _all_but(matches[n], holder[lo:hi], members, stamp, g + 1, v)
            continue
        for a in range(lo, hi):
            i, c = holder[a], held[a]
            row = matches[n, i]
            for b in range(a + 1, hi):
                row[holder[b]] += min(c, held[b])
    return base, matches


@_jit
def _bleu_plus_one_list(tokens, starts, q, candidate, order, exclude_self, out):  # pragma: no cover
    """``out[i] = sum_j q[j] BLEU+1(e_i against e_j)`` for the candidates ``i`` of one list (``j != i`` when
    ``exclude_self``; evidence ``j`` is every hypothesis with ``q[j] > 0``)."""
    k = len(starts) - 1
    offsets, ids, counts, order_of, grams = _distinct_ngrams(tokens, starts, order)
    used = np.empty(k, np.bool_)
    for h in range(k):
        used[h] = candidate[h] or q[h] > 0.0
    base, matches = _pair_matches(offsets, ids, counts, order_of, grams, used, order)
    lengths = np.diff(starts)
    longest = 0
    for h in range(k):
        longest = max(longest, lengths[h])
    logs = np.log(np.arange(longest + 2).astype(np.float64))  # log(x) of every count x + add; x = 0 never read
    for i in range(k):
        if not candidate[i]:
            continue
        length = lengths[i]
        total = 0.0
        own = 0.0  # -sum_n log(c_n + add): the candidate's counts are the same against every e'
        for n in range(order):
            own -= logs[max(0, length - n) + (1 if n > 0 else 0)]
        for j in range(k):
            if q[j] <= 0.0 or (exclude_self and j == i) or length == 0:
                continue
            lo, hi = min(i, j), max(i, j)
            first = base[0] + matches[0, lo, hi] if i != j else length
            if first == 0:
                continue  # BLEU+1 is 0 without a unigram match
            log_bleu = own + logs[first]
            for n in range(1, order):
                log_bleu += logs[(base[n] + matches[n, lo, hi] if i != j else max(0, length - n)) + 1]
            log_bleu /= order
            if length < lengths[j]:
                log_bleu += 1.0 - lengths[j] / length
            total += q[j] * np.exp(log_bleu)
        out[i] = total


@_parallel
def expected_bleu_plus_one(
    tokens, token_offsets, list_offsets, q, candidate, order, exclude_self, out
):  # pragma: no cover
    """Expected BLEU+1 of every candidate hypothesis of every list (``out``, flat over hypotheses; left as it
    is for non-candidates): list ``s`` is hypotheses ``list_offsets[s]:list_offsets[s+1]``, hypothesis ``h``
    the words ``tokens[token_offsets[h]:token_offsets[h+1]]``, ``q`` the evidence weights."""
    for s in numba.prange(len(list_offsets) - 1):
        a, b = list_offsets[s], list_offsets[s + 1]
        _bleu_plus_one_list(tokens, token_offsets[a : b + 1], q[a:b], candidate[a:b], order, exclude_self, out[a:b])


@_parallel
def expected_from_matrices(matrices, matrix_offsets, list_offsets, q, candidate, exclude_self, out):  # pragma: no cover
    """``out[i] = sum_j q[j] U[i, j]`` for the candidates of every list, ``U`` the list's row-major ``k x k``
    matrix ``matrices[matrix_offsets[s]:matrix_offsets[s+1]]`` (``j != i`` when ``exclude_self``)."""
    for s in numba.prange(len(list_offsets) - 1):
        a, b = list_offsets[s], list_offsets[s + 1]
        k = b - a
        base = matrix_offsets[s]
        for i in range(k):
            if not candidate[a + i]:
                continue
            total = 0.0
            for j in range(k):
                if q[a + j] > 0.0 and not (exclude_self and j == i):
                    total += q[a + j] * matrices[base + i * k + j]
            out[a + i] = total


@_jit
def best_per_list(values, candidate, list_offsets):  # pragma: no cover - compiled
    """The index (within its list) of each list's largest ``values`` among its candidates; ties: the earlier."""
    n = len(list_offsets) - 1
    best = np.zeros(n, np.int64)
    for s in range(n):
        a, b = list_offsets[s], list_offsets[s + 1]
        chosen = -1
        for h in range(a, b):
            if candidate[h] and (chosen < 0 or values[h] > values[chosen]):
                chosen = h
        best[s] = max(chosen, a) - a
    return best


@_jit
def pair_match_matrix(offsets, ids, counts, order_of, grams, order):  # pragma: no cover - compiled
    """Clipped matches of every pair of one list's hypotheses per order, ``(order, k, k)`` and symmetric, from
    their distinct n-grams (``ids[offsets[h]:offsets[h+1]]`` with ``counts``, each id's order ``order_of``); the
    diagonal is each hypothesis's own n-gram count. For metrics whose statistics are n-gram matches (chrF)."""
    k = len(offsets) - 1
    base, upper = _pair_matches(offsets, ids, counts, order_of, grams, np.ones(k, np.bool_), order)
    full = np.zeros((order, k, k), np.int64)
    for n in range(order):
        for i in range(k):
            for j in range(i + 1, k):
                full[n, i, j] = full[n, j, i] = base[n] + upper[n, i, j]
    for h in range(k):
        for x in range(offsets[h], offsets[h + 1]):
            full[order_of[ids[x]], h, h] += counts[x]
    return full
