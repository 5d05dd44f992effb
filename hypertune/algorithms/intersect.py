"""Intersection of a hypergraph with an n-gram state machine: nodes split by their boundary words.

A gain that is a sum over the n-grams of the yield (linear BLEU, an n-gram language model, n-gram
features) does not decompose over the edges of a hypergraph: an edge creates n-grams across the
boundaries of its tails' yields. It does decompose once every node is split by the words an n-gram
can still see: the first and last ``order - 1`` words of its yield (Bar-Hillel et al. 1961; Chiang
2007, section 5.3.2, "+LM" items; Tromble et al. 2008 use the same for linear-BLEU MBR on lattices).

:func:`intersect_ngrams` builds that graph. Node ``(v, left, right)`` stands for the derivations of
``v`` whose yield starts with ``left`` and ends with ``right``; each original edge is copied once per
combination of its tails' states, and every copy lists the n-grams (orders ``1..order``) it creates:
those that lie within the edge's own words or cross a tail boundary -- every n-gram of a derivation's
yield is created by exactly one of its edges. A node keeps only the side that some edge above it can
see: for a lattice (tails first) only ``right`` is kept, so the split graph is the lattice composed
with the n-gram automaton. Words listed in ``skip`` (e.g. ``<s>``, ``</s>``) are dropped from yields.

The construction is exact, so its size can grow as ``nodes x |V|^(2(order-1))`` in the worst case;
``max_nodes`` bounds it. Oracle search, expected-BLEU training and hope/fear search for linear BLEU
use it.

Implementation: compiled kernels, no Python loop over edges or n-grams. A state is a fixed-width row
(see :attr:`NgramIntersection.node_states`); the states of one original node are interned in an open-addressing table of
rows (hashed, and compared on a hash match: no collision is assumed away). Split nodes are numbered in
order of creation, so the states of node ``u`` are the contiguous ids ``first[u]:first[u+1]`` and an
edge's copies are enumerated by an odometer over those ranges (the last tail fastest, as
``itertools.product``). Outputs go to arrays that double when full; the copies are grouped by head at
the end by a stable counting sort.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numba
import numpy as np

from hypertune.arrays import flat_ranges, offsets_from_counts
from hypertune.compiled import grown, uncounted_jit
from hypertune.errors import GraphError
from hypertune.hypergraph import Derivation, Hypergraph

_jit = numba.njit(cache=True, nogil=True)
_inline = numba.njit(cache=True, nogil=True, inline="always")  # the helpers of the copy loop

DONE, FULL, TOO_MANY = 0, 1, 2  # what :func:`_copy_edge` reports
GAP = -1  # a hidden middle of a tail's yield in an edge's word sequence (word ids are >= 0)
LEFT, RIGHT, SHORT, WORDS = 0, 1, 2, 3  # the columns of a state row (see NgramIntersection.node_states)
_MIX = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15 as int64
_FINAL = np.int64(-49064778989728563)  # 0xFF51AFD7ED558CCD as int64


@dataclass(frozen=True)
class NgramIntersection:
    """The split graph and how it maps back to the original.

    ``graph``: the intersected hypergraph (same feature space and vocabulary; edge ``i`` copies the features
    and target of original edge ``edge_origin[i]``). ``node_origin[v]``: the original node of split node ``v``.
    ``node_states[v]``: its state, a row of ``3 + 2 * (order - 1)`` ints: the number of left and of right boundary
    words (-1 when no edge above can see that side), 1 when the whole yield is shorter than ``order - 1`` words
    (then left == right == the yield) else 0, the ``order - 1`` left words, the ``order - 1`` right words (padded
    with -1). ``node_left[v]`` / ``node_right[v]``: the same boundary words as tuples (``None`` for a side not
    kept), built on first use.
    ``gram_offsets`` (one per split edge plus one) index ``grams``: the n-grams each split edge creates, as rows
    of word ids padded with ``-1`` to ``order`` columns (``gram_orders`` gives their lengths).
    """

    graph: Hypergraph
    order: int
    edge_origin: np.ndarray
    node_origin: np.ndarray
    node_states: np.ndarray
    gram_offsets: np.ndarray
    grams: np.ndarray
    gram_orders: np.ndarray

    @cached_property
    def node_left(self) -> list[tuple[int, ...] | None]:
        """The first ``order - 1`` words of every split node's yield (``None``: not kept)."""
        return _boundary_tuples(self.node_states, LEFT, WORDS, self.order - 1)

    @cached_property
    def node_right(self) -> list[tuple[int, ...] | None]:
        """The last ``order - 1`` words of every split node's yield (``None``: not kept)."""
        return _boundary_tuples(self.node_states, RIGHT, WORDS + self.order - 1, self.order - 1)

    def original_derivation(self, derivation: Derivation) -> Derivation:
        """A derivation of the split graph as a derivation of the original graph (same tree shape)."""
        origin = self.edge_origin
        stack: list[tuple[Derivation, bool]] = [(derivation, False)]
        built: dict[int, Derivation] = {}
        while stack:
            node, expanded = stack.pop()
            if expanded:
                built[id(node)] = Derivation(int(origin[node.edge]), tuple(built[id(c)] for c in node.children))
            else:
                stack.append((node, True))
                stack.extend((c, False) for c in node.children)
        return built[id(derivation)]

    def gram_values(self, values: dict[tuple[int, ...], float], default: float = 0.0) -> np.ndarray:
        """``values.get(g, default)`` for every row ``g`` of ``grams`` (as a tuple of its ``gram_orders`` words).

        The keys of ``values`` become padded rows in a compiled table of rows: a Python loop over the keys, none
        over the n-grams. ``values`` maps tuples of word ids to floats; keys no n-gram can equal (another length,
        negative or non-integer entries) are left out."""
        keys, amounts = _value_rows(values, self.order)
        return _gram_values(self.grams, keys, amounts, float(default))

    def edge_gram_values(self, values: dict[tuple[int, ...], float], default: float = 0.0) -> np.ndarray:
        """``sum over the n-grams g an edge creates of values.get(g, default)``, for every split edge (summed in
        n-gram order, as ``np.add.at`` sums)."""
        return _edge_sums(self.gram_offsets, self.gram_values(values, default))


