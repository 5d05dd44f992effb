"""Every sentence of a tuning set as a k-best list: k-best lists as they are, lattices and forests as their k best
derivations (Huang & Chiang 2005's lazy k-best extraction), with every hypothesis's metric statistics."""

from __future__ import annotations

import numpy as np

from hypertune.algorithms.kbest import LazyKBest
from hypertune.hypergraph import Hypergraph, from_kbest
from hypertune.tuners.corpus import TuningSet


def as_kbest_lists(tuning_set: TuningSet, w: np.ndarray, k: int) -> tuple[list[Hypergraph], list[np.ndarray]]:
    """Every sentence as a k-best list with its edges' statistics: k-best lists as they are, lattices and
    forests as the list of their ``k`` best derivations under ``w`` (derivations, not distinct strings:
    with every derivation the list is the graph's distribution exactly)."""
    graphs, stats = [], []
    for s, hg in enumerate(tuning_set.graphs):
        if hg.is_kbest:
            graphs.append(hg)
            stats.append(tuning_set.edge_stats(s))
            continue
        search = LazyKBest(hg, hg.feature_matrix(w.size) @ w)
        names = hg.feature_space.names
        hypotheses = []
        for _, d in search.best(k):
            v = hg.derivation_features(d)
            hypotheses.append((hg.derivation_words(d), {names[i]: float(v[i]) for i in np.flatnonzero(v).tolist()}))
        listed = from_kbest(hypotheses, hg.feature_space, hg.vocabulary, sentence_id=hg.sentence_id)
        graphs.append(listed)
        stats.append(tuning_set.list_stats(s, listed))
    return graphs, stats
