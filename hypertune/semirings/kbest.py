"""The k-best semiring (Mohri 2002): values are the k best (score, derivation) pairs, best first.

``plus`` keeps the k best of the union; ``times`` the k best of all pairwise combinations (scores add).
The derivation half of a pair is built left to right exactly as the inside algorithm multiplies
``edge ⊗ tail_1 ⊗ tail_2 ...``: an edge's value holds ``Derivation(e)`` and each ``⊗`` attaches the
next tail's sub-derivation. Only the score half is a semiring in the algebraic sense; this eager
version is the textbook definition. :func:`hypertune.algorithms.kbest.kbest` computes the same lists
lazily (Huang & Chiang 2005, Algorithm 3) and is what to use on real graphs.
"""

from __future__ import annotations

import heapq
import math
from typing import Any

from hypertune.hypergraph import Derivation
from hypertune.semirings.base import Semiring

KBestValue = tuple[tuple[float, Derivation | None], ...]


class KBestSemiring(Semiring):
    commutative = False  # the derivation half is built in tail order

    def __init__(self, k: int) -> None:
        if k < 1:
            raise ValueError("k must be at least 1")
        self.k = k
        self.zero: KBestValue = ()
        self.one: KBestValue = ((0.0, None),)

    def plus(self, a: KBestValue, b: KBestValue) -> KBestValue:
        return tuple(heapq.merge(a, b, key=lambda item: -item[0]))[: self.k]

    def times(self, a: KBestValue, b: KBestValue) -> KBestValue:
        pairs = [(sa + sb, _attach(da, db)) for sa, da in a for sb, db in b]
        pairs.sort(key=lambda item: -item[0])
        return tuple(pairs[: self.k])

    def edge_value(self, edge: int, score: float) -> KBestValue:
        """The value of a single edge with model score ``score``."""
        return ((float(score), Derivation(edge)),)

    def equal(self, a: Any, b: Any, tolerance: float = 1e-9) -> bool:
        """Equal score lists (derivations may differ between ties)."""
        return len(a) == len(b) and all(
            math.isclose(x[0], y[0], rel_tol=tolerance, abs_tol=tolerance) for x, y in zip(a, b, strict=True)
        )

    def __repr__(self) -> str:
        return f"KBestSemiring(k={self.k})"


def _attach(left: Derivation | None, right: Derivation | None) -> Derivation | None:
    if left is None:
        return right
    if right is None:
        return left
    return Derivation(left.edge, (*left.children, right))
