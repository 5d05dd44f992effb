"""Brute force: every derivation of a small hypergraph, for checking the clever algorithms."""

from __future__ import annotations

import itertools

from hypertune.algorithms.inside_outside import count_derivations
from hypertune.errors import GraphError
from hypertune.hypergraph import Derivation, Hypergraph


def enumerate_derivations(hg: Hypergraph, limit: int = 100_000) -> list[Derivation]:
    """All derivations of the goal (order: by in-edge, then tails' lists, lexicographically).

    Raises :class:`GraphError` if there are more than ``limit``; count them first with
    :meth:`Hypergraph.count_derivations`.
    """
    count = count_derivations(hg)
    if count > limit:
        raise GraphError(f"{count} derivations is more than the enumeration limit of {limit}")
    derivations: list[list[Derivation]] = []
    for v in range(hg.num_nodes):
        here = []
        for e in hg.in_edges(v):
            for children in itertools.product(*(derivations[int(u)] for u in hg.edge_tails(e))):
                here.append(Derivation(e, tuple(children)))
        derivations.append(here if len(here) <= limit else [])
    return derivations[hg.goal]
