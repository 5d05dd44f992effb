"""MIRA's evaluations rescore only the rows that can still be a sentence's model-best (``_kbest_model_stats`` with
the scores it keeps, ``ScoredRows``): the summed statistics of every evaluation equal a brute force that scores
every row in plain Python (each sum in column order, the first highest score winning, as Moses), over weights that
drift slowly (most rows skipped), jump, tie exactly, and are not finite."""

from __future__ import annotations

import numpy as np

from hypertune.tuners.mira import KbestRows, ScoredRows, _kbest_model_stats

EMPTY = np.zeros(0, np.int64)


def _brute_force(features: np.ndarray, stats: np.ndarray, offsets: np.ndarray, w: np.ndarray) -> list[float]:
    total = [0.0] * stats.shape[1]
    for s in range(offsets.size - 1):
        best, best_score = -1, 0.0
        for r in range(int(offsets[s]), int(offsets[s + 1])):
            score = 0.0
            for j in range(features.shape[1]):
                score += float(features[r, j]) * float(w[j])
            if best < 0 or score > best_score:
                best, best_score = r, score
        if best >= 0:
            total = [t + float(x) for t, x in zip(total, stats[best], strict=True)]
    return total


def _evaluations(features, stats, offsets, weights):
    rows = KbestRows(offsets, EMPTY, EMPTY, np.zeros(0), np.ascontiguousarray(features).reshape(-1), stats)
    scored = ScoredRows.start(rows)
    for w in weights:
        scored = scored.evaluating(w)
        yield _kbest_model_stats(rows, w, scored).tolist(), _brute_force(features, stats, offsets, w), scored


def test_slowly_drifting_weights_skip_rows_and_match_the_brute_force():
    """100 lists of 0-299 rows: the model-best rows are chosen 64 lists or 8,192 rows at a time."""
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 300, 100)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    features = rng.normal(0.0, 3.0, (int(offsets[-1]), 6))
    stats = rng.integers(0, 20, (int(offsets[-1]), 3)).astype(np.float64)
    w = rng.normal(0.0, 1.0, 6)
    weights = [w]
    for step in range(12):  # an averaged weight vector's drift: smaller and smaller steps, then one jump
        w = w + rng.normal(0.0, 0.3 / (step + 1), 6)
        weights.append(w)
    weights.append(-w)
    skipped = 0
    for ours, expected, scored in _evaluations(features, stats, offsets, weights):
        assert ours == expected
        skipped += int(np.sum(scored.generation < scored.past.shape[0] - 1))
    assert skipped > 0  # some sentences were evaluated from their kept scores


def test_exact_ties_go_to_the_first_row():
    """Integer features and weights: many rows score exactly the same; the first of them is the model-best
    whether the sentence is scored whole or from its kept scores."""
    rng = np.random.default_rng(5)
    offsets = np.arange(0, 201, 20, dtype=np.int64)
    features = rng.integers(-2, 3, (200, 4)).astype(np.float64)
    stats = np.arange(200, dtype=np.float64)[:, None] * np.array([1.0, 1000.0])
    weights = [np.array([1.0, 2.0, 0.0, -1.0]), np.array([1.0, 2.0, 0.0, -1.0]), np.array([1.0, 2.0, 1e-12, -1.0]),
               np.array([1.0, 1.0, 1.0, 1.0])]  # fmt: skip
    for ours, expected, _ in _evaluations(features, stats, offsets, weights):
        assert ours == expected


def test_weights_or_features_not_finite_score_every_row():
    """A NaN or infinite weight (every score NaN or infinite: the first row wins, no score being higher than a
    NaN) and a NaN feature make the sentence's rows scored whole, as the rule without kept scores."""
    rng = np.random.default_rng(7)
    offsets = np.array([0, 10, 25, 40], dtype=np.int64)
    features = rng.normal(0.0, 1.0, (40, 3))
    features[12, 1] = np.nan
    stats = np.arange(40, dtype=np.float64)[:, None]
    base = rng.normal(0.0, 1.0, 3)
    weights = [base, base + 1e-9, np.array([np.nan, 1.0, 1.0]), base, np.array([np.inf, 0.0, 1.0]), base + 1e-9,
               np.array([1e300, 1e300, 1e300]), base]  # fmt: skip
    for ours, expected, _ in _evaluations(features, stats, offsets, weights):
        assert ours == expected


def test_scores_below_float32s_smallest_normal_skip_no_possible_model_best():
    """Kept scores are float32: below its smallest normal their rounding is absolute (up to 2**-150), not relative.
    Row 1 is the best under ``v`` (float32 scores 0 and 2**-149), row 0 under ``w``: it must be rescored."""
    t = 2.0**-149
    features = np.array([[1.0, 0.0], [0.0, 1.0]] + [[-100.0, -100.0]] * 8)
    stats = np.arange(10, dtype=np.float64)[:, None]
    offsets = np.array([0, 10], dtype=np.int64)
    v, w = np.array([0.499 * t, 0.501 * t]), np.array([0.501 * t, 0.499 * t])
    results = [(ours, expected) for ours, expected, _ in _evaluations(features, stats, offsets, [v, w])]
    assert results == [([1.0], [1.0]), ([0.0], [0.0])]
