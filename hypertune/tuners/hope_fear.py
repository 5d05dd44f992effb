"""Hope, fear and model-best derivations of k-best lists, lattices and forests.

For weights ``w`` and a gain ``B`` (a sentence-level BLEU), Chiang et al. (2008, section 4), Chiang
(2012, eq. 13-14) and Cherry & Foster (2012, Algorithm 1) use::

    hope  = argmax_e  w . h(e) + B(e)
    fear  = argmax_e  w . h(e) - B(e)
    model = argmax_e  w . h(e)

Gains: any of :data:`hypertune.metrics.gains.GAINS` (a :class:`~hypertune.metrics.gains.Gain`; ``background``,
kbmira's, by default), which the compiled searches call through :func:`~hypertune.metrics.gains.gain_value`.

Search:

* **k-best lists**: exact; every hypothesis is scored (ties: the first in list order).
* **lattices and forests, approximate** (Moses's ``Viterbi`` in ``mert/ForestRescore.cpp``): Viterbi with
  the gain folded in. Every node keeps only its winning partial derivation, with that derivation's
  statistics and boundary context (first and last ``N - 1`` words). An edge adds the n-grams it creates
  (within its own words and across its tails' boundaries; each n-gram's count clipped by the reference
  count within the edge) to its tails' statistics, the partial derivation's reference length is the
  sentence's reference length prorated by the source words its head covers (``source_covered`` of Moses
  hypergraphs; without it, by the node's height in the graph), and the edge is scored
  ``model_weight * (w . h) + bleu_weight * B(partial statistics)``. It is exact for k-best lists and
  approximate otherwise: see docs/mira.md for how often it finds the true hope and fear.
* **exact** (linear BLEU only): Viterbi over the graph intersected with an n-gram state machine
  (:func:`hypertune.algorithms.intersect.intersect_ngrams`), where linear BLEU with unclipped matches
  decomposes over edges. Exact for any graph, but the split graph can be large.

After search the hope, fear and model-best derivations' statistics are recomputed exactly from their
strings with the tuning set's metric. ``<s>`` and ``</s>`` are not words, here as everywhere (the one rule,
:func:`hypertune.metrics.base.strip_sentence_markers`): the searches drop them from every edge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numba
import numpy as np

from hypertune import compiled
from hypertune.arrays import offsets_from_counts
from hypertune.choices import HOPE_FEAR_SEARCHES, HopeFearSearch
from hypertune.errors import InputError, UsageError
from hypertune.hypergraph import Derivation, Hypergraph
from hypertune.metrics import BleuMetric, LinearBleu
from hypertune.metrics.base import SENTENCE_END, SENTENCE_START, sentence_marker_ids, strip_sentence_marker_ids
from hypertune.metrics.gains import Gain, gain_value
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.model_best import model_best_rows

if TYPE_CHECKING:
    from hypertune.tuners.ngram_edges import NgramEdges

BLEU_RATIO = 5.0
"""Moses's safe-hope bound: the model score may not outweigh BLEU by more than this factor."""

_jit = numba.njit(cache=True, nogil=True)


# ---------------------------------------------------------------------- results


@dataclass(frozen=True)
class Hypothesis:
    """One derivation found by search: its tree, words (ids, sentence markers dropped), sparse feature vector,
    model score ``w . h``, exact metric statistics and gain under the gain used for the search."""

    derivation: Derivation
    words: np.ndarray | None
    feature_indices: np.ndarray
    feature_values: np.ndarray
    model_score: float
    stats: np.ndarray
    gain: float

    def same_as(self, other: Hypothesis) -> bool:
        """Equal features and equal statistics (Moses's ``hopeFearEqual``)."""
        return (
            np.array_equal(self.feature_indices, other.feature_indices)
            and np.array_equal(self.feature_values, other.feature_values)
            and np.array_equal(self.stats, other.stats)
        )


@dataclass(frozen=True)
class HopeFear:
    """The hope, fear and model-best hypotheses of one sentence."""

    sentence: int
    hope: Hypothesis
    fear: Hypothesis
    model: Hypothesis


