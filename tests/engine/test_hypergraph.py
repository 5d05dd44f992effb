"""The hypergraph structure: builders, validation errors, trimming, conversions."""

from __future__ import annotations

import dataclasses

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from support.strategies import hypergraphs

from hypertune import algorithms as A
from hypertune.algorithms import count_derivations, describe_graph
from hypertune.errors import GraphError
from hypertune.generate import random_hypergraph, random_kbest
from hypertune.hypergraph import (
    EdgeScores,
    Hypergraph,
    HypergraphBuilder,
    KbestLists,
    PackedGraphs,
    from_kbest,
    from_networkx,
    kbest_lattices,
    packed_kbest_lists,
    pad_columns,
    trim,
    union,
)
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.weights import Weights


def small_forest() -> Hypergraph:
    b = HypergraphBuilder()
    goal, x, the, house = b.add_node("S"), b.add_node("X"), b.add_node("X"), b.add_node("X")  # goal added first
    b.add_edge(the, [], {"tm": -1.0}, "the")
    b.add_edge(house, [], {"tm": -0.5}, "house")
    b.add_edge(house, [], {"tm": -0.7, "oov": 1}, "home")
    b.add_edge(x, [the, house], {"glue": 1}, "[1] [2]")
    b.add_edge(x, [the, house], {"tm": -2.0}, "[2] of [1]")
    b.add_edge(goal, [x], {}, "<s> [1] </s>")
    return b.build(goal)


def test_builder_sorts_topologically_and_groups_edges():
    hg = small_forest()
    assert hg.goal == 3 and hg.num_edges == 6
    assert np.all(np.diff(hg.head) >= 0)
    for e in range(hg.num_edges):
        assert np.all(hg.edge_tails(e) < hg.head[e])
    expected = {"nodes": 4, "edges": 6, "derivations": 4, "max_arity": 2, "features": 3, "lattice": False}
    assert describe_graph(hg) == expected
    best = A.viterbi(hg, Weights({"tm": 1.0, "glue": 0.1}))
    assert best.text == "<s> the house </s>"
    assert best.features == {"tm": -1.5, "glue": 1.0}
    assert hg.node_labels[-1] == "S"
    assert (
        hg.target_text(int(np.flatnonzero(hg.features[:, hg.feature_space.get("tm")].toarray() == -2.0)[0]))
        == "[2] of [1]"
    )


def test_validation_errors_are_clear():
    b = HypergraphBuilder()
    a, c, goal = b.add_nodes(3)
    b.add_edge(a, [c])
    b.add_edge(c, [a])
    b.add_edge(goal, [c])
    with pytest.raises(GraphError, match=r"cycle through node \d -> \d -> \d"):
        b.build(goal)
    with pytest.raises(GraphError, match="empty"):
        HypergraphBuilder().build()
    b = HypergraphBuilder()
    a, c = b.add_nodes(2)
    b.add_edge(c, [5])
    with pytest.raises(GraphError, match="dangling"):
        b.build()
    b = HypergraphBuilder()
    a, c = b.add_nodes(2)
    b.add_edge(c, [a])
    with pytest.raises(GraphError, match="node 0 has no in-edge"):
        b.build()
    with pytest.raises(GraphError, match="unreachable"):
        b.build(trim_graph=True)
    b = HypergraphBuilder()
    a = b.add_node()
    b.add_edge(a, [], {"x": float("nan")})
    with pytest.raises(GraphError, match="finite"):
        b.build()
    b = HypergraphBuilder()
    a = b.add_node()
    with pytest.raises(GraphError, match="tail 2"):
        b.add_edge(a, [], None, "[2]")
    hg = small_forest()
    with pytest.raises(GraphError, match="not before its head"):
        Hypergraph(
            num_nodes=hg.num_nodes,
            head=hg.head,
            tail_offsets=hg.tail_offsets,
            tails=hg.tails[::-1],
            features=hg.features,
            target_offsets=hg.target_offsets,
            target=hg.target,
            feature_space=hg.feature_space,
            vocabulary=hg.vocabulary,
        )
    with pytest.raises(GraphError, match="uses the goal"):
        b = HypergraphBuilder()
        a, c = b.add_nodes(2)
        b.add_edge(a, [])
        b.add_edge(c, [a])
        b.add_edge(a, [c])
        b.build(c)


