"""k-best lists as training candidates: every sentence's k-best hypotheses (lattices and forests: their k best
derivations, :func:`~hypertune.tuners.kbest_lists.as_kbest_lists`) with their sentence gains (BLEU+1, Lin & Och
2004; or Moses's smoothed sentence BLEU), what the batch losses (:mod:`hypertune.tuners.losses`) and the online
tuners' k-best search space train on."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from hypertune.arrays import offsets_from_counts
from hypertune.errors import InputError
from hypertune.metrics.gains import gain_for, has_bleu_statistics, smoothed_gain
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.kbest_lists import as_kbest_lists
from hypertune.tuners.losses import Candidates


def kbest_candidates(
    tuning_set: TuningSet, start: np.ndarray, kbest: int = 100, smooth: str = "plus1", purpose: str = "this"
) -> Candidates:
    """Every sentence's k-best hypotheses (lattices and forests: their ``kbest`` best under ``start``), each with
    its sentence gain and length: the gain is BLEU's ``smooth`` (a ``--gain-smooth`` name,
    :func:`~hypertune.metrics.gains.smoothed_gain`), or the sentence value of a metric whose statistics are not
    BLEU's (:func:`~hypertune.metrics.gains.gain_for`); ``purpose`` names the loss in the error message."""
    metric = tuning_set.metric
    bleu = has_bleu_statistics(metric) or (tuning_set.precomputed and not metric.given_names)
    if bleu and tuning_set.stats_size % 2 != 1:
        raise InputError(f"the {purpose} loss needs BLEU statistics for its sentence gains")
    graphs, stats = as_kbest_lists(tuning_set, start, kbest)
    width = len(tuning_set.feature_space)
    features = sp.vstack([g.feature_matrix(width)[1:] for g in graphs], format="csr")
    offsets = offsets_from_counts([g.num_edges - 1 for g in graphs])
    rows = np.vstack([s[1:] for s in stats])
    order = (rows.shape[1] - 1) // 2
    gains = np.asarray(gain_for(None if bleu else metric, smoothed_gain(smooth), order).score(rows), dtype=np.float64)
    if bleu:
        lengths = rows[:, 1].copy()  # c1: the words BLEU counted
    else:  # each hypothesis edge's yield is the start node's reference, then its words
        lengths = np.concatenate([np.diff(g.target_offsets)[1:] - 1 for g in graphs]).astype(np.float64)
    return Candidates(features, offsets, gains, lengths=lengths)
