"""Expectations of additive quantities over many graphs, and their gradients with respect to edge scores.

For a log-linear distribution ``p(d) ∝ exp(Σ_{e ∈ d} s_e)`` over each graph's derivations and a quantity
that adds up over edges, ``Q(d) = Σ_{e ∈ d} q_e``, this module computes ``E[Q]`` and its derivative with
respect to every edge score::

    ∂E[Q] / ∂s_e = p(e) · (E[Q | e ∈ d] - E[Q])

which is the covariance of ``Q`` with the indicator of ``e``: with edge features ``f_e`` and
``s_e = γ w·f_e`` the gradient in ``w`` is ``γ Σ_e f_e ∂E[Q]/∂s_e`` -- ``γ Cov(Q, f)``, the gradient of
minimum-risk training (Smith & Eisner 2006, eq. 8; Li & Eisner 2009, section 4 and Table 3).

Li & Eisner compute it with the second-order expectation semiring ``<p, p q, p f, p q fᵀ>``, whose
real-valued inside values overflow on real forests. The same numbers come from one more pair of passes
in normalized form (cdec's inside-outside with expectation weights follows the same idea): besides the
log inside ``β`` and log outside ``α``, every node keeps the expected ``Q`` of its inside part under
the inside distribution, ``Q_in(v)``, and of its outside part, ``Q_out(v)``; then
``E[Q | e ∈ d] = q_e + Q_out(head) + Σ_tails Q_in(t)``. Everything stays in log space or is a convex
combination, so nothing overflows. :mod:`hypertune.semirings.expectation` has the textbook semirings the
tests compare this with.

All functions take a :class:`~hypertune.hypergraph.PackedGraphs` (one graph or a whole corpus): each
graph's goal is its last node, and ``E[Q]`` is taken per graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from hypertune.compiled import LOG, scalar_inside
from hypertune.hypergraph import PackedGraphs


@dataclass(frozen=True)
class LogInsideOutside:
    """The log inside and outside of every node of packed graphs under edge scores ``s``, each edge's
    posterior ``p(e ∈ d)``, and every graph's ``log Z``."""

    scores: np.ndarray
    inside: np.ndarray
    outside: np.ndarray
    posteriors: np.ndarray
    log_partition: np.ndarray

    def totals(self, quantities: np.ndarray) -> np.ndarray:
        """``Σ_graphs E[Q_k]`` for every column ``k`` of ``quantities`` (E,) or (E, K), sparse or dense:
        the posterior-weighted sum over all edges."""
        return quantities.T @ self.posteriors


def goals(packed: PackedGraphs) -> np.ndarray:
    """The goal node of every packed graph (its last node)."""
    return packed.node_starts[1:] - 1


def heads(packed: PackedGraphs) -> np.ndarray:
    """The head node of every edge."""
    return np.repeat(np.arange(packed.node_offsets.size - 1, dtype=np.int64), np.diff(packed.node_offsets))


def log_inside_outside(packed: PackedGraphs, scores: np.ndarray) -> LogInsideOutside:
    """Log inside, log outside and edge posteriors of every packed graph (compiled, one pass each)."""
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    beta = scalar_inside(LOG, packed.node_offsets, packed.tail_offsets, packed.tails, scores)
    goal = goals(packed)
    head = heads(packed)
    alpha, _ = _outside(head, packed.tail_offsets, packed.tails, scores, beta, np.zeros(0), np.zeros(0), goal)
    log_z = beta[goal][np.repeat(np.arange(goal.size), np.diff(packed.edge_starts))]
    posteriors = _posteriors(head, packed.tail_offsets, packed.tails, scores, beta, alpha, log_z)
    return LogInsideOutside(scores, beta, alpha, posteriors, beta[goal])


def score_gradient(packed: PackedGraphs, io: LogInsideOutside, quantity: np.ndarray) -> np.ndarray:
    """``∂ E[Q] / ∂ s_e`` for every edge (see the module docstring): ``p(e) (E[Q | e ∈ d] - E[Q])``, with
    ``Q`` the sum of ``quantity[e]`` over a derivation's edges and ``E`` per graph."""
    q = np.ascontiguousarray(quantity, dtype=np.float64)
    inner = _inside_expectation(packed.node_offsets, packed.tail_offsets, packed.tails, io.scores, io.inside, q)
    head = heads(packed)
    goal = goals(packed)
    _, outer = _outside(head, packed.tail_offsets, packed.tails, io.scores, io.inside, q, inner, goal)
    expected = inner[goal][np.repeat(np.arange(goal.size), np.diff(packed.edge_starts))]
    return _covariances(head, packed.tail_offsets, packed.tails, io.posteriors, q, inner, outer, expected)


