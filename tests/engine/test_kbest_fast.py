"""The compiled lazy k-best (Huang & Chiang 2005, Alg. 3) against brute force, and its packed n-best output.

The reference enumerates every derivation of every node and sorts them by Algorithm 3's order: score
(higher first; sums taken in tail order), then edge id, then rank vector (the ranks of the tails'
derivations in their own lists), lexicographically; with ``unique`` each node keeps the first derivation
of each string and ranks refer to those filtered lists. Yields and features come from the hypergraph's own
derivation methods.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies import FEATURES, hypergraphs

from hypertune import algorithms as A
from hypertune.algorithms.enumeration import enumerate_derivations
from hypertune.algorithms.kbest import LazyKBest, kbest_list
from hypertune.cli import main
from hypertune.formats import read_graphs, write_graphs
from hypertune.formats.nbest import write_moses
from hypertune.hypergraph import Derivation, Hypergraph, HypergraphBuilder, from_kbest
from hypertune.weights import Weights

graphs = st.one_of(hypergraphs(), hypergraphs(lattice=True), hypergraphs(max_arity=3, max_nodes=5))
# small integers: many derivations tie, so the tie order is exercised
tied_weights = st.builds(
    lambda vs: Weights(dict(zip(FEATURES, vs, strict=True))), st.tuples(*[st.integers(-1, 1).map(float)] * 3)
)


def brute_force(hg: Hypergraph, scores: np.ndarray, unique: bool) -> list[tuple[float, Derivation]]:
    """Every derivation of the goal in Algorithm 3's order (see the module docstring)."""
    lists: list[list[tuple[float, Derivation, tuple[int, ...]]]] = []
    for v in range(hg.num_nodes):
        here = []
        for e in hg.in_edges(v):
            tails = [int(t) for t in hg.edge_tails(e)]
            for ranks in itertools.product(*(range(len(lists[t])) for t in tails)):
                score = scores[e]
                for t, r in zip(tails, ranks, strict=True):
                    score += lists[t][r][0]
                children = tuple(lists[t][r][1] for t, r in zip(tails, ranks, strict=True))
                here.append((-float(score), e, ranks, Derivation(e, children)))
        here.sort(key=lambda item: item[:3])
        kept, seen = [], set()
        for negative, _, _, d in here:
            words = tuple(hg.derivation_yield(d))
            if unique and words in seen:
                continue
            seen.add(words)
            kept.append((-negative, d, words))
        lists.append(kept)
    return [(s, d) for s, d, _ in lists[hg.goal]]


@settings(max_examples=60, deadline=None)
@given(graphs, tied_weights, st.integers(1, 40), st.booleans())
def test_kbest_is_the_brute_force_order(hg, w, k, unique):
    scores = w.edge_scores(hg)
    expected = brute_force(hg, scores, unique)[:k]
    found = A.kbest(hg, w, k, unique=unique)
    assert [(d.score, d.derivation) for d in found] == expected
    for d in found:  # yields and features as the hypergraph's own methods give them
        assert d.words == hg.derivation_words(d.derivation)
        vector = hg.derivation_features(d.derivation)
        names = hg.feature_space.names
        assert d.features == {names[i]: float(vector[i]) for i in np.flatnonzero(vector).tolist()}
    if not unique:  # the scores are the k largest of all derivations (the enumeration module's)
        everything = sorted((float(scores[d.edges()].sum()) for d in enumerate_derivations(hg)), reverse=True)
        assert [d.score for d in found] == pytest.approx(everything[:k], abs=1e-9)


@settings(max_examples=15, deadline=None)
@given(graphs, tied_weights)
def test_incremental_requests_agree(hg, w):
    """Iterating, asking a node for its ``k``-th derivation, and asking for the ``k`` best at once agree."""
    search = LazyKBest(hg, w.edge_scores(hg))
    everything = list(search)
    assert everything == brute_force(hg, w.edge_scores(hg), False)
    assert LazyKBest(hg, w.edge_scores(hg)).best(len(everything) + 5) == everything
    assert search.kth(hg.goal, len(everything)) and not search.kth(hg.goal, len(everything) + 1)
    assert search.derivation(hg.goal, len(everything) - 1) == everything[-1][1]


