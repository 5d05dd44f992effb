"""The compiled best-derivation yields of packed graphs against the per-graph Python derivation."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from support.strategies import hypergraphs

from hypertune.algorithms import viterbi_yields
from hypertune.compiled import viterbi_inside
from hypertune.generate import random_hypergraph
from hypertune.hypergraph import PackedGraphs


def python_yield(hg, scores):
    _, best_edge = viterbi_inside(hg.node_offsets, hg.tail_offsets, hg.tails, scores)
    return hg.derivation_yield(hg.derivation_from_backpointers(best_edge))


@given(st.lists(hypergraphs(max_nodes=6), min_size=1, max_size=4), st.integers(0, 2**31 - 1))
def test_packed_yields_equal_each_graphs_best_derivation(graphs, seed):
    space, vocabulary = graphs[0].feature_space, graphs[0].vocabulary
    graphs = [g for g in graphs if g.feature_space is space and g.vocabulary is vocabulary] or graphs[:1]
    rng = np.random.default_rng(seed)
    scores = [rng.integers(-2, 3, size=g.num_edges).astype(float) for g in graphs]  # ties included
    words, offsets = viterbi_yields(PackedGraphs.pack(graphs), np.concatenate(scores))
    for g, (hg, s) in enumerate(zip(graphs, scores, strict=True)):
        assert words[offsets[g] : offsets[g + 1]].tolist() == python_yield(hg, s)


def test_deep_lattices_and_large_forests():
    lattice = random_hypergraph(3000, lattice=True, fan_in=1, seed=3)  # best path hundreds of arcs deep
    forest = random_hypergraph(5000, seed=4, vocabulary=lattice.vocabulary, feature_space=lattice.feature_space)
    rng = np.random.default_rng(0)
    scores = [rng.normal(size=g.num_edges) for g in (lattice, forest)]
    words, offsets = viterbi_yields(PackedGraphs.pack([lattice, forest]), np.concatenate(scores))
    assert words[: offsets[1]].tolist() == python_yield(lattice, scores[0])
    assert words[offsets[1] :].tolist() == python_yield(forest, scores[1])
    assert offsets[1] > 64  # deeper than the kernel's first stack: it had to grow
