"""hypertune's own JSON graph format: easy to write by hand, exact to read back.

One graph is one JSON object::

    {"format": "hypertune", "nodes": 3, "goal": 2,
     "edges": [{"head": 0, "tails": [], "features": {"tm": -1.2}, "target": "the"},
               {"head": 2, "tails": [0, 1], "target": "[1] of [2]"}, ...]}

``nodes`` may be omitted (it is one more than the largest id used), ``goal`` defaults to the last node,
nodes may be listed in any order (they are sorted topologically), ``target`` is a string in which ``[k]``
is the k-th tail (1-based) or a list of words (strings) and 0-based tail indices (integers), and may be
omitted (the tails' yields in order). Optional: ``"labels"`` (one per node), ``"metadata"``, and the
graph's annotations ``"sentence_id"``, ``"source_covered"`` (one integer per edge, in the order of
``"edges"``) and ``"edge_stats"`` (one list of numbers per edge).
A file holds one object, a JSON array of objects, or one object per line (JSON lines) for a corpus.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from hypertune.errors import GraphError, InputError
from hypertune.formats.io import open_text, write_atomically
from hypertune.formats.registry import GraphFormat, register
from hypertune.formats.sniffing import sniff_hypertune_json as sniff
from hypertune.hypergraph import Hypergraph, HypergraphBuilder
from hypertune.symbols import FeatureSpace, Vocabulary

_TAIL_LIKE = re.compile(r"^\[\d+\]$")


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    with open_text(path) as handle:
        text = handle.read()
    try:
        documents = [(1, json.loads(text))]
    except json.JSONDecodeError as whole_error:
        documents = []
        for number, row in enumerate(text.splitlines(), 1):
            if not row.strip():
                continue
            try:
                documents.append((number, json.loads(row)))
            except json.JSONDecodeError:
                error = whole_error if number == whole_error.lineno else None
                detail = error.msg if error else "not a JSON object"
                raise InputError(
                    f"invalid JSON ({detail}); expected a graph object per line or one JSON document", path, number
                ) from None
    graphs = []
    for line, document in documents:
        objects = document if isinstance(document, list) else [document]
        for index, obj in enumerate(objects):
            where = f"graph {index + 1}: " if len(objects) > 1 else ""
            try:
                graphs.append(graph_from_json(obj, feature_space, vocabulary))
            except (GraphError, KeyError, TypeError, ValueError) as error:
                reason = f"missing key {error}" if isinstance(error, KeyError) else str(error)
                raise InputError(f"{where}{reason}", path, line) from None
    if not graphs:
        raise InputError("no graph in the file", path)
    return graphs


def graph_from_json(
    obj: Any, feature_space: FeatureSpace | None = None, vocabulary: Vocabulary | None = None
) -> Hypergraph:
    """A hypergraph from one parsed JSON object of this format."""
    if not isinstance(obj, dict) or not isinstance(obj.get("edges"), list):
        raise ValueError('expected an object with an "edges" list')
    builder = HypergraphBuilder(feature_space, vocabulary)
    edges = obj["edges"]
    used = [e.get("head", -1) for e in edges if isinstance(e, dict)] + [
        t for e in edges if isinstance(e, dict) for t in e.get("tails", [])
    ]
    num_nodes = int(obj.get("nodes", max((int(u) for u in used), default=-1) + 1))
    labels = obj.get("labels") or [None] * num_nodes
    for label in labels:
        builder.add_node(label)
    for number, edge in enumerate(edges):
        if not isinstance(edge, dict) or "head" not in edge:
            raise ValueError(f'edge {number}: expected an object with a "head"')
        try:
            builder.add_edge(
                int(edge["head"]), [int(t) for t in edge.get("tails", [])], edge.get("features"), edge.get("target")
            )
        except (TypeError, ValueError, GraphError) as error:
            raise ValueError(f"edge {number}: {error}") from None
    sentence_id = obj.get("sentence_id")
    if sentence_id is not None and (not isinstance(sentence_id, int) or isinstance(sentence_id, bool)):
        raise ValueError(f'"sentence_id" must be an integer, got {sentence_id!r}')
    return builder.build(
        obj.get("goal"),
        metadata=obj.get("metadata"),
        sentence_id=sentence_id,
        source_covered=obj.get("source_covered"),
        edge_stats=obj.get("edge_stats"),
    )


def graph_to_json(hg: Hypergraph) -> dict[str, Any]:
    """The JSON object of one graph (nodes already in topological order)."""
    edges = []
    for e in range(hg.num_edges):
        words = [hg.vocabulary.word(int(t)) if t >= 0 else int(-t - 1) for t in hg.edge_target(e)]
        ambiguous = any(
            isinstance(w, str) and (_TAIL_LIKE.match(w) or not w or any(c.isspace() for c in w)) for w in words
        )
        edge: dict[str, Any] = {"head": int(hg.head[e]), "tails": [int(t) for t in hg.edge_tails(e)]}
        features = hg.edge_features(e)
        if features:
            edge["features"] = features
        edge["target"] = words if ambiguous else hg.target_text(e)
        edges.append(edge)
    obj: dict[str, Any] = {"format": "hypertune", "nodes": hg.num_nodes, "goal": hg.goal, "edges": edges}
    if hg.node_labels:
        obj["labels"] = hg.node_labels
    if hg.metadata:
        obj["metadata"] = hg.metadata
    if hg.sentence_id is not None:
        obj["sentence_id"] = hg.sentence_id
    if hg.source_covered is not None:
        obj["source_covered"] = hg.source_covered.tolist()
    if hg.edge_stats is not None:
        obj["edge_stats"] = hg.edge_stats.tolist()
    return obj


def write(graphs: Sequence[Hypergraph], path: str) -> None:
    """One graph per line (JSON lines), written atomically."""
    write_atomically(path, "".join(json.dumps(graph_to_json(g), ensure_ascii=False) + "\n" for g in graphs))


FORMAT = register(
    GraphFormat("hypertune", "hypertune JSON graphs (one object, an array, or JSON lines)", sniff, read, write)
)
