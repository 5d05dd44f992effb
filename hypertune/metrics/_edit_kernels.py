"""Compiled (numba) kernels of the edit-distance metrics: WER, PER, CDER and tercom's TER.

Every kernel works on word ids (small non-negative integers, one id per distinct word of a sentence). One
call scores many hypotheses, each against its group of references (:func:`edit_statistics`); the metric
classes in :mod:`hypertune.metrics.edit_rates` and :class:`~hypertune.metrics.sacrebleu_metrics.TerMetric`
turn strings into ids and call it once per sentence (``stats_many``) or once per corpus (``corpus_stats``).

TER here is sacrebleu's ``lib_ter`` (itself tercom's heuristic) step for step on ids: the same greedy
shift search (candidate order, the filters, the ranking of candidates, the caps ``MAX_SHIFT_SIZE``,
``MAX_SHIFT_DIST``, ``MAX_SHIFT_CANDIDATES``), the same beam-limited edit distance (``BEAM_WIDTH`` around
the length-ratio diagonal, the full last row) and the same tie-breaking of its trace (match or
substitution, then deletion, then insertion), so that its edit counts equal sacrebleu's to the last digit.
sacrebleu's prefix cache of edit-distance rows only saves work (every hypothesis of one search has the
same length, so a cached row is the row that would be computed); here a shifted candidate reuses the rows
of the unshifted words up to the first position the shift changes, and its distance stops early once it
cannot reach the best candidate's gain (candidates are ranked by gain first, so the choice is unchanged).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

import hypertune.numba_cache  # noqa: F401  # first: the kernels' cache stamps cover the whole package

WER, PER, CDER, TER = 0, 1, 2, 3
"""Kernel codes of :func:`edit_statistics`."""

# sacrebleu.metrics.lib_ter's limits (tercom's, and sacrebleu's own cap on candidates)
MAX_SHIFT_SIZE = 10
MAX_SHIFT_DIST = 50
BEAM_WIDTH = 25
MAX_SHIFT_CANDIDATES = 1000
_INF = 10**16  # lib_ter's _INT_INFINITY

# edit operations of a beam trace, as lib_ter records them (rewriting the hypothesis into the reference)
_NOP, _SUB, _INS, _DEL, _UNDEF = 0, 1, 2, 3, 4

_jit = numba.njit(cache=True, nogil=True)


@_jit
def levenshtein(hyp, ref, row):  # pragma: no cover - compiled
    """Word edit distance (Levenshtein 1966): insertions, deletions and substitutions, cost 1 each. ``row``:
    scratch of at least ``len(ref) + 1`` int64."""
    n_r = ref.size
    for j in range(n_r + 1):
        row[j] = j
    for i in range(1, hyp.size + 1):
        diagonal = row[0]
        row[0] = i
        word = hyp[i - 1]
        for j in range(1, n_r + 1):
            best = diagonal + (0 if word == ref[j - 1] else 1)
            above = row[j] + 1
            if above < best:
                best = above
            left = row[j - 1] + 1
            if left < best:
                best = left
            diagonal = row[j]
            row[j] = best
    return row[n_r]


@_jit
def position_independent(hyp, ref, counts):  # pragma: no cover - compiled
    """PER's errors (Tillmann et al. 1997): ``max(|hyp|, |ref|)`` minus the words the two bags share (each
    reference word matches at most once). ``counts``: zeros, one per word id; left zero."""
    for word in ref:
        counts[word] += 1
    matches = 0
    for word in hyp:
        if counts[word] > 0:
            counts[word] -= 1
            matches += 1
    for word in ref:
        counts[word] = 0
    return max(hyp.size, ref.size) - matches


@_jit
def cover_disjoint(hyp, ref, row, following):  # pragma: no cover - compiled
    """CDER's distance (Leusch, Ueffing & Ney 2006, sec. 3): the cheapest path from ``(0, 0)`` to
    ``(|hyp|, |ref|)`` of the grid ``D(i, l)`` (``i`` hypothesis, ``l`` reference positions) with

    ``D(i, l) = min{D(i-1, l-1) + [e_i != r_l], D(i-1, l) + 1, D(i, l-1) + 1, min_i' D(i', l) + 1}``:

    match/substitution, deletion of a hypothesis word, a reference word left uncovered, and a long jump
    to any hypothesis position at the same reference position (every reference word is covered once,
    hypothesis words any number of times). Row by row over the reference, the long jump is one
    ``1 + min`` over the row; row 0 has its jumps too (``D(i, 0) = 1`` for ``i > 0``), as Moses's
    ``CderScorer``. ``row``, ``following``: scratch of at least ``len(hyp) + 1`` int64."""
    n_h = hyp.size
    row[0] = 0
    for i in range(1, n_h + 1):
        row[i] = 1
    for position in range(ref.size):
        word = ref[position]
        following[0] = row[0] + 1
        lowest = following[0]
        for i in range(1, n_h + 1):
            best = row[i - 1] + (0 if hyp[i - 1] == word else 1)
            skip = following[i - 1] + 1
            if skip < best:
                best = skip
            uncovered = row[i] + 1
            if uncovered < best:
                best = uncovered
            following[i] = best
            if best < lowest:
                lowest = best
        jump = lowest + 1
        for i in range(n_h + 1):
            row[i] = jump if jump < following[i] else following[i]
    return row[n_h]


@_jit
def _beam_rows(words, ref, cost, ops, ratio, beam):  # pragma: no cover - compiled
    """lib_ter's ``BeamEditDistance._edit_distance``: the beam-limited edit distance (row 0 filled; cells
    outside the beam stay ``_INF``), each cell's operation in ``ops``. Returns the distance."""
    n_h = words.size
    n_r = ref.size
    for i in range(1, n_h + 1):
        diagonal = int(math.floor(i * ratio))
        low = max(0, diagonal - beam)
        high = n_r + 1 if i == n_h else min(n_r + 1, diagonal + beam)
        word = words[i - 1]
        for j in range(low, high):
            if j == 0:
                best = cost[i - 1, 0] + 1
                op = _DEL
            else:
                best = _INF
                op = _UNDEF
                same = word == ref[j - 1]
                candidate = cost[i - 1, j - 1] + (0 if same else 1)
                if best > candidate:
                    best = candidate
                    op = _NOP if same else _SUB
                candidate = cost[i - 1, j] + 1
                if best > candidate:
                    best = candidate
                    op = _DEL
                candidate = cost[i, j - 1] + 1
                if best > candidate:
                    best = candidate
                    op = _INS
            cost[i, j] = best
            ops[i, j] = op
    return cost[n_h, n_r]


