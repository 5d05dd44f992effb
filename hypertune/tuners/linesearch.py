"""Exact corpus-level line search for MERT (Och 2003, section 6; Macherey et al. 2008, section 3).

Along ``w(γ) = w0 + γ·d`` each sentence's model-best derivation changes only at the breakpoints of its
upper envelope. A sentence's **error surface** is its breakpoints and the metric statistics of the
derivation on each segment. All sentences' breakpoints are merged with one sort; a cumulative sum of the
changes in statistics gives the corpus statistics on every interval of γ, and the metric scores them
all at once (vectorized). Conventions (tested):

* Intervals are ``(-inf, x1), [x1, x2), ..., [xK, inf)``; equal breakpoints of different sentences are
  one breakpoint.
* The chosen γ is the midpoint of the best interval, clipped to the allowed range (from bounds). An
  interval unbounded on one side is treated as if it were as wide as its bounded neighbour (or 1 wide
  if there is none), and γ is that pseudo-interval's midpoint: half a neighbour-width past its end.
* Ties between equally good intervals go to the one nearest γ = 0 (the current weights), then to the
  left: MERT does not move without a strict improvement.
* With ``plateau="average"`` or ``"minimum"`` and ``window=k`` an interval is scored by the mean or
  minimum over itself and its k neighbours on each side (Cer et al. 2008's regularization), and the
  reported score is still the interval's own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numba
import numpy as np

from hypertune.choices import Plateau
from hypertune.compiled import callee_jit


@dataclass(frozen=True)
class ErrorSurfaces:
    """Many sentences' error surfaces in flat arrays: ``initial`` is the corpus statistics left of every
    breakpoint (γ → -inf); at ``breakpoints[i]`` the statistics change by ``deltas[i]``."""

    initial: np.ndarray
    breakpoints: np.ndarray
    deltas: np.ndarray
    sizes: np.ndarray  # envelope segments of every sentence
    firsts: np.ndarray | None = None  # every sentence's statistics left of its breakpoints (``initial``'s rows)

    @property
    def segments(self) -> int:
        return int(self.sizes.sum())

    @classmethod
    def from_segments(cls, segment_offsets: np.ndarray, left: np.ndarray, stats: np.ndarray) -> ErrorSurfaces:
        """From per-sentence segments (``segment_offsets``), their left breakpoints and statistics rows."""
        first = segment_offsets[:-1]
        is_first = np.zeros(left.size, dtype=bool)
        is_first[first] = True
        later = np.flatnonzero(~is_first)
        deltas = stats[later] - stats[later - 1]
        firsts = stats[first]
        return cls(firsts.sum(axis=0), left[later], deltas, np.diff(segment_offsets), firsts)

    @classmethod
    def merge(cls, parts: Sequence[ErrorSurfaces]) -> ErrorSurfaces:
        """The error surfaces of consecutive runs of sentences (shards, in sentence order) as one: breakpoints,
        changes and sizes concatenated, ``initial`` summed over the sentences' rows in sentence order. Every
        array is then the one :meth:`from_segments` builds for the whole corpus, so the line search's result is
        the single-process one bit for bit, whatever the shards (the parts must carry ``firsts``)."""
        if len(parts) == 1:
            return parts[0]
        rows = [p.firsts for p in parts if p.firsts is not None]
        if len(rows) < len(parts):
            raise ValueError("merging error surfaces needs every part's per-sentence rows (firsts)")
        firsts = np.vstack(rows)
        return cls(
            firsts.sum(axis=0),
            np.concatenate([p.breakpoints for p in parts]),
            np.vstack([p.deltas for p in parts]),
            np.concatenate([p.sizes for p in parts]),
            firsts,
        )

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays (what a shard sends for one line search)."""
        arrays = (self.initial, self.breakpoints, self.deltas, self.sizes, self.firsts)
        return sum(a.nbytes for a in arrays if a is not None)


@dataclass(frozen=True)
class LineSearchResult:
    gamma: float
    score: float
    interval: tuple[float, float]
    breakpoints: int
    segments: int
    score_at_zero: float


def line_search(
    surfaces: ErrorSurfaces,
    score: Callable[[np.ndarray], float | np.ndarray],
    higher_is_better: bool = True,
    low: float = -math.inf,
    high: float = math.inf,
    plateau: Plateau = "none",
    window: int = 1,
) -> LineSearchResult:
    """The best γ in ``[low, high]`` for the corpus metric ``score`` (vectorized over rows of statistics)."""
    if low > high:
        raise ValueError(f"empty range for the step: [{low}, {high}]")
    points, stats = corpus_statistics(surfaces)
    scores = np.atleast_1d(np.asarray(score(stats), dtype=np.float64))
    starts = np.concatenate(([-math.inf], points))
    ends = np.concatenate((points, [math.inf]))
    lo, hi = np.maximum(starts, low), np.minimum(ends, high)
    valid = (starts <= low) & (low < ends) if low == high else lo < hi
    objective = scores if higher_is_better else -scores
    objective = np.where(valid, objective, -math.inf)
    if plateau != "none" and window > 0:
        objective = _plateau(objective, valid, plateau, window)
    best_value = objective.max()
    candidates = np.flatnonzero(objective == best_value)
    distance = np.where(
        (lo[candidates] <= 0) & (0 <= hi[candidates]), 0.0, np.minimum(np.abs(lo[candidates]), np.abs(hi[candidates]))
    )
    best = int(candidates[np.argmin(distance)])
    gamma = _inside_point(best, lo, hi, starts, ends)
    zero = int(np.searchsorted(points, 0.0, side="right"))
    return LineSearchResult(
        gamma,
        float(scores[best]),
        (float(starts[best]), float(ends[best])),
        int(points.size),
        surfaces.segments,
        float(scores[zero]),
    )


