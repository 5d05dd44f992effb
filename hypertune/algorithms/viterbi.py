"""The best derivation: inside in a selective semiring, keeping the winning in-edge of every node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hypertune import compiled
from hypertune.algorithms.inside_outside import Engine, _check_length, _kernel_to_run
from hypertune.hypergraph import Derivation, Hypergraph, PackedGraphs
from hypertune.semirings import Semiring, SemiringValues, TropicalSemiring
from hypertune.weights import Weights


def best_derivation(
    hg: Hypergraph, semiring: Semiring, edge_values: SemiringValues, engine: Engine = "auto"
) -> tuple[Any, Derivation]:
    """The best derivation under a selective semiring (⊕ picks one of its arguments) and its value.

    Same recursion as inside, but each node remembers which in-edge won ⊕ (the first among ties).
    """
    if not semiring.selective:
        raise ValueError(f"best-derivation search needs a selective semiring (a ⊕ b ∈ {{a, b}}); {semiring!r} is not")
    _check_length(hg, edge_values)
    if _kernel_to_run(semiring, edge_values, engine) == "tropical":
        best, best_edge = compiled.viterbi_inside(
            hg.node_offsets, hg.tail_offsets, hg.tails, np.ascontiguousarray(edge_values, dtype=np.float64)
        )
        return float(best[hg.goal]), hg.derivation_from_backpointers(best_edge)
    beta: list[Any] = [semiring.zero] * hg.num_nodes
    best_edge = np.full(hg.num_nodes, -1, dtype=np.int64)
    for v in range(hg.num_nodes):
        for e in hg.in_edges(v):
            value = edge_values[e]
            for u in hg.edge_tails(e):
                value = semiring.times(value, beta[u])
            if best_edge[v] < 0 or not semiring.equal(semiring.plus(beta[v], value), beta[v], 0.0):
                beta[v], best_edge[v] = value, e
    return beta[hg.goal], hg.derivation_from_backpointers(best_edge)


@dataclass(frozen=True)
class ScoredDerivation:
    """A derivation with its model score, target words and feature vector (named)."""

    score: float
    derivation: Derivation
    words: list[str]
    features: dict[str, float]

    @property
    def text(self) -> str:
        return " ".join(self.words)


def describe_derivation(hg: Hypergraph, derivation: Derivation, score: float) -> ScoredDerivation:
    """Attach yield and features to a derivation."""
    vector = hg.derivation_features(derivation)
    names = hg.feature_space.names
    features = {names[i]: float(vector[i]) for i in np.flatnonzero(vector).tolist()}
    return ScoredDerivation(float(score), derivation, hg.derivation_words(derivation), features)


def viterbi(hg: Hypergraph, weights: Weights) -> ScoredDerivation:
    """The model-best derivation argmax_d w · f(d), with its yield, features and score."""
    scores = weights.edge_scores(hg)
    score, derivation = best_derivation(hg, TropicalSemiring(), scores)
    return describe_derivation(hg, derivation, score)


def viterbi_yields(packed: PackedGraphs, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The words of every packed graph's best derivation under additive edge ``scores`` (the first best
    in-edge on ties, as :func:`best_derivation`): flat word ids and offsets, graph ``g``'s words being
    ``words[offsets[g]:offsets[g + 1]]``. Two compiled passes over the whole corpus."""
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    _, best_edge = compiled.viterbi_inside(packed.node_offsets, packed.tail_offsets, packed.tails, scores)
    goals = packed.node_starts[1:] - 1
    return compiled.best_yields(
        best_edge, goals, packed.tail_offsets, packed.tails, packed.target_offsets, packed.target
    )
