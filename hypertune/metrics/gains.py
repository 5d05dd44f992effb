"""Sentence gains: the one registry of how learning scores a single hypothesis (CONTRIBUTING.md, "A gain").

A gain maps one row of BLEU statistics ``m1 c1 ... mN cN reflen`` to a number, higher is better. Hope/fear
search and batch MIRA (``--gain``), the batch losses and the online tuners (``--gain-smooth``, through
:data:`SMOOTHED_GAINS`), minimum risk's ``risk`` objective and the corpus oracle's drawing all score
hypotheses through :data:`GAINS`, whose names are exactly :data:`hypertune.choices.GAINS`:

``background``
    Moses kbmira's ``sentenceLevelBackgroundBleu``: ``BLEU(O + s) * reflen(O + s)``, unsmoothed BLEU of the
    sentence's statistics ``s`` added to a decayed pseudo-corpus ``O`` ("as per Chiang et al. 08"). ``O``
    starts at ``initial`` in every column and after each update is ``decay * O + s(chosen)`` (kbmira's rule):
    :class:`~hypertune.metrics.background.BackgroundBleu` with ``scale="moses", update="kbmira"``.
``bleu+1``
    BLEU+1 of the sentence alone (Lin & Och 2004): :func:`~hypertune.metrics.bleu.bleu_plus_one`.
``linear``
    Linear BLEU (Tromble et al. 2008): ``theta_0 c_1 + sum_n theta_n m_n``
    (:func:`~hypertune.metrics.linear_bleu.linear_bleu_gain`); needs a :class:`LinearBleu` (its ``p``, ``r``).
``moses``
    Moses ``pro``'s ``smoothedSentenceBleu`` (mert/BleuScorer.cpp): +1 on every order's matches and counts.
``nakov``
    ``moses`` with +1 on the reference length too (Nakov et al. 2012's brevity-penalty smoothing).

An entry scores rows in Python by its ``rows(stats, order)`` (``moses``, ``nakov``: the metric's own vectorised
formula, :func:`~hypertune.metrics.bleu.bleu_score`) or by its compiled per-row ``kernel(stats, order,
background, theta) -> float``; Python reaches gains through :class:`Gain` and :func:`sentence_gains`. Only
the search of lattices and forests needs the kernel, through :func:`gain_value`, by the entry's code (a kernel
numba caches on disk cannot take a function as an argument: passed one, it is compiled again in every
process); k-best lists, batch MIRA's included, are scored in Python. Every gain here has a kernel; they
agree with Python's scoring (tests/metrics/test_gains.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

import hypertune.numba_cache  # noqa: F401  # first: the kernels' cache stamps cover the whole package
from hypertune.choices import GAIN_SMOOTHINGS
from hypertune.errors import UsageError
from hypertune.metrics.background import SCALE_MOSES, BackgroundBleu, background_bleu
from hypertune.metrics.base import Metric
from hypertune.metrics.bleu import BleuMetric, bleu_plus_one, bleu_score
from hypertune.metrics.linear_bleu import LinearBleu, linear_bleu_gain

_jit = numba.njit(cache=True, nogil=True)
_inline = numba.njit(cache=True, nogil=True, inline="always")

GainKind = str
"""A gain's name: one of :data:`hypertune.choices.GAINS` (the keys of :data:`GAINS`)."""


# ---------------------------------------------------------------------- the kernels, one per gain


@_inline
def background_gain(stats, order, background, theta):  # pragma: no cover - compiled
    """``background``: kbmira's background BLEU of one row, scaled by the pseudo-corpus reference length."""
    return background_bleu(stats, background, order, SCALE_MOSES, 0.0)


@_inline
def plus_one_gain(stats, order, background, theta):  # pragma: no cover - compiled
    """``bleu+1``: BLEU+1 of one row (Lin & Och 2004)."""
    return bleu_plus_one(stats, order)


@_inline
def linear_gain(stats, order, background, theta):  # pragma: no cover - compiled
    """``linear``: linear BLEU of one row with weights ``theta`` (Tromble et al. 2008)."""
    return linear_bleu_gain(stats, theta, order)


@_inline
def smoothed_sentence_bleu(stats, order, reference_add):  # pragma: no cover - compiled
    """Moses's ``smoothedSentenceBleu`` of one row: ``exp(sum_n log((m_n + 1) / (c_n + 1)) / N + min(0, 1 -
    r'/c_1))`` with ``r' = reflen + reference_add`` (1: Nakov et al. 2012); 0 for an empty hypothesis
    shorter than ``r'``."""
    log_bleu = 0.0
    for n in range(order):
        m = stats[2 * n] + 1.0
        c = stats[2 * n + 1] + 1.0
        if m <= 0.0 or c <= 0.0:
            return 0.0
        log_bleu += np.log(m) - np.log(c)
    hyp = stats[1]
    ref = stats[2 * order] + reference_add
    log_bleu /= order
    if hyp < ref:
        if hyp <= 0.0:
            return 0.0
        log_bleu += 1.0 - ref / hyp
    return np.exp(log_bleu)


