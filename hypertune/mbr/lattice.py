"""Lattice minimum Bayes-risk decoding with linear BLEU (Tromble et al. 2008), on lattices and forests.

The decision rule of Tromble et al. (2008), MBR under their linear BLEU gain (extended to hypergraphs by Kumar
et al. 2009)::

    e* = argmax_e  theta_0 |e| + sum_w theta_|w| #_w(e) p(w | G)

over every derivation ``e`` of the graph ``G``: ``#_w(e)`` counts n-gram ``w`` (orders ``1..N``) in the yield,
``theta`` are linear BLEU's weights (:func:`~hypertune.metrics.linear_bleu.linear_bleu_weights` from the unigram
precision ``p`` and precision ratio ``r``), and ``p(w | G)`` is the n-gram posterior: the probability that ``w``
occurs in the yield *at least once* (Tromble et al.'s definition), under ``p(d) ∝ exp(alpha * w.h(d))``. The gain
is linear BLEU's expectation ``sum_e' p(e') G(e, e')``.

How it is computed (no enumeration):

* the graph is split by (N-1)-word state (:func:`~hypertune.algorithms.intersect.intersect_ngrams`, the split
  of the oracles and of linear-BLEU training): every n-gram of a yield is then created by exactly one split edge;
* one inside/outside pass (:func:`~hypertune.algorithms.expectations.inside_outside`) gives every split edge's
  posterior and its share of its head; an n-gram's *expected count* is the posterior mass of the split edges
  creating it;
* ``posteriors="exact"``: an n-gram that no derivation contains twice has ``p(w | G)`` equal to its expected
  count (Can & Narayanan 2015's observation); which n-grams can repeat is found exactly by a bottom-up pass of
  bit sets, and only those get the dynamic program ``q(v, w) = sum_e pi(e) [e creates w ? 1 :
  1 - prod_tails (1 - q(u, w))]`` -- the probability that a derivation of ``v`` contains ``w``. On a lattice
  this is Tromble et al.'s Algorithm 1 (paths reaching a node that contain ``w``); on a forest it is exact too,
  because the sub-derivations of an edge's tails are independent under the inside distribution. Cost: one
  pass over the split edges per 64 x ``block`` n-grams for the bit sets, and (split edges) x (repeatable
  n-grams) for the program;
* ``posteriors="expected-counts"``: the expected counts themselves (the cheaper approximation: a count can
  exceed 1 where an n-gram repeats; the expectations of DeNero et al. 2009's consensus decoding);
* each split edge's gain is ``theta_0`` times its words plus ``theta_n p(w | G)`` for every n-gram it creates,
  and the decision is the Viterbi derivation under those gains on the split graph (ties: the first best in-edge
  at every split node, as every Viterbi search of the project).

``<s>`` and ``</s>`` are no words (they are dropped, as by the oracles and BLEU). ``p`` and ``r``: given, or
estimated from the model-best translations against references (:func:`estimate_parameters`, as the linear
oracle does), or without references Moses's defaults ``-lmbr-p 0.8 -lmbr-r 0.6`` (:data:`MOSES_P`,
:data:`MOSES_R`). The scale ``T`` of linear BLEU does not change the decision and is 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from hypertune import compiled
from hypertune.algorithms.expectations import inside_outside
from hypertune.algorithms.intersect import NgramIntersection, intersect_ngrams
from hypertune.algorithms.viterbi import viterbi
from hypertune.choices import MBR_POSTERIORS
from hypertune.errors import GraphError, InputError, UsageError
from hypertune.hypergraph import Hypergraph, PackedGraphs
from hypertune.mbr import _graph_kernels
from hypertune.metrics.base import sentence_marker_ids, strip_sentence_markers
from hypertune.metrics.bleu import BleuMetric
from hypertune.metrics.linear_bleu import estimate_precisions, linear_bleu_weights
from hypertune.weights import Weights

__all__ = [
    "MOSES_P",
    "MOSES_R",
    "LatticeChoice",
    "LatticeMbrResult",
    "NgramPosteriors",
    "PosteriorMethod",
    "SplitPosteriors",
    "check_options",
    "estimate_parameters",
    "lattice_mbr",
    "lattice_mbr_corpus",
    "ngram_posteriors",
    "split_posteriors",
]

PosteriorMethod = Literal["exact", "expected-counts"]
POSTERIOR_METHODS: tuple[str, ...] = MBR_POSTERIORS
MOSES_P = 0.8
"""Moses's default unigram precision for lattice MBR (``-lmbr-p``)."""
MOSES_R = 0.6
"""Moses's default precision ratio for lattice MBR (``-lmbr-r``)."""

