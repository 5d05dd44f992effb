"""Consensus decoding (DeNero et al. 2009): expected counts and the choice against brute force."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies import hypergraphs, weights

from hypertune.algorithms.enumeration import enumerate_derivations
from hypertune.algorithms.kbest import LazyKBest
from hypertune.errors import UsageError
from hypertune.hypergraph import Hypergraph, HypergraphBuilder
from hypertune.mbr.consensus import consensus, consensus_bleu, consensus_corpus
from hypertune.mbr.lattice import ngram_posteriors
from hypertune.weights import Weights


def ngrams(words: list[str], order: int) -> Counter:
    return Counter(tuple(words[i : i + n]) for n in range(1, order + 1) for i in range(len(words) - n + 1))


def expectations(hg: Hypergraph, w: Weights, scale: float, order: int) -> tuple[dict, float]:
    """Expected n-gram counts and length by enumerating every derivation (plain Python)."""
    scores = scale * w.edge_scores(hg)
    derivations = enumerate_derivations(hg)
    logits = np.array([sum(scores[e] for e in d.edges()) for d in derivations])
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    counts: dict = {}
    length = 0.0
    for d, prob in zip(derivations, probs, strict=True):
        words = hg.derivation_words(d)
        length += prob * len(words)
        for gram, count in ngrams(words, order).items():
            counts[gram] = counts.get(gram, 0.0) + prob * count
    return counts, length


def cbleu(words: list[str], counts: dict, length: float, order: int) -> float:
    """DeNero et al.'s BLEU with expected counts as the reference, written out for one hypothesis."""
    if not words:
        return 0.0
    mine = ngrams(words, order)
    logs = []
    for n in range(1, order + 1):
        matches = sum(min(c, counts.get(g, 0.0)) for g, c in mine.items() if len(g) == n)
        total = len(words) - n + 1
        if matches <= 0 or total <= 0:
            return 0.0
        logs.append(math.log(matches / total))
    return math.exp(min(0.0, 1.0 - length / len(words)) + sum(logs) / order)


@settings(max_examples=30)
@given(hypergraphs(max_nodes=6, max_arity=2), weights, st.sampled_from([0.5, 1.0]), st.integers(1, 4))
def test_expected_counts_equal_enumeration_on_forests(hg: Hypergraph, w: Weights, scale: float, order: int) -> None:
    counts, length = expectations(hg, w, scale, order)
    found = ngram_posteriors(hg, w, scale=scale, max_order=order, method="expected-counts")
    table = found.as_dict(hg.vocabulary.names)
    for gram in set(table) | set(counts):
        assert math.isclose(table.get(gram, 0.0), counts.get(gram, 0.0), rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(found.expected_length, length, rel_tol=1e-9, abs_tol=1e-12)


@settings(max_examples=30)
@given(
    st.one_of(hypergraphs(max_nodes=6, max_arity=2), hypergraphs(lattice=True, max_nodes=6)),
    weights,
    st.integers(1, 12),
    st.booleans(),
    st.integers(1, 3),
)
def test_choice_equals_brute_force_over_the_kbest(hg: Hypergraph, w: Weights, k: int, unique: bool, order: int) -> None:
    counts, length = expectations(hg, w, 1.0, order)
    listed = [hg.derivation_words(d) for _, d in LazyKBest(hg, w.edge_scores(hg), unique=unique).best(k)]
    scores = [cbleu(words, counts, length, order) for words in listed]
    choice = consensus(hg, w, kbest=k, unique=unique, max_order=order)
    best = max(scores)
    assert math.isclose(choice.score, best, rel_tol=1e-9, abs_tol=1e-12)
    first = next(i for i, s in enumerate(scores) if s >= best - 1e-9 * max(1.0, best))
    assert choice.rank == first and choice.words == listed[first]
    assert choice.map_words == listed[0] and math.isclose(choice.map_score, scores[0], rel_tol=1e-9, abs_tol=1e-12)


def test_hand_worked_forest() -> None:
    """Paths "a b" (p = 3/4) and "a c" (p = 1/4): E[c(a)] = 1, E[c(b)] = 3/4, E[c(a b)] = 3/4, E|e| = 2, so with N = 2
    "a b" scores sqrt((1.75/2) (0.75/1)) and "a c" sqrt((1.25/2) (0.25/1))."""
    b = HypergraphBuilder()
    start, middle, goal = b.add_nodes(3)
    b.add_edge(start, [], {}, "<s>")
    b.add_edge(middle, [start], {"f": math.log(3.0)}, "[1] a c")
    b.add_edge(middle, [start], {"f": 2 * math.log(3.0)}, "[1] a b")
    b.add_edge(goal, [middle], {}, "[1] </s>")
    hg = b.build(goal)
    choice = consensus(hg, Weights({"f": 1.0}), max_order=2)
    assert choice.words == ["a", "b"] and choice.rank == 0
    assert math.isclose(choice.score, math.sqrt(1.75 / 2 * 0.75))
    stats = np.array([[1.25, 2, 0.25, 1, 2]])
    assert math.isclose(float(consensus_bleu(stats, 2.0, 2)[0]), math.sqrt(1.25 / 2 * 0.25))
    flipped = consensus(hg, Weights({"f": -1.0}), max_order=2)  # now "a c" has p = 3/4
    assert flipped.map_words == flipped.words == ["a", "c"]
    assert consensus_corpus([hg, hg], Weights({"f": 1.0}), max_order=2)[1] == choice


def test_short_hypotheses_score_zero() -> None:
    assert consensus_bleu(np.array([[1.0, 1.0, 0.0, 0.0, 1.0]]), 1.0, 2).tolist() == [0.0]


@pytest.mark.parametrize(("options", "message"), [({"kbest": 0}, "k >= 1"), ({"scale": math.inf}, "scale")])
def test_bad_options_are_usage_errors(options: dict, message: str) -> None:
    b = HypergraphBuilder()
    start, goal = b.add_nodes(2)
    b.add_edge(start, [], {}, "a")
    b.add_edge(goal, [start], {}, "[1] b")
    with pytest.raises(UsageError, match=message):
        consensus(b.build(goal), Weights(), **options)
