"""Compiled kernels of lazy k-best extraction (:mod:`hypertune.algorithms.kbest`; Huang & Chiang 2005, Alg. 3).

:func:`lazy_kbest` runs Algorithm 3 for one root node with an explicit stack of requests ``(node, count)``
instead of recursion. Every candidate ``<e, j>`` lives in one pool (edge, score, its rank vector ``j`` in a
pool of ints); a node's heap and its list of found derivations are regions of two shared int arrays, moved
to the end (doubled) when full. A heap orders its candidates by score, then edge id, then rank vector
(lexicographically), larger score first: the order of ``heapq`` on ``(-score, edge, ranks)``, so that ties
fall exactly as they fell in the earlier Python implementation. With ``unique``, each found derivation's
yield is kept in a token pool and a hash table of ``(node, yield)`` skips a string already found at that node.

:func:`describe` turns the root's found derivations into flat arrays: each derivation's yield (word ids),
its edges in pre-order, and its feature vector summed as :meth:`Hypergraph.derivation_features` sums it
(``f = Σ_e count_e · f_e`` in increasing edge order, then the nonzero entries by column).
:func:`moses_lines` writes those arrays as Moses n-best lines (``decode --out``).
"""

from __future__ import annotations

import numba
import numpy as np

from hypertune.compiled import grown, helper_jit

_jit = numba.njit(cache=True, nogil=True)
# helpers called per candidate, line or hash probe allocate nothing: compiled without reference counts, so a
# call does not count its array arguments up and down (half the search's time otherwise)
_helper = helper_jit


_EMPTY = np.int64(-1)
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


@_helper
def _before(a, sa, b, sb, c_edge, c_rank, ranks, tail_offsets):  # pragma: no cover - compiled
    """Candidate ``a`` (score ``sa``) pops before ``b`` (score ``sb``): higher score, then lower edge id,
    then smaller rank vector."""
    if sa != sb:
        return sa > sb
    if c_edge[a] != c_edge[b]:
        return c_edge[a] < c_edge[b]
    e = c_edge[a]
    for i in range(tail_offsets[e + 1] - tail_offsets[e]):
        x, y = ranks[c_rank[a] + i], ranks[c_rank[b] + i]
        if x != y:
            return x < y
    return False


@_helper
def _mix(h, x):  # pragma: no cover - compiled
    return (h ^ np.uint64(x)) * _MULTIPLIER


