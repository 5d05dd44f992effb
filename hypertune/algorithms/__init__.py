"""Algorithms over hypergraphs, each written once over the semiring interface (plus compiled fast paths)."""

from hypertune.algorithms.enumeration import enumerate_derivations
from hypertune.algorithms.inside_outside import count_derivations, describe_graph, edge_inside, inside, outside
from hypertune.algorithms.kbest import LazyKBest, kbest
from hypertune.algorithms.posteriors import (
    edge_posteriors,
    entropy,
    feature_expectations,
    log_inside_outside,
    log_partition,
    node_marginals,
)
from hypertune.algorithms.sampling import sample
from hypertune.algorithms.viterbi import ScoredDerivation, best_derivation, describe_derivation, viterbi, viterbi_yields

__all__ = [
    "LazyKBest",
    "ScoredDerivation",
    "best_derivation",
    "count_derivations",
    "describe_graph",
    "describe_derivation",
    "edge_inside",
    "edge_posteriors",
    "entropy",
    "enumerate_derivations",
    "feature_expectations",
    "inside",
    "kbest",
    "log_inside_outside",
    "log_partition",
    "node_marginals",
    "outside",
    "sample",
    "viterbi",
    "viterbi_yields",
]
