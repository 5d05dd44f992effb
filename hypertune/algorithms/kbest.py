"""Lazy k-best derivations (Huang & Chiang 2005, Algorithm 3).

Every node keeps the list of its derivations found so far, best first, and a heap of candidates. A
derivation of node ``v`` is an in-edge ``e`` with a rank vector ``j`` (the ``j_i``-th best derivation
of tail ``i``); its score is ``s_e + Σ_i score(tail_i, j_i)``. After a candidate ``<e, j>`` is taken,
its successors ``<e, j + b_i>`` enter the heap, asking the tails for one more derivation only then.
Scores are additive (the tropical semiring), which is what the monotonicity of the search needs. Ties
pop by edge id, then rank vector (``heapq`` on ``(-score, e, j)``).

With ``unique=True`` derivations whose target string was already produced at the same node are skipped;
filtering at every node is exact, because a derivation built on a lower-scoring duplicate sub-yield
always has a higher-scoring twin with the same string.

The search, the yields and the feature vectors run compiled (:mod:`hypertune.algorithms._kbest_kernels`);
:class:`KBestList` holds a graph's k best as flat arrays, and derivation trees, words and feature
dictionaries are built only for the entries asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from hypertune.algorithms.viterbi import ScoredDerivation
from hypertune.hypergraph import Derivation, Hypergraph
from hypertune.weights import Weights


@dataclass(frozen=True)
class KBestList:
    """A graph's k best derivations as flat arrays: derivation ``i`` has score ``scores[i]``, edges in
    pre-order ``edges[edge_offsets[i]:edge_offsets[i + 1]]`` (both ``None`` when made without edges),
    word ids ``words[word_offsets[i]:...]`` and the nonzero entries of its feature vector, by column,
    ``columns``/``values[feature_offsets[i]:...]``."""

    hg: Hypergraph
    scores: np.ndarray
    edges: np.ndarray | None
    edge_offsets: np.ndarray | None
    words: np.ndarray
    word_offsets: np.ndarray
    columns: np.ndarray
    values: np.ndarray
    feature_offsets: np.ndarray

    def __len__(self) -> int:
        return int(self.scores.size)

    def derivation(self, i: int) -> Derivation:
        if self.edges is None or self.edge_offsets is None:
            raise ValueError("this k-best list was made without edges (edges=False): no derivation trees")
        return self.hg.derivation_from_edges(self.edges[self.edge_offsets[i] : self.edge_offsets[i + 1]])

    def word_list(self, i: int) -> list[str]:
        return self.hg.vocabulary.words(self.words[self.word_offsets[i] : self.word_offsets[i + 1]].tolist())

    def features(self, i: int) -> dict[str, float]:
        names = self.hg.feature_space.names
        row = slice(int(self.feature_offsets[i]), int(self.feature_offsets[i + 1]))
        return {names[c]: v for c, v in zip(self.columns[row].tolist(), self.values[row].tolist(), strict=True)}

    def texts(self) -> list[str]:
        """Every derivation's target string (words joined by spaces)."""
        used, inverse = np.unique(self.words, return_inverse=True)
        table = np.asarray(self.hg.vocabulary.words(used.tolist()), dtype=object)
        words = table[inverse].tolist()
        bounds = self.word_offsets.tolist()
        return [" ".join(words[bounds[i] : bounds[i + 1]]) for i in range(len(self))]

    def scored(self, i: int) -> ScoredDerivation:
        """Entry ``i`` as :func:`~hypertune.algorithms.viterbi.describe_derivation` gives it."""
        return ScoredDerivation(float(self.scores[i]), self.derivation(i), self.word_list(i), self.features(i))