@_jit
def lazy_kbest(node_offsets, tail_offsets, tails, target_offsets, target, scores, root, k, unique):  # noqa: C901, PLR0913 # pragma: no cover - compiled
    """Algorithm 3 until ``root`` has ``k`` derivations (or all it has). Returns ``(found, c_score, c_edge,
    c_rank, ranks, f_start, f_len)``: node ``v``'s derivations, best first, are the candidates
    ``found[f_start[v] : f_start[v] + f_len[v]]``; candidate ``c`` is edge ``c_edge[c]`` with the rank vector
    ``ranks[c_rank[c] : c_rank[c] + arity]`` and score ``c_score[c]``."""
    n = node_offsets.size - 1
    f_start = np.zeros(n, np.int64)
    f_len = np.zeros(n, np.int64)
    f_cap = np.zeros(n, np.int64)
    h_start = np.zeros(n, np.int64)
    h_len = np.zeros(n, np.int64)
    h_cap = np.zeros(n, np.int64)
    started = np.zeros(n, np.bool_)
    exhausted = np.zeros(n, np.bool_)
    found = np.empty(1024, np.int64)
    found_top = 0
    heap = np.empty(1024, np.int64)
    heap_key = np.empty(1024, np.float64)  # each heap entry's score, beside it (no lookup to compare)
    heap_top = 0
    c_score = np.empty(1024, np.float64)
    c_edge = np.empty(1024, np.int64)
    c_rank = np.empty(1024, np.int64)
    num_c = 0
    ranks = np.empty(4096, np.int64)
    ranks_top = 0
    # the set of queued <e, j> (Algorithm 3's duplicate check): open addressing over candidate ids
    q_bits = 10
    q_table = np.full(1 << q_bits, _EMPTY, np.int64)
    q_count = 0
    # unique: each found derivation's yield (tokens), and a table of (node, yield) -> candidate
    y_start = np.zeros(1024, np.int64)
    y_len = np.zeros(1024, np.int64)
    y_hash = np.zeros(1024, np.uint64)
    tokens = np.empty(4096 if unique else 0, np.int64)
    tokens_top = 0
    u_bits = 10
    u_table = np.full(1 << u_bits if unique else 0, _EMPTY, np.int64)
    u_count = 0
    scratch = np.empty(64, np.int64)
    # the request stack: node, count, phase (0: pushing the in-edges, 1: popping), in-edge or popped
    # candidate, index of the successor / tail being checked
    s_node = np.empty(64, np.int64)
    s_count = np.empty(64, np.int64)
    s_phase = np.empty(64, np.int64)
    s_item = np.empty(64, np.int64)
    s_index = np.empty(64, np.int64)
    depth = 0
    s_node[0], s_count[0], s_phase[0], s_item[0], s_index[0] = root, k, 0, -1, 0
    depth = 1
    while depth > 0:
        top = depth - 1
        v = s_node[top]
        want = s_count[top]
        if s_phase[top] == 0 and started[v]:
            s_phase[top] = 1
            s_item[top] = -1
        # the candidate to push now: (edge, base rank vector, successor index or -1 for all zeros)
        e = -1
        base = -1
        succ = -1
        if s_phase[top] == 0:
            if s_item[top] < 0:
                s_item[top] = node_offsets[v]
                s_index[top] = 0
            if s_item[top] >= node_offsets[v + 1]:
                started[v] = True
                s_phase[top] = 1
                s_item[top] = -1
                continue
            e = s_item[top]
        else:
            if s_item[top] < 0:  # pop the next candidate, or finish
                if f_len[v] >= want or h_len[v] == 0:
                    if f_len[v] < want:
                        exhausted[v] = True
                    depth -= 1
                    continue
                hs = h_start[v]
                best = heap[hs]
                last = h_len[v] - 1
                h_len[v] = last
                if last > 0:  # sift the last entry down from the root
                    moving, moving_key = heap[hs + last], heap_key[hs + last]
                    i = 0
                    while True:
                        child = 2 * i + 1
                        if child >= last:
                            break
                        if child + 1 < last and _before(
                            heap[hs + child + 1], heap_key[hs + child + 1], heap[hs + child], heap_key[hs + child],
                            c_edge, c_rank, ranks, tail_offsets,
                        ):  # fmt: skip
                            child += 1
                        if _before(
                            heap[hs + child], heap_key[hs + child], moving, moving_key, c_edge, c_rank, ranks,
                            tail_offsets,
                        ):  # fmt: skip
                            heap[hs + i], heap_key[hs + i] = heap[hs + child], heap_key[hs + child]
                            i = child
                        else:
                            break
                    heap[hs + i], heap_key[hs + i] = moving, moving_key
                s_item[top] = best
                s_index[top] = 0
            c = s_item[top]
            e = c_edge[c]
            base = c_rank[c]
            succ = s_index[top]
            if succ >= tail_offsets[e + 1] - tail_offsets[e]:  # successors done: keep the derivation
                keep = True
                if unique:
                    # the yield of <e, j>: e's target with each tail's yield in place of its reference
                    start = tokens_top
                    h = np.uint64(v) * _MULTIPLIER
                    for p in range(target_offsets[e], target_offsets[e + 1]):
                        token = target[p]
                        if token >= 0:
                            if tokens_top + 1 > tokens.size:
                                tokens = grown(tokens, tokens_top + 1)
                            tokens[tokens_top] = token
                            tokens_top += 1
                            h = _mix(h, token)
                        else:
                            i = -token - 1
                            t = tails[tail_offsets[e] + i]
                            sub = found[f_start[t] + ranks[base + i]]
                            m = y_len[sub]
                            if tokens_top + m > tokens.size:
                                tokens = grown(tokens, tokens_top + m)
                            for q in range(m):
                                tokens[tokens_top + q] = tokens[y_start[sub] + q]
                                h = _mix(h, tokens[y_start[sub] + q])
                            tokens_top += m
                    length = tokens_top - start
                    mask = (1 << u_bits) - 1
                    slot = np.int64(h >> np.uint64(64 - u_bits))
                    while True:
                        other = u_table[slot]
                        if other == _EMPTY:
                            break
                        if y_hash[other] == h and c_edge[other] >= 0 and y_len[other] == length:
                            same = True
                            for q in range(length):
                                if tokens[y_start[other] + q] != tokens[start + q]:
                                    same = False
                                    break
                            if same and _head_of(c_edge[other], node_offsets) == v:
                                keep = False
                                break
                        slot = (slot + 1) & mask
                    if keep:
                        u_table[slot] = c
                        u_count += 1
                        y_start[c], y_len[c], y_hash[c] = start, length, h
                        if 2 * u_count > (1 << u_bits):
                            u_bits += 1
                            u_table = np.full(1 << u_bits, _EMPTY, np.int64)
                            mask = (1 << u_bits) - 1
                            for w in range(n):
                                for r in range(f_len[w]):
                                    _place(u_table, found[f_start[w] + r], y_hash, u_bits)
                            _place(u_table, c, y_hash, u_bits)
                    else:
                        tokens_top = start
                if keep:
                    if f_len[v] == f_cap[v]:  # move the node's list to the end, twice as large
                        cap = max(4, 2 * f_cap[v])
                        if found_top + cap > found.size:
                            found = grown(found, found_top + cap)
                        for r in range(f_len[v]):
                            found[found_top + r] = found[f_start[v] + r]
                        f_start[v], f_cap[v] = found_top, cap
                        found_top += cap
                    found[f_start[v] + f_len[v]] = c
                    f_len[v] += 1
                s_item[top] = -1
                continue
        # the candidate <e, j>: j is all zeros (phase 0) or the popped rank vector plus one at succ
        arity = tail_offsets[e + 1] - tail_offsets[e]
        if arity > scratch.size:
            scratch = grown(scratch, arity)
        for i in range(arity):
            scratch[i] = 0 if base < 0 else ranks[base + i]
        if succ >= 0:
            scratch[succ] += 1
        # each tail needs rank j_i + 1 derivations; ask for them (phase 0: all tails, in order; a successor:
        # only the tail that moved, the others already have theirs)
        first = 0 if succ < 0 else succ
        last = arity if succ < 0 else succ + 1
        missing = -1
        dropped = False
        for i in range(first, last):
            t = tails[tail_offsets[e] + i]
            if f_len[t] > scratch[i]:
                continue
            if exhausted[t]:
                dropped = True
                break
            missing = i
            break
        if not dropped and missing >= 0:
            t = tails[tail_offsets[e] + missing]
            if depth + 1 > s_node.size:
                s_node = grown(s_node, depth + 1)
                s_count = grown(s_count, depth + 1)
                s_phase = grown(s_phase, depth + 1)
                s_item = grown(s_item, depth + 1)
                s_index = grown(s_index, depth + 1)
            s_node[depth], s_count[depth], s_phase[depth], s_item[depth], s_index[depth] = (
                t,
                scratch[missing] + 1,
                0,
                -1,
                0,
            )
            depth += 1
            continue
        if not dropped:
            # queue <e, j> unless it was queued before (only an edge with two or more tails reaches a rank
            # vector twice: <e, (j)> has one predecessor)
            queued = False
            mask = (1 << q_bits) - 1
            slot = np.int64(-1)
            while arity > 1:
                if slot < 0:
                    h = np.uint64(e + 1) * _MULTIPLIER
                    for i in range(arity):
                        h = _mix(h, scratch[i])
                    slot = np.int64(h >> np.uint64(64 - q_bits))
                other = q_table[slot]
                if other == _EMPTY:
                    break
                if c_edge[other] == e:
                    same = True
                    for i in range(arity):
                        if ranks[c_rank[other] + i] != scratch[i]:
                            same = False
                            break
                    if same:
                        queued = True
                        break
                slot = (slot + 1) & mask
            if not queued:
                c = num_c
                num_c += 1
                if num_c > c_score.size:
                    c_score = grown(c_score, num_c)
                    c_edge = grown(c_edge, num_c)
                    c_rank = grown(c_rank, num_c)
                    if unique:
                        y_start = grown(y_start, num_c)
                        y_len = grown(y_len, num_c)
                        y_hash = grown(y_hash, num_c)
                if ranks_top + arity > ranks.size:
                    ranks = grown(ranks, ranks_top + arity)
                score = scores[e]
                for i in range(arity):
                    ranks[ranks_top + i] = scratch[i]
                    t = tails[tail_offsets[e] + i]
                    score += c_score[found[f_start[t] + scratch[i]]]
                c_score[c], c_edge[c], c_rank[c] = score, e, ranks_top
                ranks_top += arity
                if arity > 1:
                    q_table[slot] = c
                    q_count += 1
                    if 2 * q_count > (1 << q_bits):
                        q_bits += 1
                        q_table = np.full(1 << q_bits, _EMPTY, np.int64)
                        for other in range(num_c):
                            if tail_offsets[c_edge[other] + 1] - tail_offsets[c_edge[other]] > 1:
                                _place_candidate(q_table, other, c_edge, c_rank, ranks, tail_offsets, q_bits)
                # push onto v's heap (grow its region at the end when full), then sift up
                if h_len[v] == h_cap[v]:
                    cap = max(4, 2 * h_cap[v])
                    if heap_top + cap > heap.size:
                        heap = grown(heap, heap_top + cap)
                        heap_key = grown(heap_key, heap_top + cap)
                    for r in range(h_len[v]):
                        heap[heap_top + r] = heap[h_start[v] + r]
                        heap_key[heap_top + r] = heap_key[h_start[v] + r]
                    h_start[v], h_cap[v] = heap_top, cap
                    heap_top += cap
                hs = h_start[v]
                i = h_len[v]
                h_len[v] += 1
                while i > 0:
                    parent = (i - 1) // 2
                    if _before(c, score, heap[hs + parent], heap_key[hs + parent], c_edge, c_rank, ranks, tail_offsets):
                        heap[hs + i], heap_key[hs + i] = heap[hs + parent], heap_key[hs + parent]
                        i = parent
                    else:
                        break
                heap[hs + i], heap_key[hs + i] = c, score
        # this candidate is done: next in-edge (phase 0) or next successor (phase 1)
        if s_phase[top] == 0:
            s_item[top] += 1
        else:
            s_index[top] += 1
    return found, c_score[:num_c], c_edge[:num_c], c_rank[:num_c], ranks[:ranks_top], f_start, f_len


