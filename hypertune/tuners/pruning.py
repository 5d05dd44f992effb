"""A tuning set's lattices and forests pruned once, by max-marginal rank under the start weights
(Cherry & Foster 2012; Moses ``--hg-prune``)."""

from __future__ import annotations

from hypertune.algorithms.prune import prune
from hypertune.errors import UsageError
from hypertune.tuners.corpus import TuningSet
from hypertune.weights import Weights


def prune_tuning_set(tuning_set: TuningSet, weights: Weights, density: float) -> TuningSet:
    """Prune every graph to ``density x reference length`` edges by max-marginal rank under ``weights``
    (Cherry & Foster 2012; Moses ``--hg-prune``, applied once with the initial weights). Reference length:
    the shortest reference, in words."""
    if density <= 0:
        raise UsageError(f"the pruning density must be positive, got {density}")
    graphs = []
    for s, hg in enumerate(tuning_set.graphs):
        if hg.is_kbest:
            graphs.append(hg)
            continue
        ref_len = min((len(r.split()) for r in tuning_set.references[s]), default=1)
        limit = max(1, int(density * max(ref_len, 1)))
        pruned, _ = prune(hg, weights.edge_scores(hg), limit)  # per-edge annotations follow the kept edges
        graphs.append(pruned)
    return TuningSet(graphs, tuning_set.references, tuning_set.metric, tuning_set.sentence_ids)
