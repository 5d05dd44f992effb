"""The model-best translations: for any weights, every sentence's highest-scoring hypothesis (k-best lists, first
on ties as in Moses) or Viterbi derivation (lattices and forests), and their metric statistics."""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

import hypertune.numba_cache  # noqa: F401  # first: the kernels' cache stamps cover the whole package
from hypertune.arrays import offsets_from_counts
from hypertune.hypergraph import PackedGraphs, pad_columns
from hypertune.tuners.corpus import TuningSet


@numba.njit(cache=True, nogil=True)
def model_best_rows(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """The model-best hypothesis of every k-best list: for sentence ``s``, the row of the first highest
    score among ``scores[offsets[s]:offsets[s + 1]]`` (ties go to the earlier hypothesis, as in Moses;
    -1 for an empty list). The one copy of the rule, used by MERT, MIRA and hope/fear search."""
    out = np.full(offsets.size - 1, -1, dtype=np.int64)
    for s in range(offsets.size - 1):
        lo, hi = offsets[s], offsets[s + 1]
        if hi > lo:
            best = lo
            for r in range(lo + 1, hi):
                if scores[r] > scores[best]:
                    best = r
            out[s] = best
    return out


class ModelBest:
    """The metric statistics of every sentence's model-best translation, for any weights: k-best lists take
    their first highest-scoring hypothesis (:func:`model_best_rows`), lattices and forests their Viterbi
    derivation (first best in-edge on ties), all in compiled passes over arrays packed once."""

    def __init__(self, tuning_set: TuningSet) -> None:
        self.tuning_set = tuning_set
        width = len(tuning_set.feature_space)
        self.width = width
        if batch_arrays(tuning_set):  # one batch of lists: its arrays as they are, no graph made
            batch = tuning_set.batch
            assert batch is not None
            self.lists, self.others = list(range(len(batch))), []
            self.list_features = pad_columns(batch.feature_rows(), width)
            self.list_offsets = batch.list_offsets
            self.list_stats = tuning_set.batch_rows()
            self.size = self.list_stats.shape[1]  # the tuning set's stats_size, without making list 0's graph
            return
        self.lists = [s for s, g in enumerate(tuning_set.graphs) if g.is_kbest]
        self.others = [s for s, g in enumerate(tuning_set.graphs) if not g.is_kbest]
        if self.lists:
            graphs = [tuning_set.graphs[s] for s in self.lists]
            self.list_features = sp.vstack([g.feature_matrix(width)[1:] for g in graphs], format="csr")
            self.list_offsets = offsets_from_counts([g.num_edges - 1 for g in graphs])
            self.list_stats = np.vstack([tuning_set.edge_stats(s)[1:] for s in self.lists])
        if self.others:
            self.packed = PackedGraphs.pack([tuning_set.graphs[s] for s in self.others])
            self.graph_features = self.packed.features.tocsr()
        self.size = tuning_set.stats_size

    def stats(self, w: np.ndarray) -> np.ndarray:
        """One row of statistics per sentence, in tuning-set order."""
        out = np.zeros((len(self.tuning_set), self.size))
        if self.lists:
            rows = model_best_rows(np.ascontiguousarray(self.list_features @ w), self.list_offsets)
            out[self.lists] = self.list_stats[rows]
        if self.others:
            from hypertune.algorithms.viterbi import viterbi_yields  # graphs only: the k-best path imports no search

            words, offsets = viterbi_yields(self.packed, self.graph_features @ w)
            sentences = np.asarray(self.others, dtype=np.int64)
            out[self.others] = self.tuning_set.batch_stats(words, offsets, sentences)
        return out

    def score(self, w: np.ndarray) -> float:
        """The corpus metric of the model-best translations under ``w``: what decoding the inputs with ``w``
        and scoring the output gives."""
        return float(self.tuning_set.score(self.stats(w).sum(axis=0)))


def batch_arrays(tuning_set: TuningSet) -> bool:
    """Whether ``tuning_set`` is one :class:`~hypertune.formats.kbest_batch.KbestBatch` whose statistics come
    from its arrays (:meth:`TuningSet.batch_rows`): the model-best rows and minimum risk's k-best search spaces
    are then read from the batch, without making its graphs."""
    batch = tuning_set.batch
    return (
        batch is not None and not tuning_set.metric.given_names and (batch.stats is not None or batch.words is not None)
    )
