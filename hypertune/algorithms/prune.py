"""Max-marginal pruning: keep the edges whose best derivation ranks among the best ``N`` edges.

The score of edge ``e`` is the model score of the best derivation of the goal that uses ``e``:
Viterbi inside of ``e`` (its score plus its tails' Viterbi inside) plus the Viterbi outside of its head
(the max-marginal, Cherry & Foster 2012, section 4.1; Moses's ``Graph::Prune``). Edges are ranked by
that score and the ``N`` best are kept together with every edge tied with the ``N``-th; the graph is
then trimmed to the kept edges that still lie on a derivation of the goal. The model-best derivation
always survives (all its edges carry the maximal score).

Generic over what the edge scores mean: callers pass ``w . f_e`` (or anything additive).
"""

from __future__ import annotations

import numpy as np

from hypertune import compiled
from hypertune.hypergraph import Hypergraph, trim, useful_edges


def max_marginals(hg: Hypergraph, edge_scores: np.ndarray) -> np.ndarray:
    """For every edge, the score of the best goal derivation through it (``-inf`` if there is none).

    ``inside_e = s_e + sum_{u in tails(e)} beta(u)``, ``mm_e = inside_e + alpha(head(e))`` with Viterbi
    (tropical) ``beta`` and ``alpha`` (Goodman 1999; Huang 2008, section 3).
    """
    scores = np.ascontiguousarray(edge_scores, dtype=np.float64)
    if scores.shape != (hg.num_edges,):
        raise ValueError(f"{scores.size} edge scores for {hg.num_edges} edges")
    mode = compiled.TROPICAL
    beta = compiled.scalar_inside(mode, hg.node_offsets, hg.tail_offsets, hg.tails, scores)
    alpha = compiled.scalar_outside(mode, hg.head, hg.tail_offsets, hg.tails, scores, beta)
    through = compiled.edge_inside(mode, hg.tail_offsets, hg.tails, scores, beta)
    return through + alpha[hg.head]


def prune_mask(hg: Hypergraph, edge_scores: np.ndarray, max_edges: int) -> np.ndarray:
    """Boolean mask of the edges ranked within ``max_edges`` by :func:`max_marginals` (ties at the
    cut-off kept, as Moses), restricted to edges still on a derivation of the goal."""
    if max_edges < 1:
        raise ValueError(f"max_edges must be at least 1, got {max_edges}")
    mm = max_marginals(hg, edge_scores)
    if max_edges >= hg.num_edges:
        keep = np.isfinite(mm)
    else:
        threshold = np.partition(mm, hg.num_edges - max_edges)[hg.num_edges - max_edges]
        keep = (mm >= threshold) & np.isfinite(mm)
    # the Viterbi derivation's edges all carry the maximal score, up to rounding: keep them explicitly
    _, best_edge = compiled.viterbi_inside(hg.node_offsets, hg.tail_offsets, hg.tails, np.asarray(edge_scores, float))
    on_best, _ = useful_edges(hg, np.isin(np.arange(hg.num_edges), best_edge))
    keep |= on_best
    edges, _ = useful_edges(hg, keep)
    return edges


def prune(hg: Hypergraph, edge_scores: np.ndarray, max_edges: int) -> tuple[Hypergraph, np.ndarray]:
    """The graph pruned to :func:`prune_mask` and trimmed, and the original ids of its edges (in order:
    new edge ``i`` is old edge ``kept[i]``, so per-edge data can be carried over as ``data[kept]``)."""
    mask = prune_mask(hg, edge_scores, max_edges)
    kept = np.flatnonzero(mask)
    if kept.size == hg.num_edges:
        return hg, kept
    return trim(hg, mask), kept