@_inline
def moses_gain(stats, order, background, theta):  # pragma: no cover - compiled
    """``moses``: Moses ``pro``'s smoothed sentence BLEU of one row."""
    return smoothed_sentence_bleu(stats, order, 0.0)


@_inline
def nakov_gain(stats, order, background, theta):  # pragma: no cover - compiled
    """``nakov``: ``moses`` with +1 on the reference length."""
    return smoothed_sentence_bleu(stats, order, 1.0)


# ---------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class GainDef:
    """A sentence gain: its ``name`` (:data:`hypertune.choices.GAINS`), ``code`` (how compiled code names it,
    :func:`gain_value`), ``summary`` (what it computes), and how it scores: ``rows(stats, order) -> array``, the
    rows of a 2-D array in Python, and/or ``kernel``, its compiled per-row form (Python then scores rows by it
    when ``rows`` is not given; lattices and forests need it)."""

    name: str
    code: int
    summary: str
    rows: Callable[[np.ndarray, int], np.ndarray] | None = None
    kernel: Callable[..., float] | None = None


#: Every sentence gain by name; the keys are exactly :data:`hypertune.choices.GAINS`, in its order.
GAINS: dict[str, GainDef] = {}


def register_gain(name: str, summary: str, *, rows: Callable | None = None, kernel: Callable | None = None) -> int:
    """Add a gain (the next code); returns its code. A name given twice, or neither ``rows`` nor ``kernel``, is an
    error."""
    if name in GAINS:
        raise ValueError(f"a gain named {name!r} is registered already")
    if rows is None and kernel is None:
        raise ValueError(f"the gain {name!r} needs rows or a kernel")
    GAINS[name] = GainDef(name, len(GAINS), summary, rows, kernel)
    return GAINS[name].code


BACKGROUND = register_gain("background", "BLEU against a decayed pseudo-corpus, x its reference length",
                           kernel=background_gain)  # fmt: skip
PLUS_ONE = register_gain("bleu+1", "BLEU+1 of the sentence alone (Lin & Och 2004)", kernel=plus_one_gain)
LINEAR = register_gain("linear", "linear BLEU (Tromble et al. 2008)", kernel=linear_gain)
MOSES = register_gain("moses", "+1 on every order (Moses pro)", rows=lambda s, n: bleu_score(s, n, "moses"),
                      kernel=moses_gain)  # fmt: skip
NAKOV = register_gain("nakov", "moses, +1 on the reference length too (Nakov et al. 2012)",
                      rows=lambda s, n: bleu_score(s, n, "nakov"), kernel=nakov_gain)  # fmt: skip

#: ``train --gain-smooth`` (:data:`hypertune.choices.GAIN_SMOOTHINGS`) -> the gain it names.
SMOOTHED_GAINS: dict[str, str] = {"plus1": "bleu+1", "moses": "moses", "nakov": "nakov"}


@_jit
def gain_value(code, stats, order, background, theta):  # pragma: no cover - compiled
    """The gain of registry code ``code`` of one statistics row, by its kernel: the one dispatch the compiled
    searches call (hope/fear's forest search). NaN for a code without a branch here."""
    if code == BACKGROUND:
        return background_gain(stats, order, background, theta)
    if code == PLUS_ONE:
        return plus_one_gain(stats, order, background, theta)
    if code == LINEAR:
        return linear_gain(stats, order, background, theta)
    if code == MOSES:
        return moses_gain(stats, order, background, theta)
    if code == NAKOV:
        return nakov_gain(stats, order, background, theta)
    return np.nan


@_jit
def gain_rows(code, rows, order, background, theta):  # pragma: no cover - compiled
    """:func:`gain_value` of every row of a 2-D array."""
    out = np.empty(rows.shape[0])
    for i in range(rows.shape[0]):
        out[i] = gain_value(code, rows[i], order, background, theta)
    return out


# ---------------------------------------------------------------------- the gain as Python holds it


class GainRule(NamedTuple):
    """A sentence gain as compiled code sees it (:func:`gain_value`): its code, order, linear-BLEU weights and
    the background pseudo-corpus (updated in place by the compiled MIRA epoch for ``background``)."""

    code: int
    max_order: int
    theta: np.ndarray
    background: np.ndarray


