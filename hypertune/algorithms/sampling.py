"""Sampling derivations from p(d) = exp(w·f(d)) / Z, top-down from the goal.

At node ``v`` edge ``e`` is chosen with probability exp(s_e + Σ_tails β - β(v)) (its share of the inside
score), then every tail is expanded the same way: an exact sample (Goodman 1998, ch. 4; cdec's
``HG::Sample``).
"""

from __future__ import annotations

import numpy as np

from hypertune.algorithms.inside_outside import edge_inside, inside
from hypertune.algorithms.viterbi import ScoredDerivation, describe_derivation
from hypertune.hypergraph import Derivation, Hypergraph
from hypertune.semirings import LogSemiring
from hypertune.weights import Weights


def sample(
    hg: Hypergraph, weights: Weights, n: int, random_state: int | np.random.Generator | None = None
) -> list[ScoredDerivation]:
    """``n`` independent derivations drawn from p(d); the same seed gives the same samples."""
    rng = np.random.default_rng(random_state)
    semiring = LogSemiring()
    scores = weights.edge_scores(hg)
    beta = inside(hg, semiring, scores)
    choice = np.exp(np.asarray(edge_inside(hg, semiring, scores, beta)) - beta[hg.head])
    cumulative = np.cumsum(choice)
    offsets = hg.node_offsets
    draws = []
    for _ in range(n):
        derivation = _draw(hg, hg.goal, rng, cumulative, offsets)
        draws.append(describe_derivation(hg, derivation, float(scores[derivation.edges()].sum())))
    return draws


def _draw(
    hg: Hypergraph, goal: int, rng: np.random.Generator, cumulative: np.ndarray, offsets: np.ndarray
) -> Derivation:
    """One derivation drawn top-down: at each node an in-edge with probability proportional to its inside
    mass. Nodes are visited in pre-order with an explicit stack (no recursion: lattices can be deep)."""
    edges = []
    stack = [goal]
    while stack:
        node = stack.pop()
        first, last = int(offsets[node]), int(offsets[node + 1])
        before = cumulative[first - 1] if first else 0.0
        point = before + rng.random() * (cumulative[last - 1] - before)
        edge = min(int(np.searchsorted(cumulative[first:last], point, side="right")) + first, last - 1)
        edges.append(edge)
        stack.extend(int(t) for t in reversed(hg.edge_tails(edge)))
    return hg.derivation_from_edges(edges)
