"""One rule for the sentence markers (hypertune/metrics/base.py): every ``<s>`` and ``</s>`` is dropped, wherever
it stands, by the string and the id forms alike, and the tuning set, hope/fear search, the oracles and the
training candidates all score the same words for the same derivation -- checked on a forest whose markers
stand inside the sentence, where a rule for the ends only would count them."""

from __future__ import annotations

import numpy as np

from hypertune.hypergraph import HypergraphBuilder
from hypertune.metrics import BleuMetric
from hypertune.metrics.base import (
    SENTENCE_MARKERS,
    sentence_marker_ids,
    strip_sentence_marker_ids,
    strip_sentence_markers,
)
from hypertune.metrics.gains import Gain
from hypertune.symbols import Vocabulary
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.hope_fear import HopeFearDecoder
from hypertune.tuners.kbest_lists import as_kbest_lists
from hypertune.tuners.model_best import ModelBest
from hypertune.tuners.oracle import OracleSearch
from hypertune.weights import Weights


def test_every_marker_is_dropped():
    assert SENTENCE_MARKERS == ("<s>", "</s>")
    assert strip_sentence_markers("<s> a </s> <s> b <s> </s>".split()) == ["a", "b"]
    assert strip_sentence_markers(["</s>", "c", "<s>"]) == ["c"] and strip_sentence_markers([]) == []


def test_the_id_form_is_the_string_form():
    """Random sequences of ids, markers anywhere, tail references (negative) kept: by brute force."""
    vocabulary = Vocabulary()
    words = ["<s>", "a", "</s>", "b", "c"]
    ids = vocabulary.indices(words)
    start, end = vocabulary.get("<s>"), vocabulary.get("</s>")
    assert sorted(sentence_marker_ids(vocabulary).tolist()) == sorted([start, end])
    assert sentence_marker_ids(Vocabulary()).size == 0
    rng = np.random.default_rng(3)
    for _ in range(200):
        sequences = [rng.choice(np.append(ids, [-1, -2]), size=rng.integers(0, 7)) for _ in range(rng.integers(1, 5))]
        tokens = np.concatenate(sequences).astype(np.int64)
        offsets = np.concatenate(([0], np.cumsum([s.size for s in sequences]))).astype(np.int64)
        kept, kept_offsets = strip_sentence_marker_ids(tokens, offsets, start, end)
        for i, sequence in enumerate(sequences):
            expected = [t for t in sequence.tolist() if t not in (start, end)]
            assert kept[kept_offsets[i] : kept_offsets[i + 1]].tolist() == expected
        only_end = strip_sentence_marker_ids(tokens, offsets, None, end)[0]
        assert only_end.tolist() == [t for t in tokens.tolist() if t != end]


def _forest_with_inner_markers():
    """Two derivations: "<s> x </s> <s> y </s>" (weight 1) and "<s> x <s> z </s>" (weight 0); the reference
    is "x y", so the first is both the model-best and the oracle."""
    b = HypergraphBuilder()
    goal, left, right = b.add_node("S"), b.add_node("X"), b.add_node("X")
    b.add_edge(left, [], {}, "x </s>")
    b.add_edge(right, [], {"f": 1.0}, "<s> y")
    b.add_edge(right, [], {}, "<s> z")
    b.add_edge(goal, [left, right], {}, "<s> [1] [2] </s>")
    return b.build(goal)


def test_every_consumer_scores_the_same_words():
    hg = _forest_with_inner_markers()
    metric = BleuMetric(tokenize="none")
    tuning_set = TuningSet([hg], [["x y"]], metric)
    w = Weights({"f": 1.0}).vector(tuning_set.feature_space)
    expected = metric.stats("x y", ["x y"])  # what is left of "<s> x </s> <s> y </s>"
    assert expected.tolist() == [2, 2, 1, 1, 0, 0, 0, 0, 2]
    # the tuning set's statistics of the model-best (MERT, MIRA's and every tuner's score)
    np.testing.assert_array_equal(ModelBest(tuning_set).stats(w), [expected])  # one row per sentence
    # hope/fear search: the model-best, and the hope under BLEU+1
    decoder = HopeFearDecoder(tuning_set)
    np.testing.assert_array_equal(decoder.model_best_stats(0, w), expected)
    found = decoder.hope_fear(0, w, Gain("bleu+1"))
    assert tuning_set.vocabulary.words(found.hope.words) == ["x", "y"]
    np.testing.assert_array_equal(found.hope.stats, expected)
    # train's candidates: the graph's derivations as a k-best list
    _, stats = as_kbest_lists(tuning_set, w, 2)
    assert sorted(map(tuple, stats[0][1:].tolist())) == sorted(
        [tuple(expected.tolist()), tuple(metric.stats("x z", ["x y"]).tolist())]
    )
    # the oracles: the partial search, enumeration, linear BLEU over the n-gram split
    for method in ("partial", "exact", "linear"):
        search = OracleSearch(method=method, linear_p=0.5, linear_r=0.5)
        oracle = search.run(tuning_set, Weights({"f": 1.0})).oracles[0]
        assert oracle.words == ["x", "y"], method
        np.testing.assert_array_equal(oracle.stats, expected)
