"""One driver for the tuners trained by iterative parameter mixing (McDonald et al. 2010, Algorithm 4; Simianer
et al. 2012's feature selection): batch MIRA and the online tuners.

A tuner describes its part as shard functions (:class:`Mixing`); :func:`mix` prepares the shards, scores the
start weights, and runs the epochs: every shard runs one epoch from the mixed weights, the shards' weights and
averaged weights are mixed (:func:`~hypertune.tuners.shards.mixed_epoch`), the mixed averaged weights are
scored by the corpus metric of their model-best translations, and the best epoch is kept by
:func:`~hypertune.metrics.better` (with TER, the lowest). The tuner then finishes the weights
(:mod:`hypertune.tuners.finishing`; :meth:`Mixed.keep_start`). A tuning set is one shard
(:class:`~hypertune.tuners.shards.LocalShards` of 1), whose mixture is its own weights: the plain run and the
mixed one are this one loop.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hypertune import interrupts
from hypertune.metrics import better, worst
from hypertune.tuners.base import Iteration
from hypertune.tuners.finishing import keeps_start
from hypertune.tuners.shards import Shards, mixed_epoch, ordered_sum

#: A shard's epoch: its weights, its averaged weights (what the epoch is scored by), updates, summed loss.
EpochParts = tuple[np.ndarray, np.ndarray, int, float]


@dataclass(frozen=True)
class Mixing:
    """A tuner's part of iterative parameter mixing. The shard functions are module-level (they travel to a
    cluster's workers by name, :class:`~hypertune.tuners.shards.Shards`), each called with the
    :class:`~hypertune.tuners.shards.Shard` and the run's key into ``shard.state``:

    - ``prepare(shard, key, *setup)`` sets up the shard's run and returns what the tuner wants to know of it
      (:attr:`Mixed.prepared`); ``setup`` is what travels: the options object and the start weights, never the
      tuner with its callbacks;
    - ``epoch(shard, key, mixed, epoch)``: one epoch from the mixed weights (:data:`EpochParts`);
    - ``stats(shard, key, w)``: the shard's summed metric statistics of its model-best translations under ``w``;
    - ``epoch_scoring(shard, key, mixed, epoch, v)`` (optional): ``(epoch(shard, key, mixed, epoch), stats(shard,
      key, v))`` in one pass over the shard's data; :func:`mix` then scores each epoch's weights during the next
      epoch (and the last epoch's after it), so an epoch's record comes one epoch late; the scores are the same.
      Not on shards marked ``remote`` (a cluster's: :class:`~hypertune.distributed.shards.DaskShards`); an epoch
      that fails or is interrupted first records the epoch before it.

    ``entry(epoch, score, seconds, updates, loss)`` makes an epoch's history record; ``epochs`` and ``select``
    (:func:`~hypertune.tuners.shards.mixed_columns`'s ``k``) are the tuner's options."""

    prepare: Callable[..., Any]
    epoch: Callable[..., EpochParts]
    stats: Callable[..., np.ndarray]
    setup: tuple[Any, ...]
    entry: Callable[[int, float, float, int, float], Iteration]
    epochs: int
    select: int = 0
    epoch_scoring: Callable[..., tuple[EpochParts, np.ndarray]] | None = None


@dataclass
class Mixed:
    """A run of :func:`mix`, before its weights are finished: the ``start`` weights and their score on the
    shards, the history, the best epoch's mixed (averaged) weights and score, what every shard's ``prepare``
    returned, ``score`` (a vector's corpus metric on the shards), ``timing`` and whether ``checkpoint`` was told of
    found weights (``reported``). ``timing`` holds the seconds spent in ``setup`` (the shards' ``prepare``),
    ``train`` (the epochs) and ``evaluate`` (the evaluations run on their own); ``evaluations_in_train`` counts the
    evaluations that ran inside the epochs' passes instead (``Mixing.epoch_scoring``), their time in ``train``
    (with it, only the start weights' and the last epoch's are on their own)."""

    start: np.ndarray
    score_before: float
    history: list[Iteration]
    best: np.ndarray
    best_epoch: int
    best_score: float
    prepared: list[Any]
    score: Callable[[np.ndarray], float]
    timing: dict[str, float]
    checkpoint: Callable[[np.ndarray, float], None] | None = None
    reported: bool = False
    evaluations_in_train: int = 0

    def keep_start(self, score_before: float, score_after: float, higher_is_better: bool) -> bool:
        """Whether the start weights are the result (:func:`~hypertune.tuners.finishing.keeps_start`, on the
        scores the tuner reports): if so they become :attr:`best` (epoch 0), and a checkpoint that was told of
        found weights is told of the start weights after all."""
        kept = keeps_start(score_before, score_after, higher_is_better)
        if kept:
            self.best, self.best_epoch = self.start, 0
            if self.reported and self.checkpoint is not None:
                self.checkpoint(self.start, self.score_before)
        return kept


def mix(
    shards: Shards,
    mixing: Mixing,
    start: np.ndarray,
    progress: Callable[[Any], None] | None = None,
    checkpoint: Callable[[np.ndarray, float], None] | None = None,
) -> Mixed:
    """Iterative parameter mixing from the ``start`` weights: ``mixing.epochs`` epochs over ``shards`` (see the
    module). ``progress`` is called with every epoch's record; ``checkpoint(weights, score)`` whenever the best
    epoch changes and scores better than the start. A deferred signal stops the run between epochs
    (:func:`hypertune.interrupts.check`). The same shards and seed give the same run, in one process or on a
    cluster: the shards' parts are combined in shard order."""
    timing = {"setup": 0.0, "train": 0.0, "evaluate": 0.0}  # seconds (see Mixed)
    key = f"{mixing.prepare.__module__}:{uuid.uuid4().hex}"
    began = time.perf_counter()
    prepared = shards.map(mixing.prepare, key, *mixing.setup)
    timing["setup"] = time.perf_counter() - began
    metric = shards.metric
    higher = metric.higher_is_better

    def score(w: np.ndarray) -> float:
        began = time.perf_counter()
        value = float(metric.score(ordered_sum(shards.map(mixing.stats, key, w))))
        timing["evaluate"] += time.perf_counter() - began
        return value

    score_before = score(start)
    run = Mixed(start, score_before, [], start.copy(), 0, worst(higher), prepared, score, timing, checkpoint)

    def record(epoch: int, current: np.ndarray, value: float, seconds: float, updates: int, loss: float) -> None:
        entry = mixing.entry(epoch, value, seconds, updates, loss)
        run.history.append(entry)
        if progress is not None:
            progress(entry)
        if better(value, run.best_score, higher):
            run.best, run.best_epoch, run.best_score = current, epoch, value
            if checkpoint is not None and better(value, score_before, higher):
                checkpoint(current, value)
                run.reported = True

    w = start
    pending: tuple[int, np.ndarray, float, int, float] | None = None  # an epoch trained, its score to come
    # Scored during the next epoch only in this process: on a cluster (``remote`` shards), workers lost in epoch
    # e + 1 would take epoch e's record and checkpoint with them.
    scoring = None if getattr(shards, "remote", False) else mixing.epoch_scoring
    fused = scoring is not None

    def record_pending() -> None:  # the last epoch, or the one trained before an interruption, scored on its own
        if pending is not None:
            epoch, current, seconds, updates, loss = pending
            began = time.perf_counter()
            record(epoch, current, score(current), seconds + time.perf_counter() - began, updates, loss)

    try:
        for epoch in range(1, mixing.epochs + 1):
            interrupts.check()
            began = time.perf_counter()
            if pending is not None and scoring is not None:
                done = shards.map(scoring, key, w, epoch, pending[1])
                parts = [d[0] for d in done]
                value = float(metric.score(ordered_sum([d[1] for d in done])))
                run.evaluations_in_train += 1
                record(pending[0], pending[1], value, pending[2], pending[3], pending[4])
                pending = None
            else:
                parts = shards.map(mixing.epoch, key, w, epoch)
            w, current, updates, loss = mixed_epoch(parts, mixing.select)
            timing["train"] += time.perf_counter() - began
            if fused:
                pending = (epoch, current, time.perf_counter() - began, updates, loss)
                continue
            value = score(current)
            record(epoch, current, value, time.perf_counter() - began, updates, loss)
    except BaseException:  # an interruption or a failure in epoch e + 1: epoch e's record and checkpoint first
        try:
            record_pending()
        except Exception:  # it cannot be scored either: the first error is the one to report
            pass
        raise
    record_pending()
    return run