def _boundary_tuples(states: np.ndarray, column: int, first: int, k: int) -> list[tuple[int, ...] | None]:
    """One side of every state row as a tuple of words, or ``None`` where it is not kept."""
    lengths = states[:, column].tolist()
    words = states[:, first : first + k].tolist()
    return [tuple(w[:n]) if n >= 0 else None for n, w in zip(lengths, words, strict=True)]


def _value_rows(values: dict[tuple[int, ...], float], order: int) -> tuple[np.ndarray, np.ndarray]:
    """The keys of ``values`` that an n-gram of orders ``1..order`` can equal, as rows padded with -1 (word
    ids are never negative, so a padded row is the key), and their values."""
    rows: list[list[int]] = []
    amounts: list[float] = []
    for key, value in values.items():
        if not isinstance(key, tuple) or not 1 <= len(key) <= order:
            continue
        try:
            words = tuple(int(x) for x in key)
        except (TypeError, ValueError):
            continue
        if words != key or min(words) < 0:
            continue
        rows.append([*words, *([-1] * (order - len(words)))])
        amounts.append(float(value))
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), order), np.asarray(amounts, dtype=np.float64)


class _Graph(NamedTuple):
    """The arrays of the input hypergraph that the kernels read."""

    node_offsets: np.ndarray
    tail_offsets: np.ndarray
    tails: np.ndarray
    target_offsets: np.ndarray
    target: np.ndarray


class _Rules(NamedTuple):
    """What shapes the states: the n-gram order, ``skip[w]`` (word ``w`` is dropped; words beyond the array
    are kept), which sides each original node keeps, and the bound on split nodes."""

    order: int
    skip: np.ndarray
    need_left: np.ndarray
    need_right: np.ndarray
    max_nodes: int


class _Split(NamedTuple):
    """The split graph as it grows, edges in order of creation (not yet grouped by head). Split node ``s``:
    ``node_origin``, ``node_state`` (its row) and ``node_hash``; ``slots``: the state table of the node being
    split (ids below that node's first are free slots). Split edge ``i``: ``edge_head``, ``edge_origin``, its
    number of n-grams ``edge_grams``; its tails and n-grams follow the previous edge's in ``tails`` and
    ``grams``. ``counts``: split nodes, edges, tails, n-grams, and 1 once ``max_nodes`` is exceeded."""

    node_origin: np.ndarray
    node_hash: np.ndarray
    node_state: np.ndarray
    slots: np.ndarray
    edge_head: np.ndarray
    edge_origin: np.ndarray
    edge_grams: np.ndarray
    tails: np.ndarray
    grams: np.ndarray
    counts: np.ndarray