# ---------------------------------------------------------------------- compiled search


@_jit
def _ngram_keys(tokens, offsets, order, base):  # pragma: no cover - compiled
    """Keys of every n-gram (orders 1..order) of every sequence, and the sequence each comes from. Tokens
    are local ids ``1 .. base - 1`` (see :class:`ReferenceNgrams`); the key of the n-gram ending at ``p`` is
    the base-``base`` numeral of its words read from ``p`` leftwards. All digits are non-zero, so keys are
    exact: different n-grams, of any orders, never share one."""
    total = 0
    for s in range(offsets.size - 1):
        length = offsets[s + 1] - offsets[s]
        for n in range(1, order + 1):
            if length >= n:
                total += length - n + 1
    keys = np.empty(total, dtype=np.int64)
    owner = np.empty(total, dtype=np.int64)
    k = 0
    for s in range(offsets.size - 1):
        lo, hi = offsets[s], offsets[s + 1]
        for p in range(lo, hi):
            h = np.int64(0)
            for n in range(1, order + 1):
                start = p - n + 1
                if start < lo:
                    break
                h = h * base + tokens[start]
                keys[k] = h
                owner[k] = s
                k += 1
    return keys, owner


@_jit
def _lookup(keys, counts, key):  # pragma: no cover - compiled
    i = np.searchsorted(keys, key)
    if i < keys.size and keys[i] == key:
        return counts[i]
    return 0


@_jit
def _sequence(e, forest, left, right, ylen, k, seq_word, seq_seg):
    """Edge ``e``'s yield with tails replaced by their boundary words (-1 = gap); returns the length."""
    target_offsets, target, tail_offsets, tails = (
        forest.target_offsets,
        forest.target,
        forest.tail_offsets,
        forest.tails,
    )
    length = 0
    for t in range(target_offsets[e], target_offsets[e + 1]):
        token = target[t]
        if token >= 0:
            seq_word[length] = token
            seq_seg[length] = -1
            length += 1
            continue
        i = -token - 1
        u = tails[tail_offsets[e] + i]
        if ylen[u] < k:
            for j in range(ylen[u]):
                seq_word[length] = left[u, j]
                seq_seg[length] = i
                length += 1
        else:
            for j in range(k):
                seq_word[length] = left[u, j]
                seq_seg[length] = i
                length += 1
            seq_word[length] = -1
            seq_seg[length] = i
            length += 1
            for j in range(k):
                seq_word[length] = right[u, j]
                seq_seg[length] = i
                length += 1
    return length


class ForestArrays(NamedTuple):
    """A graph's structure as the compiled search reads it; its target without boundary words."""

    node_offsets: np.ndarray
    tail_offsets: np.ndarray
    tails: np.ndarray
    target_offsets: np.ndarray
    target: np.ndarray


class ReferenceNgrams(NamedTuple):
    """What the approximate search needs of a sentence's references: the share of the source each node
    covers (:func:`node_fractions`), the reference length, the reference n-grams (keys of
    :func:`_ngram_keys`, sorted) with their clipping counts, the longest edge sequence, and the numeral
    base of the keys. Words are *local ids*: the distinct reference words are ``1 .. base - 1`` and every
    other word is 0 (it matches nothing), as in the BLEU kernels (:mod:`hypertune.metrics._kernels`)."""

    fraction: np.ndarray
    ref_len: float
    ref_keys: np.ndarray
    ref_counts: np.ndarray
    max_sequence: int
    base: int


class SearchScratch(NamedTuple):
    """Work arrays of :func:`_forest_search`: an edge's word sequence and segments (see :func:`_sequence`),
    and the keys and orders of the n-grams it creates."""

    seq_word: np.ndarray
    seq_seg: np.ndarray
    gram_keys: np.ndarray
    gram_order: np.ndarray


