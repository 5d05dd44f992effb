"""Benchmarks users run on their own machines (``hypertune bench``), one module per suite; the figures of
docs/performance.md. This package depends on the library; nothing in the library imports it (only the
``bench`` command does), which tests/docs/test_architecture.py checks.

Each figure is the median wall time of ``repeat`` runs after one warm-up run (which also compiles the
numba kernels), against the project's target for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from hypertune.bench.core import Figure, make_bench_corpus, median_time


def engine_figures(num_edges: int = 100_000, num_features: int = 20, repeat: int = 20, seed: int = 0) -> list[Figure]:
    from hypertune.bench.engine import engine_figures as figures

    return figures(num_edges, num_features, repeat, seed)


def metric_figures(num_hypotheses: int = 1_000_000, seed: int = 0) -> list[Figure]:
    from hypertune.bench.metrics import metric_figures as figures

    return figures(num_hypotheses, seed)


def format_figures(shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> list[Figure]:
    from hypertune.bench.formats import benchmark_formats

    return benchmark_formats(shared_dir, workdir)


def mert_figures(shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> list[Figure]:
    from hypertune.bench.mert import benchmark_mert

    return benchmark_mert(shared_dir, workdir)


def mira_figures(shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> list[Figure]:
    from hypertune.bench.mira import benchmark_mira

    return benchmark_mira(str(shared_dir), str(workdir))


def minrisk_figures(shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> list[Figure]:
    from hypertune.bench.minrisk import benchmark_minrisk

    return benchmark_minrisk(str(shared_dir), str(workdir))


def oracle_figures(shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> list[Figure]:
    from hypertune.bench.oracle import benchmark_oracle

    return benchmark_oracle(str(shared_dir), str(workdir))


def train_figures(shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> list[Figure]:
    from hypertune.bench.tuners import benchmark_train

    return benchmark_train(str(shared_dir), str(workdir))


def online_figures(shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> list[Figure]:
    from hypertune.bench.tuners import benchmark_online

    return benchmark_online(str(shared_dir), str(workdir))


def reranking_figures(shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> list[Figure]:
    from hypertune.bench.reranking import benchmark_reranking

    return benchmark_reranking(str(shared_dir), str(workdir))


def mbr_figures(shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str]) -> list[Figure]:
    from hypertune.bench.mbr import benchmark_mbr

    return benchmark_mbr(str(shared_dir), str(workdir))


def cold_start_figures() -> list[Figure]:
    from hypertune.bench.cold_start import cold_start_figures as figures

    return figures()


SUITES = (
    "engine",
    "metrics",
    "cold-start",
    "formats",
    "mert",
    "mira",
    "minrisk",
    "oracle",
    "train",
    "online",
    "reranking",
    "mbr",
)
SHARED_SUITES: dict[str, Callable[..., list[Figure]]] = {
    "formats": format_figures,
    "mert": mert_figures,
    "mira": mira_figures,
    "minrisk": minrisk_figures,
    "oracle": oracle_figures,
    "train": train_figures,
    "online": online_figures,
    "reranking": reranking_figures,
    "mbr": mbr_figures,
}


__all__ = [
    "SHARED_SUITES",
    "SUITES",
    "Figure",
    "cold_start_figures",
    "engine_figures",
    "make_bench_corpus",
    "median_time",
    "metric_figures",
]
