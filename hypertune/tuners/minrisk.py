"""Minimum-risk and expected-BLEU training on k-best lists, lattices and forests (Smith & Eisner 2006;
Li & Eisner 2009; Rosti et al. 2010/2011).

The model is the log-linear distribution ``p(d) ∝ exp(γ · w·h(d))`` over each sentence's search space: a
k-best list's entries as given, or a lattice's or forest's derivations. The objectives
(:mod:`hypertune.tuners.objectives`) are smooth functions of expected statistics:

* ``xbleu`` -- corpus BLEU of the expected statistics. Exact on k-best lists; on lattices and forests the
  expected n-gram counts come from the graph split by n-gram state
  (:func:`~hypertune.algorithms.intersect.intersect_ngrams`), with clipping applied to expected counts
  per reference n-gram (Rosti et al. 2011) and the reference length of the model-best derivation under
  the initial weights (exact when every reference has the same length or ``--ref-length`` is
  ``shortest``/``average``).
* ``risk`` -- mean expected ``1 - BLEU+1``. Exact on k-best lists; a lattice or forest is first replaced by
  the k-best list of its ``kbest`` best derivations under the initial weights.
* ``linear-bleu`` -- mean expected linear-BLEU gain with unclipped matches, exact on every search space.

Entropy regularization (minimize ``L - T·H``), deterministic annealing of ``T`` with quenching of ``γ``
(Smith & Eisner 2006, section 3.1), L2 and the optimizer (L-BFGS-B, bounds and fixed features as in
MERT) are the same for all three. Every gradient is exact: ``γ Cov(Q, h)`` from
:mod:`hypertune.algorithms.expectations`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from hypertune import interrupts
from hypertune.algorithms.expectations import InsideOutside, inside_outside, score_gradient
from hypertune.arrays import offsets_from_counts
from hypertune.errors import InputError, UsageError, warn
from hypertune.hypergraph import Hypergraph, PackedGraphs, packed_kbest_lists
from hypertune.metrics import BleuMetric, Metric, better
from hypertune.metrics.bleu import bleu_score
from hypertune.metrics.gains import gain_for, has_bleu_statistics, sentence_gains
from hypertune.metrics.linear_bleu import LinearBleu, estimate_precisions
from hypertune.tuners.base import Checkpoint, Iteration, TuningResult, metric_label
from hypertune.tuners.blas_threads import one_blas_thread
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.finishing import finish_weights, keeps_start
from hypertune.tuners.kbest_lists import as_kbest_lists
from hypertune.tuners.lbfgsb import minimize_lbfgsb
from hypertune.tuners.minrisk_options import Annealing, MinRiskOptions
from hypertune.tuners.model_best import ModelBest, batch_arrays
from hypertune.tuners.objectives import (
    ExpectedBleu,
    ExpectedGain,
    ExpectedLinearBleu,
    ExpectedRisk,
    Objective,
    ObjectiveValue,
)
from hypertune.tuners.owlqn import minimize_owlqn
from hypertune.tuners.shards import LocalShards, Shard, Shards, ordered_sum
from hypertune.weights import Weights

if TYPE_CHECKING:
    from hypertune.tuners.ngram_edges import NgramEdges


@dataclass(frozen=True)
class Evaluation:
    """An objective at some weights: the tuned objective's ``value`` in its own sign (risk, xbleu or
    expected gain), the mean per-sentence ``entropy`` (nats), the gradient of ``value`` with respect to the
    weights and to the scale γ (entropy and L2 not included), and the named figures."""

    objective: str
    value: float
    entropy: float
    gradient: dict[str, float]
    scale_gradient: float
    parts: dict[str, float]
    sentences: int

    def to_json(self) -> dict[str, object]:
        return {
            "objective": self.value,
            **self.parts,
            "entropy": self.entropy,
            "gradient": self.gradient,
            "scale_gradient": self.scale_gradient,
            "sentences": self.sentences,
        }


@dataclass(frozen=True)
class MinRiskIteration(Iteration):
    """One L-BFGS iteration: the metric of the model-best translations, the minimized objective (``L - T·H
    + L2``), the tuned objective in its own sign, ``T`` and ``γ``."""

    objective: float = 0.0
    value: float = 0.0
    temperature: float = 0.0
    scale: float = 1.0


@dataclass
class MinRiskResult(TuningResult):
    """:class:`TuningResult` plus the objective before and after (in its own sign), the final scale γ and
    the number of objective evaluations."""

    objective: str = "xbleu"
    objective_before: float = 0.0
    objective_after: float = 0.0
    scale: float = 1.0
    evaluations: int = 0


@dataclass
class _Space:
    """The packed search spaces of a tuning set, with one row of quantities per edge (see
    :mod:`hypertune.tuners.objectives`) and the objective that reads their totals. Edge ``e`` has the
    features of row ``rows[e]`` of ``features`` (``rows`` is None when they are in edge order): the edges
    of an n-gram-split graph are copies of the original edges, whose features are stored once."""

    packed: PackedGraphs
    features: sp.csr_matrix
    rows: np.ndarray | None
    quantities: sp.csr_matrix
    objective: Objective
    sentences: int

    def scores(self, w: np.ndarray) -> np.ndarray:
        """``w·h_e`` for every packed edge."""
        u = self.features @ w
        return u if self.rows is None else u[self.rows]

    def feature_sums(self, values: np.ndarray) -> np.ndarray:
        """``Σ_e values[e] h_e`` over the packed edges."""
        if self.rows is not None:
            values = np.bincount(self.rows, values, minlength=self.features.shape[0])
        return self.features.T @ values


class MinRisk:
    """Minimum risk / expected BLEU training (see the module docstring). The options are a
    :class:`~hypertune.tuners.minrisk_options.MinRiskOptions` (or its fields as keyword arguments):

    ``objective``: ``xbleu`` (default), ``risk`` or ``linear-bleu``. ``scale``: γ (default 1), fixed unless
    ``optimize_scale``. ``entropy``: T of ``L - T·H`` (default 0); ``anneal``: a ``START:FACTOR:FLOOR``
    annealing schedule (or an :class:`~hypertune.tuners.minrisk_options.Annealing`) instead, quenching γ up
    to ``quench_max`` (γ fixed while T falls, then quenched). ``l2``: λ of ``λ‖w‖²/2`` (the scale is not
    regularized); ``l1``: of ``l1·‖w‖₁``, minimized by OWL-QN (:mod:`hypertune.tuners.owlqn`) instead of
    L-BFGS-B. ``smooth_bp``: τ of xbleu's smooth brevity penalty (0: the hard one). ``linear_p``,
    ``linear_r``: Tromble et al.'s p and r (default: estimated from the model-best translations under the
    initial weights). ``sentence_bleu``: ``risk``'s sentence BLEU, ``"bleu+1"`` (default) or ``"ibm"`` (cdec's,
    :func:`sentence_bleu`); ``start_norm``: ``"none"`` (default) or ``"l2"``, the start weights divided by their L2
    norm (:func:`unit_l2`; cdec's ``minrisk_optimize`` does both). ``kbest``: derivations per lattice/forest for
    ``risk``. ``iterations``: the most
    L-BFGS iterations per run; ``tolerance``: a run also stops when an iteration improves the objective by
    less than this fraction of its size (L-BFGS-B's ``ftol``). ``fixed``, ``bounds``: as MERT's. ``normalize``:
    ``"l1"`` (default) or ``"none"``, how the weights are finished (:func:`~hypertune.tuners.finishing.finish_weights`:
    the ``init`` weights of features the inputs lack are kept); when the weights found score no better than
    ``init``, ``init`` is the result (``kept_start``). The result's ``scale`` γ and objective figures are the
    optimizer's, for the weights before normalization. ``seed`` is recorded (nothing is random).
    ``progress``: called after every iteration; ``checkpoint``: with the iteration's weights, as written, and
    BLEU when they beat the start (:data:`~hypertune.tuners.base.Checkpoint`); a deferred signal stops the run
    at the next evaluation of the objective (:func:`hypertune.interrupts.check`).
    """

    def __init__(
        self,
        options: MinRiskOptions | None = None,
        *,
        progress: Callable[[MinRiskIteration], None] | None = None,
        checkpoint: Checkpoint | None = None,
        **fields: Any,
    ) -> None:
        self.options = MinRiskOptions.make(options, fields)
        self.progress = progress
        self.checkpoint = checkpoint

    def evaluate(self, tuning_set: TuningSet | Shards, weights: Weights) -> Evaluation:
        """The objective, the entropy and their gradients at ``weights`` (γ = ``scale``), no training."""
        with one_blas_thread():
            problem = RiskProblem(self, tuning_set, weights)
            return problem.evaluation(problem.start, self.options.scale)

    def fit(self, tuning_set: TuningSet | Shards, init: Weights) -> MinRiskResult:
        """Train from ``init``. ``tuning_set`` may be sharded (:class:`~hypertune.tuners.shards.LocalShards` or
        a cluster's): every shard computes its partial totals and gradient and they are summed in shard order,
        so runs with the same number of shards are bit-identical wherever the shards are. BLAS runs on one thread
        in this process (:func:`~hypertune.tuners.blas_threads.one_blas_thread`): the results do not depend on the
        core count (a Dask worker's BLAS keeps its own setting: dask's nanny starts workers with one thread)."""
        with one_blas_thread():
            return RiskProblem(self, tuning_set, init).fit()

    def problem(self, tuning_set: TuningSet | Shards, init: Weights) -> RiskProblem:
        """The prepared objective (search spaces split or extracted once), for calling
        :meth:`RiskProblem.value_and_gradient` directly: benchmarks, custom optimizers."""
        return RiskProblem(self, tuning_set, init)


class RiskProblem:
    """One fit or evaluation: the tuner (its options travel to the shards, its callbacks stay here), the search
    spaces prepared once per shard (k-best extraction or n-gram split, per-edge quantities; :class:`_RiskShard`),
    the free weights, and the objective as a function of ``(w, γ, T)``. A plain tuning set is one shard; the
    objective reads the shards' totals combined in shard order (:func:`risk_shard_totals`,
    :func:`risk_shard_gradient`)."""

    def __init__(self, tuner: MinRisk, tuning_set: TuningSet | Shards, init: Weights) -> None:
        self.tuner = tuner
        self.options = options = tuner.options
        self.fixed = set(options.fixed)
        self.bounds = dict(options.bounds or {})
        self.annealing: Annealing | None = options.annealing
        self.shards = LocalShards(tuning_set) if isinstance(tuning_set, TuningSet) else tuning_set
        self.tuning_set = tuning_set
        space = self.shards.feature_space
        self.metric = self.shards.metric
        self.names = space.names
        self.width = len(self.names)
        self.init = init = unit_l2(init) if options.start_norm == "l2" else init
        self.start = init.vector(space, self.width)
        self.before = math.nan  # the start weights' metric, once fit measures it
        self._reported: np.ndarray | None = None  # the weights of the last checkpoint (``None``: none yet)
        order = self.shards.map(risk_shard_check)[0]
        if options.objective == "linear-bleu" and (self.metric.given_names or not has_bleu_statistics(self.metric)):
            _refuse_linear_bleu(self.metric)
        precisions = None
        if options.objective == "linear-bleu" and options.linear_p is None:  # estimated from the whole corpus
            precisions = estimate_precisions(np.vstack(self.shards.map(risk_shard_best_rows, self.start)), order)
        self.key = f"minrisk:{self.shards.count}:{id(self)}"
        parts = self.shards.map(risk_shard_prepare, self.key, options, self.start, precisions)
        self.objective = _combined_objective(parts[0].objective, parts)
        self.sentences = sum(part.sentences for part in parts)
        self.shared = parts[0].shared  # leading total columns every shard adds to; the rest are each shard's own
        self.own = [part.columns - part.shared for part in parts]
        self.used = np.logical_or.reduce([part.used for part in parts])
        self.free = self._free_features()
        free = {self.names[k] for k in self.free}
        #: whether the start weights are within the bounds, and so a candidate (:func:`keeps_start`)
        self.feasible = all(low <= self.start[self.names.index(name)] <= high
                            for name, (low, high) in self.bounds.items() if name in free)  # fmt: skip
        self.evaluations = 0

    def _free_features(self) -> np.ndarray:
        unknown = (self.fixed | set(self.bounds)) - set(self.names)
        if unknown:
            raise UsageError(f"no such feature in the tuning set (fixed or bounded): {', '.join(sorted(unknown))}")
        used = self.used
        fixed = np.array([name in self.fixed for name in self.names], dtype=bool)
        return np.flatnonzero(used & ~fixed)

    # ------------------------------------------------------------------ objective and gradient
    def value_and_gradient(
        self, w: np.ndarray, gamma: float, temperature: float = 0.0
    ) -> tuple[float, np.ndarray, float, dict[str, float]]:
        """``L - T·H + λ‖w‖²/2`` at ``(w, γ)`` (``w`` over the whole feature space), its gradient in ``w``
        and in ``γ``, and the figures (``loss``: L; ``value``: the tuned objective in its own sign;
        ``entropy``)."""
        self.evaluations += 1
        result, entropy, gradient, scale_gradient = self._terms(w, gamma, temperature)
        l2 = self.options.l2
        value = result.value - temperature * entropy + 0.5 * l2 * float(w @ w)
        figures = {"loss": result.value, "value": _own_sign(self.objective, result.value), "entropy": entropy}
        return value, gradient + l2 * w, scale_gradient, figures

    def evaluation(self, w: np.ndarray, gamma: float) -> Evaluation:
        """The tuned objective alone (T = 0, no L2) and its gradient, in the objective's own sign."""
        result, entropy, gradient, scale_gradient = self._terms(w, gamma, 0.0)
        sign = _own_sign(self.objective, 1.0)
        return Evaluation(
            self.objective.name,
            sign * result.value,
            entropy,
            {self.names[k]: sign * float(gradient[k]) for k in np.union1d(self.free, np.flatnonzero(gradient))},
            sign * scale_gradient,
            result.parts,
            self.sentences,
        )

    def _terms(
        self, w: np.ndarray, gamma: float, temperature: float
    ) -> tuple[ObjectiveValue, float, np.ndarray, float]:
        """The objective at ``(w, γ)``, the mean entropy, and the gradient of ``L - T·H`` in ``w`` and ``γ``:
        one inside-outside pass per shard giving its expected totals, the objective of the combined totals on
        this side, then one covariance pass per shard with the combined edge quantity. Shards' parts are added
        in shard order (one shard: its own values, exactly)."""
        parts = self.shards.map(risk_shard_totals, self.key, w, gamma)
        shared = ordered_sum([totals[: self.shared] for totals, _, _ in parts])
        totals = np.concatenate([shared, *(totals[self.shared :] for totals, _, _ in parts)])
        result = self.objective.evaluate(totals)
        sentences = self.sentences
        entropy = float(ordered_sum([lp for _, lp, _ in parts]) - ordered_sum([ps for _, _, ps in parts])) / sentences
        head, tail = result.coefficients[: self.shared], result.coefficients[self.shared :]
        bounds = offsets_from_counts(self.own)
        coefficients = [np.concatenate((head, tail[a:b])) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        gradients = self.shards.map_each(
            risk_shard_gradient, coefficients, self.key, w, gamma, temperature / sentences if temperature else 0.0
        )
        gradient = ordered_sum([g for g, _ in gradients])
        return result, entropy, gamma * gradient, float(ordered_sum([d for _, d in gradients]))

    # ------------------------------------------------------------------ training
    def fit(self) -> MinRiskResult:
        options = self.options
        started = time.perf_counter()
        before = self.before = self.metric_at(self.start)
        value_before = self.evaluation(self.start, options.scale).value
        history: list[Iteration] = []
        w, gamma = self.start.copy(), options.scale
        best = (math.inf, w.copy(), gamma)  # (unregularized L, w, γ)
        annealing = self.annealing
        steps = annealing.schedule(gamma) if annealing else [(options.entropy, gamma)]
        for temperature, step_gamma in steps:
            gamma = step_gamma if annealing else gamma
            w, gamma = self._minimize(w, gamma, temperature, history, started)
            loss = self.value_and_gradient(w, gamma, 0.0)[3]["loss"]
            if loss < best[0]:
                best = (loss, w.copy(), gamma)
        _, w, gamma = best
        after = self.metric_at(w)
        kept = keeps_start(before, after, self.metric.higher_is_better, self.feasible)
        final = self.start if kept else w
        weights = self.written(final)
        if self._reported is not None and not np.array_equal(self._reported, final):
            self._report(final, before if kept else after)  # annealing kept an earlier run's point, or the start
        return MinRiskResult(
            weights=weights,
            score_before=before,
            score_after=before if kept else after,
            history=history,
            seconds=time.perf_counter() - started,
            seed=options.seed,
            metric=metric_label(self.metric),
            higher_is_better=self.metric.higher_is_better,
            objective=self.objective.name,
            objective_before=value_before,
            objective_after=self.evaluation(w, gamma).value,
            scale=gamma,
            evaluations=self.evaluations,
            kept_start=kept,
        )

    def written(self, w: np.ndarray) -> Weights:
        """Weights ``w`` as the result writes them (:func:`~hypertune.tuners.finishing.finish_weights`)."""
        return finish_weights(self.init, self.shards.feature_space, w, self.options.normalize)

    def _offer(self, w: np.ndarray, score: float) -> None:
        """Tell ``checkpoint`` what the run would return now: iterate ``w`` when it beats the start weights,
        else the start weights again if an earlier iterate was reported."""
        if not self.feasible or better(score, self.before, self.metric.higher_is_better):
            self._report(w, score)
        elif self._reported is not None and self._reported is not self.start:
            self._report(self.start, self.before)

    def _report(self, w: np.ndarray, score: float) -> None:
        if self.tuner.checkpoint is not None:
            self.tuner.checkpoint(self.written(w), score)
            self._reported = w

    def _minimize(
        self, w: np.ndarray, gamma: float, temperature: float, history: list[Iteration], started: float
    ) -> tuple[np.ndarray, float]:
        """One L-BFGS-B run at entropy weight ``temperature`` from ``(w, γ)``; γ moves only with
        ``optimize_scale``."""
        free, optimize_scale = self.free, self.options.optimize_scale
        x0 = np.concatenate((w[free], [gamma] if optimize_scale else []))

        def unpack(x: np.ndarray) -> tuple[np.ndarray, float]:
            full = w.copy()
            full[free] = x[: free.size]
            return full, float(x[-1]) if optimize_scale else gamma

        last: dict[bytes, tuple] = {}  # the latest evaluation, which the callback's accepted point usually is

        def evaluate(x: np.ndarray) -> tuple:
            key = x.tobytes()
            if key not in last:
                interrupts.check()  # a safe point: every evaluation of the objective
                last.clear()
                full, g = unpack(x)
                last[key] = self.value_and_gradient(full, g, temperature)
            return last[key]

        def function(x: np.ndarray) -> tuple[float, np.ndarray]:
            value, gradient, scale_gradient, _ = evaluate(x)
            return value, np.concatenate((gradient[free], [scale_gradient] if optimize_scale else []))

        def record(x: np.ndarray) -> None:
            full, g = unpack(x)
            value, _, _, figures = evaluate(x)
            value += self.options.l1 * float(np.abs(full[free]).sum())
            entry = MinRiskIteration(
                len(history) + 1,
                self.metric_at(full),
                time.perf_counter() - started,
                value,
                figures["value"],
                temperature,
                g,
            )
            history.append(entry)
            if self.tuner.progress is not None:
                self.tuner.progress(entry)
            self._offer(full, entry.score)

        if self.options.l1:  # OWL-QN: L1 on the weights, none on the scale
            penalty = np.concatenate((np.full(free.size, self.options.l1), [0.0] if optimize_scale else []))
            found = minimize_owlqn(function, x0, penalty, self.options.iterations, tolerance=self.options.tolerance,
                                   callback=record)  # fmt: skip
            return unpack(found.x)
        bounds = self._bounds() + ([(1e-6, None)] if optimize_scale else [])
        x, _ = minimize_lbfgsb(function, x0, iterations=self.options.iterations, ftol=self.options.tolerance,
                               bounds=bounds, callback=record)  # fmt: skip
        return unpack(x)

    def _bounds(self) -> list[tuple[float | None, float | None]]:
        out: list[tuple[float | None, float | None]] = []
        for k in self.free:
            low, high = self.bounds.get(self.names[k], (-math.inf, math.inf))
            if low > high:
                raise UsageError(f"bounds of {self.names[k]}: {low} > {high}")
            out.append((None if low == -math.inf else low, None if high == math.inf else high))
        return out

    def metric_at(self, w: np.ndarray) -> float:
        """The tuning metric of the model-best translations under ``w``."""
        return float(self.metric.score(np.vstack(self.shards.map(risk_shard_best_rows, w)).sum(axis=0)))


# ---------------------------------------------------------------------- the objective's shard functions


@dataclass(frozen=True)
class RiskShardSummary:
    """What a shard reports once prepared: its objective (for its sentences), sentence count, total columns
    (``shared`` of them added across shards, the rest its own clipped n-gram types) and used features."""

    objective: Objective
    sentences: int
    columns: int
    shared: int
    used: np.ndarray


class _RiskShard:
    """A shard's prepared search spaces and the last inside-outside pass (reused by the gradient call)."""

    def __init__(self, shard: Shard, options: MinRiskOptions, start: np.ndarray, precisions: tuple | None) -> None:
        self.model_best = _model_best(shard)
        self.space = _prepare(shard.tuning_set, options, start, self.model_best, precisions)
        self.last: tuple[bytes, float, np.ndarray, InsideOutside] | None = None

    def pass_at(self, w: np.ndarray, gamma: float) -> tuple[np.ndarray, InsideOutside]:
        key = np.ascontiguousarray(w).tobytes()
        if self.last is None or self.last[0] != key or self.last[1] != gamma:
            u = self.space.scores(w)
            self.last = (key, gamma, u, inside_outside(self.space.packed, gamma * u))
        return self.last[2], self.last[3]


def risk_shard_prepare(
    shard: Shard, key: str, options: MinRiskOptions, start: np.ndarray, precisions: tuple[float, float] | None
) -> RiskShardSummary:
    """Prepare the shard's search spaces under ``start`` and keep them; report its summary."""
    prepared = shard.state[key] = _RiskShard(shard, options, start, precisions)
    space = prepared.space
    used = np.zeros(space.features.shape[1], dtype=bool)
    used[np.unique(space.features.indices)] = True
    objective = space.objective
    shared = 2 * objective.max_order + 1 if isinstance(objective, ExpectedBleu) else space.quantities.shape[1]
    return RiskShardSummary(objective, space.sentences, space.quantities.shape[1], shared, used)


def risk_shard_totals(shard: Shard, key: str, w: np.ndarray, gamma: float) -> tuple[np.ndarray, float, float]:
    """A shard's expected totals of its edge quantities at ``(w, γ)``, and its two entropy sums
    (``Σ log Z`` and ``Σ posterior · score``)."""
    prepared: _RiskShard = shard.state[key]
    _, io = prepared.pass_at(w, gamma)
    totals = prepared.space.quantities.T @ io.posteriors
    return totals, float(io.log_partition.sum()), float(io.posteriors @ io.scores)


def risk_shard_gradient(
    shard: Shard, coefficients: np.ndarray, key: str, w: np.ndarray, gamma: float, temperature: float
) -> tuple[np.ndarray, float]:
    """A shard's part of the gradient: ``Σ_e c_e h_e`` and ``u · c`` for the covariance ``c`` of its edges with
    the edge quantity ``quantities @ coefficients`` (+ ``temperature`` × score: T over the sentence count).
    ``coefficients``: the objective's, for the shared totals and this shard's own n-gram types only."""
    prepared: _RiskShard = shard.state[key]
    u, io = prepared.pass_at(w, gamma)
    space = prepared.space
    quantity = space.quantities @ coefficients
    if temperature:
        quantity = quantity + temperature * io.scores
    c = score_gradient(space.packed, io, quantity)
    return space.feature_sums(c), float(u @ c)


def risk_shard_best_rows(shard: Shard, w: np.ndarray) -> np.ndarray:
    """A shard's sentences' statistics of their model-best translations under ``w``."""
    return _model_best(shard).stats(w)


def _model_best(shard: Shard) -> ModelBest:
    """The shard's :class:`ModelBest`, packed once for the preparation and every later metric."""
    model_best = shard.state.get("minrisk:model-best")
    if model_best is None:
        model_best = shard.state["minrisk:model-best"] = ModelBest(shard.tuning_set)
    return model_best


def _combined_objective(first: Objective, parts: list[RiskShardSummary]) -> Objective:
    """The whole corpus's objective from the shards' own: the sentence count summed, xbleu's clipped n-gram
    types concatenated in shard order."""
    sentences = sum(part.sentences for part in parts)
    if isinstance(first, ExpectedBleu):
        shards = [part.objective for part in parts if isinstance(part.objective, ExpectedBleu)]  # all, as first
        orders = [objective.clip_orders for objective in shards]
        limits = [objective.clip_limits for objective in shards]
        if len(parts) == 1:
            return first
        return ExpectedBleu(first.max_order, first.smooth_bp, np.concatenate(orders), np.concatenate(limits))
    return type(first)(sentences)


def risk_shard_check(shard: Shard) -> int:
    """The shard's metric checked (BLEU statistics); its n-gram order."""
    _check_metric(shard.tuning_set)
    return _max_order(shard.tuning_set)


def _own_sign(objective: Objective, value: float) -> float:
    """The minimized value of an objective in the objective's own sign (xbleu and gain are maximized)."""
    return -value if isinstance(objective, ExpectedBleu | ExpectedGain) else value


def _bleu_statistics(tuning_set: TuningSet) -> bool:
    """Whether the tuning set's statistics are BLEU's (BLEU, or precomputed SCORESTAT); otherwise minimum risk
    maximizes the expected sentence value of the metric (:class:`ExpectedGain`)."""
    if tuning_set.metric.given_names:
        return False
    return tuning_set.precomputed or has_bleu_statistics(tuning_set.metric)


def _check_metric(tuning_set: TuningSet) -> None:
    if not _bleu_statistics(tuning_set):
        return
    if tuning_set.precomputed:
        if tuning_set.stats_size % 2 != 1:
            raise InputError("minimum-risk training needs BLEU statistics (m1 c1 ... mN cN reflen)")
        return
    _bleu_metric(tuning_set)


def _bleu_metric(tuning_set: TuningSet) -> BleuMetric:
    """The tuning set's metric, which must be BLEU (the statistics are computed from the words)."""
    metric = tuning_set.metric
    if not isinstance(metric, BleuMetric):
        raise UsageError(f"minimum-risk training is defined on BLEU statistics; --metric {metric_label(metric)} "
                         "is not BLEU")  # fmt: skip
    return metric


# ---------------------------------------------------------------------- preparing the search spaces
def _prepare(
    tuning_set: TuningSet,
    options: MinRiskOptions,
    start: np.ndarray,
    model_best: ModelBest,
    precisions: tuple[float, float] | None = None,
) -> _Space:
    """Pack the search spaces the objective runs on and their per-edge quantities (``precisions``: linear
    BLEU's p and r when estimated from a whole corpus this is a shard of)."""
    order = _max_order(tuning_set)
    if not _bleu_statistics(tuning_set):
        if options.sentence_bleu != "bleu+1":
            raise UsageError(
                f"--sentence-bleu {options.sentence_bleu} is a BLEU loss, but the metric "
                f"({metric_label(tuning_set.metric)}) has no BLEU statistics: its own sentence score is the loss"
            )
        return _expected_score_space(tuning_set, options, start)
    if options.objective == "xbleu" and batch_arrays(tuning_set):
        return _batch_xbleu_space(tuning_set, options, order)
    graphs = list(tuning_set.graphs)
    if options.objective == "risk":
        graphs, lists = as_kbest_lists(tuning_set, start, options.kbest)
        stats = np.vstack(lists)
        losses = 1.0 - sentence_bleu(stats, order, options.sentence_bleu)
        losses[offsets_from_counts([hg.num_edges for hg in graphs])[:-1]] = 0.0  # each list's start axiom (edge 0)
        return _space(graphs, [(hg, None) for hg in graphs], losses[:, None], ExpectedRisk(len(graphs)))
    if any(not hg.is_kbest for hg in graphs) and not tuning_set._ids_are_tokens():
        raise UsageError(f"{options.objective} on lattices and forests counts n-grams of word ids: use --tokenize "
                         "none without --lowercase")  # fmt: skip
    if options.objective == "linear-bleu":
        return _linear_bleu_space(tuning_set, options, model_best.stats(start), order, precisions)
    return _xbleu_space(tuning_set, options, model_best.stats(start), order)


def sentence_bleu(stats: np.ndarray, order: int, kind: str) -> np.ndarray:
    """The sentence BLEU of every row of ``stats`` that ``risk`` takes as ``1 - loss``: ``bleu+1``, BLEU+1 (Lin &
    Och 2004; :func:`~hypertune.metrics.gains.sentence_gains`), or ``ibm``, cdec's ``IBM_BLEU`` of the sentence
    alone (mteval/ns.cc: a zero match count taken as 0.01, only orders with hypothesis n-grams averaged), the
    loss of cdec's ``minrisk_optimize`` (training/utils/risk.cc)."""
    if kind == "ibm":
        return np.asarray(bleu_score(stats, order, ibm=True), dtype=np.float64)
    return np.asarray(sentence_gains(stats, order, "bleu+1"), dtype=np.float64)


def unit_l2(weights: Weights) -> Weights:
    """``weights`` divided by the L2 norm of the scores' weights (``scale`` included), as cdec's
    ``minrisk_optimize`` divides its start weights (``start_norm="l2"``); unchanged when all are zero."""
    norm = math.hypot(*(weights.scale * v for v in weights.values()))  # no overflow, no underflow to 0
    return Weights({k: v / norm for k, v in weights.items()}, weights.scale) if norm > 0 else weights.copy()


def _expected_score_space(tuning_set: TuningSet, options: MinRiskOptions, start: np.ndarray) -> _Space:
    """A metric whose statistics are not BLEU's: every sentence as a k-best list (lattices and forests: their
    ``kbest`` best under the start weights), one column: each hypothesis's sentence value as a gain
    (:func:`~hypertune.metrics.gains.gain_for`; a given score as it is), maximized in expectation."""
    metric = tuning_set.metric
    if options.objective == "linear-bleu":
        _refuse_linear_bleu(metric)
    graphs, lists = as_kbest_lists(tuning_set, start, options.kbest)
    gains = np.asarray(gain_for(metric).score(np.vstack(lists)), dtype=np.float64)
    gains[offsets_from_counts([hg.num_edges for hg in graphs])[:-1]] = 0.0  # each list's start axiom (edge 0)
    return _space(graphs, [(hg, None) for hg in graphs], gains[:, None], ExpectedGain(len(graphs)))


def _refuse_linear_bleu(metric: Metric) -> None:
    raise UsageError(f"--objective linear-bleu needs BLEU statistics; --metric {metric_label(metric)} is tuned by "
                     "its expected sentence value (the default objective)")  # fmt: skip


def _space(
    graphs: list[Hypergraph], sources: list[_Source], quantities: np.ndarray | sp.spmatrix, objective: Objective
) -> _Space:
    """Pack ``graphs``; the features of graph ``s``'s edges are those of ``sources[s]``: a graph and the row of
    it each edge copies (``None``: the graph itself, edge for edge)."""
    width = len(graphs[0].feature_space)
    features = sp.vstack([source.feature_matrix(width) for source, _ in sources], format="csr")
    rows = None
    if any(origin is not None for _, origin in sources):
        starts = offsets_from_counts([source.num_edges for source, _ in sources])
        rows = np.concatenate([
            start + (np.arange(source.num_edges) if origin is None else origin)
            for (source, origin), start in zip(sources, starts, strict=False)
        ])  # fmt: skip
    packed = PackedGraphs.pack(graphs, features=False)
    return _Space(packed, features, rows, sp.csr_matrix(quantities), objective, len(packed))


_Source = tuple[Hypergraph, np.ndarray | None]


def _max_order(tuning_set: TuningSet) -> int:
    if not _bleu_statistics(tuning_set):
        return 4  # unused: the gain is the metric's own sentence value
    if tuning_set.precomputed:
        return (tuning_set.stats_size - 1) // 2
    return _bleu_metric(tuning_set).max_order


def _unclipped_stats(tuning_set: TuningSet) -> list[np.ndarray | None]:
    """Every k-best edge's BLEU statistics with unclipped matches (Tromble et al.'s linear BLEU counts an
    n-gram when it occurs in any reference), from the words; precomputed statistics are clipped already.
    ``None`` for a graph that is not a k-best list."""
    if tuning_set.precomputed:
        warn("linear-bleu on SCORESTAT statistics uses their clipped matches (the words are not in the file)")
        return [tuning_set.edge_stats(s) if hg.is_kbest else None for s, hg in enumerate(tuning_set.graphs)]
    metric = _bleu_metric(tuning_set)
    unclipped = BleuMetric(
        max_order=metric.max_order,
        ref_length=metric.ref_length,
        tokenize=metric.tokenizer.name,
        lowercase=metric.tokenizer.lowercase,
        clip=False,
    )
    other = TuningSet(tuning_set.graphs, tuning_set.references, unclipped, tuning_set.sentence_ids)
    return [other.edge_stats(s) if hg.is_kbest else None for s, hg in enumerate(tuning_set.graphs)]


def _linear_bleu_space(
    tuning_set: TuningSet, options: MinRiskOptions, best: np.ndarray, order: int, precisions: tuple | None = None
) -> _Space:
    """One column: every edge's linear-BLEU gain, with ``p`` and ``r`` given or estimated from ``best``
    (the statistics of the model-best translations under the initial weights)."""
    if precisions is not None:
        p, r = precisions
    elif options.linear_p is None or options.linear_r is None:  # both or neither (MinRiskOptions.check)
        p, r = estimate_precisions(best, order)
    else:
        p, r = float(options.linear_p), float(options.linear_r)
    theta = LinearBleu(p, r, bleu=BleuMetric(max_order=order)).theta
    stats = _unclipped_stats(tuning_set)
    graphs, gains = [], []
    sources: list[_Source] = []
    for s, hg in enumerate(tuning_set.graphs):
        rows = stats[s]
        if rows is not None:  # a k-best list
            gain = theta[0] * rows[:, 1] + rows[:, 0 : 2 * order : 2] @ theta[1:]
            gain[0] = 0.0
            graphs.append(hg)
            sources.append((hg, None))
        else:
            split = _ngram_edges(tuning_set, s, order)
            gain = split.counts[:, 0] * theta[0] + split.unclipped_matches() @ theta[1:]
            graphs.append(split.graph)
            sources.append((hg, split.origin))
        gains.append(gain)
    return _space(graphs, sources, np.concatenate(gains)[:, None], ExpectedLinearBleu(len(graphs)))


def _batch_xbleu_space(tuning_set: TuningSet, options: MinRiskOptions, order: int) -> _Space:
    """:func:`_xbleu_space` of a tuning set that is one batch of k-best lists (:func:`batch_arrays`), from the
    batch's arrays: the same packed lattices, features and statistics, without making a graph per list."""
    batch = tuning_set.batch
    assert batch is not None
    width = len(tuning_set.feature_space)
    words, word_offsets = (batch.words if batch.words is not None
                           else (np.zeros(0, np.int64), np.zeros(batch.num_hypotheses + 1, np.int64)))  # fmt: skip
    packed, hypotheses = packed_kbest_lists(batch.list_offsets, words, word_offsets, len(batch.feature_space))
    edges = packed.num_edges
    rows = tuning_set.batch_rows()
    stats = np.zeros((edges, rows.shape[1]))
    stats[hypotheses] = rows
    hyp_features = batch.feature_rows()
    lengths = np.zeros(edges, dtype=np.int64)
    lengths[hypotheses] = np.diff(hyp_features.indptr)
    features = sp.csr_matrix((hyp_features.data, hyp_features.indices, offsets_from_counts(lengths)),
                             shape=(edges, width))  # fmt: skip
    no_types = sp.csr_matrix((np.ones(0), (np.zeros(0, np.int64), np.zeros(0, np.int64))), shape=(edges, 0))
    quantities = sp.hstack([sp.csr_matrix(stats), no_types], format="csr")
    objective = ExpectedBleu(order, options.smooth_bp, None, None)
    return _Space(packed, features, None, quantities, objective, len(packed))


def _ngram_edges(tuning_set: TuningSet, sentence: int, order: int) -> NgramEdges:
    """Sentence ``sentence``'s graph split by n-gram state (imported here: k-best lists never need it)."""
    from hypertune.tuners.ngram_edges import NgramEdges

    return NgramEdges.of(tuning_set, sentence, order)


def _xbleu_space(tuning_set: TuningSet, options: MinRiskOptions, best: np.ndarray, order: int) -> _Space:
    """Columns: the BLEU statistics (exact per hypothesis on k-best lists; n-gram counts and the reference
    length on split forests), then one column per reference n-gram of every forest sentence (clipped
    expected counts, see :class:`~hypertune.tuners.objectives.ExpectedBleu`). ``best``: the statistics of
    the model-best translations under the initial weights, whose reference length forests take."""
    graphs, stats, type_rows, type_columns, clip_orders, clip_limits = [], [], [], [], [], []
    sources: list[_Source] = []
    edges = types = 0
    for s, hg in enumerate(tuning_set.graphs):
        if hg.is_kbest:
            block = tuning_set.edge_stats(s)
            graphs.append(hg)
            sources.append((hg, None))
        else:
            split = _ngram_edges(tuning_set, s, order)
            block = np.zeros((split.graph.num_edges, 2 * order + 1))
            block[:, 1 : 2 * order : 2] = split.counts
            block[split.goal_edges(), 2 * order] = best[s, 2 * order]
            graphs.append(split.graph)
            sources.append((hg, split.origin))
            type_rows.append(edges + split.gram_edge)
            type_columns.append(types + split.gram_type)
            clip_orders.append(split.ref_orders)
            clip_limits.append(split.ref_limits)
            types += split.ref_orders.size
        stats.append(sp.csr_matrix(block))
        edges += block.shape[0]
    rows = np.concatenate(type_rows) if type_rows else np.zeros(0, dtype=np.int64)
    columns = np.concatenate(type_columns) if type_columns else np.zeros(0, dtype=np.int64)
    counts = sp.csr_matrix((np.ones(rows.size), (rows, columns)), shape=(edges, types))
    objective = ExpectedBleu(
        order,
        options.smooth_bp,
        np.concatenate(clip_orders) if clip_orders else None,
        np.concatenate(clip_limits) if clip_limits else None,
    )
    return _space(graphs, sources, sp.hstack([sp.vstack(stats), counts], format="csr"), objective)