@_helper
def _head_of(e, node_offsets):  # pragma: no cover - compiled
    """The head node of edge ``e`` (edges are grouped by head in node order)."""
    return np.searchsorted(node_offsets, e, side="right") - 1


@_helper
def _place(table, c, y_hash, bits):  # pragma: no cover - compiled
    mask = (1 << bits) - 1
    slot = np.int64(y_hash[c] >> np.uint64(64 - bits))
    while table[slot] != _EMPTY:
        slot = (slot + 1) & mask
    table[slot] = c


@_helper
def _place_candidate(table, c, c_edge, c_rank, ranks, tail_offsets, bits):  # pragma: no cover - compiled
    e = c_edge[c]
    h = np.uint64(e + 1) * _MULTIPLIER
    for i in range(tail_offsets[e + 1] - tail_offsets[e]):
        h = _mix(h, ranks[c_rank[c] + i])
    mask = (1 << bits) - 1
    slot = np.int64(h >> np.uint64(64 - bits))
    while table[slot] != _EMPTY:
        slot = (slot + 1) & mask
    table[slot] = c


@_jit
def _sort_small(a, lo, hi):  # pragma: no cover - compiled
    """Sort ``a[lo:hi]`` in place: insertion sort for the few entries of one derivation, else numpy's."""
    if hi - lo > 32:
        a[lo:hi] = np.sort(a[lo:hi])
        return
    for i in range(lo + 1, hi):
        x = a[i]
        j = i - 1
        while j >= lo and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@_jit
