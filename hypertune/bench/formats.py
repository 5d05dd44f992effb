"""Format benchmarks for ``hypertune bench`` and docs/performance.md: parsing the 5,342-edge Moses
hypergraph of the shared regression data, and loading a native cache of 1,000 copies of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypertune.bench.core import Figure, median_time
from hypertune.formats import cache, moses_hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary


def benchmark_formats(shared_dir: str | os.PathLike[str], copies: int = 1000, repeat: int = 5) -> list[Figure]:
    """Figures for the Moses dense hypergraph parse (target 0.5 s) and a ``copies``-graph cache load
    (target 10 s). ``shared_dir`` is the ``shared/data`` folder; returns [] when the graph is absent."""
    path = Path(shared_dir) / "moses" / "hypergraphs" / "dense" / "hg.gz"
    if not path.is_file():
        return []

    def parse():
        return moses_hypergraph.read(str(path), FeatureSpace(), Vocabulary())[0]

    hg = parse()
    detail = f"{hg.num_nodes} nodes, {hg.num_edges} edges, {hg.features.nnz} non-zero feature values"
    figures = [Figure("parse Moses hypergraph (dense, gzip)", median_time(parse, repeat), 0.5, detail)]
    with tempfile.TemporaryDirectory() as directory:
        target = os.path.join(directory, "corpus.htc")
        cache.write([hg] * copies, target)
        size = os.path.getsize(target)
        seconds = median_time(lambda: cache.read(target, FeatureSpace(), Vocabulary()), max(1, min(repeat, 3)))
    figures.append(
        Figure(
            f"load native cache of {copies} Moses hypergraphs",
            seconds,
            10.0,
            f"{copies} x {hg.num_edges} edges, {size / 1e6:.0f} MB file",
        )
    )
    return figures
