"""Benchmarks and measurements of hope/fear search and batch MIRA (figures for docs/mira.md and
docs/performance.md).

* :func:`benchmark_mira`: wall times on the corpora of ``shared/tools/make_bench.py`` (200 Moses
  hypergraphs, 10 epochs with loading; one epoch over 500 hypergraphs; k-best MIRA, 60 epochs, over
  1,000 x 100 n-best lists), with the targets of the MIRA issue.
"""

from __future__ import annotations

import os
import resource
import sys
import time

from hypertune.bench.core import Figure, make_bench_corpus
from hypertune.metrics import BleuMetric
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.search_quality import approximation_quality

# ---------------------------------------------------------------------- timing on make_bench corpora


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def benchmark_mira(shared_dir: str, workdir: str) -> list[Figure]:
    """Figures for docs/performance.md (``shared_dir`` is ``../shared``, the parent of ``data`` and ``tools``).

    Targets (MIRA issue): 200 hypergraphs, 10 epochs including loading, at most half of Moses kbmira's
    48 s; one epoch over 500 hypergraphs in at most 5 s; k-best MIRA (60 epochs) over 1,000 x 100 no
    slower than kbmira's 0.42 s.
    """
    from hypertune.formats import read_graphs, read_references, read_weights
    from hypertune.tuners.mira import batch_mira
    from hypertune.tuners.sentence_ids import merge_kbest

    figures = []
    hg200 = make_bench_corpus(shared_dir, workdir, "hg", 200)
    start = time.perf_counter()
    graphs = read_graphs([os.path.join(hg200, "hg")])
    loaded = time.perf_counter() - start
    refs = read_references([os.path.join(hg200, "ref")])
    weights = read_weights([os.path.join(hg200, "dense"), os.path.join(hg200, "sparse")])
    tuning_set = TuningSet(graphs, refs, BleuMetric(tokenize="none"))
    result = batch_mira(tuning_set, weights, epochs=10, seed=1)
    total = time.perf_counter() - start
    figures.append(
        Figure(
            "MIRA, 200 Moses hypergraphs, 10 epochs (with loading)",
            total,
            24.0,
            f"loading {loaded:.1f} s, MIRA {result.timing['total']:.1f} s, BLEU {100 * result.score_before:.2f} -> "
            f"{100 * result.score_after:.2f}, peak RSS {_peak_mb():.0f} MB (kbmira: 48 s, 850 MB)",
            "half of kbmira's 48 s",
        )
    )
    hg500 = make_bench_corpus(shared_dir, workdir, "hg", 500)
    graphs = read_graphs([os.path.join(hg500, "hg")])
    tuning_set = TuningSet(graphs, read_references([os.path.join(hg500, "ref")]), BleuMetric(tokenize="none"))
    batch_mira(tuning_set, weights, epochs=1, seed=1)  # compile and prune once
    result = batch_mira(tuning_set, weights, epochs=1, seed=1)
    figures.append(
        Figure(
            "MIRA, one epoch over 500 Moses hypergraphs",
            result.timing["train"],
            5.0,
            f"pruning {result.timing.get('prune', 0):.2f} s, evaluation {result.timing['evaluate']:.2f} s "
            "(not counted)",
        )
    )
    nbest = make_bench_corpus(shared_dir, workdir, "nbest", 1000)
    start = time.perf_counter()
    graphs = merge_kbest(read_graphs([os.path.join(nbest, "nbest.gz")]))
    loaded = time.perf_counter() - start
    tuning_set = TuningSet(graphs, read_references([os.path.join(nbest, "ref")]), BleuMetric(tokenize="none"))
    init = read_weights([os.path.join(nbest, "dense.legacy")], feature_names=list(tuning_set.feature_space.names))
    result = batch_mira(tuning_set, init, epochs=60, seed=1)
    figures.append(
        Figure(
            "k-best MIRA, 1,000 x 100 n-best lists, 60 epochs (without loading)",
            result.timing["total"],
            0.42,
            f"training {result.timing['train']:.2f} s (with {result.evaluations_in_train} evaluations), "
            f"evaluations on their own {result.timing['evaluate']:.2f} s, setup "
            f"{result.timing['setup']:.2f} s; n-best loading {loaded:.1f} s not counted; "
            f"BLEU {100 * result.score_before:.2f} -> {100 * result.score_after:.2f}",
            "Moses kbmira, 0.42 s",
        )
    )
    return figures


if __name__ == "__main__":  # pragma: no cover
    shared = sys.argv[1] if len(sys.argv) > 1 else os.path.join("..", "shared")
    work = sys.argv[2] if len(sys.argv) > 2 else "/tmp/hypertune-mira-bench"
    os.makedirs(work, exist_ok=True)
    for figure in benchmark_mira(shared, work):
        print(f"{figure.name}: {figure.seconds:.3f} s (target {figure.target}) {figure.detail}")
    for lattice in (False, True):
        print("lattices" if lattice else "forests", approximation_quality(lattice=lattice))