def _forest() -> Hypergraph:
    """A small forest with ties, a repeated sub-derivation (an edge used twice) and duplicate strings."""
    b = HypergraphBuilder()
    x, y, s = b.add_nodes(3)
    b.add_edge(x, [], {"a": 1.0}, "the")
    b.add_edge(x, [], {"a": 1.0, "b": -0.5}, "a")
    b.add_edge(x, [], {"b": 0.25}, "the")
    b.add_edge(y, [x, x], {"c": 3.0}, "[1] [2]")
    b.add_edge(y, [x], {"a": 0.3, "c": 1.0}, "[1] house")
    b.add_edge(s, [y], {}, "<s> [1] </s>")
    return b.build(s)


@pytest.mark.parametrize("unique", [False, True])
def test_packed_nbest_lines_are_write_moses_lines(tmp_path, unique):
    """``decode --out`` (lines assembled from the flat arrays) writes what write_moses writes for the same
    derivations as a k-best lattice."""
    graph = _save(_forest(), tmp_path)
    hg = read_graphs([graph])[0]
    weights = tmp_path / "w"
    weights.write_text("a 1\nb 2\nc 0.5\n")
    out = tmp_path / "out.nbest"
    args = ["decode", "-q", graph, "-w", str(weights), "--kbest", "20", "--out", str(out)]
    assert main(args + (["--unique"] if unique else [])) == 0
    found = A.kbest(hg, Weights({"a": 1, "b": 2, "c": 0.5}), 20, unique=unique)
    lattice = from_kbest([(d.words, d.features) for d in found], hg.feature_space, hg.vocabulary,
                         {"totals": [d.score for d in found]}, sentence_id=0)  # fmt: skip
    write_moses([lattice], str(tmp_path / "expected.nbest"))
    assert out.read_bytes() == (tmp_path / "expected.nbest").read_bytes()
    assert len(out.read_text().splitlines()) == (6 if unique else 12)


def _save(hg: Hypergraph, folder) -> str:
    path = str(folder / "in.json")
    write_graphs([hg], path, "hypertune")
    return path


def test_packed_nbest_refuses_an_unwritable_word(tmp_path, capsys):
    b = HypergraphBuilder()
    s = b.add_node()
    b.add_edge(s, [], {"a": 1.0}, ["x", "|||"])
    path = _save(b.build(s), tmp_path)
    weights = tmp_path / "w"
    weights.write_text("a 1\n")
    code = main(["decode", "-q", path, "-w", str(weights), "--kbest", "2", "--out", str(tmp_path / "o")])
    assert code != 0
    assert "cannot write the word '|||' in an n-best list" in capsys.readouterr().err


def test_kbest_list_arrays():
    hg = _forest()
    found = kbest_list(hg, Weights({"a": 1, "b": 2, "c": 0.5}), 3)
    # x: "the" 1.0 (edge 0), "the" 0.5 (edge 2), "a" 0.0; y = x x (1.5): 3.5, then 3.0 twice, ranks (0, 1) first
    assert found.texts() == ["<s> the the </s>"] * 3
    assert found.scores.tolist() == [3.5, 3.0, 3.0]
    assert [found.edges[found.edge_offsets[i] : found.edge_offsets[i + 1]].tolist() for i in range(3)] == [
        [5, 3, 0, 0],
        [5, 3, 0, 2],
        [5, 3, 2, 0],
    ]
    assert [found.features(i) for i in range(3)] == [{"a": 2.0, "c": 3.0}] + [{"a": 1.0, "b": 0.25, "c": 3.0}] * 2
    unique = kbest_list(hg, Weights({"a": 1, "b": 2, "c": 0.5}), 20, unique=True)
    assert unique.texts() == [f"<s> {t} </s>" for t in ("the the", "the a", "a the", "the house", "a a", "a house")]
    without = kbest_list(hg, Weights({"a": 1, "b": 2, "c": 0.5}), 3, edges=False)
    assert without.edges is None and without.edge_offsets is None
    assert without.texts() == ["<s> the the </s>"] * 3 and without.scores.tolist() == [3.5, 3.0, 3.0]
    assert [without.features(i) for i in range(3)] == [{"a": 2.0, "c": 3.0}] + [{"a": 1.0, "b": 0.25, "c": 3.0}] * 2
    with pytest.raises(ValueError, match="without edges"):
        without.derivation(0)