class _Scratch(NamedTuple):
    """Per-copy work space: the word sequence an edge copy sees (``word``, ``segment``: -1 for the edge's own
    words, ``i`` for tail ``i``), the new state's row, and the current tail states (``combo``)."""

    word: np.ndarray
    segment: np.ndarray
    row: np.ndarray
    combo: np.ndarray


@_jit
def _needed_sides(g: _Graph) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """Which nodes need their left / right boundary words: something precedes (follows) the node in an edge
    above it, or it starts (ends) an edge whose head needs that side. Computed top-down."""
    n = g.node_offsets.size - 1
    left = np.zeros(n, np.bool_)
    right = np.zeros(n, np.bool_)
    for v in range(n - 1, -1, -1):
        for e in range(g.node_offsets[v], g.node_offsets[v + 1]):
            first, last = g.target_offsets[e], g.target_offsets[e + 1] - 1
            for p in range(first, last + 1):
                token = g.target[p]
                if token < 0:
                    u = g.tails[g.tail_offsets[e] - token - 1]
                    left[u] = left[u] or p > first or left[v]
                    right[u] = right[u] or p < last or right[v]
    return left, right


# The per-copy helpers below are inlined into :func:`_copy_edges`, which is compiled without reference
# counting (:data:`hypertune.compiled.uncounted_jit`): numba otherwise updates (atomically) the reference
# count of every array a helper binds, on every copy, which costs as much as the copy itself. It allocates
# nothing (numba refuses to compile an allocation there) and its caller holds every array; outputs grow in
# its caller, :func:`_split_edges`.


@_inline
def _mix(h: np.int64, x: np.int64) -> np.int64:  # pragma: no cover - compiled
    """One step of the row hash: the running hash ``h`` with the next entry ``x`` (multiply, xorshift)."""
    h = (h ^ x) * _MIX
    return h ^ (h >> 29)


@_inline
def _finish(h: np.int64) -> np.int64:  # pragma: no cover - compiled
    """The last step of the row hash (an avalanche, so that the low bits used as a slot depend on all bits)."""
    h *= _FINAL
    return h ^ (h >> 32)


@_jit
def _row_hash(row: np.ndarray) -> np.int64:  # pragma: no cover - compiled
    """The 64-bit hash of an int64 row (the same as a state row's hash in :func:`_state_row`)."""
    h = np.int64(row.size)
    for x in row:
        h = _mix(h, x)
    return _finish(h)


@_jit
def _probe(
    slots: np.ndarray, hashes: np.ndarray, rows: np.ndarray, row: np.ndarray, h: np.int64
) -> np.int64:  # pragma: no cover - compiled
    """The slot of ``row`` in an open-addressing table of ids of ``rows`` (linear probing, -1 free): the slot
    holding an equal row's id, or the free slot where it goes. Rows are compared, not only their hashes."""
    mask = slots.size - 1
    i = h & mask
    while slots[i] >= 0:
        s = slots[i]
        if hashes[s] == h and np.array_equal(rows[s], row):
            return i
        i = (i + 1) & mask
    return i


@_inline
def _has_room(out: _Split, first_state: int, tails: int, grams: int) -> bool:  # pragma: no cover - compiled
    """Whether ``out`` has room for one more split node (also in the state table of the node being split, whose
    ids start at ``first_state``), one more edge, ``tails`` tails and ``grams`` n-grams."""
    return (
        out.counts[0] < out.node_origin.size
        and out.counts[1] < out.edge_head.size
        and out.counts[2] + tails <= out.tails.size
        and out.counts[3] + grams <= out.grams.shape[0]
        and 2 * (out.counts[0] - first_state + 1) <= out.slots.size
    )


