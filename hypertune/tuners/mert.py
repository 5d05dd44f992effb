"""Minimum error rate training (Och 2003) on k-best lists, lattices and hypergraphs.

All three search spaces go through one exact line search: the upper envelope of the derivations'
lines along a direction (the envelope semiring; Macherey et al. 2008; Kumar et al. 2009; Dyer 2013),
turned into error surfaces and merged over the corpus (:mod:`hypertune.tuners.linesearch`). k-best
lists take the batched Och sweep (:func:`~hypertune.algorithms.envelope.kbest_envelopes`), graphs the
compiled envelope inside pass, one sentence per thread.

Optimizers (``optimizer=``):

* ``auto`` (the default) — ``coordinate`` on k-best lists (Moses's mert), ``cyclic`` on lattices and forests:
  there a line search decodes every graph several times, and coordinate ascent's one move per round of
  line searches costs about five times as many (docs/performance.md, "Lattice MERT's default").
* ``coordinate`` — each round line-searches every unit direction of a free feature (and any random
  directions) from the current point and moves along the best one (what Moses and Z-MERT do; Moses
  calls it "powell").
* ``cyclic`` — the same directions, but moving along each improving one in turn: fewer line searches
  per unit of progress, which matters where line searches are expensive (lattices, forests).
* ``powell`` — Powell's method: move along each direction in turn, then along the round's total
  displacement, which replaces the direction that gained most (Press et al., *Numerical Recipes* 10.5).
* ``random-directions`` — rounds of ``random_directions`` (default 10) random unit directions, moving
  along each in turn (Cer et al. 2008).
* ``random-search`` and ``grid`` — no line searches: the baselines rerankers run (fairseq's noisy-channel
  and NeMo's random search, hand-written grids). ``random-search`` scores the start point and ``samples``
  weight vectors drawn uniformly from the restart box; ``grid`` scores the start point and an even grid of
  ``grid_points`` per axis over the box, for at most 3 free features. Each is scored exactly by the corpus
  metric of its model-best translations; the best wins, the first of equal ones.

Random restarts draw start points uniformly from a box (Moses's ``init.opt`` minimum and maximum, or
[-1, 1]); the given start point always runs too, and the best result wins. Everything random comes
from ``seed``.
"""

from __future__ import annotations

import itertools
import math
import os
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from hypertune import interrupts
from hypertune.algorithms.envelope import (
    EnvelopeResult,
    envelope_by_probing,
    envelope_inside,
    envelope_yields,
    kbest_envelopes,
    kbest_surface_rows,
    packed_envelopes,
    padded_tails,
)
from hypertune.algorithms.viterbi import viterbi_yields
from hypertune.arrays import offsets_from_counts
from hypertune.choices import ENVELOPES, MERT_OPTIMIZERS, Envelope
from hypertune.compiled import csc_matvec_rows, csr_matvec, dense_matvec
from hypertune.errors import UsageError
from hypertune.hypergraph import PackedGraphs
from hypertune.metrics import Metric, best_index, better, worst
from hypertune.symbols import FeatureSpace
from hypertune.tuners.base import Checkpoint, Iteration, TuningResult, metric_label
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.finishing import finish_weights, keeps_start
from hypertune.tuners.linesearch import ErrorSurfaces, LineSearchResult, line_search
from hypertune.tuners.mert_options import SEARCH_OPTIMIZERS, MertOptions
from hypertune.tuners.model_best import model_best_rows
from hypertune.tuners.shards import Shard, Shards
from hypertune.weights import Weights

OPTIMIZERS = MERT_OPTIMIZERS
#: The most points ``optimizer="grid"`` scores (``grid_points`` to the power of the free features).
MAX_GRID_POINTS = 1_000_000
#: Candidates ``random-search`` and ``grid`` score at once (on shards: per round trip), and one history entry each.
SEARCH_BLOCK = 100


#: From this many k-best hypotheses on, MERT's sweep runs in one thread per core.
_THREADED_HYPOTHESES = 50_000


def _balanced_chunks(edge_starts: np.ndarray, count: int) -> list[tuple[int, int]]:
    """Split sentences ``0:len(edge_starts)-1`` into at most ``count`` contiguous runs of about equal edges."""
    sentences = edge_starts.size - 1
    cuts = np.searchsorted(edge_starts, np.linspace(0, edge_starts[-1], count + 1)[1:-1])
    bounds = np.unique(np.concatenate(([0], np.clip(cuts, 0, sentences), [sentences])))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


