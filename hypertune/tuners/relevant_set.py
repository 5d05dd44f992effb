"""Tillmann & Zhang's online relevant-set algorithm (*An Online Relevant Set Algorithm for Statistical Machine
Translation*, Tables II and III; docs/tuners.md, "Tillmann & Zhang as written") on k-best lists; lattices and
forests give their ``kbest`` best derivations under ``--init``, as the batch tuners' candidates.

A sentence's *relevant set* V_rel collects translations the "decoder" (here: the model-best of the sentence's
list, first on ties) has produced. Two *seed* translations start it (Table III; section V): the model-best
under the flat weights w₁ = {0.1}^M and under w₂ = w₁ + δ, δ drawn uniformly from [−D, D] for each feature
(``delta``, D = 0.01; from ``seed``). Then for rounds ℓ = 3 … L (``decodings``), weights start from w₀
(``start``: {0.1}^M by default -- Table III leaves w₀ unsaid; with w₀ = 0 its η would not matter --, or 0 as
section IV's binary-feature runs, or ``--init``), R (``passes``) passes visit the sentences in a seeded
random order and update, and the round's weights w_ℓ decode every sentence, whose model-best joins its
relevant set. Each sentence's truth s and update:

``perceptron`` (Table III): s the best gain of V_rel (ties: the higher model score, then the earliest), t the
    model-best of V_rel under the current w, ``w += η(x_s − x_t)`` (η = 1e-5).
``costmargin`` (Table II, eq. 7): the truth set V_K is the K = 5 best-gain candidates of the whole list
    (Table II's precomputed oracle V_5; ``truth="relevant"``: the best of V_rel, section VI-B's seed-only
    variant), the alternatives V_rel − V_K, and the step one of :mod:`hypertune.tuners.costmargin`'s readings
    (η = 1e-4), averaged over the truths (eq. 7's 1/K; Table II's own reading takes the best truth only).

Weights w₁, w₂, w₃ … w_L are each scored on the tuning set (the corpus metric of their model-best
translations) and the best kept, as section VI-C keeps the w_ℓ of the best dev BLEU; the start weights are
returned instead when none beats them (:func:`~hypertune.tuners.finishing.keeps_start`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from hypertune import interrupts
from hypertune.errors import UsageError
from hypertune.metrics import better
from hypertune.tuners.base import Checkpoint, Iteration, TuningResult, metric_label
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.costmargin import costmargin_choice
from hypertune.tuners.finishing import finish_weights, keeps_start
from hypertune.tuners.kbest_candidates import kbest_candidates
from hypertune.tuners.losses import Candidates
from hypertune.tuners.model_best import ModelBest
from hypertune.tuners.relevant_set_options import RelevantSetOptions
from hypertune.tuners.shards import LocalShards
from hypertune.weights import Weights

#: The flat weight of every feature in the seeds and the default start (section V: w₁ = {0.1}^M).
FLAT = 0.1


@dataclass(frozen=True)
class RelevantSetIteration(Iteration):
    """One decoding ℓ: the tuning-set metric of w_ℓ (ℓ = 1, 2: the seed weights), the updates of its round and
    the mean relevant-set size it trained on (0 for the seeds)."""

    updates: int = 0
    relevant: float = 0.0


@dataclass
class RelevantSetResult(TuningResult):
    """:class:`TuningResult` plus the update, its reading, the decoding whose weights were kept and the second
    seed's weights w₂ (over the tuning set's features)."""

    update: str = ""
    reading: str = ""
    best_iteration: int = 0
    seed_weights: dict[str, float] | None = None


class RelevantSetRun:
    """The algorithm on ``candidates`` (module docstring): :meth:`round` trains one round on the relevant sets,
    :meth:`decode` adds each sentence's model-best. ``rng`` draws δ and the visiting orders."""

    def __init__(self, candidates: Candidates, options: RelevantSetOptions, rng: np.random.Generator) -> None:
        self.options, self.rng = options, rng
        features = candidates.features.tocsr()
        offsets = candidates.offsets
        self.blocks = [features[lo:hi] for lo, hi in zip(offsets[:-1], offsets[1:], strict=True)]
        self.gains = [candidates.gains[lo:hi] for lo, hi in zip(offsets[:-1], offsets[1:], strict=True)]
        self.width = features.shape[1]
        self.relevant: list[list[int]] = [[] for _ in self.blocks]
        self.truth = options.chosen_truth
        if self.truth == "oracle":  # V_K: the K best gains of the list, ties to the earlier row
            self.truths = [np.argsort(-g, kind="stable")[: options.truths] for g in self.gains]

    def seeds(self) -> tuple[np.ndarray, np.ndarray]:
        """w₁ = {0.1}^M and w₂ = w₁ + δ, δ ~ U[−D, D] per feature (drawn first from the run's generator)."""
        w1 = np.full(self.width, FLAT)
        delta = self.options.delta
        self.second_seed = w1 + self.rng.uniform(-delta, delta, self.width)
        return w1, self.second_seed

    def iterations(self, w0: np.ndarray) -> Iterator[tuple[np.ndarray, int, float]]:
        """The weights w₁, w₂ (the seeds, each decoded) and w₃ … w_L (each round from ``w0``, then decoded but
        the last), each with its round's updates and the mean relevant-set size it trained on (0 for seeds)."""
        for w in self.seeds():
            self.decode(w)
            yield w, 0, 0.0
        for ell in range(3, self.options.decodings + 1):
            relevant = self.mean_relevant()
            w, updates = self.round(w0)
            if ell < self.options.decodings:  # the last round's decoding would feed no further round
                self.decode(w)
            yield w, updates, relevant

    def decode(self, w: np.ndarray) -> None:
        """Add every sentence's model-best under ``w`` (first on ties) to its relevant set, once."""
        for rows, block in zip(self.relevant, self.blocks, strict=True):
            best = int(np.argmax(block @ w))
            if best not in rows:
                rows.append(best)

    def round(self, w0: np.ndarray) -> tuple[np.ndarray, int]:
        """One round: from ``w0``, R passes over the sentences (seeded order unless ``shuffle`` is off) on the
        fixed relevant sets; returns the weights and the number of updates that moved them."""
        options = self.options
        parts = [self._prepare(s) for s in range(len(self.blocks))]
        step = self._perceptron if options.update == "perceptron" else self._costmargin
        w, updates = w0.copy(), 0
        for _ in range(options.passes):
            interrupts.check()  # a safe point between passes
            order = self.rng.permutation(len(parts)) if options.shuffle else range(len(parts))
            for s in order:
                direction = step(parts[s], w)
                if direction is not None:
                    w += options.rate * direction
                    updates += 1
        return w, updates

    def mean_relevant(self) -> float:
        return float(np.mean([len(rows) for rows in self.relevant])) if self.relevant else 0.0

    # ------------------------------------------------------------------ one sentence
    def _prepare(self, s: int) -> tuple[sp.csr_matrix, np.ndarray, sp.csr_matrix | None, np.ndarray, np.ndarray]:
        """The sentence's relevant rows and gains, and for the oracle truth its truth rows, their gains and which
        relevant rows are alternatives (not in V_K)."""
        rows = np.asarray(self.relevant[s], dtype=np.int64)
        block, gains = self.blocks[s], self.gains[s]
        if self.truth != "oracle":
            return block[rows], gains[rows], None, np.zeros(0), np.ones(rows.size, dtype=bool)
        truths = self.truths[s]
        return block[rows], gains[rows], block[truths], gains[truths], ~np.isin(rows, truths)

    def _perceptron(self, part: tuple[Any, ...], w: np.ndarray) -> np.ndarray | None:
        """Table III: ``x_s − x_t``, s the truth, t the model-best of the relevant set; ``None`` when s is t."""
        rel, rel_gains, truth_rows, truth_gains, _ = part
        scores = rel @ w
        t = int(np.argmax(scores))
        on_relevant = np.zeros(rel_gains.size)
        on_relevant[t] = -1.0
        if truth_rows is None:
            s = _best(rel_gains, scores)
            if s == t:
                return None
            on_relevant[s] += 1.0
            return np.asarray(rel.T @ on_relevant).ravel()
        on_truth = np.zeros(truth_gains.size)
        on_truth[_best(truth_gains, truth_rows @ w)] = 1.0
        direction = np.asarray(truth_rows.T @ on_truth + rel.T @ on_relevant).ravel()
        return direction if np.any(direction) else None

    def _costmargin(self, part: tuple[Any, ...], w: np.ndarray) -> np.ndarray | None:
        """Table II / eq. 7 in the chosen reading (:func:`~hypertune.tuners.costmargin.costmargin_choice`)."""
        rel, rel_gains, truth_rows, truth_gains, alternatives = part
        scores = rel @ w
        if truth_rows is None:  # the best of the relevant set is the one truth
            s = _best(rel_gains, scores)
            truth_rows, truth_gains, truth_scores = rel[[s]], rel_gains[[s]], scores[[s]]
            alternatives = np.arange(rel_gains.size) != s
        else:
            truth_scores = truth_rows @ w
            if self.options.reading == "table2":  # Table II: s = argmax Bl over V_5, the best truth only
                s = _best(truth_gains, truth_scores)
                truth_rows, truth_gains, truth_scores = truth_rows[[s]], truth_gains[[s]], truth_scores[[s]]
        alt = np.flatnonzero(alternatives)
        if alt.size == 0:
            return None
        cost = truth_gains[:, None] - rel_gains[alt][None, :]
        margin = truth_scores[:, None] - scores[alt][None, :]
        choice = costmargin_choice(self.options.reading, cost, margin)
        if not np.any(choice.coefficient):
            return None
        k = truth_gains.size
        on_alternatives = np.zeros(rel_gains.size)
        np.add.at(on_alternatives, alt[choice.alternative], choice.coefficient / k)
        direction = truth_rows.T @ (choice.coefficient / k) - rel.T @ on_alternatives
        return np.asarray(direction).ravel()


