"""The compiled n-gram intersection gives exactly the :class:`NgramIntersection` of the Python construction it
replaced (``reference_intersect.py``): the same split graph (node numbering, edge order, every array and dtype),
n-grams, boundary words, gram values and ``max_nodes`` error -- on the graphs the other tests use, random graphs,
the fixtures and the decoder forests in ../shared/data (skipped when absent), orders 1..4, with and without
skip words."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import reference_intersect as reference
from support.paths import FIXTURES, SHARED
from support.same_graphs import assert_same_readings
from support.strategies import hypergraphs

from hypertune.algorithms import intersect
from hypertune.errors import GraphError
from hypertune.formats import read_graphs
from hypertune.generate import random_hypergraph
from hypertune.hypergraph import Hypergraph

ARRAYS = ("edge_origin", "node_origin", "gram_offsets", "grams", "gram_orders")
SKIPS = [[], [0], [1, 3], [0, 1, 2], [-1, 99]]  # word ids (the strategies' words a..d are 0..3 in a new graph)


def outcome(module, hg: Hypergraph, order: int, skip, max_nodes: int):
    """The intersection, or the text of the GraphError it raised."""
    try:
        return module.intersect_ngrams(hg, order, skip, max_nodes)
    except GraphError as error:
        return f"GraphError: {error}"


def assert_same(got, expected) -> None:
    """Two intersections agree field for field (the graph array for array, dtypes included)."""
    a, b = got.graph, expected.graph
    assert_same_readings(([a], a.feature_space, a.vocabulary), ([b], b.feature_space, b.vocabulary))
    assert a.feature_space is b.feature_space and a.vocabulary is b.vocabulary
    assert got.order == expected.order
    for name in ARRAYS:
        x, y = getattr(got, name), getattr(expected, name)
        assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name
    assert got.node_left == expected.node_left
    assert got.node_right == expected.node_right


def check(hg: Hypergraph, order: int, skip=(), max_nodes: int = 1_000_000):
    """The compiled and the reference intersections of ``hg`` agree (or fail alike); returns the compiled one
    (or the error text)."""
    got = outcome(intersect, hg, order, skip, max_nodes)
    expected = outcome(reference, hg, order, skip, max_nodes)
    if isinstance(expected, str):
        assert got == expected
        return got
    assert not isinstance(got, str), got
    assert_same(got, expected)
    return got


def frequent_words(hg: Hypergraph, count: int) -> list[int]:
    """The ``count`` most frequent word ids of ``hg``'s targets (skip words that matter)."""
    words = hg.target[hg.target >= 0]
    return np.argsort(-np.bincount(words), kind="stable")[:count].tolist() if words.size else []


# ---------------------------------------------------------------------- random graphs


@given(hypergraphs(max_nodes=6), st.integers(1, 4), st.sampled_from(SKIPS))
def test_random_forests(hg, order, skip):
    check(hg, order, skip)


@given(hypergraphs(max_nodes=5, max_arity=3), st.integers(1, 4), st.sampled_from(SKIPS))
def test_random_forests_with_three_tails(hg, order, skip):
    check(hg, order, skip)


@given(hypergraphs(max_nodes=7, lattice=True), st.integers(1, 4), st.sampled_from(SKIPS))
def test_random_lattices(hg, order, skip):
    check(hg, order, skip)


@settings(max_examples=40)
@given(hypergraphs(max_nodes=6), st.integers(1, 4), st.sampled_from(SKIPS), st.integers(-1, 40))
def test_max_nodes_error(hg, order, skip, max_nodes):
    check(hg, order, skip, max_nodes)


@pytest.mark.parametrize("order", [1, 2, 3, 4])
@pytest.mark.parametrize(
    ("seed", "lattice", "arity", "vocabulary"),
    [(0, False, 2, 3), (1, False, 2, 6), (2, False, 1, 4), (3, True, 1, 3), (4, True, 1, 8), (5, False, 2, 20)],
)
def test_generated_graphs(seed, lattice, arity, vocabulary, order):
    """Seeded generator graphs of some hundred edges (many states per node with a small vocabulary)."""
    hg = random_hypergraph(150, lattice=lattice, max_arity=arity, vocabulary_size=vocabulary, fan_in=3, seed=seed)
    for skip in ([], frequent_words(hg, 2)):
        check(hg, order, skip, max_nodes=200_000)