@_jit
def _reserve(out: _Split, first_state: int, tails: int, grams: int) -> _Split:  # pragma: no cover - compiled
    """``out`` grown to have room (see :func:`_has_room`): arrays doubled, the state table of the node being
    split rehashed twice as large. Only called when something is full."""
    c = out.counts
    slots = out.slots
    if 2 * (c[0] - first_state + 1) > slots.size:
        slots = np.full(2 * slots.size, -1, np.int64)
        mask = slots.size - 1
        for s in range(first_state, c[0]):  # distinct rows: each goes to the first free slot of its run
            i = out.node_hash[s] & mask
            while slots[i] >= 0:
                i = (i + 1) & mask
            slots[i] = s
    return _Split(
        grown(out.node_origin, c[0] + 1),
        grown(out.node_hash, c[0] + 1),
        grown(out.node_state, c[0] + 1),
        slots,
        grown(out.edge_head, c[1] + 1),
        grown(out.edge_origin, c[1] + 1),
        grown(out.edge_grams, c[1] + 1),
        grown(out.tails, c[2] + tails),
        grown(out.grams, c[3] + grams),
        c,
    )


@_inline
def _sequence(g: _Graph, rules: _Rules, e: int, out: _Split, scratch: _Scratch) -> int:  # pragma: no cover - compiled
    """Fill ``scratch.word``/``segment`` with what the copy of edge ``e`` over the tail states ``scratch.combo``
    sees: its own words (skip words dropped) and, for each tail, its kept left words, a gap, its kept right
    words -- or its whole yield when it is short. Returns the length."""
    k = rules.order - 1
    m = 0
    for p in range(g.target_offsets[e], g.target_offsets[e + 1]):
        token = g.target[p]
        if token >= 0:
            if token >= rules.skip.size or not rules.skip[token]:
                scratch.word[m], scratch.segment[m] = token, -1
                m += 1
            continue
        i = -token - 1
        t = scratch.combo[i]
        n_left, n_right = out.node_state[t, LEFT], out.node_state[t, RIGHT]
        for j in range(max(n_left, 0)):
            scratch.word[m], scratch.segment[m] = out.node_state[t, WORDS + j], i
            m += 1
        if n_left >= 0 and n_right >= 0 and n_left < k:
            continue  # short yield: left == right == the yield
        scratch.word[m], scratch.segment[m] = GAP, i
        m += 1
        for j in range(max(n_right, 0)):
            scratch.word[m], scratch.segment[m] = out.node_state[t, WORDS + k + j], i
            m += 1
    return m


@_inline
def _add_grams(scratch: _Scratch, length: int, order: int, out: _Split) -> int:  # pragma: no cover - compiled
    """Append to ``out.grams`` the n-grams of the sequence that are not inside one tail's words and span no gap
    (ending position by position, shortest first); returns how many."""
    at = q = out.counts[3]
    run_start = 0
    for p in range(length):
        if scratch.word[p] == GAP:
            run_start = p + 1
            continue
        for n in range(1, order + 1):
            start = p - n + 1
            if start < run_start:
                break
            if scratch.segment[p] < 0 or scratch.segment[start] != scratch.segment[p]:
                for j in range(order):
                    out.grams[q, j] = scratch.word[start + j] if j < n else -1
                q += 1
    out.counts[3] = q
    return q - at


@_inline
def _state_row(
    scratch: _Scratch, length: int, k: int, need_left: bool, need_right: bool
) -> np.int64:  # pragma: no cover - compiled
    """Write the state of the sequence into ``scratch.row`` and return its hash: its first ``k`` words before a
    gap and last ``k`` after one, on the sides the head keeps; a yield shorter than ``k`` is kept whole on both
    sides when any side is kept."""
    before = 0
    while before < k and before < length and scratch.word[before] != GAP:
        before += 1
    after = 0
    while after < k and after < length and scratch.word[length - 1 - after] != GAP:
        after += 1
    for j in range(scratch.row.size):
        scratch.row[j] = -1
    scratch.row[SHORT] = 0
    if before == length and before < k and (need_left or need_right):
        scratch.row[LEFT], scratch.row[RIGHT], scratch.row[SHORT] = before, before, 1
        for j in range(before):
            scratch.row[WORDS + j] = scratch.word[j]
            scratch.row[WORDS + k + j] = scratch.word[j]
    else:
        if need_left:
            scratch.row[LEFT] = before
            for j in range(before):
                scratch.row[WORDS + j] = scratch.word[j]
        if need_right:
            scratch.row[RIGHT] = after
            for j in range(after):
                scratch.row[WORDS + k + j] = scratch.word[length - after + j]
    h = np.int64(scratch.row.size)
    for j in range(scratch.row.size):
        h = _mix(h, scratch.row[j])
    return _finish(h)


