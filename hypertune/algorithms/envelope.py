"""Upper envelopes of derivation lines along a direction, compiled: the core of exact MERT line search.

Two ways to the goal's envelope, with the same result (lines, breakpoints, back-pointers):

* :func:`envelope_inside` -- the inside pass in the envelope semiring: what
  :func:`hypertune.algorithms.inside` computes with :class:`~hypertune.semirings.envelope.EnvelopeSemiring`,
  over flat arrays, giving every node's envelope. Envelope sizes are not known in advance (in the worst
  case they grow faster than the number of edges: parametric shortest paths), so the line store grows by
  doubling. Each stored line keeps a back-pointer: its edge and, per tail, the index of the tail's line
  it was built from, so every goal line's derivation is recoverable.
* :func:`envelope_by_probing` -- only the goal's envelope, found by Viterbi searches at chosen points
  (Eisner & Severance 1976's method for parametric problems): about two Viterbi passes per goal line.
  Inner nodes of lattices carry many more lines than the goal (tens per node against about twenty at
  the goal of a Moses search graph), so this is several times faster there; :func:`packed_envelopes`
  runs it over a whole corpus in one call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

from hypertune.compiled import callee_jit, helper_jit, stable_argsort
from hypertune.errors import GraphError
from hypertune.hypergraph import Derivation, Hypergraph, PackedGraphs

_jit = numba.njit(cache=True, nogil=True)


class EdgeLines(NamedTuple):
    """A graph (or a packed corpus) as the probing kernels read it: its structure, every edge's line
    ``b_edge[e] + γ · m_edge[e]`` (intercept and slope), and its tails padded (:func:`padded_tails`)."""

    node_offsets: np.ndarray
    tail_offsets: np.ndarray
    tails: np.ndarray
    b_edge: np.ndarray
    m_edge: np.ndarray
    pads: np.ndarray


@dataclass(frozen=True)
class EnvelopeResult:
    """The goal's upper envelope: ``left[i]`` (left breakpoint; ``-inf`` first), ``slope``, ``intercept``,
    and the back-pointer store that :meth:`derivation` follows."""

    left: np.ndarray
    slope: np.ndarray
    intercept: np.ndarray
    goal_lines: np.ndarray  # global indices of the goal's lines
    line_edge: np.ndarray
    line_tails: np.ndarray  # (lines, max_arity) global indices of tail lines
    hg: Hypergraph

    def __len__(self) -> int:
        return int(self.left.size)

    def derivation(self, i: int) -> Derivation:
        """The derivation of the ``i``-th line of the goal's envelope."""
        return self._build(int(self.goal_lines[i]))

    def _build(self, line: int) -> Derivation:
        """The derivation of a line: its edge, then its tail lines' derivations, walked in pre-order with an
        explicit stack (no recursion: lattices can be deep)."""
        offsets = self.hg.tail_offsets
        edges = []
        stack = [line]
        while stack:
            current = stack.pop()
            edge = int(self.line_edge[current])
            edges.append(edge)
            arity = int(offsets[edge + 1] - offsets[edge])
            stack.extend(int(t) for t in reversed(self.line_tails[current, :arity]))
        return self.hg.derivation_from_edges(edges)


