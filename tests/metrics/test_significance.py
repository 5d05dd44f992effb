"""Confidence intervals and significance tests (issue #31): approximate randomization against the exact p of all
2^n shuffles (sacrebleu's BLEU, and exact fractions for given scores), the (c + 1)/(N + 1) rule hand-worked;
bootstrap intervals and paired bootstrap p-values against a direct implementation on the library's own resample
indices (sacrebleu on the resampled lines, percentiles interpolated here); TER's direction; several runs against
MultEval's definitions computed by hand."""

from __future__ import annotations

import itertools
import math
import statistics
from fractions import Fraction

import numpy as np
import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, TER

from hypertune.metrics import BleuMetric, GivenScore, TerMetric
from hypertune.metrics.significance import (
    BLOCK,
    BLOCK_ELEMENTS,
    approximate_randomization,
    block_rows,
    bootstrap_scores,
    compare_systems,
    confidence_interval,
    paired_bootstrap_p,
    resample_counts,
    resample_indices,
)

REFS = [
    "the cat sat on the mat today",
    "a dog barked at the old postman",
    "we will meet again in the spring",
    "she reads a book every night before bed",
    "the train to the city leaves at noon",
    "my brother plays the guitar very well",
    "it rained all day in the small town",
    "they built a house near the river",
    "the children ran across the green field",
    "he forgot his keys at the office again",
]
SYS_A = [
    "the cat sat on a mat today",
    "a dog barked at an old postman",
    "we meet again in spring",
    "she reads one book each night before bed",
    "the train to city leaves at noon",
    "my brother plays guitar very well",
    "it rained all the day in a small town",
    "they built the house near a river",
    "children ran across the green field",
    "he forgot the keys in the office again",
]
SYS_B = [
    "the cat sat on the mat today",
    "a dog barked at old postman",
    "we will meet again in the spring",
    "she reads a book each night before the bed",
    "the train for the city leaves at noon",
    "my brother plays the guitar well",
    "it rained the whole day in the small town",
    "they built a house close to the river",
    "the children ran over the green field",
    "he forgot his keys at office again",
]


def sacrebleu_stats(hyps: list[str], refs: list[str]) -> np.ndarray:
    """sacrebleu's own per-sentence BLEU statistics (13a), one row per sentence."""
    return np.asarray(BLEU()._extract_corpus_statistics(hyps, [refs]), dtype=np.int64)


def sacrebleu_score(stats: np.ndarray) -> float:
    """sacrebleu's corpus BLEU (exp smoothing) of summed statistics, 0-1."""
    return BLEU()._compute_score_from_stats([int(x) for x in stats]).score / 100


