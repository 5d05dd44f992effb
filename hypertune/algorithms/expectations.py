"""Expectations of additive quantities over many graphs, and their gradients with respect to edge scores.

For a log-linear distribution ``p(d) ∝ exp(Σ_{e ∈ d} s_e)`` over each graph's derivations and a quantity
that adds up over edges, ``Q(d) = Σ_{e ∈ d} q_e``, this module computes ``E[Q]`` and its derivative with
respect to every edge score::

    ∂E[Q] / ∂s_e = p(e) · (E[Q | e ∈ d] - E[Q])

which is the covariance of ``Q`` with the indicator of ``e``: with edge features ``f_e`` and
``s_e = γ w·f_e`` the gradient in ``w`` is ``γ Σ_e f_e ∂E[Q]/∂s_e`` -- ``γ Cov(Q, f)``, the gradient of
minimum-risk training (Smith & Eisner 2006, eq. 8; Li & Eisner 2009, section 4 and Table 3).

Li & Eisner compute it with the second-order expectation semiring ``<p, p q, p f, p q fᵀ>``, whose
real-valued inside values overflow on real forests. Here the same numbers come in normalized form, as
probabilities that flow through the graph (cdec's inside-outside with expectation weights follows the
same idea):

1. inside, bottom-up: the log inside ``β(v)`` and every edge's share of its head,
   ``π(e) = exp(s_e + Σ_tails β(t) - β(head))`` -- the probability that a derivation of the head uses ``e``;
2. top-down, the marginal of every node, ``μ(goal) = 1``, and every edge's posterior
   ``p(e) = μ(head) π(e)``, which adds to ``μ`` of each tail;
3. the expected ``Q`` of a node's inside part, ``Q_in(v) = Σ_{e ∈ in(v)} π(e) (q_e + Σ_tails Q_in(t))``,
   and of its outside part, ``Q_out(u)``, the posterior-weighted mean of ``q_e + Q_out(head) + Σ_{other
   tails} Q_in`` over the edges with tail ``u``; then ``E[Q | e ∈ d] = q_e + Q_out(head) + Σ_tails Q_in(t)``.

Only step 1 takes exponentials (one per edge) and logarithms (one per node); the rest multiplies and adds
numbers in [0, 1], so nothing overflows. :mod:`hypertune.semirings.expectation` has the textbook semirings
the tests compare this with.

All functions take a :class:`~hypertune.hypergraph.PackedGraphs` (one graph or a whole corpus): each
graph's goal is its last node, and ``E[Q]`` is taken per graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

import hypertune.numba_cache  # noqa: F401  # first: the kernels' cache stamps cover the whole package
from hypertune.hypergraph import PackedGraphs


@dataclass(frozen=True)
class InsideOutside:
    """The distribution of packed graphs under edge scores ``s``: every node's log inside ``β`` and
    marginal ``μ``, every edge's share ``π`` of its head and posterior ``p(e ∈ d)``, every graph's ``log Z``."""

    scores: np.ndarray
    inside: np.ndarray
    shares: np.ndarray
    marginals: np.ndarray
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


def inside_outside(packed: PackedGraphs, scores: np.ndarray) -> InsideOutside:
    """Steps 1 and 2 of the module docstring for every packed graph (two compiled passes)."""
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    goal = goals(packed)
    beta, shares, marginals, posteriors = _distribution(
        packed.node_offsets, heads(packed), packed.tail_offsets, packed.tails, scores, goal
    )
    return InsideOutside(scores, beta, shares, marginals, posteriors, beta[goal])


def score_gradient(packed: PackedGraphs, io: InsideOutside, quantity: np.ndarray) -> np.ndarray:
    """``∂ E[Q] / ∂ s_e`` for every edge (see the module docstring): ``p(e) (E[Q | e ∈ d] - E[Q])``, with
    ``Q`` the sum of ``quantity[e]`` over a derivation's edges and ``E`` per graph."""
    q = np.ascontiguousarray(quantity, dtype=np.float64)
    flow = _Flow(heads(packed), packed.tail_offsets, packed.tails, io.posteriors, io.marginals)
    return _covariances(packed.node_offsets, packed.edge_starts, io.shares, flow, q, goals(packed))


_jit = numba.njit(cache=True, nogil=True)
_NEGLIGIBLE = -600.0
"""Log shares below this (about 1e-261) are dropped: they change no digit of a result, and their
exponentials would be subnormal numbers, which make every later operation on an array several times
slower. Posteriors below ``exp(_NEGLIGIBLE)`` are dropped for the same reason."""
_TINY = math.exp(_NEGLIGIBLE)


@_jit
def _distribution(node_offsets, head, tail_offsets, tails, scores, goal):  # pragma: no cover - compiled
    """Steps 1 and 2 in one kernel (one cached kernel to load instead of two): ``β``, ``π``, ``μ``, ``p(e)``."""
    beta, shares = _inside(node_offsets, tail_offsets, tails, scores)
    marginals, posteriors = _top_down(head, tail_offsets, tails, shares, goal, beta.size)
    return beta, shares, marginals, posteriors