@_inline
def _intern(
    out: _Split, scratch: _Scratch, h: np.int64, v: int, first_state: int, max_nodes: int
) -> int:  # pragma: no cover - compiled
    """The split id of state ``scratch.row`` (hash ``h``) of node ``v``, whose states are the ids from
    ``first_state`` on, made when new; -1 when a new one would pass ``max_nodes``. Ids below ``first_state`` in
    ``out.slots`` count as free: one table serves node after node without clearing. Rows are compared on a hash
    match: no collision is assumed away."""
    mask = out.slots.size - 1
    i = h & mask
    while out.slots[i] >= first_state:
        s = out.slots[i]
        if out.node_hash[s] == h:
            j = 0
            while j < scratch.row.size and out.node_state[s, j] == scratch.row[j]:
                j += 1
            if j == scratch.row.size:
                return s
        i = (i + 1) & mask
    s = out.counts[0]
    if s >= max_nodes:
        return -1
    out.slots[i] = s
    out.node_origin[s], out.node_hash[s] = v, h
    for j in range(scratch.row.size):
        out.node_state[s, j] = scratch.row[j]
    out.counts[0] = s + 1
    return s


@_inline
def _advance(g: _Graph, e: int, first: np.ndarray, scratch: _Scratch) -> bool:  # pragma: no cover - compiled
    """Step the odometer ``scratch.combo`` over edge ``e``'s tails (tail ``u`` runs over ``first[u]:first[u+1]``,
    the last tail fastest, as ``itertools.product``); False once every combination has been visited."""
    t0 = g.tail_offsets[e]
    i = g.tail_offsets[e + 1] - t0 - 1
    while i >= 0:
        scratch.combo[i] += 1
        if scratch.combo[i] < first[g.tails[t0 + i] + 1]:
            return True
        scratch.combo[i] = first[g.tails[t0 + i]]
        i -= 1
    return False


@_inline
def _copy_edge(
    g: _Graph, rules: _Rules, e: int, v: int, first: np.ndarray, out: _Split, scratch: _Scratch
) -> int:  # pragma: no cover - compiled
    """Copy edge ``e`` (head ``v``) once per combination of its tails' states, from the odometer
    ``scratch.combo`` on: each copy's n-grams, its head (the state it makes, interned among ``v``'s) and its
    tails. Returns :data:`DONE`, :data:`FULL` (no room in ``out`` for the next copy) or :data:`TOO_MANY`."""
    arity = g.tail_offsets[e + 1] - g.tail_offsets[e]
    while True:
        length = _sequence(g, rules, e, out, scratch)
        if not _has_room(out, first[v], arity, length * rules.order):
            return FULL
        made = _add_grams(scratch, length, rules.order, out)
        h = _state_row(scratch, length, rules.order - 1, rules.need_left[v], rules.need_right[v])
        s = _intern(out, scratch, h, v, first[v], rules.max_nodes)
        if s < 0:
            return TOO_MANY
        edge = out.counts[1]
        out.edge_head[edge], out.edge_origin[edge], out.edge_grams[edge] = s, e, made
        for i in range(arity):
            out.tails[out.counts[2] + i] = scratch.combo[i]
        out.counts[1] += 1
        out.counts[2] += arity
        if not _advance(g, e, first, scratch):
            return DONE


@uncounted_jit  # see the note above :func:`_mix`
def _copy_edges(
    g: _Graph, rules: _Rules, first: np.ndarray, out: _Split, scratch: _Scratch, cursor: np.ndarray
) -> int:  # pragma: no cover - compiled
    """Copy the edges, nodes bottom-up, from ``cursor`` on (node, edge, 1 when the edge's odometer in
    ``scratch.combo`` is running) until done, ``out`` is full or ``max_nodes`` is passed (what it returns, as
    :func:`_copy_edge`). ``first[u]:first[u+1]`` are the split ids of node ``u``. Resumable: the caller grows
    ``out`` (an allocation, which needs reference counting) and calls again."""
    n = g.node_offsets.size - 1
    while cursor[0] < n:
        v = cursor[0]
        while cursor[1] < g.node_offsets[v + 1]:
            e = cursor[1]
            if not cursor[2]:
                for i in range(g.tail_offsets[e + 1] - g.tail_offsets[e]):
                    scratch.combo[i] = first[g.tails[g.tail_offsets[e] + i]]
                cursor[2] = 1
            status = _copy_edge(g, rules, e, v, first, out, scratch)
            if status != DONE:
                return status
            cursor[1] += 1
            cursor[2] = 0
        first[v + 1] = out.counts[0]
        cursor[0] += 1
    return DONE


