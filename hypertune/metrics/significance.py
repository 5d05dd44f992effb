"""Is one system better than another, or is it noise? Confidence intervals and paired significance tests of a
corpus metric, computed on additive per-sentence statistics (:meth:`Metric.corpus_stats`) and a metric's
vectorized ``score(rows)`` (see docs/experiments.md).

* **Bootstrap confidence interval** (Efron & Tibshirani 1993, the percentile method; Koehn 2004 §3): draw ``B``
  resamples of the sentences with replacement, score each resampled corpus, and take the ``(1 - c)/2`` and
  ``(1 + c)/2`` quantiles of those scores (numpy's default linear interpolation between order statistics).
* **Paired bootstrap resampling** (Koehn 2004 §4): the *same* resamples score every system; the p-value of a
  system against the baseline is the fraction of resamples in which it does not beat the baseline
  (:func:`~hypertune.metrics.base.better`: ties do not beat; lower is better for error rates).
* **Approximate randomization** (Noreen 1989; Riezler & Maxwell 2005 §3): in each of ``N`` trials every
  sentence's statistics are swapped between the two systems with probability 1/2 and both corpus scores are
  recomputed; ``p = (c + 1)/(N + 1)``, ``c`` the trials whose ``|Δ|`` is at least the observed ``|Δ|``.
* **Several optimizer runs** (Clark et al. 2011, MultEval): a system is ``K`` runs on the same sentences
  (statistics of shape ``(K, n, d)``). Its score is the mean of the runs' corpus scores and its spread their
  sample standard deviation; a bootstrap resample takes the same sentence indices in every run and scores the
  mean of the runs' corpus scores on them; approximate randomization runs over the runs concatenated (``K·n``
  sentences, run ``i`` of one system paired with run ``i`` of the other), its ``Δ`` the difference of the
  concatenations' corpus scores.

Every draw comes from ``numpy.random.default_rng(seed)``, one generator per procedure, in blocks of resamples or
trials (:func:`block_rows`): a block of resamples is one matrix product ``counts @ stats``, nothing loops over
sentences or trials one at a time, and memory stays at a few matrices of :data:`BLOCK_ELEMENTS` numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from hypertune.errors import InputError
from hypertune.metrics.base import better

#: The most resamples (or randomization trials) drawn and scored at once ...
BLOCK = 1000
#: ... and the most numbers in one block's matrix (8 MB of float64): fewer rows for long test sets.
BLOCK_ELEMENTS = 2**20
#: Relative tolerance of "at least the observed |Δ|": a shuffle that gives the observed corpus scores back may
#: sum the same statistics in another order, and floating-point sums then differ in the last bits.
TIE_TOLERANCE = 1e-9

#: A metric's score of each row of a 2-D array of summed statistics (``Metric.score``).
Scorer = Callable[[np.ndarray], object]


def _scores(score: Scorer, totals: np.ndarray) -> np.ndarray:
    """``score`` of each row of ``totals`` as a float64 vector."""
    return np.asarray(score(np.atleast_2d(totals)), dtype=np.float64).reshape(-1)


def as_runs(stats: np.ndarray) -> np.ndarray:
    """Statistics as ``(runs, sentences, d)``: one run's ``(n, d)`` becomes ``(1, n, d)``."""
    array = np.asarray(stats, dtype=np.float64)
    if array.ndim == 2:
        array = array[np.newaxis]
    if array.ndim != 3:
        raise InputError(f"expected statistics of shape (sentences, d) or (runs, sentences, d), got {array.shape}")
    return array