def test_trim_keeps_only_useful_parts():
    b = HypergraphBuilder()
    a, dead, orphan, goal = b.add_nodes(4)
    b.add_edge(a, [], {}, "a")
    b.add_edge(dead, [a], {}, "dead")  # derivable, but no path to the goal
    b.add_edge(goal, [a], {}, "[1] b")
    b.add_edge(goal, [orphan], {}, "[1] c")  # orphan has no derivation
    hg = b.build(goal, trim_graph=True)
    assert (hg.num_nodes, hg.num_edges, count_derivations(hg)) == (2, 2, 1)
    assert A.viterbi(hg, Weights()).text == "a b"
    keep = np.ones(hg.num_edges, dtype=bool)
    keep[0] = False
    with pytest.raises(GraphError, match="unreachable"):
        trim(hg, keep)


def test_per_edge_annotations_follow_their_edges():
    """Annotations are given in the order edges were added; sorting, trimming, union and intersection move
    them with their edges (worked by hand on the graph of ``test_trim_keeps_only_useful_parts``)."""
    b = HypergraphBuilder()
    goal, a, dead, orphan = b.add_nodes(4)  # the goal is added first: building reorders the nodes
    b.add_edge(goal, [a], {}, "[1] b")  # covered 20, stats row [2, 2]
    b.add_edge(a, [], {}, "a")  # covered 10, stats row [1, 1]
    b.add_edge(dead, [a], {}, "dead")  # 30
    b.add_edge(goal, [orphan], {}, "[1] c")  # 40
    covered = [20, 10, 30, 40]
    stats = np.array([[2.0, 2.0], [1.0, 1.0], [3.0, 3.0], [4.0, 4.0]])
    hg = b.build(goal, trim_graph=True, sentence_id=7, source_covered=covered, edge_stats=stats)
    assert hg.sentence_id == 7
    assert [hg.target_text(e) for e in range(hg.num_edges)] == ["a", "[1] b"]
    assert hg.source_covered.tolist() == [10, 20] and hg.edge_stats.tolist() == [[1.0, 1.0], [2.0, 2.0]]
    both = union([hg, hg], sentence_id=3)
    assert both.sentence_id == 3 and both.source_covered.tolist() == [10, 20, 10, 20, 0, 0]
    assert both.edge_stats.shape == (6, 2) and both.edge_stats[4:].tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert union([hg, hg.annotated(edge_stats=None)]).edge_stats is None  # kept only when every part has it
    again = hg.with_features(hg.features * 2)
    assert again.source_covered.tolist() == [10, 20] and again.sentence_id == 7
    with pytest.raises(GraphError, match="one per edge|expected"):
        hg.annotated(source_covered=[1, 2, 3])
    with pytest.raises(TypeError, match="not a graph annotation"):
        hg.annotated(id=3)
    with pytest.raises(GraphError, match="4 entries for 3 edges"):
        b2 = HypergraphBuilder()
        x, y = b2.add_nodes(2)
        b2.add_edge(x, [], {}, "x")
        b2.add_edge(y, [x], {}, "[1]")
        b2.add_edge(y, [x], {}, "[1] z")
        b2.build(source_covered=[1, 2, 3, 4])