@_jit
def _new_split(g: _Graph, rules: _Rules) -> tuple[_Split, _Scratch]:  # pragma: no cover - compiled
    """Empty outputs sized for a split graph about twice the input, and the work space for its edges."""
    n, edges = g.node_offsets.size - 1, g.target_offsets.size - 1
    width = WORDS + 2 * (rules.order - 1)
    lengths = g.target_offsets[1:] - g.target_offsets[:-1]
    arities = g.tail_offsets[1:] - g.tail_offsets[:-1]
    longest = (max(lengths.max(), 1) if edges else 1) * (2 * rules.order - 1)
    scratch = _Scratch(np.empty(longest, np.int64), np.empty(longest, np.int64), np.empty(width, np.int64),
                       np.empty(max(arities.max(), 1) if edges else 1, np.int64))  # fmt: skip
    nodes, cap = 2 * n + 16, 2 * edges + 16
    out = _Split(np.empty(nodes, np.int64), np.empty(nodes, np.int64), np.empty((nodes, width), np.int64),
                 np.full(16, -1, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64),
                 np.empty(2 * g.tails.size + 16, np.int64), np.empty((8 * cap, rules.order), np.int64),
                 np.zeros(5, np.int64))  # fmt: skip
    return out, scratch


@_jit
def _split_edges(g: _Graph, rules: _Rules) -> _Split:  # pragma: no cover - compiled
    """Copy every edge over every combination of its tails' states (see the module docstring), growing the
    outputs whenever they are full. ``counts[4]`` is set beyond ``max_nodes``."""
    out, scratch = _new_split(g, rules)
    first = np.zeros(g.node_offsets.size, np.int64)
    cursor = np.zeros(3, np.int64)
    status = _copy_edges(g, rules, first, out, scratch, cursor)
    while status == FULL:
        out = _reserve(out, first[cursor[0]], scratch.combo.size, scratch.word.size * rules.order)
        status = _copy_edges(g, rules, first, out, scratch, cursor)
    if status == TOO_MANY:
        out.counts[4] = 1
    return out


@_jit
def _by_head(head: np.ndarray, nodes: int) -> np.ndarray:  # pragma: no cover - compiled
    """The edges in order of their heads, ties in order of creation (a stable counting sort)."""
    start = np.zeros(nodes + 1, np.int64)
    for h in head:
        start[h + 1] += 1
    for v in range(nodes):
        start[v + 1] += start[v]
    order = np.empty(head.size, np.int64)
    for e in range(head.size):
        order[start[head[e]]] = e
        start[head[e]] += 1
    return order


@_jit
def _gather(g: _Graph, out: _Split, order: np.ndarray) -> tuple:  # pragma: no cover - compiled
    """The split edges' tails and n-grams taken in ``order``: tail offsets, tails, gram offsets, grams and
    gram orders of the split graph."""
    edges = order.size
    tail_from = np.empty(edges, np.int64)  # where each edge's tails and n-grams start, in order of creation
    gram_from = np.empty(edges, np.int64)
    t = q = 0
    for e in range(edges):
        tail_from[e], gram_from[e] = t, q
        t += g.tail_offsets[out.edge_origin[e] + 1] - g.tail_offsets[out.edge_origin[e]]
        q += out.edge_grams[e]
    tail_offsets = np.zeros(edges + 1, np.int64)
    gram_offsets = np.zeros(edges + 1, np.int64)
    tails = np.empty(t, np.int64)
    grams = np.empty((q, out.grams.shape[1]), np.int64)
    gram_orders = np.empty(q, np.int64)
    for i in range(edges):
        e = order[i]
        arity = g.tail_offsets[out.edge_origin[e] + 1] - g.tail_offsets[out.edge_origin[e]]
        tails[tail_offsets[i] : tail_offsets[i] + arity] = out.tails[tail_from[e] : tail_from[e] + arity]
        tail_offsets[i + 1] = tail_offsets[i] + arity
        at = gram_offsets[i]
        for j in range(out.edge_grams[e]):
            row = out.grams[gram_from[e] + j]
            grams[at + j] = row
            n = 0
            while n < row.size and row[n] >= 0:
                n += 1
            gram_orders[at + j] = n
        gram_offsets[i + 1] = at + out.edge_grams[e]
    return tail_offsets, tails, gram_offsets, grams, gram_orders


