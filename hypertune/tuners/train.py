"""Tuning as a loss × an optimizer: PRO, Plackett-Luce, pairwise hinge, MSE and softmax over k-best
candidates, minimized by L-BFGS with L2 (see docs/tuners.md).

The candidates are every sentence's k-best list (lattices and forests: their ``kbest`` best derivations
under the initial weights, :func:`~hypertune.tuners.corpus.as_kbest_lists`), each hypothesis with its
sentence gain: BLEU+1 (Lin & Och 2004) by default, Moses ``pro``'s all-orders smoothing with
``smooth="moses"``, Nakov et al.'s brevity-penalty smoothing with ``"nakov"``. :class:`Trainer` is the
batch optimizer; the online ones come with the next tuners on the same losses.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.optimize
import scipy.sparse as sp

from hypertune import interrupts
from hypertune.choices import GAIN_SMOOTHINGS, TRAIN_OPTIMIZERS
from hypertune.errors import InputError, UsageError
from hypertune.metrics.bleu import bleu_score
from hypertune.tuners.base import Checkpoint, Iteration, TuningResult, metric_label
from hypertune.tuners.corpus import LocalShards, ModelBest, Shard, Shards, TuningSet, as_kbest_lists
from hypertune.tuners.hope_fear import Gain
from hypertune.tuners.losses import LOSSES, Candidates, make_loss
from hypertune.tuners.mert import normalize_l1
from hypertune.tuners.owlqn import minimize_owlqn
from hypertune.weights import Weights

OPTIMIZERS = TRAIN_OPTIMIZERS


def sentence_gains(stats: np.ndarray, order: int, smooth: str = "plus1") -> np.ndarray:
    """Every row's sentence BLEU: BLEU+1 (``plus1``, Lin & Och 2004), or Moses's ``smoothedSentenceBleu``
    (``moses``: +1 on every order; ``nakov``: also on the reference length)."""
    if smooth == "plus1":
        return np.asarray(Gain("bleu+1", order).score(stats), dtype=np.float64)
    if smooth in ("moses", "nakov"):
        return np.asarray(bleu_score(stats, order, smooth), dtype=np.float64)
    raise UsageError(f"unknown gain smoothing {smooth!r}; choose one of {', '.join(GAIN_SMOOTHINGS)}")


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
    (default: the loss's own, 0.1, or 1 for PL as Xia et al.'s unit Gaussian prior) and ``l1``·‖w‖₁, the
    latter by OWL-QN (``optimizer="owlqn"``, chosen by ``"auto"`` when ``l1 > 0``; Andrew & Gao 2007). ``top_k`` and
    ``sample``: PL's options. ``kbest``: derivations per lattice/forest. ``smooth``: the sentence gain.
    ``acceptance``: how PRO (and ranking) accept sampled pairs, ``threshold`` (Moses) or ``sigmoid`` (cdec).
    ``interpolate``: β of cdec's ``w ← β·w_new + (1 − β)·w_init``. ``normalize``: ``l1`` as MERT.
    Everything random comes from ``seed``. ``progress``: called after every iteration; ``checkpoint``: with the
    iteration's weights as the result would write them and their BLEU (:data:`~hypertune.tuners.base.Checkpoint`);
    a deferred signal stops the run at the next evaluation of the loss (:func:`hypertune.interrupts.check`)."""

    def __init__(
        self,
        *,
        loss: str = "pro",
        l2: float | None = None,
        l1: float = 0.0,
        optimizer: str = "auto",
        top_k: int = 5,
        sample: int | None = 30,
        kbest: int = 100,
        smooth: str = "plus1",
        acceptance: str = "threshold",
        interpolate: float = 1.0,
        normalize: str = "l1",
        iterations: int = 200,
        seed: int = 0,
        progress: Callable[[TrainIteration], None] | None = None,
        checkpoint: Checkpoint | None = None,
    ) -> None:
        if loss not in LOSSES:
            raise UsageError(f"unknown loss {loss!r}; choose one of {', '.join(LOSSES)}")
        if smooth not in GAIN_SMOOTHINGS:
            raise UsageError(f"unknown gain smoothing {smooth!r}; choose one of {', '.join(GAIN_SMOOTHINGS)}")
        if (l2 is not None and l2 < 0) or l1 < 0:
            raise UsageError("--l2 and --l1 must be >= 0")
        if optimizer not in OPTIMIZERS:
            raise UsageError(f"unknown optimizer {optimizer!r}; choose one of {', '.join(OPTIMIZERS)}")
        if optimizer == "lbfgs" and l1 > 0:
            raise UsageError("--l1 needs --optimizer owlqn (L-BFGS cannot step across the kink of |w|)")
        if not 0 < interpolate <= 1:
            raise UsageError(f"--interpolate must be in (0, 1], got {interpolate}")
        if normalize not in ("l1", "none"):
            raise UsageError(f"unknown normalization {normalize!r} (l1, none)")
        make_loss(loss, top_k, sample, acceptance)  # checks the loss's own options now
        self.loss, self.l2, self.top_k, self.sample, self.acceptance = loss, l2, top_k, sample, acceptance
        self.l1 = float(l1)
        self.optimizer = ("owlqn" if l1 > 0 else "lbfgs") if optimizer == "auto" else optimizer
        self.kbest, self.smooth, self.interpolate, self.normalize = kbest, smooth, interpolate, normalize
        self.iterations, self.seed, self.progress = iterations, seed, progress
        self.checkpoint = checkpoint

    def fit(self, tuning_set: TuningSet | Shards, init: Weights) -> TrainResult:
        """Minimize the loss from ``init``. ``tuning_set`` may be sharded (:class:`~hypertune.tuners.corpus.Shards`):
        every shard draws its candidates' random choices from its own generator (``seed`` alone for one
        shard, as a plain tuning set; ``[seed, shard]`` otherwise) and returns its loss and gradient, summed in
        shard order, so runs with the same number of shards are bit-identical wherever the shards are."""
        started = time.perf_counter()
        shards = LocalShards(tuning_set) if isinstance(tuning_set, TuningSet) else tuning_set
        space = shards.feature_space
        names = space.names
        start = init.vector(space, len(names))
        key = f"train:{id(self)}:{time.perf_counter_ns()}"
        travelling = copy.copy(self)  # what the shards need: the options, not the callbacks
        travelling.progress = travelling.checkpoint = None
        pairs = shards.map(train_shard_prepare, key, travelling, start)
        loss = make_loss(self.loss, self.top_k, self.sample, self.acceptance)
        l2 = loss.default_l2 if self.l2 is None else self.l2

        def metric(w: np.ndarray) -> float:
            return float(shards.metric.score(np.vstack(shards.map(train_shard_best_rows, w)).sum(axis=0)))

        def function(w: np.ndarray) -> tuple[float, np.ndarray]:
            interrupts.check()  # a safe point: every evaluation of the loss
            parts = shards.map(train_shard_value, key, w)
            value, gradient = parts[0]
            for more, more_gradient in parts[1:]:
                value, gradient = value + more, gradient + more_gradient
            return value + 0.5 * l2 * float(w @ w), gradient + l2 * w

        history: list[Iteration] = []

        def record(w: np.ndarray) -> None:
            entry = TrainIteration(len(history) + 1, metric(w), time.perf_counter() - started, function(w)[0])
            history.append(entry)
            if self.progress is not None:
                self.progress(entry)
            if self.checkpoint is not None:
                weights = written(w)
                same = self.interpolate == 1.0  # the L1 norm's one positive factor keeps the model-best
                self.checkpoint(weights, entry.score if same else metric(weights.vector(space, len(names))))

        def written(found: np.ndarray) -> Weights:
            w = self.interpolate * found + (1.0 - self.interpolate) * start
            weights = Weights(init)
            weights.update(Weights.from_vector(space, w))
            return normalize_l1(weights) if self.normalize == "l1" else weights

        before = function(start)[0] + self.l1 * float(np.abs(start).sum())
        if self.optimizer == "owlqn":
            found = minimize_owlqn(function, start, self.l1, self.iterations, callback=record)
        else:
            found = scipy.optimize.minimize(
                function, start, jac=True, method="L-BFGS-B", callback=record, options={"maxiter": self.iterations}
            )
        weights = written(found.x)
        final = weights.vector(space, len(names))
        return TrainResult(
            weights=weights,
            score_before=metric(start),
            score_after=metric(final),
            history=history,
            seconds=time.perf_counter() - started,
            seed=self.seed,
            metric=metric_label(shards.metric),
            higher_is_better=shards.metric.higher_is_better,
            loss=loss.name,
            loss_before=before,
            loss_after=float(found.fun),
            pairs=sum(pairs),
        )

    def candidates(self, tuning_set: TuningSet, start: np.ndarray) -> Candidates:
        """Every sentence's k-best hypotheses with their sentence gains (:func:`kbest_candidates`)."""
        return kbest_candidates(tuning_set, start, self.kbest, self.smooth, self.loss)


