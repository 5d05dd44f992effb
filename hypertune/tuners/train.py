"""Tuning as a loss × an optimizer: PRO, Plackett-Luce, pairwise hinge, MSE and softmax over k-best
candidates, minimized by L-BFGS with L2 (see docs/tuners.md).

The candidates are every sentence's k-best list (lattices and forests: their ``kbest`` best derivations
under the initial weights, :func:`~hypertune.tuners.kbest_lists.as_kbest_lists`), each hypothesis with its
sentence gain: BLEU+1 (Lin & Och 2004) by default, Moses ``pro``'s all-orders smoothing with
``smooth="moses"``, Nakov et al.'s brevity-penalty smoothing with ``"nakov"``. :class:`Trainer` is the
batch optimizer, its options :class:`~hypertune.tuners.train_options.TrainOptions`; :mod:`hypertune.tuners.online`
follows the same losses sentence by sentence.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hypertune import interrupts
from hypertune.metrics import better
from hypertune.tuners.base import Checkpoint, Iteration, TuningResult, metric_label
from hypertune.tuners.blas_threads import one_blas_thread
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.finishing import finish_weights, keeps_start
from hypertune.tuners.kbest_candidates import kbest_candidates
from hypertune.tuners.lbfgsb import minimize_lbfgsb
from hypertune.tuners.losses import Candidates, make_loss
from hypertune.tuners.model_best import ModelBest
from hypertune.tuners.owlqn import minimize_owlqn
from hypertune.tuners.shards import LocalShards, Shard, Shards
from hypertune.tuners.train_options import TrainOptions
from hypertune.weights import Weights


@dataclass(frozen=True)
class TrainIteration(Iteration):
    """One L-BFGS iteration: the metric of the model-best translations and the loss (L2 included)."""

    loss: float = 0.0


@dataclass
class TrainResult(TuningResult):
    """:class:`TuningResult` plus the loss, its value at the start and the end, and the pairs PRO kept."""

    loss: str = ""
    loss_before: float = 0.0
    loss_after: float = 0.0
    pairs: int = 0


class Trainer:
    """A loss (``pro``, ``pl``, ``ranking``, ``mse``, ``softmax``) minimized with L-BFGS plus ``l2``·‖w‖²/2
    (default: the loss's own, 0.1, or 1 for PL as Xia, Zhai & Wang's unit Gaussian prior) and ``l1``·‖w‖₁, the
    latter by OWL-QN (``optimizer="owlqn"``, chosen by ``"auto"`` when ``l1 > 0``; Andrew & Gao 2007). The options
    are a :class:`~hypertune.tuners.train_options.TrainOptions` (or its fields as keyword arguments): ``top_k``
    and ``sample``, PL's; ``kbest``, derivations per lattice/forest; ``smooth``, the sentence gain;
    ``acceptance``, how PRO (and ranking) accept sampled pairs, ``threshold`` (Moses) or ``sigmoid`` (cdec);
    ``interpolate``, β of cdec's ``w ← β·w_new + (1 − β)·w_init``; ``normalize``, ``l1`` (default) or ``none``,
    how the weights are finished (:func:`~hypertune.tuners.finishing.finish_weights`); when the last iterate
    scores no better than the start weights, they are the result (``kept_start``).
    Everything random comes from ``seed``. ``progress``: called after every iteration; ``checkpoint``: with the
    iteration's weights as the result would write them and their BLEU (:data:`~hypertune.tuners.base.Checkpoint`);
    a deferred signal stops the run at the next evaluation of the loss (:func:`hypertune.interrupts.check`)."""

    def __init__(
        self,
        options: TrainOptions | None = None,
        *,
        progress: Callable[[TrainIteration], None] | None = None,
        checkpoint: Checkpoint | None = None,
        **fields: Any,
    ) -> None:
        self.options = TrainOptions.make(options, fields)
        self.progress = progress
        self.checkpoint = checkpoint

    def fit(self, tuning_set: TuningSet | Shards, init: Weights) -> TrainResult:
        """Minimize the loss from ``init``. ``tuning_set`` may be sharded (:class:`~hypertune.tuners.shards.Shards`):
        every shard draws its candidates' random choices from its own generator (``seed`` alone for one
        shard, as a plain tuning set; ``[seed, shard]`` otherwise) and returns its loss and gradient, summed in
        shard order, so runs with the same number of shards are bit-identical wherever the shards are. BLAS runs on
        one thread in this process (:func:`~hypertune.tuners.blas_threads.one_blas_thread`): the results do not
        depend on the core count (a Dask worker's BLAS keeps its own setting: dask's nanny starts workers with one
        thread)."""
        with one_blas_thread():
            return self._fit(tuning_set, init)

    def _fit(self, tuning_set: TuningSet | Shards, init: Weights) -> TrainResult:
        started = time.perf_counter()
        options = self.options
        shards = LocalShards(tuning_set) if isinstance(tuning_set, TuningSet) else tuning_set
        space = shards.feature_space
        names = space.names
        start = init.vector(space, len(names))
        key = f"train:{id(self)}:{time.perf_counter_ns()}"
        pairs = shards.map(train_shard_prepare, key, options, start)  # what travels: the options
        loss = make_loss(options.loss, options.top_k, options.sample, options.acceptance)
        l2 = loss.default_l2 if options.l2 is None else options.l2
        beta, l1 = options.interpolate, float(options.l1)

        def metric(w: np.ndarray) -> float:
            return float(shards.metric.score(np.vstack(shards.map(train_shard_best_rows, w)).sum(axis=0)))

        last: dict[bytes, tuple[float, np.ndarray]] = {}  # the latest evaluation: the point the callback accepts

        def function(w: np.ndarray) -> tuple[float, np.ndarray]:
            key_w = w.tobytes()
            if key_w not in last:
                interrupts.check()  # a safe point: every evaluation of the loss
                parts = shards.map(train_shard_value, key, w)
                value, gradient = parts[0]
                for more, more_gradient in parts[1:]:
                    value, gradient = value + more, gradient + more_gradient
                last.clear()
                last[key_w] = (value + 0.5 * l2 * float(w @ w), gradient + l2 * w)
            value, gradient = last[key_w]
            return value, gradient.copy()

        history: list[Iteration] = []
        higher = shards.metric.higher_is_better
        score_before = metric(start)
        beaten = [False]  # whether the last checkpoint was a found point (not the start weights)

        def record(w: np.ndarray) -> None:
            entry = TrainIteration(len(history) + 1, metric(w), time.perf_counter() - started, function(w)[0])
            history.append(entry)
            if self.progress is not None:
                self.progress(entry)
            if self.checkpoint is not None:  # what the run would return now: this iterate, or the start weights
                weights = written(w)
                same = beta == 1.0  # the L1 norm's one positive factor keeps the model-best
                score = entry.score if same else metric(weights.vector(space, len(names)))
                if better(score, score_before, higher):
                    self.checkpoint(weights, score)
                    beaten[0] = True
                elif beaten[0]:
                    self.checkpoint(finish_weights(init, space, start, options.normalize), score_before)
                    beaten[0] = False

        def written(found: np.ndarray) -> Weights:
            return finish_weights(init, space, beta * found + (1.0 - beta) * start, options.normalize)

        before = function(start)[0] + l1 * float(np.abs(start).sum())
        if options.chosen_optimizer == "owlqn":
            found = minimize_owlqn(function, start, l1, options.iterations, callback=record)
            x, loss_after = found.x, float(found.fun)
        else:
            x, loss_after = minimize_lbfgsb(function, start, iterations=options.iterations, callback=record)
        weights = written(x)
        score_after = metric(weights.vector(space, len(names)))
        kept = keeps_start(score_before, score_after, higher)
        if kept:
            weights, score_after = finish_weights(init, space, start, options.normalize), score_before
        return TrainResult(
            weights=weights,
            score_before=score_before,
            score_after=score_after,
            history=history,
            seconds=time.perf_counter() - started,
            seed=options.seed,
            metric=metric_label(shards.metric),
            higher_is_better=shards.metric.higher_is_better,
            loss=loss.name,
            loss_before=before,
            loss_after=loss_after,
            pairs=sum(pairs),
            kept_start=kept,
        )

    def candidates(self, tuning_set: TuningSet, start: np.ndarray) -> Candidates:
        """Every sentence's k-best hypotheses with their sentence gains (:func:`train_candidates`)."""
        return train_candidates(self.options, tuning_set, start)


