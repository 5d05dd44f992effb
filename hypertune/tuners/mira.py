"""Batch MIRA (Cherry & Foster 2012, Algorithm 1; Moses ``kbmira``) on k-best lists, lattices and forests.

For ``epochs`` passes over the sentences in a seeded random order (``shuffle=False``, kbmira's ``--no-shuffle``:
input order), per sentence:

1. hope, fear (and model-best) under the current weights ``w`` (:mod:`hypertune.tuners.hope_fear`);
2. if hope and fear differ and ``B(hope) > B(fear)``: the margin violation
   ``loss = B(hope) - B(fear) - w . (h(hope) - h(fear))``; when it is positive, the step
   ``eta = min(C, loss / ||h(hope) - h(fear)||^2)`` (Crammer et al. 2006, PA-I; Chiang 2012, eq. 11)
   and ``w += eta (h(hope) - h(fear))``; then the background pseudo-corpus decays and absorbs the hope's
   statistics (``--model-bg``: the model-best's): ``O <- decay * O + s`` (kbmira).
3. The averaged weights ``(w_0 + w_1 + ... + w_T) / (T + 1)`` over every step ``t`` (the initial weights
   counted once; Moses's ``MiraWeightVector`` counts them in the sum but not in the count) are evaluated
   after each epoch by the corpus BLEU of their model-best derivations; the best epoch's are returned.

The epochs are the loop of :mod:`hypertune.tuners.mixing`, one shard's (a tuning set) or several's (iterative
parameter mixing); the options are :class:`~hypertune.tuners.mira_options.MiraOptions`.

Weights are dense vectors over the corpus's feature space, updated sparsely (only the features of
``h(hope) - h(fear)`` are touched) with lazily maintained sums for the average, so thousands of sparse
features cost nothing per step. k-best mode runs whole epochs in one compiled kernel over flat arrays, scoring
a sentence from a dense per-sentence block when the features are dense, and computing the background gain
once per distinct statistics row of the sentence, with each n-gram log once per distinct value.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numba
import numpy as np
import scipy.sparse as sp

from hypertune import interrupts
from hypertune.arrays import offsets_from_counts
from hypertune.compiled import EMPTY_KEY, callee_jit, helper_jit, insert_key, prefetch, stable_argsort
from hypertune.errors import InputError
from hypertune.hypergraph import Hypergraph
from hypertune.metrics.background import background_bleu_distinct
from hypertune.metrics.gains import BACKGROUND, Gain, gain_for
from hypertune.tuners.base import Checkpoint, Iteration, TuningResult, metric_label
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.finishing import finish_weights
from hypertune.tuners.hope_fear import HopeFearDecoder, Hypothesis, select_hope_fear
from hypertune.tuners.mira_options import MiraOptions
from hypertune.tuners.mixing import Mixing, mix
from hypertune.tuners.model_best import ModelBest, model_best_rows
from hypertune.tuners.passive_aggressive import pa_step_size
from hypertune.tuners.shards import LocalShards, Shard, Shards, ordered_sum
from hypertune.weights import Weights

_jit = numba.njit(cache=True, nogil=True)


# ---------------------------------------------------------------------- results


@dataclass(frozen=True)
class EpochSummary(Iteration):
    """One epoch: ``iteration`` is the epoch (from 1), ``score`` the corpus metric of the averaged weights'
    model-best translations after it, ``seconds`` its training and evaluation time."""

    updates: int = 0
    examples: int = 0
    average_loss: float = 0.0

    @property
    def epoch(self) -> int:
        return self.iteration


@dataclass
class MiraResult(TuningResult):
    """:class:`TuningResult` with the averaged weights of the best epoch, which epoch that was, the mode
    that ran (``nbest`` or ``hypergraph``) and the time spent in each phase (``timing``: seconds of ``setup``,
    ``train``, ``evaluate``, with pruning ``prune``, from the command ``load`` and ``total``; k-best epochs
    evaluate the epoch before them in their own pass, so ``evaluate`` counts only the evaluations run on their
    own and ``evaluations_in_train`` how many ran inside ``train``: :class:`~hypertune.tuners.mixing.Mixed`)."""

    best_epoch: int = 0
    mode: str = "nbest"
    timing: dict[str, float] = field(default_factory=dict)
    evaluations_in_train: int = 0

    @property
    def epochs(self) -> list[EpochSummary]:
        return self.history  # type: ignore[return-value]


# ---------------------------------------------------------------------- compiled pieces


@helper_jit
def _prefetch_range(array, lo, hi, step):  # pragma: no cover - compiled
    """:func:`~hypertune.compiled.prefetch` the cache lines of entries ``lo:hi`` of a C-contiguous ``array`` (flat
    indices; ``step`` entries a line)."""
    for k in range(lo, hi, step):
        prefetch(array, k)
    if hi > lo:
        prefetch(array, hi - 1)


@helper_jit
def _prefetch_lines(array, q, stop):  # pragma: no cover - compiled
    """:func:`~hypertune.compiled.prefetch` entries ``q, q + 8, ...`` below ``stop`` of a C-contiguous float64
    ``array`` (a cache line apart); returns where the next call goes on, so calls that continue one another reach
    every line from the first ``q`` on but the last (:func:`_prefetch_range` adds it)."""
    while q < stop:
        prefetch(array, q)
        q += 8
    return q


@helper_jit
def _prefetch_sentence(s, rows, distinct, width):  # pragma: no cover - compiled
    """Bring sentence ``s``'s CSR rows and distinct statistics towards the cache before the epoch reaches it: the
    epoch visits sentences in a random order, and each visit's first touches of these arrays would otherwise wait
    on memory one after another. Dense rows are not asked for here: :func:`_scores` asks for them a few lines at a
    time between its groups of rows (all at once, the requests would wait on one another, not on the work)."""
    lo, hi = rows.offsets[s], rows.offsets[s + 1]
    if rows.blocks.size == 0:
        _prefetch_range(rows.data, rows.indptr[lo], rows.indptr[hi], 8)
        _prefetch_range(rows.indices, rows.indptr[lo], rows.indptr[hi], 8)
    _prefetch_range(distinct.group, lo, hi, 16)
    u_lo, u_hi = distinct.group_offsets[s], distinct.group_offsets[s + 1]
    size = distinct.group_stats.shape[1]  # two-dimensional, row-major: flat indices
    _prefetch_range(distinct.group_stats, u_lo * size, u_hi * size, 8)
    _prefetch_range(distinct.value_ids, u_lo * size, u_hi * size, 16)
    v_lo, v_hi = distinct.value_offsets[s], distinct.value_offsets[s + 1]
    _prefetch_range(distinct.values, v_lo, v_hi, 8)
    _prefetch_range(distinct.value_columns, v_lo, v_hi, 8)


@helper_jit
def _prefetch_pages(s, rows, width):  # pragma: no cover - compiled
    """One line of every 4 KB page of sentence ``s``'s rows asked for (:func:`_prefetch_range` a page apart), two
    visits before the epoch reaches it: where the rows lie in pages of 4 KB (not huge pages), each visit would
    otherwise begin by walking the page tables for each page of its rows, one after another, while
    :func:`_scores` asks for the lines themselves one visit ahead."""
    lo, hi = rows.offsets[s], rows.offsets[s + 1]
    if rows.blocks.size > 0:
        _prefetch_range(rows.blocks, width * lo, width * hi, 512)
    else:
        _prefetch_range(rows.data, rows.indptr[lo], rows.indptr[hi], 512)
        _prefetch_range(rows.indices, rows.indptr[lo], rows.indptr[hi], 512)


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
def passive_aggressive_step(  # pragma: no cover - compiled
    idx, diff, gain_difference, margin, norm, c_param, w, totals, last, state
):
    """The MIRA update (Crammer et al. 2006, PA-I; Chiang 2012, eq. 11; Cherry & Foster 2012, Algorithm 1).
    With ``diff = h(hope) - h(fear)`` on the features ``idx``, ``margin = w . diff`` and ``norm = ||diff||^2``
    (each runner sums them its own way), the margin violation is ``loss = B(hope) - B(fear) - margin``;
    when it and ``norm`` are positive, ``w += min(C, loss / norm) diff``. Returns the loss when a step was
    taken, else 0. The one copy of the rule, called by every MIRA runner."""
    loss = gain_difference - margin
    if loss > 0.0 and norm > 0.0:
        _apply_update(idx, diff, pa_step_size(loss, norm, c_param), w, totals, last, state)
        return loss
    return 0.0


@_jit
def _averaged(w, totals, last, state):  # pragma: no cover - compiled
    steps = state[0]
    return (totals + (steps - last) * w) / (steps + 1.0)


@helper_jit
def _scores(lo, hi, rows, width, w, out, ahead_lo, ahead_hi):  # pragma: no cover - compiled
    """``out[i] = w . h(lo + i)`` for the rows ``lo:hi`` of a sentence, each summed over its features in column
    order. The dense rows (:func:`_dense_blocks`, or a dense batch's own), when there are, add the zeros too
    (``x + 0 == x``: the same sums); between their groups of four rows, the entries ``ahead_lo:ahead_hi`` of the
    block (the next sentence's rows) are asked for, four rows' worth at a time (:func:`_prefetch_lines`), so that
    memory brings them while the sums are worked out."""
    blocks, indptr, indices, data = rows.blocks, rows.indptr, rows.indices, rows.data
    n = hi - lo
    if blocks.size > 0:  # row after row, as the block lies in memory (one streaming read); each sum in column order
        i = 0
        q = _prefetch_first(blocks, ahead_lo, ahead_hi)
        while i + 4 <= n:
            q = _prefetch_lines(blocks, q, min(q + 4 * width, ahead_hi))
            a = width * (lo + i)
            out[i], out[i + 1], out[i + 2], out[i + 3] = _four_scores(
                a, a + width, a + 2 * width, a + 3 * width, width, blocks, w
            )
            i += 4
        for t in range(i, n):
            out[t] = _dense_score(width * (lo + t), width, blocks, w)
        _prefetch_lines(blocks, q, ahead_hi)
    else:
        for i in range(n):
            r = lo + i
            x = 0.0
            for k in range(indptr[r], indptr[r + 1]):
                x += data[k] * w[indices[k]]
            out[i] = x


@helper_jit
def _scores_pair(lo, hi, rows, width, w, v, out, out_v, ahead_lo, ahead_hi):  # pragma: no cover - compiled
    """:func:`_scores` of the rows ``lo:hi`` under ``w`` into ``out`` and under ``v`` into ``out_v`` (the block's
    entries ``ahead_lo:ahead_hi`` asked for as there); dense rows read once, four at a time, eight independent
    sums (each as :func:`_dense_score` adds it)."""
    blocks = rows.blocks
    n = hi - lo
    if blocks.size == 0:
        _scores(lo, hi, rows, width, w, out, 0, 0)
        _scores(lo, hi, rows, width, v, out_v, 0, 0)
        return
    i = 0
    q = _prefetch_first(blocks, ahead_lo, ahead_hi)
    while i + 4 <= n:
        q = _prefetch_lines(blocks, q, min(q + 4 * width, ahead_hi))
        a = width * (lo + i)
        x0 = x1 = x2 = x3 = y0 = y1 = y2 = y3 = 0.0
        for j in range(width):
            h0, h1, h2, h3 = blocks[a + j], blocks[a + width + j], blocks[a + 2 * width + j], blocks[a + 3 * width + j]
            x0 += h0 * w[j]
            x1 += h1 * w[j]
            x2 += h2 * w[j]
            x3 += h3 * w[j]
            y0 += h0 * v[j]
            y1 += h1 * v[j]
            y2 += h2 * v[j]
            y3 += h3 * v[j]
        out[i], out[i + 1], out[i + 2], out[i + 3] = x0, x1, x2, x3
        out_v[i], out_v[i + 1], out_v[i + 2], out_v[i + 3] = y0, y1, y2, y3
        i += 4
    for t in range(i, n):
        out[t] = _dense_score(width * (lo + t), width, blocks, w)
        out_v[t] = _dense_score(width * (lo + t), width, blocks, v)
    _prefetch_lines(blocks, q, ahead_hi)


@helper_jit
def _prefetch_first(blocks, ahead_lo, ahead_hi):  # pragma: no cover - compiled
    """The start of :func:`_scores`'s requests for the entries ``ahead_lo:ahead_hi``: their last line (which the
    steps of :func:`_prefetch_lines` may not reach) asked for at once."""
    if ahead_hi > ahead_lo:
        prefetch(blocks, ahead_hi - 1)
    return ahead_lo


@helper_jit
def _four_scores(a, b, c, d, width, blocks, w):  # pragma: no cover - compiled
    """:func:`_dense_score` of the rows starting at ``a``, ``b``, ``c`` and ``d``, side by side: four independent
    chains of additions where one would wait on each addition (the same sums, in the same order)."""
    x0 = x1 = x2 = x3 = 0.0
    for j in range(width):
        x0 += blocks[a + j] * w[j]
        x1 += blocks[b + j] * w[j]
        x2 += blocks[c + j] * w[j]
        x3 += blocks[d + j] * w[j]
    return x0, x1, x2, x3


@helper_jit
def _dense_score(start, width, blocks, w):  # pragma: no cover - compiled
    """``w . h`` of the dense row at ``blocks[start:start + width]``, summed in column order (as :func:`_scores`)."""
    x = 0.0
    for j in range(width):
        x += blocks[start + j] * w[j]
    return x


class KbestRows(NamedTuple):
    """Every hypothesis of a k-best tuning set as flat rows: sentence ``s`` owns rows
    ``offsets[s]:offsets[s + 1]``; features in CSR (``indptr, indices, data``), plus their dense row-major
    copy ``blocks`` when the features are dense (:func:`_dense_blocks`; else empty). A dense batch (every
    row stores every column, :class:`~hypertune.formats.kbest_batch.KbestBatch`) gives ``blocks`` alone, its
    CSR empty: a row's stored entries are then its ``width`` columns in order. Metric statistics ``stats``,
    one row per hypothesis."""

    offsets: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    blocks: np.ndarray
    stats: np.ndarray


class DistinctStats(NamedTuple):
    """The distinct statistics rows of each sentence, so a gain is computed once per distinct row:
    ``group[r]`` is row ``r``'s distinct row in ``group_stats``, whose rows of sentence ``s`` are
    ``group_offsets[s]:group_offsets[s + 1]``; ``values`` are the distinct values of each column of a
    sentence's distinct rows (``value_offsets`` per sentence, ``value_columns`` their columns) and
    ``value_ids[u, j]`` the entry of row ``u``'s column ``j`` (each log is taken once per value)."""

    group: np.ndarray
    group_offsets: np.ndarray
    group_stats: np.ndarray
    value_ids: np.ndarray
    values: np.ndarray
    value_columns: np.ndarray
    value_offsets: np.ndarray


class AveragedWeights(NamedTuple):
    """The weights ``w`` and what their running average needs (:func:`_apply_update`, :func:`_averaged`)."""

    w: np.ndarray
    totals: np.ndarray
    last: np.ndarray
    state: np.ndarray


@_jit
def _kbest_epoch(
    order_idx, rows, distinct, weights, gain, group_gains, c_param, decay, model_bg, safe_hope, evaluate, chosen
):  # pragma: no cover - compiled
    """One epoch of batch MIRA over k-best lists (Moses kbmira's loop, whole in compiled code). The gain is
    that of each distinct statistics row of a sentence (``group``: row -> its distinct row in ``group_stats``,
    whose rows of sentence ``s`` are ``group_offsets[s]:group_offsets[s + 1]``): ``group_gains``, given for a
    gain without state, computed at each visit of the sentence for the background gain. With ``chosen`` of one
    entry per sentence (else empty), each visit also picks the sentence's model-best row under the weights
    ``evaluate`` (``chosen[s]``, -1 for an empty list; :func:`model_best_rows`'s rule) while its rows are in the
    cache; the summed statistics of those rows in sentence order (what :func:`_kbest_model_stats` gives for
    ``evaluate``) are returned third."""
    offsets, indptr, indices, data, blocks, stats = rows
    group, group_offsets, group_stats, value_ids, values, value_columns, value_offsets = distinct
    w, totals, last, state = weights
    code, max_order, theta, background = gain
    longest = 1
    for s in range(offsets.size - 1):
        longest = max(longest, offsets[s + 1] - offsets[s])
    scores = np.empty(longest)
    gains = np.empty(longest)
    width = blocks.size // max(offsets[-1], 1)
    logs = np.empty(values.size)
    nonpositive = np.empty(values.size, dtype=np.bool_)
    dense = np.zeros(w.size)
    mark = np.zeros(w.size, dtype=np.bool_)
    touched = np.empty(w.size, dtype=np.int64)
    diff = np.empty(w.size)
    updates = 0
    total_loss = 0.0
    size = stats.shape[1]
    evaluating = chosen.size > 0  # (weights of no feature score every row 0: the first is each model-best)
    model = np.empty(longest if evaluating else 0)
    chosen[:] = -1
    for k in range(order_idx.size):
        ahead_lo = ahead_hi = 0  # the next sentence's dense rows, asked for while this one's are scored
        if k + 1 < order_idx.size:
            t = order_idx[k + 1]
            _prefetch_sentence(t, rows, distinct, width)
            ahead_lo, ahead_hi = width * offsets[t], width * offsets[t + 1]
        if k + 2 < order_idx.size:
            _prefetch_pages(order_idx[k + 2], rows, width)
        s = order_idx[k]
        lo, hi = offsets[s], offsets[s + 1]
        n = hi - lo
        if n == 0:
            _prefetch_range(blocks, ahead_lo, ahead_hi, 8)
            continue
        if evaluating:
            _scores_pair(lo, hi, rows, width, w, evaluate, scores, model, ahead_lo, ahead_hi)
            chosen[s] = lo + _first_highest(model, n)
        else:
            _scores(lo, hi, rows, width, w, scores, ahead_lo, ahead_hi)
        if code == BACKGROUND:
            background_bleu_distinct(s, distinct, background, max_order, logs, nonpositive, group_gains)
        for i in range(n):
            gains[i] = group_gains[group[lo + i]]
        hope, fear, best = select_hope_fear(scores, gains, n, safe_hope)
        if hope == fear or not gains[hope] > gains[fear]:
            continue
        m = _add_row(1.0, lo + hope, rows, width, mark, dense, touched, 0)
        m = _add_row(-1.0, lo + fear, rows, width, mark, dense, touched, m)
        margin = 0.0
        norm = 0.0
        for k in range(m):
            j = touched[k]
            diff[k] = dense[j]
            mark[j] = False
            margin += w[j] * dense[j]
            norm += dense[j] * dense[j]
        loss = passive_aggressive_step(
            touched[:m], diff[:m], gains[hope] - gains[fear], margin, norm, c_param, w, totals, last, state
        )
        if loss > 0.0:
            updates += 1
            total_loss += loss
        source = lo + (best if model_bg else hope)
        for j in range(size):
            background[j] = decay * background[j] + stats[source, j]
    return updates, total_loss, _chosen_stats(chosen, stats)


@callee_jit
def _chosen_stats(chosen, stats):  # pragma: no cover - compiled
    """The statistics rows ``chosen`` (-1: none) summed in their order, as :func:`_kbest_model_stats` sums them."""
    total = np.zeros(stats.shape[1])
    for r in chosen:
        if r >= 0:
            for j in range(stats.shape[1]):
                total[j] += stats[r, j]
    return total


@helper_jit
def _first_highest(scores, n):  # pragma: no cover - compiled
    """The first highest of ``scores[:n]`` (``n > 0``), :func:`model_best_rows`'s rule (a comparison with a NaN is
    false there too), the leader kept with its value and chosen by selects, not branches."""
    best = 0
    value = scores[0]
    for i in range(1, n):
        up = scores[i] > value
        best = i if up else best
        value = scores[i] if up else value
    return best


@helper_jit
def _add_row(sign, r, rows, width, mark, dense, touched, m):  # pragma: no cover - compiled
    """``dense += sign * h(r)`` over row ``r``'s stored entries (a dense batch's: its ``width`` columns in
    order), each column met for the first time marked and listed in ``touched[m:]``; the new ``m``."""
    indptr, indices = rows.indptr, rows.indices
    values = rows.data if indptr.size else rows.blocks
    start, stop = _row_span(r, indptr, width)
    for k in range(start, stop):
        j = _column(k, start, indptr, indices)
        if not mark[j]:
            mark[j] = True
            dense[j] = 0.0
            touched[m] = j
            m += 1
        dense[j] += sign * values[k]
    return m


class ScoredRows(NamedTuple):
    """What :func:`_kbest_model_stats` keeps between evaluations (dense rows only; else empty arrays): ``bounds[s, j]
    = max_r |h_rj|`` over sentence ``s``'s rows, ``scores[r]`` row ``r``'s score (as float32) under the weights
    ``past[generation[s]]`` (``-1``: not scored yet), ``top[s]`` and ``large[s]`` the largest of the sentence's
    ``scores`` and of their magnitudes, ``past`` every weight vector evaluated so far (the last: the one being
    evaluated), ``picked`` scratch (one entry per row of the longest list)."""

    bounds: np.ndarray
    generation: np.ndarray
    past: np.ndarray
    scores: np.ndarray
    top: np.ndarray
    large: np.ndarray
    picked: np.ndarray

    @classmethod
    def start(cls, rows: KbestRows) -> ScoredRows:
        """Nothing scored yet: for dense rows (``rows.blocks``) what the evaluations keep, else :meth:`none`."""
        offsets, blocks = rows.offsets, rows.blocks
        if blocks.size == 0:
            return cls.none()
        sentences, hypotheses = offsets.size - 1, int(offsets[-1])
        width = blocks.size // max(hypotheses, 1)
        return cls(
            np.empty((sentences, width)),  # a sentence's row filled when it is first scored
            np.full(sentences, -1, np.int64),
            np.zeros((0, width)),
            np.empty(hypotheses, np.float32),
            np.empty(sentences),
            np.empty(sentences),
            np.empty(int(np.diff(offsets).max(initial=0)), np.int64),
        )

    @classmethod
    def none(cls) -> ScoredRows:
        """Nothing kept: every row scored at every evaluation."""
        nothing = np.zeros(0)
        return cls(np.zeros((0, 0)), np.zeros(0, np.int64), np.zeros((0, 0)), np.zeros(0, np.float32), nothing,
                   nothing, np.zeros(0, np.int64))  # fmt: skip

    def evaluating(self, w: np.ndarray) -> ScoredRows:
        """These scores, ``w`` the weights being evaluated (the last of ``past``)."""
        if self.bounds.shape[0] == 0:
            return self
        return self._replace(past=np.vstack([self.past, np.asarray(w, np.float64)[None, : self.past.shape[1]]]))


#: Score every row of a sentence again (and keep the scores) when more than this share of them could be first-best.
_RESCORE_SHARE = 0.4


@_jit
def _kbest_model_stats(rows, w, scored):  # pragma: no cover - compiled
    """Summed statistics of every sentence's model-best hypothesis (:func:`model_best_rows`, called for a chunk of
    sentences at a time), in sentence order. With ``scored`` (:class:`ScoredRows`, ``past[-1]`` being ``w``), a
    sentence scored before scores again only the rows that can still be its first-best (:func:`_candidates`), the
    others left at ``-inf``: the model-best and its statistics are the same as when every row is scored."""
    offsets, blocks, stats = rows.offsets, rows.blocks, rows.stats
    total = np.zeros(stats.shape[1])
    longest = 1
    for s in range(offsets.size - 1):
        longest = max(longest, offsets[s + 1] - offsets[s])
    room = max(longest, _CHUNK_ROWS)
    scores = np.empty(room)
    bounds = np.zeros(_CHUNK_SENTENCES + 1, np.int64)  # the chunk's sentences' rows in ``scores``
    width = blocks.size // max(offsets[-1], 1)
    keep = scored.bounds.shape[0] > 0
    now = scored.past.shape[0] - 1
    first, count = 0, 0  # the chunk: sentences first:first + count, scored, their model-best not yet chosen
    for s in range(offsets.size):
        last = s == offsets.size - 1
        full = count == _CHUNK_SENTENCES or (not last and bounds[count] + offsets[s + 1] - offsets[s] > room)
        if count and (last or full):
            best = model_best_rows(scores, bounds[: count + 1])  # one call (one array) for the chunk
            for c in range(count):
                if best[c] >= 0:
                    r = offsets[first + c] + best[c] - bounds[c]
                    for j in range(stats.shape[1]):
                        total[j] += stats[r, j]
            first, count = s, 0
        if last:
            break
        lo, hi = offsets[s], offsets[s + 1]
        out = scores[bounds[count] :]
        if not (keep and _candidates(s, lo, hi, blocks, width, w, scored, out)):
            _scores(lo, hi, rows, width, w, out, 0, 0)
            if keep:
                _keep_scores(s, lo, hi, out, scored, now, blocks, width)
        bounds[count + 1] = bounds[count] + hi - lo
        count += 1
    return total


#: The evaluation chooses the model-best rows of up to this many sentences, of up to this many rows, at once.
_CHUNK_SENTENCES, _CHUNK_ROWS = 64, 8192


@helper_jit
def _keep_scores(s, lo, hi, scores, scored, now, blocks, width):  # pragma: no cover - compiled
    """Keep sentence ``s``'s scores under the weights ``past[now]`` (:class:`ScoredRows`); the first time, its
    largest feature magnitudes from its dense rows (``blocks``, as they pass through the cache)."""
    if scored.generation[s] < 0:
        m = scored.bounds[s]
        m[:] = 0.0
        for r in range(lo, hi):
            for j in range(width):
                m[j] = max(m[j], abs(blocks[width * r + j]))
    top, bottom, finite = -np.inf, np.inf, True
    kept = scored.scores
    for i in range(hi - lo):
        y = np.float64(np.float32(scores[i]))
        kept[lo + i] = y
        top = y if y > top else top
        bottom = y if y < bottom else bottom
        finite &= abs(y) < np.inf
    scored.top[s] = top
    scored.large[s] = max(abs(top), abs(bottom)) if finite else np.inf  # not finite: every row scored next time
    scored.generation[s] = now


@helper_jit
def _candidates(s, lo, hi, blocks, width, w, scored, out):  # pragma: no cover - compiled
    """Score only the rows of sentence ``s`` that can be first-best under ``w`` (the others ``-inf`` in ``out``), from
    their scores ``y_r`` under the weights ``v`` they were last scored by: a row's score moves by at most ``D =
    sum_j max_r |h_rj| |w_j - v_j|``, so a row with ``y_r < max y - 2 R`` scores below the best row, ``R`` being
    ``D`` with room for the sums' rounding (``width`` units in the last place of each, Higham 2002, eq. 3.5; and
    underflow's) and float32's. False (``out`` not filled) when every row should be scored: none scored before,
    more than :data:`_RESCORE_SHARE` of them could be first-best, or a value not finite."""
    g = scored.generation[s]
    if g < 0:
        return False
    v, m, y, picked = scored.past[g], scored.bounds[s], scored.scores, scored.picked
    drift, size_w, size_v = 0.0, 0.0, 0.0
    for j in range(width):
        drift += m[j] * abs(w[j] - v[j])
        size_w += m[j] * abs(w[j])
        size_v += m[j] * abs(v[j])
    large = scored.large[s]
    reach = (drift + (size_w + size_v) * width * 2.0**-52) * (1.0 + 1e-6) + large * 2.0**-22 + width * 2.0**-1020
    reach += 2.0**-149  # float32's rounding of a kept score below its smallest normal is absolute
    if not (reach < np.inf and large < np.inf):  # a weight, a feature or a score not finite (NaN included)
        return False
    floor = scored.top[s] - 2.0 * reach
    count = 0
    for r in range(lo, hi):  # without a branch: which rows pass is not predictable
        picked[count] = r
        count += y[r] >= floor
    if count > _RESCORE_SHARE * (hi - lo):
        return False
    for k in range(count):  # the rows lie scattered in the sentence's block: all their loads under way at once
        _prefetch_range(blocks, width * picked[k], width * (picked[k] + 1), 8)
    out[: hi - lo] = -np.inf
    for k in range(count):
        r = picked[k]
        out[r - lo] = _dense_score(width * r, width, blocks, w)
    return True


@_jit
def _first_equal(
    offsets, indptr, indices, data, stats, stat_bits, data_bits, with_features, group
):  # pragma: no cover - compiled
    """The distinct rows of every sentence, rows equal when their statistics are and, ``with_features``, their
    features as dense rows (explicit zeros ignored; indices sorted and unique): returns ``keep``, the first row
    of each distinct row, ascending, and fills ``group[r]`` (one entry per row, of an integer type that holds
    their number: :func:`_index_array`) with row ``r``'s distinct row: ``keep[group[r]]`` is the first row of
    its sentence equal to it. An empty ``indptr`` with features: ``data`` holds dense row-major rows of
    ``data.size // rows`` columns, read as a CSR matrix storing every column (:func:`_row_span`). ``stat_bits``
    and ``data_bits`` are the bits of ``stats`` and ``data`` (uint64 views, :func:`_bits`: no copy), a zero of
    either sign hashed as +0.0's, since ``-0.0 == 0.0``.

    Rows are found by a 63-bit hash of their content (:func:`_entry_hash`) in the project's key table
    (:func:`hypertune.compiled.insert_key`), one sentence at a time; a hash shared by different rows (a
    collision) moves on to the next key, so rows are always compared, never merged by hash alone."""
    rows = stats.shape[0]
    keep = np.empty(rows, np.int64)
    width = data.size // max(rows, 1)  # of dense rows (an empty ``indptr``)
    longest = 1
    for s in range(offsets.size - 1):
        longest = max(longest, offsets[s + 1] - offsets[s])
    bits = 4
    while (1 << bits) < 2 * longest:
        bits += 1
    keys = np.full(1 << bits, EMPTY_KEY, dtype=np.int64)
    row_of = np.empty(1 << bits, dtype=np.int64)
    used = np.empty(longest, dtype=np.int64)
    mask, shift = (1 << bits) - 1, np.uint64(64 - bits)
    size = stats.shape[1]
    distinct = 0
    for s in range(offsets.size - 1):
        count = 0
        for r in range(offsets[s], offsets[s + 1]):
            h = np.uint64(0)
            for j in range(size):
                h += _entry_hash(stat_bits[r, j], j)
            if with_features:
                start, stop = _row_span(r, indptr, width)
                for k in range(start, stop):
                    h += _entry_hash(data_bits[k], size + _column(k, start, indptr, indices))
            h = (h ^ (h >> np.uint64(31))) * np.uint64(0xBF58476D1CE4E5B9)  # the sum mixed once more
            key = np.int64(h >> np.uint64(1))  # non-negative: never the table's EMPTY_KEY
            while True:
                slot = insert_key(keys, 0, mask, shift, key)
                if slot < -1:  # a new key: the first row of its kind
                    row_of[-slot - 2] = r
                    used[count] = -slot - 2
                    count += 1
                    group[r] = distinct
                    keep[distinct] = r
                    distinct += 1
                    break
                if _rows_equal(row_of[slot], r, indptr, indices, data, stats, with_features, width):
                    group[r] = group[row_of[slot]]
                    break
                key = (key + 1) & np.int64(0x7FFFFFFFFFFFFFFF)  # a collision: the next key
        for i in range(count):  # clear the table for the next sentence
            keys[used[i]] = EMPTY_KEY
    return keep if distinct == rows else keep[:distinct].copy()


@helper_jit
def _entry_hash(bits, column):  # pragma: no cover - compiled
    """A row's entry in :func:`_first_equal`'s hash: the value's bits with their high half folded onto the low
    (a count's few set bits and a sign are high), times an odd number of its column, folded once more; 0 for a
    zero of either sign (a stored zero is no entry). A row's hash is the sum of its entries', independent
    products that the processor works out side by side, where a chain over the row would wait on each step; equal
    rows have equal sums, and a collision costs only a comparison."""
    if bits << np.uint64(1) == np.uint64(0):
        return np.uint64(0)
    z = (bits ^ (bits >> np.uint64(32))) * (np.uint64(2 * column + 1) * np.uint64(0x9E3779B97F4A7C15))
    return z ^ (z >> np.uint64(29))


@helper_jit
def _row_span(r, indptr, width):  # pragma: no cover - compiled
    """Where row ``r``'s stored entries are: CSR's ``indptr``, or ``width`` columns a row when it is empty (dense
    row-major rows); :func:`_column` gives each entry's column. The one place a row is found either way."""
    return (indptr[r], indptr[r + 1]) if indptr.size else (width * r, width * (r + 1))


@helper_jit
def _column(k, start, indptr, indices):  # pragma: no cover - compiled
    """The column of stored entry ``k`` of the row whose entries start at ``start`` (:func:`_row_span`)."""
    return indices[k] if indptr.size else k - start


@helper_jit
def _rows_equal(a, b, indptr, indices, data, stats, with_features, width):  # pragma: no cover - compiled
    for j in range(stats.shape[1]):
        if stats[a, j] != stats[b, j]:
            return False
    if not with_features:
        return True
    (start_i, end_i), (start_k, end_k) = _row_span(a, indptr, width), _row_span(b, indptr, width)
    i, k = start_i, start_k
    while True:
        while i < end_i and data[i] == 0.0:
            i += 1
        while k < end_k and data[k] == 0.0:
            k += 1
        if i == end_i or k == end_k:
            return i == end_i and k == end_k
        if _column(i, start_i, indptr, indices) != _column(k, start_k, indptr, indices) or data[i] != data[k]:
            return False
        i += 1
        k += 1


# ---------------------------------------------------------------------- k-best packs


@dataclass
class KbestPack:
    """All hypotheses of all sentences: a CSR feature matrix (rows grouped by sentence) and their statistics.
    Hypotheses with identical features and statistics within a sentence are kept once (first occurrence).
    From a dense batch (:attr:`TuningSet.batch`) the features are its row-major matrix ``dense`` instead, every
    column of every row stored (``features`` is then ``None``)."""

    offsets: np.ndarray
    features: sp.csr_matrix | None
    stats: np.ndarray
    dense: np.ndarray | None = None

    @classmethod
    def from_tuning_set(cls, tuning_set: TuningSet, decoder: HopeFearDecoder) -> KbestPack:
        batch = tuning_set.batch
        if batch is not None and batch.dense is not None and batch.stats is not None and tuning_set.precomputed:
            if not tuning_set.metric.given_names:
                return cls._from_dense(batch.list_offsets, batch.dense, batch.stats)
        width = len(tuning_set.feature_space)
        graphs = tuning_set.graphs
        if batch is not None:  # a batch's CSR rows as they are
            counts, offsets = batch.counts(), batch.list_offsets
            stats = np.ascontiguousarray(_kbest_stats(tuning_set, decoder, counts, offsets), dtype=np.float64)
            features = batch.feature_rows()
            features = sp.csr_matrix(
                (features.data, features.indices, features.indptr), shape=(features.shape[0], width)
            )
        else:
            counts = np.asarray([g.num_edges - 1 for g in graphs], dtype=np.int64)
            offsets = offsets_from_counts(counts)
            stats = np.ascontiguousarray(_kbest_stats(tuning_set, decoder, counts, offsets), dtype=np.float64)
            features = _stacked_rows(graphs, counts, offsets, width)
        features.sort_indices()
        if features.has_canonical_format:
            keep = _first_equal(
                offsets,
                features.indptr.astype(np.int64),
                features.indices.astype(np.int64),
                features.data,
                stats,
                _bits(stats),
                _bits(features.data),
                True,
                _index_array(offsets[-1]),
            )
        else:  # repeated column indices in a row: compare dense rows
            keep = np.concatenate(
                [
                    lo + _unique_rows(features[lo:hi], stats[lo:hi])
                    for lo, hi in zip(offsets[:-1], offsets[1:], strict=True)
                ]
            )
        if keep.size != offsets[-1]:
            features = features[keep]
            features.sort_indices()
            stats = np.ascontiguousarray(stats[keep])
            offsets = np.searchsorted(keep, offsets).astype(np.int64)
        return cls(offsets, features, stats)

    @classmethod
    def _from_dense(cls, offsets: np.ndarray, dense: np.ndarray, stats: np.ndarray) -> KbestPack:
        """A batch's dense rows and statistics (views), the repeated rows of a sentence dropped as above; nothing
        copied when no row repeats (the search reads the values' bits in place)."""
        stats = np.ascontiguousarray(stats, dtype=np.float64)
        values = np.ascontiguousarray(dense, dtype=np.float64).reshape(-1)
        empty = np.zeros(0, np.int64)
        group = _index_array(offsets[-1])
        keep = _first_equal(offsets, empty, empty, values, stats, _bits(stats), _bits(values), True, group)
        del group
        if keep.size != offsets[-1]:
            dense, stats = dense[keep], np.ascontiguousarray(stats[keep])
            offsets = np.searchsorted(keep, offsets).astype(np.int64)
        return cls(offsets, None, stats, dense)

    @property
    def num_hypotheses(self) -> int:
        return int(self.offsets[-1])


def _stacked_rows(graphs: Sequence[Hypergraph], counts: np.ndarray, offsets: np.ndarray, width: int) -> sp.csr_matrix:
    """The hypotheses' feature rows of k-best graphs (edge 0, the start axiom, dropped), stacked without
    per-row work."""
    starts = [g.features.indptr[1] for g in graphs]
    indptr = np.zeros(offsets[-1] + 1, dtype=np.int64)
    indptr[1:] = np.concatenate([g.features.indptr[2:] - g.features.indptr[1] for g in graphs])
    nnz = np.asarray([g.features.indptr[-1] - start for g, start in zip(graphs, starts, strict=True)])
    indptr[1:] += np.repeat(offsets_from_counts(nnz)[:-1], counts)
    indices = np.concatenate([g.features.indices[start:] for g, start in zip(graphs, starts, strict=True)])
    data = np.concatenate([g.features.data[start:] for g, start in zip(graphs, starts, strict=True)])
    return sp.csr_matrix((data.astype(np.float64), indices, indptr), shape=(int(offsets[-1]), width))


def _kbest_stats(tuning_set: TuningSet, decoder: HopeFearDecoder, counts: np.ndarray, offsets: np.ndarray):
    """The statistics of every hypothesis (boundary words dropped, as :meth:`HopeFearDecoder._kbest`), in one
    batch for the whole corpus."""
    graphs = tuning_set.graphs
    batch = tuning_set.batch
    if batch is not None and not tuning_set.metric.given_names and (batch.stats is not None or not decoder.skip.size):
        return tuning_set.batch_rows()  # the statistics the batch has, or those of its words
    if tuning_set.precomputed or tuning_set.metric.given_names:  # statistics the graphs carry, not words
        return np.vstack([decoder.kbest_stats(s)[1:] for s in range(len(graphs))])
    if batch is not None and batch.words is not None:  # the words without the decoder's boundary words
        ids, word_offsets = batch.words
        keep = ~np.isin(ids, decoder.skip)
        hyp_offsets = np.concatenate(([0], offsets_from_counts(keep)[word_offsets[1:]]))
        sentences = np.repeat(np.arange(len(batch), dtype=np.int64), counts)
        return tuning_set.batch_stats(np.asarray(ids, dtype=np.int64)[keep], hyp_offsets, sentences)
    tokens = np.concatenate([g.target for g in graphs]).astype(np.int64)
    bounds = np.concatenate([g.target_offsets[2:] for g in graphs]).astype(np.int64)
    sizes = np.asarray([g.target.size for g in graphs], dtype=np.int64)
    bounds += np.repeat(offsets_from_counts(sizes)[:-1], counts)
    keep = tokens >= 0
    if decoder.skip.size:
        keep &= ~np.isin(tokens, decoder.skip)
    kept_before = offsets_from_counts(keep)
    hyp_offsets = np.concatenate(([0], kept_before[bounds]))
    sentences = np.repeat(np.arange(len(graphs), dtype=np.int64), counts)
    return tuning_set.batch_stats(tokens[keep], hyp_offsets, sentences)


def _bits(values: np.ndarray) -> np.ndarray:
    """The bits of float64 values as uint64, for hashing (:func:`_first_equal`): a view of contiguous float64
    values, no copy."""
    return np.ascontiguousarray(values, dtype=np.float64).view(np.uint64)


def _index_array(size: int, shape: int | tuple[int, ...] | None = None) -> np.ndarray:
    """An uninitialized array (of ``size`` entries, or ``shape``) for indices below ``size``: int32 when they fit
    (half the memory of int64), else int64."""
    return np.empty(size if shape is None else shape, np.int32 if size <= np.iinfo(np.int32).max else np.int64)


@_jit
def _dense_blocks(indptr, indices, data, width):  # pragma: no cover - compiled
    """The CSR features densely, row-major: feature ``j`` of row ``r`` at ``width * r + j``."""
    out = np.zeros(width * (indptr.size - 1))
    for r in range(indptr.size - 1):
        for k in range(indptr[r], indptr[r + 1]):
            out[width * r + indices[k]] = data[k]
    return out


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


class Mira:
    """Batch MIRA (Cherry & Foster 2012, Algorithm 1) as a tuner: ``Mira(options=None, *, progress=None,
    checkpoint=None, **fields)`` with a :class:`~hypertune.tuners.mira_options.MiraOptions` (or its fields as
    keyword arguments; the defaults are kbmira's). ``progress`` is called after every epoch, ``checkpoint`` with
    the weights the run would return if it stopped then (the best epoch's averaged weights, as written) and their
    score on the search spaces (pruned graphs in hypergraph mode) whenever they change
    (:data:`~hypertune.tuners.base.Checkpoint`; a deferred signal stops the run between sentences or epochs,
    :func:`hypertune.interrupts.check`). ``mode``: ``nbest`` needs every sentence to be a k-best list;
    ``hypergraph`` searches lattices and forests (k-best lists included); ``auto`` picks ``nbest`` when it
    can. The written weights are finished by :func:`~hypertune.tuners.finishing.finish_weights` (``normalize``:
    ``"l1"`` by default, or ``"none"``); when no epoch's weights score better than the start weights, the start
    weights are returned (``kept_start``, ``best_epoch`` 0)."""

    def __init__(
        self,
        options: MiraOptions | None = None,
        *,
        progress: Callable[[EpochSummary], None] | None = None,
        checkpoint: Checkpoint | None = None,
        **fields: Any,
    ) -> None:
        self.options = MiraOptions.make(options, fields)
        self.progress = progress
        self.checkpoint = checkpoint

    def fit(self, tuning_set: TuningSet | Shards, init: Weights) -> MiraResult:
        """Train from ``init``; returns the averaged weights of the epoch with the best corpus metric. The run is
        written once, as :meth:`fit_mixed` over shards: a tuning set is one shard (its own seeded order, ``seed``),
        whose mixture is its own weights."""
        if isinstance(tuning_set, TuningSet):
            tuning_set = LocalShards(tuning_set, 1)
        return self.fit_mixed(tuning_set, init)

    def fit_mixed(self, shards: Shards, init: Weights) -> MiraResult:
        """Batch MIRA by iterative parameter mixing (McDonald et al. 2010, Algorithm 4; the loop of
        :func:`~hypertune.tuners.mixing.mix`): every epoch, each shard runs one epoch of MIRA over its own
        sentences (its own seeded order ``[seed, shard]``, background corpus and running average, kept on the
        shard) starting from the mixed weights, and the mixed weights become the mean of the shards' weights in
        shard order. A shard carries the whole weight vector, so a feature it never sees gets no update there
        (Simianer et al.'s "missing feature = 0" for the updates). With ``select = k``, only the k features with
        the largest l2 norm of their weights across shards are mixed, the others set to 0 (Simianer et al. 2012,
        Algorithm 4's l1/l2 selection). The weights evaluated after an epoch are the mixture, selected the same
        way, of the shards' averaged weights; the best epoch's are returned. The same seed and number of shards
        give the same weights, in one process or on a cluster; one shard is the plain run on the whole set."""
        options = self.options
        started = time.perf_counter()
        space, metric = shards.feature_space, shards.metric
        higher = metric.higher_is_better
        kbest = all(shards.map(mira_shard_is_kbest))
        mode = options.mode
        if mode == "auto":
            mode = "nbest" if kbest else "hypergraph"
        elif mode == "nbest" and not kbest:
            raise InputError("mode 'nbest' needs k-best lists; these inputs are lattices or forests")
        pruned = mode == "hypergraph" and bool(options.prune_density)

        def written(vector: np.ndarray) -> Weights:
            return finish_weights(init, space, vector, options.normalize)

        def entry(epoch: int, score: float, seconds: float, updates: int, loss: float) -> EpochSummary:
            return EpochSummary(epoch, score, seconds, updates, shards.sentences, loss / shards.sentences)

        checkpoint = self.checkpoint

        def told(vector: np.ndarray, score: float) -> None:  # the checkpoint hears of the weights as written
            if checkpoint is not None:
                checkpoint(written(vector), score)

        start = init.vector(space)
        scoring = mira_shard_epoch_scoring if mode == "nbest" else None  # an epoch scores the one before it
        mixing = Mixing(mira_shard_prepare, mira_shard_epoch, mira_shard_stats, (options, start, mode), entry,
                        options.epochs, options.select, scoring)  # fmt: skip
        run = mix(shards, mixing, start, self.progress, None if checkpoint is None else told)
        timing = run.timing
        score_before, score_after, pruned_after = run.score_before, run.best_score, None
        if pruned:  # the epochs were scored on the pruned graphs; the result on the inputs as given
            timing["prune"] = max(run.prepared)  # the shards prune side by side on a cluster
            began = time.perf_counter()
            parts = shards.map(mira_shard_given_stats, [start, run.best])  # one model-best pass setup per shard
            score_before, score_after = (float(metric.score(ordered_sum([p[k] for p in parts]))) for k in (0, 1))
            pruned_after = run.best_score
            timing["evaluate"] += time.perf_counter() - began
        kept = run.keep_start(score_before, score_after, higher)
        if kept:
            score_after = score_before
            pruned_after = None if pruned_after is None else run.score_before
        timing["total"] = time.perf_counter() - started
        return MiraResult(
            written(run.best),
            score_before,
            score_after,
            run.history,
            timing["total"],
            options.seed,
            metric_label(metric),
            higher_is_better=higher,
            best_epoch=run.best_epoch,
            mode=mode,
            timing=timing,
            evaluations_in_train=run.evaluations_in_train,
            pruned_score_after=pruned_after,
            kept_start=kept,
        )


# ---------------------------------------------------------------------- MIRA's shard functions
class _MiraShard:
    """A shard's MIRA state between epochs: its (pruned) tuning set's runner, gain with its background
    corpus, weights with their running average, and order generator (seeded ``[seed, shard]``; one shard:
    ``seed``, the whole set's run)."""

    def __init__(self, shard: Shard, options: MiraOptions, w: np.ndarray, mode: str) -> None:
        tuning_set = shard.tuning_set
        began = time.perf_counter()
        if mode == "hypergraph" and options.prune_density:
            from hypertune.tuners.pruning import prune_tuning_set  # graphs only: k-best lists import no search

            tuning_set = prune_tuning_set(tuning_set, Weights.from_vector(tuning_set.feature_space, w),
                                          options.prune_density)  # fmt: skip
        self.prune_seconds = time.perf_counter() - began
        metric = tuning_set.metric
        order = getattr(getattr(metric, "bleu", metric), "max_order", 4)
        self.options = options
        self.size = len(tuning_set)
        self.gain = gain_for(metric, options.gain, order, options.decay, options.background_init, options.linear)
        decoder = HopeFearDecoder(tuning_set, search=options.search)
        self.runner = _KbestRunner(tuning_set, decoder) if mode == "nbest" else _ForestRunner(tuning_set, decoder)
        self.w, self.totals, self.last, self.state = w.copy(), w.copy(), np.zeros(w.size), np.zeros(1)
        seed = options.seed
        self.count = shard.count
        self.rng = np.random.default_rng(seed if seed is None or shard.count == 1 else [seed, shard.index])

    def epoch(
        self, mixed: np.ndarray, evaluate: np.ndarray | None = None
    ) -> tuple[tuple[np.ndarray, np.ndarray, int, float], np.ndarray | None]:
        """One epoch from the mixed weights: the shard's weights, averaged weights, updates and loss; and with
        ``evaluate``, :func:`mira_shard_stats` of those weights, found in the same pass where the runner can."""
        # the mixture moved the weights: bring every running sum up to this step first (the lazy sums of
        # _apply_update hold for unchanged weights, so one shard given its own weights back skips it, as the plain
        # run; several shards always take it, whatever the mixture)
        if self.count > 1 or not np.array_equal(mixed, self.w):
            self.totals += (self.state[0] - self.last) * self.w
            self.last[:] = self.state[0]
            self.w[:] = mixed
        # kbmira --no-shuffle: input order every epoch (the generator untouched)
        order_idx = self.rng.permutation(self.size) if self.options.shuffle else np.arange(self.size)
        order_idx = order_idx.astype(np.int64)
        updates, loss, given = self.runner.epoch(order_idx, self.w, self.totals, self.last, self.state, self.gain,
                                                 self.options, evaluate)  # fmt: skip
        return (self.w.copy(), _averaged(self.w, self.totals, self.last, self.state), updates, loss), given


def mira_shard_is_kbest(shard: Shard) -> bool:
    return shard.tuning_set.is_kbest


def mira_shard_prepare(shard: Shard, key: str, options: MiraOptions, w: np.ndarray, mode: str) -> float:
    """Set up the shard's MIRA run from the start weights ``w``; returns the seconds spent pruning its graphs."""
    state = shard.state[key] = _MiraShard(shard, options, w, mode)
    return state.prune_seconds


def mira_shard_epoch(
    shard: Shard, key: str, mixed: np.ndarray, epoch: int
) -> tuple[np.ndarray, np.ndarray, int, float]:
    """One epoch of the shard from the mixed weights: its weights, its averaged weights, updates, loss."""
    return shard.state[key].epoch(mixed)[0]


def mira_shard_epoch_scoring(
    shard: Shard, key: str, mixed: np.ndarray, epoch: int, evaluate: np.ndarray
) -> tuple[tuple[np.ndarray, np.ndarray, int, float], np.ndarray]:
    """:func:`mira_shard_epoch` and :func:`mira_shard_stats` of ``evaluate`` (the previous epoch's weights) in one
    pass over the shard's k-best lists."""
    parts, given = shard.state[key].epoch(mixed, evaluate)
    assert given is not None
    return parts, given


def mira_shard_stats(shard: Shard, key: str, w: np.ndarray) -> np.ndarray:
    """The shard's summed statistics of its model-best translations under ``w``."""
    return shard.state[key].runner.model_stats(w)


def mira_shard_given_stats(shard: Shard, vectors: list[np.ndarray]) -> list[np.ndarray]:
    """The shard's summed statistics of its model-best translations under each of ``vectors`` on its graphs as
    loaded (not pruned): what the weights score when the inputs are decoded again."""
    best = ModelBest(shard.tuning_set)
    return [best.stats(w).sum(axis=0) for w in vectors]


def batch_mira(
    tuning_set: TuningSet | Shards,
    init: Weights,
    options: MiraOptions | None = None,
    progress: Callable[[EpochSummary], None] | None = None,
    **overrides: Any,
) -> MiraResult:
    """:class:`Mira` in one call: ``options`` (a :class:`MiraOptions`) and/or keyword overrides such as
    ``C=0.01, epochs=10, seed=1``."""
    return Mira(options, progress=progress, **overrides).fit(tuning_set, init)


_DENSE_LIMIT = 1 << 26  # entries of the dense feature copy (:func:`_dense_blocks`)


def _distinct_stats(rows: KbestRows) -> DistinctStats:
    """The distinct statistics rows of every sentence (the gain is computed once for each), and the
    distinct values of every column of them (their logs are taken once per sentence visit), compared as
    floats, as the gain would see them."""
    stats = rows.stats
    group = _index_array(stats.shape[0])
    keep = _first_equal(
        rows.offsets, rows.indptr, rows.indices, rows.data, stats, _bits(stats), _bits(rows.data[:0]), False, group
    )
    group_stats = np.ascontiguousarray(stats[keep])
    group_offsets = np.searchsorted(keep, rows.offsets).astype(np.int64)
    del keep
    value_ids = _index_array(group_stats.size, group_stats.shape)
    return DistinctStats(
        group, group_offsets, group_stats, value_ids, *_distinct_values(group_stats, group_offsets, value_ids)
    )


@_jit
def _distinct_values(group_stats, group_offsets, value_ids):  # pragma: no cover - compiled
    """The distinct values of each column of each sentence's rows ``group_stats[group_offsets[s]:group_offsets[s +
    1]]`` (:class:`DistinctStats`): ``(values, value_columns, value_offsets)`` and ``value_ids`` (given, shaped as
    ``group_stats``), a sentence's values by column, then ascending (NaN last, each its own value; of equal
    values, ``-0.0 == 0.0``, the first row's), as a stable sort of (sentence, column, value) lists them."""
    groups, size = group_stats.shape
    sentences = group_offsets.size - 1
    longest = 1
    for s in range(sentences):
        longest = max(longest, group_offsets[s + 1] - group_offsets[s])
    order = np.empty(longest, np.int64)
    scratch = np.empty(longest, np.int64)
    value_offsets = np.zeros(sentences + 1, np.int64)
    count = 0
    for s in range(sentences):
        lo, hi = group_offsets[s], group_offsets[s + 1]
        for j in range(size):
            column = group_stats[:, j]
            stable_argsort(column, lo, hi, order, scratch)
            for k in range(hi - lo):
                u = order[k]
                if k == 0 or not column[u] == column[order[k - 1]]:
                    count += 1
                value_ids[u, j] = count - 1
        value_offsets[s + 1] = count
    values = np.empty(count)
    value_columns = np.empty(count, np.int64)
    seen = np.zeros(count, np.bool_)
    for u in range(groups):  # a value's first row is the first of its equal values in the stable order
        for j in range(size):
            v = value_ids[u, j]
            if not seen[v]:
                seen[v] = True
                values[v] = group_stats[u, j]
                value_columns[v] = j
    return values, value_columns, value_offsets


class _KbestRunner:
    def __init__(self, tuning_set: TuningSet, decoder: HopeFearDecoder) -> None:
        pack = KbestPack.from_tuning_set(tuning_set, decoder)
        f = pack.features
        if f is None:  # a dense batch: its rows alone (KbestRows)
            assert pack.dense is not None
            empty = np.zeros(0, np.int64)
            blocks = np.ascontiguousarray(pack.dense, dtype=np.float64).reshape(-1)
            self.rows = KbestRows(pack.offsets, empty, empty, np.zeros(0), blocks, pack.stats)
            self.distinct = _distinct_stats(self.rows)
            self.scored: ScoredRows | None = None  # made by the first evaluation
            return
        indptr, indices = f.indptr.astype(np.int64), f.indices.astype(np.int64)
        rows, width = f.shape
        if f.has_canonical_format and rows * width <= min(_DENSE_LIMIT, 4 * f.nnz):  # score rows densely
            blocks = _dense_blocks(indptr, indices, f.data, width)
        else:
            blocks = np.zeros(0)
        self.rows = KbestRows(pack.offsets, indptr, indices, f.data, blocks, pack.stats)
        self.distinct = _distinct_stats(self.rows)
        self.scored = None

    def epoch(
        self, order_idx, w, totals, last, state, gain: Gain, options: MiraOptions, evaluate: np.ndarray | None = None
    ) -> tuple[int, float, np.ndarray | None]:
        """One epoch; with ``evaluate``, also :meth:`model_stats` of those weights, found in the same pass."""
        width = self.rows.stats.shape[1]  # the compiled epoch adds a statistics row to the background each step
        if gain.kind == "background":
            background = gain.background
            if background.size != width:
                raise InputError(f"the background gain reads BLEU statistics of {background.size} columns; these "
                                 f"have {width}")  # fmt: skip
        else:  # a gain without state: the epoch's sums go to scratch space of the statistics' width
            background = np.zeros(width)
        if gain.kind == "background":
            group_gains = np.empty(self.distinct.group_stats.shape[0])
        else:  # a gain without state: every distinct row's, once (in Python: any gain of the registry)
            group_gains = np.asarray(gain.score(self.distinct.group_stats), dtype=np.float64)
        fused = evaluate is not None
        updates, loss, total = _kbest_epoch(
            order_idx,
            self.rows,
            self.distinct,
            AveragedWeights(w, totals, last, state),
            gain.rule(background=background),
            group_gains,
            float(options.C),
            float(options.decay) if gain.kind == "background" else 1.0,
            bool(options.model_bg),
            bool(options.safe_hope),
            np.ascontiguousarray(evaluate, dtype=np.float64) if fused else np.zeros(0),
            np.empty(self.rows.offsets.size - 1 if fused else 0, np.int64),
        )
        return int(updates), float(loss), total if fused else None

    def model_stats(self, w: np.ndarray) -> np.ndarray:
        if self.scored is None:
            self.scored = ScoredRows.start(self.rows)
        self.scored = self.scored.evaluating(w)
        return _kbest_model_stats(self.rows, w, self.scored)


class _ForestRunner:
    def __init__(self, tuning_set: TuningSet, decoder: HopeFearDecoder) -> None:
        self.tuning_set = tuning_set
        self.decoder = decoder
        self.pool: dict[int, list[Hypothesis]] = {}

    def epoch(
        self, order_idx, w, totals, last, state, gain: Gain, options: MiraOptions, evaluate: np.ndarray | None = None
    ) -> tuple[int, float, np.ndarray | None]:
        """One epoch; with ``evaluate``, also :meth:`model_stats` of those weights (first, in a pass of its own)."""
        given = None if evaluate is None else self.model_stats(evaluate)
        updates, total_loss = 0, 0.0
        for s in order_idx:
            interrupts.check()  # a safe point between sentences
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
            margin, norm = float(w[idx] @ diff), float(diff @ diff)
            loss = passive_aggressive_step(
                idx, diff, hope.gain - fear.gain, margin, norm, float(options.C), w, totals, last, state
            )
            if loss > 0.0:
                updates += 1
                total_loss += loss
            gain.update(hf.model.stats if options.model_bg else hope.stats)
        return updates, total_loss, given

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
            interrupts.check()
            total += self.decoder.model_best_stats(s, w)
        return total


__all__ = [
    "EpochSummary",
    "KbestPack",
    "MiraOptions",
    "MiraResult",
    "batch_mira",
]
