"""Sentence gains (hypertune/metrics/gains.py): the registry is choices.GAINS; each gain against a hand-worked
example and against its metric's own sentence scoring (sacrebleu's add-k BLEU for BLEU+1, BleuMetric's Moses
smoothing, BackgroundBleu, LinearBleu) on random statistics; the compiled dispatch the searches call against
Python's scoring; the background gain's distinct-values form (batch MIRA) against its kernel."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sacrebleu

from hypertune import choices
from hypertune.errors import UsageError
from hypertune.metrics import BackgroundBleu, BleuMetric, LinearBleu
from hypertune.metrics.background import SCALE_MOSES, background_bleu_distinct, background_bleu_rows
from hypertune.metrics.gains import (
    GAINS,
    SMOOTHED_GAINS,
    Gain,
    gain_rows,
    register_gain,
    sentence_gains,
    smoothed_gain,
)

# "the cat sat on a mat" against "the cat sat on the mat", counted by hand: unigrams 5 of 6 match ("a" does
# not), bigrams 3 of 5 (the cat, cat sat, sat on), trigrams 2 of 4, 4-grams 1 of 3; reference length 6.
HYP, REF = "the cat sat on a mat", "the cat sat on the mat"
ROW = np.array([5, 6, 3, 5, 2, 4, 1, 3, 6], dtype=float)


def _random_stats(rng: np.random.Generator, rows: int, integral: bool = True) -> np.ndarray:
    """BLEU statistics rows: counts ``c_n`` falling with ``n``, matches ``m_n <= c_n``, a reference length."""
    length = rng.integers(0, 30, size=rows).astype(float)
    stats = np.empty((rows, 9))
    for n in range(4):
        count = np.maximum(length - n, 0.0)
        stats[:, 2 * n + 1] = count
        stats[:, 2 * n] = np.floor(count * rng.random(rows))
    stats[:, 8] = rng.integers(1, 35, size=rows)
    if not integral:  # averaged statistics (a pseudo-corpus, expectations)
        stats *= rng.uniform(0.3, 2.0, size=(rows, 1))
    return stats


def test_the_registry_is_the_choices():
    assert tuple(GAINS) == choices.GAINS
    assert [entry.code for entry in GAINS.values()] == list(range(len(choices.GAINS)))
    assert tuple(SMOOTHED_GAINS) == choices.GAIN_SMOOTHINGS and set(SMOOTHED_GAINS.values()) <= set(GAINS)
    assert [smoothed_gain(s) for s in choices.GAIN_SMOOTHINGS] == ["bleu+1", "moses", "nakov"]
    with pytest.raises(UsageError, match="^unknown gain smoothing 'plus2'; choose one of plus1, moses, nakov$"):
        smoothed_gain("plus2")
    with pytest.raises(UsageError, match="^unknown gain 'bleu'; choose one of background, bleu"):
        Gain("bleu")
    with pytest.raises(UsageError, match="linear gain needs a LinearBleu"):
        Gain("linear")


def test_each_gain_by_hand():
    assert BleuMetric(tokenize="none").stats(HYP, [REF]).tolist() == ROW.tolist()
    # BLEU+1 (Lin & Och 2004): unigrams as they are, orders 2-4 plus one: 5/6, 4/6, 3/5, 2/4; no brevity penalty
    assert Gain("bleu+1").score(ROW) == pytest.approx((5 / 6 * 4 / 6 * 3 / 5 * 2 / 4) ** 0.25, rel=1e-14)
    # Moses: plus one on every order, 6/7, 4/6, 3/5, 2/4 = 6/35; Nakov: reference length 7 > 6, BP exp(1 - 7/6)
    assert Gain("moses").score(ROW) == pytest.approx((6 / 35) ** 0.25, rel=1e-14)
    assert Gain("nakov").score(ROW) == pytest.approx(math.exp(-1 / 6) * (6 / 35) ** 0.25, rel=1e-14)
    # background of ones: (m + 1) / (c + 1) as Moses's, lengths 7 and 7 (no BP), times the reference length 7
    assert Gain("background").score(ROW) == pytest.approx(7 * (6 / 35) ** 0.25, rel=1e-14)
    # linear, p = r = 1/2: theta = -1, 1/2, 1, 2, 4, so -6 + 5/2 + 3 + 4 + 4
    linear = LinearBleu(0.5, 0.5, 1.0, BleuMetric(tokenize="none"))
    assert Gain("linear", linear=linear).score(ROW) == pytest.approx(7.5, rel=1e-14)
    # a hypothesis without a unigram match gets no BLEU+1; an empty one nothing under Moses's smoothing either
    assert Gain("bleu+1").score(np.array([0, 3, 0, 2, 0, 1, 0, 0, 4.0])) == 0.0
    assert Gain("moses").score(np.array([0, 0, 0, 0, 0, 0, 0, 0, 4.0])) == 0.0


def test_bleu_plus_one_is_sacrebleus_add_one_sentence_bleu():
    """BLEU+1 is sacrebleu's sentence BLEU with add-k smoothing, k = 1, on all four orders (Chen & Cherry's
    method 2 generalizes Lin & Och), from the sentences themselves."""
    rng = np.random.default_rng(11)
    words = "a b c d e f".split()
    metric = BleuMetric(tokenize="none")
    gain = Gain("bleu+1")
    for _ in range(200):
        hyp = " ".join(rng.choice(words, size=rng.integers(1, 9)))
        refs = [" ".join(rng.choice(words, size=rng.integers(1, 9))) for _ in range(rng.integers(1, 3))]
        expected = sacrebleu.sentence_bleu(
            hyp, refs, smooth_method="add-k", smooth_value=1, tokenize="none", use_effective_order=False
        ).score
        assert gain.score(metric.stats(hyp, refs)) == pytest.approx(expected / 100, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("integral", [True, False])
def test_each_gain_is_its_metrics_sentence_score(integral):
    rng = np.random.default_rng(12 + integral)
    stats = _random_stats(rng, 400, integral)
    for smooth in ("moses", "nakov"):  # BleuMetric's own Moses smoothing, bit for bit
        np.testing.assert_array_equal(Gain(smooth).score(stats), BleuMetric(smooth=smooth).score(stats))
    np.testing.assert_allclose(Gain("bleu+1").score(stats), BleuMetric(smooth="plus1").score(stats), rtol=1e-12)
    linear = LinearBleu(0.6, 0.7, 2.0, BleuMetric(tokenize="none", clip=False))
    np.testing.assert_allclose(Gain("linear", linear=linear).score(stats), linear.score(stats), rtol=1e-12, atol=1e-12)
    background = BackgroundBleu(4, 0.9, scale="moses", initial=0.5, update="kbmira")
    gain = Gain("background", decay=0.9, initial=0.5)
    for row in stats[:20]:  # the gain's state follows kbmira's update, as BackgroundBleu's
        np.testing.assert_array_equal(gain.score(stats), background.score(stats))
        gain.update(row)
        background.update(row)
    # and by hand: BLEU of O + s times the pseudo-corpus reference length
    total = stats[0] + gain.background
    p = total[0:8:2] / total[1:8:2]
    by_hand = math.exp(np.log(p).mean() + min(0.0, 1 - total[8] / total[1])) * total[8] if p.min() > 0 else 0.0
    assert gain.score(stats[0]) == pytest.approx(by_hand, rel=1e-12)


def test_the_compiled_dispatch_is_each_kernel_and_pythons_scoring():
    """``gain_rows`` (the forest search's ``gain_value`` per row) is each entry's own kernel called row by row
    (a code without its branch would give NaN), and ``Gain.score``: bit for bit where Python calls the kernel,
    to rounding for moses and nakov (Python: the metric's vectorised formula)."""
    rng = np.random.default_rng(13)
    stats = _random_stats(rng, 300, integral=False)
    linear = LinearBleu(0.4, 0.8, 1.0, BleuMetric(tokenize="none"))
    for name, entry in GAINS.items():
        gain = Gain(name, decay=0.5, initial=0.3, linear=linear if name == "linear" else None)
        compiled = gain_rows(entry.code, stats, 4, gain.background, gain.theta)
        by_kernel = [entry.kernel(row, 4, gain.background, gain.theta) for row in stats]
        np.testing.assert_array_equal(compiled, by_kernel)
        if entry.rows is None:
            np.testing.assert_array_equal(compiled, gain.score(stats))
        else:
            np.testing.assert_allclose(compiled, gain.score(stats), rtol=1e-13)
        assert gain.score(stats[3]) == gain.score(stats)[3] and gain.compiled
    assert np.isnan(gain_rows(len(GAINS), stats[:1], 4, np.ones(9), np.zeros(5))[0])
    np.testing.assert_array_equal(sentence_gains(stats, 4, "bleu+1"), Gain("bleu+1").score(stats))
    with pytest.raises(ValueError, match="registered already"):
        register_gain("moses", "again", rows=lambda s, n: s[:, 0])
    with pytest.raises(ValueError, match="needs rows or a kernel"):
        register_gain("nothing", "no way to score")


def test_the_gain_of_a_copy_is_independent():
    gain = Gain("background", decay=0.99, initial=0.5)
    twin = gain.copy()
    gain.update(np.ones(9))
    assert twin.background.tolist() == [0.5] * 9 and gain.background.tolist() == [0.99 * 0.5 + 1] * 9
    assert gain.decay == 0.99 and gain.rule().code == GAINS["background"].code
    before = Gain("moses").score(ROW)
    plain = Gain("moses")
    plain.update(ROW)  # the stateless gains ignore updates
    assert plain.score(ROW) == before


def test_background_over_distinct_values_is_the_kernel():
    """Batch MIRA's form of the background gain (logs taken once per distinct value of a column) gives the
    kernel's values bit for bit, non-positive pseudo-counts included."""
    from hypertune.tuners.mira import DistinctStats

    rng = np.random.default_rng(14)
    sentences = [np.unique(_random_stats(rng, 12)[:, :] // 2, axis=0) for _ in range(5)]
    group_stats = np.vstack(sentences)
    group_offsets = np.concatenate(([0], np.cumsum([s.shape[0] for s in sentences]))).astype(np.int64)
    value_ids = np.empty(group_stats.shape, dtype=np.int64)
    values, columns, value_offsets = [], [], [0]
    for s in range(len(sentences)):  # each column's distinct values of the sentence's rows
        block = group_stats[group_offsets[s] : group_offsets[s + 1]]
        for j in range(9):
            distinct, inverse = np.unique(block[:, j], return_inverse=True)
            value_ids[group_offsets[s] : group_offsets[s + 1], j] = len(values) + inverse.ravel()
            values.extend(distinct)
            columns.extend([j] * distinct.size)
        value_offsets.append(len(values))
    table = DistinctStats(
        np.zeros(0, dtype=np.int64), group_offsets, group_stats, value_ids, np.asarray(values),
        np.asarray(columns, dtype=np.int64), np.asarray(value_offsets, dtype=np.int64),
    )  # fmt: skip
    for background in (np.full(9, 1.0), np.linspace(-0.5, 3.0, 9), np.zeros(9)):
        out = np.empty(group_stats.shape[0])
        logs, nonpositive = np.empty(len(values)), np.empty(len(values), dtype=bool)
        for s in range(len(sentences)):
            background_bleu_distinct(s, table, background, 4, logs, nonpositive, out)
        np.testing.assert_array_equal(out, background_bleu_rows(group_stats, background, 4, SCALE_MOSES, 0.0))
        gain = Gain("background")
        gain.background = background
        np.testing.assert_array_equal(out, gain.score(group_stats))