@_jit
def _gram_values(
    grams: np.ndarray, keys: np.ndarray, amounts: np.ndarray, default: float
) -> np.ndarray:  # pragma: no cover - compiled
    """For every n-gram row, the amount of the equal key row (``default`` when none); the keys go to a table of
    rows (:func:`_probe`)."""
    size = 16
    while size < 2 * keys.shape[0]:
        size *= 2
    slots = np.full(size, -1, np.int64)
    hashes = np.empty(keys.shape[0], np.int64)
    for i in range(keys.shape[0]):
        hashes[i] = _row_hash(keys[i])
        slots[_probe(slots, hashes, keys, keys[i], hashes[i])] = i
    out = np.empty(grams.shape[0])
    for q in range(grams.shape[0]):
        s = slots[_probe(slots, hashes, keys, grams[q], _row_hash(grams[q]))]
        out[q] = amounts[s] if s >= 0 else default
    return out


@_jit
def _edge_sums(offsets: np.ndarray, values: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """``sum(values[offsets[e]:offsets[e+1]])`` for every ``e``, left to right from 0.0."""
    out = np.zeros(offsets.size - 1)
    for e in range(out.size):
        for q in range(offsets[e], offsets[e + 1]):
            out[e] += values[q]
    return out


def _skip_mask(skip: Iterable[int], target: np.ndarray) -> np.ndarray:
    """``mask[w]``: word ``w`` is skipped, for every word id up to the largest in ``target``."""
    top = int(target.max()) if target.size else -1
    mask = np.zeros(max(top + 1, 0), dtype=np.bool_)
    mask[[w for w in (int(x) for x in skip) if 0 <= w <= top]] = True
    return mask


def intersect_ngrams(
    hg: Hypergraph, order: int, skip: Iterable[int] = (), max_nodes: int = 1_000_000
) -> NgramIntersection:
    """Split the nodes of ``hg`` by the first and last ``order - 1`` words of their yields (see the module
    docstring). ``skip``: word ids removed from every yield. Raises :class:`GraphError` beyond ``max_nodes``."""
    if order < 1:
        raise ValueError(f"order must be at least 1, got {order}")
    g = _Graph(hg.node_offsets, hg.tail_offsets, hg.tails, hg.target_offsets, hg.target)
    need_left, need_right = _needed_sides(g)
    bound = max(min(int(max_nodes), 2**62), -1)
    out = _split_edges(g, _Rules(int(order), _skip_mask(skip, hg.target), need_left, need_right, bound))
    if out.counts[4]:
        raise GraphError(f"the n-gram intersection has more than {max_nodes} nodes")
    nodes = int(out.counts[0])
    if nodes > 1 and out.node_origin[nodes - 2] == hg.goal:  # pragma: no cover - the goal never needs a side
        raise GraphError("internal error: the goal node split into several states")
    return _assemble(hg, order, g, out)


def _assemble(hg: Hypergraph, order: int, g: _Graph, out: _Split) -> NgramIntersection:
    """The split graph with its edges grouped by head (stable: split nodes are created in topological order)."""
    nodes, edges = int(out.counts[0]), int(out.counts[1])
    head = out.edge_head[:edges]
    by_head = _by_head(head, nodes)
    tail_offsets, tails, gram_offsets, grams, gram_orders = _gather(g, out, by_head)
    origin = out.edge_origin[by_head]
    target_lengths = np.diff(hg.target_offsets)[origin]
    graph = Hypergraph(
        num_nodes=nodes,
        head=head[by_head],
        tail_offsets=tail_offsets,
        tails=tails,
        features=hg.features[origin],
        target_offsets=offsets_from_counts(target_lengths),
        target=hg.target[flat_ranges(hg.target_offsets, origin)],
        feature_space=hg.feature_space,
        vocabulary=hg.vocabulary,
        node_labels=None,
        metadata=dict(hg.metadata),
        **hg.annotations(origin),
    )
    return NgramIntersection(
        graph=graph,
        order=order,
        edge_origin=origin,
        node_origin=out.node_origin[:nodes].copy(),
        node_states=out.node_state[:nodes].copy(),
        gram_offsets=gram_offsets,
        grams=grams,
        gram_orders=gram_orders,
    )
