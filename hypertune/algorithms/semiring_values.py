"""The built-in semirings by name, each with the edge values it takes from a graph and weights, and the
worked inside computation of a small graph (for ``hypertune inside`` and the tutorials).

| name | semiring | edge value of edge ``e`` (``s_e = w·f_e``) | goal's inside value |
|---|---|---|---|
| ``boolean`` | (∨, ∧) | true | is there a derivation |
| ``counting`` | (+, ×) over integers | 1 | the number of derivations |
| ``real`` | (+, ×) | ``exp(s_e)`` | Z, the partition function |
| ``log`` | (log-add, +) | ``s_e`` | log Z |
| ``tropical`` | (max, +) | ``s_e`` | the best derivation's score (Viterbi) |
| ``kbest:K`` | K best of (max, +) with derivations | ``(s_e, e)`` | the K best scores and derivations |
| ``expectation`` | first-order expectation | ``<exp(s_e), exp(s_e) f_e>`` | ``<Z, r>``; r/Z: expected features |
| ``envelope`` | upper envelopes (MERT) | the line ``s_e + γ·(d·f_e)`` | the goal's upper envelope along ``d`` |

A user semiring is named ``module:Class``: the class is built without arguments; its edge values are
``Class.edge_value(edge, score)`` if it has that method, else the score ``s_e``.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from hypertune.hypergraph import Hypergraph
from hypertune.semirings import (
    BooleanSemiring,
    CountingSemiring,
    ExpectationSemiring,
    KBestSemiring,
    LogSemiring,
    RealSemiring,
    Semiring,
    SemiringValues,
    TropicalSemiring,
)
from hypertune.semirings.envelope import EnvelopeSemiring
from hypertune.weights import Weights

NAMES = ("boolean", "counting", "real", "log", "tropical", "kbest:K", "expectation", "envelope")


@dataclass(frozen=True)
class NamedSemiring:
    """A semiring with the edge values of one graph under some weights."""

    name: str
    semiring: Semiring
    values: SemiringValues


def named_semiring(name: str, hg: Hypergraph, weights: Weights, direction: Weights | None = None) -> NamedSemiring:
    """The semiring called ``name`` (see the module docstring) with ``hg``'s edge values under ``weights``
    (``direction``: the search direction of ``envelope``). Unknown names raise ``ValueError``."""
    scores = weights.edge_scores(hg)
    if name == "boolean":
        return NamedSemiring(name, BooleanSemiring(), [True] * hg.num_edges)
    if name == "counting":
        return NamedSemiring(name, CountingSemiring(), [1] * hg.num_edges)
    if name == "real":
        return NamedSemiring(name, RealSemiring(), np.exp(scores))
    if name in ("log", "tropical"):
        return NamedSemiring(name, LogSemiring() if name == "log" else TropicalSemiring(), scores)
    if name.startswith("kbest:"):
        kbest = KBestSemiring(_count(name))
        return NamedSemiring(name, kbest, [kbest.edge_value(e, s) for e, s in enumerate(scores)])
    if name == "expectation":
        features = hg.feature_matrix().toarray()
        expectation = ExpectationSemiring(features.shape[1])
        return NamedSemiring(name, expectation, expectation.edge_values(np.exp(scores), features))
    if name == "envelope":
        if direction is None:
            raise ValueError("the envelope semiring needs a direction")
        slopes = direction.edge_scores(hg)
        envelope = EnvelopeSemiring()
        lines = [envelope.edge_value(e, s, d) for e, (s, d) in enumerate(zip(scores, slopes, strict=True))]
        return NamedSemiring(name, envelope, lines)
    if ":" in name:
        return _user_semiring(name, scores)
    raise ValueError(f"unknown semiring {name!r}; choose one of {', '.join(NAMES)} or give module:Class")


def _count(name: str) -> int:
    try:
        k = int(name.partition(":")[2])
    except ValueError:
        k = 0
    if k < 1:
        raise ValueError(f"{name!r}: expected kbest:K with K a positive integer")
    return k


def _user_semiring(name: str, scores: np.ndarray) -> NamedSemiring:
    module_name, _, class_name = name.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"cannot load the semiring {name!r}: {error}") from None
    if not (isinstance(cls, type) and issubclass(cls, Semiring)):  # os:path is a module, not a class to make
        raise ValueError(f"{name} is not a Semiring subclass")
    try:
        semiring = cls()
    except TypeError as error:  # a constructor that needs arguments
        raise ValueError(f"cannot make the semiring {name} without arguments: {error}") from None
    missing = [attribute for attribute in ("zero", "one") if not hasattr(semiring, attribute)]
    if missing:
        raise ValueError(f"{name} has no {' and no '.join(missing)}: a semiring defines zero, one, plus and times")
    make = getattr(semiring, "edge_value", None)
    values = [make(e, float(s)) for e, s in enumerate(scores)] if callable(make) else [float(s) for s in scores]
    return NamedSemiring(name, semiring, values)


@dataclass(frozen=True)
class TraceStep:
    """One hyperedge of a node's inside computation: its value, the tails' inside values it multiplies, the
    product, and the running ⊕ after it."""

    edge: int
    edge_value: Any
    tails: tuple[int, ...]
    tail_values: tuple[Any, ...]
    product: Any
    running: Any


def inside_trace(hg: Hypergraph, semiring: Semiring, values: SemiringValues) -> list[list[TraceStep]]:
    """The inside computation written out node by node, bottom-up, as by hand: for node ``v`` one step per
    in-edge ``e``, ``k_e ⊗ β(t₁) ⊗ …`` and the running sum. The last step's ``running`` is ``β(v)``; the
    same recursion as :func:`~hypertune.algorithms.inside_outside.inside`."""
    beta: list[Any] = [semiring.zero] * hg.num_nodes
    out = []
    for v in range(hg.num_nodes):
        steps = []
        total = semiring.zero
        for e in hg.in_edges(v):
            tails = tuple(int(u) for u in hg.edge_tails(e))
            product = values[e]
            for u in tails:
                product = semiring.times(product, beta[u])
            total = semiring.plus(total, product)
            steps.append(TraceStep(e, values[e], tails, tuple(beta[u] for u in tails), product, total))
        beta[v] = total
        out.append(steps)
    return out


def show(value: Any, hg: Hypergraph | None = None) -> str:
    """A semiring value as a person reads it: numbers to 6 significant digits, k-best lists as
    ``score "yield"`` pairs, expectation pairs as ``<p, r>``, envelopes as their lines."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return _number(float(value))
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], np.ndarray):
        return f"<{_number(float(value[0]))}, [{', '.join(_number(float(x)) for x in value[1])}]>"
    if isinstance(value, tuple) and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return "[" + ", ".join(f"{_number(s)} {_yield(hg, d)}" for s, d in value) + "]"
    if isinstance(value, tuple):  # an envelope: lines from their left end
        return "[" + ", ".join(f"{_line(x.intercept, x.slope)} from γ={_number(x.left)}" for x in value) + "]"
    return repr(value)


def _line(intercept: float, slope: float) -> str:
    return f"{_number(intercept)} {'-' if slope < 0 else '+'} {_number(abs(slope))}γ"


def _number(x: float) -> str:
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    return f"{x:.6g}"


def _yield(hg: Hypergraph | None, derivation: Any) -> str:
    """A derivation's words in quotes; an edge whose tails are not attached yet shows as ``e<id>``."""
    if hg is None or derivation is None:
        return ""
    try:
        return '"' + " ".join(hg.derivation_words(derivation)) + '"'
    except IndexError:
        return f"e{derivation.edge}"