def test_graphs_of_the_other_tests():
    """The generator settings of test_intersect.py, test_hope_fear.py and search_quality.py."""
    for seed in range(10):
        check(random_hypergraph(20, lattice=True, vocabulary_size=3, fan_in=2, seed=seed), 3)
        hg = random_hypergraph(30, num_features=4, vocabulary_size=6, fan_in=2, max_span=4, seed=seed)
        for order in (1, 2, 3, 4):
            check(hg, order)
        check(random_hypergraph(12, lattice=True, num_features=3, vocabulary_size=4, fan_in=2, seed=seed), 4)


def test_max_nodes_at_the_boundary():
    hg = random_hypergraph(120, vocabulary_size=4, fan_in=3, seed=7)
    nodes = check(hg, 3).graph.num_nodes
    for max_nodes in (0, 1, nodes // 2, nodes - 1, nodes, nodes + 1):
        result = check(hg, 3, (), max_nodes)
        assert isinstance(result, str) == (max_nodes < nodes)
    with pytest.raises(GraphError, match="more than 5 nodes"):
        intersect.intersect_ngrams(hg, 3, max_nodes=5)


def test_order_must_be_positive():
    hg = random_hypergraph(20, seed=0)
    for module in (intersect, reference):
        with pytest.raises(ValueError, match="order must be at least 1"):
            module.intersect_ngrams(hg, 0)


def test_many_states_per_node_grow_the_tables():
    """Nodes with hundreds of states (the state table is rehashed) and outputs far beyond their first size."""
    hg = random_hypergraph(200, vocabulary_size=12, fan_in=4, seed=11)
    got = check(hg, 3)
    assert np.bincount(got.node_origin).max() > 500
    assert got.graph.num_edges > 100 * hg.num_edges


# ---------------------------------------------------------------------- gram values and boundary words


@given(hypergraphs(max_nodes=6), st.integers(1, 4), st.data())
def test_gram_values(hg, order, data):
    got, expected = intersect.intersect_ngrams(hg, order), reference.intersect_ngrams(hg, order)
    known = sorted({tuple(int(x) for x in row[:n]) for row, n in zip(got.grams, got.gram_orders, strict=True)})
    keys = data.draw(st.lists(st.sampled_from(known), unique=True) if known else st.just([]))
    values = {key: data.draw(st.floats(-5, 5, allow_nan=False)) for key in keys}
    odd = {(0, -1): 1.0, (): 2.0, (1.5,): 3.0, (0, 1, 2, 3, 0): 4.0, "ab": 5.0, (0.0,): 6.0}
    values.update(data.draw(st.dictionaries(st.sampled_from(list(odd)), st.floats(-1, 1), max_size=3)))
    default = data.draw(st.sampled_from([0.0, -1.5]))
    want = expected.edge_gram_values(values, default)
    have = got.edge_gram_values(values, default)
    assert have.dtype == want.dtype and np.array_equal(have, want)  # bit for bit: same order of summation
    per_gram = got.gram_values(values, default)
    assert per_gram.tolist() == [
        values.get(tuple(int(x) for x in row[:n]), default) for row, n in zip(got.grams, got.gram_orders, strict=True)
    ]


def test_boundary_words_are_lists_built_once():
    hg = random_hypergraph(60, vocabulary_size=5, seed=2)
    got = intersect.intersect_ngrams(hg, 4)
    assert isinstance(got.node_left, list) and got.node_left is got.node_left
    assert len(got.node_right) == got.graph.num_nodes == got.node_states.shape[0]
    assert got.node_states.shape[1] == 3 + 2 * 3


# ---------------------------------------------------------------------- fixtures and shared data


@pytest.mark.parametrize(
    "name",
    ["toy-forest.json", "formats/toy.cdec.json", "formats/toy.moses-hg", "formats/hgdir", "formats/lattice.plf",
     "formats/lattice.slf", "formats/searchgraph.osg", "formats/acceptor.fst", "formats/transducer.fst"],
)  # fmt: skip
def test_fixtures(name):
    for hg in read_graphs([str(FIXTURES / name)]):
        for order in (1, 2, 3, 4):
            for skip in (
                [],
                frequent_words(hg, 1),
                [hg.vocabulary.get(w) for w in ("<s>", "</s>") if w in hg.vocabulary],
            ):
                check(hg, order, skip)


def shared_graphs(relative: str) -> list[Hypergraph]:
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"../shared/data/{relative} is absent")
    return read_graphs([str(path)])