def describe(roots, tails, tail_offsets, target_offsets, target, indptr, indices, data, num_features, state):  # noqa: C901, PLR0913 # pragma: no cover - compiled
    """For each candidate ``roots[d]`` (a found derivation; ``state`` as :func:`lazy_kbest` returns it): its
    edges in pre-order, its yield and its feature vector's nonzero entries by column, as flat arrays with
    offsets ``(edges, edge_offsets, words, word_offsets, columns, values, feature_offsets)``."""
    found, c_score, c_edge, c_rank, ranks, f_start, f_len = state
    # every candidate's tree size and yield length, bottom-up: a candidate's sub-derivations were found
    # before it was queued, so they have smaller ids
    # (kid[c_rank[c] + i]: the candidate that is tail i's sub-derivation of candidate c)
    num_c = c_edge.size
    size = np.empty(num_c, np.int64)
    length = np.empty(num_c, np.int64)
    kid = np.empty(ranks.size, np.int64)
    for c in range(num_c):
        e = c_edge[c]
        s = 1
        n = 0
        for i in range(tail_offsets[e + 1] - tail_offsets[e]):
            sub = found[f_start[tails[tail_offsets[e] + i]] + ranks[c_rank[c] + i]]
            kid[c_rank[c] + i] = sub
            s += size[sub]
        for p in range(target_offsets[e], target_offsets[e + 1]):
            n += 1 if target[p] >= 0 else length[kid[c_rank[c] - target[p] - 1]]
        size[c] = s
        length[c] = n
    m = roots.size
    edge_offsets = np.zeros(m + 1, np.int64)
    word_offsets = np.zeros(m + 1, np.int64)
    widest = 1
    for d in range(m):
        edge_offsets[d + 1] = edge_offsets[d] + size[roots[d]]
        word_offsets[d + 1] = word_offsets[d] + length[roots[d]]
        widest = max(widest, size[roots[d]])
    edges = np.empty(edge_offsets[m], np.int64)
    words = np.empty(word_offsets[m], np.int64)
    columns = np.empty(max(16, 4 * m), np.int64)
    values = np.empty(max(16, 4 * m), np.float64)
    feature_offsets = np.zeros(m + 1, np.int64)
    n_features = 0
    stack_c = np.empty(widest + 1, np.int64)
    stack_p = np.empty(widest + 1, np.int64)
    distinct = np.empty(widest, np.int64)
    count = np.zeros(tail_offsets.size - 1, np.int64)
    acc = np.zeros(num_features, np.float64)
    touched = np.zeros(num_features, np.bool_)
    for d in range(m):
        # pre-order edges: a stack of candidates, children pushed in reverse tail order
        out = edge_offsets[d]
        stack_c[0] = roots[d]
        depth = 1
        while depth > 0:
            depth -= 1
            c = stack_c[depth]
            e = c_edge[c]
            edges[out] = e
            out += 1
            for i in range(tail_offsets[e + 1] - tail_offsets[e] - 1, -1, -1):
                stack_c[depth] = kid[c_rank[c] + i]
                depth += 1
        # the yield: targets in order, a tail reference descends (position kept on the stack)
        out = word_offsets[d]
        stack_c[0] = roots[d]
        stack_p[0] = target_offsets[c_edge[roots[d]]]
        depth = 1
        while depth > 0:
            c = stack_c[depth - 1]
            e = c_edge[c]
            p = stack_p[depth - 1]
            if p >= target_offsets[e + 1]:
                depth -= 1
                continue
            stack_p[depth - 1] = p + 1
            token = target[p]
            if token >= 0:
                words[out] = token
                out += 1
            else:
                sub = kid[c_rank[c] - token - 1]
                stack_c[depth] = sub
                stack_p[depth] = target_offsets[c_edge[sub]]
                depth += 1
        # the features: Σ_e count_e · f_e, edges in increasing order (as the sparse product sums them)
        used = 0
        for j in range(edge_offsets[d], edge_offsets[d + 1]):
            e = edges[j]
            if count[e] == 0:
                distinct[used] = e
                used += 1
            count[e] += 1
        _sort_small(distinct, 0, used)
        first = n_features
        for j in range(used):
            e = distinct[j]
            weight = np.float64(count[e])
            count[e] = 0
            for q in range(indptr[e], indptr[e + 1]):
                col = indices[q]
                acc[col] += data[q] * weight
                if not touched[col]:
                    touched[col] = True
                    if n_features + 1 > columns.size:
                        columns = grown(columns, n_features + 1)
                    columns[n_features] = col
                    n_features += 1
        _sort_small(columns, first, n_features)
        if n_features > values.size:
            values = grown(values, n_features)
        kept = first
        for j in range(first, n_features):
            col = columns[j]
            touched[col] = False
            if acc[col] != 0.0:
                columns[kept] = col
                values[kept] = acc[col]
                kept += 1
            acc[col] = 0.0
        n_features = kept
        feature_offsets[d + 1] = n_features
    return edges, edge_offsets, words, word_offsets, columns[:n_features], values[:n_features], feature_offsets