@_jit
def _beam_costs(words, ref, cost, first, ratio, beam, limit):  # pragma: no cover - compiled
    """:func:`_beam_rows` without the operations: the distance alone, each cell the least of ``_INF`` and its
    three moves (the value :func:`_beam_rows` keeps, whichever move it records). Stops early with a value
    above ``limit`` once a row shows the distance will be: every path crosses each row, and from cell
    ``(i, j)`` on it costs at least the difference of the lengths left."""
    n_h = words.size
    n_r = ref.size
    for i in range(first + 1, n_h + 1):
        diagonal = int(math.floor(i * ratio))
        low = max(0, diagonal - beam)
        high = n_r + 1 if i == n_h else min(n_r + 1, diagonal + beam)
        word = words[i - 1]
        start = low
        bound = _INF
        if low == 0:
            cost[i, 0] = cost[i - 1, 0] + 1
            bound = cost[i, 0] + abs(n_h - i - n_r)
            start = 1
        left = cost[i, start - 1]
        for j in range(start, high):
            best = min(_INF, cost[i - 1, j - 1] + (0 if word == ref[j - 1] else 1), cost[i - 1, j] + 1, left + 1)
            cost[i, j] = best
            left = best
            bound = min(bound, best + abs(n_h - i - n_r + j))
        if bound > limit:
            return bound
    return cost[n_h, n_r]


@_jit
def _alignment(ops, n_h, n_r, trace, align, hyp_err, ref_err):  # pragma: no cover - compiled
    """lib_ter's trace, flipped, through ``trace_to_alignment``: ``align[r]`` the hypothesis position of
    reference word ``r`` (``-1`` before the first), ``hyp_err``/``ref_err`` 1 where a word is not matched."""
    i = n_h
    j = n_r
    k = 0
    while i > 0 or j > 0:
        op = ops[i, j]
        trace[k] = op
        k += 1
        if op == _NOP or op == _SUB:
            i -= 1
            j -= 1
        elif op == _INS:
            j -= 1
        elif op == _DEL:
            i -= 1
        else:
            raise ValueError("TER: the beam left the edit-distance trace undefined")
    pos_h = -1
    pos_r = -1
    for t in range(k - 1, -1, -1):
        op = trace[t]
        if op == _NOP or op == _SUB:
            pos_h += 1
            pos_r += 1
            align[pos_r] = pos_h
            error = 1 if op == _SUB else 0
            hyp_err[pos_h] = error
            ref_err[pos_r] = error
        elif op == _DEL:  # flipped: an insertion into the hypothesis
            pos_h += 1
            hyp_err[pos_h] = 1
        else:  # _INS, flipped: a deletion from the reference
            pos_r += 1
            align[pos_r] = pos_h
            ref_err[pos_r] = 1


