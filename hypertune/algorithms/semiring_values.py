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

A user semiring is named ``module:Class``: the class is built without arguments and must define
``edge_value(edge, score)``, edge ``edge``'s value from its score ``s_e`` (there is no default: max-times
wants ``exp(s_e)``, max-plus ``s_e``). With ``outside=True`` the envelope semiring keeps each line's edges
as a multiset (:class:`~hypertune.semirings.envelope.CommutativeEnvelopeSemiring`), so that outside runs.
"""

from __future__ import annotations

import importlib
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from hypertune.hypergraph import Derivation, Hypergraph
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
from hypertune.semirings.envelope import CommutativeEnvelopeSemiring, EnvelopeSemiring, Line
from hypertune.weights import Weights

NAMES = ("boolean", "counting", "real", "log", "tropical", "kbest:K", "expectation", "envelope")


@dataclass(frozen=True)
class NamedSemiring:
    """A semiring with the edge values of one graph under some weights."""

    name: str
    semiring: Semiring
    values: SemiringValues


def named_semiring(
    name: str, hg: Hypergraph, weights: Weights, direction: Weights | None = None, outside: bool = False
) -> NamedSemiring:
    """The semiring called ``name`` (see the module docstring) with ``hg``'s edge values under ``weights``
    (``direction``: the search direction of ``envelope``; ``outside``: its commutative form, for outside).
    Unknown names and user semirings that cannot be used raise ``ValueError``."""
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
        envelope = CommutativeEnvelopeSemiring() if outside else EnvelopeSemiring()
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
    if not callable(make):
        raise ValueError(
            f"{name} has no edge_value: define edge_value(self, edge, score) to give each edge's value from its "
            "score w·f_e (for example math.exp(score) for probabilities, score for log scores)"
        )
    try:
        values = [make(e, float(s)) for e, s in enumerate(scores)]
    except Exception as error:  # the user's code: one line, not a traceback
        raise ValueError(f"{name}.edge_value(edge, score) failed: {type(error).__name__}: {error}") from None
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


@dataclass(frozen=True)
class OutsideStep:
    """One use of a node ``u`` as tail ``position`` (from 0) of edge ``edge`` in its outside computation:
    ``α(head) ⊗ k_e ⊗ β(w)`` over the edge's other tails ``w``, the product, and the running ⊕ after it."""

    edge: int
    position: int
    head: int
    head_value: Any
    edge_value: Any
    others: tuple[int, ...]
    other_values: tuple[Any, ...]
    product: Any
    running: Any


def outside_trace(
    hg: Hypergraph, semiring: Semiring, values: SemiringValues, inside_values: SemiringValues
) -> list[list[OutsideStep]]:
    """The outside computation written out node by node (Goodman 1999): α(goal) = one and, top-down,
    ``α(u) = ⊕ α(head(e)) ⊗ k_e ⊗ β(other tails of e)`` over the edges ``e`` with ``u`` among their tails.
    Indexed by node; node ``u``'s steps are its uses in the order
    :func:`~hypertune.algorithms.inside_outside.outside` adds them, so the last ``running`` is ``α(u)``
    (no steps: ``α(u)`` is ``one`` at the goal, ``zero`` elsewhere). Needs a commutative semiring."""
    if not semiring.commutative:
        raise ValueError(f"outside needs a commutative semiring; {semiring!r} is not")
    alpha: list[Any] = [semiring.zero] * hg.num_nodes
    alpha[hg.goal] = semiring.one
    out: list[list[OutsideStep]] = [[] for _ in range(hg.num_nodes)]
    for v in reversed(range(hg.num_nodes)):
        for e in hg.in_edges(v):
            tails = [int(u) for u in hg.edge_tails(e)]
            for i, u in enumerate(tails):
                others = tuple(w for j, w in enumerate(tails) if j != i)
                product = semiring.times(alpha[v], values[e])
                for w in others:
                    product = semiring.times(product, inside_values[w])
                alpha[u] = semiring.plus(alpha[u], product)
                step = OutsideStep(
                    e, i, v, alpha[v], values[e], others, tuple(inside_values[w] for w in others), product, alpha[u]
                )
                out[u].append(step)
    return out


