"""A toy tuner written as CONTRIBUTING.md's recipe says (its module, its options, one registry line), for
tests/tuners/test_tuner_recipe.py: random search -- the start weights and ``candidates`` seeded random perturbations of
them, each scored by the model-best translations' corpus metric, the best kept."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from hypertune.metrics import better
from hypertune.tuners.base import Iteration, TuningResult, metric_label
from hypertune.tuners.finishing import finish_weights, keeps_start
from hypertune.tuners.model_best import ModelBest
from hypertune.tuners.options import OptionError, TunerOptions, normalization, option
from hypertune.weights import Weights


@dataclass(frozen=True)
class ToyOptions(TunerOptions):
    """Random search around the start weights."""

    summary = "random search around the start weights (a test's toy tuner)"

    candidates: int = option(20, "random points tried", kind="positive-count", metavar="N")
    spread: float = option(0.5, "standard deviation of a point's offset from the start", kind="positive")
    seed: int = option(0, "random seed", kind="seed")
    normalize: str = normalization()

    def check(self) -> None:
        if self.candidates > 10_000:
            raise OptionError(f"{{candidates}} is a toy's: at most 10000, got {self.candidates}")


class Toy:
    """The toy tuner: ``Toy(options=None, *, progress=None, checkpoint=None, **fields)``, ``fit(tuning_set, init)``."""

    def __init__(self, options: ToyOptions | None = None, *, progress: Any = None, checkpoint: Any = None,
                 **overrides: Any) -> None:  # fmt: skip
        self.options = ToyOptions.make(options, overrides)
        self.progress, self.checkpoint = progress, checkpoint

    def fit(self, tuning_set: Any, init: Weights) -> TuningResult:
        started = time.perf_counter()
        space, metric = tuning_set.feature_space, tuning_set.metric
        score = ModelBest(tuning_set).score
        start = init.vector(space)
        rng = np.random.default_rng(self.options.seed)
        best_w, best = start, score(start)
        before, history = best, []
        for i in range(1, self.options.candidates + 1):
            w = start + rng.normal(0.0, self.options.spread, start.size)
            value = score(w)
            if better(value, best, metric.higher_is_better):
                best_w, best = w, value
            history.append(Iteration(i, value, 0.0))
        kept = keeps_start(before, best, metric.higher_is_better)  # the start is a candidate (one rule)
        weights = finish_weights(init, space, start if kept else best_w, self.options.normalize)
        return TuningResult(weights, before, before if kept else best, history, time.perf_counter() - started,
                            self.options.seed, metric_label(metric), higher_is_better=metric.higher_is_better,
                            kept_start=kept)  # fmt: skip
