"""The probing kernels' Viterbi passes against a plain Viterbi written out here, and the probing envelope against
brute force on graphs with edges of three tails (which the padded kernels leave to the looping ones)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.plain_viterbi import plain_viterbi
from support.strategies import hypergraphs, weights

from hypertune import algorithms as A
from hypertune.algorithms.envelope import EdgeLines, _padded_tails, _probe_pass, envelope_by_probing
from hypertune.generate import random_hypergraph
from hypertune.weights import Weights


def best_derivation_nodes(hg, edge):
    """The nodes of the goal's best derivation under ``edge`` (each node's chosen in-edge)."""
    nodes, stack = [], [hg.goal]
    while stack:
        v = stack.pop()
        nodes.append(v)
        e = edge[v]
        stack.extend(int(t) for t in hg.tails[hg.tail_offsets[e] : hg.tail_offsets[e + 1]])
    return nodes


def check_pass(hg, b, m, points, padded):
    slots = max(1, hg.max_arity) if padded else 0
    starts = np.array([0, hg.num_nodes])
    pads = _padded_tails(hg.node_offsets, hg.tail_offsets, hg.tails, starts, slots)
    graph = EdgeLines(hg.node_offsets, hg.tail_offsets, hg.tails, b, m, pads)
    width = max(8, 2 * points.size)
    best = np.zeros((hg.num_nodes + 1, width))
    best_edge = np.full((hg.num_nodes + 1, width), -1, dtype=np.int64)
    _probe_pass(graph, 0, hg.num_nodes, points, points.size, best, best_edge, np.empty(width))
    for p, x in enumerate(points):
        score, edge = plain_viterbi(hg, b, m, x)
        assert np.array_equal(best[: hg.num_nodes, p], score)  # bit for bit (0.0 == -0.0)
        nodes = best_derivation_nodes(hg, edge)
        assert [int(best_edge[v, p]) for v in nodes] == [int(edge[v]) for v in nodes]


@pytest.mark.parametrize("lattice", [False, True], ids=["forest", "lattice"])
@pytest.mark.parametrize("count", [1, 2, 4, 5, 8, 19])
def test_probe_passes_are_a_plain_viterbi(lattice, count):
    """Padded (one or two points in registers with their edges; up to four or eight in registers, more
    vectorized, the last point repeated to whole vectors, each traced) and looping passes, bit for bit."""
    rng = np.random.default_rng(count)
    hg = random_hypergraph(400, lattice=lattice, num_features=3, seed=count)
    features = hg.feature_matrix(len(hg.feature_space))
    b = features @ rng.normal(size=features.shape[1])
    m = features @ rng.normal(size=features.shape[1])
    b[rng.random(b.size) < 0.2] = 0.0  # ties between edges
    points = np.concatenate([[0.0], rng.normal(scale=3.0, size=count - 1)])
    for padded in (True, False):
        check_pass(hg, b, m, points, padded)


@settings(max_examples=40, deadline=None)
@given(hg=hypergraphs(max_arity=3, max_derivations=300), w=weights, x=st.floats(-5, 5))
def test_probe_passes_on_small_graphs(hg, w, x):
    """Graphs of up to three tails an edge (looping kernels) and up to two (padded), three points."""
    d = Weights({"f0": 1.0, "f2": -0.5})
    b, m = w.edge_scores(hg), d.edge_scores(hg)
    points = np.array([x, 0.0, -x])
    check_pass(hg, b, m, points, padded=False)
    if hg.max_arity <= 2:
        check_pass(hg, b, m, points, padded=True)


@settings(max_examples=40, deadline=None)
@given(hg=hypergraphs(max_arity=3, max_derivations=300), w=weights)
def test_probing_envelope_with_three_tails_is_the_upper_envelope(hg, w):
    """At points around every breakpoint the envelope is the best of all derivations' lines (enumerated)."""
    d = Weights({"f0": 1.0, "f1": -0.25})
    b, m = w.edge_scores(hg), d.edge_scores(hg)
    result = envelope_by_probing(hg, b, m)
    lines = [(b[x.edges()].sum(), m[x.edges()].sum()) for x in A.enumerate_derivations(hg)]
    for gamma in np.concatenate([result.left[1:] + 1e-6, result.left[1:] - 1e-6, [-1e6, 1e6, 0.0]]):
        best = max(bb + gamma * mm for bb, mm in lines)
        i = int(np.searchsorted(result.left, gamma, side="right")) - 1
        assert result.intercept[i] + gamma * result.slope[i] == pytest.approx(best, rel=1e-12, abs=1e-6)
    for i in range(len(result)):
        derivation = result.derivation(i)
        assert b[derivation.edges()].sum() == pytest.approx(result.intercept[i], abs=1e-9)
        assert m[derivation.edges()].sum() == pytest.approx(result.slope[i], abs=1e-9)
