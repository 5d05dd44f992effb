"""Test-only reference: ``hypertune.algorithms.intersect`` as it was before the compiled kernels (pure Python,
itertools.product and tuple dicts), kept so that the compiled version can be checked to give the identical
:class:`NgramIntersection`. The original module docstring follows.

Intersection of a hypergraph with an n-gram state machine: nodes split by their boundary words.

A gain that is a sum over the n-grams of the yield (linear BLEU, an n-gram language model, n-gram
features) does not decompose over the edges of a hypergraph: an edge creates n-grams across the
boundaries of its tails' yields. It does decompose once every node is split by the words an n-gram
can still see: the first and last ``order - 1`` words of its yield (Bar-Hillel et al. 1961; Chiang
2007, section 5.3.2, "+LM" items; Tromble et al. 2008 use the same for linear-BLEU MBR on lattices).

:func:`intersect_ngrams` builds that graph. Node ``(v, left, right)`` stands for the derivations of
``v`` whose yield starts with ``left`` and ends with ``right``; each original edge is copied once per
combination of its tails' states, and every copy lists the n-grams (orders ``1..order``) it creates:
those that lie within the edge's own words or cross a tail boundary -- every n-gram of a derivation's
yield is created by exactly one of its edges. A node keeps only the side that some edge above it can
see: for a lattice (tails first) only ``right`` is kept, so the split graph is the lattice composed
with the n-gram automaton. Words listed in ``skip`` (e.g. ``<s>``, ``</s>``) are dropped from yields.

The construction is exact, so its size can grow as ``nodes x |V|^(2(order-1))`` in the worst case;
``max_nodes`` bounds it. Oracle search, expected-BLEU training and hope/fear search for linear BLEU
use it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from hypertune.errors import GraphError
from hypertune.hypergraph import Derivation, Hypergraph

_GAP = None


@dataclass(frozen=True)
class NgramIntersection:
    """The split graph and how it maps back to the original.

    ``graph``: the intersected hypergraph (same feature space and vocabulary; edge ``i`` copies the features
    and target of original edge ``edge_origin[i]``). ``node_origin[v]``: the original node of split node ``v``.
    ``node_left[v]`` / ``node_right[v]``: its boundary words (``None`` when no edge above can see that side).
    ``gram_offsets`` (one per split edge plus one) index ``grams``: the n-grams each split edge creates, as rows
    of word ids padded with ``-1`` to ``order`` columns (``gram_orders`` gives their lengths).
    """

    graph: Hypergraph
    order: int
    edge_origin: np.ndarray
    node_origin: np.ndarray
    node_left: list[tuple[int, ...] | None]
    node_right: list[tuple[int, ...] | None]
    gram_offsets: np.ndarray
    grams: np.ndarray
    gram_orders: np.ndarray

    def original_derivation(self, derivation: Derivation) -> Derivation:
        """A derivation of the split graph as a derivation of the original graph (same tree shape)."""
        origin = self.edge_origin
        stack: list[tuple[Derivation, bool]] = [(derivation, False)]
        built: dict[int, Derivation] = {}
        while stack:
            node, expanded = stack.pop()
            if expanded:
                built[id(node)] = Derivation(int(origin[node.edge]), tuple(built[id(c)] for c in node.children))
            else:
                stack.append((node, True))
                stack.extend((c, False) for c in node.children)
        return built[id(derivation)]

    def edge_gram_values(self, values: dict[tuple[int, ...], float], default: float = 0.0) -> np.ndarray:
        """``sum over the n-grams g an edge creates of values.get(g, default)``, for every split edge."""
        out = np.zeros(self.graph.num_edges)
        if not self.grams.shape[0]:
            return out
        per_gram = np.fromiter(
            (
                values.get(tuple(int(x) for x in row[:n]), default)
                for row, n in zip(self.grams, self.gram_orders, strict=True)
            ),
            dtype=np.float64,
            count=self.grams.shape[0],
        )
        edge_of_gram = np.repeat(np.arange(self.graph.num_edges), np.diff(self.gram_offsets))
        np.add.at(out, edge_of_gram, per_gram)
        return out


def _needed_sides(hg: Hypergraph) -> tuple[np.ndarray, np.ndarray]:
    """Which nodes need their left / right boundary words: something precedes (follows) the node in an edge
    above it, or it starts (ends) an edge whose head needs that side. Computed top-down."""
    n = hg.num_nodes
    left = np.zeros(n, dtype=bool)
    right = np.zeros(n, dtype=bool)
    for v in range(n - 1, -1, -1):
        for e in hg.in_edges(v):
            tokens = hg.edge_target(e)
            tails = hg.edge_tails(e)
            last = tokens.size - 1
            for position, token in enumerate(tokens):
                if token >= 0:
                    continue
                u = int(tails[-int(token) - 1])
                left[u] |= position > 0 or bool(left[v])
                right[u] |= position < last or bool(right[v])
    return left, right


def intersect_ngrams(
    hg: Hypergraph, order: int, skip: Iterable[int] = (), max_nodes: int = 1_000_000
) -> NgramIntersection:
    """Split the nodes of ``hg`` by the first and last ``order - 1`` words of their yields (see the module
    docstring). ``skip``: word ids removed from every yield. Raises :class:`GraphError` beyond ``max_nodes``."""
    if order < 1:
        raise ValueError(f"order must be at least 1, got {order}")
    k = order - 1
    skip_set = {int(x) for x in skip}
    need_left, need_right = _needed_sides(hg)
    # per original node: dict state -> split node id
    states: list[dict[tuple, int]] = []
    node_origin: list[int] = []
    node_left: list[tuple[int, ...] | None] = []
    node_right: list[tuple[int, ...] | None] = []
    heads: list[int] = []
    tail_lists: list[list[int]] = []
    edge_origin: list[int] = []
    gram_rows: list[tuple[int, ...]] = []
    gram_counts: list[int] = []
    for v in range(hg.num_nodes):
        here: dict[tuple, int] = {}
        for e in hg.in_edges(v):
            tails = [int(t) for t in hg.edge_tails(e)]
            tokens = [int(t) for t in hg.edge_target(e)]
            for combo in itertools.product(*(list(states[u].items()) for u in tails)):
                sequence: list[tuple[int | None, int]] = []  # (word or gap, segment: -1 = edge word, i = tail i)
                for token in tokens:
                    if token >= 0:
                        if token not in skip_set:
                            sequence.append((token, -1))
                        continue
                    i = -token - 1
                    left, right, _ = combo[i][0]
                    if left is not None and right is not None and len(left) < k:
                        sequence.extend((w, i) for w in left)  # short yield: left == right == the yield
                        continue
                    if left is not None:
                        sequence.extend((w, i) for w in left)
                    if not (left is not None and right is not None and len(left) < k):
                        sequence.append((_GAP, i))
                    if right is not None:
                        sequence.extend((w, i) for w in right)
                created = _created_grams(sequence, order)
                state = _state(sequence, k, bool(need_left[v]), bool(need_right[v]))
                split = here.get(state)
                if split is None:
                    split = len(node_origin)
                    if split >= max_nodes:
                        raise GraphError(f"the n-gram intersection has more than {max_nodes} nodes")
                    here[state] = split
                    node_origin.append(v)
                    node_left.append(state[0])
                    node_right.append(state[1])
                heads.append(split)
                tail_lists.append([c[1] for c in combo])
                edge_origin.append(e)
                gram_rows.extend(created)
                gram_counts.append(len(created))
        states.append(here)
    goal_states = states[hg.goal]
    if len(goal_states) != 1:  # pragma: no cover - the goal never needs a side, so it has one state
        raise GraphError("internal error: the goal node split into several states")
    found = _Split(heads, tail_lists, edge_origin, node_origin, node_left, node_right, gram_rows, gram_counts)
    return _assemble(hg, order, found)


def _created_grams(sequence: list[tuple[int | None, int]], order: int) -> list[tuple[int, ...]]:
    """The n-grams of ``sequence`` that are not inside one tail's words and span no gap."""
    out: list[tuple[int, ...]] = []
    run_start = 0
    for p, (word, segment) in enumerate(sequence):
        if word is None:
            run_start = p + 1
            continue
        for n in range(1, order + 1):
            start = p - n + 1
            if start < run_start:
                break
            if segment < 0 or sequence[start][1] != segment:
                out.append(tuple(w for w, _ in sequence[start : p + 1]))  # type: ignore[misc]
    return out


