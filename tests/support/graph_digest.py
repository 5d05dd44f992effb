"""A by-value digest of the graphs a file reads as (issue #29's regression check of every reader).

The digest hashes what a graph *is*, not how it is stored: the node count, the edge arrays, target words
by their strings, features as sorted ``(name, value)`` pairs per edge, node labels, metadata, the sentence
id, source coverage and edge statistics. Symbol ids, dtypes and the order features were interned in do
not enter it, so two readers that build the same graphs differently agree.

``graph_digests.json`` beside this file holds the digests of the readers at commit bd44928 (before the
issue's refactors), written by running this module against that commit::

    git -C /work/main archive bd44928 | tar -x -C /tmp/base
    cd /tmp && PYTHONPATH=/tmp/base:/work/main/tests /work/main/.venv/bin/python -m support.graph_digest \
        > /work/main/tests/support/graph_digests.json

(with ``../shared/data`` present; run outside the repository, or Python imports its ``hypertune/`` first).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from support.paths import REPO

RECORDED = Path(__file__).with_name("graph_digests.json")


def graph_digest(graph: Any) -> str:
    """16 hex digits of SHA-256 over the graph's values (see the module docstring)."""
    h = hashlib.sha256()

    def add(value: object) -> None:
        h.update(repr(value).encode())
        h.update(b"\x00")

    add(int(graph.num_nodes))
    for array in (graph.head, graph.tail_offsets, graph.tails, graph.target_offsets):
        add(np.asarray(array).tolist())
    vocabulary = graph.vocabulary
    add([vocabulary.word(int(t)) if t >= 0 else int(t) for t in np.asarray(graph.target).tolist()])
    features = graph.features.tocsr()
    names = list(graph.feature_space.names)
    add(
        [
            sorted(
                (names[int(c)], float(v))
                for c, v in zip(
                    features.indices[features.indptr[e] : features.indptr[e + 1]].tolist(),
                    features.data[features.indptr[e] : features.indptr[e + 1]].tolist(),
                    strict=True,
                )
            )
            for e in range(features.shape[0])
        ]
    )
    add(None if graph.node_labels is None else list(graph.node_labels))
    add(json.dumps(graph.metadata, sort_keys=True, default=str))
    add(graph.sentence_id)
    for optional in (graph.source_covered, graph.edge_stats):
        add(None if optional is None else np.asarray(optional).tolist())
    return h.hexdigest()[:16]


def file_entry(path: Path) -> dict[str, Any]:
    """``{"graphs": [digest, ...]}`` of what :func:`hypertune.formats.read_graphs` reads from ``path``, or
    ``{"error": class name}`` when it refuses the file (references, weights: not graphs)."""
    from hypertune.errors import HypertuneError
    from hypertune.formats import read_graphs

    try:
        graphs = read_graphs(str(path))
    except HypertuneError as error:
        return {"error": type(error).__name__}
    return {"graphs": [graph_digest(g) for g in graphs]}


def data_files(repository: Path) -> list[tuple[str, Path]]:
    """Every file of ``fixtures/`` and ``../shared/data`` (when present), as (name in the record, path):
    ``fixtures/...`` and ``shared/...``."""
    roots = [("fixtures", repository / "fixtures"), ("shared", repository.parent / "shared" / "data")]
    return [
        (f"{name}/{path.relative_to(root).as_posix()}", path)
        for name, root in roots
        if root.is_dir()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    ]


def main() -> None:
    """Print the record (JSON) of every data file of this repository, with the ``hypertune`` imported."""
    import hypertune

    print(f"graph digests by {Path(hypertune.__file__).parent}", file=sys.stderr)
    record = {name: file_entry(path) for name, path in data_files(REPO)}
    json.dump(record, sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
