"""Background BLEU, linear BLEU, chrF / TER through sacrebleu, interpolation, the registry, speed."""

from __future__ import annotations

import numpy as np
import pytest
import sacrebleu

from hypertune.errors import UsageError
from hypertune.metrics import (
    METRICS,
    BackgroundBleu,
    BleuMetric,
    ChrfMetric,
    InterpolatedMetric,
    LinearBleu,
    TerMetric,
    bleu_score,
    estimate_precisions,
    get_metric,
    linear_bleu_weights,
    parse_metric,
    transpose_references,
)
from hypertune.metrics.background import SCALES, UPDATES, background_bleu
from hypertune.symbols import Vocabulary

HYPS = ["The cat sat on the mat.", "A dog ran in the park today", "hello world", ""]
REFS = [
    ["The cat sat on a mat.", "A cat was sitting on the mat."],
    ["The dog ran in the park today.", "Today a dog was running in the park."],
    ["Hello, world!", "hello there world"],
    ["nothing", "still nothing"],
]
STREAMS = [list(r) for r in zip(*REFS, strict=True)]


def test_background_bleu_moses_and_chiang_scaling() -> None:
    sent = np.array([6, 6, 4, 5, 2, 4, 1, 3, 7], dtype=float)
    background = np.array([50, 60, 30, 55, 15, 50, 8, 45, 65], dtype=float)
    moses = BackgroundBleu(scale="moses", initial=0.0)
    moses.background = background.copy()
    total = background + sent
    assert moses.score(sent) == pytest.approx(bleu_score(total) * total[-1], rel=1e-12)
    chiang = BackgroundBleu(scale="chiang", initial=0.0, initial_source_length=40.0)
    chiang.background = background.copy()
    assert chiang.score(sent, source_length=5) == pytest.approx(bleu_score(total) * 45.0, rel=1e-12)
    plain = BackgroundBleu(scale="none", initial=0.0)
    plain.background = background.copy()
    assert plain.score(np.stack([sent, sent]))[1] == pytest.approx(bleu_score(total))
    with pytest.raises(UsageError):
        chiang.score(sent)


def test_background_update_decays() -> None:
    bg = BackgroundBleu(decay=0.9, initial=1.0, scale="chiang")
    stats = np.arange(9, dtype=float)
    bg.update(stats, source_length=10)
    np.testing.assert_allclose(bg.background, 0.9 * (1.0 + stats))
    assert bg.source_length == pytest.approx(9.0)
    bg.update(stats, source_length=10)
    np.testing.assert_allclose(bg.background, 0.9 * (0.9 * (1.0 + stats) + stats))
    kbmira = BackgroundBleu(decay=0.5, initial=1.0, scale="moses", initial_source_length=4.0, update="kbmira")
    kbmira.update(stats, source_length=10)
    np.testing.assert_allclose(kbmira.background, 0.5 + stats)
    assert kbmira.source_length == pytest.approx(12.0)
    with pytest.raises(UsageError):
        BackgroundBleu(scale="bogus")
    with pytest.raises(UsageError):
        BackgroundBleu(update="bogus")
    with pytest.raises(UsageError):
        bg.update(np.stack([stats, stats]))


def _random_bleu_stats(rng: np.random.Generator, rows: int, order: int = 4) -> np.ndarray:
    """Realistic BLEU statistics: ``c_n = max(0, len - n + 1)``, ``m_n <= c_n``, empty hypotheses included."""
    length = rng.integers(0, 20, size=rows)
    stats = np.zeros((rows, 2 * order + 1))
    for n in range(order):
        counts = np.maximum(length - n, 0)
        stats[:, 2 * n + 1] = counts
        stats[:, 2 * n] = rng.integers(0, counts + 1)
    stats[:, 2 * order] = rng.integers(1, 25, size=rows)
    return stats


def _brute_background_bleu(rows: np.ndarray, background: np.ndarray, factor: str, length: float) -> np.ndarray:
    """Plain BLEU of ``O + s`` row by row (Papineni et al. 2002: ``BP * (prod_n p_n)^(1/N)``), 0 when a
    pseudo-count is not positive, times the scale."""
    order = (rows.shape[1] - 1) // 2
    out = np.zeros(len(rows))
    for i, row in enumerate(rows + background):
        m, c, hyp, ref = row[0 : 2 * order : 2], row[1 : 2 * order : 2], row[1], row[2 * order]
        if (m <= 0).any() or (c <= 0).any():
            continue
        bleu = np.prod(m / c) ** (1.0 / order) * min(1.0, np.exp(1.0 - ref / hyp))
        out[i] = bleu * {"moses": ref, "chiang": length, "none": 1.0}[factor]
    return out