_jit = numba.njit(cache=True, nogil=True)
_NEGLIGIBLE = -600.0
"""Log weights below this (about 1e-261 relative to the total) are dropped: they change no digit of a
result, and their exponentials would be subnormal numbers, which make every later operation on the array
several times slower."""


@_jit
def _posteriors(head, tail_offsets, tails, scores, beta, alpha, log_z):  # pragma: no cover - compiled
    """``p(e) = exp(α(head) + s_e + Σ_tails β(t) - log Z)``, 0 where negligible."""
    out = np.zeros(scores.size)
    for e in range(scores.size):
        x = alpha[head[e]] + scores[e] - log_z[e]
        for k in range(tail_offsets[e], tail_offsets[e + 1]):
            x += beta[tails[k]]
        if x > _NEGLIGIBLE:
            out[e] = math.exp(x)
    return out


@_jit
def _covariances(head, tail_offsets, tails, posteriors, q, inner, outer, expected):  # pragma: no cover - compiled
    """``p(e) (q_e + Q_out(head) + Σ_tails Q_in(t) - E[Q])`` for every edge."""
    out = np.zeros(q.size)
    for e in range(q.size):
        if posteriors[e] == 0.0:
            continue
        conditional = q[e] + outer[head[e]] - expected[e]
        for k in range(tail_offsets[e], tail_offsets[e + 1]):
            conditional += inner[tails[k]]
        out[e] = posteriors[e] * conditional
    return out


@_jit
def _inside_expectation(node_offsets, tail_offsets, tails, scores, beta, q):  # pragma: no cover - compiled
    """``Q_in(v) = Σ_{e ∈ in(v)} p(e | v) (q_e + Σ_tails Q_in(t))`` with ``p(e | v) = exp(s_e + Σβ(t) - β(v))``:
    the expected quantity of the derivations of ``v`` under its inside distribution, nodes bottom-up."""
    n = node_offsets.size - 1
    inner = np.zeros(n)
    for v in range(n):
        if beta[v] == -math.inf:
            continue
        total = 0.0
        for e in range(node_offsets[v], node_offsets[v + 1]):
            log_weight = scores[e] - beta[v]
            value = q[e]
            for k in range(tail_offsets[e], tail_offsets[e + 1]):
                log_weight += beta[tails[k]]
                value += inner[tails[k]]
            if log_weight > _NEGLIGIBLE:
                total += math.exp(log_weight) * value
        inner[v] = total
    return inner


@_jit
def _outside(head, tail_offsets, tails, scores, beta, q, inner, goal):  # pragma: no cover - compiled
    """Log outside ``α`` of every node (0 at each graph's goal) and, when ``q`` is given (non-empty), the
    expected quantity of a node's outside part, ``Q_out(u) = Σ p(e, u | u) (q_e + Q_out(head) + Σ_{t ≠ u}
    Q_in(t))`` over the edges ``e`` with tail ``u``. Edges top-down; each node keeps a running maximum so
    that one log per node suffices, and its weighted sum of values is rescaled with it."""
    n = beta.size
    alpha = np.full(n, -math.inf)
    outer = np.zeros(n)
    top = np.full(n, -math.inf)
    mass = np.zeros(n)
    weighted = np.zeros(n)
    is_goal = np.zeros(n, dtype=np.bool_)
    for g in goal:
        is_goal[g] = True
        alpha[g] = 0.0
    with_values = q.size > 0
    current = -1
    for e in range(head.size - 1, -1, -1):
        h = head[e]
        if h != current:
            current = h
            if not is_goal[h] and mass[h] > 0.0:
                alpha[h] = top[h] + math.log(mass[h])
                outer[h] = weighted[h] / mass[h]
        if alpha[h] == -math.inf:
            continue
        start, stop = tail_offsets[e], tail_offsets[e + 1]
        for i in range(start, stop):
            x = alpha[h] + scores[e]
            value = q[e] + outer[h] if with_values else 0.0
            for j in range(start, stop):
                if j != i:
                    x += beta[tails[j]]
                    if with_values:
                        value += inner[tails[j]]
            u = tails[i]
            if x == -math.inf or x < top[u] + _NEGLIGIBLE:
                continue
            if x > top[u]:
                rescale = math.exp(top[u] - x)
                mass[u] = mass[u] * rescale + 1.0
                weighted[u] = weighted[u] * rescale + value
                top[u] = x
            else:
                share = math.exp(x - top[u])
                mass[u] += share
                weighted[u] += share * value
    return alpha, outer
