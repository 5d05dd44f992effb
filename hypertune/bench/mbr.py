"""k-best MBR (issue #34): the decision over the 1,000 x 100 benchmark n-best lists with BLEU+1 (target: 1 s after
compilation), timed from the read lists to the choices. ``python -m hypertune.bench.mbr [SHARED [WORKDIR]]``
prints the figures with the CPU seconds beside the wall time."""

from __future__ import annotations

import os
import sys
import time

from hypertune.bench.core import Figure, make_bench_corpus
from hypertune.formats import read_graphs
from hypertune.formats.nbest import feature_order
from hypertune.formats.weights import read_positional
from hypertune.mbr.kbest import MbrOptions, kbest_lists, mbr_decide
from hypertune.metrics import BleuMetric
from hypertune.weights import Weights

MBR_TARGET = 1.0


def benchmark_mbr(shared_dir: str, workdir: str, repeat: int = 5) -> list[Figure]:
    """The median wall time of k-best MBR with BLEU+1 on the 1,000 x 100 make_bench n-best lists (posteriors with
    the corpus's init.opt weights, alpha 1), after one warm-up run; the detail gives the CPU seconds of the median
    run and the machine's load."""
    corpus = make_bench_corpus(shared_dir, workdir, "nbest", 1000)
    nbest = str(corpus / "nbest.gz")
    graphs = read_graphs([nbest])
    start, _, _ = read_positional(str(corpus / "init.opt"), feature_order(nbest))
    lists = kbest_lists(graphs, Weights(start))
    metric = BleuMetric(smooth="plus1")
    mbr_decide(lists, metric, MbrOptions())  # compiles
    runs = []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        mbr_decide(lists, metric, MbrOptions())
        runs.append((time.perf_counter() - wall, time.process_time() - cpu))
    runs.sort()
    seconds, cpu_seconds = runs[len(runs) // 2]
    detail = f"CPU {cpu_seconds:.2f} s, load {os.getloadavg()[0]:.1f}, {len(graphs)} lists x 100"
    return [Figure("k-best MBR, BLEU+1, 1,000 x 100", seconds, MBR_TARGET, detail)]


if __name__ == "__main__":  # pragma: no cover - a benchmark run by hand
    shared = sys.argv[1] if len(sys.argv) > 1 else "../shared"
    work = sys.argv[2] if len(sys.argv) > 2 else "/tmp/hypertune-bench"
    for figure in benchmark_mbr(shared, work):
        print(f"{figure.name}: {figure.seconds:.3f} s (target {figure.target} s; {figure.detail})")
