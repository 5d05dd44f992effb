"""What each decoding adds to the tuning loop's pool of candidates, and the dev metric of the decoder's 1-best.

Accumulation follows Moses (``mert-moses.pl``): the k-best lists of all iterations are merged per sentence
with duplicates removed -- a hypothesis is a duplicate when its words and feature values are equal, the
rule of :func:`hypertune.tuners.sentence_ids.merge_kbest`, which is what the tuner then sees. Lattices and
hypergraphs are joined (:func:`hypertune.hypergraph.union`); there a candidate is a whole graph, new
unless an identical graph (same nodes, edges, words and feature values) of the same sentence came before.
The loop has converged when a decoding adds no candidate.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence

import numpy as np

from hypertune.formats import read_graphs
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.model_best import ModelBest
from hypertune.weights import Weights


class CandidatePool:
    """The distinct candidates of every sentence over the decodings added so far, in order. Rebuilt from the
    files on ``--resume`` (the same files in the same order give the same counts), so it is never stored."""

    def __init__(self) -> None:
        self.feature_space = FeatureSpace()
        self.vocabulary = Vocabulary()
        self._seen: dict[object, set[Hashable]] = {}
        self.unnamed = 0  # graphs without a sentence id (numbered by position; accumulation cannot join them)
        self.last_hypotheses = 0  # the hypotheses of the k-best lists of the decoding added last (--scorer's lines)

    @property
    def size(self) -> int:
        """Distinct candidates so far (hypotheses of k-best lists, whole lattices or forests)."""
        return sum(len(keys) for keys in self._seen.values())

    def add(self, paths: Sequence[str]) -> int:
        """Read one decoding's output (files or directories of any graph format) and return how many of its
        candidates are new."""
        added = 0
        self.last_hypotheses = 0
        for position, hg in enumerate(read_graphs(list(paths), None, self.feature_space, self.vocabulary)):
            sentence = hg.sentence_id if hg.sentence_id is not None else ("#", position)
            self.unnamed += hg.sentence_id is None
            seen = self._seen.setdefault(sentence, set())
            keys = _keys(hg)
            self.last_hypotheses += len(keys) if hg.is_kbest else 0
            for key in keys:
                if key not in seen:
                    seen.add(key)
                    added += 1
        return added


def _keys(hg: Hypergraph) -> list[Hashable]:
    """One key per candidate of ``hg``: a k-best list's hypotheses (words and features, as the merge of
    accumulated lists compares them), or the whole graph's digest."""
    if hg.is_kbest:
        features = hg.features
        keys: list[Hashable] = []
        for e in range(1, hg.num_edges):
            start, stop = features.indptr[e], features.indptr[e + 1]
            keys.append(
                (
                    hg.edge_target(e).tobytes(),
                    features.indices[start:stop].tobytes(),
                    np.asarray(features.data[start:stop], dtype=np.float64).tobytes(),
                )
            )
        return keys
    digest = hashlib.sha256()
    features = hg.features.tocsr()
    for array in (hg.head, hg.tail_offsets, hg.tails, hg.target_offsets, hg.target, features.indptr,
                  features.indices, np.asarray(features.data, dtype=np.float64)):  # fmt: skip
        digest.update(np.ascontiguousarray(array).tobytes())
        digest.update(b"|")
    return [digest.hexdigest()]


def first_best_score(tuning_set: TuningSet, weights: Weights) -> float:
    """The corpus metric of the decoder's 1-best translations -- the tuning metric, whatever it is: BLEU, TER,
    or the mean given score of ``scores.NAME`` (the scorer's scores) -- the first hypothesis of each k-best list
    (the decoder's own choice, whatever its scores), the Viterbi derivation of each lattice or forest under
    ``weights`` (the weights it decoded with)."""
    stats = ModelBest(tuning_set).stats(weights.vector(tuning_set.feature_space))
    for s, hg in enumerate(tuning_set.graphs):
        if hg.is_kbest:
            stats[s] = tuning_set.edge_stats(s)[1]
    return float(tuning_set.score(stats.sum(axis=0)))
