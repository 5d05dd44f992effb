"""Engine figures: inside/outside, Viterbi and expectations on a seeded synthetic forest."""

from __future__ import annotations

import numpy as np

from hypertune import algorithms
from hypertune.bench.core import Figure, median_time
from hypertune.generate import random_hypergraph
from hypertune.semirings import LogSemiring
from hypertune.weights import Weights


def engine_figures(num_edges: int = 100_000, num_features: int = 20, repeat: int = 20, seed: int = 0) -> list[Figure]:
    """Edge scoring + log inside + outside, Viterbi with its yield, and feature expectations on a forest
    of at least ``num_edges`` edges of arity 1-2 (the targets of the engine issue)."""
    hg = random_hypergraph(int(num_edges * 1.15), num_features=num_features, seed=seed)
    rng = np.random.default_rng(seed)
    weights = Weights({f"F{i}": float(rng.normal(scale=0.1)) for i in range(num_features)})
    semiring = LogSemiring()

    def inside_outside() -> None:
        scores = weights.edge_scores(hg)
        beta = algorithms.inside(hg, semiring, scores)
        algorithms.outside(hg, semiring, scores, beta)

    size = f"{hg.num_edges} edges, {hg.num_nodes} nodes, {num_features} features"
    return [
        Figure("edge scoring + inside + outside (log)", median_time(inside_outside, repeat), 0.010, size),
        Figure(
            "Viterbi derivation with yield", median_time(lambda: algorithms.viterbi(hg, weights), repeat), 0.010, size
        ),
        Figure(
            "feature expectations",
            median_time(lambda: algorithms.feature_expectations(hg, weights), repeat),
            0.030,
            size,
        ),
    ]