@_helper
def _put(out, p, source, a, b):  # pragma: no cover - compiled
    """Copy ``source[a:b]`` to ``out[p:]``; the position after it."""
    for i in range(a, b):
        out[p] = source[i]
        p += 1
    return p


@_jit
def moses_lines(prefix, words, word_offsets, columns, feature_offsets, numbers, word_text, name_text, number_text):  # noqa: PLR0913 # pragma: no cover - compiled
    """The bytes of Moses n-best lines ``prefix words ||| name= value ... ||| total`` for flat k-best arrays:
    ``prefix`` is ``b"sid ||| "``; ``word_text``, ``name_text`` (``b"name= "``) and ``number_text`` are
    ``(bytes, offsets)`` tables indexed by word id, column and entry of ``numbers`` (feature values, then the
    totals: entry ``numbers[j]`` of the table is the text of value ``j``)."""
    w_bytes, w_off = word_text
    n_bytes, n_off = name_text
    v_bytes, v_off = number_text
    m = word_offsets.size - 1
    num_values = feature_offsets[m]
    size = 0
    for d in range(m):
        size += prefix.size + 11  # prefix, two " ||| " and the newline
        for j in range(word_offsets[d], word_offsets[d + 1]):
            size += w_off[words[j] + 1] - w_off[words[j]] + 1
        for j in range(feature_offsets[d], feature_offsets[d + 1]):
            size += n_off[columns[j] + 1] - n_off[columns[j]] + v_off[numbers[j] + 1] - v_off[numbers[j]] + 1
        t = numbers[num_values + d]
        size += v_off[t + 1] - v_off[t]
    out = np.empty(size, np.uint8)
    p = 0
    for d in range(m):
        p = _put(out, p, prefix, 0, prefix.size)
        for j in range(word_offsets[d], word_offsets[d + 1]):
            if j > word_offsets[d]:
                out[p] = 32
                p += 1
            p = _put(out, p, w_bytes, w_off[words[j]], w_off[words[j] + 1])
        p = _put(out, p, prefix, prefix.size - 5, prefix.size)  # " ||| "
        for j in range(feature_offsets[d], feature_offsets[d + 1]):
            if j > feature_offsets[d]:
                out[p] = 32
                p += 1
            p = _put(out, p, n_bytes, n_off[columns[j]], n_off[columns[j] + 1])
            p = _put(out, p, v_bytes, v_off[numbers[j]], v_off[numbers[j] + 1])
        p = _put(out, p, prefix, prefix.size - 5, prefix.size)
        t = numbers[num_values + d]
        p = _put(out, p, v_bytes, v_off[t], v_off[t + 1])
        out[p] = 10
        p += 1
    return out[:p]
