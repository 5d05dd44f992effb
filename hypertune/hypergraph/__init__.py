"""The hypergraph, split by idea: :mod:`~hypertune.hypergraph.structure` (the :class:`Hypergraph` and its
:class:`Derivation`, checked by the one constructor), :mod:`~hypertune.hypergraph.building` (the one
builder, k-best lists and networkx lattices as graphs, trimming) and :mod:`~hypertune.hypergraph.packing`
(several graphs at once: packed corpora, many k-best lists, unions)."""

from hypertune.hypergraph.building import (
    FeatureInput,
    HypergraphBuilder,
    TargetInput,
    from_kbest,
    from_networkx,
    trim,
    trimmed,
    useful_edges,
)
from hypertune.hypergraph.packing import KbestLists, PackedGraphs, kbest_lattices, packed_kbest_lists, union
from hypertune.hypergraph.structure import (
    ANNOTATIONS,
    EDGE_ANNOTATIONS,
    Derivation,
    EdgeScores,
    Hypergraph,
    pad_columns,
)

__all__ = [
    "ANNOTATIONS",
    "EDGE_ANNOTATIONS",
    "Derivation",
    "EdgeScores",
    "FeatureInput",
    "Hypergraph",
    "HypergraphBuilder",
    "KbestLists",
    "PackedGraphs",
    "TargetInput",
    "from_kbest",
    "from_networkx",
    "kbest_lattices",
    "packed_kbest_lists",
    "pad_columns",
    "trim",
    "trimmed",
    "union",
    "useful_edges",
]