def _state(
    sequence: list[tuple[int | None, int]], k: int, need_left: bool, need_right: bool
) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None, bool]:
    words_before_gap: list[int] = []
    for word, _ in sequence:
        if word is None or len(words_before_gap) == k:
            break
        words_before_gap.append(word)
    words_after_gap: list[int] = []
    for word, _ in reversed(sequence):
        if word is None or len(words_after_gap) == k:
            break
        words_after_gap.append(word)
    words_after_gap.reverse()
    has_gap = any(word is None for word, _ in sequence)
    short = not has_gap and len(words_before_gap) < k
    if short and (need_left or need_right):  # the whole yield is shorter than k: keep it on both sides
        return tuple(words_before_gap), tuple(words_before_gap), True
    left = tuple(words_before_gap) if need_left else None
    right = tuple(words_after_gap) if need_right else None
    return left, right, False


class _Split(NamedTuple):
    """The split graph as :func:`intersect_ngrams` builds it: per split edge its head, tails, original edge,
    and the n-grams it creates (``gram_counts[i]`` rows of ``gram_rows``); per split node its original node
    and boundary words."""

    heads: list[int]
    tail_lists: list[list[int]]
    edge_origin: list[int]
    node_origin: list[int]
    node_left: list[tuple[int, ...] | None]
    node_right: list[tuple[int, ...] | None]
    gram_rows: list[tuple[int, ...]]
    gram_counts: list[int]


