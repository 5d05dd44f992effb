"""Lattice MBR (Tromble et al. 2008): n-gram posteriors and the decision against brute-force enumeration."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies import hypergraphs, weights

from hypertune.algorithms.enumeration import enumerate_derivations
from hypertune.errors import UsageError
from hypertune.hypergraph import Hypergraph, HypergraphBuilder
from hypertune.mbr.lattice import (
    MOSES_P,
    MOSES_R,
    estimate_parameters,
    lattice_mbr,
    lattice_mbr_corpus,
    ngram_posteriors,
)
from hypertune.metrics.linear_bleu import linear_bleu_weights
from hypertune.weights import Weights

MARKERS = ("<s>", "</s>")


def ngrams(words: list[str], order: int) -> Counter:
    words = [w for w in words if w not in MARKERS]
    return Counter(tuple(words[i : i + n]) for n in range(1, order + 1) for i in range(len(words) - n + 1))


def brute_force(hg: Hypergraph, w: Weights, scale: float, order: int) -> tuple[list, np.ndarray, dict, dict]:
    """Every derivation's yield and probability; each n-gram's probability of occurring at least once, and
    its expected count (plain Python over the enumerated derivations)."""
    scores = scale * w.edge_scores(hg)
    derivations = enumerate_derivations(hg)
    logits = np.array([sum(scores[e] for e in d.edges()) for d in derivations])
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    yields = [hg.derivation_words(d) for d in derivations]
    at_least_once: dict = {}
    expected: dict = {}
    for words, prob in zip(yields, probs, strict=True):
        for gram, count in ngrams(words, order).items():
            at_least_once[gram] = at_least_once.get(gram, 0.0) + prob
            expected[gram] = expected.get(gram, 0.0) + prob * count
    return yields, probs, at_least_once, expected


def linear_gain(words: list[str], posteriors: dict, theta: np.ndarray, order: int) -> float:
    counts = ngrams(words, order)
    length = sum(c for g, c in counts.items() if len(g) == 1)
    return theta[0] * length + sum(theta[len(g)] * c * posteriors.get(g, 0.0) for g, c in counts.items())


def assert_same(found: dict, expected: dict) -> None:
    for gram in set(found) | set(expected):
        assert math.isclose(found.get(gram, 0.0), expected.get(gram, 0.0), rel_tol=1e-9, abs_tol=1e-12), gram


@settings(max_examples=30)
@given(hypergraphs(lattice=True, max_nodes=6), weights, st.sampled_from([0.5, 1.0, 3.0]), st.integers(1, 3))
def test_posteriors_equal_enumeration_on_lattices(hg: Hypergraph, w: Weights, scale: float, order: int) -> None:
    _, _, at_least_once, expected = brute_force(hg, w, scale, order)
    exact = ngram_posteriors(hg, w, scale=scale, max_order=order)
    assert_same(exact.as_dict(hg.vocabulary.names), at_least_once)
    counts = ngram_posteriors(hg, w, scale=scale, max_order=order, method="expected-counts")
    assert_same(counts.as_dict(hg.vocabulary.names), expected)
    unigrams = sum(c for g, c in expected.items() if len(g) == 1)
    assert math.isclose(exact.expected_length, unigrams, rel_tol=1e-9, abs_tol=1e-12)


@settings(max_examples=30)
@given(hypergraphs(max_nodes=6, max_arity=2), weights, st.integers(1, 4))
def test_posteriors_equal_enumeration_on_forests(hg: Hypergraph, w: Weights, order: int) -> None:
    """Forests: trees that use a node twice (tails ``(u, u)``) included, where one n-gram can occur twice."""
    _, _, at_least_once, expected = brute_force(hg, w, 1.0, order)
    assert_same(ngram_posteriors(hg, w, max_order=order).as_dict(hg.vocabulary.names), at_least_once)
    counts = ngram_posteriors(hg, w, max_order=order, method="expected-counts")
    assert_same(counts.as_dict(hg.vocabulary.names), expected)


@settings(max_examples=30)
@given(
    st.one_of(hypergraphs(lattice=True, max_nodes=6), hypergraphs(max_nodes=6, max_arity=2)),
    weights,
    st.sampled_from(["exact", "expected-counts"]),
    st.floats(0.2, 0.9),
    st.floats(0.2, 0.9),
)
def test_decision_equals_brute_force(hg: Hypergraph, w: Weights, method: str, p: float, r: float) -> None:
    order = 3
    yields, probs, at_least_once, expected = brute_force(hg, w, 1.0, order)
    posteriors = at_least_once if method == "exact" else expected
    theta = linear_bleu_weights(p, r, order)
    gains = [linear_gain(words, posteriors, theta, order) for words in yields]
    choice = lattice_mbr(hg, w, p=p, r=r, max_order=order, posteriors=method)  # type: ignore[arg-type]
    best = max(gains)
    assert math.isclose(choice.gain, best, rel_tol=1e-9, abs_tol=1e-9)
    assert math.isclose(linear_gain(choice.words, posteriors, theta, order), best, rel_tol=1e-9, abs_tol=1e-9)
    scores = w.edge_scores(hg)
    model = [sum(scores[e] for e in d.edges()) for d in enumerate_derivations(hg)]
    assert choice.map_words in [words for words, m in zip(yields, model, strict=True) if m >= max(model) - 1e-9]
    assert math.isclose(choice.map_gain, linear_gain(choice.map_words, posteriors, theta, order), abs_tol=1e-9)


def two_words(first: str, second: str) -> Hypergraph:
    """A lattice with two equally likely one-word paths, ``first``'s edge before ``second``'s."""
    b = HypergraphBuilder()
    start, goal = b.add_nodes(2)
    b.add_edge(start, [], {}, [])
    b.add_edge(goal, [start], {"f": 1.0}, f"[1] {first}")
    b.add_edge(goal, [start], {"f": 1.0}, f"[1] {second}")
    return b.build(goal)


def test_ties_go_to_the_first_best_in_edge() -> None:
    for first, second in (("a", "b"), ("b", "a")):
        choice = lattice_mbr(two_words(first, second), Weights({"f": 1.0}), max_order=2)
        assert choice.words == [first]
        assert math.isclose(choice.gain, -1.0 + 0.5 * linear_bleu_weights(MOSES_P, MOSES_R, 2)[1])


def test_sentence_markers_are_no_words() -> None:
    b = HypergraphBuilder()
    start, middle, goal = b.add_nodes(3)
    b.add_edge(start, [], {}, "<s>")
    b.add_edge(middle, [start], {"f": 1.0}, "[1] a b")
    b.add_edge(middle, [start], {"f": 0.0}, "[1] a c")
    b.add_edge(goal, [middle], {}, "[1] </s>")
    hg = b.build(goal)
    posteriors = ngram_posteriors(hg, Weights({"f": 1.0}), max_order=2).as_dict(hg.vocabulary.names)
    p = 1.0 / (1.0 + math.exp(-1.0))
    assert_same(posteriors, {("a",): 1.0, ("b",): p, ("c",): 1 - p, ("a", "b"): p, ("a", "c"): 1 - p})
    choice = lattice_mbr(hg, Weights({"f": 1.0}), max_order=2)
    assert choice.words == ["a", "b"] and choice.map_words == ["a", "b"]


def test_repeated_ngram_posterior_is_at_most_one() -> None:
    """The word "a" occurs twice on the only path: posterior 1, expected count 2 (hand-worked)."""
    b = HypergraphBuilder()
    start, goal = b.add_nodes(2)
    b.add_edge(start, [], {}, "a")
    b.add_edge(goal, [start], {}, "[1] a")
    hg = b.build(goal)
    exact = ngram_posteriors(hg, Weights(), max_order=2).as_dict(hg.vocabulary.names)
    counts = ngram_posteriors(hg, Weights(), max_order=2, method="expected-counts").as_dict(hg.vocabulary.names)
    assert exact == {("a",): 1.0, ("a", "a"): 1.0}
    assert counts == {("a",): 2.0, ("a", "a"): 1.0}


def test_a_node_used_twice_in_a_tree() -> None:
    """Goal edge ``[1] [2]`` over the same node twice, which is "a" (p = 3/4) or "b": P("a" at least once) is
    1 - (1/4)^2, its expected count 2 * 3/4 (hand-worked)."""
    b = HypergraphBuilder()
    leaf, goal = b.add_nodes(2)
    b.add_edge(leaf, [], {"f": math.log(3.0)}, "a")
    b.add_edge(leaf, [], {}, "b")
    b.add_edge(goal, [leaf, leaf], {}, "[1] [2]")
    hg = b.build(goal)
    w = Weights({"f": 1.0})
    exact = ngram_posteriors(hg, w, max_order=2).as_dict(hg.vocabulary.names)
    counts = ngram_posteriors(hg, w, max_order=2, method="expected-counts").as_dict(hg.vocabulary.names)
    assert math.isclose(exact[("a",)], 1 - 0.25**2) and math.isclose(counts[("a",)], 1.5)
    assert math.isclose(exact[("a", "a")], 0.75**2) and math.isclose(exact[("b", "a")], 0.25 * 0.75)


def test_parameters_given_estimated_or_moses_defaults() -> None:
    hg = two_words("a", "b")
    w = Weights({"f": 1.0})
    assert lattice_mbr_corpus([hg], w).source == "moses-defaults"
    given_r = lattice_mbr_corpus([hg], w, p=0.5, r=0.5)
    assert given_r.source == "given" and np.allclose(given_r.theta, linear_bleu_weights(0.5, 0.5, 4))
    theta = np.array([-1.0, 1.0, 0.0, 0.0, 0.0])
    assert lattice_mbr_corpus([hg], w, theta=theta).source == "given"
    # the model-best translations "a" (first in-edge on the tie) and "b": every unigram matches
    graphs = [two_words("a", "b"), two_words("b", "a")]
    references = [["a x"], ["b"]]
    p, r = estimate_parameters(graphs, w, references, max_order=1)
    assert (p, r) == (1.0, 1.0)
    with pytest.raises(UsageError, match="give p and r"):
        estimate_parameters(graphs, w, [["x"], ["y"]], max_order=2)
    result = lattice_mbr_corpus(graphs, w, references=references, max_order=1)
    assert result.source == "estimated" and (result.p, result.r) == (1.0, 1.0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"scale": -1.0}, "scale"),
        ({"max_order": 0}, "order"),
        ({"posteriors": "bogus"}, "exact"),
        ({"theta": [1.0, 2.0]}, "theta"),
        ({"p": 0.5}, "both p and r"),
    ],
)
def test_bad_options_are_usage_errors(options: dict, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        lattice_mbr(two_words("a", "b"), Weights(), **options)
