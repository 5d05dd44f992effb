"""A tuning set: one search space per sentence, its references, and the metric's statistics of yields.

Every tuner works on this. Word ids in the graphs and in the metric agree when the metric's tokenizer
is ``none`` (the default for tuning: decoder output and tuning references are already tokenized, as
Moses, cdec and Z-MERT assume), so statistics come straight from id arrays; with another tokenizer
or lowercasing, yields are turned back into strings and tokenized like the references.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from hypertune.algorithms.prune import prune
from hypertune.errors import InputError, UsageError
from hypertune.hypergraph import Hypergraph
from hypertune.metrics import BleuMetric, Metric
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.weights import Weights


@dataclass
class TuningSet:
    """Graphs (one per sentence, sharing a feature space and vocabulary), references and a metric."""

    graphs: list[Hypergraph]
    references: list[list[str]]
    metric: Metric
    _prepared: object = field(default=None, init=False, repr=False)
    _edge_stats: dict[int, np.ndarray] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.graphs:
            raise InputError("the tuning set has no sentences")
        if len(self.references) != len(self.graphs) and not self.precomputed:
            raise InputError(f"{len(self.graphs)} sentences but references for {len(self.references)}")
        if isinstance(self.metric, BleuMetric) and not self.precomputed:
            if self._ids_are_tokens():
                self.metric.vocabulary = self.vocabulary
            self._prepared = self.metric.prepare(self.references)

    # ------------------------------------------------------------------ shared spaces
    @property
    def feature_space(self) -> FeatureSpace:
        return self.graphs[0].feature_space

    @property
    def vocabulary(self) -> Vocabulary:
        return self.graphs[0].vocabulary

    @property
    def precomputed(self) -> bool:
        """True when every graph carries its hypotheses' statistics (Moses FEATSTAT/SCORESTAT input)."""
        return all("edge_stats" in g.metadata for g in self.graphs)

    def __len__(self) -> int:
        return len(self.graphs)

    def _ids_are_tokens(self) -> bool:
        metric = self.metric
        return isinstance(metric, BleuMetric) and metric.tokenizer.name == "none" and not metric.tokenizer.lowercase

    # ------------------------------------------------------------------ statistics
    def yield_stats(self, sentence: int, yields: Sequence[np.ndarray | Sequence[int]]) -> np.ndarray:
        """Metric statistics (n, S) of hypotheses of ``sentence`` given as word-id sequences."""
        arrays = [np.asarray(y, dtype=np.int64) for y in yields]
        offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum([a.size for a in arrays], out=offsets[1:])
        tokens = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
        return self.batch_stats(tokens, offsets, np.full(len(arrays), sentence, dtype=np.int64))

    def batch_stats(self, tokens: np.ndarray, offsets: np.ndarray, sentences: np.ndarray) -> np.ndarray:
        """Statistics of many hypotheses at once: hypothesis ``i`` is ``tokens[offsets[i]:offsets[i+1]]``
        (word ids) of sentence ``sentences[i]``. One compiled call for BLEU."""
        if self.precomputed:
            raise InputError("this tuning set has precomputed statistics and no hypothesis strings")
        metric = self.metric
        n = sentences.size
        if isinstance(metric, BleuMetric):
            if not self._ids_are_tokens():
                tokens, offsets = metric.flatten([self.text(tokens[offsets[i] : offsets[i + 1]]) for i in range(n)])
            return metric.stats_batch(tokens, offsets, sentences, self._prepared)
        out = np.zeros((n, metric.stats_size))
        for sentence in np.unique(sentences):
            rows = np.flatnonzero(sentences == sentence)
            texts = [self.text(tokens[offsets[i] : offsets[i + 1]]) for i in rows]
            out[rows] = metric.stats_many(texts, self.references[int(sentence)])
        return out

    def text(self, ids: np.ndarray | Sequence[int]) -> str:
        return " ".join(self.vocabulary.words(int(i) for i in ids))

    def edge_stats(self, sentence: int) -> np.ndarray:
        """For a k-best list (degenerate lattice): the statistics of every edge's hypothesis, row ``e`` for
        edge ``e`` (row 0, the start axiom, is zeros). Cached."""
        cached = self._edge_stats.get(sentence)
        if cached is not None:
            return cached
        hg = self.graphs[sentence]
        if "edge_stats" in hg.metadata:
            stats = np.asarray(hg.metadata["edge_stats"], dtype=np.float64)
        else:
            if not hg.is_kbest:
                raise InputError(f"sentence {sentence} is not a k-best list")
            # every hypothesis edge's words (its target minus the start-node reference), as flat arrays
            lengths = np.diff(hg.target_offsets)[1:]
            tokens = hg.target[hg.target_offsets[1] :]
            words = tokens >= 0
            counts = np.bincount(np.repeat(np.arange(lengths.size), lengths)[words], minlength=lengths.size)
            offsets = np.concatenate(([0], np.cumsum(counts)))
            rows = self.batch_stats(tokens[words], offsets, np.full(lengths.size, sentence, dtype=np.int64))
            stats = np.vstack([np.zeros((1, self.stats_size)), rows])
        self._edge_stats[sentence] = stats
        return stats

    @property
    def stats_size(self) -> int:
        if self.precomputed:
            return int(np.asarray(self.graphs[0].metadata["edge_stats"]).shape[1])
        return self.metric.stats_size

    @property
    def is_kbest(self) -> bool:
        """True when every sentence is a k-best list (start, goal, one edge per hypothesis)."""
        return all(g.is_kbest for g in self.graphs)

    def score(self, stats: np.ndarray) -> float | np.ndarray:
        """The metric of summed statistics (a vector), or of each row (a 2-D array)."""
        return self.metric.score(stats)