def linear_quantile(values: list[float], q: float) -> float:
    """The q-quantile interpolated between order statistics (Hyndman & Fan's type 7), written out."""
    ordered = sorted(values)
    h = (len(ordered) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


@pytest.fixture(scope="module")
def bleu() -> BleuMetric:
    return BleuMetric(smooth="exp")


# ---------------------------------------------------------------------- approximate randomization
def test_randomization_matches_the_exact_p_of_every_shuffle_with_sacrebleu(bleu):
    n = len(REFS)
    a, b = sacrebleu_stats(SYS_A, REFS), sacrebleu_stats(SYS_B, REFS)
    observed = abs(sacrebleu_score(b.sum(0)) - sacrebleu_score(a.sum(0)))
    hits = 0
    for mask in itertools.product((False, True), repeat=n):  # all 2^n shuffles, brute force
        swap = np.asarray(mask)
        shuffled_a = np.where(swap[:, None], b, a).sum(0)
        shuffled_b = np.where(swap[:, None], a, b).sum(0)
        hits += abs(sacrebleu_score(shuffled_b) - sacrebleu_score(shuffled_a)) >= observed - 1e-12
    exact = hits / 2**n
    assert 0.05 < exact < 0.95  # a test that can tell
    trials = 20000
    ours_a, ours_b = bleu.corpus_stats(SYS_A, [[r] for r in REFS]), bleu.corpus_stats(SYS_B, [[r] for r in REFS])
    p, c = approximate_randomization(bleu.score, ours_a, ours_b, trials, seed=3)
    assert p == (c + 1) / (trials + 1)
    standard_error = math.sqrt(exact * (1 - exact) / trials)
    assert abs(p - exact) < 4 * standard_error + 1 / trials


def _exact_mean_p(a: list[str], b: list[str]) -> Fraction:
    """The exact p of all shuffles of given scores whose corpus value is the mean, in exact fractions."""
    fa, fb = [Fraction(x) for x in a], [Fraction(x) for x in b]
    n = len(fa)
    observed = abs(sum(fb) - sum(fa)) / n
    hits = 0
    for mask in itertools.product((False, True), repeat=n):
        sa = sum(y if m else x for x, y, m in zip(fa, fb, mask, strict=True))
        sb = sum(x if m else y for x, y, m in zip(fa, fb, mask, strict=True))
        hits += abs(sb - sa) / n >= observed
    return Fraction(hits, 2**n)


def given(values: list[str]) -> np.ndarray:
    return GivenScore("q").stats_from_given(np.asarray([float(v) for v in values])[:, None])


def test_randomization_counts_ties_of_float_sums_as_ties():
    # decimals that binary floats do not hold: swapping every sentence gives -Δ exactly in fractions, but the
    # float sums differ in the last bits; the exact p counts it, and so must the test
    a = ["0.1", "0.7", "0.2", "0.3", "0.05", "0.6", "0.15", "0.35", "0.45"]
    b = ["0.3", "0.1", "0.6", "0.7", "0.25", "0.2", "0.55", "0.15", "0.65"]
    exact = float(_exact_mean_p(a, b))
    trials = 20000
    p, _ = approximate_randomization(GivenScore("q").score, given(a), given(b), trials, seed=1)
    assert abs(p - exact) < 4 * math.sqrt(exact * (1 - exact) / trials) + 1 / trials


def test_plus_one_rule_hand_worked():
    score = GivenScore("q").score
    # identical systems: every shuffle's |Δ| = 0 reaches the observed 0, c = N and p = (N + 1)/(N + 1) = 1
    p, c = approximate_randomization(score, given(["0.2", "0.9"]), given(["0.2", "0.9"]), 37, seed=0)
    assert (p, c) == (1.0, 37)
    # one sentence, 0 against 1: a swap gives |Δ| = 1 as well, so again c = N
    assert approximate_randomization(score, given(["0"]), given(["1"]), 5, seed=0) == (1.0, 5)
    # three sentences, 0 0 0 against 1 1 1: |Δ| = |unswapped - swapped|/3 reaches 1 only when none or all swap,
    # 2 of the 8 shuffles: c ~ N/4, and p = (c + 1)/(N + 1) exactly
    trials = 4000
    p, c = approximate_randomization(score, given(["0"] * 3), given(["1"] * 3), trials, seed=0)
    assert p == (c + 1) / (trials + 1)
    assert abs(c / trials - 0.25) < 4 * math.sqrt(0.25 * 0.75 / trials)


# ---------------------------------------------------------------------- bootstrap
def test_resamples_depend_on_the_seed_alone():
    first = np.vstack(list(resample_indices(7, 2500, seed=11)))
    assert first.shape == (2500, 7) and first.min() >= 0 and first.max() < 7
    assert [len(b) for b in resample_indices(7, 2500, seed=11)] == [BLOCK, BLOCK, 500]
    np.testing.assert_array_equal(first, np.vstack(list(resample_indices(7, 2500, seed=11))))
    assert not np.array_equal(first, np.vstack(list(resample_indices(7, 2500, seed=12))))
    counts = resample_counts(first[:3], 7)
    for row, indices in zip(counts, first[:3], strict=True):
        assert row.tolist() == [list(indices).count(i) for i in range(7)]


def test_bootstrap_interval_matches_sacrebleu_on_the_resampled_lines(bleu):
    samples, seed = 120, 5
    refs = [[r] for r in REFS]
    systems = [bleu.corpus_stats(SYS_A, refs), bleu.corpus_stats(SYS_B, refs)]
    ours = bootstrap_scores(bleu.score, systems, samples, seed)
    indices = np.vstack(list(resample_indices(len(REFS), samples, seed)))
    direct = {}
    for name, hyps in (("a", SYS_A), ("b", SYS_B)):
        direct[name] = [
            sacrebleu.corpus_bleu([hyps[i] for i in row], [[REFS[i] for i in row]]).score / 100 for row in indices
        ]
    np.testing.assert_allclose(ours, [direct["a"], direct["b"]], rtol=1e-12, atol=1e-12)
    low, high = confidence_interval(ours[1], 0.9)
    assert low == pytest.approx(linear_quantile(direct["b"], 0.05), abs=1e-12)
    assert high == pytest.approx(linear_quantile(direct["b"], 0.95), abs=1e-12)
    not_better = sum(vb <= va for va, vb in zip(direct["a"], direct["b"], strict=True)) / samples
    assert paired_bootstrap_p(ours[1], ours[0]) == not_better
    reverse = sum(va <= vb for va, vb in zip(direct["a"], direct["b"], strict=True)) / samples
    assert paired_bootstrap_p(ours[0], ours[1]) == reverse


def test_paired_bootstrap_with_ter_counts_a_higher_error_as_not_better():
    samples, seed = 400, 2
    metric = TerMetric()
    refs = [[r] for r in REFS]
    a, b = metric.corpus_stats(SYS_A, refs), metric.corpus_stats(SYS_B, refs)
    ours = bootstrap_scores(metric.score, [a, b], samples, seed)
    ta = np.asarray(TER()._extract_corpus_statistics(SYS_A, [REFS]))
    tb = np.asarray(TER()._extract_corpus_statistics(SYS_B, [REFS]))
    counts = np.vstack([resample_counts(block, len(REFS)) for block in resample_indices(len(REFS), samples, seed)])
    direct_a = [TER()._compute_score_from_stats(list(c @ ta)).score / 100 for c in counts]
    direct_b = [TER()._compute_score_from_stats(list(c @ tb)).score / 100 for c in counts]
    np.testing.assert_allclose(ours, [direct_a, direct_b], rtol=1e-12, atol=1e-12)
    # B has the lower TER: it beats A when its error is strictly lower
    expected = sum(eb >= ea for ea, eb in zip(direct_a, direct_b, strict=True)) / samples
    p = compare_systems(metric.score, [a, b], metric.higher_is_better, samples, 50, seed=seed)[1].p_boot
    assert p == expected < 0.5


@pytest.mark.parametrize("sentences", [40, 3000])
def test_many_blocks_of_resamples_of_given_scores(sentences):
    rng = np.random.default_rng(0)
    values = rng.normal(size=sentences)
    samples, seed = 2 * block_rows(sentences) + 300, 9
    assert block_rows(sentences) == (BLOCK if sentences == 40 else BLOCK_ELEMENTS // sentences)  # 8 MB blocks
    ours = bootstrap_scores(GivenScore("q").score, [given([str(float(v)) for v in values])], samples, seed)[0]
    indices = np.vstack(list(resample_indices(sentences, samples, seed)))
    assert indices.shape == (samples, sentences)
    np.testing.assert_allclose(ours, values[indices].mean(axis=1), rtol=1e-12, atol=1e-14)


# ---------------------------------------------------------------------- several runs (MultEval)
def test_runs_mean_sd_bootstrap_and_randomization_over_the_concatenation():
    metric = GivenScore("q")
    base_runs = [["0.21", "0.43", "0.65"], ["0.52", "0.71", "0.89"]]  # run means 0.43 and 0.706666...
    new_runs = [["0.33", "0.97", "0.61"], ["0.83", "0.59", "0.74"]]  # run means 0.636666... and 0.72
    base = np.stack([given(r) for r in base_runs])
    new = np.stack([given(r) for r in new_runs])
    samples, trials, seed = 300, 20000, 4
    reports = compare_systems(metric.score, [base, new], True, samples, trials, seed=seed)
    assert reports[0].run_scores == pytest.approx((0.43, 2.12 / 3), abs=1e-12)
    assert reports[0].score == pytest.approx((0.43 + 2.12 / 3) / 2, abs=1e-12)
    assert reports[0].sd == pytest.approx(abs(0.43 - 2.12 / 3) / math.sqrt(2), abs=1e-12)  # two runs: |x - y|/√2
    assert reports[1].score == pytest.approx((1.91 / 3 + 0.72) / 2, abs=1e-12)
    assert reports[1].sd == pytest.approx(statistics.stdev([1.91 / 3, 0.72]), abs=1e-12)
    assert reports[0].p_ar is None and reports[0].p_boot is None
    # bootstrap: the same sentence indices in both runs, the mean of the runs' scores
    indices = np.vstack(list(resample_indices(3, samples, seed)))
    direct_new = [np.mean([np.mean([float(run[i]) for i in row]) for run in new_runs]) for row in indices]
    assert reports[1].ci_low == pytest.approx(linear_quantile(direct_new, 0.025), abs=1e-12)
    assert reports[1].ci_high == pytest.approx(linear_quantile(direct_new, 0.975), abs=1e-12)
    exactly = [[sum(sum(Fraction(run[i]) for i in row) / 3 for run in runs) / 2 for row in indices]
               for runs in (base_runs, new_runs)]  # fmt: skip
    assert all(b != n for b, n in zip(*exactly, strict=True))  # no ties that float sums could break either way
    assert reports[1].p_boot == sum(n < b for b, n in zip(*exactly, strict=True)) / samples
    # randomization over the six sentences of the concatenated runs, run i paired with run i
    exact = float(_exact_mean_p(sum(base_runs, []), sum(new_runs, [])))
    assert abs(reports[1].p_ar - exact) < 4 * math.sqrt(exact * (1 - exact) / trials) + 1 / trials


def test_same_seed_same_numbers(bleu):
    refs = [[r] for r in REFS]
    systems = [bleu.corpus_stats(SYS_A, refs), bleu.corpus_stats(SYS_B, refs)]
    one = compare_systems(bleu.score, systems, True, 200, 300, seed=1)
    assert one == compare_systems(bleu.score, systems, True, 200, 300, seed=1)
    other = compare_systems(bleu.score, systems, True, 200, 300, seed=2)
    assert one[0].score == other[0].score
    assert (one[0].ci_low, one[0].ci_high) != (other[0].ci_low, other[0].ci_high)
