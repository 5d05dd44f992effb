"""The envelope (convex-hull) semiring for exact MERT line search (Dyer 2013; Macherey et al. 2008;
Kumar et al. 2009).

Along a line ``w(γ) = w0 + γ·d`` a derivation with features ``h`` scores ``a + γ·b`` with intercept
``a = w0·h`` and slope ``b = d·h`` (Neubig & Watanabe 2016, eq. 40). A value is an **upper envelope**: the
lines that are best for some γ, sorted by slope, each with its left breakpoint (the first has ``-inf``) and
a back-pointer to its derivation.

* ``plus`` = the upper envelope of the union (a sweep over lines sorted by slope; parallel lines keep
  the larger intercept),
* ``times`` = the Minkowski sum: merge the two breakpoint lists and add the lines that are active on
  each piece (with a single-line operand, it only shifts every line),
* ``zero`` = the empty envelope, ``one`` = the single line ``0 + 0γ``.

On a k-best list (one edge per hypothesis into the goal) the inside value of the goal is exactly Och's
(2003) sweep over the hypotheses. The derivation half of each line is built left to right as in
:class:`~hypertune.semirings.KBestSemiring`. The compiled kernel with the same result is
:func:`hypertune.algorithms.envelope.envelope_inside`.

The lines themselves commute (a Minkowski sum does not depend on the order of its operands); only the
derivation trees, built in tail order, do not. :class:`CommutativeEnvelopeSemiring` keeps each line's edges
as a multiset instead, so that outside runs: a line of α(v) holds the edges of the goal's derivation outside
``v``, and a line of β(v) ⊗ α(v) the edges of a whole derivation through ``v``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

from hypertune.hypergraph import Derivation
from hypertune.semirings.base import Semiring
from hypertune.semirings.kbest import _attach


class Line(NamedTuple):
    """``intercept + γ·slope``, the best line from ``left`` (its left breakpoint) to the next line's."""

    left: float
    slope: float
    intercept: float
    derivation: Derivation | EdgeBag | None = None


EdgeBag = tuple[int, ...]
"""The edges of a derivation (or of the part of one outside a node) as a sorted tuple, repeats kept."""

Envelope = tuple[Line, ...]


def upper_envelope(lines: Iterable[Line]) -> Envelope:
    """The lines that are maximal for some γ, by increasing slope, with their left breakpoints."""
    hull: list[Line] = []
    for line in sorted(lines, key=lambda item: (item.slope, item.intercept)):
        if hull and hull[-1].slope == line.slope:
            hull.pop()  # parallel: the later one has the larger (or equal) intercept
        left = -math.inf
        while hull:
            last = hull[-1]
            left = (last.intercept - line.intercept) / (line.slope - last.slope)
            if left <= last.left:
                hull.pop()  # the new line is above ``last`` wherever ``last`` was best
                left = -math.inf
            else:
                break
        hull.append(Line(left, line.slope, line.intercept, line.derivation))
    return tuple(hull)


class EnvelopeSemiring(Semiring):
    """Upper envelopes of lines in γ (see the module docstring)."""

    commutative = False  # the derivation half is built in tail order
    idempotent = True
    zero: Envelope = ()
    one: Envelope = (Line(-math.inf, 0.0, 0.0, None),)

    def plus(self, a: Envelope, b: Envelope) -> Envelope:
        if not a:
            return b
        if not b:
            return a
        return upper_envelope((*a, *b))

    def times(self, a: Envelope, b: Envelope) -> Envelope:
        if not a or not b:
            return ()
        out = []
        i = j = 0
        left = -math.inf
        while True:
            x, y = a[i], b[j]
            out.append(Line(left, x.slope + y.slope, x.intercept + y.intercept, self.join(x.derivation, y.derivation)))
            next_a = a[i + 1].left if i + 1 < len(a) else math.inf
            next_b = b[j + 1].left if j + 1 < len(b) else math.inf
            if next_a == math.inf and next_b == math.inf:
                # exact arithmetic keeps slopes increasing; rounding can make neighbours parallel
                if any(x.slope >= y.slope for x, y in zip(out, out[1:], strict=False)):
                    return upper_envelope(out)
                return tuple(out)
            left = min(next_a, next_b)
            i += next_a == left
            j += next_b == left

    def join(self, left: Any, right: Any) -> Any:
        """The derivation of a sum of two lines: ``right`` attached as the next tail of ``left``'s tree."""
        return _attach(left, right)

    def edge_value(self, edge: int, intercept: float, slope: float) -> Envelope:
        """The single line of edge ``edge``: ``w0·f_e + γ·d·f_e``."""
        return (Line(-math.inf, float(slope), float(intercept), Derivation(edge)),)

    def equal(self, a: Any, b: Any, tolerance: float = 1e-9) -> bool:
        """Same lines and breakpoints (up to rounding); derivations are not compared."""
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            for u, v in ((x.left, y.left), (x.slope, y.slope), (x.intercept, y.intercept)):
                if not (u == v or math.isclose(u, v, rel_tol=tolerance, abs_tol=tolerance)):
                    return False
        return True


class CommutativeEnvelopeSemiring(EnvelopeSemiring):
    """The envelope semiring with each line's derivation kept as its multiset of edges (an :data:`EdgeBag`).
    The union of multisets commutes, as the Minkowski sum of the lines does, so ⊗ is commutative and
    outside runs (Goodman 1999); the lines are exactly :class:`EnvelopeSemiring`'s."""

    commutative = True

    def join(self, left: Any, right: Any) -> Any:
        if left is None:
            return right
        if right is None:
            return left
        return tuple(sorted((*left, *right)))

    def edge_value(self, edge: int, intercept: float, slope: float) -> Envelope:
        return (Line(-math.inf, float(slope), float(intercept), (int(edge),)),)
