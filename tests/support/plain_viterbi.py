"""Test-only reference: the Viterbi pass of the probing kernels written out in plain Python."""

from __future__ import annotations

import numpy as np

from hypertune.hypergraph import Hypergraph


def plain_viterbi(hg: Hypergraph, b: np.ndarray, m: np.ndarray, x: float) -> tuple[np.ndarray, np.ndarray]:
    """Every node's best score at ``x`` and its first best in-edge; an edge scores ``b + x·m`` plus its tails'
    scores in tail order."""
    score = np.zeros(hg.num_nodes)
    edge = np.zeros(hg.num_nodes, dtype=np.int64)
    for v in range(hg.num_nodes):
        for e in range(hg.node_offsets[v], hg.node_offsets[v + 1]):
            s = b[e] + x * m[e]
            for t in hg.tails[hg.tail_offsets[e] : hg.tail_offsets[e + 1]]:
                s += score[t]
            if e == hg.node_offsets[v] or s > score[v]:
                score[v], edge[v] = s, e
    return score, edge
