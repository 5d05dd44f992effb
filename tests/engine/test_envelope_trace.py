"""The probing passes' trace of each point's best derivation (``_trace_best_edges``): the first in-edge whose
recomputed score equals the node's best, the first in-edge when the best is NaN, and an internal error when a
best that is not NaN matches no in-edge.

A mismatch cannot be reached through the public API: the score passes and the trace add the same terms in the
same order, so every best is some in-edge's score. It is what a pass that summed differently (another order of
the tails, a fused multiply-add) would leave, and the test makes it so: a pass's true scores, with one node's
best moved by one unit in the last place."""

from __future__ import annotations

import numpy as np
import pytest
from support.plain_viterbi import plain_viterbi

from hypertune.algorithms.envelope import EdgeLines, _padded_tails, _probe_pass, _probe_scores, _trace_best_edges
from hypertune.errors import GraphError
from hypertune.generate import random_hypergraph


def _graph(lattice: bool):
    """A random forest (up to two tails an edge) or lattice with edge lines, and its padded tails."""
    rng = np.random.default_rng(7)
    hg = random_hypergraph(60, lattice=lattice, num_features=2, seed=7)
    features = hg.feature_matrix(len(hg.feature_space))
    b = np.ascontiguousarray(features @ rng.normal(size=features.shape[1]))
    m = np.ascontiguousarray(features @ rng.normal(size=features.shape[1]))
    pads = _padded_tails(hg.node_offsets, hg.tail_offsets, hg.tails, np.array([0, hg.num_nodes]), max(1, hg.max_arity))
    return hg, b, m, pads


@pytest.mark.parametrize("lattice", [False, True], ids=["forest", "lattice"])
def test_a_best_that_no_in_edge_reproduces_is_an_internal_error(lattice) -> None:
    hg, b, m, pads = _graph(lattice)
    n, points = hg.num_nodes, np.array([-1.5, 0.25, 2.0, 3.0])
    best = np.zeros((n + 1, 4))
    best_edge = np.full((n + 1, 4), -1, dtype=np.int64)
    stack = np.empty(2 * n + 1, dtype=np.int64)
    _probe_scores(hg.node_offsets, pads, b, m, 0, n, points, 4, best)
    _trace_best_edges(hg.node_offsets, pads, b, m, 0, n, points[1], 1, best, best_edge, stack)  # consistent: fine
    assert best_edge[hg.goal, 1] == plain_viterbi(hg, b, m, points[1])[1][hg.goal]
    best[hg.goal, 1] = np.nextafter(best[hg.goal, 1], np.inf)  # as a pass summing in another order could leave it
    with pytest.raises(GraphError, match="internal error: a probing pass's best score"):
        _trace_best_edges(hg.node_offsets, pads, b, m, 0, n, points[1], 1, best, best_edge, stack)


@pytest.mark.parametrize("lattice", [False, True], ids=["forest", "lattice"])
def test_a_nan_best_takes_the_first_in_edge(lattice) -> None:
    """A NaN point makes every score NaN (on real lines: sums that overflow to inf - inf): the pass keeps the
    first in-edge's NaN, and the trace follows the first in-edges, without an error; the other points' columns
    are a plain Viterbi's."""
    hg, b, m, pads = _graph(lattice)
    n, points = hg.num_nodes, np.array([np.nan, 0.5, -2.0])
    graph = EdgeLines(hg.node_offsets, hg.tail_offsets, hg.tails, b, m, pads)
    best = np.zeros((n + 1, 8))
    best_edge = np.full((n + 1, 8), -1, dtype=np.int64)
    _probe_pass(graph, 0, n, points, 3, best, best_edge, np.empty(8))
    assert np.isnan(best[:n, 0]).all()
    nodes, stack = [], [hg.goal]  # the derivation of first in-edges, walked by hand
    while stack:
        v = stack.pop()
        nodes.append(v)
        e = hg.node_offsets[v]
        stack.extend(int(t) for t in hg.tails[hg.tail_offsets[e] : hg.tail_offsets[e + 1]])
    assert [int(best_edge[v, 0]) for v in nodes] == [int(hg.node_offsets[v]) for v in nodes]
    for p in (1, 2):
        score, _ = plain_viterbi(hg, b, m, points[p])
        assert np.array_equal(best[:n, p], score)