@_jit
def _copy(words, low, high, out, at):  # pragma: no cover - compiled
    """``out[at:at + high - low] = words[low:high]``; returns the position after."""
    for k in range(low, high):
        out[at] = words[k]
        at += 1
    return at


@_jit
def _perform_shift(words, start, length, target, out):  # pragma: no cover - compiled
    """lib_ter's ``_perform_shift`` (its three cases, the third one's clipping included) into ``out``."""
    n = words.size
    end = start + length
    if target < start:
        at = _copy(words, 0, target, out, 0)
        at = _copy(words, start, end, out, at)
        at = _copy(words, target, start, out, at)
        _copy(words, end, n, out, at)
    elif target > end:
        at = _copy(words, 0, start, out, 0)
        at = _copy(words, end, target, out, at)
        at = _copy(words, start, end, out, at)
        _copy(words, target, n, out, at)
    else:
        stop = min(length + target, n)
        at = _copy(words, 0, start, out, 0)
        at = _copy(words, end, stop, out, at)
        at = _copy(words, start, end, out, at)
        _copy(words, stop, n, out, at)


class _Search(NamedTuple):
    """The state of one TER search: the reference, the beam's geometry, the edit-distance grids of the
    current words (``cost``, ``ops``) and of a shifted candidate (``scratch``), the alignment of the current
    words (prefix sums of their errors) and a buffer for a shifted copy."""

    ref: np.ndarray
    ratio: float
    beam: int
    cost: np.ndarray
    ops: np.ndarray
    scratch: np.ndarray
    align: np.ndarray
    hyp_sum: np.ndarray
    ref_sum: np.ndarray
    shifted: np.ndarray


@_jit
def _outranks(delta, length, start, target, best_delta, best_length, best_start, best_target):  # pragma: no cover
    """lib_ter's ranking of shift candidates: larger gain, then longer block, then earlier start, then earlier
    target (its tuple comparison; equal keys are the same shift)."""
    if delta != best_delta:
        return delta > best_delta
    if length != best_length:
        return length > best_length
    if start != best_start:
        return start < best_start
    return target < best_target


@_jit
def _pair_candidates(words, search, distance, start_h, start_r, length, best, checked):  # pragma: no cover
    """The targets lib_ter's ``_shift`` tries for the block ``words[start_h:start_h + length]`` matching the
    reference at ``start_r``: each candidate's gain in edit distance, ranked into ``best`` (``found, delta,
    length, start, target``). Returns the new best and the number of candidates checked."""
    previous = -1
    for offset in range(-1, length):
        target = 0 if start_r + offset == -1 else search.align[start_r + offset] + 1
        if target == previous:
            continue
        previous = target
        _perform_shift(words, start_h, length, target, search.shifted)
        first = min(start_h, target)  # the rows up to here are the unshifted words'
        for j in range(search.ref.size + 1):
            search.scratch[first, j] = search.cost[first, j]
        # a candidate that cannot reach the best one's gain needs no exact distance
        limit = distance - best[1] if best[0] else 2 * _INF
        after = _beam_costs(search.shifted, search.ref, search.scratch, first, search.ratio, search.beam, limit)
        delta = distance - after
        checked += 1
        if not best[0] or _outranks(delta, length, start_h, target, best[1], best[2], best[3], best[4]):
            best = (True, delta, length, start_h, target)
    return best, checked


@_jit
def _best_shift(words, search, distance, checked):  # pragma: no cover - compiled
    """lib_ter's ``_shift`` after the alignment: the pairs of ``_find_shifted_pairs`` in its order, its three
    filters, stopping once ``MAX_SHIFT_CANDIDATES`` candidates were checked. Returns the best candidate
    (``found, delta, length, start, target``) and the count."""
    ref = search.ref
    n_h = words.size
    n_r = ref.size
    best = (False, 0, 0, 0, 0)
    for start_h in range(n_h):
        for start_r in range(n_r):
            if abs(start_r - start_h) > MAX_SHIFT_DIST:
                continue
            length = 0
            while length < MAX_SHIFT_SIZE and words[start_h + length] == ref[start_r + length]:
                length += 1
                wrong_here = search.hyp_sum[start_h + length] != search.hyp_sum[start_h]
                wrong_there = search.ref_sum[start_r + length] != search.ref_sum[start_r]
                inside = start_h <= search.align[start_r] < start_h + length
                if wrong_here and wrong_there and not inside:
                    best, checked = _pair_candidates(words, search, distance, start_h, start_r, length, best, checked)
                    if checked >= MAX_SHIFT_CANDIDATES:
                        return best, checked
                if n_h == start_h + length or n_r == start_r + length:
                    break
    return best, checked


