"""Benchmarks and the held-out check of minimum-risk training (figures for docs/minrisk.md and
docs/performance.md).

* :func:`benchmark_minrisk`: objective + gradient over the 1,000 x 100 k-best corpus and over 200 forests
  of ``shared/tools/make_bench.py`` (after the one-off n-gram split, timed apart), and a whole annealed
  training run on the 200 forests, against the minimum-risk issue's targets.
* :func:`heldout_check`: tune on half of the Moses scorer data, 1-best BLEU on the other half, for MERT
  (20 restarts) and the three objectives with default options. ``python -m hypertune.bench.minrisk
  ../shared`` prints the table of docs/minrisk.md.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from functools import partial

from hypertune.bench.core import Figure, make_bench_corpus, median_time
from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.metrics import BleuMetric
from hypertune.tuners import Mert, TuningSet
from hypertune.tuners.minrisk import Annealing, MinRisk
from hypertune.tuners.model_best import ModelBest
from hypertune.tuners.shards import Shard
from hypertune.weights import Weights

MOSES_START = {
    **{f"d_{i}": 0.3 for i in range(7)},
    "lm_0": 0.5,
    "lm_1": 0.5,
    **{f"tm_{i}": 0.2 for i in range(5)},
    "w": -1.0,
}
"""Start weights of the held-out check: the usual values of a Moses ``moses.ini``."""


def benchmark_minrisk(shared_dir: str, workdir: str) -> list[Figure]:
    """Targets (minimum-risk issue): objective + gradient over 1,000 x 100 in 20 ms; linear-bleu objective
    + gradient over 200 forests in 0.5 s; an annealed training run on them in 5 minutes."""
    figures = []
    nbest = make_bench_corpus(shared_dir, workdir, "nbest", 1000)
    tuning_set = _load(nbest / "nbest.gz", nbest / "ref")
    start = Weights({name: 0.1 for name in tuning_set.feature_space.names})
    for objective in ("xbleu", "risk", "linear-bleu"):
        problem = MinRisk(objective=objective).problem(tuning_set, start)
        seconds = median_time(partial(problem.value_and_gradient, problem.start, 1.0, 0.5), 20)
        detail = f"{sum(g.num_edges for g in tuning_set.graphs)} edges, entropy term included"
        figures.append(Figure(f"minrisk {objective}: objective + gradient, 1,000 x 100", seconds, 0.020, detail))
    hg200 = make_bench_corpus(shared_dir, workdir, "hg", 200)
    tuning_set = _load(hg200 / "hg", hg200 / "ref")
    weights = read_weights([str(hg200 / "dense")])
    began = time.perf_counter()
    problem = MinRisk(objective="linear-bleu").problem(tuning_set, weights)
    split = time.perf_counter() - began
    seconds = median_time(lambda: problem.value_and_gradient(problem.start, 1.0), 5)
    split_edges = sum(problem.shards.map(_split_edges, problem.key))
    detail = f"{split_edges} edges after the n-gram split, which took {split:.1f} s once"
    figures.append(Figure("minrisk linear-bleu: objective + gradient, 200 forests", seconds, 0.5, detail))
    began = time.perf_counter()
    result = MinRisk(objective="linear-bleu", anneal=Annealing()).fit(tuning_set, weights)
    detail = (
        f"{len(result.history)} L-BFGS iterations, {result.evaluations} evaluations, BLEU "
        f"{100 * result.score_before:.2f} -> {100 * result.score_after:.2f}"
    )
    figures.append(Figure("minrisk linear-bleu annealed (1000:0.5:0.001, quench to 64), 200 forests",
                          time.perf_counter() - began, 300.0, detail))  # fmt: skip
    return figures


def _split_edges(shard: Shard, key: str) -> int:
    """The edges of a shard's search spaces (its forests split by n-gram state)."""
    return int(shard.state[key].space.packed.num_edges)


def _load(graphs: os.PathLike[str], references: os.PathLike[str]) -> TuningSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unused reference lines
        return TuningSet.from_corpus(
            read_graphs([str(graphs)]), read_references([str(references)]), BleuMetric(tokenize="none")
        )


def heldout_check(shared_dir: str) -> list[dict[str, object]]:
    """One row per (tuner, tuning half): BLEU on the tuning half and on the other half (0-100)."""
    folder = os.path.join(shared_dir, "data", "moses", "scorer-data")
    graphs = read_graphs([os.path.join(folder, "nbest.out.gz")])
    references = read_references([os.path.join(folder, "reference.txt.gz")])
    halves = {  # every line has a sentence id
        "1-50": [g for g in graphs if g.sentence_id is not None and g.sentence_id < 50],
        "51-100": [g for g in graphs if g.sentence_id is not None and g.sentence_id >= 50],
    }
    tuners = {
        "start weights": None,
        "MERT, 20 restarts": Mert(restarts=20, seed=0),
        "minrisk xbleu": MinRisk(objective="xbleu"),
        "minrisk risk": MinRisk(objective="risk"),
        "minrisk linear-bleu": MinRisk(objective="linear-bleu"),
    }
    rows = []
    for tune, test in (("1-50", "51-100"), ("51-100", "1-50")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unused reference lines
            tuning, held_out = (
                TuningSet.from_corpus(halves[h], references, BleuMetric(tokenize="none")) for h in (tune, test)
            )
        for name, tuner in tuners.items():
            weights = Weights(MOSES_START) if tuner is None else tuner.fit(tuning, Weights(MOSES_START)).weights
            rows.append({"tuner": name, "tuned on": tune, "tuning BLEU": _bleu(tuning, weights),
                         "held-out BLEU": _bleu(held_out, weights)})  # fmt: skip
    return rows


def _bleu(tuning_set: TuningSet, weights: Weights) -> float:
    w = weights.vector(tuning_set.feature_space, len(tuning_set.feature_space))
    return round(100 * float(tuning_set.score(ModelBest(tuning_set).stats(w).sum(axis=0))), 2)


if __name__ == "__main__":  # pragma: no cover - prints the held-out table
    for row in heldout_check(sys.argv[1] if len(sys.argv) > 1 else os.path.join("..", "shared")):
        print(" | ".join(f"{value}" for value in row.values()))
