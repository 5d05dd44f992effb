"""Lattice MERT on one process's threads against a local Dask cluster (issue 19's benchmark; figures in
docs/distributed.md).

``python -m hypertune.distributed.bench CORPUS [--workers 2] [--graphs 500]`` where ``CORPUS`` is a folder
``make_bench.py hg`` wrote (``hg/``, ``ref``, ``dense``, ``sparse``; ``hypertune bench --suite mert`` builds
``/tmp/hypertune-bench/hg500``). The run is the MERT suite's: cyclic coordinate ascent plus 10 random
directions per round over the dense features, seed 1, until a round brings no gain. It is timed without
loading (both sides read the native cache ``corpus.htc``) and includes the line searcher's set-up. The
cluster run must give the same weights bit for bit; per line search it reports the bytes the shards send
(error surfaces) and receive (``w0`` and the direction), and per shard the mean time of its part.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import pickle
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from hypertune.choices import Envelope
from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.formats.cache import write as write_cache
from hypertune.metrics import BleuMetric
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.linesearch import ErrorSurfaces
from hypertune.tuners.mert import Mert, ShardedSearcher, _MertRun, shard_surfaces
from hypertune.tuners.shards import Shard, shard_costs, shard_ranges


def load_corpus(corpus: str, graphs: int) -> TuningSet:
    """The benchmark corpus's first ``graphs`` graphs and their references (through its native cache)."""
    folder = Path(corpus)
    cache = folder / "corpus.htc"
    if not cache.is_file():
        write_cache(read_graphs(str(folder / "hg")), str(cache))
    found = read_graphs(str(cache))[:graphs]
    references = read_references(str(folder / "ref"))[: len(found)]
    return TuningSet(found, references, BleuMetric(tokenize="none"))


def load_bench_shard(corpus: str, graphs: int, index: int, count: int) -> tuple[TuningSet, int]:
    """On a worker: shard ``index`` of ``count`` of :func:`load_corpus`."""
    whole = load_corpus(corpus, graphs)
    start, stop = shard_ranges(shard_costs(whole), count)[index]
    return whole.subset(start, stop), start


def timed_surfaces(
    shard: Shard, envelope: Envelope, w0: np.ndarray, direction: np.ndarray
) -> tuple[ErrorSurfaces, float]:
    """:func:`shard_surfaces` and the seconds it took on the worker."""
    began = time.perf_counter()
    surfaces = shard_surfaces(shard, envelope, w0, direction)
    return surfaces, time.perf_counter() - began


def weights_digest(weights: Any) -> str:
    """A short digest of tuned weights (names and exact values), to compare runs made by separate processes."""
    text = "\n".join(f"{name} {float(value)!r}" for name, value in sorted(dict(weights).items()))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--workers", type=int, default=2, help="local cluster's workers (0: no cluster run)")
    parser.add_argument(
        "--jobs", default="2", help="threads of the single-process run; several (1,4,16) make one run each"
    )
    parser.add_argument("--graphs", type=int, default=500)
    parser.add_argument("--skip-local", action="store_true", help="only the cluster run")
    args = parser.parse_args(argv)
    try:
        jobs = [int(item) for item in args.jobs.split(",")]
    except ValueError:
        parser.error(f"--jobs: expected thread counts separated by commas, got {args.jobs!r}")

    folder = Path(args.corpus)
    weights = read_weights([str(folder / "dense"), str(folder / "sparse")])
    tuning = load_corpus(args.corpus, args.graphs)
    names = set(tuning.feature_space.names)
    dense = [name for name in read_weights(str(folder / "dense")) if name in names]

    def tuner(jobs: int | None = None) -> Mert:
        return Mert(optimizer="cyclic", random_directions=10, seed=1, features=dense, n_jobs=jobs)

    report: dict[str, Any] = {  # printed as JSON
        "machine": f"{platform.node()} {os.cpu_count()} cores, {platform.processor() or platform.machine()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "graphs": len(tuning),
        "edges": int(sum(g.num_edges for g in tuning.graphs)),
    }
    local = None
    for count in [] if args.skip_local else jobs:
        began = time.perf_counter()
        run = tuner(count).fit(tuning, weights)
        report[f"local_{count}_threads_s"] = time.perf_counter() - began
        report[f"local_{count}_threads_line_searches"] = run.line_searches
        report[f"local_{count}_threads_bleu"] = [run.score_before, run.score_after]
        report[f"local_{count}_threads_weights_sha1"] = weights_digest(run.weights)
        local = local or run  # the first, which the cluster's run is checked against
        print(json.dumps(report), file=sys.stderr, flush=True)
    del tuning
    if args.workers < 1:
        print(json.dumps(report, indent=1))
        return 0
    from hypertune.distributed import DaskShards, open_cluster

    with open_cluster(f"local:{args.workers}", lambda line: print(line, file=sys.stderr)) as client:
        loader = functools.partial(load_bench_shard, args.corpus, args.graphs)
        with DaskShards(client, loader, BleuMetric(tokenize="none")) as shards:
            report["cluster_load_s"] = shards.load_seconds
            began = time.perf_counter()
            run_searcher = ShardedSearcher(shards)
            result = _MertRun(tuner(), run_searcher).fit(weights)  # Mert.fit_shards, keeping the searcher's traffic
            report[f"cluster_{args.workers}_workers_s"] = time.perf_counter() - began
            report["cluster_bleu"] = [result.score_before, result.score_after]
            report["cluster_weights_sha1"] = weights_digest(result.weights)
            report["mean_bytes_per_line_search"] = float(np.mean(run_searcher.traffic))
            searcher = ShardedSearcher(shards)
            w0 = weights.vector(shards.feature_space)
            direction = np.zeros_like(w0)
            direction[shards.feature_space.names.index(dense[0])] = 1.0
            sent = len(pickle.dumps((w0, direction)))
            parts = [shards.map(timed_surfaces, "probing", w0, direction) for _ in range(3)]
            received = [sum(p[0].nbytes for p in part) for part in parts]
            report["per_line_search"] = {
                "bytes_from_shards": received[-1],
                "bytes_to_each_shard": sent,
                "segments": int(sum(p[0].segments for p in parts[-1])),
                "shard_seconds": [float(np.median([part[k][1] for part in parts])) for k in range(shards.count)],
            }
            began = time.perf_counter()
            for _ in range(3):
                searcher.surfaces(w0, direction)
            report["per_line_search"]["round_trip_s"] = (time.perf_counter() - began) / 3
    report["cluster_line_searches"] = result.line_searches
    if local is not None:
        report["identical"] = dict(local.weights) == dict(result.weights) and local.score_after == result.score_after
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
