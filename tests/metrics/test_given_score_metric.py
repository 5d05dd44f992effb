"""``scores.NAME`` (issue #30): the mean given score of the chosen hypotheses, hand-worked; its (sum, count)
statistics add over sentences; interpolations against the weighted means computed here, and an interpolation's
BLEU against sacrebleu's corpus BLEU of the chosen texts; gains (what MIRA, PRO, PL see) equal the scores; TER's
gain equals minus sacrebleu's sentence TER."""

from __future__ import annotations

import numpy as np
import pytest
import sacrebleu
from support.scored_lists import ScoredLists, random_lists

from hypertune.errors import UsageError
from hypertune.metrics import GivenScore, InterpolatedMetric, TerMetric, parse_metric
from hypertune.metrics.gains import gain_for


def test_corpus_value_is_the_mean_of_the_chosen_scores_hand_worked():
    metric = parse_metric("scores.comet")
    assert isinstance(metric, GivenScore) and metric.higher_is_better and not metric.needs_references
    # three sentences' chosen hypotheses score 0.8, 0.6 and 0.1: the mean is 0.5
    rows = metric.stats_from_given(np.array([[0.8], [0.6], [0.1]]))
    np.testing.assert_array_equal(rows, [[0.8, 1.0], [0.6, 1.0], [0.1, 1.0]])
    assert metric.score(rows.sum(axis=0)) == pytest.approx(0.5, abs=1e-15)
    # row by row: each sentence's own score, as it is (never rescaled)
    np.testing.assert_allclose(metric.score(rows), [0.8, 0.6, 0.1], rtol=0, atol=0)
    assert metric.score(np.array([-3.25, 1.0])) == -3.25
    assert metric.score(np.zeros(2)) == 0.0  # nothing counted


def test_statistics_add_over_sentences():
    metric = GivenScore("qe")
    first = metric.stats_from_given(np.array([[0.25], [-0.5]])).sum(axis=0)  # 2 sentences, sum -0.25
    second = metric.stats_from_given(np.array([[1.0], [0.75], [0.0]])).sum(axis=0)  # 3 sentences, sum 1.75
    np.testing.assert_array_equal(first + second, [1.5, 5.0])
    assert metric.score(first + second) == pytest.approx(1.5 / 5, abs=1e-15)
    assert metric.score(first) == pytest.approx(-0.125, abs=1e-15)


@pytest.mark.parametrize("bad", ["", "a b", "a,b", "a:b", "a=b"])
def test_a_bad_score_name_is_refused_in_one_line(bad):
    with pytest.raises(UsageError) as caught:
        GivenScore(bad)
    assert "bad score name" in str(caught.value) and "\n" not in str(caught.value)