def test_annotations_survive_the_native_formats(tmp_path):
    from hypertune.formats import cache, hypertune_json

    b = HypergraphBuilder()
    x, y = b.add_nodes(2)
    b.add_edge(x, [], {"f": 1.0}, "x")
    b.add_edge(y, [x], {"f": 2.0}, "[1] z")
    hg = b.build(sentence_id=5, source_covered=[1, 2], edge_stats=[[0.5, 1.0], [1.5, 2.0]])
    for module, name in ((hypertune_json, "g.json"), (cache, "g.htc")):
        module.write([hg], str(tmp_path / name))
        (back,) = module.read(str(tmp_path / name), hg.feature_space, hg.vocabulary)
        assert back.sentence_id == 5 and back.source_covered.tolist() == [1, 2], name
        assert back.edge_stats.tolist() == [[0.5, 1.0], [1.5, 2.0]], name


def test_version_1_caches_keep_their_annotations(tmp_path):
    """Caches written before annotations were typed kept them in metadata (``id``, ``source_covered``)."""
    import json
    import zipfile

    from hypertune.formats import cache

    b = HypergraphBuilder()
    x, y = b.add_nodes(2)
    b.add_edge(x, [], {"f": 1.0}, "x")
    b.add_edge(y, [x], {"f": 2.0}, "[1] z")
    cache.write([b.build()], str(tmp_path / "new.htc"))
    with zipfile.ZipFile(tmp_path / "new.htc") as old, zipfile.ZipFile(tmp_path / "v1.htc", "w") as v1:
        for item in old.namelist():
            data = old.read(item)
            if item == cache.MAGIC_MEMBER:
                extra = json.loads(data)
                extra["version"] = 1
                del extra["annotations"]
                extra["metadata"] = [{"id": 4, "source_covered": [0, 3], "slf": {"x": "y"}}]
                data = json.dumps(extra).encode()
            v1.writestr(item, data)
    (back,) = cache.read(str(tmp_path / "v1.htc"), b.feature_space, b.vocabulary)
    assert back.sentence_id == 4 and back.source_covered.tolist() == [0, 3] and back.metadata == {"slf": {"x": "y"}}


def test_the_constructor_takes_keywords_only():
    hg = small_forest()
    parts = (hg.num_nodes, hg.head, hg.tail_offsets, hg.tails, hg.features, hg.target_offsets, hg.target,
             hg.feature_space, hg.vocabulary)  # fmt: skip
    with pytest.raises(TypeError, match="positional"):
        Hypergraph(*parts)


#: The value of every field of the graph that ``_annotated_builder`` makes (worked by hand). Nodes were added
#: S, A, C, U and edges e0 = S <- A C "[2] [1]", e1 = A "a", e2 = C "c d", e3 = U "u"; building orders the
#: nodes A, C, U, S (Kahn's algorithm, goal last) and the edges e1, e2, e3, e0 (grouped by head).
BUILT = {
    "num_nodes": 4,
    "head": [0, 1, 2, 3],
    "tail_offsets": [0, 0, 0, 0, 2],
    "tails": [0, 1],
    "features": [[0, 2, 0], [-1, 0.5, 0], [0, 0, 3], [1, 0, 0]],  # columns x, y, z
    "target_offsets": [0, 1, 3, 4, 6],
    "target": [0, 1, 2, 3, -2, -1],  # words a, c, d, u
    "feature_space": ["x", "y", "z"],
    "vocabulary": ["a", "c", "d", "u"],
    "node_labels": ["A", "C", "U", "S"],
    "metadata": {"m": 1},
    "sentence_id": 7,
    "source_covered": [1, 2, 5, 3],
    "edge_stats": [[1, 0], [2, 2], [9, 9], [0, 1]],
    "edge_scores": (["q"], [[0.5], [0.25], [9.0], [1.0]]),
    "node_offsets": [0, 1, 2, 3, 4],
}
#: The same graph without U, which is on no derivation of the goal.
TRIMMED = {
    **BUILT,
    "num_nodes": 3,
    "head": [0, 1, 2],
    "tail_offsets": [0, 0, 0, 2],
    "features": [[0, 2, 0], [-1, 0.5, 0], [1, 0, 0]],
    "target_offsets": [0, 1, 3, 5],
    "target": [0, 1, 2, -2, -1],
    "node_labels": ["A", "C", "S"],
    "source_covered": [1, 2, 3],
    "edge_stats": [[1, 0], [2, 2], [0, 1]],
    "edge_scores": (["q"], [[0.5], [0.25], [1.0]]),
    "node_offsets": [0, 1, 2, 3],
}