@pytest.mark.parametrize("update", UPDATES)
@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("initial", [0.0, 0.1, 1.0])
def test_background_bleu_against_brute_force(scale: str, update: str, initial: float) -> None:
    """Both update rules and every scale over a run of sentences: the compiled kernel and a brute-force
    BLEU agree; the background and source length follow the rule exactly."""
    rng = np.random.default_rng(len(scale) + 10 * len(update) + int(100 * initial))
    decay = 0.9
    bg = BackgroundBleu(4, decay, scale=scale, initial=initial, initial_source_length=2.0, update=update)
    background, source = np.full(9, initial), 2.0
    for _ in range(25):
        rows = _random_bleu_stats(rng, 30)
        f = float(rng.integers(1, 40))
        expected = _brute_background_bleu(rows, background, scale, source + f)
        compiled = bg.score(rows, source_length=f)
        np.testing.assert_allclose(compiled, expected, rtol=1e-12, atol=0)
        kernel = [background_bleu(row, bg.background, 4, bg.scale_code, source + f) for row in rows]
        np.testing.assert_array_equal(compiled, kernel)
        assert bg.score(rows[3], source_length=f) == compiled[3]
        chosen = rows[int(np.argmax(expected))]
        bg.update(chosen, source_length=f)
        if update == "chiang":
            background, source = decay * (background + chosen), decay * (source + f)
        else:
            background, source = decay * background + chosen, decay * source + f
        np.testing.assert_array_equal(bg.background, background)
        assert bg.source_length == source


def test_background_bleu_state_is_owned() -> None:
    """Setting the background copies it; copies are independent; non-positive pseudo-counts score 0."""
    values = np.linspace(-0.5, 3.0, 9)
    bg = BackgroundBleu(scale="moses", update="kbmira")
    bg.background = values
    twin = bg.copy()
    bg.update(np.ones(9))
    np.testing.assert_array_equal(values, np.linspace(-0.5, 3.0, 9))
    np.testing.assert_array_equal(twin.background, values)
    stats = np.zeros(9)
    assert twin.score(stats) == 0.0
    with pytest.raises(UsageError):
        BackgroundBleu(scale="chiang").score(stats)


def test_background_bleu_is_defined_for_a_first_sentence_without_matches() -> None:
    bg = BackgroundBleu(scale="moses")  # Moses starts its background at ones
    zero_matches = np.array([0, 3, 0, 2, 0, 1, 0, 0, 4], dtype=float)
    assert bg.score(zero_matches) > 0


def test_linear_bleu_weights_and_score() -> None:
    theta = linear_bleu_weights(0.8, 0.5, 4, scale=2.0)
    np.testing.assert_allclose(
        theta, [-0.5, 1 / (4 * 2 * 0.8), 1 / (4 * 2 * 0.8 * 0.5), 1 / (4 * 2 * 0.8 * 0.25), 1 / (4 * 2 * 0.8 * 0.125)]
    )
    metric = LinearBleu(0.8, 0.5, scale=2.0)
    stats = np.array([[6, 6, 4, 5, 2, 4, 1, 3, 7], [1, 2, 0, 1, 0, 0, 0, 0, 3]], dtype=float)
    expected = theta[0] * stats[:, 1] + stats[:, [0, 2, 4, 6]] @ theta[1:]
    np.testing.assert_allclose(metric.score(stats), expected)
    # linear: the score of the sum is the sum of the scores
    assert metric.score(stats.sum(axis=0)) == pytest.approx(metric.score(stats).sum())


def test_linear_bleu_from_corpus_stats() -> None:
    stats = np.array([[80, 100, 40, 90, 20, 80, 10, 70, 100]], dtype=float)
    p, r = estimate_precisions(stats)
    assert p == pytest.approx(0.8)
    assert r == pytest.approx(((10 / 70) / 0.8) ** (1 / 3))
    metric = LinearBleu.from_stats(stats)
    assert (metric.p, metric.r) == pytest.approx((p, r))
    better = metric.stats("the cat sat on the mat", ["the cat sat on the mat"])
    worse = metric.stats("the dog sat on a rug", ["the cat sat on the mat"])
    assert metric.score(better) > metric.score(worse)


