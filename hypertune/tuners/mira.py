"""Batch MIRA (Cherry & Foster 2012, Algorithm 1; Moses ``kbmira``) on k-best lists, lattices and forests.

For ``epochs`` passes over the sentences in a seeded random order, per sentence:

1. hope, fear (and model-best) under the current weights ``w`` (:mod:`hypertune.tuners.hope_fear`);
2. if hope and fear differ and ``B(hope) > B(fear)``: the margin violation
   ``loss = B(hope) - B(fear) - w . (h(hope) - h(fear))``; when it is positive, the step
   ``eta = min(C, loss / ||h(hope) - h(fear)||^2)`` (Crammer et al. 2006, PA-I; Chiang 2012, eq. 11)
   and ``w += eta (h(hope) - h(fear))``; then the background pseudo-corpus decays and absorbs the hope's
   statistics (``--model-bg``: the model-best's): ``O <- decay * O + s`` (kbmira).
3. The averaged weights ``(w_0 + w_1 + ... + w_T) / (T + 1)`` over every step ``t`` (the initial weights
   counted once; Moses's ``MiraWeightVector`` counts them in the sum but not in the count) are evaluated
   after each epoch by the corpus BLEU of their model-best derivations; the best epoch's are returned.

Weights are dense vectors over the corpus's feature space, updated sparsely (only the features of
``h(hope) - h(fear)`` are touched) with lazily maintained sums for the average, so thousands of sparse
features cost nothing per step. k-best mode runs whole epochs in one compiled kernel.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numba
import numpy as np
import scipy.sparse as sp

from hypertune.errors import InputError, UsageError
from hypertune.metrics import LinearBleu
from hypertune.tuners.corpus import TuningSet, prune_tuning_set
from hypertune.tuners.hope_fear import (
    BLEU_RATIO,
    Gain,
    GainKind,
    HopeFearDecoder,
    Hypothesis,
    SearchMode,
    _gain,
)
from hypertune.weights import Weights

_jit = numba.njit(cache=True, nogil=True)
Mode = Literal["auto", "nbest", "hypergraph"]


# ---------------------------------------------------------------------- results


@dataclass(frozen=True)
class EpochSummary:
    epoch: int
    updates: int
    examples: int
    average_loss: float
    bleu: float
    seconds: float


@dataclass
class MiraResult:
    """The returned (averaged, best-epoch) weights, the corpus BLEU before and after, and the history."""

    weights: Weights
    best_epoch: int
    bleu_before: float
    bleu_after: float
    epochs: list[EpochSummary] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)
    mode: str = "nbest"

    def to_json(self) -> dict[str, Any]:
        return {
            "bleu_before": self.bleu_before,
            "bleu_after": self.bleu_after,
            "best_epoch": self.best_epoch,
            "mode": self.mode,
            "weights": dict(self.weights.items()),
            "epochs": [e.__dict__ for e in self.epochs],
            "timing": self.timing,
        }


# ---------------------------------------------------------------------- compiled pieces


@_jit
def _apply_update(idx, diff, eta, w, totals, last, state):  # pragma: no cover - compiled
    """One MIRA step on the touched features, keeping ``totals[j] = sum_{t <= last[j]} w_t[j]``."""
    state[0] += 1
    step = state[0]
    for k in range(idx.size):
        j = idx[k]
        totals[j] += (step - 1 - last[j]) * w[j]
        w[j] += eta * diff[k]
        totals[j] += w[j]
        last[j] = step


@_jit
def _averaged(w, totals, last, state):  # pragma: no cover - compiled
    steps = state[0]
    return (totals + (steps - last) * w) / (steps + 1.0)


@_jit
def _kbest_epoch(
    order_idx,
    offsets,
    indptr,
    indices,
    data,
    stats,
    w,
    totals,
    last,
    state,
    background,
    c_param,
    decay,
    model_bg,
    safe_hope,
    code,
    max_order,
    theta,
):  # pragma: no cover - compiled
    """One epoch of batch MIRA over k-best lists (Moses kbmira's loop, whole in compiled code)."""
    longest = 1
    for s in range(offsets.size - 1):
        longest = max(longest, offsets[s + 1] - offsets[s])
    scores = np.empty(longest)
    gains = np.empty(longest)
    dense = np.zeros(w.size)
    mark = np.zeros(w.size, dtype=np.bool_)
    touched = np.empty(w.size, dtype=np.int64)
    updates = 0
    total_loss = 0.0
    size = stats.shape[1]
    for s in order_idx:
        lo, hi = offsets[s], offsets[s + 1]
        n = hi - lo
        if n == 0:
            continue
        for i in range(n):
            r = lo + i
            x = 0.0
            for k in range(indptr[r], indptr[r + 1]):
                x += data[k] * w[indices[k]]
            scores[i] = x
            gains[i] = _gain(code, stats[r], max_order, background, theta)
        hope_scale = 1.0
        hope = 0
        for loop in range(2):
            hope = 0
            for i in range(1, n):
                if hope_scale * scores[i] + gains[i] > hope_scale * scores[hope] + gains[hope]:
                    hope = i
            if not safe_hope or loop == 1:
                break
            bleu = abs(gains[hope] * 5.0)
            model = abs(scores[hope])
            if model > 1e-8 and bleu / model < hope_scale:
                hope_scale = bleu / model
            else:
                break
        fear = 0
        best = 0
        for i in range(1, n):
            if scores[i] - gains[i] > scores[fear] - gains[fear]:
                fear = i
            if scores[i] > scores[best]:
                best = i
        if hope == fear or not gains[hope] > gains[fear]:
            continue
        m = 0
        for sign, r in ((1.0, lo + hope), (-1.0, lo + fear)):
            for k in range(indptr[r], indptr[r + 1]):
                j = indices[k]
                if not mark[j]:
                    mark[j] = True
                    dense[j] = 0.0
                    touched[m] = j
                    m += 1
                dense[j] += sign * data[k]
        idx = touched[:m].copy()
        diff = np.empty(m)
        margin = 0.0
        norm = 0.0
        for k in range(m):
            j = idx[k]
            diff[k] = dense[j]
            mark[j] = False
            margin += w[j] * dense[j]
            norm += dense[j] * dense[j]
        loss = gains[hope] - gains[fear] - margin
        if loss > 0.0 and norm > 0.0:
            _apply_update(idx, diff, min(c_param, loss / norm), w, totals, last, state)
            updates += 1
            total_loss += loss
        source = lo + (best if model_bg else hope)
        for j in range(size):
            background[j] = decay * background[j] + stats[source, j]
    return updates, total_loss


@_jit
def _kbest_model_stats(offsets, indptr, indices, data, stats, w):  # pragma: no cover - compiled
    """Summed statistics of every sentence's model-best hypothesis (first on ties)."""
    total = np.zeros(stats.shape[1])
    for s in range(offsets.size - 1):
        lo, hi = offsets[s], offsets[s + 1]
        best = -1
        best_score = 0.0
        for r in range(lo, hi):
            x = 0.0
            for k in range(indptr[r], indptr[r + 1]):
                x += data[k] * w[indices[k]]
            if best < 0 or x > best_score:
                best, best_score = r, x
        if best >= 0:
            for j in range(stats.shape[1]):
                total[j] += stats[best, j]
    return total


# ---------------------------------------------------------------------- k-best packs


@dataclass
class KbestPack:
    """All hypotheses of all sentences: a CSR feature matrix (rows grouped by sentence) and their statistics.
    Hypotheses with identical features and statistics within a sentence are kept once (first occurrence)."""

    offsets: np.ndarray
    features: sp.csr_matrix
    stats: np.ndarray

    @classmethod
    def from_tuning_set(cls, tuning_set: TuningSet, decoder: HopeFearDecoder) -> KbestPack:
        width = len(tuning_set.feature_space)
        blocks, stat_blocks, counts = [], [], []
        for s, hg in enumerate(tuning_set.graphs):
            rows = hg.feature_matrix(width)[1:]
            stats = decoder._kbest(s)[1:]
            keep = _unique_rows(rows, stats)
            blocks.append(rows[keep] if keep.size != rows.shape[0] else rows)
            stat_blocks.append(stats[keep])
            counts.append(keep.size)
        features = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, width))
        features.sort_indices()
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return cls(offsets, features, np.ascontiguousarray(np.vstack(stat_blocks), dtype=np.float64))

    @property
    def num_hypotheses(self) -> int:
        return int(self.offsets[-1])