def block_rows(width: int) -> int:
    """How many resamples or trials of ``width`` sentences are drawn and scored at once."""
    return max(1, min(BLOCK, BLOCK_ELEMENTS // max(width, 1)))


def resample_indices(sentences: int, samples: int, seed: int) -> Iterator[np.ndarray]:
    """The bootstrap's resamples of ``sentences`` sentences, with replacement: blocks of :func:`block_rows` rows
    (the last one shorter), each row the ``sentences`` indices of one resample, ``samples`` rows in all. A function
    of the three arguments only, so that every system (and a test) sees the same resamples."""
    rng = np.random.default_rng(seed)
    step = block_rows(sentences)
    for start in range(0, samples, step):
        yield rng.integers(0, sentences, size=(min(step, samples - start), sentences))


def resample_counts(indices: np.ndarray, sentences: int) -> np.ndarray:
    """How often each sentence is drawn in each resample: ``(rows, sentences)`` float64 counts of ``indices``."""
    rows = indices.shape[0]
    flat = (indices + sentences * np.arange(rows)[:, np.newaxis]).reshape(-1)
    return np.bincount(flat, minlength=rows * sentences).reshape(rows, sentences).astype(np.float64)


def run_scores(score: Scorer, stats: np.ndarray) -> np.ndarray:
    """Each run's corpus score: ``score`` of the sentence statistics summed per run, shape ``(runs,)``."""
    return _scores(score, as_runs(stats).sum(axis=1))


def bootstrap_scores(score: Scorer, systems: Sequence[np.ndarray], samples: int, seed: int) -> np.ndarray:
    """Every system's score on each of the same ``samples`` resamples (:func:`resample_indices`), shape
    ``(systems, samples)``: per resample the mean over a system's runs of each run's corpus score on the resampled
    sentences (one run: its corpus score). Every system must have the same number of sentences."""
    runs = [as_runs(s) for s in systems]
    n = runs[0].shape[1]
    if any(r.shape[1] != n for r in runs):
        raise InputError(f"systems of different numbers of sentences: {sorted({r.shape[1] for r in runs})}")
    # (n, K*d) per system: one product gives every run's resampled totals
    wide = [r.transpose(1, 0, 2).reshape(n, -1) for r in runs]
    out = np.empty((len(runs), samples))
    done = 0
    for indices in resample_indices(n, samples, seed):
        counts = resample_counts(indices, n)
        rows = indices.shape[0]
        for s, (r, w) in enumerate(zip(runs, wide, strict=True)):
            totals = (counts @ w).reshape(rows * r.shape[0], r.shape[2])
            out[s, done : done + rows] = _scores(score, totals).reshape(rows, r.shape[0]).mean(axis=1)
        done += rows
    return out


def confidence_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The percentile interval of bootstrap ``values``: their ``(1 - c)/2`` and ``(1 + c)/2`` quantiles (linear
    interpolation between order statistics, numpy's default; Efron & Tibshirani 1993, ch. 13)."""
    if not 0.0 < confidence < 1.0:
        raise InputError(f"a confidence level lies strictly between 0 and 1, got {confidence}")
    low, high = np.quantile(np.asarray(values, dtype=np.float64), [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def paired_bootstrap_p(values: np.ndarray, baseline: np.ndarray, higher_is_better: bool = True) -> float:
    """Koehn (2004)'s paired bootstrap p-value: the fraction of resamples in which the system's score
    ``values[b]`` does not beat the baseline's ``baseline[b]`` on the same resample (:func:`better`; a tie does
    not beat)."""
    wins = np.asarray(better(np.asarray(values), np.asarray(baseline), higher_is_better))  # type: ignore[arg-type]  # elementwise
    return int(np.count_nonzero(~wins)) / wins.size


def approximate_randomization(
    score: Scorer, baseline: np.ndarray, system: np.ndarray, trials: int, seed: int
) -> tuple[float, int]:
    """Riezler & Maxwell (2005)'s approximate randomization test of ``system`` against ``baseline`` (statistics
    of shape ``(n, d)``, or ``(runs, n, d)``: then over the runs concatenated, run ``i`` paired with run ``i``).

    In each of ``trials`` trials every sentence's statistics are swapped between the two with probability 1/2
    (``numpy.random.default_rng(seed)``'s random bits, :func:`block_rows` trials at a time: the swapped totals are
    ``total + mask @ (system - baseline)``) and ``Δ`` = system's corpus score minus the baseline's is
    recomputed. Returns ``(p, c)``: ``p = (c + 1)/(trials + 1)``, ``c`` the trials with ``|Δ|`` at least the
    observed ``|Δ|`` up to a relative :data:`TIE_TOLERANCE` (a shuffle that gives the observed scores back sums
    the same numbers in another order)."""
    a = as_runs(baseline)
    b = as_runs(system)
    if a.shape != b.shape:
        raise InputError(f"statistics of shapes {a.shape} and {b.shape} cannot be paired")
    a = a.reshape(-1, a.shape[2])
    b = b.reshape(-1, b.shape[2])
    total_a, total_b = a.sum(axis=0), b.sum(axis=0)
    observed = abs(float(_scores(score, total_b)[0] - _scores(score, total_a)[0]))
    threshold = observed * (1.0 - TIE_TOLERANCE)
    difference = b - a
    rng = np.random.default_rng(seed)
    count = 0
    step = block_rows(a.shape[0])
    for start in range(0, trials, step):
        rows = min(step, trials - start)
        bits = rng.integers(0, 256, size=(rows, (a.shape[0] + 7) // 8), dtype=np.uint8)  # 8 fair coins a byte
        moved = np.unpackbits(bits, axis=1, count=a.shape[0]).astype(np.float64) @ difference
        delta = _scores(score, total_b - moved) - _scores(score, total_a + moved)
        count += int(np.count_nonzero(np.abs(delta) >= threshold))
    return (count + 1) / (trials + 1), count


@dataclass(frozen=True)
class SystemReport:
    """One system's line of a comparison (metric values as the metric gives them, e.g. BLEU in 0-1): ``score``,
    the mean of its runs' corpus scores (one run: its corpus score); ``ci_low``/``ci_high``, the bootstrap
    interval; ``p_ar``/``p_boot`` against the baseline (``None`` for the baseline itself); ``run_scores``, each
    run's corpus score, and ``sd`` their sample standard deviation (``None`` for one run)."""

    score: float
    ci_low: float
    ci_high: float
    p_ar: float | None
    p_boot: float | None
    run_scores: tuple[float, ...]
    sd: float | None


def compare_systems(
    score: Scorer,
    systems: Sequence[np.ndarray],
    higher_is_better: bool = True,
    samples: int = 1000,
    trials: int = 10000,
    confidence: float = 0.95,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> list[SystemReport]:
    """Every system (statistics ``(n, d)`` or ``(runs, n, d)``, the same shape for all) against the first: its
    score and bootstrap interval (:func:`bootstrap_scores`, :func:`confidence_interval`), and for the others the
    approximate randomization and paired bootstrap p-values (:func:`approximate_randomization`,
    :func:`paired_bootstrap_p`). ``progress`` is told each step as it starts."""
    runs = [as_runs(s) for s in systems]
    if any(r.shape != runs[0].shape for r in runs):
        raise InputError(f"systems of different shapes: {sorted({r.shape for r in runs})}")
    if progress:
        progress(f"{samples} bootstrap resamples")
    resampled = bootstrap_scores(score, runs, samples, seed)
    reports = []
    for s, stats in enumerate(runs):
        each = run_scores(score, stats)
        low, high = confidence_interval(resampled[s], confidence)
        p_ar = p_boot = None
        if s > 0:
            if progress:
                progress(f"system {s + 1}: {trials} randomization trials")
            p_ar = approximate_randomization(score, runs[0], stats, trials, seed)[0]
            p_boot = paired_bootstrap_p(resampled[s], resampled[0], higher_is_better)
        sd = float(np.std(each, ddof=1)) if each.size > 1 else None
        reports.append(SystemReport(float(each.mean()), low, high, p_ar, p_boot, tuple(each.tolist()), sd))
    return reports


__all__ = [
    "BLOCK",
    "BLOCK_ELEMENTS",
    "TIE_TOLERANCE",
    "SystemReport",
    "approximate_randomization",
    "as_runs",
    "block_rows",
    "bootstrap_scores",
    "compare_systems",
    "confidence_interval",
    "paired_bootstrap_p",
    "resample_counts",
    "resample_indices",
    "run_scores",
]