def train_candidates(options: TrainOptions, tuning_set: TuningSet, start: np.ndarray) -> Candidates:
    """Every sentence's k-best hypotheses (``options.kbest`` per lattice/forest) with their sentence gains
    (``options.smooth``; :func:`~hypertune.tuners.kbest_candidates.kbest_candidates`)."""
    return kbest_candidates(tuning_set, start, options.kbest, options.smooth, options.loss)


# ---------------------------------------------------------------------- the loss's shard functions
def train_shard_prepare(shard: Shard, key: str, options: TrainOptions, start: np.ndarray) -> int:
    """Prepare the shard's candidates and its loss (random choices drawn once, from the shard's generator) and
    keep them; the number of pairs PRO kept (0 for other losses)."""
    candidates = train_candidates(options, shard.tuning_set, start)
    loss = make_loss(options.loss, options.top_k, options.sample, options.acceptance)
    seed = options.seed if shard.count == 1 else [options.seed, shard.index]
    loss.prepare(candidates, start, np.random.default_rng(seed))
    shard.state[key] = loss
    return int(getattr(loss, "pairs", (np.zeros(0),))[0].size)


def train_shard_value(shard: Shard, key: str, w: np.ndarray) -> tuple[float, np.ndarray]:
    """The shard's loss and its gradient at ``w``."""
    return shard.state[key].value_and_gradient(w)


def train_shard_best_rows(shard: Shard, w: np.ndarray) -> np.ndarray:
    """The shard's sentences' statistics of their model-best translations under ``w``."""
    model_best = shard.state.get("train:model-best")
    if model_best is None:
        model_best = shard.state["train:model-best"] = ModelBest(shard.tuning_set)
    return model_best.stats(w)