def _unique_rows(rows: sp.csr_matrix, stats: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct (features, statistics) row, in order."""
    if rows.shape[0] <= 1:
        return np.arange(rows.shape[0])
    used = np.unique(rows.indices)
    dense = np.hstack([rows[:, used].toarray(), stats])
    _, first = np.unique(dense, axis=0, return_index=True)
    return np.sort(first)


# ---------------------------------------------------------------------- pruning


# ---------------------------------------------------------------------- the tuner


@dataclass
class MiraOptions:
    """Batch MIRA options; the defaults are Moses kbmira's."""

    C: float = 0.01
    decay: float = 0.999
    epochs: int = 60
    model_bg: bool = False
    safe_hope: bool = False
    seed: int | None = 0
    prune_density: float | None = 50.0
    gain: GainKind = "background"
    background_init: float = 1.0
    linear: LinearBleu | None = None
    search: SearchMode = "approximate"
    accumulate: bool = False
    mode: Mode = "auto"

    def check(self) -> None:
        if self.C <= 0:
            raise UsageError(f"C must be positive, got {self.C}")
        if not 0 <= self.decay <= 1:
            raise UsageError(f"the decay must be in [0, 1], got {self.decay}")
        if self.epochs < 1:
            raise UsageError(f"the number of epochs must be at least 1, got {self.epochs}")
        if self.mode not in ("auto", "nbest", "hypergraph"):
            raise UsageError(f"unknown mode {self.mode!r}; choose nbest or hypergraph")


def batch_mira(
    tuning_set: TuningSet,
    initial: Weights,
    options: MiraOptions | None = None,
    progress: Callable[[EpochSummary], None] | None = None,
    **overrides: Any,
) -> MiraResult:
    """Batch MIRA (Cherry & Foster 2012, Algorithm 1) from ``initial`` weights; see the module docstring.

    ``options`` (or keyword overrides such as ``C=0.01, epochs=10, seed=1``) as :class:`MiraOptions`.
    ``mode``: ``nbest`` needs every sentence to be a k-best list; ``hypergraph`` searches lattices and
    forests (k-best lists included); ``auto`` picks ``nbest`` when it can. ``progress`` is called after
    every epoch.
    """
    options = MiraOptions(**{**(options.__dict__ if options else {}), **overrides})
    options.check()
    started = time.perf_counter()
    mode = options.mode
    if mode == "auto":
        mode = "nbest" if all(g.is_kbest for g in tuning_set.graphs) else "hypergraph"
    if mode == "nbest" and not all(g.is_kbest for g in tuning_set.graphs):
        raise InputError("--type nbest needs k-best lists; these inputs are lattices or forests")
    timing: dict[str, float] = {}
    if mode == "hypergraph" and options.prune_density:
        t = time.perf_counter()
        tuning_set = prune_tuning_set(tuning_set, initial, options.prune_density)
        timing["prune"] = time.perf_counter() - t
    metric = tuning_set.metric
    order = getattr(getattr(metric, "bleu", metric), "max_order", 4)
    gain = Gain(options.gain, order, options.decay, options.background_init, options.linear)
    decoder = HopeFearDecoder(tuning_set, search=options.search)
    space = tuning_set.feature_space
    w = initial.vector(space)
    totals = w.copy()
    last = np.zeros(w.size)
    state = np.zeros(1)
    rng = np.random.default_rng(options.seed)
    runner = _KbestRunner(tuning_set, decoder) if mode == "nbest" else _ForestRunner(tuning_set, decoder)
    timing["setup"] = time.perf_counter() - started
    t = time.perf_counter()
    bleu_before = float(tuning_set.score(runner.model_stats(w)))
    timing["evaluate"] = time.perf_counter() - t
    best_bleu, best_epoch, best_avg = -np.inf, 0, w.copy()
    history: list[EpochSummary] = []
    t_train = 0.0
    for epoch in range(1, options.epochs + 1):
        t = time.perf_counter()
        order_idx = rng.permutation(len(tuning_set)).astype(np.int64)
        updates, loss = runner.epoch(order_idx, w, totals, last, state, gain, options)
        t_train += time.perf_counter() - t
        t = time.perf_counter()
        avg = _averaged(w, totals, last, state)
        bleu = float(tuning_set.score(runner.model_stats(avg)))
        timing["evaluate"] += time.perf_counter() - t
        summary = EpochSummary(epoch, updates, len(tuning_set), loss / len(tuning_set), bleu, time.perf_counter() - t)
        history.append(summary)
        if progress is not None:
            progress(summary)
        if bleu > best_bleu:
            best_bleu, best_epoch, best_avg = bleu, epoch, avg
    timing["train"] = t_train
    timing["total"] = time.perf_counter() - started
    weights = initial.copy()
    names = space.names
    for j in np.flatnonzero((best_avg != 0) | np.isin(np.arange(best_avg.size), [space.get(n, -1) for n in initial])):
        weights[names[j]] = float(best_avg[j])
    return MiraResult(weights, best_epoch, bleu_before, best_bleu, history, timing, mode)


class _KbestRunner:
    def __init__(self, tuning_set: TuningSet, decoder: HopeFearDecoder) -> None:
        self.pack = KbestPack.from_tuning_set(tuning_set, decoder)
        f = self.pack.features
        self.arrays = (self.pack.offsets, f.indptr.astype(np.int64), f.indices.astype(np.int64), f.data)

    def epoch(self, order_idx, w, totals, last, state, gain: Gain, options: MiraOptions) -> tuple[int, float]:
        offsets, indptr, indices, data = self.arrays
        updates, loss = _kbest_epoch(
            order_idx,
            offsets,
            indptr,
            indices,
            data,
            self.pack.stats,
            w,
            totals,
            last,
            state,
            gain.background if gain.kind == "background" else gain.background.copy(),
            float(options.C),
            float(options.decay) if gain.kind == "background" else 1.0,
            bool(options.model_bg),
            bool(options.safe_hope),
            gain.code,
            gain.max_order,
            gain.theta,
        )
        return int(updates), float(loss)

    def model_stats(self, w: np.ndarray) -> np.ndarray:
        offsets, indptr, indices, data = self.arrays
        return _kbest_model_stats(offsets, indptr, indices, data, self.pack.stats, w)


class _ForestRunner:
    def __init__(self, tuning_set: TuningSet, decoder: HopeFearDecoder) -> None:
        self.tuning_set = tuning_set
        self.decoder = decoder
        self.pool: dict[int, list[Hypothesis]] = {}

    def epoch(self, order_idx, w, totals, last, state, gain: Gain, options: MiraOptions) -> tuple[int, float]:
        updates, total_loss = 0, 0.0
        for s in order_idx:
            s = int(s)
            hf = self.decoder.hope_fear(s, w, gain, options.safe_hope, with_model=options.model_bg)
            hope, fear = hf.hope, hf.fear
            if options.accumulate:
                hope, fear = self._accumulated(s, hope, fear, w, gain)
            if hope.same_as(fear) or not hope.gain > fear.gain:
                continue
            idx = np.union1d(hope.feature_indices, fear.feature_indices)
            diff = np.zeros(idx.size)
            diff[np.searchsorted(idx, hope.feature_indices)] += hope.feature_values
            diff[np.searchsorted(idx, fear.feature_indices)] -= fear.feature_values
            loss = hope.gain - fear.gain - float(w[idx] @ diff)
            norm = float(diff @ diff)
            if loss > 0 and norm > 0:
                _apply_update(idx, diff, min(options.C, loss / norm), w, totals, last, state)
                updates += 1
                total_loss += loss
            gain.update(hf.model.stats if options.model_bg else hope.stats)
        return updates, total_loss

    def _accumulated(
        self, s: int, hope: Hypothesis, fear: Hypothesis, w: np.ndarray, gain: Gain
    ) -> tuple[Hypothesis, Hypothesis]:
        """Moses-style accumulation for lattices/forests: the hope and fear derivations found in earlier
        epochs compete (exactly scored under the current weights and background) with the new ones."""
        pool = self.pool.setdefault(s, [])
        for new in (hope, fear):
            if not any(new.same_as(old) for old in pool):
                pool.append(new)
        model = np.asarray([float(w[h.feature_indices] @ h.feature_values) for h in pool])
        gains = np.asarray(gain.score(np.vstack([h.stats for h in pool])))
        rescored = [
            Hypothesis(h.derivation, h.words, h.feature_indices, h.feature_values, m, h.stats, g)
            for h, m, g in zip(pool, model, gains, strict=True)
        ]
        return rescored[int(np.argmax(model + gains))], rescored[int(np.argmax(model - gains))]

    def model_stats(self, w: np.ndarray) -> np.ndarray:
        total = np.zeros(self.tuning_set.stats_size)
        for s in range(len(self.tuning_set)):
            total += self.decoder.model_best_stats(s, w)
        return total


__all__ = [
    "BLEU_RATIO",
    "EpochSummary",
    "KbestPack",
    "MiraOptions",
    "MiraResult",
    "batch_mira",
]