_BIT_BLOCK = 256  # at most this many 64-bit words of a node's bit set per pass (16,384 n-grams)
_REPEAT_BLOCK = 64  # at most this many repeatable n-grams per pass of the dynamic program
_WORK_BYTES = 64 << 20  # and the per-node tables of a pass within 64 MiB (fewer n-grams per pass on huge graphs)


@dataclass(frozen=True)
class NgramPosteriors:
    """The distinct n-grams (orders ``1..max_order``) of a graph's yields, sentence markers dropped: ``grams``
    (rows of word ids padded with -1), ``orders``, and ``values``: the posterior ``p(w | G)`` (``exact``) or
    the expected count (``expected-counts``). ``expected_length``: the expected number of words."""

    grams: np.ndarray
    orders: np.ndarray
    values: np.ndarray
    expected_length: float
    method: str

    def as_dict(self, vocabulary: Sequence[str] | None = None) -> dict[tuple, float]:
        """``{n-gram: value}``, n-grams as tuples of word ids, or of words with the graph's ``vocabulary``
        (``hg.vocabulary``); for reports and tests, not hot paths."""
        rows = self.grams.tolist()
        out: dict[tuple, float] = {}
        for row, n, value in zip(rows, self.orders.tolist(), self.values.tolist(), strict=True):
            key = tuple(row[:n]) if vocabulary is None else tuple(vocabulary[i] for i in row[:n])
            out[key] = value
        return out


@dataclass(frozen=True)
class LatticeChoice:
    """One sentence's decision: the chosen ``words`` and its ``gain`` (the expected linear BLEU, module docstring),
    and the model-best (MAP, Viterbi) hypothesis ``map_words`` with its gain ``map_gain``."""

    words: list[str]
    gain: float
    map_words: list[str]
    map_gain: float

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def map_text(self) -> str:
        return " ".join(self.map_words)


@dataclass(frozen=True)
class LatticeMbrResult:
    """A corpus's decisions with the linear-BLEU parameters used: ``p``, ``r`` (NaN when ``theta`` was given),
    ``theta`` and where they came from, ``source``: ``"given"``, ``"estimated"`` (model-best translations against
    references) or ``"moses-defaults"``."""

    choices: list[LatticeChoice]
    p: float
    r: float
    theta: np.ndarray
    source: str