def _best(gains: np.ndarray, scores: np.ndarray) -> int:
    """The best gain, ties to the higher model score, then the earliest."""
    top = np.flatnonzero(gains == gains.max())
    return int(top[np.argmax(scores[top])])


class RelevantSet:
    """Tillmann & Zhang's relevant-set tuner (module docstring): ``RelevantSet(options=None, *, progress=None,
    checkpoint=None, **fields)``, ``fit(tuning_set, init)``. ``progress`` hears of every decoding's
    :class:`RelevantSetIteration`; ``checkpoint`` of the best weights so far (as written) and their score."""

    def __init__(
        self,
        options: RelevantSetOptions | None = None,
        *,
        progress: Callable[[RelevantSetIteration], None] | None = None,
        checkpoint: Checkpoint | None = None,
        **fields: Any,
    ) -> None:
        self.options = RelevantSetOptions.make(options, fields)
        self.progress = progress
        self.checkpoint = checkpoint

    def fit(self, tuning_set: TuningSet | LocalShards, init: Weights) -> RelevantSetResult:
        """Run the algorithm from the seeds; ``init`` gives the start weights' score (and w₀ with
        ``start="init"``). Shards in this process (``--shards``) are run as the whole set they cut."""
        if isinstance(tuning_set, LocalShards):
            tuning_set = tuning_set.tuning_set
        if not isinstance(tuning_set, TuningSet):
            raise UsageError("relevant-set runs in one process: it takes no --cluster")
        started = time.perf_counter()
        options = self.options
        space, metric = tuning_set.feature_space, tuning_set.metric
        width = len(space)
        start = init.vector(space, width).astype(np.float64)
        candidates = kbest_candidates(tuning_set, start, options.kbest, options.smooth, "relevant-set")
        run = RelevantSetRun(candidates, options, np.random.default_rng(options.seed))
        score = ModelBest(tuning_set).score
        score_before = score(start)
        w0 = {"flat": np.full(width, FLAT), "zero": np.zeros(width), "init": start}[options.start]
        higher = metric.higher_is_better
        history: list[Iteration] = []
        best_w: np.ndarray | None = None
        best_score, best_iteration = 0.0, 0

        def record(w: np.ndarray, updates: int, relevant: float, began: float) -> None:
            nonlocal best_w, best_score, best_iteration
            value = score(w)
            entry = RelevantSetIteration(len(history) + 1, value, time.perf_counter() - began, updates, relevant)
            history.append(entry)
            if best_w is None or better(value, best_score, higher):
                best_w, best_score, best_iteration = w.copy(), value, entry.iteration
                if self.checkpoint is not None:
                    self.checkpoint(finish_weights(init, space, best_w, options.normalize), value)
            if self.progress is not None:
                self.progress(entry)

        began = time.perf_counter()
        for w, updates, relevant in run.iterations(w0):
            record(w, updates, relevant, began)
            began = time.perf_counter()
        assert best_w is not None
        kept = keeps_start(score_before, best_score, higher)
        weights = finish_weights(init, space, start if kept else best_w, options.normalize)
        return RelevantSetResult(
            weights=weights,
            score_before=score_before,
            score_after=score_before if kept else best_score,
            history=history,
            seconds=time.perf_counter() - started,
            seed=options.seed,
            metric=metric_label(metric),
            higher_is_better=higher,
            kept_start=kept,
            update=options.update,
            reading=options.reading if options.update == "costmargin" else "",
            best_iteration=0 if kept else best_iteration,
            seed_weights=dict(Weights.from_vector(space, run.second_seed)),
        )
