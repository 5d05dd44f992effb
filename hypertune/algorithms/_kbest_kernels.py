"""Compiled kernels of lazy k-best extraction (:mod:`hypertune.algorithms.kbest`; Huang & Chiang 2005, Alg. 3).

:func:`lazy_kbest` runs Algorithm 3 for one root node with an explicit stack of requests ``(node, count)``
instead of recursion. Every candidate ``<e, j>`` lives in one pool (edge, score, its rank vector ``j`` in a
pool of ints); a node's heap and its list of found derivations are regions of two shared int arrays, moved
to the end (doubled) when full. A heap orders its candidates by score, then edge id, then rank vector
(lexicographically), larger score first: the order of ``heapq`` on ``(-score, edge, ranks)``, so that ties
fall exactly as they fell in the earlier Python implementation. With ``unique``, each found derivation's
yield is kept in a token pool and a hash table of ``(node, yield)`` skips a string already found at that node.
The loop itself is :func:`_search`, compiled without reference counts (arrays that a loop may replace by larger
ones cost atomic counts on each pass, half the search's time): it returns when an array is full, and
:func:`lazy_kbest` grows it and calls it again.

:func:`describe` turns the root's found derivations into flat arrays: each derivation's yield (word ids),
its edges in pre-order (when asked), and its feature vector summed as :meth:`Hypergraph.derivation_features`
sums it (``f = Σ_e count_e · f_e`` in increasing edge order, then the nonzero entries by column); its walks
read one tree array (each candidate's edge beside its sub-derivations' places).
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


# what the search loop asks its caller for (:func:`_search` returns it, the size needed in ``regs[_NEED]``)
_DONE, _MORE_FOUND, _MORE_HEAP, _MORE_CANDIDATES, _MORE_RANKS, _MORE_TOKENS, _MORE_STACK, _WIDER_Q, _WIDER_U = range(9)
# the search loop's counters, kept in ``regs`` between its calls
_DEPTH, _FOUND_TOP, _HEAP_TOP, _NUM_C, _RANKS_TOP, _Q_BITS, _Q_COUNT, _TOKENS_TOP, _U_BITS, _U_COUNT, _NEED = range(11)


@_jit
def lazy_kbest(node_offsets, tail_offsets, tails, target_offsets, target, scores, root, k, unique):  # noqa: C901, PLR0913 # pragma: no cover - compiled
    """Algorithm 3 until ``root`` has ``k`` derivations (or all it has). Returns ``(found, c_score, c_edge,
    c_rank, ranks, f_start, f_len)``: node ``v``'s derivations, best first, are the candidates
    ``found[f_start[v] : f_start[v] + f_len[v]]``; candidate ``c`` is edge ``c_edge[c]`` with the rank vector
    ``ranks[c_rank[c] : c_rank[c] + arity]`` and score ``c_score[c]``.

    The loop is :func:`_search`; when it returns asking for room, this grows the array (or rebuilds a hash
    table twice as large) and calls it again."""
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
    heap = np.empty(1024, np.int64)
    heap_key = np.empty(1024, np.float64)  # each heap entry's score, beside it (no lookup to compare)
    c_score = np.empty(1024, np.float64)
    c_edge = np.empty(1024, np.int64)
    c_rank = np.empty(1024, np.int64)
    ranks = np.empty(4096, np.int64)
    # the set of queued <e, j> (Algorithm 3's duplicate check): open addressing over candidate ids
    q_table = np.full(1 << 10, _EMPTY, np.int64)
    # unique: each found derivation's yield (tokens), and a table of (node, yield) -> candidate
    y_start = np.zeros(1024 if unique else 0, np.int64)
    y_len = np.zeros(1024 if unique else 0, np.int64)
    y_hash = np.zeros(1024 if unique else 0, np.uint64)
    tokens = np.empty(4096 if unique else 0, np.int64)
    u_table = np.full(1 << 10 if unique else 0, _EMPTY, np.int64)
    widest = 1
    for e in range(tail_offsets.size - 1):
        widest = max(widest, tail_offsets[e + 1] - tail_offsets[e])
    scratch = np.empty(widest, np.int64)
    # the request stack: node, count, phase (0: pushing the in-edges, 1: popping), in-edge or popped
    # candidate, index of the successor / tail being checked
    s_node = np.empty(64, np.int64)
    s_count = np.empty(64, np.int64)
    s_phase = np.empty(64, np.int64)
    s_item = np.empty(64, np.int64)
    s_index = np.empty(64, np.int64)
    s_node[0], s_count[0], s_phase[0], s_item[0], s_index[0] = root, k, 0, -1, 0
    regs = np.zeros(11, np.int64)
    regs[_DEPTH], regs[_Q_BITS], regs[_U_BITS] = 1, 10, 10
    while True:
        asked = _search(
            node_offsets, tail_offsets, tails, target_offsets, target, scores, unique, f_start, f_len, f_cap,
            h_start, h_len, h_cap, started, exhausted, found, heap, heap_key, c_score, c_edge, c_rank, ranks,
            q_table, y_start, y_len, y_hash, tokens, u_table, scratch, s_node, s_count, s_phase, s_item, s_index,
            regs,
        )  # fmt: skip
        need = regs[_NEED]
        if asked == _DONE:
            break
        if asked == _MORE_FOUND:
            found = grown(found, need)
        elif asked == _MORE_HEAP:
            heap = grown(heap, need)
            heap_key = grown(heap_key, need)
        elif asked == _MORE_CANDIDATES:
            c_score = grown(c_score, need)
            c_edge = grown(c_edge, need)
            c_rank = grown(c_rank, need)
            if unique:
                y_start = grown(y_start, need)
                y_len = grown(y_len, need)
                y_hash = grown(y_hash, need)
        elif asked == _MORE_RANKS:
            ranks = grown(ranks, need)
        elif asked == _MORE_TOKENS:
            tokens = grown(tokens, need)
        elif asked == _MORE_STACK:
            s_node = grown(s_node, need)
            s_count = grown(s_count, need)
            s_phase = grown(s_phase, need)
            s_item = grown(s_item, need)
            s_index = grown(s_index, need)
        elif asked == _WIDER_Q:  # every queued candidate with two or more tails, into a table twice as large
            regs[_Q_BITS] += 1
            q_table = np.full(1 << regs[_Q_BITS], _EMPTY, np.int64)
            for other in range(regs[_NUM_C]):
                if tail_offsets[c_edge[other] + 1] - tail_offsets[c_edge[other]] > 1:
                    _place_candidate(q_table, other, c_edge, c_rank, ranks, tail_offsets, regs[_Q_BITS])
        else:  # _WIDER_U: every found derivation, into a table twice as large
            regs[_U_BITS] += 1
            u_table = np.full(1 << regs[_U_BITS], _EMPTY, np.int64)
            for w in range(n):
                for r in range(f_len[w]):
                    _place(u_table, found[f_start[w] + r], y_hash, regs[_U_BITS])
    num_c = regs[_NUM_C]
    return found, c_score[:num_c], c_edge[:num_c], c_rank[:num_c], ranks[: regs[_RANKS_TOP]], f_start, f_len


@_helper
def _search(  # noqa: C901, PLR0913 # pragma: no cover - compiled
    node_offsets, tail_offsets, tails, target_offsets, target, scores, unique, f_start, f_len, f_cap, h_start,
    h_len, h_cap, started, exhausted, found, heap, heap_key, c_score, c_edge, c_rank, ranks, q_table, y_start,
    y_len, y_hash, tokens, u_table, scratch, s_node, s_count, s_phase, s_item, s_index, regs,
):  # fmt: skip
    """The loop of :func:`lazy_kbest` over the request stack, from the state in the arrays and ``regs``;
    returns ``_DONE``, or what it needs (the size in ``regs[_NEED]``) before it changes anything of the
    request on top, so that the next call starts that request again and finds what it found."""
    depth = regs[_DEPTH]
    found_top = regs[_FOUND_TOP]
    heap_top = regs[_HEAP_TOP]
    num_c = regs[_NUM_C]
    ranks_top = regs[_RANKS_TOP]
    q_bits = regs[_Q_BITS]
    q_count = regs[_Q_COUNT]
    tokens_top = regs[_TOKENS_TOP]
    u_bits = regs[_U_BITS]
    u_count = regs[_U_COUNT]
    asked = _DONE
    need = 0
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
                # room first (nothing changed yet): v's list moved to the end, twice as large, when full;
                # with unique, the yield's tokens and a table at most half full after one more entry
                if f_len[v] == f_cap[v] and found_top + max(4, 2 * f_cap[v]) > found.size:
                    asked, need = _MORE_FOUND, found_top + max(4, 2 * f_cap[v])
                    break
                if unique:
                    length = 0
                    for p in range(target_offsets[e], target_offsets[e + 1]):
                        token = target[p]
                        if token >= 0:
                            length += 1
                        else:
                            t = tails[tail_offsets[e] - token - 1]
                            length += y_len[found[f_start[t] + ranks[base - token - 1]]]
                    if tokens_top + length > tokens.size:
                        asked, need = _MORE_TOKENS, tokens_top + length
                        break
                    if 2 * (u_count + 1) > (1 << u_bits):
                        asked = _WIDER_U
                        break
                keep = True
                if unique:
                    # the yield of <e, j>: e's target with each tail's yield in place of its reference
                    start = tokens_top
                    h = np.uint64(v) * _MULTIPLIER
                    for p in range(target_offsets[e], target_offsets[e + 1]):
                        token = target[p]
                        if token >= 0:
                            tokens[tokens_top] = token
                            tokens_top += 1
                            h = _mix(h, token)
                        else:
                            i = -token - 1
                            t = tails[tail_offsets[e] + i]
                            sub = found[f_start[t] + ranks[base + i]]
                            m = y_len[sub]
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
                    else:
                        tokens_top = start
                if keep:
                    if f_len[v] == f_cap[v]:  # move the node's list to the end, twice as large
                        cap = max(4, 2 * f_cap[v])
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
            if depth + 1 > s_node.size:
                asked, need = _MORE_STACK, depth + 1
                break
            t = tails[tail_offsets[e] + missing]
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
                # room first (nothing changed yet): the candidate, its ranks, v's heap moved to the end
                # (twice as large) when full, and a table at most half full after one more entry
                if num_c + 1 > c_score.size:
                    asked, need = _MORE_CANDIDATES, num_c + 1
                    break
                if ranks_top + arity > ranks.size:
                    asked, need = _MORE_RANKS, ranks_top + arity
                    break
                if h_len[v] == h_cap[v] and heap_top + max(4, 2 * h_cap[v]) > heap.size:
                    asked, need = _MORE_HEAP, heap_top + max(4, 2 * h_cap[v])
                    break
                if arity > 1 and 2 * (q_count + 1) > (1 << q_bits):
                    asked = _WIDER_Q
                    break
                c = num_c
                num_c += 1
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
                # push onto v's heap (its region moved to the end when full), then sift up
                if h_len[v] == h_cap[v]:
                    cap = max(4, 2 * h_cap[v])
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
    regs[_DEPTH] = depth
    regs[_FOUND_TOP] = found_top
    regs[_HEAP_TOP] = heap_top
    regs[_NUM_C] = num_c
    regs[_RANKS_TOP] = ranks_top
    regs[_Q_COUNT] = q_count
    regs[_TOKENS_TOP] = tokens_top
    regs[_U_COUNT] = u_count
    regs[_NEED] = need
    return asked


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
def describe(  # noqa: C901, PLR0913 # pragma: no cover - compiled
    roots, tails, tail_offsets, target_offsets, target, indptr, indices, data, num_features, state, with_edges
):
    """For each candidate ``roots[d]`` (a found derivation; ``state`` as :func:`lazy_kbest` returns it): its
    edges in pre-order (only ``with_edges``; else ``edges`` is empty), its yield and its feature vector's
    nonzero entries by column, as flat arrays with offsets ``(edges, edge_offsets, words, word_offsets,
    columns, values, feature_offsets)``."""
    found, c_score, c_edge, c_rank, ranks, f_start, f_len = state
    # every candidate as a node of one tree array: at tree[at[c]] its edge, then where each tail's
    # sub-derivation is (the walks below read one array, a node's entries side by side); and its tree size
    # and yield length, bottom-up: a candidate's sub-derivations were found before it was queued, so they
    # have smaller ids
    num_c = c_edge.size
    size = np.empty(num_c, np.int64)
    length = np.empty(num_c, np.int64)
    at = np.empty(num_c, np.int64)
    tree = np.empty(num_c + ranks.size, np.int64)
    top = 0
    for c in range(num_c):
        e = c_edge[c]
        at[c] = top
        tree[top] = e
        s = 1
        for i in range(tail_offsets[e + 1] - tail_offsets[e]):
            sub = found[f_start[tails[tail_offsets[e] + i]] + ranks[c_rank[c] + i]]
            tree[top + 1 + i] = at[sub]
            s += size[sub]
        n = 0
        for p in range(target_offsets[e], target_offsets[e + 1]):
            if target[p] >= 0:
                n += 1
            else:
                i = -target[p] - 1
                n += length[found[f_start[tails[tail_offsets[e] + i]] + ranks[c_rank[c] + i]]]
        size[c] = s
        length[c] = n
        top += 1 + tail_offsets[e + 1] - tail_offsets[e]
    m = roots.size
    edge_offsets = np.zeros(m + 1, np.int64)
    word_offsets = np.zeros(m + 1, np.int64)
    widest = 1
    for d in range(m):
        edge_offsets[d + 1] = edge_offsets[d] + size[roots[d]]
        word_offsets[d + 1] = word_offsets[d] + length[roots[d]]
        widest = max(widest, size[roots[d]])
    edges = np.empty(edge_offsets[m] if with_edges else 0, np.int64)
    words = np.empty(word_offsets[m], np.int32)  # word ids (a vocabulary of fewer than 2**31 words)
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
        # pre-order: a stack of candidates, children pushed in reverse tail order; each edge counted
        out = edge_offsets[d]
        used = 0
        root = at[roots[d]]
        stack_c[0] = root
        depth = 1
        while depth > 0:
            depth -= 1
            t = stack_c[depth]
            e = tree[t]
            if with_edges:
                edges[out] = e
                out += 1
            if count[e] == 0:
                distinct[used] = e
                used += 1
            count[e] += 1
            for i in range(tail_offsets[e + 1] - tail_offsets[e], 0, -1):
                stack_c[depth] = tree[t + i]
                depth += 1
        # the yield: targets in order, a tail reference descends (position kept on the stack)
        out = word_offsets[d]
        stack_c[0] = root
        stack_p[0] = target_offsets[tree[root]]
        depth = 1
        while depth > 0:
            t = stack_c[depth - 1]
            e = tree[t]
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
                sub = tree[t - token]
                stack_c[depth] = sub
                stack_p[depth] = target_offsets[tree[sub]]
                depth += 1
        # the features: Σ_e count_e · f_e, edges in increasing order (as the sparse product sums them), into
        # room for at most min(Σ nnz, num_features) entries reserved before the sums
        _sort_small(distinct, 0, used)
        room = 0
        for j in range(used):
            room += indptr[distinct[j] + 1] - indptr[distinct[j]]
        room = min(room, num_features)
        if n_features + room > columns.size:
            columns = grown(columns, n_features + room)
            values = grown(values, n_features + room)
        first = n_features
        last = first
        for j in range(used):
            e = distinct[j]
            weight = np.float64(count[e])
            count[e] = 0
            for q in range(indptr[e], indptr[e + 1]):
                col = indices[q]
                acc[col] += data[q] * weight
                if not touched[col]:
                    touched[col] = True
                    columns[last] = col
                    last += 1
        _sort_small(columns, first, last)
        kept = first
        for j in range(first, last):
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
def moses_lines(  # noqa: PLR0913 # pragma: no cover - compiled
    prefix, words, word_offsets, word_index, columns, feature_offsets, column_index, numbers, word_text, name_text,
    number_text,
):  # fmt: skip
    """The bytes of Moses n-best lines ``prefix words ||| name= value ... ||| total`` for flat k-best arrays:
    ``prefix`` is ``b"sid ||| "``; ``word_text``, ``name_text`` (``b"name= "``) and ``number_text`` are
    ``(bytes, offsets)`` tables, entry ``word_index[w]`` the text of word id ``w``, ``column_index[c]`` that
    of column ``c``'s name and ``numbers[j]`` that of value ``j`` (the feature values, then the totals)."""
    w_bytes, w_off = word_text
    n_bytes, n_off = name_text
    v_bytes, v_off = number_text
    m = word_offsets.size - 1
    num_values = feature_offsets[m]
    size = 0
    for d in range(m):
        size += prefix.size + 11  # prefix, two " ||| " and the newline
        for j in range(word_offsets[d], word_offsets[d + 1]):
            w = word_index[words[j]]
            size += w_off[w + 1] - w_off[w] + 1
        for j in range(feature_offsets[d], feature_offsets[d + 1]):
            c = column_index[columns[j]]
            size += n_off[c + 1] - n_off[c] + v_off[numbers[j] + 1] - v_off[numbers[j]] + 1
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
            w = word_index[words[j]]
            p = _put(out, p, w_bytes, w_off[w], w_off[w + 1])
        p = _put(out, p, prefix, prefix.size - 5, prefix.size)  # " ||| "
        for j in range(feature_offsets[d], feature_offsets[d + 1]):
            if j > feature_offsets[d]:
                out[p] = 32
                p += 1
            c = column_index[columns[j]]
            p = _put(out, p, n_bytes, n_off[c], n_off[c + 1])
            p = _put(out, p, v_bytes, v_off[numbers[j]], v_off[numbers[j] + 1])
        p = _put(out, p, prefix, prefix.size - 5, prefix.size)
        t = numbers[num_values + d]
        p = _put(out, p, v_bytes, v_off[t], v_off[t + 1])
        out[p] = 10
        p += 1
    return out[:p]