def _top(lists: list[list[float]], k: int) -> list[float]:
    """The ``k`` largest sums of one entry of each list (every choice counted), merged list by list."""
    sums = [0.0]
    for options in lists:
        sums = sorted((s + o for s in sums for o in options), reverse=True)[:k]
    return sums


@pytest.mark.parametrize("unique", [False, True])
def test_a_long_search_grows_every_array(unique):
    """Two chains of 80 steps under a goal edge with both as tails: the request stack deeper than its first 64
    entries, more candidates, ranks, list and heap entries (and with ``unique`` yield tokens) than the first
    arrays hold, and both hash tables widened. At step ``i`` of a chain: ``a`` (score 0), ``b`` (score
    ``-(i % 5 + 1)``, ties everywhere) and ``a`` again at score -0.5 (the same string, a worse derivation).
    The k best scores are the k largest sums of one option a step, merged step by step (with ``unique``,
    the duplicate ``a`` never counts), the two chains' lists then summed pairwise."""
    k, steps = 1500, 80
    b = HypergraphBuilder()
    ends, options = [], []
    for chain in range(2):
        node = b.add_node()
        b.add_edge(node, [], {}, [])
        for i in range(steps):
            head = b.add_node()
            b.add_edge(head, [node], {}, [0, f"a{chain}"])
            b.add_edge(head, [node], {"b": float(i % 5 + 1)}, [0, f"b{chain}"])
            b.add_edge(head, [node], {"d": 1.0}, [0, f"a{chain}"])
            node = head
        ends.append(node)
        options.append([[0.0, -float(i % 5 + 1)] + ([] if unique else [-0.5]) for i in range(steps)])
    goal = b.add_node()
    b.add_edge(goal, ends, {}, [0, 1])
    hg = b.build(goal)
    found = kbest_list(hg, Weights({"b": -1.0, "d": -0.5}), k, unique=unique)
    chains = [_top(o, k) for o in options]
    expected = sorted((x + y for x in chains[0] for y in chains[1]), reverse=True)[:k]
    assert found.scores.tolist() == expected
    for i in range(len(found)):  # each score is w · f of its own feature vector
        features = found.features(i)
        assert found.scores[i] == -features.get("b", 0.0) - 0.5 * features.get("d", 0.0)
    texts = found.texts()
    assert all(len(t.split()) == 2 * steps for t in texts)
    if unique:
        assert len(set(texts)) == k


def test_packed_nbest_numbers_are_the_shortest_text(tmp_path):
    """Each number as the shortest text that reads back as it (Python's ``repr``), without a trailing ``.0``;
    written out by hand."""
    b = HypergraphBuilder()
    s = b.add_node()
    values = {"a": 2.0, "b": 1e16, "c": 1e-05, "d": 0.1 + 0.2, "e": 123456789.125, "f": -3.0, "g": 2.5e-300, "h": 10.0}
    b.add_edge(s, [], values, ["x"])
    path = _save(b.build(s), tmp_path)
    (tmp_path / "w").write_text("a 1\nh 0.5\n")
    out = tmp_path / "o"
    assert main(["decode", "-q", path, "-w", str(tmp_path / "w"), "--kbest", "2", "--out", str(out)]) == 0
    assert out.read_text() == (
        "0 ||| x ||| a= 2 b= 1e+16 c= 1e-05 d= 0.30000000000000004 e= 123456789.125 f= -3 g= 2.5e-300 h= 10 ||| 7\n"
    )
