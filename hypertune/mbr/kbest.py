"""Minimum Bayes risk decoding of k-best lists and samples (Kumar & Byrne 2004).

Each sentence's hypotheses ``e_1 ... e_k`` get posteriors ``p(e) = exp(alpha w.h(e)) / Z`` (log-sum-exp over the
list; uniform for samples), and the decision is

    e* = argmax_{e in support} sum_{e' in evidence} p(e') u(e, e')

with ``u(e, e')`` a sentence metric of ``e`` with ``e'`` as its only reference, or a given utility matrix (COMET
computed elsewhere). The sum includes ``e' = e`` unless ``exclude_self`` (as ``comet-mbr``; Moses's ``-mbr``, which
sums the loss ``1 - BLEU`` over ``e' != e``, equals the sum with ``e' = e`` and ``u(e, e) = 1``). Pruned
MBR: the candidates are the ``support`` most probable hypotheses and the expectation runs over the ``evidence``
most probable, their posteriors renormalized over the evidence. Ties: the earlier hypothesis. A metric where lower
is better (TER) is negated, so that the rule minimizes the expected error. See docs/mbr.md.

Utilities: every BLEU metric scores a sentence by BLEU+1 (Lin & Och 2004; ``Metric.sentence_values``), computed
for all pairs by one compiled kernel from each hypothesis's n-gram counts (:mod:`hypertune.mbr._kbest_kernels`);
other metrics (chrF, TER, WER, PER, CDER, interpolations) score the ``k x k`` pairs through their statistics
(edit rates: one compiled call per list) and :meth:`~hypertune.metrics.base.Metric.sentence_values`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from hypertune.arrays import flat_ranges, offsets_from_counts
from hypertune.errors import InputError, UsageError
from hypertune.hypergraph import Hypergraph
from hypertune.mbr import _kbest_kernels
from hypertune.metrics import BleuMetric, ChrfMetric, Metric, TerMetric
from hypertune.metrics.base import sentence_marker_ids, strip_sentence_marker_ids
from hypertune.metrics.edit_rates import EditRateMetric, edit_stats
from hypertune.metrics.sacrebleu_metrics import chrf_f_scores
from hypertune.symbols import Vocabulary
from hypertune.weights import Weights

__all__ = [
    "KbestLists",
    "MbrDecision",
    "MbrOptions",
    "expected_utilities",
    "kbest_lists",
    "mbr_decide",
    "metric_utilities",
    "posteriors",
]


class KbestLists(NamedTuple):
    """Many sentences' hypotheses, flat: list ``s`` is hypotheses ``offsets[s]:offsets[s+1]``, hypothesis ``h`` the
    word ids ``tokens[token_offsets[h]:token_offsets[h+1]]`` (sentence markers dropped) with model score
    ``scores[h]`` (``w.h``)."""

    offsets: np.ndarray
    tokens: np.ndarray
    token_offsets: np.ndarray
    scores: np.ndarray
    vocabulary: Vocabulary

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def texts(self) -> list[str]:
        """Every hypothesis as text (words joined by spaces)."""
        words = self.vocabulary.words(self.tokens.tolist())
        bounds = self.token_offsets.tolist()
        return [" ".join(words[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]


@dataclass(frozen=True)
class MbrOptions:
    """The decision rule's options: posterior ``scale`` alpha, ``uniform`` posteriors (samples), ``exclude_self``,
    and pruning: candidates from the top ``support``, expectations over the top ``evidence`` (``None``: all)."""

    scale: float = 1.0
    uniform: bool = False
    exclude_self: bool = False
    support: int | None = None
    evidence: int | None = None

    def __post_init__(self) -> None:
        if not np.isfinite(self.scale) or self.scale < 0:
            raise UsageError(f"the posterior scale must be a finite number >= 0, got {self.scale}")
        for name in ("support", "evidence"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UsageError(f"--{name} must be at least 1, got {value}")


class MbrDecision(NamedTuple):
    """Per list: ``choice`` and ``map_index`` (indices within the list: the MBR choice and the highest
    posterior); per hypothesis (flat): ``posterior`` (as computed, before the evidence's renormalization) and
    ``expected`` utility (NaN outside the support)."""

    choice: np.ndarray
    map_index: np.ndarray
    posterior: np.ndarray
    expected: np.ndarray


def kbest_lists(graphs: Sequence[Hypergraph], weights: Weights | None = None) -> KbestLists:
    """The hypotheses of k-best graphs (one edge per hypothesis, in input order) with their model scores under
    ``weights`` (0 without); graphs that are not k-best lists are an error."""
    if not graphs:
        raise InputError("no sentences")
    vocabulary = graphs[0].vocabulary
    marker_ids = sentence_marker_ids(vocabulary)
    start = int(marker_ids[0]) if marker_ids.size else None
    end = int(marker_ids[-1]) if marker_ids.size else None
    token_parts, length_parts, score_parts, sizes = [], [], [], []
    for hg in graphs:
        if not hg.is_kbest:
            raise InputError("MBR over k-best lists needs k-best lists or samples (JSONL, n-best lists), not lattices "
                             "or forests")  # fmt: skip
        if hg.vocabulary is not vocabulary:
            raise InputError("the k-best lists do not share a vocabulary")
        bounds = hg.target_offsets[1:]
        target = hg.target[bounds[0] :]
        keep = target >= 0  # the start node's tail reference
        kept = offsets_from_counts(keep)[bounds - bounds[0]]
        tokens, offsets = strip_sentence_marker_ids(target[keep], kept, start, end)
        token_parts.append(tokens)
        length_parts.append(np.diff(offsets))
        sizes.append(hg.num_edges - 1)
        edge_scores = weights.edge_scores(hg)[1:] if weights is not None else np.zeros(hg.num_edges - 1)
        score_parts.append(np.asarray(edge_scores, dtype=np.float64))
    return KbestLists(
        offsets=offsets_from_counts(sizes),
        tokens=np.ascontiguousarray(np.concatenate(token_parts), dtype=np.int64),
        token_offsets=offsets_from_counts(np.concatenate(length_parts)),
        scores=np.concatenate(score_parts),
        vocabulary=vocabulary,
    )


def posteriors(scores: np.ndarray, offsets: np.ndarray, scale: float = 1.0, uniform: bool = False) -> np.ndarray:
    """``p(e) = exp(scale * scores[e] - logsumexp_list(scale * scores))`` over each list (``offsets``), flat; or
    ``1/k`` with ``uniform``."""
    sizes = np.diff(offsets)
    if uniform:
        return np.repeat(1.0 / sizes, sizes)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = scale * np.asarray(scores, dtype=np.float64)
    if not np.isfinite(scaled).all():
        raise UsageError(f"the posterior scale {scale:g} times the model scores overflows: choose a smaller scale")
    starts = offsets[:-1]
    shifted = scaled - np.repeat(np.maximum.reduceat(scaled, starts), sizes)
    weights = np.exp(shifted)
    return weights / np.repeat(np.add.reduceat(weights, starts), sizes)


def _top(values: np.ndarray, offsets: np.ndarray, count: int | None) -> np.ndarray:
    """Each list's ``count`` largest ``values`` (ties: the earlier), as a mask; all without ``count``."""
    if count is None:
        return np.ones(len(values), dtype=bool)
    sizes = np.diff(offsets)
    lists = np.repeat(np.arange(len(sizes)), sizes)
    order = np.lexsort((np.arange(len(values)), -values, lists))
    rank = np.empty(len(values), np.int64)
    rank[order] = np.arange(len(values)) - np.repeat(offsets[:-1], sizes)
    return rank < count


def metric_utilities(metric: Metric, lists: KbestLists) -> np.ndarray:
    """``u(e, e')`` of every pair of each list by ``metric`` (``e`` scored with ``e'`` as its reference, its
    sentence value; negated where lower is better), each list's ``k x k`` matrix row-major, concatenated."""
    sizes = lists.sizes.tolist()
    texts = lists.texts()
    out = []
    sign = 1.0 if metric.higher_is_better else -1.0
    for s, k in enumerate(sizes):
        hyps = texts[lists.offsets[s] : lists.offsets[s] + k]
        if isinstance(metric, ChrfMetric):
            out.append(_chrf_utilities(metric, hyps))
            continue
        stats = _pair_stats(metric, hyps)
        out.append(sign * metric.sentence_values(stats))
    return np.concatenate(out) if out else np.zeros(0)


def _chrf_utilities(metric: ChrfMetric, hyps: list[str]) -> np.ndarray:
    """chrF (sentence, /100) of ``hyps[i]`` against ``hyps[j]`` in row ``i * k + j``: each hypothesis's character
    (and word) n-grams extracted once by sacrebleu's own functions, the matches of all pairs by one compiled call,
    and sacrebleu's ``CHRF._compute_f_score`` on all pairs at once."""
    from sacrebleu.metrics.helpers import extract_all_char_ngrams, extract_word_ngrams

    chrf: Any = metric._metric
    orders = chrf.char_order + chrf.word_order
    k = len(hyps)
    table: dict[tuple[int, str | tuple[str, ...]], int] = {}
    ids: list[int] = []
    counts: list[int] = []
    sizes: list[int] = []
    totals = np.zeros((k, orders))
    for h, hyp in enumerate(hyps):
        before = len(ids)
        text = chrf._preprocess_segment(hyp)
        grams = extract_all_char_ngrams(text, chrf.char_order, chrf.whitespace)
        words = chrf._remove_punctuation(text) if chrf.word_order else []
        grams += [extract_word_ngrams(words, n) for n in range(1, chrf.word_order + 1)]
        for n, counter in enumerate(grams):
            ids += [table.setdefault((n, gram), len(table)) for gram in counter]
            counts += counter.values()
            totals[h, n] = sum(counter.values())
        sizes.append(len(ids) - before)
    order_of = np.fromiter((n for n, _ in table), dtype=np.int64, count=len(table))
    offsets = offsets_from_counts(sizes)
    flat_ids, flat_counts = np.asarray(ids, dtype=np.int64), np.asarray(counts, dtype=np.int64)
    matches = _kbest_kernels.pair_match_matrix(offsets, flat_ids, flat_counts, order_of, len(table), orders)
    return _chrf_scores(totals, matches, chrf.beta, chrf.eps_smoothing).reshape(-1)


def _chrf_scores(totals: np.ndarray, matches: np.ndarray, beta: int, eps_smoothing: bool) -> np.ndarray:
    """sacrebleu's chrF / 100 of every pair (hypothesis ``i``, reference ``j``) at once
    (:func:`~hypertune.metrics.sacrebleu_metrics.chrf_f_scores`): ``totals[h, n]`` is hypothesis ``h``'s n-gram
    count of order ``n``, ``matches[n, i, j]`` the pair's clipped matches. A hypothesis's count is 0 where the
    reference has none of that order (sacrebleu's ``_get_match_statistics``)."""
    k = totals.shape[0]
    n_ref = np.broadcast_to(totals[None, :, :], (k, k, totals.shape[1]))
    n_hyp = np.where(n_ref > 0, totals[:, None, :], 0.0)
    return chrf_f_scores(n_hyp, n_ref, np.moveaxis(matches, 0, -1), beta, eps_smoothing) / 100.0


def _pair_stats(metric: Metric, hyps: list[str]) -> np.ndarray:
    """Statistics of ``hyps[i]`` against ``hyps[j]`` in row ``i * k + j``."""
    k = len(hyps)
    if isinstance(metric, EditRateMetric | TerMetric):  # one compiled call for the k x k pairs
        kind = "ter" if isinstance(metric, TerMetric) else metric.kind
        words = [metric.words(h) for h in hyps]
        pairs = [words[i] for i in range(k) for _ in range(k)]
        return edit_stats(kind, pairs, [[w] for w in words], np.tile(np.arange(k, dtype=np.int64), k))
    columns = [metric.stats_many(hyps, [reference]) for reference in hyps]  # one call per reference
    return np.stack(columns, axis=1).reshape(k * k, -1)


def expected_utilities(
    lists: KbestLists,
    utility: Metric | np.ndarray,
    q: np.ndarray,
    candidate: np.ndarray,
    exclude_self: bool = False,
) -> np.ndarray:
    """``sum_j q[j] u(e_i, e_j)`` of every candidate (NaN elsewhere), flat: ``utility`` a BLEU metric (BLEU+1, the
    compiled kernel), another metric (:func:`metric_utilities`) or given matrices (each list's ``k x k``,
    row-major, concatenated)."""
    out = np.full(len(q), np.nan)
    q = np.ascontiguousarray(q, dtype=np.float64)
    candidate = np.ascontiguousarray(candidate, dtype=np.bool_)
    if isinstance(utility, BleuMetric):
        _kbest_kernels.expected_bleu_plus_one(lists.tokens, lists.token_offsets, lists.offsets, q, candidate,
                                              utility.max_order, exclude_self, out)  # fmt: skip
        return out
    matrices = utility if isinstance(utility, np.ndarray) else metric_utilities(utility, lists)
    matrix_offsets = offsets_from_counts(lists.sizes**2)
    if len(matrices) != matrix_offsets[-1]:
        raise InputError(f"{len(matrices)} utilities for lists needing {int(matrix_offsets[-1])} (k x k each)")
    _kbest_kernels.expected_from_matrices(np.ascontiguousarray(matrices, dtype=np.float64), matrix_offsets,
                                          lists.offsets, q, candidate, exclude_self, out)  # fmt: skip
    return out


def mbr_decide(lists: KbestLists, utility: Metric | np.ndarray, options: MbrOptions | None = None) -> MbrDecision:
    """The MBR decision of every list (module docstring): candidates from the top ``support`` by posterior, the
    expectation over the top ``evidence`` with their posteriors renormalized, the largest expected utility chosen
    (ties: the earlier hypothesis)."""
    options = options or MbrOptions()
    p = posteriors(lists.scores, lists.offsets, options.scale, options.uniform)
    sizes = lists.sizes
    candidate = _top(p, lists.offsets, options.support)
    evidence = _top(p, lists.offsets, options.evidence)
    q = np.where(evidence, p, 0.0)
    q /= np.repeat(np.add.reduceat(q, lists.offsets[:-1]), sizes)
    expected = expected_utilities(lists, utility, q, candidate, options.exclude_self)
    choice = _kbest_kernels.best_per_list(expected, candidate, lists.offsets)
    map_index = _kbest_kernels.best_per_list(p, np.ones(len(p), dtype=np.bool_), lists.offsets)
    return MbrDecision(choice, map_index, p, expected)


def chosen(lists: KbestLists, indices: np.ndarray) -> np.ndarray:
    """The flat hypothesis numbers of per-list ``indices``."""
    return lists.offsets[:-1] + np.asarray(indices, dtype=np.int64)


def chosen_tokens(lists: KbestLists, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Word ids and offsets of the hypotheses ``indices`` (one per list) picks."""
    rows = chosen(lists, indices)
    lengths = np.diff(lists.token_offsets)[rows]
    return lists.tokens[flat_ranges(lists.token_offsets, rows)], offsets_from_counts(lengths)