class LineSearcher:
    """Error surfaces and model-best statistics of a tuning set, for any weights and direction.

    ``envelope`` chooses how graphs' envelopes are computed: ``"probing"`` (default; Viterbi searches at
    chosen points, :func:`~hypertune.algorithms.envelope.envelope_by_probing`, several times faster on
    lattices) or ``"semiring"`` (the inside pass in the envelope semiring). Both give the same envelopes.
    ``n_jobs`` threads (default: all cores) share the sentences. ``kbest_sweep=False`` treats k-best lists
    as the graphs they are instead of taking Och's batched sweep (for cross-checks).

    One caller at a time: a searcher keeps its last point's intercepts and model-best rows and a slope buffer
    between calls (its own threads share a call's sentences). A shard on a cluster has its own searcher, and
    MERT's driver asks each shard one question at a time.
    """

    def __init__(
        self,
        tuning_set: TuningSet,
        n_jobs: int | None = None,
        collect: bool = False,
        envelope: Envelope = "probing",
        kbest_sweep: bool = True,
    ) -> None:
        if envelope not in ENVELOPES:
            raise UsageError(f"unknown envelope method {envelope!r} ({', '.join(ENVELOPES)})")
        self.tuning_set = tuning_set
        self.width = len(tuning_set.feature_space)
        self.n_jobs = n_jobs or os.cpu_count() or 1
        self.envelope = envelope
        self.kbest = kbest_sweep and tuning_set.is_kbest
        graphs = tuning_set.graphs
        batch = tuning_set.batch if not tuning_set.metric.given_names else None
        if self.kbest and batch is not None:  # one batch of lists (issue 33): its arrays, no graph made
            rows = batch.feature_rows()
            self.features = sp.csr_matrix((rows.data, rows.indices, rows.indptr), shape=(rows.shape[0], self.width))
            self.offsets = batch.list_offsets
            self.stats = tuning_set.batch_rows()
        elif self.kbest:
            self.features = sp.vstack([g.feature_matrix(self.width)[1:] for g in graphs], format="csr")
            self.offsets = offsets_from_counts([g.num_edges - 1 for g in graphs])
            self.stats = np.vstack([tuning_set.edge_stats(s)[1:] for s in range(len(graphs))])
        if self.kbest:
            self._offsets64 = self.offsets.astype(np.int64)
            self.sentence_of = np.repeat(np.arange(len(graphs)), np.diff(self.offsets))
            # dense feature columns (when they fit) make a unit direction's slopes a column lookup
            small = self.features.shape[0] * self.width <= 50_000_000
            self.columns = np.asfortranarray(self.features.toarray()) if small else None
            # ... and the products w · h a column at a time, the same sums as the CSR rows' (sorted columns)
            self._dense = self.columns is not None and bool(self.features.has_canonical_format)
            self._column_orders: dict[int, np.ndarray] = {}
            # the compiled sweep that also gathers the statistics (needs float rows and no empty list)
            self._fused = self.stats.dtype == np.float64 and bool(np.all(np.diff(self.offsets) > 0))
            # large sets: the sweep in one run of sentences per thread (small ones are not worth a thread's start)
            threads = self.n_jobs if self.offsets[-1] >= _THREADED_HYPOTHESES else 1
            self._kbest_chunks = _balanced_chunks(self.offsets, threads)
        else:
            self.packed = PackedGraphs.pack(graphs)
            self._pads = padded_tails(self.packed)
            self._slopes = np.empty(self.packed.num_edges)
            self._chunks = _balanced_chunks(self.packed.edge_starts, 4 * self.n_jobs if self.n_jobs > 1 else 1)
        self._point: np.ndarray | None = None  # the last w0 and its intercepts, reused across directions
        self._intercepts = np.empty(0)
        self._tops: np.ndarray | None = None  # k-best: every list's model-best row at that point (or not yet)
        # every derivation seen on an envelope, per sentence: (words, features) by a (yield, features) key
        self.collect = collect and not self.kbest
        self.envelope_derivations: list[dict[tuple, tuple[list[str], dict[str, float]]]] = [
            {} for _ in range(len(graphs))
        ]
        self.line_searches = 0
        self.envelope_sizes: list[int] = []
        self._pool: ThreadPoolExecutor | None = None

    def surfaces(self, w0: np.ndarray, direction: np.ndarray) -> ErrorSurfaces:
        """Every sentence's error surface along ``w0 + γ·direction``."""
        intercepts = self._intercepts_at(w0)
        if self.kbest:
            moving = np.flatnonzero(direction)
            order = None
            if self.columns is not None and moving.size == 1:
                column = int(moving[0])
                # a unit direction's slopes are the column itself (x * 1.0 is x, bit for bit): no copy
                scale = direction[column]
                slopes = self.columns[:, column] if scale == 1.0 else self.columns[:, column] * scale
                if direction[column] > 0:
                    order = self._column_orders.get(column)
                    if order is None:  # hypotheses by this feature's value, stably, within each sentence
                        order = self._column_orders[column] = np.lexsort((self.columns[:, column], self.sentence_of))
            elif self._dense:
                slopes = dense_matvec(self.columns, np.ascontiguousarray(direction, dtype=np.float64))
            else:
                slopes = self.features @ direction
            if self._fused:
                tops = self._tops_at(w0)
                firsts, breakpoints, deltas, sizes = self._kbest_surface_rows(intercepts, slopes, order, tops)
                return ErrorSurfaces(firsts.sum(axis=0), breakpoints, deltas, sizes, firsts)
            segment_offsets, left, hypothesis = kbest_envelopes(self.offsets, intercepts, slopes, order)
            return ErrorSurfaces.from_segments(segment_offsets, left, self.stats[hypothesis])
        direction = np.ascontiguousarray(direction, dtype=np.float64)
        packed, slopes = self.packed, self._slopes
        starts = packed.edge_starts

        def slopes_of(first: int, last: int) -> None:
            self._edge_scores(direction, first, last, slopes)

        if self.collect or self.envelope == "semiring":  # one graph at a time, keeping its back-pointers
            method = envelope_by_probing if self.envelope == "probing" else envelope_inside
            graphs = self.tuning_set.graphs

            def one(index: int) -> tuple[np.ndarray, ...]:
                slopes_of(index, index + 1)
                edges = slice(starts[index], starts[index + 1])
                result = method(graphs[index], intercepts[edges], slopes[edges])
                tokens, offsets = envelope_yields(result)
                if self.collect:
                    self._remember(index, result, tokens, offsets)
                return np.array([len(result)]), result.left, tokens, offsets

            parts = self._map(one, range(len(graphs)))
        else:  # compiled over contiguous runs of sentences

            def run(chunk: tuple[int, int]) -> tuple[np.ndarray, ...]:
                slopes_of(*chunk)
                return packed_envelopes(packed, intercepts, slopes, *chunk, pads=self._pads)

            parts = self._map(run, self._chunks)
        if len(parts) == 1:  # one run of sentences: its arrays as they are (the yields' offsets start at 0)
            sizes, left, words, word_offsets = parts[0]
        else:
            sizes, left, words = (np.concatenate([p[k] for p in parts]) for k in range(3))
            word_offsets = offsets_from_counts(np.concatenate([np.diff(p[3]) for p in parts]))
        stats = self.tuning_set.batch_stats(words, word_offsets, np.repeat(np.arange(sizes.size), sizes))
        return ErrorSurfaces.from_segments(offsets_from_counts(sizes), left, stats)

    def _kbest_surface_rows(
        self, intercepts: np.ndarray, slopes: np.ndarray, order: np.ndarray | None, tops: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:func:`~hypertune.algorithms.envelope.kbest_surface_rows` of every k-best list, one run of sentences
        per thread (the kernel releases the GIL), joined in sentence order: the same arrays as one call."""
        chunks = self._kbest_chunks
        if len(chunks) == 1:
            return kbest_surface_rows(self.offsets, intercepts, slopes, order, self.stats, tops)
        offsets = self.offsets

        def run(chunk: tuple[int, int]) -> tuple[np.ndarray, ...]:
            first, last = chunk
            lo, hi = int(offsets[first]), int(offsets[last])
            part = None if order is None else order[lo:hi] - lo  # sorted by sentence first: this run's own lines
            return kbest_surface_rows(offsets[first : last + 1] - lo, intercepts[lo:hi], slopes[lo:hi], part,
                                      self.stats[lo:hi], tops[first:last] - lo)  # fmt: skip

        parts = self._map(run, chunks)
        return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))  # type: ignore[return-value]

    def _remember(self, index: int, result: EnvelopeResult, tokens: np.ndarray, offsets: np.ndarray) -> None:
        """Keep the derivations of an envelope (Cherry & Foster 2012's accumulation for lattice MERT)."""
        hg = self.tuning_set.graphs[index]
        seen = self.envelope_derivations[index]
        names = hg.feature_space.names
        for i in range(len(offsets) - 1):
            vector = hg.derivation_features(result.derivation(i))
            nonzero = np.flatnonzero(vector).tolist()
            features = {names[c]: float(vector[c]) for c in nonzero}
            key = (tuple(tokens[offsets[i] : offsets[i + 1]]), tuple(sorted(features.items())))
            if key not in seen:
                seen[key] = (hg.vocabulary.words(int(t) for t in key[0]), features)

    def _intercepts_at(self, w0: np.ndarray) -> np.ndarray:
        """``w0 · h`` of every hypothesis (k-best) or edge (graphs), cached for the last ``w0``: every
        direction of a coordinate-ascent round starts from the same point."""
        if self._point is None or not np.array_equal(self._point, w0):
            vector = np.ascontiguousarray(w0, dtype=np.float64)
            if self.kbest and self._dense:
                self._intercepts = dense_matvec(self.columns, vector)
            elif self.kbest:
                features = self.features
                self._intercepts = csr_matvec(features.indptr, features.indices, features.data, vector)
            else:
                self._intercepts = np.empty(self.packed.num_edges)
                out = self._intercepts
                self._map(lambda chunk: self._edge_scores(vector, chunk[0], chunk[1], out), self._chunks)
            self._point = w0.copy()
            self._tops = None
        return self._intercepts

    def _tops_at(self, w0: np.ndarray) -> np.ndarray:
        """k-best: every list's model-best row under ``w0`` (first on ties), cached with the intercepts: the
        line searches' hull test and :meth:`best_rows` share them."""
        intercepts = self._intercepts_at(w0)
        if self._tops is None:
            self._tops = model_best_rows(intercepts, self._offsets64)
        return self._tops

    def _map(self, function: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """``function`` of every item, in order: on the searcher's threads, or here when there is one job or
        one item (a pool's hand-over costs more than a small line search's work)."""
        if self.n_jobs == 1 or len(items) == 1:
            return [function(item) for item in items]
        return list(self._threads().map(function, items))

    def _threads(self) -> ThreadPoolExecutor:
        """One pool for the searcher's lifetime (starting threads for every line search costs more than
        a small search); shut down when the searcher is collected."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.n_jobs)
            weakref.finalize(self, self._pool.shutdown, wait=False)
        return self._pool

    def _edge_scores(self, vector: np.ndarray, first: int, last: int, out: np.ndarray) -> None:
        """``vector · h_e`` for the edges of graphs ``first:last``, into ``out`` (compiled, releases the GIL)."""
        columns, starts = self.packed.features, self.packed.edge_starts
        csc_matvec_rows(columns.indptr, columns.indices, columns.data, vector, starts[first], starts[last], out)

    def best_rows(self, w: np.ndarray) -> np.ndarray:
        """Every sentence's statistics of its model-best derivation under ``w`` (first hypothesis on ties)."""
        if self.kbest:  # the scores w · h and model-best rows, kept: the next round's searches start from w
            return self.stats[self._tops_at(w)]
        all_scores = np.empty(self.packed.num_edges)
        self._edge_scores(np.ascontiguousarray(w, dtype=np.float64), 0, len(self.packed), all_scores)
        words, offsets = viterbi_yields(self.packed, all_scores)
        sentences = np.arange(len(self.packed), dtype=np.int64)
        return self.tuning_set.batch_stats(words, offsets, sentences)

    def best_stats(self, w: np.ndarray) -> np.ndarray:
        """Corpus statistics of the model-best derivations under ``w`` (first hypothesis on ties)."""
        return self.best_rows(w).sum(axis=0)

    def score(self, w: np.ndarray) -> float:
        return float(self.tuning_set.score(self.best_stats(w)))

    def candidate_stats(self, candidates: np.ndarray) -> np.ndarray:
        """:meth:`best_stats` of every row of ``candidates`` (one weight vector a row), one row each."""
        return np.stack([self.best_stats(w) for w in candidates])

    @property
    def feature_space(self) -> FeatureSpace:
        return self.tuning_set.feature_space

    @property
    def metric(self) -> Metric:
        return self.tuning_set.metric

    def used_features(self) -> np.ndarray:
        """Which features some graph of the tuning set uses (a boolean per column)."""
        used = np.zeros(self.width, dtype=bool)
        if self.kbest and self.tuning_set.batch is not None:
            used[np.unique(self.features.indices)] = True  # the batch's rows: every graph's stored columns
            return used
        for hg in self.tuning_set.graphs:
            used[np.unique(hg.features.indices)] = True
        return used


# ---------------------------------------------------------------------- MERT over shards
def _shard_searcher(shard: Shard, envelope: Envelope) -> LineSearcher:
    """The shard's line searcher, made on first use and kept with the shard (one thread: on a cluster every
    worker process is one core)."""
    key = f"mert:{envelope}"
    searcher = shard.state.get(key)
    if searcher is None:
        searcher = shard.state[key] = LineSearcher(shard.tuning_set, 1, envelope=envelope)
    return searcher


def shard_surfaces(shard: Shard, envelope: Envelope, w0: np.ndarray, direction: np.ndarray) -> ErrorSurfaces:
    """A shard's part of a line search: its sentences' error surfaces along ``w0 + γ·direction``."""
    return _shard_searcher(shard, envelope).surfaces(w0, direction)


def shard_best_rows(shard: Shard, envelope: Envelope, w: np.ndarray) -> np.ndarray:
    """A shard's sentences' statistics of their model-best derivations under ``w``."""
    return _shard_searcher(shard, envelope).best_rows(w)


def shard_candidate_rows(shard: Shard, envelope: Envelope, candidates: np.ndarray) -> np.ndarray:
    """A shard's sentences' model-best statistics under each row of ``candidates``: shape (candidates,
    sentences, statistics)."""
    searcher = _shard_searcher(shard, envelope)
    return np.stack([searcher.best_rows(w) for w in candidates])


def shard_used_features(shard: Shard, envelope: Envelope) -> np.ndarray:
    return _shard_searcher(shard, envelope).used_features()


def shard_kbest(shard: Shard, envelope: Envelope) -> bool:
    """Whether the shard's line searches sweep k-best lists (not graphs)."""
    return bool(_shard_searcher(shard, envelope).kbest)


class ShardedSearcher:
    """:class:`LineSearcher`'s interface over :class:`~hypertune.tuners.shards.Shards`: every shard computes
    its sentences' error surfaces (or model-best statistics) and the parts are merged in shard order
    (:meth:`ErrorSurfaces.merge`), so every line search sees the arrays one process builds for the whole
    corpus and finds the same step, bit for bit. Only ``w0``, the direction and the surfaces travel."""

    collect = False
    envelope_derivations: list = []

    def __init__(self, shards: Shards, envelope: Envelope = "probing") -> None:
        if envelope not in ENVELOPES:
            raise UsageError(f"unknown envelope method {envelope!r} ({', '.join(ENVELOPES)})")
        self.shards = shards
        self.envelope = envelope
        self.feature_space = shards.feature_space
        self.metric = shards.metric
        self.line_searches = 0
        self.envelope_sizes: list[int] = []
        self.traffic: list[int] = []  # bytes of surfaces received per line search

    @property
    def kbest(self) -> bool:
        """Whether every shard sweeps k-best lists."""
        return all(self.shards.map(shard_kbest, self.envelope))

    def surfaces(self, w0: np.ndarray, direction: np.ndarray) -> ErrorSurfaces:
        parts = self.shards.map(shard_surfaces, self.envelope, w0, direction)
        self.traffic.append(sum(p.nbytes for p in parts))
        return ErrorSurfaces.merge(parts)

    def best_stats(self, w: np.ndarray) -> np.ndarray:
        return np.vstack(self.shards.map(shard_best_rows, self.envelope, w)).sum(axis=0)

    def score(self, w: np.ndarray) -> float:
        return float(self.metric.score(self.best_stats(w)))

    def candidate_stats(self, candidates: np.ndarray) -> np.ndarray:
        """Corpus statistics under every row of ``candidates``: each shard's rows, in shard order, summed as
        :meth:`best_stats` sums them (so bit for bit :meth:`LineSearcher.candidate_stats` on the whole set)."""
        rows = np.concatenate(self.shards.map(shard_candidate_rows, self.envelope, candidates), axis=1)
        return np.stack([r.sum(axis=0) for r in rows])

    def used_features(self) -> np.ndarray:
        return np.logical_or.reduce(self.shards.map(shard_used_features, self.envelope))


@dataclass(frozen=True)
class MertIteration(Iteration):
    """One start point of a MERT run (the given start first, then the random restarts)."""

    line_searches: int = 0


@dataclass
class MertResult(TuningResult):
    """:class:`TuningResult` plus the line searches run, the final metric of every start point and, with
    ``collect_envelopes``, per sentence the (words, features) of every derivation on any envelope."""

    line_searches: int = 0
    restart_scores: list[float] = field(default_factory=list)
    #: The optimizer that ran (``auto`` resolved: ``coordinate`` on k-best lists, ``cyclic`` on graphs).
    optimizer: str = ""
    envelope_derivations: list[list[tuple[list[str], dict[str, float]]]] | None = field(
        default=None, metadata={"json": False}
    )
    #: Whether the start weights lie within the bounds (``bounds``, ``positive``), so may be the result.
    start_feasible: bool = field(default=True, metadata={"json": False})


class Mert:
    """MERT with exact line search; scikit-learn style: configure, then :meth:`fit`. The options are a
    :class:`~hypertune.tuners.mert_options.MertOptions` (or its fields as keyword arguments):

    ``fixed``: feature names kept at their initial values. ``features``: if given, only these are
    optimized. ``bounds``: name -> (low, high). ``positive``: every optimized weight stays >= 0.
    ``collect_envelopes``: on lattices and forests, keep every derivation that appears on an envelope
    (:attr:`MertResult.envelope_derivations`), to be merged into the next outer iteration's search spaces
    (Cherry & Foster 2012). ``optimizer``: the search (module docstring); ``random-search`` scores ``samples``
    random weight vectors, ``grid`` ``grid_points`` per free feature. ``normalize``: ``"l1"`` divides the
    whole final weight vector -- the tuned weights and any weights of ``init`` that the tuning set has no
    feature for -- by its L1 norm (as Moses does; one factor for all, so the model-best derivations do not
    change), ``"none"`` keeps them as found (:func:`~hypertune.tuners.finishing.finish_weights`). MERT never
    ends below its start; when nothing it found scores better, the result is the start weights and says so
    (``kept_start``). ``envelope``: how lattices' and forests' envelopes are computed (see
    :class:`LineSearcher`). ``progress``: called with a line of text after every line search (beginning with
    ``"\\r"``: it may overwrite the previous one) and after every start point (``random-search`` and
    ``grid``: after every block of weight vectors). ``checkpoint``: called with the weights (as the result
    writes them) and metric of every point that beats all before it, the start weights included
    (:data:`~hypertune.tuners.base.Checkpoint`); the run checks for a deferred signal before every line
    search (:func:`hypertune.interrupts.check`).
    """

    def __init__(
        self,
        options: MertOptions | None = None,
        *,
        progress: Callable[[str], None] | None = None,
        checkpoint: Checkpoint | None = None,
        **overrides: Any,
    ) -> None:
        self.options = options = MertOptions.make(options, overrides)
        self.progress = progress
        self.checkpoint = checkpoint
        # the options as the run reads them
        self.optimizer, self.restarts = options.optimizer, options.restarts
        self.random_directions = options.random_directions
        self.samples, self.grid_points = options.samples, options.grid_points
        self.seed, self.positive, self.restart_box = options.seed, options.positive, options.restart_box
        self.fixed = set(options.fixed)
        self.features = None if options.features is None else set(options.features)
        self.bounds = dict(options.bounds or {})
        self.normalize, self.plateau, self.window = options.normalize, options.plateau, options.window
        self.max_iterations, self.tolerance, self.n_jobs = options.max_iterations, options.tolerance, options.n_jobs
        self.collect_envelopes, self.envelope = options.collect_envelopes, options.envelope

    def fit(self, tuning_set: TuningSet, init: Weights) -> MertResult:
        """Optimize from ``init`` on ``tuning_set``; returns the weights and the metric before and after.
        The tuner keeps no state from the run: the same tuner may fit several tuning sets, also at once."""
        searcher = LineSearcher(tuning_set, self.n_jobs, self.collect_envelopes, self.envelope)
        return _MertRun(self, searcher).fit(init)

    def fit_shards(self, shards: Shards, init: Weights) -> MertResult:
        """:meth:`fit` on a sharded tuning set (:class:`~hypertune.tuners.shards.LocalShards` or a cluster's):
        the same line searches and the same result, bit for bit, as :meth:`fit` on the whole set. Envelope
        derivations are not collected (they stay on the shards)."""
        if self.collect_envelopes:
            raise UsageError("collecting envelope derivations (--envelope-nbest) runs in one process only")
        return _MertRun(self, ShardedSearcher(shards, self.envelope)).fit(init)


def resolved_optimizer(optimizer: str, kbest: bool) -> str:
    """The optimizer a run uses: ``auto`` is ``coordinate`` on k-best lists and ``cyclic`` on graphs."""
    if optimizer != "auto":
        return optimizer
    return "coordinate" if kbest else "cyclic"


class _MertRun:
    """One MERT fit: the options, the tuning set's line searcher, the free features and their bounds. A new
    run is made for every :meth:`Mert.fit`, so no run state stays on the tuner."""

    def __init__(self, options: Mert, searcher: LineSearcher | ShardedSearcher) -> None:
        self.options = options
        self._searcher = searcher
        self._higher = searcher.metric.higher_is_better
        self._label = metric_label(searcher.metric)
        self._position = "start 1/1"
        self._optimizer = resolved_optimizer(options.optimizer, searcher.kbest)
        names = searcher.feature_space.names
        self._free = self._free_features()
        self._low, self._high = self._bound_vectors(names)

    def _free_features(self) -> np.ndarray:
        """The columns MERT moves: features some graph uses, minus ``fixed``, within ``features``."""
        options, names = self.options, self._searcher.feature_space.names
        unknown = (options.fixed | (options.features or set()) | set(options.bounds)) - set(names)
        if unknown:
            raise UsageError(f"no such feature in the tuning set: {', '.join(sorted(unknown))}")
        used = self._searcher.used_features()
        wanted = [n not in options.fixed and (options.features is None or n in options.features) for n in names]
        free = np.flatnonzero(used & np.array(wanted, dtype=bool))
        if free.size == 0:
            raise UsageError("no feature left to optimize")
        return free

    def fit(self, init: Weights) -> MertResult:
        """Optimize from ``init``: the same seed gives the same result."""
        started = time.perf_counter()
        space = self._searcher.feature_space
        names = space.names
        start = np.clip(init.vector(space), self._low, self._high)
        rng = np.random.default_rng(self.options.seed)
        before = self._searcher.score(init.vector(space))
        self._init, self._best_score = init, before
        if self._optimizer in SEARCH_OPTIMIZERS:
            best_w, history = self._search(start, names, rng)
            restart_scores: list[float] = []
        else:
            interrupts.check()
            best_w, history = self._restarts(start, names, rng)
            restart_scores = [entry.score for entry in history]
        after = self._searcher.score(best_w)
        given = init.vector(space)
        feasible = bool(np.all((given >= self._low) & (given <= self._high)))
        kept = keeps_start(before, after, self._higher, feasible)
        if kept:  # nothing better than the start weights, which are within the bounds: them
            best_w, after = given, before
        weights = self._written(best_w)
        collected = None
        if self._searcher.collect:
            collected = [list(found.values()) for found in self._searcher.envelope_derivations]
        return MertResult(
            weights,
            before,
            after,
            history,
            time.perf_counter() - started,
            self.options.seed,
            self._label,
            line_searches=self._searcher.line_searches,
            higher_is_better=self._higher,
            restart_scores=restart_scores,
            optimizer=self._optimizer,
            envelope_derivations=collected,
            kept_start=kept,
            start_feasible=feasible,
        )

    def _restarts(
        self, start: np.ndarray, names: Sequence[str], rng: np.random.Generator
    ) -> tuple[np.ndarray, list[Iteration]]:
        """The line-search optimizers from the start point and every random restart: the best end point, and a
        history entry per start point."""
        starts = [start, *self._random_starts(start, names, rng)]
        history: list[Iteration] = []
        best_w, best_score = start, worst(self._higher)
        for number, point in enumerate(starts):
            self._position = f"start {number + 1}/{len(starts)}"
            began, searches_before = time.perf_counter(), self._searcher.line_searches
            w, score = self._optimize(point, rng)
            searches = self._searcher.line_searches
            history.append(MertIteration(number + 1, score, time.perf_counter() - began, searches - searches_before))
            if self.options.progress:
                self.options.progress(
                    f"{self._position}: {self._label} {100 * score:.2f} after {searches} line searches"
                )
            if self._better(score, best_score) or number == 0:
                best_w, best_score = w, score
        return best_w, history

    def _written(self, w: np.ndarray) -> Weights:
        """The weights of point ``w`` as the result writes them (:func:`~hypertune.tuners.finishing.finish_weights`)."""
        return finish_weights(self._init, self._searcher.feature_space, w, self.options.normalize)

    def _offer(self, w: np.ndarray, score: float) -> None:
        """A point found: given to ``checkpoint`` when it beats every point so far, the start weights included."""
        if self.options.checkpoint is not None and self._better(score, self._best_score):
            self._best_score = score
            self.options.checkpoint(self._written(w), score)

    def search(self, w: np.ndarray, direction: np.ndarray) -> LineSearchResult:
        """One exact line search from ``w`` along ``direction`` within the bounds (after a safe point: a
        deferred signal stops the run here, :func:`hypertune.interrupts.check`)."""
        interrupts.check()
        low, high = -math.inf, math.inf
        moving = np.flatnonzero(direction)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = (self._low[moving] - w[moving]) / direction[moving]
            b = (self._high[moving] - w[moving]) / direction[moving]
        if moving.size:
            low = float(np.nanmax(np.minimum(a, b)))
            high = float(np.nanmin(np.maximum(a, b)))
        low, high = min(low, 0.0), max(high, 0.0)
        surfaces = self._searcher.surfaces(w, direction)
        self._searcher.line_searches += 1
        self._searcher.envelope_sizes.append(surfaces.segments)
        result = line_search(
            surfaces,
            self._searcher.metric.score,
            self._higher,
            low,
            high,
            self.options.plateau,
            self.options.window,
        )
        if self.options.progress:
            searches, score = self._searcher.line_searches, 100 * result.score
            self.options.progress(f"\r{self._position}, line search {searches}: {self._label} {score:.2f} on this line")
        return result

    # ------------------------------------------------------------------ optimizers
    def _optimize(self, start: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        w = start.copy()
        score = self._searcher.score(w)
        self._offer(w, score)  # a random restart may start above every point so far
        if self._optimizer == "powell":
            return self._powell(w, score, rng)
        for _ in range(self.options.max_iterations):
            directions = self._round_directions(rng)
            if self._optimizer == "coordinate":
                results = [(self.search(w, d), d) for d in directions]  # the best first, the first of equal ones
                results.sort(key=lambda item: -item[0].score if self._higher else item[0].score)
                moved = next(filter(None, (self._move(w, score, r, d) for r, d in results)), None)
                if moved is None:
                    break
                w, score = moved
                self._offer(w, score)
            else:
                improved = False
                for d in directions:
                    moved = self._move(w, score, self.search(w, d), d)
                    if moved is not None:
                        (w, score), improved = moved, True
                        self._offer(w, score)
                if not improved:
                    break
        return w, score

    def _move(
        self, w: np.ndarray, score: float, result: LineSearchResult, direction: np.ndarray
    ) -> tuple[np.ndarray, float] | None:
        """The point a line search chose and its score, if better than ``score`` once reranked there. Where
        several lines meet in one point, rounding can leave an interval a few ulps wide whose 1-best is no
        weight vector's: its step is not taken (None). Otherwise the line search's own score is kept."""
        if not self._better(result.score, score):
            return None
        moved = w + result.gamma * direction
        actual = self._searcher.score(moved)
        if math.isclose(actual, result.score, rel_tol=1e-12, abs_tol=1e-15):
            return moved, result.score
        return (moved, actual) if self._better(actual, score) else None

    def _powell(self, w: np.ndarray, score: float, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        directions = self._round_directions(rng)
        for _ in range(self.options.max_iterations):
            origin, origin_score = w.copy(), score
            largest_gain, largest = 0.0, 0
            for k, d in enumerate(directions):
                moved = self._move(w, score, self.search(w, d), d)
                if moved is not None:
                    gain = abs(moved[1] - score)
                    if gain > largest_gain:
                        largest_gain, largest = gain, k
                    w, score = moved
                    self._offer(w, score)
            if not self._better(score, origin_score):
                break
            displacement = w - origin
            norm = np.linalg.norm(displacement)
            if norm > 0:
                displacement /= norm
                moved = self._move(w, score, self.search(w, displacement), displacement)
                if moved is not None:
                    w, score = moved
                    self._offer(w, score)
                directions[largest] = displacement
        return w, score

    # ------------------------------------------------------------------ baselines without line searches
    def _search(
        self, start: np.ndarray, names: Sequence[str], rng: np.random.Generator
    ) -> tuple[np.ndarray, list[Iteration]]:
        """``random-search`` or ``grid``: score the start point, then every candidate in blocks of
        :data:`SEARCH_BLOCK`, each by the corpus metric of its model-best translations (all sentences at once,
        compiled); the best by :func:`~hypertune.metrics.better` wins, the first of equal ones (the start point
        first). History: the best score so far after the start point and after every block, ``iteration``
        counting the weight vectors scored."""
        low, high = self._box(names, f"{self._optimizer} point")
        if self._optimizer == "grid":
            total, blocks = self._grid(start, names, low, high)
        else:
            total, blocks = self.options.samples, self._samples(start, low, high, rng)
        total += 1
        history: list[Iteration] = []
        best_w, best_score, done = start, worst(self._higher), 0
        for block in itertools.chain([start[None, :]], blocks):
            interrupts.check()
            began = time.perf_counter()
            scores = np.atleast_1d(self._searcher.metric.score(self._searcher.candidate_stats(block)))
            k = best_index(scores.tolist(), self._higher)
            if better(float(scores[k]), best_score, self._higher):
                best_w, best_score = block[k].copy(), float(scores[k])
                self._offer(best_w, best_score)
            done += len(block)
            history.append(MertIteration(done, best_score, time.perf_counter() - began))
            if self.options.progress:
                best = f"best {self._label} {100 * best_score:.2f}"
                again = "\r" if done < total else ""  # the last keeps its line
                self.options.progress(f"{again}{self._optimizer}: {done}/{total} weight vectors, {best}")
        return best_w, history

    def _samples(
        self, start: np.ndarray, low: np.ndarray, high: np.ndarray, rng: np.random.Generator
    ) -> Iterator[np.ndarray]:
        """``samples`` points drawn uniformly from the box for the free features (the others as at the start),
        in blocks; the draws follow one stream, so a run's points are the first of a run with more."""
        free = self._free
        for first in range(0, self.options.samples, SEARCH_BLOCK):
            block = np.tile(start, (min(SEARCH_BLOCK, self.options.samples - first), 1))
            block[:, free] = rng.uniform(low[free], high[free], size=(len(block), free.size))
            yield block

    def _grid(
        self, start: np.ndarray, names: Sequence[str], low: np.ndarray, high: np.ndarray
    ) -> tuple[int, Iterator[np.ndarray]]:
        """The number of grid points and the points in blocks: ``grid_points`` evenly spaced values from the
        box's low to high end for each free feature (one where they are equal), in the order of
        ``itertools.product`` over the free features in column order; the others as at the start."""
        free = self._free
        if free.size > 3:
            listed = ", ".join(names[i] for i in free[:5]) + (" ..." if free.size > 5 else "")
            raise UsageError(
                f"grid search takes at most 3 free features, these inputs have {free.size} ({listed}): keep the "
                "others at their start values (--fix) or name up to 3 (--optimize), or use --optimizer random-search"
            )
        sizes = [1 if low[i] == high[i] else self.options.grid_points for i in free]
        total = math.prod(sizes)
        if total > MAX_GRID_POINTS:
            raise UsageError(
                f"a grid of {' x '.join(map(str, sizes))} = {total:,} points is more than {MAX_GRID_POINTS:,}: "
                "lower --grid-points or fix features (--fix)"
            )
        axes = [np.linspace(low[i], high[i], size) for i, size in zip(free, sizes, strict=True)]

        def blocks() -> Iterator[np.ndarray]:
            for first in range(0, total, SEARCH_BLOCK):
                index = np.unravel_index(np.arange(first, min(first + SEARCH_BLOCK, total)), sizes)
                block = np.tile(start, (len(index[0]), 1))
                for axis, column, at in zip(axes, free, index, strict=True):
                    block[:, column] = axis[at]
                yield block

        return total, blocks()

    def _round_directions(self, rng: np.random.Generator) -> list[np.ndarray]:
        width = len(self._low)
        directions = []
        if self._optimizer != "random-directions":
            for i in self._free:
                d = np.zeros(width)
                d[i] = 1.0
                directions.append(d)
        count = self.options.random_directions or (10 if self._optimizer == "random-directions" else 0)
        for _ in range(count):
            d = np.zeros(width)
            d[self._free] = rng.standard_normal(self._free.size)
            directions.append(d / np.linalg.norm(d))
        return directions

    # ------------------------------------------------------------------ helpers
    def _better(self, new: float, old: float) -> bool:
        return better(new, old, self._higher, self.options.tolerance)

    def _bound_vectors(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        low = np.full(len(names), -math.inf)
        high = np.full(len(names), math.inf)
        for name, (lo, hi) in self.options.bounds.items():
            if lo > hi:
                raise UsageError(f"bounds of {name}: {lo} > {hi}")
            i = names.index(name)
            low[i], high[i] = lo, hi
        if self.options.positive:
            low[self._free] = np.maximum(low[self._free], 0.0)
        return low, high

    def _box(self, names: Sequence[str], what: str) -> tuple[np.ndarray, np.ndarray]:
        """The box random restarts, ``random-search`` and ``grid`` draw from: Moses's ``init.opt`` minimum and
        maximum (``restart_box``), else [-1, 1], within ``bounds`` and ``positive``; an error naming the free
        features it leaves empty (``what``: the points drawn)."""
        low = np.full(len(names), -1.0)
        high = np.full(len(names), 1.0)
        if self.options.restart_box is not None:
            for i, name in enumerate(names):
                low[i] = self.options.restart_box[0].get(name, low[i])
                high[i] = self.options.restart_box[1].get(name, high[i])
        low, high = np.maximum(low, self._low), np.minimum(high, self._high)
        empty = [names[i] for i in self._free if low[i] > high[i]]
        if empty:
            raise UsageError(
                f"no {what} fits the restart box and the bounds (--bounds, --positive) of "
                f"{', '.join(empty[:5])}{' ...' if len(empty) > 5 else ''}"
            )
        return low, high

    def _random_starts(self, start: np.ndarray, names: Sequence[str], rng: np.random.Generator) -> list[np.ndarray]:
        if not self.options.restarts:
            return []
        low, high = self._box(names, "random restart")
        points = []
        for _ in range(self.options.restarts):
            point = start.copy()
            point[self._free] = rng.uniform(low[self._free], high[self._free])
            points.append(point)
        return points
