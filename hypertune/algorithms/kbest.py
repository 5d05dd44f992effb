"""Lazy k-best derivations (Huang & Chiang 2005, Algorithm 3).

Every node keeps the list of its derivations found so far, best first, and a heap of candidates. A
derivation of node ``v`` is an in-edge ``e`` with a rank vector ``j`` (the ``j_i``-th best derivation
of tail ``i``); its score is ``s_e + Σ_i score(tail_i, j_i)``. After a candidate ``<e, j>`` is taken,
its successors ``<e, j + b_i>`` enter the heap, asking the tails for one more derivation only then.
Scores are additive (the tropical semiring), which is what the monotonicity of the search needs.

With ``unique=True`` derivations whose target string was already produced at the same node are skipped;
filtering at every node is exact, because a derivation built on a lower-scoring duplicate sub-yield
always has a higher-scoring twin with the same string.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from hypertune.algorithms.viterbi import ScoredDerivation, describe_derivation
from hypertune.hypergraph import Derivation, Hypergraph
from hypertune.weights import Weights


@dataclass
class _NodeState:
    found: list[tuple[float, int, tuple[int, ...]]] = field(default_factory=list)  # (score, edge, ranks)
    yields: list[tuple[int, ...]] = field(default_factory=list)
    heap: list[tuple[float, int, tuple[int, ...]]] | None = None  # (-score, edge, ranks)
    queued: set[tuple[int, tuple[int, ...]]] = field(default_factory=set)
    seen_yields: set[tuple[int, ...]] = field(default_factory=set)


class LazyKBest:
    """Enumerates derivations of a hypergraph best first, on demand (Algorithm 3).

    ``scores[e]`` is the additive score of edge ``e`` (for example ``w · f_e``).
    """

    def __init__(self, hg: Hypergraph, scores: Sequence[float] | np.ndarray, unique: bool = False) -> None:
        self.hg = hg
        self.scores = np.asarray(scores, dtype=np.float64)
        self.unique = unique
        self.states = [_NodeState() for _ in range(hg.num_nodes)]

    def kth(self, node: int, k: int) -> bool:
        """Make sure node ``node`` has its ``k`` best derivations (ranks 0..k-1) if it has that many.

        Algorithm 3 asks a node's tails for more derivations from inside its own request, as deep as the
        graph; here each request is a generator that yields its sub-requests ``(tail, k)`` to this driver
        loop, which keeps them on an explicit stack (no recursion, no interpreter-wide setting)."""
        stack = [self._kth(node, k)]
        answer: bool | None = None
        while stack:
            try:
                request = stack[-1].send(answer)
            except StopIteration as done:
                stack.pop()
                answer = done.value
                continue
            stack.append(self._kth(*request))
            answer = None
        return bool(answer)

    def _kth(self, node: int, k: int) -> Generator[tuple[int, int], bool | None, bool]:
        state = self.states[node]
        if state.heap is None:
            state.heap = []
            for e in self.hg.in_edges(node):
                ranks = (0,) * len(self.hg.edge_tails(e))
                yield from self._push(state, e, ranks)
        while len(state.found) < k and state.heap:
            negative, e, ranks = heapq.heappop(state.heap)
            for i in range(len(ranks)):  # the successors <e, j + b_i>
                yield from self._push(state, e, ranks[:i] + (ranks[i] + 1,) + ranks[i + 1 :])
            if self.unique:
                words = self._yield_of(e, ranks)
                if words in state.seen_yields:
                    continue
                state.seen_yields.add(words)
                state.yields.append(words)
            state.found.append((-negative, e, ranks))
        return len(state.found) >= k

    def _push(self, state: _NodeState, e: int, ranks: tuple[int, ...]) -> Generator[tuple[int, int], bool | None, None]:
        """Queue candidate ``<e, ranks>`` once its tails have the derivations it needs (asked as requests)."""
        tails = self.hg.edge_tails(e)
        score = self.scores[e]
        for tail, rank in zip(tails, ranks, strict=True):
            if not (yield (int(tail), rank + 1)):
                return
            score += self.states[int(tail)].found[rank][0]
        key = (e, ranks)
        if key not in state.queued:
            state.queued.add(key)
            assert state.heap is not None
            heapq.heappush(state.heap, (-score, e, ranks))

    def _yield_of(self, e: int, ranks: tuple[int, ...]) -> tuple[int, ...]:
        tails = self.hg.edge_tails(e)
        out: list[int] = []
        for token in self.hg.edge_target(e):
            if token >= 0:
                out.append(int(token))
            else:
                i = -int(token) - 1
                out.extend(self.states[int(tails[i])].yields[ranks[i]])
        return tuple(out)

    def derivation(self, node: int, rank: int) -> Derivation:
        """The ``rank``-th best derivation of ``node`` (already found) as a tree, built without recursion."""
        edges = []
        stack = [(node, rank)]
        while stack:
            v, r = stack.pop()
            _, e, ranks = self.states[v].found[r]
            edges.append(e)
            stack.extend(reversed([(int(t), j) for t, j in zip(self.hg.edge_tails(e), ranks, strict=True)]))
        return self.hg.derivation_from_edges(edges)

    def best(self, k: int, node: int | None = None) -> list[tuple[float, Derivation]]:
        """Up to ``k`` best (score, derivation) pairs of ``node`` (default: the goal)."""
        node = self.hg.goal if node is None else node
        self.kth(node, k)
        found = self.states[node].found[:k]
        return [(score, self.derivation(node, rank)) for rank, (score, _, _) in enumerate(found)]

    def __iter__(self) -> Iterator[tuple[float, Derivation]]:
        """All derivations of the goal, best first (stop when you have enough)."""
        rank = 0
        while True:
            if not self.kth(self.hg.goal, rank + 1):
                return
            score = self.states[self.hg.goal].found[rank][0]
            yield score, self.derivation(self.hg.goal, rank)
            rank += 1


def kbest(hg: Hypergraph, weights: Weights, k: int, unique: bool = False) -> list[ScoredDerivation]:
    """The ``k`` best derivations under ``weights`` (fewer if the graph has fewer), with yields and features."""
    if k < 1:
        raise ValueError("k must be at least 1")
    search = LazyKBest(hg, weights.edge_scores(hg), unique=unique)
    return [describe_derivation(hg, d, s) for s, d in search.best(k)]
