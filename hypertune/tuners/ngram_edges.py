"""What each edge of an n-gram-split lattice or forest adds to BLEU's statistics.

Once a graph is split by n-gram state (:func:`~hypertune.algorithms.intersect.intersect_ngrams`), every
n-gram of a derivation's yield is created by exactly one split edge, so n-gram counts -- all of them, and
those that occur in a reference -- add up over edges. Expected BLEU and linear BLEU training
(:mod:`hypertune.tuners.minrisk`) and exact linear-BLEU hope/fear search (:mod:`hypertune.tuners.hope_fear`)
read them from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from hypertune.algorithms.intersect import intersect_ngrams
from hypertune.hypergraph import Hypergraph
from hypertune.metrics.base import SENTENCE_END, SENTENCE_START
from hypertune.tuners.corpus import TuningSet


@dataclass
class NgramEdges:
    """A lattice or forest split by n-gram state (split edge ``e`` copies original edge ``origin[e]``), with
    what each split edge adds to BLEU's statistics:
    ``counts`` (edges, N), the n-grams of each order it creates, and ``gram_edge``/``gram_type`` for every
    created n-gram that occurs in a reference (``gram_type`` indexes this sentence's distinct reference
    n-grams, whose orders and largest counts in one reference are ``ref_orders``, ``ref_limits``)."""

    graph: Hypergraph
    origin: np.ndarray
    order: int
    counts: np.ndarray
    gram_edge: np.ndarray
    gram_type: np.ndarray
    ref_orders: np.ndarray
    ref_limits: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @classmethod
    def of(cls, tuning_set: TuningSet, sentence: int, order: int, skip: Sequence[int] | None = None) -> NgramEdges:
        """Split ``sentence``'s graph by (order - 1)-word state, dropping the words ``skip`` (default: the
        sentence markers ``<s>``, ``</s>``, which are no words and start no n-gram)."""
        hg = tuning_set.graphs[sentence]
        if skip is None:
            vocabulary = hg.vocabulary
            skip = [i for i in (vocabulary.get(SENTENCE_START), vocabulary.get(SENTENCE_END)) if i is not None]
        split = intersect_ngrams(hg, order, skip)
        edges = split.graph.num_edges
        edge_of_gram = np.repeat(np.arange(edges), np.diff(split.gram_offsets))
        counts = np.zeros((edges, order))
        np.add.at(counts, (edge_of_gram, split.gram_orders - 1), 1.0)
        ref_rows, ref_limits = reference_ngrams(tuning_set, sentence, order)
        types = find_rows(split.grams, ref_rows)
        hit = types >= 0
        ref_orders = (ref_rows >= 0).sum(axis=1) if ref_rows.size else np.zeros(0, dtype=np.int64)
        matched_edges, matched_types = edge_of_gram[hit], types[hit]
        return cls(split.graph, split.edge_origin, order, counts, matched_edges, matched_types, ref_orders, ref_limits)

    def unclipped_matches(self) -> np.ndarray:
        """(edges, N): the created n-grams of each order that occur in some reference."""
        out = np.zeros((self.graph.num_edges, self.order))
        np.add.at(out, (self.gram_edge, self.ref_orders[self.gram_type] - 1), 1.0)
        return out

    def goal_edges(self) -> np.ndarray:
        """The goal's in-edges: every derivation uses exactly one, so a per-sentence constant sits there."""
        graph = self.graph
        return np.arange(graph.node_offsets[graph.goal], graph.node_offsets[graph.goal + 1])


def reference_ngrams(tuning_set: TuningSet, sentence: int, order: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct n-grams (orders 1..N) of a sentence's references as rows of word ids padded with -1,
    and each one's largest count in a single reference (BLEU's clipping limit)."""
    limits: dict[tuple[int, ...], int] = {}
    metric = tuning_set.metric
    for reference in tuning_set.references[sentence]:
        ids = [int(i) for i in metric.ids(reference)]  # type: ignore[attr-defined]
        counts: dict[tuple[int, ...], int] = {}
        for n in range(1, order + 1):
            for i in range(len(ids) - n + 1):
                gram = tuple(ids[i : i + n])
                counts[gram] = counts.get(gram, 0) + 1
        for gram, count in counts.items():
            limits[gram] = max(limits.get(gram, 0), count)
    rows = np.full((len(limits), order), -1, dtype=np.int64)
    for k, gram in enumerate(limits):
        rows[k, : len(gram)] = gram
    return rows, np.fromiter(limits.values(), dtype=np.float64, count=len(limits))


def find_rows(rows: np.ndarray, table: np.ndarray) -> np.ndarray:
    """For every row of ``rows``, the index of the equal row of ``table`` (distinct rows), or -1."""
    if not rows.shape[0] or not table.shape[0]:
        return np.full(rows.shape[0], -1, dtype=np.int64)
    width = rows.shape[1]
    joined = np.ascontiguousarray(np.vstack([table, rows]))
    keys = joined.view(np.dtype((np.void, joined.dtype.itemsize * width))).ravel()
    _, inverse = np.unique(keys, return_inverse=True)
    position = np.full(inverse.max() + 1, -1, dtype=np.int64)
    position[inverse[: table.shape[0]]] = np.arange(table.shape[0])
    return position[inverse[table.shape[0] :]]
