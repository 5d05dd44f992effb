"""Tillmann & Zhang's cost-margin update in its three readings, shared by the online loss ``costmargin``
(:mod:`hypertune.tuners.online`) and the relevant-set tuner (:mod:`hypertune.tuners.relevant_set`).

For a truth ``z`` (gain ``b``, score ``s = w·F(z)``) and alternatives ``z'`` (``b'``, ``s'``), with the cost
``Δ = α(b − b')`` and the margin ``m = s − s'`` (``y = F(z) − F(z')``, ``m = w·y``), the paper
(Tillmann & Zhang, *An Online Relevant Set Algorithm for Statistical Machine Translation*) gives:

``eq7``    eq. 4's loss ``ψ = Δ·(1 − m)₊²`` (the squared hinge that eq. 7 differentiates), the alternative of
           largest ψ (eq. 6), and eq. 7's step ``w += η·Δ·(1 − m)₊·y`` (the gradient's factor 2 is in η, as in
           eq. 7);
``table2`` Table II's printed update: the alternative of *smallest* ``l = Δ·(1 − m)`` (section IV's
           ``l(z', z) = −(Bl(z') − Bl(z))·(s(z') − s(z) − 1)``), i.e. the least violating one, and
           ``w += η·Δ·y`` with no hinge factor (a step is taken whatever the margin);
``hinge``  the plain cost-weighted hinge ``ψ = Δ·(1 − m)₊``, the alternative of largest ψ and the subgradient
           step ``w += η·Δ·y`` while ψ > 0 (hypertune's reading before issue #32).

:func:`costmargin_choice` applies one reading to every truth at once.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hypertune.errors import UsageError

#: The readings, the first the default (docs/tuners.md says why).
READINGS = ("eq7", "table2", "hinge")


class Choice(NamedTuple):
    """Per truth: the chosen alternative (a column index), the step's coefficient ``c`` of ``y`` (0: no step),
    and the loss value at the chosen pair (``table2``'s ``l`` may be negative)."""

    alternative: np.ndarray
    coefficient: np.ndarray
    value: np.ndarray


def costmargin_choice(reading: str, cost: np.ndarray, margin: np.ndarray) -> Choice:
    """``cost`` Δ and ``margin`` m as (truths × alternatives) arrays; each truth's alternative and step
    coefficient by ``reading`` (module docstring). Ties go to the first alternative (the earliest in the
    relevant set)."""
    if reading not in READINGS:
        raise UsageError(f"unknown cost-margin reading {reading!r}; choose one of {', '.join(READINGS)}")
    cost, margin = np.atleast_2d(cost), np.atleast_2d(margin)
    rows = np.arange(cost.shape[0])
    if reading == "table2":
        l = cost * (1.0 - margin)  # noqa: E741 - the paper's name
        pick = np.argmin(l, axis=1)
        return Choice(pick, cost[rows, pick].copy(), l[rows, pick])
    slack = np.maximum(0.0, 1.0 - margin)
    psi = cost * slack * slack if reading == "eq7" else cost * slack
    pick = np.argmax(psi, axis=1)
    value = psi[rows, pick]
    factor = slack[rows, pick] if reading == "eq7" else 1.0
    coefficient = np.where(value > 0.0, cost[rows, pick] * factor, 0.0)
    return Choice(pick, coefficient, value)
