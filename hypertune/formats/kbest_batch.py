"""A tuning set's k-best lists as one batch of arrays (issue 33): no per-sentence objects until one is asked for.

Every list is a degenerate lattice (:func:`~hypertune.hypergraph.kbest_lattices`); a batch keeps all of them in
one set of arrays: list ``s`` holds hypotheses ``list_offsets[s]:list_offsets[s + 1]``, whose features are
rows of one block (``dense``: a float64 matrix when every hypothesis gives every column of the feature space
in order, as Moses FEATSTAT files without sparse features do; else a CSR matrix) and whose metric statistics
are rows of one array (``stats``, or ``None``). A :class:`KbestBatch` is a ``Sequence[Hypergraph]``: item
``s`` is list ``s`` built as the batch reader's :func:`~hypertune.hypergraph.kbest_lattices` builds it (the
same arrays, the same graph), made on first use and kept, so an algorithm that needs graphs gets them and
one that reads the arrays (batch MIRA, :mod:`hypertune.tuners.mira`) never makes any.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np
import scipy.sparse as sp

from hypertune.errors import GraphError
from hypertune.hypergraph import Hypergraph, KbestLists, kbest_lattices
from hypertune.symbols import FeatureSpace, Vocabulary


class KbestBatch(Sequence[Hypergraph]):
    """k-best lists as one batch (module docstring): ``list_offsets`` (int64, one more than the lists),
    ``spaces`` (the feature space and vocabulary the lists share),
    ``features``, kept as ``dense`` (an array: hypotheses x feature space, row-major) or ``csr`` (a sparse
    matrix: hypotheses rows, canonical),
    ``stats`` (hypotheses x statistics, float64, or ``None``), each list's ``widths`` (its feature columns),
    ``sentence_ids``, ``metadata`` and, for lists with strings, ``words`` (vocabulary ids and their offsets per
    hypothesis); graphs share ``feature_space`` and ``vocabulary``. CSR features are made canonical as the
    graph reader makes them (float64, repeated columns summed, columns sorted) and must be finite."""

    def __init__(
        self,
        list_offsets: np.ndarray,
        spaces: tuple[FeatureSpace, Vocabulary],
        features: np.ndarray | sp.csr_matrix,
        *,
        stats: np.ndarray | None = None,
        widths: np.ndarray,
        sentence_ids: Sequence[int],
        metadata: Sequence[dict[str, Any]] | None = None,
        words: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self.list_offsets = np.asarray(list_offsets, dtype=np.int64)
        self.feature_space, self.vocabulary = spaces
        self.dense: np.ndarray | None = features if isinstance(features, np.ndarray) else None
        self.csr: sp.csr_matrix | None = None if isinstance(features, np.ndarray) else _checked(features)
        self.stats = stats
        self.words = words  # (ids, offsets): hypothesis h's words are ids[offsets[h]:offsets[h + 1]]
        self.widths = np.asarray(widths, dtype=np.int64)
        self.sentence_ids = [int(i) for i in sentence_ids]
        self.metadata = metadata
        self._graphs: dict[int, Hypergraph] = {}

    # ------------------------------------------------------------------ the arrays
    @property
    def num_hypotheses(self) -> int:
        return int(self.list_offsets[-1])

    def counts(self) -> np.ndarray:
        """The number of hypotheses of every list."""
        return np.diff(self.list_offsets)

    def feature_rows(self, lo: int = 0, hi: int | None = None) -> sp.csr_matrix:
        """Hypotheses ``lo:hi`` as CSR rows of the feature space's width (every stored value kept, zeros
        included, as the reader stores them)."""
        hi = self.num_hypotheses if hi is None else hi
        if self.csr is not None:  # views of the batch's arrays, not a copy
            csr = self.csr
            f0, f1 = int(csr.indptr[lo]), int(csr.indptr[hi])
            return sp.csr_matrix(
                (csr.data[f0:f1], csr.indices[f0:f1], csr.indptr[lo : hi + 1] - f0), shape=(hi - lo, csr.shape[1])
            )
        assert self.dense is not None
        n, width = hi - lo, self.dense.shape[1]
        return sp.csr_matrix(
            (self.dense[lo:hi].ravel(), np.tile(np.arange(width, dtype=np.int64), n), np.arange(n + 1) * width),
            shape=(n, width),
        )

    def list_stats(self, s: int) -> np.ndarray | None:
        """List ``s``'s statistics as a graph keeps them: a row of zeros (the start axiom) and then one row
        per hypothesis."""
        if self.stats is None:
            return None
        lo, hi = int(self.list_offsets[s]), int(self.list_offsets[s + 1])
        return np.vstack([np.zeros((1, self.stats.shape[1])), self.stats[lo:hi]])

    def sentences_in_order(self) -> bool:
        """True when the lists' sentence ids increase strictly (no sentence twice: nothing to merge)."""
        ids = np.asarray(self.sentence_ids, dtype=np.int64)
        return bool(ids.size and np.all(ids[1:] > ids[:-1]))

    def subset(self, start: int, stop: int) -> KbestBatch:
        """Lists ``start:stop`` as a batch of their own (views of these arrays)."""
        lo, hi = int(self.list_offsets[start]), int(self.list_offsets[stop])
        return KbestBatch(
            self.list_offsets[start : stop + 1] - lo,
            (self.feature_space, self.vocabulary),
            self.dense[lo:hi] if self.dense is not None else self.feature_rows(lo, hi),
            stats=None if self.stats is None else self.stats[lo:hi],
            widths=self.widths[start:stop],
            sentence_ids=self.sentence_ids[start:stop],
            metadata=None if self.metadata is None else self.metadata[start:stop],
            words=None if self.words is None else self._words(lo, hi),
        )

    def _words(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """The words of hypotheses ``lo:hi`` and their offsets from 0."""
        assert self.words is not None
        ids, offsets = self.words
        return ids[offsets[lo] : offsets[hi]], offsets[lo : hi + 1] - offsets[lo]

    # ------------------------------------------------------------------ graphs, on demand
    def _graph(self, s: int) -> Hypergraph:
        graph = self._graphs.get(s)
        if graph is None:
            lo, hi = int(self.list_offsets[s]), int(self.list_offsets[s + 1])
            rows = self.feature_rows(lo, hi)
            ids, offsets = (
                self._words(lo, hi)
                if self.words is not None
                else (np.zeros(0, np.int64), np.zeros(hi - lo + 1, np.int64))
            )
            graph = self._graphs[s] = kbest_lattices(
                KbestLists(np.array([0, hi - lo]), ids, offsets, rows),
                self.feature_space,
                self.vocabulary,
                widths=self.widths[s : s + 1],
                sentence_ids=self.sentence_ids[s : s + 1],
                metadata=None if self.metadata is None else self.metadata[s : s + 1],
                hypothesis_stats=None if self.stats is None else self.stats[lo:hi],
            )[0]
        return graph

    def __len__(self) -> int:
        return self.list_offsets.size - 1

    @overload
    def __getitem__(self, index: int) -> Hypergraph: ...
    @overload
    def __getitem__(self, index: slice) -> list[Hypergraph]: ...
    def __getitem__(self, index: int | slice) -> Hypergraph | list[Hypergraph]:
        if isinstance(index, slice):
            return [self._graph(s) for s in range(*index.indices(len(self)))]
        s = index + len(self) if index < 0 else index
        if not 0 <= s < len(self):
            raise IndexError(index)
        return self._graph(s)

    def __iter__(self) -> Iterator[Hypergraph]:
        return (self._graph(s) for s in range(len(self)))


def _checked(features: sp.spmatrix) -> sp.csr_matrix:
    """CSR features as the graph reader keeps them (:func:`~hypertune.hypergraph.kbest_lattices`): float64,
    repeated columns summed, columns sorted; a :class:`~hypertune.errors.GraphError` naming the first
    hypothesis with a value that is not finite."""
    matrix = sp.csr_matrix(features, dtype=np.float64)
    matrix.sum_duplicates()
    matrix.sort_indices()
    bad = np.flatnonzero(~np.isfinite(matrix.data))
    if bad.size:
        row = int(np.searchsorted(matrix.indptr, bad[0], "right")) - 1
        raise GraphError(f"hypothesis {row}: feature values must be finite (a name repeated on it adds up to "
                         "infinity)", item=row)  # fmt: skip
    return matrix


__all__ = ["KbestBatch"]