def _annotated_builder() -> HypergraphBuilder:
    b = HypergraphBuilder()
    s, a, c, u = b.add_node("S"), b.add_node("A"), b.add_node("C"), b.add_node("U")
    b.add_edge(s, [a, c], {"x": 1.0}, "[2] [1]")
    b.add_edge(a, [], {"y": 2.0}, "a")
    b.add_edge(c, [], {"x": -1.0, "y": 0.5}, "c d")
    b.add_edge(u, [], {"z": 3.0}, "u")
    return b


def assert_fields(hg: Hypergraph, expected: dict) -> None:
    """Every field of ``hg`` has the expected value, and ``expected`` names every field the class has: a field
    added to :class:`Hypergraph` fails here until each way of making a graph is shown to carry it."""
    assert set(expected) == {f.name for f in dataclasses.fields(Hypergraph)}
    for name, want in expected.items():
        value = getattr(hg, name)
        if isinstance(value, np.ndarray):
            assert value.tolist() == want, name
            assert value.dtype == (np.float64 if name == "edge_stats" else np.int64), name
        elif isinstance(value, EdgeScores):
            assert (list(value.names), value.values.tolist()) == want and value.values.dtype == np.float64, name
        elif sp.issparse(value):
            assert value.format == "csr" and value.has_canonical_format and value.dtype == np.float64, name
            assert value.toarray().tolist() == want, name
        elif name in ("feature_space", "vocabulary"):
            assert list(value.names) == want, name
        else:
            assert value == want, name


def test_every_field_survives_the_builder_and_trimming():
    b = _annotated_builder()
    annotations = {"sentence_id": 7, "source_covered": [3, 1, 2, 5], "edge_stats": [[0, 1], [1, 0], [2, 2], [9, 9]],
                   "edge_scores": EdgeScores(["q"], [[1.0], [0.5], [0.25], [9.0]])}  # fmt: skip
    built = b.build(0, metadata={"m": 1}, **annotations)
    assert_fields(built, BUILT)
    assert_fields(b.build(0, trim_graph=True, metadata={"m": 1}, **annotations), TRIMMED)
    assert_fields(trim(built), TRIMMED)
    doubled = [[0, 4, 0], [-2, 1, 0], [0, 0, 6], [2, 0, 0]]
    assert_fields(built.with_features(built.features * 2), {**BUILT, "features": doubled})
    # the fast path: nodes and edges already in order, target sides already encoded
    fast = HypergraphBuilder(built.feature_space, built.vocabulary)
    word = built.vocabulary.index
    fast.add_encoded_edge(0, (), [("y", 2.0)], [word("a")])
    fast.add_encoded_edge(1, (), [("x", -1.0), ("y", 0.5)], [word("c"), word("d")])
    fast.add_encoded_edge(2, [0, 1], [("x", 1.0)], [-2, -1])
    in_order = fast.build_in_order(3, labels=["A", "C", "S"], metadata={"m": 1}, sentence_id=7,
                                   source_covered=[1, 2, 3], edge_stats=[[1, 0], [2, 2], [0, 1]],
                                   edge_scores=EdgeScores(["q"], [[0.5], [0.25], [1.0]]))  # fmt: skip
    assert_fields(in_order, TRIMMED)


def test_pad_columns_adds_empty_columns_sharing_the_arrays():
    features = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 2.0]]))
    padded = pad_columns(features, 4)
    assert padded.toarray().tolist() == [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0]]
    assert np.shares_memory(padded.data, features.data) and pad_columns(features, 2) is features