def _assemble(hg: Hypergraph, order: int, found: _Split) -> NgramIntersection:
    heads, tail_lists, edge_origin, node_origin, node_left, node_right, gram_rows, gram_counts = found
    origin = np.asarray(edge_origin, dtype=np.int64)
    head = np.asarray(heads, dtype=np.int64)
    sort = np.argsort(head, kind="stable")  # group by head (split nodes are created in topological order)
    origin = origin[sort]
    arity = np.asarray([len(t) for t in tail_lists], dtype=np.int64)[sort]
    tails = np.asarray([t for i in sort for t in tail_lists[i]], dtype=np.int64)
    counts = np.asarray(gram_counts, dtype=np.int64)
    gram_starts = np.concatenate(([0], np.cumsum(counts)))
    grams = np.full((len(gram_rows), order), -1, dtype=np.int64)
    for i, row in enumerate(gram_rows):
        grams[i, : len(row)] = row
    gram_orders = np.asarray([len(r) for r in gram_rows], dtype=np.int64)
    gram_index = np.concatenate([np.arange(gram_starts[i], gram_starts[i + 1]) for i in sort]).astype(np.int64)
    grams, gram_orders = grams[gram_index], gram_orders[gram_index]
    target_lengths = np.diff(hg.target_offsets)[origin]
    target = np.concatenate([hg.edge_target(int(e)) for e in origin]) if origin.size else np.zeros(0, np.int64)
    graph = Hypergraph(
        num_nodes=len(node_origin),
        head=head[sort],
        tail_offsets=np.concatenate(([0], np.cumsum(arity))),
        tails=tails,
        features=hg.features[origin],
        target_offsets=np.concatenate(([0], np.cumsum(target_lengths))),
        target=target,
        feature_space=hg.feature_space,
        vocabulary=hg.vocabulary,
        node_labels=None,
        metadata=dict(hg.metadata),
        **hg.annotations(origin),
    )
    return NgramIntersection(
        graph=graph,
        order=order,
        edge_origin=origin,
        node_origin=np.asarray(node_origin, dtype=np.int64),
        node_left=node_left,
        node_right=node_right,
        gram_offsets=np.concatenate(([0], np.cumsum(counts[sort]))).astype(np.int64),
        grams=grams,
        gram_orders=gram_orders,
    )