class Gain:
    """A sentence gain of :data:`GAINS` with its state: the pseudo-corpus of ``background`` (initial value
    ``initial`` in every column, ``decay``; :attr:`background_bleu`, updated by :meth:`update`), the weights of
    ``linear`` (from ``linear``, a :class:`LinearBleu`). The other gains ignore updates."""

    def __init__(
        self,
        kind: GainKind = "background",
        max_order: int = 4,
        decay: float = 0.999,
        initial: float = 1.0,
        linear: LinearBleu | None = None,
    ) -> None:
        if kind not in GAINS:
            raise UsageError(f"unknown gain {kind!r}; choose one of {', '.join(GAINS)}")
        if kind == "linear" and linear is None:
            raise UsageError("the linear gain needs a LinearBleu (its p and r)")
        self.kind = kind
        self.code = GAINS[kind].code
        self.compiled = GAINS[kind].kernel is not None  # lattices and forests need the kernel
        self.max_order = max_order
        self.background_bleu = BackgroundBleu(max_order, decay, scale="moses", initial=initial, update="kbmira")
        self.theta = np.zeros(max_order + 1)
        if linear is not None:
            if linear.bleu.max_order != max_order:
                raise UsageError("the linear BLEU's order differs from the gain's")
            self.theta = np.asarray(linear.theta, dtype=np.float64)

    @property
    def decay(self) -> float:
        return self.background_bleu.decay

    @property
    def background(self) -> np.ndarray:
        """The pseudo-corpus ``O`` (the compiled k-best MIRA epoch updates it in place)."""
        return self.background_bleu.background

    @background.setter
    def background(self, value: np.ndarray) -> None:
        self.background_bleu.background = value

    def copy(self) -> Gain:
        other = type(self).__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.background_bleu = self.background_bleu.copy()
        return other

    def score(self, stats: np.ndarray) -> np.ndarray | float:
        """The gain of one statistics vector (a float) or of each row."""
        if self.kind == "background":
            return self.background_bleu.score(stats)
        array = np.asarray(stats, dtype=np.float64)
        rows = np.atleast_2d(array)
        python = GAINS[self.kind].rows
        if python is not None:
            out = np.asarray(python(rows, self.max_order), dtype=np.float64)
        else:
            out = gain_rows(self.code, rows, self.max_order, self.background, self.theta)
        return float(out[0]) if array.ndim == 1 else out

    def rule(self, order: int | None = None, background: np.ndarray | None = None) -> GainRule:
        """This gain for compiled code (``order`` defaults to the gain's, ``background`` to its own)."""
        order = self.max_order if order is None else order
        return GainRule(self.code, order, self.theta, self.background if background is None else background)

    def update(self, stats: np.ndarray) -> None:
        """kbmira's pseudo-corpus update ``O <- decay * O + stats`` (background gain only)."""
        if self.kind == "background":
            self.background_bleu.update(stats)


class MetricGain(Gain):
    """The gain of a metric whose statistics are not BLEU's (``scores.NAME``, TER, chrF, an interpolation): each
    hypothesis's sentence value, :meth:`~hypertune.metrics.base.Metric.sentence_values` (a given score: the score
    itself), negated where lower is better. It has no state and no compiled kernel, so it scores k-best lists
    (lattices' and forests' searches refuse it with a message)."""

    def __init__(self, metric: Metric) -> None:
        super().__init__("bleu+1")  # the state every gain carries; this one never reads it
        self.kind = metric.name
        self.code = -1
        self.compiled = False
        self.metric = metric
        self.sign = 1.0 if metric.higher_is_better else -1.0

    def score(self, stats: np.ndarray) -> np.ndarray | float:
        array = np.asarray(stats, dtype=np.float64)
        values = self.sign * self.metric.sentence_values(np.atleast_2d(array))
        return float(values[0]) if array.ndim == 1 else values


def has_bleu_statistics(metric: object) -> bool:
    """Whether ``metric``'s statistics are BLEU's ``m1 c1 ... mN cN reflen``, which the gains of :data:`GAINS`
    read (BLEU, linear BLEU)."""
    return isinstance(metric, BleuMetric | LinearBleu)


def gain_for(
    metric: Metric | None,
    kind: GainKind = "background",
    max_order: int = 4,
    decay: float = 0.999,
    initial: float = 1.0,
    linear: LinearBleu | None = None,
) -> Gain:
    """The gain learning scores a hypothesis by under ``metric``: BLEU's gain ``kind`` (:data:`GAINS`) when the
    statistics are BLEU's (``None``: precomputed BLEU statistics), else the metric's own sentence value
    (:class:`MetricGain`), whatever ``kind`` says. The one place this choice is made."""
    if metric is None or has_bleu_statistics(metric):
        return Gain(kind, max_order, decay, initial, linear)
    return MetricGain(metric)


def smoothed_gain(smooth: str) -> GainKind:
    """The gain a ``--gain-smooth`` name means (:data:`SMOOTHED_GAINS`)."""
    if smooth not in SMOOTHED_GAINS:
        raise UsageError(f"unknown gain smoothing {smooth!r}; choose one of {', '.join(GAIN_SMOOTHINGS)}")
    return SMOOTHED_GAINS[smooth]


def sentence_gains(stats: np.ndarray, order: int = 4, kind: GainKind = "bleu+1") -> np.ndarray:
    """The gain ``kind`` of every row of ``stats`` (a fresh :class:`Gain`: ``background`` against a pseudo-corpus
    of ones), as a float64 array."""
    return np.asarray(Gain(kind, order).score(np.atleast_2d(stats)), dtype=np.float64)