@_jit
def count_new_ngrams(length, scratch, order, refs, stats):  # pragma: no cover - compiled
    """Add to ``stats`` the n-grams an edge creates (not inside one tail, not across a gap): counts and
    matches clipped by the reference counts, as BLEU's m_n and c_n."""
    seq_word, seq_seg, gram_keys, gram_order = scratch
    base = refs.base
    g = 0
    run_start = 0
    for p in range(length):
        if seq_word[p] < 0:
            run_start = p + 1
            continue
        h = np.int64(0)
        unseen = False  # a word no reference has (local id 0): no match, key -m groups them per order
        for m in range(1, order + 1):
            start = p - m + 1
            if start < run_start:
                break
            digit = seq_word[start]
            unseen = unseen or digit == 0
            h = h * base + digit
            if seq_seg[p] < 0 or seq_seg[start] != seq_seg[p]:
                gram_keys[g] = -m if unseen else h
                gram_order[g] = m
                g += 1
    # sort the keys (insertion sort: a few dozen per edge) and clip each distinct n-gram's count
    for i in range(1, g):
        key = gram_keys[i]
        m = gram_order[i]
        j = i - 1
        while j >= 0 and gram_keys[j] > key:
            gram_keys[j + 1] = gram_keys[j]
            gram_order[j + 1] = gram_order[j]
            j -= 1
        gram_keys[j + 1] = key
        gram_order[j + 1] = m
    i = 0
    while i < g:
        key = gram_keys[i]
        m = gram_order[i]
        j = i
        while j < g and gram_keys[j] == key:
            j += 1
        count = j - i
        stats[2 * (m - 1) + 1] += count
        stats[2 * (m - 1)] += min(count, _lookup(refs.ref_keys, refs.ref_counts, key))
        i = j


@_jit
def keep_boundary_words(v, length, scratch, k, left, right, ylen):  # pragma: no cover - compiled
    """Node ``v``'s first and last ``k`` words (``ylen[v]`` = how many, when fewer than ``k``) from its
    winning edge's sequence of ``length`` entries."""
    seq_word = scratch.seq_word
    words = 0
    gap = False
    for p in range(length):
        if seq_word[p] < 0:
            gap = True
            break
        if words < k:
            left[v, words] = seq_word[p]
        words += 1
    if gap or words >= k:
        ylen[v] = k
        q = 0
        p = length - 1
        while q < k:
            right[v, k - 1 - q] = seq_word[p]
            q += 1
            p -= 1
    else:
        ylen[v] = words
        for j in range(words):
            right[v, j] = left[v, j]


@_jit
def _forest_search(forest, refs, edge_scores, gain, model_weight, bleu_weight):  # pragma: no cover - compiled
    """Viterbi with the gain folded in, each node carrying its winner's statistics and boundary words
    (Moses ``Viterbi``/``HgBleuScorer``). ``gain`` is a :class:`~hypertune.metrics.gains.GainRule`. Returns the
    winning in-edge of every node."""
    node_offsets, tail_offsets, tails = forest.node_offsets, forest.tail_offsets, forest.tails
    fraction, ref_len, max_sequence = refs.fraction, refs.ref_len, refs.max_sequence
    code, order, theta, background = gain
    n = node_offsets.size - 1
    k = order - 1
    width = max(k, 1)
    size = 2 * order + 1
    left = np.zeros((n, width), dtype=np.int64)
    right = np.zeros((n, width), dtype=np.int64)
    ylen = np.zeros(n, dtype=np.int64)
    node_stats = np.zeros((n, size))
    model = np.zeros(n)
    best_edge = np.full(n, -1, dtype=np.int64)
    scratch = SearchScratch(
        np.empty(max_sequence, dtype=np.int64),
        np.empty(max_sequence, dtype=np.int64),
        np.empty(max_sequence * order, dtype=np.int64),
        np.empty(max_sequence * order, dtype=np.int64),
    )
    stats = np.empty(size)
    best_stats = np.empty(size)
    for v in range(n):
        best_total = -np.inf
        for e in range(node_offsets[v], node_offsets[v + 1]):
            inside = edge_scores[e]
            for t in range(tail_offsets[e], tail_offsets[e + 1]):
                inside += model[tails[t]]
            length = _sequence(e, forest, left, right, ylen, k, scratch.seq_word, scratch.seq_seg)
            for j in range(size):
                stats[j] = 0.0
            for t in range(tail_offsets[e], tail_offsets[e + 1]):
                u = tails[t]
                for j in range(size - 1):
                    stats[j] += node_stats[u, j]
            count_new_ngrams(length, scratch, order, refs, stats)
            stats[size - 1] = fraction[v] * ref_len
            total = model_weight * inside
            if bleu_weight != 0.0:
                total += bleu_weight * gain_value(code, stats, order, background, theta)
            if best_edge[v] < 0 or total > best_total:
                best_total = total
                best_edge[v] = e
                model[v] = inside
                for j in range(size):
                    best_stats[j] = stats[j]
        for j in range(size):
            node_stats[v, j] = best_stats[j]
        length = _sequence(best_edge[v], forest, left, right, ylen, k, scratch.seq_word, scratch.seq_seg)
        keep_boundary_words(v, length, scratch, k, left, right, ylen)
    return best_edge, model, node_stats