@pytest.mark.parametrize(
    "name",
    ["cdec/forests/decoder_test_data_perro.json.gz", "cdec/forests/decoder_test_data_small.json.gz",
     "cdec/forests/training_dpmert_test_data_0.json.gz", "cdec/forests/training_dpmert_test_data_1.json.gz",
     "cdec/toy/hg_test.hg", "cdec/toy/hg_test.hg_balanced", "cdec/toy/hg_test.hg_int", "cdec/toy/hg_test.lattice",
     "cdec/toy/hg_test.tiny", "cdec/toy/hg_test.tiny_lattice", "cdec/toy/test-ch-inside.json",
     "cdec/toy/test-zero-origin.json"],
)  # fmt: skip
@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_cdec_forests(name, order):
    (hg,) = shared_graphs(name)
    check(hg, order)
    check(hg, order, frequent_words(hg, 2))


def test_cdec_urdu_forest():
    """The large forest: exact at orders 1 and 2; at 3 and 4 it passes ``max_nodes`` (17 million split edges at
    order 3), at the same node in both."""
    (hg,) = shared_graphs("cdec/forests/decoder_test_data_urdu.json.gz")
    for order in (1, 2):
        check(hg, order)
    for order in (3, 4):
        assert check(hg, order, (), max_nodes=3000) == "GraphError: the n-gram intersection has more than 3000 nodes"


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_moses_hypergraphs(kind, order):
    (hg,) = shared_graphs(f"moses/hypergraphs/{kind}/hg.gz")
    check(hg, order, [hg.vocabulary.get("<s>"), hg.vocabulary.get("</s>")])
    if order == 4:
        check(hg, order)


def test_equal_hashes_are_told_apart_by_their_rows():
    """States (and gram keys) whose hashes collide are compared row by row: forced collisions intern distinct
    rows as distinct ids and an equal row as the same id."""
    hg = random_hypergraph(20, seed=0)
    g = intersect._Graph(hg.node_offsets, hg.tail_offsets, hg.tails, hg.target_offsets, hg.target)
    rules = intersect._Rules(3, np.zeros(0, np.bool_), *intersect._needed_sides(g), 1000)
    out, scratch = intersect._new_split(g, rules)
    rows = [[1, -1, 0, 5, 6, -1, -1], [1, -1, 0, 6, 5, -1, -1], [-1, 2, 0, -1, -1, 5, 6]]
    ids = []
    for row in [*rows, *rows]:
        scratch.row[:] = row
        ids.append(intersect._intern(out, scratch, 12345, 0, 0, 1000))  # the same hash for all
    assert ids == [0, 1, 2, 0, 1, 2] and out.counts[0] == 3
    keys = np.asarray([[5, 6, -1], [6, 5, -1], [5, -1, -1]], np.int64)
    slots, hashes = np.full(16, -1, np.int64), np.zeros(3, np.int64)
    for i in range(3):
        slots[intersect._probe(slots, hashes, keys, keys[i], 0)] = i
    assert [slots[intersect._probe(slots, hashes, keys, keys[i], 0)] for i in (2, 1, 0)] == [2, 1, 0]
