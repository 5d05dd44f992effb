"""Expectation semirings (Eisner 2002; Li & Eisner 2009, Table 1).

First order, ``<p, r>`` with vector ``r``::

    <p1, r1> ⊕ <p2, r2> = <p1 + p2, r1 + r2>
    <p1, r1> ⊗ <p2, r2> = <p1 p2, p1 r2 + p2 r1>

With edge values ``<p_e, p_e r_e>`` the goal's inside value is ``<Z, Σ_d p(d) r(d)>``, so ``r/Z`` is the
expectation of the additive quantity ``r`` (features: the gradient of log Z; ``r_e = log p_e``: the
entropy, ``H = log Z - r/Z``).

Second order, ``<p, r, s, t>`` with vectors ``r``, ``s`` and matrix ``t`` (Li & Eisner 2009, Table 1)::

    ⊕ componentwise;
    ⊗: <p1 p2, p1 r2 + p2 r1, p1 s2 + p2 s1, p1 t2 + p2 t1 + r1 s2ᵀ + r2 s1ᵀ>

With edge values ``<p_e, p_e r_e, p_e s_e, p_e r_e s_eᵀ>`` the goal gets ``t = Σ_d p(d) r(d) s(d)ᵀ``:
second moments, hence covariances and Hessians (Li & Eisner 2009, Figure 4).

These are the textbook real-valued forms; on large graphs ``p`` overflows, and feature expectations
are computed from log-space edge posteriors instead (:mod:`hypertune.algorithms.posteriors`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hypertune.semirings.base import Semiring

FirstOrder = tuple[float, np.ndarray]
SecondOrder = tuple[float, np.ndarray, np.ndarray, np.ndarray]


class ExpectationSemiring(Semiring):
    """First-order expectation semiring over ``dim``-dimensional ``r``."""

    kernel = "expectation"

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)
        self.zero: FirstOrder = (0.0, np.zeros(self.dim))
        self.one: FirstOrder = (1.0, np.zeros(self.dim))

    def plus(self, a: FirstOrder, b: FirstOrder) -> FirstOrder:
        return (a[0] + b[0], a[1] + b[1])

    def times(self, a: FirstOrder, b: FirstOrder) -> FirstOrder:
        return (a[0] * b[0], a[0] * b[1] + b[0] * a[1])

    def equal(self, a: Any, b: Any, tolerance: float = 1e-9) -> bool:
        return bool(
            np.isclose(a[0], b[0], rtol=tolerance, atol=tolerance)
            and np.allclose(a[1], b[1], rtol=tolerance, atol=tolerance)
        )

    def edge_values(self, probabilities: np.ndarray, quantities: np.ndarray) -> ExpectationValues:
        """Edge values ``<p_e, p_e r_e>`` from ``p`` (E,) and ``r`` (E, dim) or (E,)."""
        p = np.asarray(probabilities, dtype=np.float64)
        r = np.asarray(quantities, dtype=np.float64).reshape(p.size, self.dim)
        return ExpectationValues(p, p[:, None] * r)

    def __repr__(self) -> str:
        return f"ExpectationSemiring(dim={self.dim})"


@dataclass(frozen=True)
class ExpectationValues:
    """Per-edge first-order values as two arrays, ``p`` (E,) and ``r`` (E, dim): indexable by edge for the
    generic algorithms, and handed whole to the compiled kernel."""

    p: np.ndarray
    r: np.ndarray

    def __getitem__(self, edge: int) -> FirstOrder:
        return (float(self.p[edge]), self.r[edge])

    def __len__(self) -> int:
        return int(self.p.size)


class SecondOrderExpectationSemiring(Semiring):
    """Second-order expectation semiring with ``r`` of size ``dim_r`` and ``s`` of size ``dim_s``."""

    def __init__(self, dim_r: int, dim_s: int) -> None:
        self.dim_r, self.dim_s = int(dim_r), int(dim_s)
        self.zero: SecondOrder = (0.0, np.zeros(dim_r), np.zeros(dim_s), np.zeros((dim_r, dim_s)))
        self.one: SecondOrder = (1.0, np.zeros(dim_r), np.zeros(dim_s), np.zeros((dim_r, dim_s)))

    def plus(self, a: SecondOrder, b: SecondOrder) -> SecondOrder:
        return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3])

    def times(self, a: SecondOrder, b: SecondOrder) -> SecondOrder:
        p1, r1, s1, t1 = a
        p2, r2, s2, t2 = b
        return (p1 * p2, p1 * r2 + p2 * r1, p1 * s2 + p2 * s1, p1 * t2 + p2 * t1 + np.outer(r1, s2) + np.outer(r2, s1))

    def equal(self, a: Any, b: Any, tolerance: float = 1e-9) -> bool:
        return all(np.allclose(x, y, rtol=tolerance, atol=tolerance) for x, y in zip(a, b, strict=True))

    def edge_value(self, p: float, r: np.ndarray, s: np.ndarray) -> SecondOrder:
        """``<p, p r, p s, p r sᵀ>`` for one edge."""
        r = np.asarray(r, dtype=np.float64)
        s = np.asarray(s, dtype=np.float64)
        return (p, p * r, p * s, p * np.outer(r, s))

    def __repr__(self) -> str:
        return f"SecondOrderExpectationSemiring(dim_r={self.dim_r}, dim_s={self.dim_s})"