@_jit
def _covariances(node_offsets, edge_starts, shares, flow, q, goal):  # pragma: no cover - compiled
    """Step 3 in one kernel: ``Q_in``, each graph's ``E[Q]`` (the ``Q_in`` of its goal) given to its edges, and
    every edge's covariance (:func:`_outside_covariances`)."""
    inner = _inside_expectation(node_offsets, flow.tail_offsets, flow.tails, shares, q)
    expected = np.empty(q.size)
    for g in range(goal.size):
        expected[edge_starts[g] : edge_starts[g + 1]] = inner[goal[g]]
    return _outside_covariances(flow, q, inner, expected, goal)


@_jit
def _inside(node_offsets, tail_offsets, tails, scores):  # pragma: no cover - compiled
    """``β(v) = log Σ_{e ∈ in(v)} exp(s_e + Σ_tails β(t))`` and each edge's share ``π(e)`` of its head,
    nodes bottom-up; one exponential per edge, one logarithm per node."""
    n = node_offsets.size - 1
    beta = np.full(n, -math.inf)
    shares = np.zeros(scores.size)
    for v in range(n):
        first, last = node_offsets[v], node_offsets[v + 1]
        top = -math.inf
        for e in range(first, last):
            x = scores[e]
            for k in range(tail_offsets[e], tail_offsets[e + 1]):
                x += beta[tails[k]]
            shares[e] = x
            if x > top:
                top = x
        if top == -math.inf:
            shares[first:last] = 0.0
            continue
        total = 0.0
        for e in range(first, last):
            d = shares[e] - top
            shares[e] = math.exp(d) if d > _NEGLIGIBLE else 0.0
            total += shares[e]
        beta[v] = top + math.log(total)
        for e in range(first, last):
            shares[e] /= total
    return beta, shares


@_jit
def _top_down(head, tail_offsets, tails, shares, goal, num_nodes):  # pragma: no cover - compiled
    """Node marginals ``μ`` (1 at each goal) and edge posteriors ``p(e) = μ(head) π(e)``, edges top-down
    (a node's marginal is complete once the edges above it are done: heads come after their tails)."""
    marginals = np.zeros(num_nodes)
    for g in goal:
        marginals[g] = 1.0
    posteriors = np.zeros(head.size)
    for e in range(head.size - 1, -1, -1):
        p = marginals[head[e]] * shares[e]
        if p < _TINY:
            continue
        posteriors[e] = p
        for k in range(tail_offsets[e], tail_offsets[e + 1]):
            marginals[tails[k]] += p
    return marginals, posteriors


@_jit
def _inside_expectation(node_offsets, tail_offsets, tails, shares, q):  # pragma: no cover - compiled
    """``Q_in(v) = Σ_{e ∈ in(v)} π(e) (q_e + Σ_tails Q_in(t))``: the expected quantity of the derivations of
    ``v`` under its inside distribution, nodes bottom-up."""
    n = node_offsets.size - 1
    inner = np.zeros(n)
    for v in range(n):
        total = 0.0
        for e in range(node_offsets[v], node_offsets[v + 1]):
            if shares[e] == 0.0:
                continue
            value = q[e]
            for k in range(tail_offsets[e], tail_offsets[e + 1]):
                value += inner[tails[k]]
            total += shares[e] * value
        inner[v] = total
    return inner


class _Flow(NamedTuple):
    """The top-down structure the outside pass walks: edges' heads and tails, posteriors, node marginals."""

    head: np.ndarray
    tail_offsets: np.ndarray
    tails: np.ndarray
    posteriors: np.ndarray
    marginals: np.ndarray


@_jit
def _outside_covariances(flow, q, inner, expected, goal):  # pragma: no cover - compiled
    """Edges top-down: ``Q_out(u) = Σ_{e: u ∈ tails(e)} p(e) (q_e + Q_out(head) + Σ_{t ≠ u} Q_in(t)) / μ(u)``
    (0 at each goal; a node's sum is divided out when the edges into it are reached, by then complete), and
    with it every edge's ``p(e) (q_e + Q_out(head) + Σ_tails Q_in(t) - E[Q])``."""
    head, tail_offsets, tails, posteriors, marginals = flow
    outer = np.zeros(marginals.size)
    out = np.zeros(q.size)
    is_goal = np.zeros(marginals.size, dtype=np.bool_)
    for g in goal:
        is_goal[g] = True
    current = -1
    for e in range(head.size - 1, -1, -1):
        h = head[e]
        if h != current:
            current = h
            if not is_goal[h] and marginals[h] > 0.0:
                outer[h] /= marginals[h]
        p = posteriors[e]
        if p == 0.0:
            continue
        start, stop = tail_offsets[e], tail_offsets[e + 1]
        above = q[e] + outer[h]
        below = 0.0
        for k in range(start, stop):
            below += inner[tails[k]]
        out[e] = p * (above + below - expected[e])
        for k in range(start, stop):
            outer[tails[k]] += p * (above + below - inner[tails[k]])
    return out
