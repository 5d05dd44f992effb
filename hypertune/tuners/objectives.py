"""Smooth tuning objectives over a distribution of translations: risk, expected BLEU, expected linear BLEU.

Each objective is a function of **corpus totals of expected edge quantities**: every hypothesis edge
(k-best lists) or every edge of an n-gram-split forest carries a few numbers -- its BLEU statistics, its
sentence loss, its linear-BLEU gain -- and the objective sees ``T_k = Σ_sentences E_p[Σ_{e ∈ d} q_ek]``.
An objective returns its value (to be minimized) and ``∂value/∂T_k``; the tuner turns those coefficients
into one edge quantity whose covariance with the features is the gradient
(:mod:`hypertune.algorithms.expectations`). So a new objective is one small class here.

Sources: risk, Smith & Eisner 2006 (eq. 3) with BLEU+1 (Lin & Och 2004); expected BLEU of expected
statistics, Smith & Eisner 2006 (section 4.1) and Rosti et al. 2010/2011; linear BLEU, Tromble et al.
2008 (eq. 3-5); survey eq. 46-54.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from hypertune.choices import RISK_OBJECTIVES
from hypertune.errors import UsageError


@dataclass(frozen=True)
class ObjectiveValue:
    """An objective at given totals: ``value`` (minimized), ``coefficients`` ``∂value/∂T`` (one per
    column of the edge quantities) and the named figures a report shows (``risk``, ``xbleu``, ...)."""

    value: float
    coefficients: np.ndarray
    parts: dict[str, float] = field(default_factory=dict)


class ExpectedRisk:
    """``risk``: the mean over sentences of the expected sentence loss ``1 - BLEU+1`` (Smith & Eisner 2006,
    eq. 3; BLEU+1 of Lin & Och 2004, the ``bleu+1`` gain of :class:`~hypertune.tuners.hope_fear.Gain`). One
    column: the loss of each hypothesis edge."""

    name = "risk"
    columns = 1

    def __init__(self, sentences: int) -> None:
        self.sentences = sentences

    def evaluate(self, totals: np.ndarray) -> ObjectiveValue:
        risk = float(totals[0]) / self.sentences
        return ObjectiveValue(risk, np.array([1.0 / self.sentences]), {"risk": risk})


class ExpectedGain:
    """The mean over sentences of a hypothesis gain's expectation, maximized, so the value is ``-expected_gain``.
    One column: each edge's share of the gain (a k-best hypothesis edge: the whole gain). ``expected-score``:
    the sentence value of a metric whose statistics are not BLEU's (a given score, TER negated: the gain
    :func:`~hypertune.metrics.gains.gain_for` makes), on k-best lists; its exact gradient is the covariance of
    the gain with the features (Li & Eisner 2009, the first-order expectation semiring)."""

    name = "expected-score"
    part = "expected_score"
    columns = 1

    def __init__(self, sentences: int) -> None:
        self.sentences = sentences

    def evaluate(self, totals: np.ndarray) -> ObjectiveValue:
        gain = float(totals[0]) / self.sentences
        return ObjectiveValue(-gain, np.array([-1.0 / self.sentences]), {self.part: gain})


class ExpectedLinearBleu(ExpectedGain):
    """``linear-bleu``: the mean over sentences of the expected linear-BLEU gain ``G(e) = θ₀|e| + Σₙ θₙ #ₙ(e)``
    (Tromble et al. 2008, eq. 3-5), maximized; each edge's share of the gain is the words and the n-grams it
    creates, which add up over a derivation."""

    name = "linear-bleu"
    part = "expected_gain"


class ExpectedBleu:
    """``xbleu``: corpus BLEU of the expected statistics, maximized (the value is ``-xbleu``)::

        xbleu = exp( Σₙ (log Mₙ - log Cₙ) / N + φ(1 - R / C₁) )

    with ``Mₙ, Cₙ, R`` the expected matches, n-gram counts and reference length summed over sentences,
    and ``φ(x) = min(0, x)`` the brevity penalty -- or, with ``smooth_bp = τ > 0``, the smooth
    ``φ(x) = -τ log(1 + exp(-x/τ))``, a differentiable stand-in for the minimum like the one Rosti et al.
    2010 use (it differs from ``min(0, x)`` by at most ``τ log 2``).

    Columns: the BLEU statistics in their usual order (``m₁ c₁ … m_N c_N r``), then one column per clipped
    n-gram type of forests (``clip_orders``, ``clip_limits``): there ``Mₙ`` gets ``Σ_g min(E[count_g],
    limit_g)`` over the reference n-grams ``g`` of order ``n`` -- clipping applied to expected counts
    (Rosti et al. 2011), which can only overestimate the expected clipped matches.
    """

    name = "xbleu"

    def __init__(
        self,
        max_order: int = 4,
        smooth_bp: float = 0.0,
        clip_orders: np.ndarray | None = None,
        clip_limits: np.ndarray | None = None,
    ) -> None:
        if smooth_bp < 0:
            raise UsageError(f"the smooth brevity penalty's τ must be >= 0, got {smooth_bp}")
        self.max_order = max_order
        self.smooth_bp = float(smooth_bp)
        self.clip_orders = np.zeros(0, dtype=np.int64) if clip_orders is None else np.asarray(clip_orders)
        self.clip_limits = np.zeros(0) if clip_limits is None else np.asarray(clip_limits, dtype=np.float64)

    @property
    def columns(self) -> int:
        return 2 * self.max_order + 1 + self.clip_orders.size

    def brevity(self, x: float) -> tuple[float, float]:
        """``φ(x)`` and ``φ'(x)``."""
        tau = self.smooth_bp
        if tau == 0.0:
            return (x, 1.0) if x < 0 else (0.0, 0.0)
        z = -x / tau
        softplus = z + math.log1p(math.exp(-z)) if z > 0 else math.log1p(math.exp(z))
        sigmoid = 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))  # no overflow
        return -tau * softplus, sigmoid

    def evaluate(self, totals: np.ndarray) -> ObjectiveValue:
        order = self.max_order
        stats = np.asarray(totals[: 2 * order + 1], dtype=np.float64).copy()
        clipped = totals[2 * order + 1 :]
        unclipped_type = clipped < self.clip_limits
        np.add.at(stats, 2 * (self.clip_orders - 1), np.minimum(clipped, self.clip_limits))
        matches, counts, ref = stats[0 : 2 * order : 2], stats[1 : 2 * order : 2], stats[2 * order]
        gradient = np.zeros(self.columns)
        if np.any(matches <= 0) or np.any(counts <= 0):
            return ObjectiveValue(0.0, gradient, {"xbleu": 0.0})
        ratio = 1.0 - ref / counts[0]
        penalty, slope = self.brevity(ratio)
        log_bleu = float(np.sum(np.log(matches) - np.log(counts)) / order + penalty)
        bleu = math.exp(log_bleu)
        d_log = np.zeros(2 * order + 1)  # ∂ log xbleu / ∂ statistic
        d_log[0 : 2 * order : 2] = 1.0 / (order * matches)
        d_log[1 : 2 * order : 2] = -1.0 / (order * counts)
        d_log[1] += slope * ref / counts[0] ** 2
        d_log[2 * order] = -slope / counts[0]
        gradient[: 2 * order + 1] = d_log
        gradient[2 * order + 1 :] = np.where(unclipped_type, d_log[2 * (self.clip_orders - 1)], 0.0)
        return ObjectiveValue(-bleu, -bleu * gradient, {"xbleu": bleu})


Objective = ExpectedRisk | ExpectedGain | ExpectedBleu
OBJECTIVES = RISK_OBJECTIVES
