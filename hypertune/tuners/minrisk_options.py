"""Minimum-risk training's options (:class:`~hypertune.tuners.minrisk.MinRisk`) and its annealing schedule;
light, for the command line (see :mod:`hypertune.tuners.options`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hypertune.choices import RISK_OBJECTIVES
from hypertune.tuners.options import OptionError, TunerOptions, feature_bounds, fixed_features, normalization, option

#: The default of ``quench_max`` (:class:`MinRiskOptions`, :class:`Annealing`).
QUENCH_MAX = 64.0
#: ``risk``'s sentence BLEU (``sentence_bleu``): BLEU+1 (Lin & Och 2004), or cdec's ``IBM_BLEU`` of one sentence
#: (a zero match count taken as 0.01, only orders with hypothesis n-grams averaged: cdec's ``minrisk_optimize``).
SENTENCE_BLEUS = ("bleu+1", "ibm")
#: ``start_norm``: the start weights as given, or divided by their L2 norm (cdec's ``minrisk_optimize``).
START_NORMS = ("none", "l2")


@dataclass(frozen=True)
class Annealing:
    """Deterministic annealing (Smith & Eisner 2006, section 3.1): the entropy weight ``T`` starts at
    ``start`` and is multiplied by ``factor`` after each L-BFGS run until it is below ``floor``, with ``γ``
    fixed; then quenching: ``T = 0`` and ``γ`` doubled after each run up to ``quench_max``."""

    start: float = 1000.0
    factor: float = 0.5
    floor: float = 0.001
    quench_max: float = QUENCH_MAX

    def __post_init__(self) -> None:
        numbers = (self.start, self.factor, self.floor, self.quench_max)
        if not (
            all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in numbers)
            and self.start > 0
            and 0 < self.factor < 1
            and 0 < self.floor <= self.start
            and self.quench_max > 0
        ):
            raise OptionError(
                "{anneal} needs finite START > 0, 0 < FACTOR < 1, 0 < FLOOR <= START and a positive {quench_max} "
                f"(got {self.start}:{self.factor}:{self.floor}, quench to {self.quench_max})"
            )

    @classmethod
    def parse(cls, text: str, quench_max: float = QUENCH_MAX) -> Annealing:
        """``START:FACTOR:FLOOR`` as the command line gives it."""
        try:
            start, factor, floor = (float(x) for x in text.split(":"))
        except ValueError:
            raise OptionError(f"{{anneal}} {text!r}: expected START:FACTOR:FLOOR, e.g. 1000:0.5:0.001") from None
        return cls(start, factor, floor, quench_max)

    @property
    def spec(self) -> str:
        """``START:FACTOR:FLOOR``, exactly (:meth:`parse` gives this schedule back)."""
        return f"{float(self.start)!r}:{float(self.factor)!r}:{float(self.floor)!r}"

    def schedule(self, scale: float) -> list[tuple[float, float]]:
        """The ``(T, γ)`` of every L-BFGS run: annealing, then quenching."""
        steps, t = [], self.start
        while t >= self.floor:
            steps.append((t, scale))
            t *= self.factor
        gamma = scale
        while gamma * 2 <= self.quench_max:
            gamma *= 2
            steps.append((0.0, gamma))
        return steps


@dataclass(frozen=True)
class MinRiskOptions(TunerOptions):
    """Minimize expected loss or maximize expected BLEU over k-best lists, lattices and forests with L-BFGS
    (Smith & Eisner 2006; Li & Eisner 2009; Rosti et al. 2010/2011).

    ``anneal`` is a ``START:FACTOR:FLOOR`` schedule (or an :class:`Annealing`, whose fields it then holds:
    the spec and ``quench_max``); :attr:`annealing` is the schedule."""

    summary = "minimum risk / expected BLEU training (Smith & Eisner 2006; Li & Eisner 2009)"

    objective: str = option("xbleu", "what is optimized (see below; default xbleu)", choices=RISK_OBJECTIVES)
    scale: float = option(1.0, "γ of p ∝ exp(γ·w·h)", kind="positive", metavar="G")
    optimize_scale: bool = option(False, "optimize γ jointly with the weights")
    entropy: float = option(0.0, "minimize L - T·H", kind="non-negative", metavar="T")
    anneal: str | None = option(
        None,
        "deterministic annealing of T (e.g. 1000:0.5:0.001), then quenching of γ (Smith & Eisner 2006)",
        metavar="START:FACTOR:FLOOR",
    )
    quench_max: float = option(QUENCH_MAX, "quenching doubles γ up to G", kind="positive", metavar="G")
    l2: float = option(0.0, "L2 weight λ of λ‖w‖²/2", kind="non-negative", metavar="L")
    l1: float = option(0.0, "L1 weight, by OWL-QN", kind="non-negative", metavar="L")
    smooth_bp: float = option(
        0.0,
        "xbleu: smooth brevity penalty -τ·log(1 + exp(-x/τ)) instead of min(0, x) (default 0: hard)",
        kind="non-negative",
        metavar="TAU",
    )
    linear_p: float | None = option(None, "linear-bleu: unigram precision p", kind="number", metavar="P")
    linear_r: float | None = option(None, "linear-bleu: precision ratio r", kind="number", metavar="R")
    sentence_bleu: str = option(
        "bleu+1",
        "risk: the sentence BLEU of the loss 1 - BLEU: bleu+1 (Lin & Och 2004), or ibm (cdec's IBM BLEU, 0.01 for "
        "a zero match count, as cdec's minrisk_optimize)",
        choices=SENTENCE_BLEUS,
    )
    start_norm: str = option(
        "none",
        "none: start from --init as given; l2: from --init divided by its L2 norm (cdec's minrisk_optimize)",
        choices=START_NORMS,
    )
    kbest: int = option(100, "risk on lattices/forests: derivations per graph", kind="positive-count", metavar="K")
    iterations: int = option(100, "L-BFGS iterations per run", kind="positive-count", metavar="N")
    tolerance: float = option(
        1e-7,
        "a run stops when an iteration improves the objective by less than this fraction (default 1e-7)",
        kind="positive",
        metavar="F",
    )
    seed: int = option(0, "recorded with the result; nothing is random", kind="seed")
    fixed: tuple[str, ...] = fixed_features()
    bounds: Mapping[str, tuple[float, float]] | None = feature_bounds()
    normalize: str = normalization()

    def __post_init__(self) -> None:
        given: Any = self.anneal
        if isinstance(given, Annealing):  # the Python API's schedule object: held as its spec and quench_max
            if self.quench_max not in (QUENCH_MAX, given.quench_max):
                raise OptionError(
                    f"{{anneal}} is an Annealing with its own quench maximum ({given.quench_max:g}); give "
                    "{quench_max} with a START:FACTOR:FLOOR spec"
                )
            object.__setattr__(self, "anneal", given.spec)
            object.__setattr__(self, "quench_max", float(given.quench_max))
        elif given is not None and not isinstance(given, str):
            raise OptionError(f"{{anneal}} must be START:FACTOR:FLOOR or an Annealing, got {given!r}")
        super().__post_init__()

    def check(self) -> None:
        annealing = self.annealing  # the spec's syntax and values
        if self.l1 and (self.bounds or self.optimize_scale):
            raise OptionError("{l1} (OWL-QN) takes no {bounds} and no {optimize_scale}")
        if annealing is not None and (self.optimize_scale or self.entropy):
            raise OptionError("annealing sets T and γ itself: give {anneal} without {entropy} and {optimize_scale}")
        if self.sentence_bleu != "bleu+1" and self.objective != "risk":
            raise OptionError("{sentence_bleu} is the loss of the risk objective: give it with {objective} risk")
        if (self.linear_p is None) != (self.linear_r is None):
            raise OptionError("give both {linear_p} and {linear_r}, or neither (both are then estimated)")

    @property
    def annealing(self) -> Annealing | None:
        """The annealing schedule of ``anneal`` and ``quench_max`` (``None``: no annealing)."""
        return None if self.anneal is None else Annealing.parse(self.anneal, self.quench_max)
