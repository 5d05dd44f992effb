"""Linear BLEU: the first-order Taylor approximation of corpus log-BLEU (Tromble et al. 2008).

The gain of a hypothesis ``e`` is linear in its statistics::

    G(e) = theta_0 * |e| + sum_n theta_n * m_n(e)
    theta_0 = -1 / T,   theta_n = 1 / (N * T * p * r**(n - 1))

where ``m_n(e)`` are the n-gram matches, ``p`` the corpus unigram precision and ``r`` the ratio of
successive n-gram precisions (Tromble et al. 2008, section 4; survey eq. 46-52). The expansion is
around corpus statistics with ``m_n ~ |E| p r**(n-1)``, so ``T`` is a scale, by default 1. ``p`` and
``r`` are either given or estimated from corpus statistics (:meth:`LinearBleu.from_stats`) as
``p = m_1/c_1`` and ``r = (p_N / p_1) ** (1 / (N - 1))``, the geometric mean of ratios.

Tromble et al. count every hypothesis n-gram that occurs in the evidence (no clipping); pass
``clip=False`` to :class:`~hypertune.metrics.bleu.BleuMetric` for those statistics. With clipped
statistics (the default) the gain is the Taylor approximation of clipped corpus BLEU.
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np

import hypertune.numba_cache  # noqa: F401  # first: the kernels' cache stamps cover the whole package
from hypertune.errors import InputError, UsageError
from hypertune.metrics.base import Metric, Text, as_stats_array
from hypertune.metrics.bleu import BleuMetric, BleuReferences


def linear_bleu_weights(p: float, r: float, max_order: int = 4, scale: float = 1.0) -> np.ndarray:
    """``theta_0 .. theta_N`` of Tromble et al. 2008 (survey eq. 50-51)."""
    if not (p > 0 and r > 0 and scale > 0):
        raise UsageError(f"linear BLEU needs p > 0, r > 0 and T > 0 (got p={p}, r={r}, T={scale})")
    theta = np.empty(max_order + 1)
    theta[0] = -1.0 / scale
    n = np.arange(1, max_order + 1)
    theta[1:] = 1.0 / (max_order * scale * p * r ** (n - 1))
    return theta


@numba.njit(cache=True, nogil=True, inline="always")
def linear_bleu_gain(stats: np.ndarray, theta: np.ndarray, order: int) -> float:  # pragma: no cover - compiled
    """:meth:`LinearBleu.score` of one statistics row, ``theta_0 * c_1 + sum_n theta_n * m_n``, compiled so
    the hope/fear searches can call it per row."""
    value = theta[0] * stats[1]
    for n in range(order):
        value += theta[n + 1] * stats[2 * n]
    return value


def estimate_precisions(stats: np.ndarray, max_order: int = 4) -> tuple[float, float]:
    """``(p, r)`` from corpus BLEU statistics: unigram precision and mean precision ratio."""
    row = as_stats_array(stats, 2 * max_order + 1)
    if row.ndim == 2:
        row = row.sum(axis=0)
    m = row[0 : 2 * max_order : 2]
    c = row[1 : 2 * max_order : 2]
    if np.any(m <= 0) or np.any(c <= 0):
        raise InputError("cannot estimate linear BLEU parameters: some n-gram order has no match")
    precision = m / c
    p = float(precision[0])
    r = float((precision[-1] / precision[0]) ** (1.0 / (max_order - 1))) if max_order > 1 else 1.0
    return p, r


class LinearBleu(Metric):
    """Linear BLEU on BLEU statistics: ``score(stats) = theta_0 * c_1 + sum_n theta_n * m_n``.

    The score is linear, so the score of summed statistics is the sum of the sentence scores.
    ``p`` and ``r`` have no defaults: give them or estimate them with :meth:`from_stats`.
    """

    name = "linear-bleu"

    def __init__(self, p: float, r: float, scale: float = 1.0, bleu: BleuMetric | None = None) -> None:
        self.bleu = bleu if bleu is not None else BleuMetric()
        self.p, self.r, self.scale = float(p), float(r), float(scale)
        self.theta = linear_bleu_weights(self.p, self.r, self.bleu.max_order, self.scale)

    @classmethod
    def from_stats(cls, stats: np.ndarray, scale: float = 1.0, bleu: BleuMetric | None = None) -> LinearBleu:
        """Parameters ``p`` and ``r`` estimated from corpus statistics (rows are summed)."""
        bleu = bleu if bleu is not None else BleuMetric()
        p, r = estimate_precisions(stats, bleu.max_order)
        return cls(p, r, scale, bleu)

    @property
    def stats_size(self) -> int:
        return self.bleu.stats_size

    @property
    def stats_names(self) -> tuple[str, ...]:
        return self.bleu.stats_names

    def stats_many(self, hypotheses: Sequence[Text], references: Sequence[Text] | BleuReferences) -> np.ndarray:
        return self.bleu.stats_many(hypotheses, references)

    def corpus_stats(
        self, hypotheses: Sequence[Text], references: Sequence[Sequence[Text]] | BleuReferences
    ) -> np.ndarray:
        return self.bleu.corpus_stats(hypotheses, references)

    def score(self, stats: np.ndarray) -> float | np.ndarray:
        array = as_stats_array(stats, self.stats_size)
        order = self.bleu.max_order
        value = self.theta[0] * array[..., 1] + array[..., 0 : 2 * order : 2] @ self.theta[1:]
        return float(value) if array.ndim == 1 else value

    def __repr__(self) -> str:
        return f"LinearBleu(p={self.p:.4g}, r={self.r:.4g}, scale={self.scale:g})"