class LazyKBest:
    """Enumerates derivations of a hypergraph best first, on demand (Algorithm 3).

    ``scores[e]`` is the additive score of edge ``e`` (for example ``w · f_e``). Each request runs the
    compiled search from the start for its node and count (a node's list is the same prefix whatever was
    asked before), so asking for more derivations later costs a new search: ask for what you need at once."""

    def __init__(self, hg: Hypergraph, scores: Sequence[float] | np.ndarray, unique: bool = False) -> None:
        self.hg = hg
        self.scores = np.ascontiguousarray(scores, dtype=np.float64)
        self.unique = unique
        self._searched: dict[int, tuple[int, tuple[np.ndarray, ...]]] = {}

    def _state(self, node: int, k: int) -> tuple[np.ndarray, ...]:
        """The search state with (up to) ``k`` derivations of ``node``, reused when one large enough exists."""
        done = self._searched.get(node)
        if done is None or done[0] < k:
            from hypertune.algorithms._kbest_kernels import lazy_kbest

            hg = self.hg
            state = lazy_kbest(
                hg.node_offsets, hg.tail_offsets, hg.tails, hg.target_offsets, hg.target, self.scores,
                int(node), int(k), bool(self.unique),
            )  # fmt: skip
            done = (k, state)
            self._searched[node] = done
        return done[1]

    def kth(self, node: int, k: int) -> bool:
        """Whether ``node`` has at least ``k`` derivations (distinct strings with ``unique``)."""
        return int(self._state(node, k)[6][node]) >= k

    def packed(self, k: int, node: int | None = None, edges: bool = True) -> KBestList:
        """Up to ``k`` best derivations of ``node`` (default: the goal) as a :class:`KBestList`; without
        ``edges``, no pre-order edges (no derivation trees; less memory)."""
        from hypertune.algorithms._kbest_kernels import describe

        hg = self.hg
        node = hg.goal if node is None else int(node)
        state = self._state(node, k)
        found, c_score, _, _, _, f_start, f_len = state
        roots = found[f_start[node] : f_start[node] + min(k, int(f_len[node]))].copy()
        features = hg.features
        arrays = describe(
            roots, hg.tails, hg.tail_offsets, hg.target_offsets, hg.target, features.indptr, features.indices,
            features.data, features.shape[1], state, bool(edges),
        )  # fmt: skip
        if not edges:
            arrays = (None, None, *arrays[2:])
        return KBestList(hg, c_score[roots], *arrays)

    def derivation(self, node: int, rank: int) -> Derivation:
        """The ``rank``-th best derivation of ``node`` (0-based), as a tree."""
        found = self.packed(rank + 1, node)
        if len(found) <= rank:
            raise IndexError(f"node {node} has {len(found)} derivation(s), not {rank + 1}")
        return found.derivation(rank)

    def best(self, k: int, node: int | None = None) -> list[tuple[float, Derivation]]:
        """Up to ``k`` best (score, derivation) pairs of ``node`` (default: the goal)."""
        found = self.packed(k, node)
        return [(float(found.scores[i]), found.derivation(i)) for i in range(len(found))]

    def __iter__(self) -> Iterator[tuple[float, Derivation]]:
        """All derivations of the goal, best first (stop when you have enough): searched in doubling batches."""
        rank, k = 0, 16
        while True:
            found = self.packed(k)
            for i in range(rank, len(found)):
                yield float(found.scores[i]), found.derivation(i)
            if len(found) < k:
                return
            rank, k = len(found), 2 * k


def kbest_list(hg: Hypergraph, weights: Weights, k: int, unique: bool = False, edges: bool = True) -> KBestList:
    """The ``k`` best derivations under ``weights`` (fewer if the graph has fewer) as flat arrays (without
    ``edges``: no pre-order edges, see :meth:`LazyKBest.packed`)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    return LazyKBest(hg, weights.edge_scores(hg), unique=unique).packed(k, edges=edges)


def kbest(hg: Hypergraph, weights: Weights, k: int, unique: bool = False) -> list[ScoredDerivation]:
    """The ``k`` best derivations under ``weights`` (fewer if the graph has fewer), with yields and features."""
    found = kbest_list(hg, weights, k, unique)
    return [found.scored(i) for i in range(len(found))]