# ---------------------------------------------------------------------- the loss's shard functions
def train_shard_prepare(shard: Shard, key: str, trainer: Trainer, start: np.ndarray) -> int:
    """Prepare the shard's candidates and its loss (random choices drawn once, from the shard's generator) and
    keep them; the number of pairs PRO kept (0 for other losses)."""
    candidates = trainer.candidates(shard.tuning_set, start)
    loss = make_loss(trainer.loss, trainer.top_k, trainer.sample, trainer.acceptance)
    seed = trainer.seed if shard.count == 1 else [trainer.seed, shard.index]
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


def kbest_candidates(
    tuning_set: TuningSet, start: np.ndarray, kbest: int = 100, smooth: str = "plus1", purpose: str = "this"
) -> Candidates:
    """Every sentence's k-best hypotheses (lattices and forests: their ``kbest`` best under ``start``), each with
    its sentence gain (:func:`sentence_gains`) and length; ``purpose`` names the loss in the error message."""
    if tuning_set.stats_size % 2 != 1:
        raise InputError(f"the {purpose} loss needs BLEU statistics for its sentence gains")
    graphs, stats = as_kbest_lists(tuning_set, start, kbest)
    width = len(tuning_set.feature_space)
    features = sp.vstack([g.feature_matrix(width)[1:] for g in graphs], format="csr")
    offsets = np.concatenate(([0], np.cumsum([g.num_edges - 1 for g in graphs]))).astype(np.int64)
    rows = np.vstack([s[1:] for s in stats])
    order = (rows.shape[1] - 1) // 2
    return Candidates(features, offsets, sentence_gains(rows, order, smooth), lengths=rows[:, 1].copy())
