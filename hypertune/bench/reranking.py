"""Reranking with given scores (issue #30): the tuner table of docs/reranking.md and the ``reranking`` suite of
``hypertune bench``.

The data are seeded synthetic reranking sets (:func:`~hypertune.generate.random_reranking_set`: n-best lists of
neural MT with QE-like features and a COMET-like score): a dev set to tune on and a test set, of the same size,
to report on. Every tuner starts from the model's own log-probability (``logprob`` 1, the rest 0) and tunes
``scores.comet``; the table gives the dev score, the held-out scores (the given score, BLEU, chrF and TER against
the sets' references) and the time. Random search gets MERT's time (its samples are set from a first timing).
``python -m hypertune.bench.reranking [SENTENCES] [CANDIDATES]`` prints the table as Markdown.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from hypertune.bench.core import Figure, median_time
from hypertune.formats import read_graphs, write_graphs
from hypertune.generate import random_reranking_set
from hypertune.metrics import BleuMetric, ChrfMetric, GivenScore, TerMetric, parse_metric
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners import Mert, MinRisk, Trainer, TuningSet
from hypertune.tuners.base import Tuner
from hypertune.tuners.reranking import before_and_after
from hypertune.weights import Weights

#: The tuners of the table, by the name it shows; random search's sample count is set to take MERT's time.
TUNERS: dict[str, Callable[[int], Tuner]] = {
    "MERT, 20 restarts": lambda samples: Mert(restarts=20, seed=1),
    "PRO": lambda samples: Trainer(loss="pro", seed=1),
    "Plackett-Luce": lambda samples: Trainer(loss="pl", seed=1),
    "minimum risk (expected score)": lambda samples: MinRisk(seed=1),
    "random search, MERT's time": lambda samples: Mert(optimizer="random-search", samples=samples, seed=1),
    "grid, 3 features x 21 points": lambda samples: Mert(
        optimizer="grid", grid_points=21, features=("logprob", "qe", "length"), seed=1
    ),
}

START = {"logprob": 1.0}


def reranking_sets(sentences: int, candidates: int, features: int = 8) -> tuple[Any, Any, Any, Any]:
    """Dev and test sets (graphs and references) sharing one feature space and vocabulary."""
    space, vocabulary = FeatureSpace(), Vocabulary()
    dev, dev_refs = random_reranking_set(sentences, candidates, num_features=features, seed=1,
                                         feature_space=space, vocabulary=vocabulary)  # fmt: skip
    test, test_refs = random_reranking_set(sentences, candidates, num_features=features, seed=2,
                                           feature_space=space, vocabulary=vocabulary)  # fmt: skip
    return dev, [[r] for r in dev_refs], test, [[r] for r in test_refs]


def tuner_table(sentences: int = 2000, candidates: int = 64) -> list[dict[str, Any]]:
    """One row per tuner: dev score, held-out scores before and after, seconds."""
    dev, _, test, test_refs = reranking_sets(sentences, candidates)
    tuning_set = TuningSet.from_corpus(dev, None, parse_metric("scores.comet"))
    start = Weights(START)
    metrics = [GivenScore("comet"), BleuMetric(tokenize="none"), ChrfMetric(), TerMetric()]
    rows = []
    Mert(restarts=0).fit(tuning_set, start)  # compiles the kernels before anything is timed
    samples, mert_seconds = 100, None
    for name, make in TUNERS.items():
        for _ in range(3):  # random search: samples rescaled until it takes about MERT's time
            began = time.perf_counter()
            result = make(samples).fit(tuning_set, start)
            seconds = time.perf_counter() - began
            if "random search" not in name or mert_seconds is None or abs(seconds / mert_seconds - 1) < 0.1:
                break
            samples = max(1, round(samples * mert_seconds / seconds))
        if name.startswith("MERT"):
            mert_seconds = seconds
        heldout = before_and_after(test, test_refs, start, result.weights, metrics)["metrics"]
        rows.append({"tuner": name + (f" ({samples} samples)" if "random search" in name else ""),
                     "dev": result.score_after, "dev_before": result.score_before, "seconds": seconds,
                     "heldout": heldout})  # fmt: skip
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table as docs/reranking.md shows it (BLEU, chrF, TER on the 0-100 scale; the given score as it is)."""
    first = rows[0]["heldout"]
    lines = [
        f"| start (logprob only) | {rows[0]['dev_before']:.4f} | {first['scores.comet']['before']:.4f} | "
        f"{100 * first['bleu']['before']:.2f} | {100 * first['chrf']['before']:.2f} | "
        f"{100 * first['ter']['before']:.2f} | |"
    ]
    for row in rows:
        h = row["heldout"]
        lines.append(
            f"| {row['tuner']} | {row['dev']:.4f} | {h['scores.comet']['after']:.4f} | "
            f"{100 * h['bleu']['after']:.2f} | {100 * h['chrf']['after']:.2f} | {100 * h['ter']['after']:.2f} | "
            f"{row['seconds']:.2f} |"
        )
    head = "| tuner | dev comet | test comet | test BLEU | test chrF | test TER | seconds |\n" + "|---" * 7 + "|"
    return head + "\n" + "\n".join(lines)


def benchmark_reranking(shared_dir: str, workdir: str) -> list[Figure]:
    """The issue's figures: reading a 2,000 x 256 x 8-feature JSONL set, and MERT with 20 restarts on
    ``scores.comet`` at 2,000 x 64 and 2,000 x 256 (after compilation)."""
    os.makedirs(workdir, exist_ok=True)
    figures = []
    for candidates, target in ((64, 2.0), (256, 6.0)):
        dev, *_ = reranking_sets(2000, candidates)
        path = os.path.join(workdir, f"rerank-2000x{candidates}.jsonl")
        if not os.path.exists(path):
            write_graphs(dev, path, "jsonl")
        size = os.path.getsize(path)
        seconds = median_time(partial(read_graphs, path, "jsonl"), 3)
        figures.append(Figure(f"JSONL read, 2,000 x {candidates} x 8", seconds, size / 50e6,
                              f"{size / seconds / 1e6:.0f} MB/s of {size / 1e6:.0f} MB (target 50 MB/s)"))  # fmt: skip
        tuning_set = TuningSet.from_corpus(dev, None, parse_metric("scores.comet"))
        Mert(restarts=0).fit(tuning_set, Weights(START))
        seconds = median_time(partial(Mert(restarts=20, seed=1).fit, tuning_set, Weights(START)), 1)
        figures.append(Figure(f"MERT, 20 restarts, scores.comet, 2,000 x {candidates}", seconds, target))
    return figures


if __name__ == "__main__":  # pragma: no cover - prints the table of docs/reranking.md
    args = [int(a) for a in sys.argv[1:3]]
    print(markdown(tuner_table(*args)))
