"""Compiled inside pass in the envelope semiring: the upper envelope of every node along a line.

Computes what :func:`hypertune.algorithms.inside` computes with
:class:`~hypertune.semirings.envelope.EnvelopeSemiring`, over flat arrays. Envelope sizes are not
known in advance (in the worst case they grow faster than the number of edges: parametric shortest
paths), so the line store grows by doubling. Each stored line keeps a back-pointer: its edge and, per
tail, the index of the tail's line it was built from, so every goal line's derivation is recoverable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from hypertune.hypergraph import Derivation, Hypergraph

_jit = numba.njit(cache=True, nogil=True)


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
        edge = int(self.line_edge[line])
        arity = int(self.hg.tail_offsets[edge + 1] - self.hg.tail_offsets[edge])
        return Derivation(edge, tuple(self._build(int(t)) for t in self.line_tails[line, :arity]))


def envelope_inside(hg: Hypergraph, intercepts: np.ndarray, slopes: np.ndarray) -> EnvelopeResult:
    """The goal's upper envelope for edge lines ``intercepts[e] + γ·slopes[e]``."""
    max_arity = max(1, hg.max_arity)
    left, slope, intercept, edge, tails, start, end = _envelope_kernel(
        hg.node_offsets,
        hg.tail_offsets,
        hg.tails,
        np.ascontiguousarray(intercepts, dtype=np.float64),
        np.ascontiguousarray(slopes, dtype=np.float64),
        max_arity,
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
        order = np.argsort(cand_m[:count], kind="mergesort")
        top = _upper_hull(order, cand_m, cand_b, left, slope, intercept, chosen, stored)
        for k in range(stored, top):
            line_edge[k] = cand_e[chosen[k]]
            line_tails[k] = cand_t[chosen[k]]
        end[v] = top
        stored = top
    return left[:stored], slope[:stored], intercept[:stored], line_edge[:stored], line_tails[:stored], start, end


@_jit
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
def _kbest_kernel(offsets, b, m, given_order):  # pragma: no cover - compiled
    n = offsets.size - 1
    left = np.empty(b.size)
    slope = np.empty(b.size)
    intercept = np.empty(b.size)
    chosen = np.empty(b.size, dtype=np.int64)
    segment_offsets = np.zeros(n + 1, dtype=np.int64)
    stored = 0
    for s in range(n):
        lo, hi = offsets[s], offsets[s + 1]
        if given_order.size:
            order = given_order[lo:hi] - lo
        else:
            order = np.argsort(m[lo:hi], kind="mergesort")
        top = _upper_hull(order, m[lo:hi], b[lo:hi], left, slope, intercept, chosen, stored)
        for k in range(stored, top):
            chosen[k] += lo
        stored = top
        segment_offsets[s + 1] = stored
    return segment_offsets, left[:stored], chosen[:stored]


def envelope_yields(result: EnvelopeResult) -> tuple[np.ndarray, np.ndarray]:
    """Word ids of every goal line's derivation, as flat tokens and offsets (compiled)."""
    hg = result.hg
    return _yields_kernel(result.goal_lines, result.line_edge, result.line_tails, hg.target_offsets, hg.target)


@_jit
def _yields_kernel(goal_lines, line_edge, line_tails, target_offsets, target):  # pragma: no cover - compiled
    tokens = np.empty(64, dtype=np.int64)
    offsets = np.zeros(goal_lines.size + 1, dtype=np.int64)
    count = 0
    stack_line = np.empty(64, dtype=np.int64)
    stack_pos = np.empty(64, dtype=np.int64)
    for g in range(goal_lines.size):
        depth = 1
        stack_line[0], stack_pos[0] = goal_lines[g], 0
        while depth > 0:
            line = stack_line[depth - 1]
            e = line_edge[line]
            i = target_offsets[e] + stack_pos[depth - 1]
            if i >= target_offsets[e + 1]:
                depth -= 1
                continue
            stack_pos[depth - 1] += 1
            token = target[i]
            if token >= 0:
                if count == tokens.size:
                    tokens = _resize(tokens, 2 * count)
                tokens[count] = token
                count += 1
            else:
                if depth == stack_line.size:
                    stack_line = _resize(stack_line, 2 * depth)
                    stack_pos = _resize(stack_pos, 2 * depth)
                stack_line[depth], stack_pos[depth] = line_tails[line, -token - 1], 0
                depth += 1
        offsets[g + 1] = count
    return tokens[:count], offsets


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