def corpus_statistics(surfaces: ErrorSurfaces) -> tuple[np.ndarray, np.ndarray]:
    """The corpus error surface: the distinct breakpoints ``points`` (ascending) and the corpus statistics
    on each of the intervals ``(-inf, points[0]), [points[0], points[1]), ..., [points[-1], inf)``: ``initial``
    plus the running sum of the changes in breakpoint order (Och 2003, section 6; stable order on equal
    breakpoints, NaN last). Compiled; the same sums, in the same order, as ``initial + np.cumsum(deltas[
    np.argsort(breakpoints, kind="stable")], axis=0)`` taken at the last breakpoint of each group."""
    initial = np.ascontiguousarray(surfaces.initial, dtype=np.float64)
    deltas = np.ascontiguousarray(surfaces.deltas, dtype=np.float64).reshape(-1, initial.size)
    return _merge_kernel(initial, np.ascontiguousarray(surfaces.breakpoints, dtype=np.float64), deltas)


@numba.njit(cache=True, nogil=True)
def _merge_kernel(initial, breakpoints, deltas):  # pragma: no cover - compiled
    order = _stable_order(breakpoints)
    size, width = order.size, initial.size
    points = np.empty(size)
    stats = np.empty((size + 1, width))
    for j in range(width):  # loops, not row copies: their shape checks' messages cost a second to compile
        stats[0, j] = initial[j]
    running = np.empty(width)
    groups = 0
    for i in range(size):
        d = order[i]
        for j in range(width):  # NumPy's cumsum: the first row as it is, then one addition per row
            running[j] = deltas[d, j] if i == 0 else running[j] + deltas[d, j]
        x = breakpoints[d]
        if i + 1 == size or breakpoints[order[i + 1]] != x:
            points[groups] = x
            groups += 1
            for j in range(width):
                stats[groups, j] = initial[j] + running[j]
    return points[:groups], stats[: groups + 1]


@callee_jit
def _stable_order(values):  # pragma: no cover - compiled
    """``np.argsort(values, kind="stable")``: ascending, equal values (``-0.0 == 0.0``) in index order, NaN
    last; by a least-significant-digit radix sort of the IEEE 754 bits made order-preserving (negatives
    inverted, positives' sign bit set), a byte a pass, skipping bytes that all keys share. Linear time,
    several times faster than a comparison sort on a line search's breakpoints."""
    n = values.size
    clean = np.empty(n)
    for i in range(n):
        clean[i] = 0.0 if values[i] == 0.0 else values[i]  # -0.0 sorts as 0.0
    bits = clean.view(np.uint64)
    sign = np.uint64(1) << np.uint64(63)
    keys = np.empty(n, np.uint64)
    for i in range(n):
        if clean[i] != clean[i]:
            keys[i] = np.uint64(0xFFFFFFFFFFFFFFFF)  # every NaN after +inf, NaNs in index order
        elif bits[i] & sign:
            keys[i] = ~bits[i]
        else:
            keys[i] = bits[i] | sign
    order, other = np.empty(n, np.int64), np.empty(n, np.int64)
    for i in range(n):
        order[i] = i
    count = np.empty(257, np.int64)
    for byte in range(8):
        shift = np.uint64(8 * byte)
        for b in range(257):
            count[b] = 0
        for i in range(n):
            count[np.int64((keys[i] >> shift) & np.uint64(255)) + 1] += 1
        shared = False
        for b in range(1, 257):
            shared = shared or count[b] == n
        if shared:
            continue
        for b in range(256):
            count[b + 1] += count[b]
        for i in range(n):
            j = order[i]
            b = np.int64((keys[j] >> shift) & np.uint64(255))
            other[count[b]] = j
            count[b] += 1
        order, other = other, order
    return order


def _plateau(objective: np.ndarray, valid: np.ndarray, mode: Plateau, window: int) -> np.ndarray:
    """Each valid interval's objective replaced by the mean or minimum over its window of valid neighbours."""
    index = np.flatnonzero(valid)
    values = objective[index]
    out = np.full_like(objective, -math.inf)
    padded = np.concatenate((np.full(window, np.nan), values, np.full(window, np.nan)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, 2 * window + 1)
    out[index] = np.nanmean(windows, axis=1) if mode == "average" else np.nanmin(windows, axis=1)
    return out


def _inside_point(i: int, lo: np.ndarray, hi: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> float:
    a, b = float(lo[i]), float(hi[i])
    if math.isfinite(a) and math.isfinite(b):
        return (a + b) / 2
    neighbour = i + 1 if math.isinf(a) else i - 1
    width = 1.0
    if 0 <= neighbour < len(starts) and math.isfinite(starts[neighbour]) and math.isfinite(ends[neighbour]):
        width = float(ends[neighbour] - starts[neighbour]) or 1.0
    if math.isinf(a) and math.isinf(b):
        return 0.0
    return b - width / 2 if math.isinf(a) else a + width / 2