@_jit
def _derivation_edges(best_edge, tail_offsets, tails, goal):  # pragma: no cover - compiled
    """The edges of the derivation picked by back-pointers, in pre-order."""
    out = np.empty(best_edge.size * 4 + 16, dtype=np.int64)
    stack = np.empty(best_edge.size * 4 + 16, dtype=np.int64)
    top = 0
    stack[top] = goal
    top += 1
    count = 0
    while top:
        top -= 1
        v = stack[top]
        e = best_edge[v]
        if count == out.size:
            out = np.concatenate((out, np.empty(out.size, dtype=np.int64)))
        out[count] = e
        count += 1
        for t in range(tail_offsets[e + 1] - 1, tail_offsets[e] - 1, -1):
            if top == stack.size:
                stack = np.concatenate((stack, np.empty(stack.size, dtype=np.int64)))
            stack[top] = tails[t]
            top += 1
    return out[:count]


@_jit
def _sparse_sum(edges, indptr, indices, data, dense, touched):  # pragma: no cover - compiled
    """Sum of the feature rows of ``edges`` as sorted (indices, values); ``dense``/``touched`` are scratch."""
    count = 0
    for e in edges:
        for k in range(indptr[e], indptr[e + 1]):
            j = indices[k]
            if not touched[j]:
                touched[j] = True
                dense[j] = 0.0
                count += 1
            dense[j] += data[k]
    out_i = np.empty(count, dtype=np.int64)
    c = 0
    for e in edges:
        for k in range(indptr[e], indptr[e + 1]):
            j = indices[k]
            if touched[j]:
                touched[j] = False
                out_i[c] = j
                c += 1
    out_i.sort()
    out_v = np.empty(count)
    for c in range(count):
        out_v[c] = dense[out_i[c]]
    keep = out_v != 0.0
    return out_i[keep], out_v[keep]


# ---------------------------------------------------------------------- per-sentence data


@dataclass
class _Sentence:
    """What the approximate search needs of one graph, computed once."""

    target_offsets: np.ndarray  # the target without boundary words, in local ids
    target: np.ndarray
    refs: ReferenceNgrams
    split: NgramEdges | None = None
    gram_gains: np.ndarray | None = None


def _local_ids(tokens: np.ndarray, words: np.ndarray) -> np.ndarray:
    """Word ids as local ids: ``words[i]`` (sorted) is ``i + 1``, any other word 0; negative tokens (tail
    references, gaps) stay as they are."""
    tokens = np.asarray(tokens, dtype=np.int64)
    if words.size == 0:
        return np.where(tokens >= 0, 0, tokens)
    position = np.minimum(np.searchsorted(words, tokens), words.size - 1)
    local = np.where(words[position] == tokens, position + 1, 0)
    return np.where(tokens >= 0, local, tokens).astype(np.int64)