def _edge_lines(intercepts: np.ndarray, slopes: np.ndarray, first_edge: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The edge lines as contiguous float64 arrays; a clear error for a line that is not finite (the kernels'
    breakpoints of two infinite lines are NaN, which no merge can place)."""
    b = np.ascontiguousarray(intercepts, dtype=np.float64)
    m = np.ascontiguousarray(slopes, dtype=np.float64)
    for name, values in (("intercept", b), ("slope", m)):
        if not np.isfinite(values).all():
            edge = first_edge + int(np.flatnonzero(~np.isfinite(values))[0])
            raise GraphError(
                f"edge {edge}'s line has {name} {values[edge - first_edge]}: an envelope needs finite lines", edge
            )
    return b, m


def envelope_inside(hg: Hypergraph, intercepts: np.ndarray, slopes: np.ndarray) -> EnvelopeResult:
    """The goal's upper envelope for edge lines ``intercepts[e] + γ·slopes[e]``."""
    max_arity = max(1, hg.max_arity)
    b, m = _edge_lines(intercepts, slopes)
    left, slope, intercept, edge, tails, start, end = _envelope_kernel(
        hg.node_offsets, hg.tail_offsets, hg.tails, b, m, max_arity
    )
    goal = slice(int(start[hg.goal]), int(end[hg.goal]))
    return EnvelopeResult(
        left[goal].copy(), slope[goal].copy(), intercept[goal].copy(), np.arange(goal.start, goal.stop), edge, tails, hg
    )


@_jit
def _envelope_kernel(node_offsets, tail_offsets, tails, b_edge, m_edge, max_arity):  # pragma: no cover
    n = node_offsets.size - 1
    capacity = max(16, 2 * b_edge.size)
    left = np.empty(capacity)
    slope = np.empty(capacity)
    intercept = np.empty(capacity)
    line_edge = np.empty(capacity, dtype=np.int64)
    line_tails = np.full((capacity, max_arity), -1, dtype=np.int64)
    chosen = np.empty(capacity, dtype=np.int64)
    start = np.zeros(n, dtype=np.int64)
    end = np.zeros(n, dtype=np.int64)
    # candidate lines of one node, and two scratch envelopes for the running Minkowski sum of one edge
    cand_m, cand_b = np.empty(64), np.empty(64)
    cand_e, cand_t = np.empty(64, dtype=np.int64), np.empty((64, max_arity), dtype=np.int64)
    cand_order, cand_scratch = np.empty(64, dtype=np.int64), np.empty(64, dtype=np.int64)  # sorted by slope
    cur_x, cur_m, cur_b = np.empty(64), np.empty(64), np.empty(64)
    cur_t = np.empty((64, max_arity), dtype=np.int64)
    new_x, new_m, new_b = np.empty(64), np.empty(64), np.empty(64)
    new_t = np.empty((64, max_arity), dtype=np.int64)
    stored = 0
    for v in range(n):
        count = 0
        for e in range(node_offsets[v], node_offsets[v + 1]):
            size = 1
            cur_x[0], cur_m[0], cur_b[0] = -math.inf, m_edge[e], b_edge[e]
            cur_t[0, :] = -1
            for p in range(tail_offsets[e + 1] - tail_offsets[e]):
                t = tails[tail_offsets[e] + p]
                lo, hi = start[t], end[t]
                if size + hi - lo > new_x.size:
                    grow = 2 * (size + hi - lo)
                    new_x, new_m, new_b = _resize(new_x, grow), _resize(new_m, grow), _resize(new_b, grow)
                    new_t = _resize_2d(new_t, grow)
                    cur_x, cur_m, cur_b = _resize(cur_x, grow), _resize(cur_m, grow), _resize(cur_b, grow)
                    cur_t = _resize_2d(cur_t, grow)
                i, j, k = 0, lo, 0
                x = -math.inf
                while True:  # Minkowski sum: merge breakpoints, add the lines active on each piece
                    new_x[k] = x
                    new_m[k] = cur_m[i] + slope[j]
                    new_b[k] = cur_b[i] + intercept[j]
                    new_t[k] = cur_t[i]
                    new_t[k, p] = j
                    k += 1
                    next_a = cur_x[i + 1] if i + 1 < size else math.inf
                    next_b = left[j + 1] if j + 1 < hi else math.inf
                    if next_a == math.inf and next_b == math.inf:
                        break
                    x = min(next_a, next_b)
                    if next_a == x:
                        i += 1
                    if next_b == x:
                        j += 1
                cur_x, new_x = new_x, cur_x
                cur_m, new_m = new_m, cur_m
                cur_b, new_b = new_b, cur_b
                cur_t, new_t = new_t, cur_t
                size = k
            if count + size > cand_m.size:
                grow = 2 * (count + size)
                cand_m, cand_b = _resize(cand_m, grow), _resize(cand_b, grow)
                cand_e, cand_t = _resize(cand_e, grow), _resize_2d(cand_t, grow)
                cand_order, cand_scratch = np.empty(grow, dtype=np.int64), np.empty(grow, dtype=np.int64)
            cand_m[count : count + size] = cur_m[:size]
            cand_b[count : count + size] = cur_b[:size]
            cand_e[count : count + size] = e
            cand_t[count : count + size] = cur_t[:size]
            count += size
        if stored + count > left.size:
            grow = max(2 * left.size, stored + count)
            left, slope, intercept = _resize(left, grow), _resize(slope, grow), _resize(intercept, grow)
            line_edge, line_tails = _resize(line_edge, grow), _resize_2d(line_tails, grow)
            chosen = _resize(chosen, grow)
        start[v] = stored
        stable_argsort(cand_m, 0, count, cand_order, cand_scratch)
        top = _upper_hull(cand_order[:count], cand_m, cand_b, left, slope, intercept, chosen, stored)
        for k in range(stored, top):
            line_edge[k] = cand_e[chosen[k]]
            line_tails[k] = cand_t[chosen[k]]
        end[v] = top
        stored = top
    return left[:stored], slope[:stored], intercept[:stored], line_edge[:stored], line_tails[:stored], start, end


@helper_jit
def _upper_hull(order, cand_m, cand_b, left, slope, intercept, chosen, start):  # pragma: no cover - compiled
    """Write the upper envelope of candidate lines ``cand_b + γ·cand_m``, visited in ``order`` (by
    non-decreasing slope, stable), at ``start`` of the output arrays (parallel lines keep the larger
    intercept, the earlier on ties); ``chosen`` gets each kept line's candidate index. Returns the end."""
    top = start  # one past the hull's last line
    for c in order:
        m, b = cand_m[c], cand_b[c]
        if top > start and slope[top - 1] == m:
            if b <= intercept[top - 1]:
                continue
            top -= 1
        x = -math.inf
        while top > start:
            x = (intercept[top - 1] - b) / (m - slope[top - 1])
            if x <= left[top - 1]:
                top -= 1
                x = -math.inf
            else:
                break
        left[top] = x
        slope[top] = m
        intercept[top] = b
        chosen[top] = c
        top += 1
    return top


def envelope_by_probing(hg: Hypergraph, intercepts: np.ndarray, slopes: np.ndarray) -> EnvelopeResult:
    """The goal's upper envelope for edge lines ``intercepts[e] + γ·slopes[e]``, by probing.

    Eisner & Severance (1976): the lines of the envelope's two ends are the lexicographic best derivations
    as γ → -∞ and γ → +∞; between two lines known to be on the envelope, one Viterbi search at their
    intersection either finds a derivation strictly above it (a new envelope line, between the two) or
    proves them neighbours. With K goal lines that is 2K - 1 Viterbi passes, run a round of pending
    intersections at a time. Lines and breakpoints are computed exactly as :func:`envelope_inside`
    computes them (same sums in the same order), so both give the same envelope; among derivations with
    identical lines, each method keeps its own (both keep one). The result stores only the goal lines'
    derivations.
    """
    starts = np.array([0, hg.num_nodes], dtype=np.int64)
    graph = EdgeLines(
        hg.node_offsets,
        hg.tail_offsets,
        hg.tails,
        *_edge_lines(intercepts, slopes),
        _padded_tails(hg.node_offsets, hg.tail_offsets, hg.tails, starts, _slots(hg.max_arity)),
    )
    left, slope, intercept, goal_lines, line_edge, line_tails = _probing_kernel(
        graph, 0, hg.num_nodes, max(1, hg.max_arity)
    )
    return EnvelopeResult(left, slope, intercept, goal_lines, line_edge, line_tails, hg)


def packed_envelopes(
    packed: PackedGraphs,
    intercepts: np.ndarray,
    slopes: np.ndarray,
    first: int = 0,
    last: int | None = None,
    pads: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Goal envelopes of graphs ``first:last`` of ``packed`` by probing, with every segment's yield.

    ``intercepts`` and ``slopes`` have one entry per packed edge; ``pads`` is :func:`padded_tails` of
    ``packed`` (computed when not given: pass it to search many times). Returns ``(sizes, left, tokens,
    token_offsets)``: graph ``first + g`` has ``sizes[g]`` segments, listed in order in ``left`` (left
    breakpoints), and segment ``i``'s yield is ``tokens[token_offsets[i]:token_offsets[i+1]]``. Releases the
    GIL: threads can share a corpus.
    """
    last = len(packed) if last is None else last
    b, m = (np.ascontiguousarray(values, dtype=np.float64) for values in (intercepts, slopes))
    edges = slice(int(packed.edge_starts[first]), int(packed.edge_starts[last]))
    _edge_lines(b[edges], m[edges], edges.start)  # only these graphs' lines are read (and only they may be filled)
    graph = EdgeLines(
        packed.node_offsets,
        packed.tail_offsets,
        packed.tails,
        b,
        m,
        padded_tails(packed) if pads is None else pads,
    )
    return _packed_kernel(
        graph, packed.target_offsets, packed.target, packed.node_starts, packed.max_arity, first, last
    )


def padded_tails(packed: PackedGraphs) -> np.ndarray:
    """Every edge's tails padded to the corpus's largest arity (1 or 2) with its graph's sentinel node, one
    past its last, whose Viterbi scores the probing kernels keep at 0.0: every edge then adds the same number
    of tail scores, without a loop whose length changes from edge to edge (branch mispredictions cost more
    than the additions), and the sums are the unpadded ones (``x + 0.0 == x``). An empty ``(edges, 0)`` array
    when some edge has more than two tails (the kernels then loop over the tails)."""
    return _padded_tails(packed.node_offsets, packed.tail_offsets, packed.tails, packed.node_starts,
                         _slots(packed.max_arity))  # fmt: skip


def _slots(max_arity: int) -> int:
    return max(1, max_arity) if max_arity <= 2 else 0


@_jit
def _padded_tails(node_offsets, tail_offsets, tails, node_starts, slots):  # pragma: no cover - compiled
    pads = np.empty((node_offsets[-1], slots), dtype=np.int64)
    for g in range(node_starts.size - 1):
        sentinel = node_starts[g + 1]
        for e in range(node_offsets[node_starts[g]], node_offsets[sentinel]):
            arity = tail_offsets[e + 1] - tail_offsets[e]
            for k in range(slots):
                pads[e, k] = tails[tail_offsets[e] + k] if k < arity else sentinel
    return pads


@_jit
def _packed_kernel(graph, target_offsets, target, node_starts, max_arity, first, last):  # pragma: no cover - compiled
    sizes = np.zeros(last - first, dtype=np.int64)
    left = np.empty(64)
    tokens = np.empty(1024, dtype=np.int64)
    token_offsets = np.zeros(65, dtype=np.int64)
    segments = 0
    for g in range(first, last):
        lo, hi = node_starts[g], node_starts[g + 1]
        goal_left, _, _, goal_lines, line_edge, line_tails = _probing_kernel(graph, lo, hi, max_arity)
        words, offsets = _yields_kernel(goal_lines, line_edge, line_tails, target_offsets, target)
        k = goal_left.size
        if segments + k > left.size:
            left = _resize(left, 2 * (segments + k))
            token_offsets = _resize(token_offsets, 2 * (segments + k) + 1)
        count = token_offsets[segments]
        if count + words.size > tokens.size:
            tokens = _resize(tokens, 2 * (count + words.size))
        left[segments : segments + k] = goal_left
        tokens[count : count + words.size] = words
        token_offsets[segments + 1 : segments + k + 1] = offsets[1:] + count
        segments += k
        sizes[g - first] = k
    return sizes, left[:segments], tokens[: token_offsets[segments]], token_offsets[: segments + 1]


@_jit
def _probing_kernel(graph, lo, hi, max_arity):  # pragma: no cover
    """Envelope of the goal ``hi - 1`` of the graph on nodes ``lo:hi`` (see :func:`envelope_by_probing`)."""
    node_offsets, tail_offsets, tails, b_edge, m_edge, _ = graph
    first_edge, last_edge = node_offsets[lo], node_offsets[hi]
    if not (_well_scaled(b_edge, first_edge, last_edge) and _well_scaled(m_edge, first_edge, last_edge)):
        return _semiring_goal(graph, lo, hi, max_arity)
    n = hi - lo
    # each pass's scores and best edges: one row per node and a last, the padded tails' sentinel, that stays
    # 0.0; flat buffers viewed as (n + 1, _pass_width(points)): rows no wider than the pass needs
    best_buffer, edge_buffer = np.empty((n + 1) * 8), np.empty((n + 1) * 8, dtype=np.int64)
    best, best_edge = _pass_arrays(best_buffer, edge_buffer, n, 2)
    scratch = np.empty(8)
    # the derivations of envelope lines, stored as in the inside kernel: edge and per-tail line indices
    store_edge = np.empty(64, dtype=np.int64)
    store_tails = np.full((64, max_arity), -1, dtype=np.int64)
    # scratch stacks for walking one derivation (its depth is at most the number of nodes): node, next
    # tail, finished tails' store indices, running intercept and slope
    work = (
        np.empty(n + 1, np.int64),
        np.empty(n + 1, np.int64),
        np.empty((n + 1, max_arity), np.int64),
        np.empty(n + 1),
        np.empty(n + 1),
    )
    # the envelope found so far, as a list linked by slope: line intercept, slope, derivation root, next,
    # and whether the gap to the next line is closed (no line above their intersection)
    line_b, line_m = np.empty(16), np.empty(16)
    root, nxt = np.empty(16, dtype=np.int64), np.empty(16, dtype=np.int64)
    closed = np.zeros(16, dtype=np.bool_)
    _extremes_pass(graph, lo, hi, best, best_edge)
    stored = np.int64(0)  # not the literal 0: a literal would compile the callees a second time
    lines = np.int64(0)
    for p in range(2):
        b, m, size = _store_walk(best_edge, p, lo, hi, graph, store_edge, store_tails, stored, work, False)
        if p == 1 and m == line_m[0]:  # every derivation has the same slope: one line
            break
        store_edge, store_tails = _store_derivation(
            best_edge, p, lo, hi, graph, store_edge, store_tails, stored, size, work
        )
        top = stored + size
        line_b[lines], line_m[lines], root[lines], nxt[lines], closed[lines] = b, m, top - 1, -1, p == 1
        if p == 1:
            nxt[0] = 1
        lines += 1
        stored = top
    if lines == 1:
        closed[0] = True
    points = np.empty(8)
    gap = np.empty(8, dtype=np.int64)
    while True:
        count, points, gap = _open_gaps(line_b, line_m, nxt, closed, points, gap)
        if count == 0:
            break
        width = _pass_width(count)
        if (n + 1) * width > best_buffer.size:
            best_buffer, edge_buffer = np.empty((n + 1) * width), np.empty((n + 1) * width, dtype=np.int64)
            scratch = np.empty(width)
        best, best_edge = _pass_arrays(best_buffer, edge_buffer, n, width)
        _probe_pass(graph, lo, hi, points, count, best, best_edge, scratch)
        for p in range(count):
            i = gap[p]
            j = nxt[i]
            b, m, size = _store_walk(best_edge, p, lo, hi, graph, store_edge, store_tails, stored, work, False)
            # keep it if its slope lies strictly between and its segment has positive width (the hull rule)
            above = (
                line_m[i] < m
                and m < line_m[j]
                and (b - line_b[j]) / (line_m[j] - m) > (line_b[i] - b) / (m - line_m[i])
            )
            if not above:
                closed[i] = True
                continue
            store_edge, store_tails = _store_derivation(
                best_edge, p, lo, hi, graph, store_edge, store_tails, stored, size, work
            )
            top = stored + size
            if lines == line_b.size:
                line_b, line_m = _resize(line_b, 2 * lines), _resize(line_m, 2 * lines)
                root, nxt, closed = _resize(root, 2 * lines), _resize(nxt, 2 * lines), _resize(closed, 2 * lines)
            line_b[lines], line_m[lines], root[lines], nxt[lines], closed[lines] = b, m, top - 1, j, False
            nxt[i] = lines
            lines += 1
            stored = top
    left, slope, intercept, chosen = _hull_of_linked_lines(line_b, line_m, nxt, lines)
    return left, slope, intercept, root[chosen], store_edge[:stored], store_tails[:stored]


@helper_jit
def _pass_width(count):  # pragma: no cover - compiled
    """Columns of a pass over ``count`` points: 2 for one or two (:func:`_probe_two`), else ``count`` rounded up
    to a multiple of 4 (the vectorized loops' step; the extra columns repeat the last point)."""
    return 2 if count <= 2 else (count + 3) // 4 * 4


@callee_jit
def _pass_arrays(best_buffer, edge_buffer, n, width):  # pragma: no cover - compiled
    """The buffers' first ``(n + 1) * width`` entries as ``(n + 1, width)`` arrays, the last row (the sentinel) 0.0."""
    best = best_buffer[: (n + 1) * width].reshape((n + 1, width))
    best_edge = edge_buffer[: (n + 1) * width].reshape((n + 1, width))
    for p in range(width):
        best[n, p] = 0.0
    return best, best_edge


@_jit
def _open_gaps(line_b, line_m, nxt, closed, points, gap):  # pragma: no cover
    """The x of every open gap of the envelope found so far (where two slope-adjacent lines cross and a
    line above them may still exist), and the gap's left line; the arrays grow when needed."""
    count = 0
    i = 0
    while i >= 0:
        if not closed[i]:
            j = nxt[i]
            if count == points.size:
                points, gap = _resize(points, 2 * count), _resize(gap, 2 * count)
            points[count] = (line_b[i] - line_b[j]) / (line_m[j] - line_m[i])
            gap[count] = i
            count += 1
        i = nxt[i]
    return count, points, gap


@_jit
def _hull_of_linked_lines(line_b, line_m, nxt, lines):  # pragma: no cover
    """The lines of the list linked by slope through the hull routine: the same breakpoints as the inside
    kernel. Returns breakpoints, slopes, intercepts and the chosen lines' indices."""
    order = np.empty(lines, dtype=np.int64)
    i, k = 0, 0
    while i >= 0:
        order[k] = i
        i, k = nxt[i], k + 1
    left, slope, intercept = np.empty(lines), np.empty(lines), np.empty(lines)
    chosen = np.empty(lines, dtype=np.int64)
    top = _upper_hull(order, line_m, line_b, left, slope, intercept, chosen, 0)
    return left[:top], slope[:top], intercept[:top], chosen[:top]


SCALE_RANGE = 1e-9
"""Probing compares scores, so it needs edge values of comparable size: a graph with a non-zero intercept or
slope smaller than ``SCALE_RANGE`` times the largest goes to the semiring instead (a line made of values
like 1e-200 beside values like 1 can be above its neighbours by less than their rounding error)."""


@_jit
def _well_scaled(values, first, last):  # pragma: no cover - compiled
    """True if the non-zero ``|values[first:last]|`` span less than ``1 / SCALE_RANGE``. The values are finite
    (:func:`_edge_lines`), so their magnitudes order as their bit patterns without the sign bit do: the
    extremes are unsigned integer minima and maxima, which vectorize (float ones would need fast-math)."""
    bits = values.view(np.uint64)
    magnitude, infinity = np.uint64(0x7FFFFFFFFFFFFFFF), np.uint64(0x7FF0000000000000)
    low, high = infinity, np.uint64(0)
    for e in range(first, last):
        a = bits[e] & magnitude
        high = max(high, a)
        low = min(low, a if a != 0 else infinity)
    extremes = np.empty(2, dtype=np.uint64)
    extremes[0], extremes[1] = low, high
    low_value, high_value = extremes.view(np.float64)
    return high_value == 0.0 or (low_value >= SCALE_RANGE * high_value and high_value < math.inf)


@_jit
def _semiring_goal(graph, lo, hi, max_arity):  # pragma: no cover
    """:func:`_probing_kernel`'s result computed by the envelope semiring (on a local copy of the graph)."""
    node_offsets, tail_offsets, tails, b_edge, m_edge, _ = graph
    first_edge, last_edge = node_offsets[lo], node_offsets[hi]
    first_tail, last_tail = tail_offsets[first_edge], tail_offsets[last_edge]
    left, slope, intercept, line_edge, line_tails, start, end = _envelope_kernel(
        node_offsets[lo : hi + 1] - first_edge,
        tail_offsets[first_edge : last_edge + 1] - first_tail,
        tails[first_tail:last_tail] - lo,
        b_edge[first_edge:last_edge],
        m_edge[first_edge:last_edge],
        max_arity,
    )
    goal = hi - 1 - lo
    goal_lines = np.arange(start[goal], end[goal])
    return (
        left[start[goal] : end[goal]].copy(),
        slope[start[goal] : end[goal]].copy(),
        intercept[start[goal] : end[goal]].copy(),
        goal_lines,
        line_edge + first_edge,
        line_tails,
    )


@_jit
def _extremes_pass(graph, lo, hi, best, best_edge):  # pragma: no cover
    """Viterbi for the two ends of the envelope: column 0 takes the lexicographic best (lowest slope, then
    highest intercept: the best derivation as γ → -∞), column 1 (highest slope, highest intercept).
    ``best`` gets the slopes. Each node's two lines in one row of a local array (intercept and slope of each
    end; the last row, the padded tails' sentinel, 0.0), read by flat unsigned indices. On padded tails a
    node's first in-edge (every node has one) is taken before the loop over the others, whose choices are
    selects (branches on the comparisons would be unpredictable); else :func:`_extremes_looping`."""
    node_offsets, _, _, b_edge, m_edge, pads = graph
    slots = pads.shape[1]
    row, span = pads.reshape(-1), np.uint64(slots)  # flat, by unsigned indices: no sign checks
    ends = np.zeros((hi - lo + 1) * 4)
    if slots == 0:
        _extremes_looping(graph, lo, hi, best, best_edge, ends)
        return
    base, four, sentinel = np.uint64(lo), np.uint64(4), np.uint64(hi - lo) * np.uint64(4)
    c1, c2, c3 = np.uint64(1), np.uint64(2), np.uint64(3)
    for v in range(lo, hi):
        e = node_offsets[v]
        u = np.uint64(e)
        r = (np.uint64(row[u * span]) - base) * four
        q = (np.uint64(row[u * span + c1]) - base) * four if slots == 2 else sentinel
        b, m = b_edge[u], m_edge[u]
        b0, m0, b1, m1 = (
            b + ends[r] + ends[q],
            m + ends[r + c1] + ends[q + c1],
            b + ends[r + c2] + ends[q + c2],
            m + ends[r + c3] + ends[q + c3],
        )
        chosen0, chosen1 = e, e
        for e in range(node_offsets[v] + 1, node_offsets[v + 1]):
            u = np.uint64(e)
            r = (np.uint64(row[u * span]) - base) * four
            q = (np.uint64(row[u * span + c1]) - base) * four if slots == 2 else sentinel
            b, m = b_edge[u], m_edge[u]
            low_b, low_m = b + ends[r] + ends[q], m + ends[r + c1] + ends[q + c1]
            high_b, high_m = b + ends[r + c2] + ends[q + c2], m + ends[r + c3] + ends[q + c3]
            take0 = (low_m < m0) | ((low_m == m0) & (low_b > b0))
            take1 = (high_m > m1) | ((high_m == m1) & (high_b > b1))
            chosen0, b0, m0 = (e if take0 else chosen0), (low_b if take0 else b0), (low_m if take0 else m0)
            chosen1, b1, m1 = (e if take1 else chosen1), (high_b if take1 else b1), (high_m if take1 else m1)
        r = np.uint64(v - lo) * four
        ends[r], ends[r + c1], ends[r + c2], ends[r + c3] = b0, m0, b1, m1
        best[v - lo, 0], best_edge[v - lo, 0], best[v - lo, 1], best_edge[v - lo, 1] = m0, chosen0, m1, chosen1


@callee_jit
def _extremes_looping(graph, lo, hi, best, best_edge, ends):  # pragma: no cover
    """:func:`_extremes_pass` on tails that are not padded (edges of more than two tails): a loop over each
    edge's tails."""
    node_offsets, tail_offsets, tails, b_edge, m_edge, _ = graph
    base, four = np.uint64(lo), np.uint64(4)
    c1, c2, c3 = np.uint64(1), np.uint64(2), np.uint64(3)
    for v in range(lo, hi):
        e0 = node_offsets[v]
        chosen0, b0, m0, chosen1, b1, m1 = e0, 0.0, 0.0, e0, 0.0, 0.0
        for e in range(e0, node_offsets[v + 1]):
            low_b, low_m = b_edge[e], m_edge[e]
            high_b, high_m = low_b, low_m
            for k in range(tail_offsets[e], tail_offsets[e + 1]):
                r = (np.uint64(tails[k]) - base) * four
                low_b, low_m = low_b + ends[r], low_m + ends[r + c1]
                high_b, high_m = high_b + ends[r + c2], high_m + ends[r + c3]
            first = e == e0  # bitwise, not short-circuit: selects instead of unpredictable branches
            take0 = first | (low_m < m0) | ((low_m == m0) & (low_b > b0))
            take1 = first | (high_m > m1) | ((high_m == m1) & (high_b > b1))
            chosen0, b0, m0 = (e, low_b, low_m) if take0 else (chosen0, b0, m0)
            chosen1, b1, m1 = (e, high_b, high_m) if take1 else (chosen1, b1, m1)
        r = np.uint64(v - lo) * four
        ends[r], ends[r + c1], ends[r + c2], ends[r + c3] = b0, m0, b1, m1
        best[v - lo, 0], best_edge[v - lo, 0], best[v - lo, 1], best_edge[v - lo, 1] = m0, chosen0, m1, chosen1


@_jit
def _probe_pass(graph, lo, hi, points, count, best, best_edge, score):
    """Viterbi at every ``points[:count]`` at once: each node's best score and, along each point's best
    derivation, its in-edge (first on ties). Scores sum as ``b + x·m + tails``. On padded tails
    (:func:`padded_tails`), :func:`_probe_padded`. Else the points loop innermost, and one or two points go one
    at a time (the vector loops' set-up costs more than a second pass)."""
    node_offsets, tail_offsets, tails, b_edge, m_edge, pads = graph
    if pads.shape[1] > 0:  # pragma: no cover - compiled
        _probe_padded(node_offsets, pads, b_edge, m_edge, lo, hi, points, count, best, best_edge)
        return
    if count <= 2:  # pragma: no cover - compiled
        for p in range(count):
            _probe_one(graph, lo, hi, points[p], p, best, best_edge)
        return
    for v in range(lo, hi):  # pragma: no cover - compiled
        i = v - lo
        first = True
        for e in range(node_offsets[v], node_offsets[v + 1]):
            b, m = b_edge[e], m_edge[e]
            for p in range(count):
                score[p] = b + points[p] * m
            for k in range(tail_offsets[e], tail_offsets[e + 1]):
                t = tails[k] - lo
                for p in range(count):
                    score[p] += best[t, p]
            if first:
                for p in range(count):
                    best[i, p] = score[p]
                    best_edge[i, p] = e
                first = False
            else:
                for p in range(count):
                    take = score[p] > best[i, p]
                    best[i, p] = score[p] if take else best[i, p]
                    best_edge[i, p] = e if take else best_edge[i, p]


@callee_jit
def _probe_padded(node_offsets, pads, b_edge, m_edge, lo, hi, points, count, best, best_edge):  # pragma: no cover
    """:func:`_probe_pass` on padded tails. One or two points with their best edges in registers
    (:func:`_probe_two`); more, the scores alone, then each point's derivation traced down from the goal
    (:func:`_trace_best_edges`): four or eight points in registers (:func:`_probe_four`, :func:`_probe_eight`),
    more with every point's loop vectorized (:func:`_probe_scores`), the last point repeated up to a multiple
    of four (whole vectors) where ``best`` has the columns."""
    if count <= 2:
        _probe_two(node_offsets, pads, b_edge, m_edge, lo, hi, points, count, best, best_edge)
        return
    columns = min((count + 3) // 4 * 4, best.shape[1])
    if columns == count:
        xs = points
    else:
        xs = np.empty(columns)
        for p in range(columns):
            xs[p] = points[min(p, count - 1)]
    if columns == 4:
        _probe_four(node_offsets, pads, b_edge, m_edge, lo, hi, xs, best)
    elif columns == 8:
        _probe_eight(node_offsets, pads, b_edge, m_edge, lo, hi, xs, best)
    else:
        _probe_scores(node_offsets, pads, b_edge, m_edge, lo, hi, xs, columns, best)
    stack = np.empty(2 * (hi - lo) + 1, dtype=np.int64)
    for p in range(count):
        _trace_best_edges(node_offsets, pads, b_edge, m_edge, lo, hi, points[p], p, best, best_edge, stack)


@_jit
def _probe_scores(node_offsets, pads, b_edge, m_edge, lo, hi, points, count, best):  # pragma: no cover - compiled
    """Every node's Viterbi score at ``points[:count]`` into ``best`` (its last row, the padded tails' sentinel,
    0.0): the best edges are left to :func:`_trace_best_edges`, so that each point's loop is an addition and a
    maximum, which vectorize. The same sums in the same order as :func:`_probe_one`, plus 0.0 for a padded
    tail. Unsigned indices (numba checks signed ones for negative values at every access)."""
    slots = pads.shape[1]
    row, span = pads.reshape(-1), np.uint64(slots)
    base, one, sentinel = np.uint64(lo), np.uint64(1), np.uint64(hi - lo)
    for v in range(lo, hi):
        i = np.uint64(v - lo)
        u = np.uint64(node_offsets[v])
        b, m = b_edge[u], m_edge[u]
        t0 = np.uint64(row[u * span]) - base
        t1 = np.uint64(row[u * span + one]) - base if slots == 2 else sentinel
        for p in range(count):
            best[i, p] = b + points[p] * m + best[t0, p] + best[t1, p]
        for e in range(node_offsets[v] + 1, node_offsets[v + 1]):
            u = np.uint64(e)
            b, m = b_edge[u], m_edge[u]
            t0 = np.uint64(row[u * span]) - base
            t1 = np.uint64(row[u * span + one]) - base if slots == 2 else sentinel
            for p in range(count):
                s = b + points[p] * m + best[t0, p] + best[t1, p]
                best[i, p] = s if s > best[i, p] else best[i, p]


@callee_jit
def _probe_four(node_offsets, pads, b_edge, m_edge, lo, hi, points, best):  # pragma: no cover - compiled
    """:func:`_probe_scores` at ``points[:4]``, into columns 0 to 3: each point's running best a scalar of its own,
    in a register, and the first edge taken before the loop (the vectorized loop's set-up and its maxima kept
    in memory cost more at this width; straight-line code is not vectorized). The same sums, in the same order."""
    slots, width = pads.shape[1], np.uint64(best.shape[1])
    row, span = pads.reshape(-1), np.uint64(slots)  # flat, by unsigned indices: no sign checks
    flat = best.reshape(-1)
    x0, x1, x2, x3 = points[0], points[1], points[2], points[3]
    base, sentinel = np.uint64(lo), np.uint64(hi - lo) * width
    c1, c2, c3 = np.uint64(1), np.uint64(2), np.uint64(3)
    for v in range(lo, hi):
        e = node_offsets[v]
        u = np.uint64(e)
        b, m = b_edge[u], m_edge[u]
        r = (np.uint64(row[u * span]) - base) * width
        q = (np.uint64(row[u * span + c1]) - base) * width if slots == 2 else sentinel
        a0, a1 = b + x0 * m + flat[r] + flat[q], b + x1 * m + flat[r + c1] + flat[q + c1]
        a2, a3 = b + x2 * m + flat[r + c2] + flat[q + c2], b + x3 * m + flat[r + c3] + flat[q + c3]
        for e in range(node_offsets[v] + 1, node_offsets[v + 1]):
            u = np.uint64(e)
            b, m = b_edge[u], m_edge[u]
            r = (np.uint64(row[u * span]) - base) * width
            q = (np.uint64(row[u * span + c1]) - base) * width if slots == 2 else sentinel
            s0, s1 = b + x0 * m + flat[r] + flat[q], b + x1 * m + flat[r + c1] + flat[q + c1]
            s2, s3 = b + x2 * m + flat[r + c2] + flat[q + c2], b + x3 * m + flat[r + c3] + flat[q + c3]
            a0, a1 = (s0 if s0 > a0 else a0), (s1 if s1 > a1 else a1)
            a2, a3 = (s2 if s2 > a2 else a2), (s3 if s3 > a3 else a3)
        r = np.uint64(v - lo) * width
        flat[r], flat[r + c1], flat[r + c2], flat[r + c3] = a0, a1, a2, a3


@callee_jit
def _probe_eight(node_offsets, pads, b_edge, m_edge, lo, hi, points, best):  # pragma: no cover - compiled
    """:func:`_probe_four` at ``points[:8]``, into columns 0 to 7."""
    slots, width = pads.shape[1], np.uint64(best.shape[1])
    row, span = pads.reshape(-1), np.uint64(slots)  # flat, by unsigned indices: no sign checks
    flat = best.reshape(-1)
    x0, x1, x2, x3, x4, x5, x6, x7 = (
        points[0],
        points[1],
        points[2],
        points[3],
        points[4],
        points[5],
        points[6],
        points[7],
    )
    base, sentinel = np.uint64(lo), np.uint64(hi - lo) * width
    c1, c2, c3, c4 = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)
    c5, c6, c7 = np.uint64(5), np.uint64(6), np.uint64(7)
    for v in range(lo, hi):
        e = node_offsets[v]
        u = np.uint64(e)
        b, m = b_edge[u], m_edge[u]
        r = (np.uint64(row[u * span]) - base) * width
        q = (np.uint64(row[u * span + c1]) - base) * width if slots == 2 else sentinel
        a0, a1 = b + x0 * m + flat[r] + flat[q], b + x1 * m + flat[r + c1] + flat[q + c1]
        a2, a3 = b + x2 * m + flat[r + c2] + flat[q + c2], b + x3 * m + flat[r + c3] + flat[q + c3]
        a4, a5 = b + x4 * m + flat[r + c4] + flat[q + c4], b + x5 * m + flat[r + c5] + flat[q + c5]
        a6, a7 = b + x6 * m + flat[r + c6] + flat[q + c6], b + x7 * m + flat[r + c7] + flat[q + c7]
        for e in range(node_offsets[v] + 1, node_offsets[v + 1]):
            u = np.uint64(e)
            b, m = b_edge[u], m_edge[u]
            r = (np.uint64(row[u * span]) - base) * width
            q = (np.uint64(row[u * span + c1]) - base) * width if slots == 2 else sentinel
            s0, s1 = b + x0 * m + flat[r] + flat[q], b + x1 * m + flat[r + c1] + flat[q + c1]
            s2, s3 = b + x2 * m + flat[r + c2] + flat[q + c2], b + x3 * m + flat[r + c3] + flat[q + c3]
            s4, s5 = b + x4 * m + flat[r + c4] + flat[q + c4], b + x5 * m + flat[r + c5] + flat[q + c5]
            s6, s7 = b + x6 * m + flat[r + c6] + flat[q + c6], b + x7 * m + flat[r + c7] + flat[q + c7]
            a0, a1 = (s0 if s0 > a0 else a0), (s1 if s1 > a1 else a1)
            a2, a3 = (s2 if s2 > a2 else a2), (s3 if s3 > a3 else a3)
            a4, a5 = (s4 if s4 > a4 else a4), (s5 if s5 > a5 else a5)
            a6, a7 = (s6 if s6 > a6 else a6), (s7 if s7 > a7 else a7)
        r = np.uint64(v - lo) * width
        flat[r], flat[r + c1], flat[r + c2], flat[r + c3] = a0, a1, a2, a3
        flat[r + c4], flat[r + c5], flat[r + c6], flat[r + c7] = a4, a5, a6, a7


_TRACE_MISMATCH = (
    "internal error: a probing pass's best score at a node equals none of its in-edges' scores as the trace "
    "sums them (the pass and the trace must add the same terms in the same order)"
)


@_jit
def _trace_best_edges(node_offsets, pads, b_edge, m_edge, lo, hi, x, p, best, best_edge, stack):  # pragma: no cover
    """Column ``p`` of ``best_edge`` along the best derivation at ``x``, from the goal down: each node's first
    in-edge whose score (summed as the passes sum it) is the node's best (the edge a running maximum with ties
    to the first keeps; the first edge when the best is NaN, which no score equals and the running maximum
    keeps from the first edge). A best that is not NaN and that no in-edge reproduces means that a pass summed
    differently from this trace (a bug, not an input): a :class:`~hypertune.errors.GraphError` saying so,
    rather than a wrong derivation."""
    slots = pads.shape[1]
    row, span = pads.reshape(-1), np.uint64(slots)
    base, one, sentinel = np.uint64(lo), np.uint64(1), np.uint64(hi - lo)
    stack[0] = hi - 1
    depth = 1
    while depth > 0:
        depth -= 1
        v = stack[depth]
        i = v - lo
        top = best[i, p]
        chosen = -1
        for e in range(node_offsets[v], node_offsets[v + 1]):
            u = np.uint64(e)
            t0 = np.uint64(row[u * span]) - base
            t1 = np.uint64(row[u * span + one]) - base if slots == 2 else sentinel
            if b_edge[u] + x * m_edge[u] + best[t0, p] + best[t1, p] == top:
                chosen = e
                break
        if chosen < 0:
            if top == top:
                raise GraphError(_TRACE_MISMATCH)
            chosen = node_offsets[v]
        best_edge[i, p] = chosen
        for k in range(slots):
            if pads[chosen, k] < hi:  # a tail, not the sentinel
                stack[depth] = pads[chosen, k]
                depth += 1


@_jit
def _probe_two(node_offsets, pads, b_edge, m_edge, lo, hi, points, count, best, best_edge):  # pragma: no cover
    """Viterbi at ``points[:count]``, one or two points (the first repeated), into columns 0 and 1 of ``best``
    and ``best_edge``: each point's running best a scalar of its own, in a register (numba does not vectorize
    straight-line code). The sums of :func:`_probe_one`, plus 0.0 for a padded tail; ties to the first edge.
    Flat unsigned indices: numba's negative-index checks would cost as much as the additions."""
    slots, width = pads.shape[1], np.uint64(best.shape[1])
    row, span = pads.reshape(-1), np.uint64(slots)  # flat, by unsigned indices: no sign checks
    flat, flat_edge = best.reshape(-1), best_edge.reshape(-1)
    x0, x1 = points[0], points[count - 1]
    base, one = np.uint64(lo), np.uint64(1)
    for v in range(lo, hi):
        e = node_offsets[v]  # the first in-edge (every node has one) before the loop: no test in it
        u = np.uint64(e)
        b, m = b_edge[u], m_edge[u]
        r = (np.uint64(row[u * span]) - base) * width
        top0, top1 = b + x0 * m + flat[r], b + x1 * m + flat[r + one]
        if slots == 2:
            r = (np.uint64(row[u * span + one]) - base) * width
            top0, top1 = top0 + flat[r], top1 + flat[r + one]
        arg0, arg1 = e, e
        for e in range(node_offsets[v] + 1, node_offsets[v + 1]):
            u = np.uint64(e)
            b, m = b_edge[u], m_edge[u]
            r = (np.uint64(row[u * span]) - base) * width
            s0, s1 = b + x0 * m + flat[r], b + x1 * m + flat[r + one]
            if slots == 2:
                r = (np.uint64(row[u * span + one]) - base) * width
                s0, s1 = s0 + flat[r], s1 + flat[r + one]
            take0, take1 = s0 > top0, s1 > top1
            top0, arg0 = (s0 if take0 else top0), (e if take0 else arg0)
            top1, arg1 = (s1 if take1 else top1), (e if take1 else arg1)
        r = np.uint64(v - lo) * width
        flat[r], flat[r + one], flat_edge[r], flat_edge[r + one] = top0, top1, arg0, arg1


@_jit
def _store_derivation(
    best_edge, p, lo, hi, graph, store_edge, store_tails, stored, size, work
):  # pragma: no cover - compiled
    """Append the derivation ``best_edge[:, p]`` of the goal ``hi - 1``, of ``size`` nodes (as
    :func:`_store_walk` counted them), to the store (post-order: tails first; its root is the last entry)
    and return the store. The store grows before the walk: arrays rebound inside a loop cost reference
    counting at every step, several times the walk itself."""
    if stored + size > store_edge.size:
        grow = max(2 * store_edge.size, stored + size)
        store_edge, store_tails = _resize(store_edge, grow), _resize_2d(store_tails, grow)
    _store_walk(best_edge, p, lo, hi, graph, store_edge, store_tails, stored, work, True)
    return store_edge, store_tails


@helper_jit
def _store_walk(best_edge, p, lo, hi, graph, store_edge, store_tails, stored, work, write):  # pragma: no cover
    """Walk the derivation ``best_edge[:, p]`` of the goal ``hi - 1`` in post-order and return its line
    ``(intercept, slope)`` and its number of nodes; with ``write``, store it from ``store_edge[stored]`` on (the
    store must have room). The line sums ``b_e + b(tail 0) + b(tail 1) ...`` in the inside kernel's order.
    A probed derivation is walked once without writing, and stored only if its line is a new envelope line."""
    tail_offsets, tails, b_edge, m_edge = graph.tail_offsets, graph.tails, graph.b_edge, graph.m_edge
    node, next_tail, kids, b, m = work
    depth = 1
    node[0] = hi - 1 - lo
    next_tail[0] = 0
    e = best_edge[hi - 1 - lo, p]
    b[0], m[0] = b_edge[e], m_edge[e]
    top = stored
    while depth > 0:
        d = depth - 1
        e = best_edge[node[d], p]
        k = next_tail[d]
        if tail_offsets[e] + k < tail_offsets[e + 1]:  # descend into the next tail
            next_tail[d] = k + 1
            t = tails[tail_offsets[e] + k] - lo
            f = best_edge[t, p]
            node[depth], next_tail[depth] = t, 0
            b[depth], m[depth] = b_edge[f], m_edge[f]
            depth += 1
            continue
        if write:
            store_edge[top] = e
            for j in range(store_tails.shape[1]):
                store_tails[top, j] = kids[d, j] if j < k else -1
        depth -= 1
        if depth > 0:
            parent = depth - 1
            slot = next_tail[parent] - 1
            kids[parent, slot] = top
            b[parent] += b[depth]
            m[parent] += m[depth]
        top += 1
    return b[0], m[0], top - stored


def kbest_envelopes(
    offsets: np.ndarray, intercepts: np.ndarray, slopes: np.ndarray, order: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Och's (2003) sweep for many k-best lists at once (the lattice-only fast path of the envelope
    semiring on degenerate lattices): hypotheses ``offsets[s]:offsets[s+1]`` belong to sentence ``s``.

    ``order`` (optional): hypothesis indices sorted stably by slope within each sentence's block, when the
    caller knows it already (a unit direction's slopes are a feature column, whose order never changes).
    Returns ``(segment_offsets, left, hypothesis)``: sentence ``s``'s envelope is segments
    ``segment_offsets[s]:segment_offsets[s+1]``, each with its left breakpoint and hypothesis index.
    """
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if order is None:
        order = np.empty(0, dtype=np.int64)
    return _kbest_kernel(
        offsets,
        np.ascontiguousarray(intercepts, dtype=np.float64),
        np.ascontiguousarray(slopes, dtype=np.float64),
        np.ascontiguousarray(order, dtype=np.int64),
    )


@_jit
def _kbest_kernel(offsets, b, m, given_order, prefilter=True):  # pragma: no cover - compiled
    """:func:`_sweep`, the blocks sorted here when ``given_order`` is empty."""
    order = given_order if given_order.size else _block_orders(offsets, m)
    return _sweep(offsets, b, m, order, prefilter, offsets[:0])


@_jit
def _block_orders(offsets, values):  # pragma: no cover - compiled
    """Indices ``offsets[s]:offsets[s+1]`` of every block sorted stably by ``values`` within the block."""
    order, scratch = np.empty(values.size, dtype=np.int64), np.empty(values.size, dtype=np.int64)
    for s in range(offsets.size - 1):
        stable_argsort(values, offsets[s], offsets[s + 1], order[offsets[s] :], scratch)
    return order


@callee_jit
def _sweep(offsets, b, m, given_order, prefilter, tops):  # pragma: no cover - compiled
    """Och's sweep over every block in ``given_order`` (sorted by slope within each block). ``tops``: every
    block's first line highest at γ = 0 (:func:`~hypertune.tuners.model_best.model_best_rows` of ``b``, the
    same for every direction from one point), or empty to find them here."""
    n = offsets.size - 1
    left = np.empty(b.size)
    slope = np.empty(b.size)
    intercept = np.empty(b.size)
    chosen = np.empty(b.size, dtype=np.int64)
    kept = np.empty(b.size, dtype=np.int64)
    keep = np.empty(b.size, dtype=np.bool_)
    segment_offsets = np.zeros(n + 1, dtype=np.int64)
    stored = 0
    for s in range(n):
        lo, hi = offsets[s], offsets[s + 1]
        order = given_order[lo:hi]
        if prefilter and order.size > 8:
            best = lo
            if tops.size:
                best = tops[s]
            else:
                for c in range(lo + 1, hi):
                    if b[c] > b[best]:
                        best = c
            order = kept[: _hull_candidates(order, lo, hi, m, b, best, keep, kept)]
        stored = _upper_hull(order, m, b, left, slope, intercept, chosen, stored)
        segment_offsets[s + 1] = stored
    return segment_offsets, left[:stored], chosen[:stored]


HULL_MARGIN = 1e-7
"""How far below the hull (relative to the orientation determinant's terms) a line must be to be dropped
before the sweep: some 10^8 times the determinant's rounding error bound (Shewchuk 1997, about 3.3e-16)."""


@helper_jit
def _hull_candidates(order, lo, hi, m, b, best, keep, kept):  # pragma: no cover - compiled
    """The lines of ``order`` (lines ``lo:hi`` sorted by slope) that are not clearly below the upper
    envelope of three of them, written to ``kept`` in order; returns their number (Akl & Toussaint's 1978
    throw-away step). In the dual, line ``b + γ·m`` is the point ``(m, b)`` and the envelope is the upper
    convex hull; the three are the first (least slope), the first highest at γ = 0 (``best``) and the last (greatest
    slope), and a line is clearly below if its point lies below the chord of its two neighbours among them
    by more than ``HULL_MARGIN`` of the orientation determinant's terms. Such a line lies far below every
    envelope line wherever they meet, so the sweep pops it without its comparisons deciding anything about
    the envelope: the envelope, its breakpoints and its tie-breaking come out the same, bit for bit (tested
    on adversarial lines). Drops about 70 % of a real k-best list's lines; the test runs over the lines in
    memory order, without branches, so it vectorizes."""
    low, high = order[0], order[order.size - 1]
    m_low, b_low, m_best, b_best, m_high, b_high = m[low], b[low], m[best], b[best], m[high], b[high]
    for c in range(lo, hi):  # a chord (i, j) is above the point by (rise - run) / (m_j - m_i)
        rise, run = (b_best - b_low) * (m[c] - m_low), (b[c] - b_low) * (m_best - m_low)
        below_left = (m_low < m_best) & (rise - run > HULL_MARGIN * (abs(rise) + abs(run)))
        rise, run = (b_high - b_best) * (m[c] - m_best), (b[c] - b_best) * (m_high - m_best)
        below_right = (m_best < m_high) & (rise - run > HULL_MARGIN * (abs(rise) + abs(run)))
        keep[c - lo] = not (below_left if m[c] <= m_best else below_right)
    size = 0
    for c in order:
        kept[size] = c
        size += keep[c - lo]
    return size


def kbest_surface_rows(
    offsets: np.ndarray,
    intercepts: np.ndarray,
    slopes: np.ndarray,
    order: np.ndarray | None,
    stats: np.ndarray,
    tops: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`kbest_envelopes` and the statistics along the envelopes in one compiled pass: the arrays of
    :class:`~hypertune.tuners.linesearch.ErrorSurfaces` (Och 2003, section 6), ``(firsts, breakpoints,
    deltas, sizes)``, exactly as :meth:`~hypertune.tuners.linesearch.ErrorSurfaces.from_segments` builds
    them from the envelopes and ``stats[hypothesis]``. ``stats`` (float64, one row per hypothesis) and
    every sentence's list must be non-empty. ``tops`` (optional): every list's model-best row under
    ``intercepts`` (:func:`~hypertune.tuners.model_best.model_best_rows`), which every direction from one
    point shares."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    slopes = np.ascontiguousarray(slopes, dtype=np.float64)
    order = _block_orders(offsets, slopes) if order is None else np.ascontiguousarray(order, dtype=np.int64)
    if tops is not None:
        tops = np.ascontiguousarray(tops, dtype=np.int64)
        if tops.shape != (offsets.size - 1,) or np.any(tops < offsets[:-1]) or np.any(tops >= offsets[1:]):
            raise GraphError("kbest_surface_rows: tops must give one row of each list, inside it")
    return _kbest_surface_kernel(
        offsets,
        np.ascontiguousarray(intercepts, dtype=np.float64),
        slopes,
        order,
        np.ascontiguousarray(stats, dtype=np.float64),
        offsets[:0] if tops is None else tops,
    )


@_jit
def _kbest_surface_kernel(offsets, b, m, given_order, stats, tops):  # pragma: no cover - compiled
    """Every sentence's first segment's statistics row; every later segment's left breakpoint and change
    in statistics (its row minus the previous segment's), in sentence order."""
    segment_offsets, left, chosen = _sweep(offsets, b, m, given_order, True, tops)
    n, width = offsets.size - 1, stats.shape[1]
    firsts = np.empty((n, width))
    breakpoints = np.empty(left.size - n)
    deltas = np.empty((left.size - n, width))
    counts = np.empty(n, np.int64)  # segments per sentence (loops: np.diff, row copies cost seconds to compile)
    k = 0
    for s in range(n):
        lo, hi = segment_offsets[s], segment_offsets[s + 1]
        counts[s] = hi - lo
        for j in range(width):
            firsts[s, j] = stats[chosen[lo], j]
        for i in range(lo + 1, hi):
            breakpoints[k] = left[i]
            row, previous = chosen[i], chosen[i - 1]
            for j in range(width):
                deltas[k, j] = stats[row, j] - stats[previous, j]
            k += 1
    return firsts, breakpoints, deltas, counts


def envelope_yields(result: EnvelopeResult) -> tuple[np.ndarray, np.ndarray]:
    """Word ids of every goal line's derivation, as flat tokens and offsets (compiled)."""
    hg = result.hg
    return _yields_kernel(result.goal_lines, result.line_edge, result.line_tails, hg.target_offsets, hg.target)


@_jit
def _yields_kernel(goal_lines, line_edge, line_tails, target_offsets, target):  # pragma: no cover - compiled
    """Counted first, then written: arrays that grow inside the walk would cost reference counting at every
    token. A path down a derivation visits each stored line at most once, so its depth is at most their
    number."""
    stack_line = np.empty(line_edge.size + 1, dtype=np.int64)
    stack_pos = np.empty(line_edge.size + 1, dtype=np.int64)
    offsets = np.zeros(goal_lines.size + 1, dtype=np.int64)
    for g in range(goal_lines.size):
        offsets[g + 1] = _walk_yield(goal_lines[g], line_edge, line_tails, target_offsets, target, stack_line,
                                     stack_pos, offsets[:0], offsets[g])  # fmt: skip
    tokens = np.empty(offsets[-1], dtype=np.int64)
    for g in range(goal_lines.size):
        _walk_yield(goal_lines[g], line_edge, line_tails, target_offsets, target, stack_line, stack_pos, tokens,
                    offsets[g])  # fmt: skip
    return tokens, offsets


@_jit
def _walk_yield(
    line, line_edge, line_tails, target_offsets, target, stack_line, stack_pos, tokens, count
):  # pragma: no cover - compiled
    """The words of ``line``'s derivation, from ``tokens[count]`` on (counted only when ``tokens`` is empty);
    returns the count after them."""
    write = tokens.size > 0
    depth = 1
    stack_line[0], stack_pos[0] = line, 0
    while depth > 0:
        current = stack_line[depth - 1]
        e = line_edge[current]
        i = target_offsets[e] + stack_pos[depth - 1]
        if i >= target_offsets[e + 1]:
            depth -= 1
            continue
        stack_pos[depth - 1] += 1
        token = target[i]
        if token >= 0:
            if write:
                tokens[count] = token
            count += 1
        else:
            stack_line[depth], stack_pos[depth] = line_tails[current, -token - 1], 0
            depth += 1
    return count


@_jit
def _probe_one(graph, lo, hi, x, p, best, best_edge):  # pragma: no cover
    """:func:`_probe_pass` for the single point ``x``, into column ``p``."""
    node_offsets, tail_offsets, tails, b_edge, m_edge, _ = graph
    for v in range(lo, hi):
        i = v - lo
        e0 = node_offsets[v]
        top, arg = 0.0, e0
        for e in range(e0, node_offsets[v + 1]):
            s = b_edge[e] + x * m_edge[e]
            for k in range(tail_offsets[e], tail_offsets[e + 1]):
                s += best[tails[k] - lo, p]
            if e == e0 or s > top:
                top, arg = s, e
        best[i, p], best_edge[i, p] = top, arg


@numba.njit(cache=True, inline="always")
def _resize(array, size):  # pragma: no cover - compiled
    out = np.empty(size, dtype=array.dtype)
    out[: array.size] = array
    return out


@numba.njit(cache=True, inline="always")
def _resize_2d(array, size):  # pragma: no cover - compiled
    out = np.empty((size, array.shape[1]), dtype=np.int64)
    out[: array.shape[0]] = array
    return out