def merge_kbest(graphs: Sequence[Hypergraph]) -> list[Hypergraph]:
    """k-best lists of the same sentences from several outer iterations, merged per sentence id
    (``metadata["id"]``, in order of first appearance) with duplicate hypotheses (same words, same
    features, same precomputed statistics) removed. Graphs that are not k-best lists pass through."""
    groups: dict[object, list[Hypergraph]] = {}
    order: list[object] = []
    for position, hg in enumerate(graphs):
        key = hg.metadata.get("id", ("#", position)) if hg.is_kbest else ("#", position)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(hg)
    return [groups[key][0] if len(groups[key]) == 1 else _merge_one(groups[key]) for key in order]


def _merge_one(lists: list[Hypergraph]) -> Hypergraph:
    first = lists[0]
    seen: set[tuple] = set()
    rows = []  # (graph, edge)
    for hg in lists:
        stats = hg.metadata.get("edge_stats")
        for e in range(1, hg.num_edges):
            start, stop = hg.features.indptr[e], hg.features.indptr[e + 1]
            key = (
                tuple(hg.edge_target(e)),
                tuple(hg.features.indices[start:stop]),
                tuple(hg.features.data[start:stop]),
                None if stats is None else tuple(np.asarray(stats)[e]),
            )
            if key not in seen:
                seen.add(key)
                rows.append((hg, e))
    space = first.feature_space
    features = sp.vstack(
        [first.feature_matrix(len(space))[:1]] + [hg.feature_matrix(len(space))[e : e + 1] for hg, e in rows],
        format="csr",
    )
    targets = [first.edge_target(0)] + [hg.edge_target(e) for hg, e in rows]
    lengths = np.array([t.size for t in targets])
    metadata = dict(first.metadata)
    if "edge_stats" in metadata:
        metadata["edge_stats"] = np.vstack(
            [np.asarray(first.metadata["edge_stats"])[:1]]
            + [np.asarray(hg.metadata["edge_stats"])[e : e + 1] for hg, e in rows]
        )
    metadata.pop("totals", None)
    edges = len(rows) + 1
    return Hypergraph(
        2,
        np.array([0] + [1] * len(rows)),
        np.concatenate(([0], np.arange(edges))),
        np.zeros(len(rows), dtype=np.int64),
        features,
        np.concatenate(([0], np.cumsum(lengths))),
        np.concatenate(targets),
        space,
        first.vocabulary,
        first.node_labels,
        metadata,
    )


def prune_tuning_set(tuning_set: TuningSet, weights: Weights, density: float) -> TuningSet:
    """Prune every graph to ``density x reference length`` edges by max-marginal rank under ``weights``
    (Cherry & Foster 2012; Moses ``--hg-prune``, applied once with the initial weights). Reference length:
    the shortest reference, in words. Per-edge ``source_covered`` metadata is carried over."""
    if density <= 0:
        raise UsageError(f"the pruning density must be positive, got {density}")
    graphs = []
    for s, hg in enumerate(tuning_set.graphs):
        if hg.is_kbest:
            graphs.append(hg)
            continue
        ref_len = min((len(r.split()) for r in tuning_set.references[s]), default=1)
        limit = max(1, int(density * max(ref_len, 1)))
        pruned, kept = prune(hg, weights.edge_scores(hg), limit)
        if pruned is not hg and "source_covered" in hg.metadata:
            pruned.metadata["source_covered"] = [hg.metadata["source_covered"][int(e)] for e in kept]
        graphs.append(pruned)
    return TuningSet(graphs, tuning_set.references, tuning_set.metric)
