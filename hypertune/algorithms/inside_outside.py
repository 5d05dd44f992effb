"""Inside and outside, written once over the semiring interface (Goodman 1999; Li & Eisner 2009, Fig. 1).

``edge_values[e]`` is edge ``e``'s value in the semiring (cdec's "weight function"), for example
``exp(w·f_e)`` in the real semiring or ``w·f_e`` in the log and tropical semirings. Built-in semirings
with a compiled kernel run it when ``engine`` is ``"auto"`` (the default) or ``"compiled"``;
``engine="generic"`` always runs the readable loops below, and the tests check the two agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, overload

import numpy as np

from hypertune import compiled
from hypertune.hypergraph import Hypergraph
from hypertune.semirings import CountingSemiring, ExpectationValues, Semiring, SemiringValues

Engine = Literal["auto", "generic", "compiled"]


@overload
def inside(
    hg: Hypergraph, semiring: Semiring, edge_values: Sequence[Any] | np.ndarray, engine: Engine = "auto"
) -> Sequence[Any] | np.ndarray: ...
@overload
def inside(
    hg: Hypergraph, semiring: Semiring, edge_values: SemiringValues, engine: Engine = "auto"
) -> SemiringValues: ...
def inside(hg: Hypergraph, semiring: Semiring, edge_values: SemiringValues, engine: Engine = "auto") -> SemiringValues:
    """Inside values β(v) for every node; β(goal) is the semiring sum over all derivations.

    β(v) = ⊕_{e ∈ in(v)} k_e ⊗ β(tail_1(e)) ⊗ ... ⊗ β(tail_n(e))

    Returns a list (generic), a float array (scalar kernels) or :class:`ExpectationValues` (expectation kernel);
    all are indexed by node.
    """
    _check_length(hg, edge_values)
    kernel = _kernel_to_run(semiring, edge_values, engine)
    if kernel is not None and isinstance(edge_values, ExpectationValues):
        p, r = compiled.expectation_inside(hg.node_offsets, hg.tail_offsets, hg.tails, edge_values.p, edge_values.r)
        return ExpectationValues(p, r)
    if kernel is not None and isinstance(edge_values, np.ndarray):
        return compiled.scalar_inside(
            compiled.MODES[kernel],
            hg.node_offsets,
            hg.tail_offsets,
            hg.tails,
            _as_float_array(edge_values),
        )
    beta = [semiring.zero] * hg.num_nodes
    for v in range(hg.num_nodes):
        total = semiring.zero
        for e in hg.in_edges(v):
            value = edge_values[e]
            for u in hg.edge_tails(e):
                value = semiring.times(value, beta[u])
            total = semiring.plus(total, value)
        beta[v] = total
    return beta


def outside(
    hg: Hypergraph,
    semiring: Semiring,
    edge_values: SemiringValues,
    inside_values: SemiringValues | None = None,
    engine: Engine = "auto",
) -> list[Any] | np.ndarray:
    """Outside values α(v): the semiring sum over the goal's derivations with a hole at ``v``.

    α(goal) = one;  α(u) = ⊕_{e: u ∈ tails(e)} α(head(e)) ⊗ k_e ⊗ ⊗_{w ∈ tails(e), w ≠ u} β(w).
    Needs a commutative semiring (the hole can sit anywhere in the product).
    """
    if not semiring.commutative:
        raise ValueError(f"outside needs a commutative semiring; {semiring!r} is not")
    beta = inside(hg, semiring, edge_values, engine) if inside_values is None else inside_values
    kernel = _kernel_to_run(semiring, edge_values, engine)
    if kernel is not None and isinstance(edge_values, np.ndarray):
        return compiled.scalar_outside(
            compiled.MODES[kernel],
            hg.head,
            hg.tail_offsets,
            hg.tails,
            _as_float_array(edge_values),
            np.asarray(beta, dtype=np.float64),
        )
    alpha = [semiring.zero] * hg.num_nodes
    alpha[hg.goal] = semiring.one
    for v in reversed(range(hg.num_nodes)):
        for e in hg.in_edges(v):
            tails = hg.edge_tails(e)
            for i, u in enumerate(tails):
                value = semiring.times(alpha[v], edge_values[e])
                for j, w in enumerate(tails):
                    if j != i:
                        value = semiring.times(value, beta[w])
                alpha[u] = semiring.plus(alpha[u], value)
    return alpha


def edge_inside(
    hg: Hypergraph,
    semiring: Semiring,
    edge_values: SemiringValues,
    inside_values: SemiringValues,
    engine: Engine = "auto",
) -> list[Any] | np.ndarray:
    """k_e ⊗ β(tail_1) ⊗ ... for every edge: the part of its head's inside value that comes through ``e``."""
    kernel = _kernel_to_run(semiring, edge_values, engine)
    if kernel is not None and isinstance(edge_values, np.ndarray):
        return compiled.edge_inside(
            compiled.MODES[kernel],
            hg.tail_offsets,
            hg.tails,
            _as_float_array(edge_values),
            np.asarray(inside_values, dtype=np.float64),
        )
    out = []
    for e in range(hg.num_edges):
        value = edge_values[e]
        for u in hg.edge_tails(e):
            value = semiring.times(value, inside_values[u])
        out.append(value)
    return out


def count_derivations(hg: Hypergraph) -> int:
    """The exact number of derivations of the goal: inside in the counting semiring."""
    return int(inside(hg, CountingSemiring(), [1] * hg.num_edges)[hg.goal])


def describe_graph(hg: Hypergraph) -> dict[str, Any]:
    """Nodes, edges, derivations, maximum arity and features used, as a JSON-ready dict."""
    return {
        "nodes": hg.num_nodes,
        "edges": hg.num_edges,
        "derivations": count_derivations(hg),
        "max_arity": hg.max_arity,
        "features": int(np.unique(hg.features.indices).size),
        "lattice": hg.is_lattice,
    }


# ---------------------------------------------------------------------- dispatch helpers


def _kernel_to_run(semiring: Semiring, edge_values: SemiringValues, engine: Engine) -> str | None:
    """The compiled kernel to run for these values (``None``: the generic loops)."""
    if engine == "generic":
        return None
    kernel = semiring.compiled_kernel
    suitable = kernel is not None and (
        isinstance(edge_values, ExpectationValues) if kernel == "expectation" else isinstance(edge_values, np.ndarray)
    )
    if engine == "compiled" and not suitable:
        raise ValueError(f"no compiled kernel for {semiring!r} with edge values of type {type(edge_values).__name__}")
    return kernel if suitable else None


def _as_float_array(edge_values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(edge_values, dtype=np.float64)


def _check_length(hg: Hypergraph, edge_values: SemiringValues) -> None:
    if len(edge_values) != hg.num_edges:
        raise ValueError(f"{len(edge_values)} edge values for {hg.num_edges} edges")