def chosen_total(lists: ScoredLists, tuning_set, w: np.ndarray) -> np.ndarray:
    """The tuning set's statistics of each sentence's model-best hypothesis (chosen here), summed."""
    return sum(tuning_set.edge_stats(s)[1 + i] for s, i in enumerate(lists.chosen(w)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_interpolation_of_two_given_scores_is_the_weighted_mean(seed):
    rng = np.random.default_rng(seed)
    lists = random_lists(rng, sentences=7, names=("a", "b"))
    tuning_set = lists.tuning_set("scores.a:0.7,scores.b:-0.3")
    assert isinstance(tuning_set.metric, InterpolatedMetric)
    assert tuning_set.metric.given_names == ("a", "b")
    w = rng.normal(size=3)
    chosen = lists.chosen(w)
    mean_a = np.mean([scores["a"][i] for scores, i in zip(lists.scores, chosen, strict=True)])
    mean_b = np.mean([scores["b"][i] for scores, i in zip(lists.scores, chosen, strict=True)])
    total = chosen_total(lists, tuning_set, w)
    np.testing.assert_allclose(total, [mean_a * 7, 7, mean_b * 7, 7], rtol=1e-12, atol=1e-12)
    assert tuning_set.score(total) == pytest.approx(0.7 * mean_a - 0.3 * mean_b, rel=1e-12, abs=1e-12)
    # the sentence value (every tuner's gain) of each hypothesis is the same interpolation of its own scores
    for s, scores in enumerate(lists.scores):
        gains = gain_for(tuning_set.metric).score(tuning_set.edge_stats(s)[1:])
        np.testing.assert_allclose(gains, 0.7 * scores["a"] - 0.3 * scores["b"], rtol=1e-12, atol=1e-12)


def test_interpolation_with_bleu_takes_sacrebleu_corpus_bleu_of_the_chosen_texts():
    rng = np.random.default_rng(5)
    words = ["the", "a", "house", "is", "small", "big", "old", "cat"]
    lists = random_lists(rng, sentences=6, hypotheses=(3, 5))
    references = [[" ".join(rng.choice(words, size=int(rng.integers(6, 10))))] for _ in lists.features]

    def edited(reference: str) -> str:  # one word replaced and the last dropped: 4-gram matches remain
        tokens = reference.split()[: -int(rng.integers(1, 3))]
        tokens[int(rng.integers(len(tokens)))] = str(rng.choice(words))
        return " ".join(tokens)

    lists.texts = [[edited(r[0]) for _ in m] for m, r in zip(lists.features, references, strict=True)]
    metric = parse_metric("scores.comet:0.4,bleu:0.6", bleu_options={"tokenize": "none"})
    tuning_set = lists.tuning_set(metric, references)
    w = rng.normal(size=3)
    chosen = lists.chosen(w)
    texts = [lists.texts[s][i] for s, i in enumerate(chosen)]
    plain = sacrebleu.corpus_bleu(texts, [[r[0] for r in references]], tokenize="none", smooth_method="none")
    assert plain.counts[3] > 0  # 4-gram matches: a BLEU that is not 0
    expected_bleu = plain.score / 100
    mean = lists.mean_score(w)
    total = chosen_total(lists, tuning_set, w)
    comet, bleu = metric.components(total)
    assert bleu == pytest.approx(expected_bleu, rel=1e-9, abs=1e-12)
    assert comet == pytest.approx(mean, rel=1e-12, abs=1e-12)
    assert tuning_set.score(total) == pytest.approx(0.4 * mean + 0.6 * expected_bleu, rel=1e-9, abs=1e-12)


def test_the_gain_of_a_given_score_is_the_score_itself():
    metric = GivenScore("x")
    values = np.array([0.853, -1.5, 0.0, 2.25, 1e-9])
    stats = metric.stats_from_given(values[:, None])
    np.testing.assert_array_equal(gain_for(metric).score(stats), values)
    assert gain_for(metric).score(stats[1]) == -1.5
    # whatever BLEU gain a command asks for, a given score's gain is the score
    np.testing.assert_array_equal(gain_for(metric, "background").score(stats), values)
    # and a copy (the corpus oracle's, a shard's) is the same gain
    np.testing.assert_array_equal(gain_for(metric).copy().score(stats), values)


def test_the_gain_of_ter_is_minus_sacrebleus_sentence_ter():
    """TER's statistics are sacrebleu's (edits, reference length); its gain is minus the sentence TER (lower is
    better). The statistics here are sacrebleu's own (tests/tuners/test_given_scores.py takes hypertune's)."""
    hypotheses = ["the house is small", "a big old house", "the cat", "house the small is", "the house is small ."]
    references = ["the house is small", "the old house is big", "a cat sat", "the house is small", "the house"]
    ter = sacrebleu.metrics.TER()
    stats = np.array(ter._extract_corpus_statistics(hypotheses, [references]), dtype=np.float64)
    expected = [-ter.sentence_score(h, [r]).score / 100 for h, r in zip(hypotheses, references, strict=True)]
    gains = gain_for(TerMetric()).score(stats)
    np.testing.assert_allclose(gains, expected, rtol=1e-12, atol=1e-12)
    assert gains[0] == 0.0 and gains[-1] < 0