def test_kbest_lists_packed_from_their_arrays_as_their_graphs_pack():
    space, vocabulary = FeatureSpace(["f", "g"]), Vocabulary(["w0", "w1", "w2"])
    rng = np.random.default_rng(5)
    counts = np.array([2, 1, 3, 1])
    offsets = np.concatenate(([0], np.cumsum(counts)))
    lengths = rng.integers(0, 4, size=offsets[-1])
    word_offsets = np.concatenate(([0], np.cumsum(lengths)))
    words = rng.integers(0, 3, size=word_offsets[-1])
    lists = KbestLists(offsets, words, word_offsets, sp.csr_matrix(rng.normal(size=(offsets[-1], 2))))
    packed, hypothesis_edges = packed_kbest_lists(offsets, words, word_offsets, len(space))
    expected = PackedGraphs.pack(kbest_lattices(lists, space, vocabulary), features=False)
    for field in ("node_offsets", "tail_offsets", "tails", "target_offsets", "target", "node_starts", "edge_starts"):
        np.testing.assert_array_equal(getattr(packed, field), getattr(expected, field), err_msg=field)
    assert packed.features.shape == expected.features.shape and packed.features.nnz == 0
    assert packed.max_arity == expected.max_arity == 1
    assert hypothesis_edges.tolist() == [1, 2, 4, 6, 7, 8, 10]  # each list's edges after its start axiom
    with pytest.raises(GraphError, match="empty k-best list"):
        packed_kbest_lists(np.array([0, 2, 2]), words, word_offsets[:3], len(space))


def test_every_field_survives_the_checked_path_and_packing():
    space, vocabulary = FeatureSpace(["f", "g"]), Vocabulary(["w0", "w1", "w2"])
    lists = KbestLists(
        list_offsets=np.array([0, 2, 3]),
        words=np.array([0, 1, 2]),
        word_offsets=np.array([0, 2, 2, 3]),
        features=sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]])),
    )
    stats = np.array([[1, 1], [2, 2], [3, 3]])
    first, second = kbest_lattices(lists, space, vocabulary, widths=np.array([2, 1]), sentence_ids=[4, None],
                                   metadata=[{"k": 1}, {}], hypothesis_stats=stats,
                                   hypothesis_scores=EdgeScores(["a", "b"], [[1, 2], [3, 4], [5, 6]]))  # fmt: skip
    kbest = {"feature_space": ["f", "g"], "vocabulary": ["w0", "w1", "w2"], "node_labels": None, "source_covered": None}
    assert_fields(first, {**kbest, "num_nodes": 2, "head": [0, 1, 1], "tail_offsets": [0, 0, 1, 2], "tails": [0, 0],
                          "features": [[0, 0], [1, 0], [0, 2]], "target_offsets": [0, 0, 3, 4],
                          "target": [-1, 0, 1, -1],
                          "metadata": {"k": 1}, "sentence_id": 4, "edge_stats": [[0, 0], [1, 1], [2, 2]],
                          "edge_scores": (["a", "b"], [[0, 0], [1, 2], [3, 4]]),
                          "node_offsets": [0, 1, 3]})  # fmt: skip
    assert_fields(second, {**kbest, "num_nodes": 2, "head": [0, 1], "tail_offsets": [0, 0, 1], "tails": [0],
                           "features": [[0], [3]], "target_offsets": [0, 0, 2], "target": [-1, 2], "metadata": {},
                           "sentence_id": None, "edge_stats": [[0, 0], [3, 3]],
                           "edge_scores": (["a", "b"], [[0, 0], [5, 6]]), "node_offsets": [0, 1, 2]})  # fmt: skip
    hg = _annotated_builder().build(0, trim_graph=True, metadata={"m": 1}, sentence_id=7, source_covered=[3, 1, 2, 5],
                                    edge_stats=[[0, 1], [1, 0], [2, 2], [9, 9]],
                                    edge_scores=EdgeScores(["q"], [[1.0], [0.5], [0.25], [9.0]]))  # fmt: skip
    assert_fields(union([hg, hg], sentence_id=9), {
        **TRIMMED,
        "num_nodes": 7,
        "head": [0, 1, 2, 3, 4, 5, 6, 6],
        "tail_offsets": [0, 0, 0, 2, 2, 2, 4, 5, 6],
        "tails": [0, 1, 3, 4, 2, 5],
        "features": TRIMMED["features"] * 2 + [[0, 0, 0]] * 2,
        "target_offsets": [0, 1, 3, 5, 6, 8, 10, 11, 12],
        "target": [0, 1, 2, -2, -1, 0, 1, 2, -2, -1, -1, -1],
        "node_labels": None,
        "sentence_id": 9,
        "source_covered": [1, 2, 3, 1, 2, 3, 0, 0],
        "edge_stats": [[1, 0], [2, 2], [0, 1], [1, 0], [2, 2], [0, 1], [0, 0], [0, 0]],
        "edge_scores": (["q"], [[0.5], [0.25], [1.0], [0.5], [0.25], [1.0], [0.0], [0.0]]),
        "node_offsets": [0, 1, 2, 3, 4, 5, 6, 8],
    })  # fmt: skip