def node_fractions(hg: Hypergraph) -> np.ndarray:
    """The share of the source each node covers: Moses's ``source_covered`` of a node (read from its first
    in-edge) over the goal's; without those counts, the node's height (longest path from a leaf, in
    edges) over the goal's height."""
    if hg.source_covered is not None:
        per_node = hg.source_covered[hg.node_offsets[:-1]].astype(np.float64)
        total = per_node[-1]
        if total > 0:
            return per_node / total
    height = np.zeros(hg.num_nodes)
    best = compiled.scalar_inside(compiled.TROPICAL, hg.node_offsets, hg.tail_offsets, hg.tails, np.ones(hg.num_edges))
    height[:] = best
    return height / max(height[-1], 1.0)


# ---------------------------------------------------------------------- the decoder


@dataclass
class HopeFearDecoder:
    """Hope, fear and model-best search over a :class:`TuningSet` (see the module docstring).

    ``search``: ``"approximate"`` (default; Moses-style context search on lattices and forests) or
    ``"exact"`` (n-gram intersection; needs the ``linear`` gain). k-best lists are always searched exactly.
    The sentence markers are dropped from every yield and every edge (:func:`strip_sentence_marker_ids`, the
    tuning set's rule); ``skip`` holds their ids for the searches over split graphs.
    """

    tuning_set: TuningSet
    search: HopeFearSearch = "approximate"
    max_order: int = 4
    _cache: dict[int, _Sentence] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.search not in HOPE_FEAR_SEARCHES:
            raise UsageError(f"unknown search {self.search!r}; choose approximate or exact")
        metric = self.tuning_set.metric
        bleu = metric.bleu if isinstance(metric, LinearBleu) else metric
        if isinstance(bleu, BleuMetric):
            self.max_order = bleu.max_order
        vocabulary = self.tuning_set.vocabulary
        self.markers = (vocabulary.get(SENTENCE_START), vocabulary.get(SENTENCE_END))
        self.skip = sentence_marker_ids(vocabulary)
        self._scratch_dense = np.zeros(0)
        self._scratch_touched = np.zeros(0, dtype=np.bool_)

    # ------------------------------------------------------------------ helpers
    def _scratch(self, width: int) -> tuple[np.ndarray, np.ndarray]:
        if self._scratch_dense.size < width:
            self._scratch_dense = np.zeros(width)
            self._scratch_touched = np.zeros(width, dtype=np.bool_)
        return self._scratch_dense, self._scratch_touched

    def edge_scores(self, sentence: int, weights: np.ndarray) -> np.ndarray:
        """``w . f_e`` for every edge of the sentence's graph (``weights`` dense over the feature space)."""
        features = self.tuning_set.graphs[sentence].features
        vector = _fit(weights, features.shape[1])
        return compiled.csr_matvec(features.indptr, features.indices, features.data, vector)

    def derivation_features(self, sentence: int, derivation_edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A derivation's feature vector (the sum of its edges'), as sorted indices and values."""
        features = self.tuning_set.graphs[sentence].features
        dense, touched = self._scratch(features.shape[1])
        return _sparse_sum(derivation_edges, features.indptr, features.indices, features.data, dense, touched)

    def hypothesis(
        self,
        sentence: int,
        derivation_edges: np.ndarray,
        weights: np.ndarray,
        gain: Gain,
        stats: np.ndarray,
        words: np.ndarray | None = None,
    ) -> Hypothesis:
        """The derivation as a :class:`Hypothesis`; ``words``: its yield when the caller has it already (from
        scoring it), so that it is not built a second time."""
        hg = self.tuning_set.graphs[sentence]
        idx, val = self.derivation_features(sentence, derivation_edges)
        score = float(val @ _fit(weights, hg.features.shape[1])[idx]) if idx.size else 0.0
        derivation = hg.derivation_from_edges(derivation_edges)
        if self.tuning_set.precomputed:
            words = None
        elif words is None:
            words = self.words(sentence, derivation_edges)
        return Hypothesis(derivation, words, idx, val, score, stats, float(gain.score(stats)))

    def words(self, sentence: int, derivation_edges: np.ndarray) -> np.ndarray:
        """The yield (word ids, sentence markers dropped) of a derivation given as pre-order edges."""
        hg = self.tuning_set.graphs[sentence]
        ids = np.asarray(hg.derivation_yield(hg.derivation_from_edges(derivation_edges)), dtype=np.int64)
        return strip_sentence_marker_ids(ids, np.asarray([0, ids.size]), *self.markers)[0]

    def stats_of(self, sentence: int, yields: list[np.ndarray]) -> np.ndarray:
        return self.tuning_set.yield_stats(sentence, yields)

    # ------------------------------------------------------------------ k-best lists
    def kbest_stats(self, sentence: int) -> np.ndarray:
        """A k-best list's statistics, row ``e`` for edge ``e`` (the tuning set's: sentence markers dropped)."""
        return self.tuning_set.edge_stats(sentence)

    def _kbest_hope_fear(
        self, sentence: int, weights: np.ndarray, gain: Gain, safe_hope: bool, with_model: bool
    ) -> tuple[int, int, int, np.ndarray]:
        stats = self.kbest_stats(sentence)[1:]
        scores = self.edge_scores(sentence, weights)[1:]
        gains = np.asarray(gain.score(stats))
        hope, fear, model = kbest_hope_fear(scores, gains, safe_hope)
        return hope + 1, fear + 1, model + 1, stats

    # ------------------------------------------------------------------ forests
    def sentence_data(self, sentence: int) -> _Sentence:
        cached = self._cache.get(sentence)
        if cached is not None:
            return cached
        if self.tuning_set.precomputed:
            raise InputError("hope/fear search on lattices and forests needs hypothesis strings and references")
        hg = self.tuning_set.graphs[sentence]
        target, target_offsets = strip_sentence_marker_ids(hg.target, hg.target_offsets, *self.markers)
        vocabulary = self.tuning_set.vocabulary
        refs = [vocabulary.indices(r.split()) for r in self.tuning_set.references[sentence]]
        order = self.max_order
        offsets = offsets_from_counts([r.size for r in refs])
        tokens = np.concatenate(refs) if refs else np.zeros(0, dtype=np.int64)
        # local ids: reference words 1 .. R (exact n-gram keys in base R + 1), every other word 0
        words = np.unique(tokens)
        base = words.size + 1
        if float(base) ** order >= 2.0**63:
            raise UsageError(f"{words.size} distinct reference words are too many for exact {order}-gram keys")
        target = _local_ids(target, words)
        keys, owner = _ngram_keys(_local_ids(tokens, words), offsets, order, base)
        if keys.size:
            pairs, counts = np.unique(np.stack([owner, keys], axis=1), axis=0, return_counts=True)
            unique_keys, inverse = np.unique(pairs[:, 1], return_inverse=True)
            max_counts = np.zeros(unique_keys.size, dtype=np.int64)
            np.maximum.at(max_counts, inverse, counts)
        else:
            unique_keys, max_counts = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        ref_len = float(min((r.size for r in refs), default=0))
        arity = np.diff(hg.tail_offsets)
        longest = int((np.diff(target_offsets) + arity * (2 * order - 1)).max()) + 1
        ngrams = ReferenceNgrams(node_fractions(hg), ref_len, unique_keys, max_counts.astype(np.int64), longest, base)
        data = _Sentence(target_offsets, target, ngrams)
        self._cache[sentence] = data
        return data

    def best_edges(
        self, sentence: int, scores: np.ndarray, gain: Gain, model_weight: float, bleu_weight: float
    ) -> np.ndarray:
        """Pre-order edges of the approximate (or exact) best derivation under
        ``model_weight * w.h + bleu_weight * gain``."""
        hg = self.tuning_set.graphs[sentence]
        if bleu_weight == 0.0:
            _, best_edge = compiled.viterbi_inside(hg.node_offsets, hg.tail_offsets, hg.tails, scores * model_weight)
            return _derivation_edges(best_edge, hg.tail_offsets, hg.tails, hg.goal)
        data = self.sentence_data(sentence)
        if self.search == "exact":
            return self._exact(sentence, data, scores, gain, model_weight, bleu_weight)
        if not gain.compiled:
            raise UsageError(
                f"the {gain.kind} gain has no compiled kernel, which searching lattices and forests needs "
                "(CONTRIBUTING.md, 'A gain'); it scores k-best lists"
            )
        forest = ForestArrays(hg.node_offsets, hg.tail_offsets, hg.tails, data.target_offsets, data.target)
        best_edge, _, _ = _forest_search(
            forest, data.refs, scores, gain.rule(self.max_order), float(model_weight), float(bleu_weight)
        )
        return _derivation_edges(best_edge, hg.tail_offsets, hg.tails, hg.goal)

    def _exact(
        self, sentence: int, data: _Sentence, scores: np.ndarray, gain: Gain, model_weight: float, bleu_weight: float
    ) -> np.ndarray:
        if gain.kind != "linear":
            raise UsageError("exact hope/fear search needs the linear BLEU gain (it decomposes over n-grams)")
        if data.split is None or data.gram_gains is None:
            from hypertune.tuners.ngram_edges import NgramEdges  # the exact search only (k-best lists import none)

            split = NgramEdges.of(self.tuning_set, sentence, self.max_order, self.skip.tolist())
            # column 0: words an edge creates (c1); column n: its n-grams found in a reference (unclipped m_n)
            data.split, data.gram_gains = split, np.column_stack([split.counts[:, 0], split.unclipped_matches()])
        split = data.split
        gains = data.gram_gains @ gain.theta
        split_scores = model_weight * scores[split.origin] + bleu_weight * gains
        g = split.graph
        _, best_edge = compiled.viterbi_inside(g.node_offsets, g.tail_offsets, g.tails, split_scores)
        split_edges = _derivation_edges(best_edge, g.tail_offsets, g.tails, g.goal)
        return split.origin[split_edges]

    # ------------------------------------------------------------------ public API
    def hope_fear(
        self,
        sentence: int,
        weights: np.ndarray,
        gain: Gain,
        safe_hope: bool = False,
        with_model: bool = True,
    ) -> HopeFear:
        """Hope, fear and (if ``with_model``) model-best hypotheses of ``sentence`` under dense ``weights``
        (a vector over the tuning set's feature space). ``safe_hope``: Moses's bound on the model score's
        influence on the hope (the hope is searched again with the model score scaled down when
        ``BLEU_RATIO * |B(hope)| < |w . h(hope)|``)."""
        hg = self.tuning_set.graphs[sentence]
        if hg.is_kbest:
            hope_e, fear_e, model_e, stats = self._kbest_hope_fear(sentence, weights, gain, safe_hope, with_model)
            hope = self.hypothesis(sentence, np.asarray([hope_e, 0]), weights, gain, stats[hope_e - 1])
            fear = self.hypothesis(sentence, np.asarray([fear_e, 0]), weights, gain, stats[fear_e - 1])
            model = self.hypothesis(sentence, np.asarray([model_e, 0]), weights, gain, stats[model_e - 1])
            return HopeFear(sentence, hope, fear, model)
        scores = self.edge_scores(sentence, weights)
        hope_edges = self.best_edges(sentence, scores, gain, 1.0, 1.0)
        fear_edges = self.best_edges(sentence, scores, gain, 1.0, -1.0)
        model_edges = self.best_edges(sentence, scores, gain, 1.0, 0.0) if with_model else hope_edges
        yields = [self.words(sentence, hope_edges), self.words(sentence, fear_edges)]
        if with_model:
            yields.append(self.words(sentence, model_edges))
        stats = self.stats_of(sentence, yields)
        hope = self.hypothesis(sentence, hope_edges, weights, gain, stats[0], yields[0])
        if safe_hope:
            ratio = safe_hope_scale(hope.model_score, hope.gain)
            if ratio < 1.0:
                hope_edges = self.best_edges(sentence, scores, gain, ratio, 1.0)
                hope_words = self.words(sentence, hope_edges)
                hope_stats = self.stats_of(sentence, [hope_words])[0]
                hope = self.hypothesis(sentence, hope_edges, weights, gain, hope_stats, hope_words)
        fear = self.hypothesis(sentence, fear_edges, weights, gain, stats[1], yields[1])
        model = self.hypothesis(sentence, model_edges, weights, gain, stats[2], yields[2]) if with_model else hope
        return HopeFear(sentence, hope, fear, model)

    def model_best_stats(self, sentence: int, weights: np.ndarray) -> np.ndarray:
        """Exact statistics of the model-best derivation (for corpus BLEU)."""
        hg = self.tuning_set.graphs[sentence]
        scores = self.edge_scores(sentence, weights)
        if hg.is_kbest:
            return self.kbest_stats(sentence)[model_best_rows(scores, np.array([1, scores.size], dtype=np.int64))[0]]
        _, best_edge = compiled.viterbi_inside(hg.node_offsets, hg.tail_offsets, hg.tails, scores)
        edges = _derivation_edges(best_edge, hg.tail_offsets, hg.tails, hg.goal)
        return self.stats_of(sentence, [self.words(sentence, edges)])[0]


@_jit
def safe_hope_scale(model_score: float, gain: float) -> float:  # pragma: no cover - compiled
    """Moses's safe hope (``kbmira --safe-hope``): the weight of the model score in the hope search. When
    the hope's model score outweighs ``BLEU_RATIO`` times its gain, the hope is searched again with the
    model score scaled down to that ratio; otherwise the weight stays 1."""
    model = abs(model_score)
    if model > 1e-8:
        ratio = abs(gain * BLEU_RATIO) / model
        if ratio < 1.0:
            return ratio
    return 1.0


@_jit
def select_hope_fear(  # pragma: no cover - compiled
    scores: np.ndarray, gains: np.ndarray, n: int, safe_hope: bool
) -> tuple[int, int, int]:
    """Hope (max ``w·h + B``), fear (max ``w·h - B``) and model-best (max ``w·h``) among the first ``n``
    entries of a k-best list, first on ties (Cherry & Foster 2012, Algorithm 1; Moses
    ``NbestHopeFearDecoder::HopeFear``), with :func:`safe_hope_scale`. The one selection rule, called from
    Python (:func:`kbest_hope_fear`) and from the compiled MIRA epoch. One pass finds all three, each a running
    maximum kept with its value (selects, not branches: which entry leads is unpredictable); a comparison with a
    NaN is false, so a NaN never leads and one in the lead stays there, as when each entry was compared with the
    leader's recomputed value. Only a safe hope that scales the model score down searches the hope again."""
    hope = fear = best = 0
    if n <= 0:
        return hope, fear, best
    x = scores[0]
    g = gains[0]
    hope_value, fear_value, best_value = x + g, x - g, x  # 1.0 * x + g == x + g: the scale-1 search's values
    for i in range(1, n):
        x = scores[i]
        g = gains[i]
        up = x + g > hope_value
        hope = i if up else hope
        hope_value = x + g if up else hope_value
        up = x - g > fear_value
        fear = i if up else fear
        fear_value = x - g if up else fear_value
        up = x > best_value
        best = i if up else best
        best_value = x if up else best_value
    scale = safe_hope_scale(scores[hope], gains[hope]) if safe_hope else 1.0
    if scale != 1.0:  # below 1: the hope again, its model score weighed by ``scale``
        hope = 0
        hope_value = scale * scores[0] + gains[0]
        for i in range(1, n):
            x = scale * scores[i] + gains[i]
            up = x > hope_value
            hope = i if up else hope
            hope_value = x if up else hope_value
    return hope, fear, best


def kbest_hope_fear(scores: np.ndarray, gains: np.ndarray, safe_hope: bool = False) -> tuple[int, int, int]:
    """Indices of hope, fear and model-best in a k-best list (:func:`select_hope_fear`)."""
    scores = np.ascontiguousarray(scores, dtype=np.float64)
    gains = np.ascontiguousarray(gains, dtype=np.float64)
    if scores.size == 0:
        raise InputError("an empty k-best list has no hope or fear")
    hope, fear, best = select_hope_fear(scores, gains, scores.size, bool(safe_hope))
    return int(hope), int(fear), int(best)


def _fit(weights: np.ndarray, width: int) -> np.ndarray:
    if weights.size == width:
        return weights
    if weights.size > width:
        return weights[:width]
    out = np.zeros(width)
    out[: weights.size] = weights
    return out
