"""Benchmarks users can run on their own machines (``hypertune bench``); figures for docs/performance.md.

Each figure is the median wall time of ``repeat`` runs after one warm-up run (which also compiles the
numba kernels), on a seeded synthetic forest from :mod:`hypertune.generate`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hypertune import algorithms
from hypertune.generate import random_hypergraph
from hypertune.semirings import LogSemiring
from hypertune.weights import Weights


@dataclass(frozen=True)
class Figure:
    name: str
    seconds: float
    target: float | None = None  # seconds, from the issue that asked for it
    detail: str = ""

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.seconds <= self.target


def median_time(function: Callable[[], object], repeat: int) -> float:
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def make_bench_corpus(
    shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str], kind: str, count: int, seed: int = 7
) -> Path:
    """``workdir/<kind><count>``, written by the shared ``tools/make_bench.py`` (``shared_dir`` is the
    ``shared`` folder) into a temporary folder and renamed, so an interrupted run leaves nothing half-made."""
    out = Path(workdir) / f"{kind}{count}"
    if not out.is_dir():
        Path(workdir).mkdir(parents=True, exist_ok=True)
        tool = Path(shared_dir) / "tools" / "make_bench.py"
        staging = Path(tempfile.mkdtemp(prefix=f".{kind}{count}-", dir=workdir))
        try:
            subprocess.run(
                [sys.executable, str(tool), kind, str(staging / "corpus"), str(count), str(seed)],
                check=True,
                capture_output=True,
            )
            os.replace(staging / "corpus", out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return out


def engine_figures(num_edges: int = 100_000, num_features: int = 20, repeat: int = 20, seed: int = 0) -> list[Figure]:
    """Edge scoring + log inside + outside, Viterbi with its yield, and feature expectations on a forest
    of at least ``num_edges`` edges of arity 1-2 (the targets of the engine issue)."""
    hg = random_hypergraph(int(num_edges * 1.15), num_features=num_features, seed=seed)
    rng = np.random.default_rng(seed)
    weights = Weights({f"F{i}": float(rng.normal(scale=0.1)) for i in range(num_features)})
    semiring = LogSemiring()

    def inside_outside() -> None:
        scores = weights.edge_scores(hg)
        beta = algorithms.inside(hg, semiring, scores)
        algorithms.outside(hg, semiring, scores, beta)

    size = f"{hg.num_edges} edges, {hg.num_nodes} nodes, {num_features} features"
    return [
        Figure("edge scoring + inside + outside (log)", median_time(inside_outside, repeat), 0.010, size),
        Figure(
            "Viterbi derivation with yield", median_time(lambda: algorithms.viterbi(hg, weights), repeat), 0.010, size
        ),
        Figure(
            "feature expectations",
            median_time(lambda: algorithms.feature_expectations(hg, weights), repeat),
            0.030,
            size,
        ),
    ]


def metric_figures(num_hypotheses: int = 1_000_000, seed: int = 0) -> list[Figure]:
    """BLEU statistics of ``num_hypotheses`` hypotheses (about 25 words, 4 references)."""
    from hypertune.metrics.benchmark import benchmark_bleu_stats

    result = benchmark_bleu_stats(n_hypotheses=num_hypotheses, seed=seed)
    detail = (
        f"{int(result['bleu_stats.n_hypotheses'])} hypotheses, mean length "
        f"{result['bleu_stats.mean_length']:.1f}, 4 references"
    )
    return [Figure("BLEU statistics", result["bleu_stats.total_s"], 5.0 * num_hypotheses / 1_000_000, detail)]


def format_figures(shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> list[Figure]:
    from hypertune.formats.benchmark import benchmark_formats

    return benchmark_formats(Path(shared_dir) / "data")


def mert_figures(shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> list[Figure]:
    from hypertune.tuners.mert_benchmark import benchmark_mert

    return benchmark_mert(shared_dir, workdir)


def mira_figures(shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> list[Figure]:
    from hypertune.tuners.mira_benchmark import benchmark_mira

    return benchmark_mira(str(shared_dir), str(workdir))


SUITES = ("engine", "metrics", "formats", "mert", "mira")
SHARED_SUITES: dict[str, Callable[..., list[Figure]]] = {
    "formats": format_figures,
    "mert": mert_figures,
    "mira": mira_figures,
}