@pytest.mark.parametrize(
    ("metric", "reference"),
    [
        (ChrfMetric(), sacrebleu.metrics.CHRF()),
        (ChrfMetric(word_order=2), sacrebleu.metrics.CHRF(word_order=2)),
        (ChrfMetric(lowercase=True), sacrebleu.metrics.CHRF(lowercase=True)),
        (TerMetric(), sacrebleu.metrics.TER()),
        (TerMetric(case_sensitive=True), sacrebleu.metrics.TER(case_sensitive=True)),
    ],
)
def test_sacrebleu_metrics_corpus_equality(metric, reference) -> None:
    stats = metric.corpus_stats(HYPS, REFS)
    expected = reference.corpus_score(HYPS, STREAMS).score
    assert 100 * metric.score(stats.sum(axis=0)) == pytest.approx(expected, abs=1e-9)
    # sentence scores, vectorized
    rows = metric.score(stats)
    for hyp, refs, value in zip(HYPS, REFS, rows, strict=True):
        assert 100 * value == pytest.approx(reference.sentence_score(hyp, refs).score, abs=1e-9)


def test_sacrebleu_metrics_accept_word_ids() -> None:
    vocab = Vocabulary()
    ter = TerMetric(vocabulary=vocab)
    ids = vocab.indices("a dog ran in the park".split())
    refs = ["the dog ran in the park"]
    assert ter.stats(ids, refs).tolist() == ter.stats("a dog ran in the park", refs).tolist()
    assert not ter.higher_is_better and ChrfMetric().higher_is_better


def test_interpolated_metric() -> None:
    bleu, ter = BleuMetric(smooth="plus1"), TerMetric()
    both = InterpolatedMetric([bleu, ter], [0.5, -0.5])
    stats = both.corpus_stats(HYPS, REFS)
    assert stats.shape == (4, bleu.stats_size + ter.stats_size)
    total = stats.sum(axis=0)
    expected = 0.5 * bleu.score(total[:9]) - 0.5 * ter.score(total[9:])
    assert both.score(total) == pytest.approx(expected)
    rows = 0.5 * bleu.score(stats[:, :9]) - 0.5 * ter.score(stats[:, 9:])
    np.testing.assert_allclose(both.score(stats), rows)
    assert both.stats_names[0] == "bleu.m1" and both.stats_names[-1] == "ter.s1"
    parsed = parse_metric("bleu:0.5,ter:-0.5")
    plain = 0.5 * BleuMetric().score(total[:9]) - 0.5 * ter.score(total[9:])
    assert parsed.score(total) == pytest.approx(plain)
    with pytest.raises(UsageError):
        InterpolatedMetric([bleu], [1.0, 2.0])
    with pytest.raises(UsageError):
        parse_metric("bleu:x")


def test_registry() -> None:
    assert set(METRICS) >= {"bleu", "ibm-bleu", "bleu+1", "linear-bleu", "chrf", "chrf++", "ter"}
    assert get_metric("bleu+1").smooth == "plus1"
    assert get_metric("ibm-bleu").ref_length == "ibm"
    assert get_metric("BLEU", max_order=3).stats_size == 7
    assert isinstance(get_metric("linear-bleu", p=0.8, r=0.6), LinearBleu)
    with pytest.raises(UsageError):
        get_metric("meteor")
    with pytest.raises(UsageError):
        get_metric("bleu", colour="blue")


def test_corpus_score_helper_matches_sacrebleu() -> None:
    metric = BleuMetric(smooth="exp")
    assert 100 * metric.corpus_score(HYPS, transpose_references(STREAMS)) == pytest.approx(
        sacrebleu.corpus_bleu(HYPS, STREAMS).score, abs=1e-9
    )


def test_benchmark_small() -> None:
    from hypertune.bench.metrics import benchmark_bleu_stats

    result = benchmark_bleu_stats(n_hypotheses=20_000, seed=1)
    assert result["bleu_stats.n_hypotheses"] == 20_000
    assert 20 < result["bleu_stats.mean_length"] < 30