@_jit
def translation_edit_rate(hyp, ref):  # pragma: no cover - compiled
    """TER's edits (Snover et al. 2006) of one hypothesis against one reference, as sacrebleu's
    ``lib_ter.translation_edit_rate``: greedy shifts while one lowers the beam edit distance, then shifts +
    the distance; ``len(hyp)`` against an empty reference."""
    n_h = hyp.size
    n_r = ref.size
    if n_r == 0:
        return n_h
    ratio = n_r / n_h if n_h > 0 else 1.0
    beam = BEAM_WIDTH
    if BEAM_WIDTH < ratio / 2:
        beam = int(math.ceil(ratio / 2 + BEAM_WIDTH))
    search = _Search(
        ref,
        ratio,
        beam,
        np.full((n_h + 1, n_r + 1), _INF, dtype=np.int64),
        np.full((n_h + 1, n_r + 1), _UNDEF, dtype=np.int8),
        np.full((n_h + 1, n_r + 1), _INF, dtype=np.int64),
        np.empty(n_r, dtype=np.int64),
        np.zeros(n_h + 1, dtype=np.int64),
        np.zeros(n_r + 1, dtype=np.int64),
        np.empty(n_h, dtype=hyp.dtype),
    )
    for j in range(n_r + 1):
        search.cost[0, j] = j
        search.scratch[0, j] = j
        search.ops[0, j] = _INS
    words = hyp.copy()
    trace = np.empty(n_h + n_r, dtype=np.int8)
    hyp_err = np.zeros(n_h, dtype=np.int64)
    ref_err = np.zeros(n_r, dtype=np.int64)
    checked = 0
    shifts = 0
    while True:  # lib_ter's translation_edit_rate; each pass is one _shift
        distance = _beam_rows(words, ref, search.cost, search.ops, ratio, beam)
        _alignment(search.ops, n_h, n_r, trace, search.align, hyp_err, ref_err)
        for i in range(n_h):
            search.hyp_sum[i + 1] = search.hyp_sum[i] + hyp_err[i]
        for j in range(n_r):
            search.ref_sum[j + 1] = search.ref_sum[j] + ref_err[j]
        best, checked = _best_shift(words, search, distance, checked)
        if checked >= MAX_SHIFT_CANDIDATES or not best[0] or best[1] <= 0:
            return shifts + distance
        shifts += 1
        _perform_shift(words, best[3], best[2], best[4], search.shifted)
        _copy(search.shifted, 0, n_h, words, 0)


@_jit
def edit_statistics(
    kind, hyp_tokens, hyp_offsets, hyp_groups, ref_tokens, ref_offsets, group_offsets, n_words
):  # pragma: no cover - compiled
    """``[edits, reference length]`` of every hypothesis: hypothesis ``h`` is
    ``hyp_tokens[hyp_offsets[h]:hyp_offsets[h+1]]``, scored against the references of group
    ``g = hyp_groups[h]``, references ``group_offsets[g] .. group_offsets[g+1] - 1``, reference ``r`` being
    ``ref_tokens[ref_offsets[r]:ref_offsets[r+1]]``. Edits: the fewest over the references (by ``kind``:
    :data:`WER`, :data:`PER`, :data:`CDER`, :data:`TER`); length: the references' mean length. Word ids are
    below ``n_words``; every group has a reference."""
    n = hyp_offsets.size - 1
    out = np.zeros((n, 2))
    longest_ref = 0
    for r in range(ref_offsets.size - 1):
        longest_ref = max(longest_ref, ref_offsets[r + 1] - ref_offsets[r])
    longest_hyp = 0
    for h in range(n):
        longest_hyp = max(longest_hyp, hyp_offsets[h + 1] - hyp_offsets[h])
    row = np.empty(max(longest_ref, longest_hyp) + 1, dtype=np.int64)
    following = np.empty(longest_hyp + 1, dtype=np.int64)
    counts = np.zeros(n_words, dtype=np.int64)
    for h in range(n):
        hyp = hyp_tokens[hyp_offsets[h] : hyp_offsets[h + 1]]
        group = hyp_groups[h]
        best = _INF
        total = 0
        for r in range(group_offsets[group], group_offsets[group + 1]):
            ref = ref_tokens[ref_offsets[r] : ref_offsets[r + 1]]
            if kind == WER:
                edits = levenshtein(hyp, ref, row)
            elif kind == PER:
                edits = position_independent(hyp, ref, counts)
            elif kind == CDER:
                edits = cover_disjoint(hyp, ref, row, following)
            else:
                edits = translation_edit_rate(hyp, ref)
            if edits < best:
                best = edits
            total += ref.size
        out[h, 0] = best
        out[h, 1] = total / (group_offsets[group + 1] - group_offsets[group])
    return out