def show(value: Any, hg: Hypergraph | None = None, expectation: bool = True) -> str:
    """A semiring value as a person reads it: numbers to 6 significant digits, k-best lists as
    ``score "yield"`` pairs, expectation pairs as ``<p, [name=r, ...]>`` followed (``expectation``) by
    ``r/p``, envelopes as their lines from their left ends with their yields (``_``: the hole of an
    outside value)."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return _number(float(value))
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], np.ndarray):
        p, r = float(value[0]), value[1]
        names = _feature_names(hg, len(r))
        pair = f"<{_number(p)}, [{', '.join(f'{n}={_number(float(x))}' for n, x in zip(names, r, strict=True))}]>"
        if not expectation:
            return pair
        if p == 0.0:
            return f"{pair}, no expectation (p = 0)"
        means = ", ".join(f"{n}={_number(float(x) / p)}" for n, x in zip(names, r, strict=True))
        return f"{pair}, expectation r/p [{means}]"
    if isinstance(value, tuple) and all(isinstance(x, Line) for x in value) and value:  # an envelope
        shown = (f"{_line(x.intercept, x.slope)} from γ={_number(x.left)} {_yield(hg, x.derivation)}" for x in value)
        return "[" + ", ".join(shown) + "]"
    if isinstance(value, tuple) and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return "[" + ", ".join(f"{_number(s)} {_yield(hg, d)}" for s, d in value) + "]"
    return repr(value)


def json_value(value: Any, hg: Hypergraph | None = None) -> Any:
    """A semiring value as JSON-ready data at full precision: numbers as numbers (big counts exact),
    k-best lists as ``[{"score", "yield", "edges"}]``, expectation pairs as ``{"p", "r", "expectation"}``
    (``r`` and ``r/p`` by feature name; ``null`` when p = 0), envelopes as
    ``[{"from", "intercept", "slope", "yield", "edges"}]``; any other value as lists of numbers where it is
    made of them, else its ``repr``."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], np.ndarray):
        p, r = float(value[0]), [float(x) for x in value[1]]
        names = _feature_names(hg, len(r))
        means = {n: x / p for n, x in zip(names, r, strict=True)} if p != 0.0 else None
        return {"p": p, "r": dict(zip(names, r, strict=True)), "expectation": means}
    if isinstance(value, tuple) and all(isinstance(x, Line) for x in value) and value:
        return [
            {"from": float(x.left), "intercept": float(x.intercept), "slope": float(x.slope)}
            | _derivation_json(hg, x.derivation)
            for x in value
        ]
    if isinstance(value, tuple) and all(isinstance(x, tuple) and len(x) == 2 for x in value):
        return [{"score": float(s)} | _derivation_json(hg, d) for s, d in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [json_value(x, hg) for x in value]
    return repr(value)


def _feature_names(hg: Hypergraph | None, width: int) -> list[str]:
    names = list(hg.feature_space.names) if hg is not None else []
    return names if len(names) == width else [f"f{i}" for i in range(width)]


def _line(intercept: float, slope: float) -> str:
    return f"{_number(intercept)} {'-' if slope < 0 else '+'} {_number(abs(slope))}γ"


def _number(x: float) -> str:
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    return f"{x:.6g}"


def _derivation_json(hg: Hypergraph | None, derivation: Any) -> dict[str, Any]:
    """``yield`` (as :func:`show` writes it, without quotes) and ``edges`` (pre-order for a tree, sorted for a
    multiset of edges) of a k-best entry's or an envelope line's derivation."""
    if derivation is None:
        return {"yield": "_", "edges": []}
    edges = derivation.edges() if isinstance(derivation, Derivation) else [int(e) for e in derivation]
    return {"yield": _yield(hg, derivation)[1:-1], "edges": edges}


def _yield(hg: Hypergraph | None, derivation: Any) -> str:
    """A derivation's words in quotes, ``_`` where a tail is not attached yet (an edge's own value) or where an
    outside value has its hole; the derivation is a tree or (for outside) its multiset of edges; ``None``
    (the value ``one``: nothing outside the goal) is the hole alone."""
    if hg is None:
        return ""
    if derivation is None:
        return '"_"'
    if isinstance(derivation, Derivation):
        return '"' + " ".join(_tree_words(hg, derivation)) + '"'
    return '"' + " ".join(_bag_words(hg, tuple(derivation))) + '"'


def _tree_words(hg: Hypergraph, derivation: Derivation) -> list[str]:
    """The words of a derivation tree; a tail without a sub-derivation (trees built in tail order stop
    early) is ``_``."""
    words: list[str] = []
    stack: list[Derivation | str | None] = [derivation]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, str):
            words.append("_" if item is None else item)
            continue
        children = item.children
        parts = [
            hg.vocabulary.word(int(t)) if t >= 0 else (children[-t - 1] if -t - 1 < len(children) else None)
            for t in hg.edge_target(item.edge)
        ]
        stack.extend(reversed(parts))
    return words


def _bag_words(hg: Hypergraph, bag: tuple[int, ...]) -> list[str]:
    """The words of a derivation given as its multiset of edges, from its root (the one node that heads an
    edge of the bag more often than it is a tail of one) down; a tail no edge of the bag expands is the
    hole of an outside value, ``_``."""
    surplus: Counter[int] = Counter()
    by_head: dict[int, list[int]] = {}
    for e in bag:
        surplus[int(hg.head[e])] += 1
        by_head.setdefault(int(hg.head[e]), []).append(e)
        surplus.subtract(int(u) for u in hg.edge_tails(e))
    roots = [v for v, count in surplus.items() if count > 0]
    words: list[str] = []
    stack: list[int | str] = [roots[0] if roots else hg.goal]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            words.append(item)
            continue
        edges = by_head.get(item)
        if not edges:
            words.append("_")
            continue
        e = edges.pop(0)
        tails = hg.edge_tails(e)
        parts = [hg.vocabulary.word(int(t)) if t >= 0 else int(tails[-int(t) - 1]) for t in hg.edge_target(e)]
        stack.extend(reversed(parts))
    return words