class SplitPosteriors:
    """A graph split by (N-1)-word state, with every created n-gram's id (``ids`` per row, ``table``), the
    inside/outside of ``scores`` (``io``) and every n-gram's expected count (``expected``); shared with
    :mod:`hypertune.mbr.consensus`. Made by :func:`split_posteriors`."""

    def __init__(self, hg: Hypergraph, scores: np.ndarray, order: int) -> None:
        skip = sentence_marker_ids(hg.vocabulary).tolist()
        self.split: NgramIntersection = intersect_ngrams(hg, order, skip)
        graph = self.split.graph
        self.graph = graph
        self.scores = np.ascontiguousarray(scores[self.split.edge_origin], dtype=np.float64)
        self.io = inside_outside(PackedGraphs.pack([graph], features=False), self.scores)
        grams, orders = self.split.grams, self.split.gram_orders
        self.stride = int(max(int(hg.target.max(initial=0)), int(grams.max(initial=0)), 0)) + 1
        bits = max(4, int(orders.size * max(order, 1) * 2 - 1).bit_length())
        keys = np.full(1 << bits, compiled.EMPTY_KEY, np.int64)
        self.table = _graph_kernels.GramTable(keys, np.empty(1 << bits, np.int64), np.uint64(64 - bits), self.stride)
        ids, count, first, lengths = _graph_kernels.intern_grams(grams, orders, self.table)
        self.ids, self.count, self.first, self.id_orders = ids, int(count), first, lengths
        self.forest = _graph_kernels.SplitForest(
            graph.node_offsets, graph.tail_offsets, graph.tails, self.split.gram_offsets, ids
        )
        self.row_edge = np.repeat(np.arange(graph.num_edges), np.diff(self.split.gram_offsets))
        self.expected = np.bincount(ids, weights=self.io.posteriors[self.row_edge], minlength=self.count)

    def posteriors(self, method: str) -> np.ndarray:
        """Every n-gram id's ``p(w | G)`` (``exact``) or expected count (module docstring)."""
        if method == "expected-counts":
            return self.expected
        per_node = max(1, _WORK_BYTES // (8 * max(1, self.graph.num_nodes)))
        repeat = _graph_kernels.repeatable_grams(self.forest, self.count, min(_BIT_BLOCK, per_node))
        values = np.minimum(self.expected, 1.0)
        which = np.flatnonzero(repeat)
        if which.size:
            local = np.full(self.count, -1, np.int64)
            local[which] = np.arange(which.size)
            shares, goal = self.io.shares, self.graph.goal
            block = min(_REPEAT_BLOCK, per_node)
            values[which] = _graph_kernels.at_least_once(self.forest, shares, goal, local, which.size, block)
        return values

    def result(self, values: np.ndarray, method: str) -> NgramPosteriors:
        expected_length = float(self.expected[self.id_orders == 1].sum())
        grams = np.where(np.arange(self.split.order) < self.id_orders[:, None], self.split.grams[self.first], -1)
        return NgramPosteriors(grams, self.id_orders, values, expected_length, method)


def check_options(scale: float, max_order: int, method: str = "exact") -> None:
    """A :class:`UsageError` for a scale that is negative or not finite, an order below 1 or an unknown
    posterior method."""
    if not (np.isfinite(scale) and scale >= 0):
        raise UsageError(f"the posterior scale must be a finite number >= 0, got {scale}")
    if not isinstance(max_order, int | np.integer) or max_order < 1:
        raise UsageError(f"the n-gram order must be at least 1, got {max_order}")
    if method not in POSTERIOR_METHODS:
        raise UsageError(f"n-gram posteriors are 'exact' or 'expected-counts', not {method!r}")


def split_posteriors(
    hg: Hypergraph, weights: Weights, scale: float, max_order: int, sentence: int | None = None
) -> SplitPosteriors:
    """``hg`` split by (``max_order`` - 1)-word state under ``p(d) ∝ exp(scale * w.h(d))``; a split beyond its
    node limit is a :class:`GraphError` naming ``sentence``."""
    scores = scale * np.asarray(weights.edge_scores(hg), dtype=np.float64)
    try:
        return SplitPosteriors(hg, scores, max_order)
    except GraphError as error:
        where = "" if sentence is None else f"sentence {sentence}: "
        raise GraphError(f"{where}{error}") from None


def ngram_posteriors(
    hg: Hypergraph,
    weights: Weights,
    *,
    scale: float = 1.0,
    max_order: int = 4,
    method: PosteriorMethod = "exact",
) -> NgramPosteriors:
    """The n-gram posteriors ``p(w | G)`` of ``hg`` under ``p(d) ∝ exp(scale * w.h(d))`` (``method="exact"``), or
    the n-grams' expected counts (``"expected-counts"``); see the module docstring."""
    check_options(scale, max_order, method)
    split = split_posteriors(hg, weights, scale, max_order)
    return split.result(split.posteriors(method), method)


def _decide(split: SplitPosteriors, theta: np.ndarray, method: str) -> LatticeChoice:
    """The linear-gain Viterbi derivation of a split graph and the MAP derivation, with their gains."""
    values = split.posteriors(method)
    g = split.graph
    orders = split.split.gram_orders
    row_gain = theta[orders] * values[split.ids] + np.where(orders == 1, theta[0], 0.0)
    gains = np.bincount(split.row_edge, weights=row_gain, minlength=g.num_edges)
    best, best_edge = compiled.viterbi_inside(g.node_offsets, g.tail_offsets, g.tails, gains)
    _, map_edge = compiled.viterbi_inside(g.node_offsets, g.tail_offsets, g.tails, split.scores)
    map_gain = _graph_kernels.derivation_sum(map_edge, g.goal, g.tail_offsets, g.tails, gains)
    return LatticeChoice(_yield(best_edge, g), float(best[g.goal]), _yield(map_edge, g), float(map_gain))


def _yield(best_edge: np.ndarray, hg: Hypergraph) -> list[str]:
    """The words of the derivation taking ``best_edge[v]`` at every node, sentence markers dropped."""
    goal = np.asarray([hg.goal], np.int64)
    ids, _ = compiled.best_yields(best_edge, goal, hg.tail_offsets, hg.tails, hg.target_offsets, hg.target)
    markers = sentence_marker_ids(hg.vocabulary)
    kept = ids[~np.isin(ids, markers)] if markers.size else ids
    return hg.vocabulary.words(kept.tolist())


def _theta(theta: Sequence[float] | np.ndarray | None, p: float | None, r: float | None, max_order: int) -> np.ndarray:
    if theta is not None:
        out = np.asarray(theta, dtype=np.float64)
        if out.shape != (max_order + 1,) or not np.all(np.isfinite(out)):
            raise UsageError(f"theta must be {max_order + 1} finite numbers (theta_0 .. theta_{max_order})")
        return out
    if (p is None) != (r is None):
        raise UsageError("give both p and r of linear BLEU, or neither")
    p = MOSES_P if p is None else p
    r = MOSES_R if r is None else r
    return linear_bleu_weights(float(p), float(r), max_order)


def lattice_mbr(
    hg: Hypergraph,
    weights: Weights,
    *,
    scale: float = 1.0,
    theta: Sequence[float] | np.ndarray | None = None,
    p: float | None = None,
    r: float | None = None,
    max_order: int = 4,
    posteriors: PosteriorMethod = "exact",
) -> LatticeChoice:
    """Lattice MBR of one graph (module docstring): ``theta`` (``theta_0 .. theta_N``) given, or made from ``p``
    and ``r`` (both or neither; neither: Moses's 0.8 and 0.6)."""
    check_options(scale, max_order, posteriors)
    thetas = _theta(theta, p, r, max_order)
    return _decide(split_posteriors(hg, weights, scale, max_order), thetas, posteriors)


def estimate_parameters(
    graphs: Sequence[Hypergraph],
    weights: Weights,
    references: Sequence[Sequence[str]],
    max_order: int = 4,
    metric: BleuMetric | None = None,
) -> tuple[float, float]:
    """Linear BLEU's ``(p, r)`` from the model-best (Viterbi) translations of ``graphs`` under ``weights`` scored
    against ``references`` (one list of reference strings per graph) with BLEU (``metric``, default
    ``BleuMetric(max_order)``): ``p = m_1 / c_1``, ``r`` the mean ratio of successive precisions
    (:func:`~hypertune.metrics.linear_bleu.estimate_precisions`), as the linear oracle estimates them."""
    if len(references) != len(graphs):
        raise InputError(f"{len(graphs)} graphs but references for {len(references)} sentences")
    metric = metric if metric is not None else BleuMetric(max_order=max_order)
    hypotheses = [" ".join(strip_sentence_markers(viterbi(hg, weights).words)) for hg in graphs]
    stats = metric.corpus_stats(hypotheses, [list(refs) for refs in references])
    try:
        return estimate_precisions(stats, max_order)
    except InputError as error:
        raise UsageError(f"{error} in the model-best translations; give p and r (Moses: 0.8 and 0.6)") from None


def lattice_mbr_corpus(  # noqa: PLR0913 - the decision rule's options, keyword-only
    graphs: Sequence[Hypergraph],
    weights: Weights,
    *,
    references: Sequence[Sequence[str]] | None = None,
    scale: float = 1.0,
    theta: Sequence[float] | np.ndarray | None = None,
    p: float | None = None,
    r: float | None = None,
    max_order: int = 4,
    posteriors: PosteriorMethod = "exact",
    metric: BleuMetric | None = None,
) -> LatticeMbrResult:
    """Lattice MBR of every graph, in order, with one ``theta``: given; or from ``p`` and ``r`` given; or from
    ``p`` and ``r`` estimated on the model-best translations against ``references`` (:func:`estimate_parameters`);
    or without references, Moses's ``p = 0.8``, ``r = 0.6``. ``metric``: the BLEU (tokenization) of that
    estimate. Graphs are split one at a time (memory: one split graph)."""
    check_options(scale, max_order, posteriors)
    if not graphs:
        raise InputError("no sentences")
    if theta is not None:
        thetas, p_used, r_used, source = _theta(theta, None, None, max_order), float("nan"), float("nan"), "given"
    elif p is not None or r is not None:
        thetas = _theta(None, p, r, max_order)
        p_used, r_used, source = float(p), float(r), "given"  # type: ignore[arg-type]
    elif references is not None:
        p_used, r_used = estimate_parameters(graphs, weights, references, max_order, metric)
        thetas, source = linear_bleu_weights(p_used, r_used, max_order), "estimated"
    else:
        p_used, r_used, source = MOSES_P, MOSES_R, "moses-defaults"
        thetas = linear_bleu_weights(p_used, r_used, max_order)
    choices = [
        _decide(split_posteriors(hg, weights, scale, max_order, s), thetas, posteriors) for s, hg in enumerate(graphs)
    ]
    return LatticeMbrResult(choices, p_used, r_used, thetas, source)
