"""The exact sentence BLEU+1 oracle of a lattice or forest by branch and bound (``oracle --method exact``).

The search runs over the graph split by (N−1)-word boundary state (:class:`~hypertune.tuners.ngram_edges.NgramEdges`):
there every n-gram of a yield is created by exactly one edge, and a node's state fixes the words an edge above
it can see, so what a subtree adds to the n-gram counts does not depend on the rest of the derivation -- only
its clipping does. A *partial derivation* is a top-down expansion from the goal: the edges chosen so far, the
words of its yield placed so far (a prefix of every completion's string) and a stack of what is still open,
the *frontier*: unexpanded nodes and the words between them, in the order of the yield, a node on top.
Expanding that leftmost open node by each of its in-edges gives the children; words that come before the next
open node move to the placed prefix. So tails are filled in the order of the words, which a rule that
reorders its tails (``[2] de [1]``) makes differ from the tails' order; the derivation is returned in the
usual pre-order, children in tail order. A partial derivation with nothing open is a derivation. The search
is best-first by an upper bound on the BLEU+1 of every completion (Land & Doig 1960), from the incumbent of
the ``partial`` beam search; every :data:`DIVE_EVERY` expansions it *dives*, expanding the best child of the
best child ... down to a derivation, to improve the incumbent early. It stops when the best open bound is
below the best score found. (Sokolov, Wisniewski & Yvon 2012 discuss why the exact BLEU oracle of a lattice
is hard and what the approximations cost.)

**The bound.** For a string of length ``L`` with clipped matches ``m_n``, BLEU+1 with smoothing ``k``
(Lin & Och 2004; ``k = 1``) is ``f(m, L) = exp(1/N · Σ_n log((m_n + k_n) / (c_n(L) + k_n)) + min(0, 1 − r(L)/L))``
with ``k_1 = 0``, ``k_n = k`` for ``n ≥ 2``, ``c_n(L) = max(0, L − n + 1)`` (a string of ``L`` words has that
many n-grams: the n-gram counts are a function of the length) and ``r(L)`` the reference length the metric
picks for ``L`` (closest, shortest or average); it is 0 when ``m_1 = 0``. For fixed ``L``, ``f`` increases
with every ``m_n``.

Take a partial derivation whose chosen edges hold ``L0`` words and ``a_t`` occurrences of each reference
n-gram type ``t`` (clip limit ``l_t``, the most occurrences in one reference), so its exact clipped matches
are ``μ_n = Σ_{t of order n} min(a_t, l_t)``, and whose frontier is ``F``. A completion adds, independently
per frontier node, a derivation of that node; let ``x_t`` be the occurrences of ``t`` it adds. Then the
completion has ``m_n = Σ_t min(a_t + x_t, l_t)``. Per-node passes over the split graph (max-plus inside
passes, compiled) give, for every node ``v``: ``U_n(v)``, the most reference-matching order-n n-grams (counted
unclipped) any derivation of ``v`` creates; ``X_t(v)``, the most occurrences of type ``t``; ``W_n(v)``, the most
order-n matches of the *unsaturated* types (those no derivation of the whole graph holds more than ``l_t``
times: ``X_t(goal) ≤ l_t``, so clipping never binds on them); and the shortest and longest yield ``lo(v)``,
``hi(v)``. Every completion satisfies

1. ``L ∈ [L0 + Σ_F lo(v), L0 + Σ_F hi(v)]``;
2. ``m_n ≤ μ_n + Σ_F U_n(v)``, since ``min(a + x, l) ≤ min(a, l) + x`` and the frontier's unclipped matches
   are at most the sum of the nodes' maxima;
3. ``m_n ≤ Σ_t min(a_t + Σ_F X_t(v), l_t)``, each type maximized on its own;
4. ``m_n ≤ Σ_{t saturated} min(a_t + Σ_F X_t(v), l_t) + Σ_{t unsaturated} a_t + Σ_F W_n(v)``: on an unsaturated
   type ``min(a_t + x_t, l_t) = a_t + x_t``, and the unsaturated types' ``x_t`` are maximized jointly;
5. ``m_n ≤ R_n``, the sum of the order's limits, and ``m_n ≤ c_n(L)``.

So ``B = max over integer L in range 1 of f(min(caps 2-5), L)`` is at least the BLEU+1 of every completion:
at the completion's own ``L`` each bound on ``m_n`` is at least its ``m_n``, and ``f`` is monotone in ``m``. The
maximum over ``L`` is taken by trying every ``L`` (tables of ``log(x + k_n)`` and of ``−1/N Σ_n log(c_n(L) + k_n)
+ min(0, 1 − r(L)/L)`` per ``L``), so the brevity penalty and the length-dependent denominators need no
monotonicity argument. A derivation's score is the same formula at its exact statistics, with the same
tables, so a finished derivation is bounded by its own score; the candidates are rescored with the metric
itself at the end.

**Ties** follow the exact method's rule (higher BLEU+1, equal to 1e-12; then higher model score, equal to
1e-9 relative; then the greater string). Let ``X`` be the incumbent (the best score found, then the best model
score, then the greatest string among those). The search drops a partial derivation when

(a) its bound is below the best score found minus the tie tolerance: none of its strings ties the best;
(b) its bound is at most ``X``'s score and its best model score (chosen edges plus each frontier node's
    Viterbi score) is below ``X``'s by more than the model tolerance: a string of it that ties the best
    score puts ``X`` in the tie too, and ``X`` has the better model score;
(c) its bound is at most ``X``'s score, its best model score at most ``X``'s, and its placed words already
    make every completion's string smaller than ``X``'s: then ``X`` ties it on both scores and wins on the
    string. Strings are compared as sequences of word ranks (words in string order), which is comparing the
    joined strings when no word holds a character at or below the space (a word is then below every longer
    word it begins, as the space after it is below any character); otherwise (c) is not used.

Each rule only drops strings that cannot win, so the winning string's best-model derivation is never
dropped; every derivation found that may still tie is returned, and the caller applies the rule to them.
(Model scores are compared as computed; two sums of the same scores in different orders that differ in the
last bit at the edge of the 1e-9 tolerance are the one case the argument does not cover.)

The search is one compiled kernel; the per-node passes are compiled inside passes
(:func:`hypertune.compiled.scalar_inside`). Its size limit is ``max_expansions`` (partial derivations
expanded); beyond it :func:`branch_and_bound` reports that it did not finish. The kernel polls a stop flag
that a deferred signal sets (:func:`hypertune.interrupts.watched`), so a search of minutes stops at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

from hypertune import compiled, interrupts
from hypertune.arrays import offsets_from_counts
from hypertune.choices import ORACLE_MAX_EXPANSIONS
from hypertune.compiled import grown
from hypertune.hypergraph import Hypergraph
from hypertune.metrics import BleuMetric, _kernels
from hypertune.metrics.bleu import REF_LENGTHS, SMOOTHING
from hypertune.tuners.ngram_edges import NgramEdges

_jit = numba.njit(cache=True, nogil=True)

MAX_EXPANSIONS = ORACLE_MAX_EXPANSIONS
"""The default limit on partial derivations expanded per graph (``oracle --max-expansions``)."""
ENUMERATE_BELOW = 1_000
"""Graphs with at most this many derivations are enumerated instead (counting semiring)."""
TIE = 1e-12
"""Scores within this of the best tie (the exact method's rule, :func:`hypertune.tuners.oracle._best_of`)."""
SLACK = 1e-13
"""How far the search's own BLEU+1 formula may be from the metric's (rounding): added to every bound."""
DIVE_EVERY = 1000
"""Every this many expansions the search dives: it expands the best child of the best child ... down to a
derivation, for a better incumbent early (each state is still expanded once)."""
MODEL_TIE = 1e-9
"""Model scores within this (relative) tie."""


@dataclass(frozen=True)
class BleuForm:
    """The BLEU variant the bound is written for: ``order`` N, the smoothing ``k`` added to matches and counts
    of orders 2..N, the reference-length rule (a :data:`~hypertune.metrics.bleu.REF_LENGTHS` code)."""

    order: int
    k: float
    ref_length: int


def bleu_form(metric: object) -> BleuForm | None:
    """The :class:`BleuForm` of a metric the branch and bound can bound exactly: clipped BLEU with
    ``plus1``/``add-k`` smoothing (k > 0), all orders averaged, closest/shortest/average reference length,
    hypotheses scored as the graph's tokens (``--tokenize none``, no lowercasing). ``None`` for any other
    metric (the exact method then enumerates)."""
    if type(metric) is not BleuMetric or not metric.clip or metric.effective_order:
        return None
    if metric.smooth not in ("plus1", "add-k") or metric.ref_length == "ibm" or metric.max_order < 1:
        return None
    if metric.tokenizer.name != "none" or metric.tokenizer.lowercase:
        return None
    value = metric.smooth_value if metric.smooth_value is not None else SMOOTHING[metric.smooth]
    if value is None or not value > 0:
        return None
    return BleuForm(int(metric.max_order), float(value), REF_LENGTHS[metric.ref_length])


@dataclass(frozen=True)
class BranchAndBound:
    """What :func:`branch_and_bound` found: ``candidates``, pre-order split-graph edges of every derivation that
    may be the oracle under the tie rule (the caller scores them exactly and applies the rule); ``finished``
    is False when the search stopped at ``max_expansions``; ``expansions`` and ``states`` (partial
    derivations made) measure the work; ``bound`` is the root's bound, ``best`` the best score found (within
    rounding) and ``open_bound`` the highest bound left open when the search stopped (``best`` when it
    finished)."""

    candidates: list[np.ndarray]
    finished: bool
    expansions: int
    states: int
    bound: float
    best: float
    open_bound: float


def score_tables(form: BleuForm, ref_lengths: np.ndarray, longest: int) -> tuple[np.ndarray, np.ndarray]:
    """``lognum[n, x] = log(x + k_n)`` and, per length ``L`` (0..``longest``), ``base[L] = −1/N · Σ_n
    log(c_n(L) + k_n) + min(0, 1 − r(L)/L)``: the BLEU+1 of statistics ``m``, ``L`` is then
    ``exp(Σ_n lognum[n, m_n] / N + base[L])`` (0 when ``L`` or ``m_1`` is 0)."""
    order = form.order
    x = np.arange(longest + 1, dtype=np.float64)
    with np.errstate(divide="ignore"):
        lognum = np.vstack([np.log(x + (form.k if n else 0.0)) for n in range(order)])
    base = np.full(longest + 1, -np.inf)
    lengths = np.asarray(ref_lengths, dtype=np.int64)
    for length in range(1, longest + 1):
        r = _kernels._reference_length(lengths, 0, lengths.size, length, form.ref_length)
        denominator = sum(np.log(max(0, length - n) + (form.k if n else 0.0)) for n in range(order))
        base[length] = -denominator / order + (1.0 - r / length if length < r else 0.0)
    return lognum, base


def branch_and_bound(
    split: NgramEdges,
    edge_scores: np.ndarray,
    form: BleuForm,
    ref_lengths: np.ndarray,
    incumbent: tuple[np.ndarray, int, float, np.ndarray] | None = None,
    max_expansions: int = MAX_EXPANSIONS,
    skip: Sequence[int] = (),
) -> BranchAndBound:
    """Branch and bound for the BLEU+1 oracle of the split graph ``split`` (see the module docstring).
    ``edge_scores``: the model score of every split edge. ``ref_lengths``: the sentence's reference lengths in
    tokens. ``incumbent``: the clipped matches (N,), length, model score and words of a known derivation, the
    initial lower bound (its derivation is not among the candidates; the caller adds it). ``skip``: the ids of
    the sentence markers, which are not words (:func:`hypertune.metrics.base.sentence_marker_ids`; the split was
    made without them)."""
    g = split.graph
    order = form.order
    node_offsets, tail_offsets, tails = g.node_offsets, g.tail_offsets, g.tails
    words = np.ascontiguousarray(split.counts[:, 0]).astype(np.int64)
    unclipped = split.unclipped_matches()
    tropical = compiled.TROPICAL
    inside_u = np.empty((g.num_nodes, order))
    for n in range(order):
        inside_u[:, n] = compiled.scalar_inside(tropical, node_offsets, tail_offsets, tails, unclipped[:, n])
    wordsf = words.astype(np.float64)
    hi = compiled.scalar_inside(tropical, node_offsets, tail_offsets, tails, wordsf)
    lo = -compiled.scalar_inside(tropical, node_offsets, tail_offsets, tails, -wordsf)
    viterbi = compiled.scalar_inside(tropical, node_offsets, tail_offsets, tails, np.asarray(edge_scores, np.float64))
    gram_offsets = offsets_from_counts(np.bincount(split.gram_edge, minlength=g.num_edges))
    gram_type = np.asarray(split.gram_type, dtype=np.int64)[np.argsort(split.gram_edge, kind="stable")]
    type_order = np.asarray(split.ref_orders, dtype=np.int64) - 1
    type_limit = np.asarray(split.ref_limits, dtype=np.int64)
    budget = np.zeros(order, dtype=np.int64)
    np.add.at(budget, type_order, type_limit)
    longest = int(round(hi[-1])) if np.isfinite(hi[-1]) else 0
    lognum, base = score_tables(form, ref_lengths, longest)
    if incumbent is None:
        start_m, start_len, start_model = np.zeros(order, dtype=np.int64), 0, -np.inf
        start_words = np.zeros(0, dtype=np.int64)
    else:
        start_m = np.minimum(np.asarray(incumbent[0], dtype=np.int64), longest)
        start_len, start_model = int(incumbent[1]), float(incumbent[2])
        start_words = np.asarray(incumbent[3], dtype=np.int64)
        if start_len > longest:  # pragma: no cover - the incumbent is a derivation of this graph
            raise ValueError("the incumbent is longer than any derivation")
    rank, text_order = _word_ranks(g, start_words)
    skip_mask = np.zeros(rank.size, dtype=np.bool_)
    skip_mask[[w for w in skip if 0 <= w < rank.size]] = True
    type_counts = _type_inside(node_offsets, tail_offsets, tails, gram_offsets, gram_type, type_limit.size)
    saturating = type_counts[-1] > type_limit  # clipping can bind: some derivation has more than the limit
    sorted_edges = np.sort(split.gram_edge)
    inside_w = np.empty((g.num_nodes, order))
    for n in range(order):
        unsaturated = np.zeros(g.num_edges)
        keep = ~saturating[gram_type] & (type_order[gram_type] == n)
        np.add.at(unsaturated, sorted_edges[keep], 1.0)
        inside_w[:, n] = compiled.scalar_inside(tropical, node_offsets, tail_offsets, tails, unsaturated)
    tables = _Tables(
        node_offsets,
        tail_offsets,
        tails,
        words,
        np.asarray(edge_scores, dtype=np.float64),
        gram_offsets,
        gram_type,
        type_order,
        type_limit,
        budget,
        np.rint(inside_u).astype(np.int64),
        np.rint(inside_w).astype(np.int64),
        type_counts,
        saturating,
        np.rint(lo).astype(np.int64),
        np.rint(hi).astype(np.int64),
        viterbi,
        lognum,
        base,
        g.target_offsets,
        g.target,
        skip_mask,
        rank,
        text_order,
    )
    stop = np.zeros(1, dtype=np.int64)  # set to 1 by a deferred signal: the kernel returns unfinished
    status, expansions, states, parent, edge, found, root, best, open_bound = interrupts.watched(
        lambda: _search(tables, start_m, start_len, start_model, rank[start_words], int(max_expansions), stop),
        lambda: stop.__setitem__(0, 1),
    )
    candidates = [_preorder(g, _chain(int(s), parent, edge)) for s in found]
    return BranchAndBound(
        candidates, bool(status), int(expansions), int(states), float(root), float(best), float(open_bound)
    )


class _Tables(NamedTuple):
    """What the search reads: the split graph, its edges' words, model scores and reference n-gram matches
    (``gram_type[gram_offsets[e]:gram_offsets[e+1]]``, types with their order and clip limit, ``budget[n]``
    the sum of the order's limits), the per-node passes (``inside_u[v, n]`` most unclipped order-n matches,
    ``type_counts[v, t]`` most occurrences of type ``t``, ``lo``/``hi`` shortest and longest yield,
    ``viterbi`` best model score) and the score tables of :func:`score_tables`."""

    node_offsets: np.ndarray
    tail_offsets: np.ndarray
    tails: np.ndarray
    words: np.ndarray
    edge_scores: np.ndarray
    gram_offsets: np.ndarray
    gram_type: np.ndarray
    type_order: np.ndarray
    type_limit: np.ndarray
    budget: np.ndarray
    inside_u: np.ndarray
    inside_w: np.ndarray
    type_counts: np.ndarray
    saturating: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    viterbi: np.ndarray
    lognum: np.ndarray
    base: np.ndarray
    target_offsets: np.ndarray
    target: np.ndarray
    skip: np.ndarray
    rank: np.ndarray
    text_order: bool


def _word_ranks(graph: Hypergraph, extra: np.ndarray) -> tuple[np.ndarray, bool]:
    """Every word id's rank among the graph's words (and ``extra``) in string order, and whether comparing
    strings as sequences of word ranks is comparing the joined strings (the tie rule's order): true unless some
    word holds a character at or below the space, so that a word is below every longer word it begins."""
    ids = np.unique(np.concatenate((graph.target[graph.target >= 0], extra)))
    size = int(ids.max()) + 1 if ids.size else 1
    texts = [graph.vocabulary.word(int(i)) for i in ids]
    rank = np.full(size, -1, dtype=np.int64)
    rank[ids[sorted(range(ids.size), key=texts.__getitem__)]] = np.arange(ids.size)
    return rank, all(min(text, default="!") > " " for text in texts)


def _chain(state: int, parent: np.ndarray, edge: np.ndarray) -> list[int]:
    """The chosen edges of a state in the order they were chosen."""
    out = []
    while state >= 0 and edge[state] >= 0:
        out.append(int(edge[state]))
        state = int(parent[state])
    return out[::-1]


def _preorder(graph: Hypergraph, chosen: list[int]) -> np.ndarray:
    """Edges chosen in yield order (each fills the leftmost open tail in the words' order, which a rule that
    reorders its tails, ``[2] ... [1]``, makes differ from the tails' order) as the pre-order of the
    derivation, children in tail order (:meth:`~hypertune.hypergraph.Hypergraph.derivation_from_edges`)."""
    tail_offsets, target_offsets, target = graph.tail_offsets, graph.target_offsets, graph.target
    children = [np.full(tail_offsets[e + 1] - tail_offsets[e], -1, dtype=np.int64) for e in chosen]
    open_tails: list[tuple[int, int]] = []  # (position in chosen, tail index), leftmost last
    for j, e in enumerate(chosen):
        if j:
            at, i = open_tails.pop()
            children[at][i] = j
        tokens = target[target_offsets[e] : target_offsets[e + 1]]
        open_tails.extend((j, -1 - int(t)) for t in tokens[::-1] if t < 0)
    out, stack = [], [0] if chosen else []
    while stack:
        j = stack.pop()
        out.append(chosen[j])
        stack.extend(int(c) for c in children[j][::-1])
    return np.asarray(out, dtype=np.int64)


# ---------------------------------------------------------------------- the compiled search


@_jit
def _log_score(m, length, lognum, base):  # pragma: no cover - compiled
    """log BLEU+1 of clipped matches ``m`` at length ``length`` (see :func:`score_tables`); -inf for 0."""
    if length <= 0 or m[0] <= 0:
        return -np.inf
    total = 0.0
    for n in range(m.size):
        total += lognum[n, m[n]]
    return total / m.size + base[length]


@_jit
def _loses_on_model(model, best_model):  # pragma: no cover - compiled
    """Whether a model score (a bound, up to rounding: 1e-12 relative is added) is below ``best_model`` by more
    than the tie tolerance of :func:`hypertune.tuners.oracle._best_of`."""
    return model + 1e-12 * max(1.0, abs(model)) < best_model - MODEL_TIE * max(1.0, abs(best_model))


@_jit
def _bound(caps, low, high, lognum, base, scratch):  # pragma: no cover - compiled
    """The module docstring's ``B``: the most BLEU+1 over lengths ``low..high`` with matches
    ``min(caps_n, c_n(L))``; 0 when no length is possible."""
    order = caps.size
    best = -np.inf
    for length in range(max(low, 1), high + 1):
        for n in range(order):
            scratch[n] = min(caps[n], max(0, length - n))
        x = _log_score(scratch, length, lognum, base)
        if x > best:
            best = x
    return np.exp(best)


@_jit
def _heap_push(heap, size, s, key, second):  # pragma: no cover - compiled
    """Push state ``s`` onto the max-heap ``heap[:size]`` ordered by ``(key, second)``; returns the new size."""
    i = size
    heap[i] = s
    while i > 0:
        p = (i - 1) // 2
        a, b = heap[p], heap[i]
        if key[a] > key[b] or (key[a] == key[b] and second[a] >= second[b]):
            break
        heap[p], heap[i] = b, a
        i = p
    return size + 1


@_jit
def _heap_pop(heap, size, key, second):  # pragma: no cover - compiled
    """Remove the top of the max-heap; returns it (the new size is ``size - 1``)."""
    top = heap[0]
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        left, right, best = 2 * i + 1, 2 * i + 2, i
        if left < size:
            a, b = heap[left], heap[best]
            if key[a] > key[b] or (key[a] == key[b] and second[a] > second[b]):
                best = left
        if right < size:
            a, b = heap[right], heap[best]
            if key[a] > key[b] or (key[a] == key[b] and second[a] > second[b]):
                best = right
        if best == i:
            break
        heap[i], heap[best] = heap[best], heap[i]
        i = best
    return top


@_jit
def _type_inside(node_offsets, tail_offsets, tails, gram_offsets, gram_type, types):  # pragma: no cover - compiled
    """``out[v, t]``: the most occurrences of reference n-gram type ``t`` in one derivation of ``v`` (a max-plus
    inside pass per type; each type maximized on its own)."""
    n = node_offsets.size - 1
    out = np.zeros((n, types), np.int32)
    row = np.empty(types, np.int32)
    for v in range(n):
        first = True
        for e in range(node_offsets[v], node_offsets[v + 1]):
            row[:] = 0
            for q in range(gram_offsets[e], gram_offsets[e + 1]):
                row[gram_type[q]] += 1
            for k in range(tail_offsets[e], tail_offsets[e + 1]):
                row += out[tails[k]]
            if first:
                out[v] = row
                first = False
            else:
                for t in range(types):
                    if row[t] > out[v, t]:
                        out[v, t] = row[t]
    return out


@_jit
def _text_below(prefix, length, emitted, count, best_text, best_length, complete):  # pragma: no cover - compiled
    """Whether every string that starts with ``prefix[:length] + emitted[:count]`` (word ranks; the whole
    string when ``complete``) is below ``best_text[:best_length]`` in the order of the tie rule."""
    total = length + count
    for k in range(min(total, best_length)):
        a = prefix[k] if k < length else emitted[k - length]
        if a != best_text[k]:
            return a < best_text[k]
    return complete and total < best_length


@_jit
def _text_above(prefix, length, emitted, count, best_text, best_length):  # pragma: no cover - compiled
    """Whether the string ``prefix[:length] + emitted[:count]`` (word ranks) is above ``best_text``."""
    total = length + count
    for k in range(min(total, best_length)):
        a = prefix[k] if k < length else emitted[k - length]
        if a != best_text[k]:
            return a > best_text[k]
    return total > best_length


@_jit
def _search(tables, start_m, start_len, start_model, start_text, max_expansions, stop):  # pragma: no cover - compiled
    """Best-first branch and bound (see the module docstring) from the incumbent ``start_m``, ``start_len``,
    ``start_model``, ``start_text`` (word ranks); it gives up, unfinished, when ``stop[0]`` becomes non-zero
    (another thread sets it) as when it reaches ``max_expansions``. Returns (1 when finished else 0,
    expansions, states made, each state's parent and last edge, the candidate states, the root's bound, the
    best score found, the highest open bound).

    A state stores its parent, the edge it chose, its frontier (a cell of a persistent stack of symbols:
    nodes, and the words between them, ``-1 - word``), the words of its yield placed so far (a cell of a
    persistent list, last word first, and their number), the model score of its chosen edges, its model
    bound and its BLEU+1 bound. A frontier never starts with a word: leading words move to the yield. What
    the chosen edges matched is recounted along the parent chain when the state is expanded, and the
    frontier's bounds summed over its cells."""
    t_ = tables
    order = t_.budget.size
    types = t_.type_limit.size
    goal = t_.node_offsets.size - 2
    longest = t_.base.size
    cap = 1024
    parent = np.empty(cap, np.int32)
    edge = np.empty(cap, np.int32)
    head = np.empty(cap, np.int32)  # the frontier's top cell, -1 empty
    placed = np.empty(cap, np.int32)  # the last placed word's cell, -1 none
    placed_count = np.empty(cap, np.int32)
    chosen_model = np.empty(cap)
    model_bound = np.empty(cap)
    bound = np.empty(cap)
    expanded = np.zeros(cap, np.bool_)
    cell_symbol = np.empty(cap, np.int32)
    cell_next = np.empty(cap, np.int32)
    word_cell = np.empty(cap, np.int32)
    word_next = np.empty(cap, np.int32)
    heap = np.empty(cap, np.int64)
    found = np.empty(16, np.int64)
    counts = np.zeros(types, np.int64)  # occurrences of each reference type in the chosen edges
    rest_types = np.zeros(types, np.int64)  # the most occurrences of each type below the frontier
    rest_u = np.zeros(order, np.int64)
    rest_w = np.zeros(order, np.int64)
    cap_m = np.empty(order, np.int64)
    m = np.empty(order, np.int64)
    m_child = np.empty(order, np.int64)
    cap_u = np.empty(order, np.int64)
    cap_t = np.empty(order, np.int64)
    scratch = np.empty(order, np.int64)
    prefix = np.empty(longest + 1, np.int64)  # the expanded state's placed words, as ranks, first word first
    emitted = np.empty(longest + 1, np.int64)  # the words a child places
    emitted_rank = np.empty(longest + 1, np.int64)
    best_text = np.empty(longest + 1, np.int64)
    best_length = start_text.size
    best_text[:best_length] = start_text
    best, best_model = np.exp(_log_score(start_m, start_len, t_.lognum, t_.base)), start_model
    parent[0], edge[0], cell_symbol[0], cell_next[0], head[0] = -1, -1, goal, -1, 0
    placed[0], placed_count[0] = -1, 0
    chosen_model[0], model_bound[0] = 0.0, t_.viterbi[goal]
    for n in range(order):
        cap_u[n] = min(t_.inside_u[goal, n], t_.budget[n])
    bound[0] = _bound(cap_u, t_.lo[goal], t_.hi[goal], t_.lognum, t_.base, scratch)
    root = bound[0]
    states, cells, words_used, size, nfound = 1, 1, 0, 0, 0
    size = _heap_push(heap, size, 0, bound, model_bound)
    expansions = 0
    dive = -1  # the state a dive expands next; -1: the best open state
    since_dive = DIVE_EVERY  # the first expansion starts a dive
    while size > 0 or dive >= 0:
        diving = dive >= 0
        if diving:
            s, dive = dive, -1
        else:
            s = _heap_pop(heap, size, bound, model_bound)
            size -= 1
            if expanded[s]:
                continue  # expanded by a dive
            if bound[s] + SLACK < best - TIE:
                break  # best-first: every open bound is at most this one (rule (a))
            diving = since_dive >= DIVE_EVERY
            if diving:
                since_dive = 0
        if bound[s] + SLACK < best - TIE:
            continue  # rule (a), for a dive's state
        if bound[s] <= best and _loses_on_model(model_bound[s], best_model):
            continue  # rule (b)
        length = placed_count[s]
        c = placed[s]
        for k in range(length - 1, -1, -1):
            prefix[k] = t_.rank[word_cell[c]]
            c = word_next[c]
        ranked = t_.text_order and bound[s] <= best and model_bound[s] <= best_model
        if ranked and _text_below(prefix, length, emitted_rank, 0, best_text, best_length, False):
            continue  # rule (c)
        if expansions >= max_expansions or stop[0] != 0:
            open_bound = max(bound[s], bound[heap[0]]) if size else bound[s]
            return 0, expansions, states, parent[:states], edge[:states], found[:nfound], root, best, open_bound
        expansions += 1
        since_dive += 1
        expanded[s] = True
        # what the chosen edges hold: type counts, clipped matches, words
        words = 0
        t = s
        while t > 0:
            e = edge[t]
            words += t_.words[e]
            for q in range(t_.gram_offsets[e], t_.gram_offsets[e + 1]):
                counts[t_.gram_type[q]] += 1
            t = parent[t]
        m[:] = 0
        for ty in range(types):
            m[t_.type_order[ty]] += min(counts[ty], t_.type_limit[ty])
        # the frontier below the node expanded now
        v, rest = cell_symbol[head[s]], cell_next[head[s]]
        rest_u[:] = 0
        rest_w[:] = 0
        rest_types[:] = 0
        rest_lo, rest_hi, rest_vit = 0, 0, 0.0
        c = rest
        while c >= 0:
            w = cell_symbol[c]
            c = cell_next[c]
            if w < 0:
                continue
            rest_lo += t_.lo[w]
            rest_hi += t_.hi[w]
            rest_vit += t_.viterbi[w]
            rest_u += t_.inside_u[w]
            rest_w += t_.inside_w[w]
            rest_types += t_.type_counts[w]
        for e in range(t_.node_offsets[v], t_.node_offsets[v + 1]):
            m_child[:] = m
            for q in range(t_.gram_offsets[e], t_.gram_offsets[e + 1]):
                ty = t_.gram_type[q]
                if counts[ty] < t_.type_limit[ty]:
                    m_child[t_.type_order[ty]] += 1
                counts[ty] += 1
            first, arity = t_.tail_offsets[e], t_.tail_offsets[e + 1] - t_.tail_offsets[e]
            new_length = words + t_.words[e]
            new_model = chosen_model[s] + t_.edge_scores[e]
            # the words this child places: the edge's words before its first tail, and, without tails, the
            # words on the frontier before its next node
            count, split_at, top = 0, t_.target_offsets[e + 1], rest
            for p in range(t_.target_offsets[e], t_.target_offsets[e + 1]):
                token = t_.target[p]
                if token < 0:
                    split_at = p
                    break
                if not t_.skip[token]:
                    emitted[count] = token
                    count += 1
            if arity == 0:
                while top >= 0 and cell_symbol[top] < 0:
                    emitted[count] = -1 - cell_symbol[top]
                    count += 1
                    top = cell_next[top]
            complete = arity == 0 and top < 0
            if complete:
                value = np.exp(_log_score(m_child, new_length, t_.lognum, t_.base))
                new_bound_model = new_model
            else:
                low, high, new_bound_model = rest_lo, rest_hi, new_model + rest_vit
                for n in range(order):
                    cap_u[n] = m_child[n] + rest_u[n]
                    cap_t[n] = 0
                    cap_m[n] = rest_w[n]
                for i in range(arity):
                    w = t_.tails[first + i]
                    low += t_.lo[w]
                    high += t_.hi[w]
                    new_bound_model += t_.viterbi[w]
                    for n in range(order):
                        cap_u[n] += t_.inside_u[w, n]
                        cap_m[n] += t_.inside_w[w, n]
                for ty in range(types):
                    x = counts[ty] + rest_types[ty]
                    for i in range(arity):
                        x += t_.type_counts[t_.tails[first + i], ty]
                    clipped = min(x, t_.type_limit[ty])
                    cap_t[t_.type_order[ty]] += clipped
                    if t_.saturating[ty]:
                        cap_m[t_.type_order[ty]] += clipped
                    else:
                        cap_m[t_.type_order[ty]] += min(counts[ty], t_.type_limit[ty])
                for n in range(order):
                    cap_u[n] = min(cap_u[n], cap_t[n], cap_m[n], t_.budget[n])
                value = _bound(cap_u, new_length + low, new_length + high, t_.lognum, t_.base, scratch)
            for q in range(t_.gram_offsets[e], t_.gram_offsets[e + 1]):
                counts[t_.gram_type[q]] -= 1
            if value + SLACK < best - TIE:
                continue  # rule (a)
            if value <= best and _loses_on_model(new_bound_model, best_model):
                continue  # rule (b)
            for k in range(count):
                emitted_rank[k] = t_.rank[emitted[k]]
            if t_.text_order and value <= best and new_bound_model <= best_model:
                if _text_below(prefix, length, emitted_rank, count, best_text, best_length, complete):
                    continue  # rule (c)
            if complete:  # the incumbent: the best score, then model score, then string
                better = value > best or (value == best and new_model > best_model)
                if not better and value == best and new_model == best_model:
                    better = _text_above(prefix, length, emitted_rank, count, best_text, best_length)
                if better:
                    best, best_model = value, new_model
                    best_text[:length] = prefix[:length]
                    best_text[length : length + count] = emitted_rank[:count]
                    best_length = length + count
            if states == parent.size:
                need = states + 1
                parent, edge, head = grown(parent, need), grown(edge, need), grown(head, need)
                placed, placed_count = grown(placed, need), grown(placed_count, need)
                chosen_model, model_bound = grown(chosen_model, need), grown(model_bound, need)
                bound, expanded = grown(bound, need), grown(expanded, need)
            c = states
            states += 1
            parent[c], edge[c], expanded[c] = s, e, False
            chosen_model[c], model_bound[c], bound[c] = new_model, new_bound_model, value
            if complete:
                head[c], placed[c], placed_count[c] = -1, -1, 0
                if nfound == found.size:
                    found = grown(found, nfound + 1)
                found[nfound] = c
                nfound += 1
                continue
            last = placed[s]
            if words_used + count > word_cell.size:
                word_cell, word_next = grown(word_cell, words_used + count), grown(word_next, words_used + count)
            for k in range(count):
                word_cell[words_used], word_next[words_used] = emitted[k], last
                last = words_used
                words_used += 1
            placed[c], placed_count[c] = last, length + count
            need = cells + t_.target_offsets[e + 1] - split_at
            if need > cell_symbol.size:
                cell_symbol, cell_next = grown(cell_symbol, need), grown(cell_next, need)
            for p in range(t_.target_offsets[e + 1] - 1, split_at - 1, -1):  # the first tail on top
                token = t_.target[p]
                if token >= 0 and t_.skip[token]:
                    continue
                cell_symbol[cells] = t_.tails[first - 1 - token] if token < 0 else -1 - token
                cell_next[cells] = top
                top = cells
                cells += 1
            head[c] = top
            if size == heap.size:
                heap = grown(heap, size + 1)
            size = _heap_push(heap, size, c, bound, model_bound)
            if diving and (
                dive < 0 or bound[c] > bound[dive] or (bound[c] == bound[dive] and model_bound[c] > model_bound[dive])
            ):
                dive = c  # a dive goes on with the best child
        t = s
        while t > 0:
            e = edge[t]
            for q in range(t_.gram_offsets[e], t_.gram_offsets[e + 1]):
                counts[t_.gram_type[q]] -= 1
            t = parent[t]
    # the candidates that may still tie with the best
    keep_count = 0
    for i in range(nfound):
        c = found[i]
        if bound[c] + SLACK >= best - TIE:
            found[keep_count] = c
            keep_count += 1
    return 1, expansions, states, parent[:states], edge[:states], found[:keep_count], root, best, best