@given(hypergraphs())
def test_trim_preserves_derivations(hg):
    assert count_derivations(trim(hg)) == count_derivations(hg)


def test_kbest_list_is_a_degenerate_lattice():
    hg = from_kbest([("a b c", {"lm": -3, "tm": -1}), (["a", "c"], {"lm": -2, "tm": -2.5}), ("b", {"lm": -3.5})])
    assert hg.is_lattice and hg.num_nodes == 2 and hg.num_edges == 4 and count_derivations(hg) == 3
    best = A.kbest(hg, Weights({"lm": 1, "tm": 1}), 3)
    assert [d.text for d in best] == ["b", "a b c", "a c"]
    assert [d.derivation.edge for d in best] == [3, 1, 2]
    with pytest.raises(GraphError, match="empty k-best"):
        from_kbest([])


def test_networkx_round_trip_for_lattices():
    g = nx.MultiDiGraph()
    g.add_edge("s", "m", words="the", features={"lm": -1})
    g.add_edge("s", "m", words="a", features={"lm": -2})
    g.add_edge("m", "e1", words=["big", "house"], features={"lm": -3})
    g.add_edge("m", "e2", words="home", features={"lm": -1})
    hg = from_networkx(g)
    assert hg.is_lattice and count_derivations(hg) == 4
    assert A.viterbi(hg, Weights({"lm": 1})).text == "the home"
    back = hg.to_networkx()
    assert back.number_of_edges() == hg.num_edges - 1
    again = from_networkx(back)
    assert count_derivations(again) == count_derivations(hg)
    assert A.viterbi(again, Weights({"lm": 1})).text == "the home"
    g.add_edge("e2", "s")
    with pytest.raises(GraphError, match="cycle"):
        from_networkx(g)


def test_forest_to_networkx_is_bipartite():
    hg = small_forest()
    g = hg.to_networkx()
    assert g.number_of_nodes() == hg.num_nodes + hg.num_edges
    assert g.number_of_edges() == hg.num_edges + int(hg.arity.sum())
    assert nx.is_directed_acyclic_graph(g)


def test_generator_is_seeded_and_realistic():
    a = random_hypergraph(2000, seed=3)
    b = random_hypergraph(2000, seed=3)
    assert np.array_equal(a.tails, b.tails) and np.allclose(a.features.toarray(), b.features.toarray())
    assert 1500 <= a.num_edges <= 2300 and a.max_arity == 2
    assert 10**3 < count_derivations(a) < 10**60
    lattice = random_hypergraph(500, lattice=True, seed=1)
    assert lattice.is_lattice
    assert trim(a).num_edges == a.num_edges  # every generated edge is useful
    assert count_derivations(random_kbest(7, seed=0)) == 7
