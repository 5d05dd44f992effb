"""The tuners of docs/tuners.md's table (:data:`TUNERS`, each made from a seed with its default options); the
table itself is the cross-validated experiment of :mod:`hypertune.bench.tuner_table`, which ``python -m
hypertune.bench.tuners ../shared [WORKDIR]`` runs and prints as Markdown (``... sparse``: the sparse-feature
table).

Also :func:`benchmark_train`: PRO (sampling + classifier) and one PL(5) objective + gradient on the
1,000 x 100 corpus of ``make_bench.py nbest`` (the ``train`` suite of ``hypertune bench``), and
:func:`benchmark_online`: an epoch of every online optimizer there, and an online epoch on the 200 graphs of
``make_bench.py hg`` beside an epoch of forest MIRA (the ``online`` suite).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from functools import partial

import numpy as np

from hypertune.bench.core import Figure, make_bench_corpus, median_time
from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.metrics import BleuMetric
from hypertune.tuners import Mert, MinRisk, Mira, Trainer, TuningSet
from hypertune.tuners.base import Tuner
from hypertune.tuners.losses import make_loss
from hypertune.tuners.model_best import ModelBest
from hypertune.tuners.online import OnlineTrainer
from hypertune.tuners.relevant_set import RelevantSet
from hypertune.weights import Weights

TUNERS: dict[str, Callable[[int], Tuner]] = {
    "MERT, 20 restarts": lambda seed: Mert(restarts=20, seed=seed),
    "batch MIRA": lambda seed: Mira(seed=seed),
    "PRO": lambda seed: Trainer(loss="pro", seed=seed),
    "PRO, cdec's sigmoid acceptance": lambda seed: Trainer(loss="pro", acceptance="sigmoid", seed=seed),
    "PL(1)": lambda seed: Trainer(loss="pl", top_k=1, seed=seed),
    "PL(5)": lambda seed: Trainer(loss="pl", top_k=5, seed=seed),
    "ranking (hinge)": lambda seed: Trainer(loss="ranking", seed=seed),
    "softmax": lambda seed: Trainer(loss="softmax", seed=seed),
    "MSE": lambda seed: Trainer(loss="mse", seed=seed),
    "minimum risk (xbleu)": lambda seed: MinRisk(objective="xbleu", seed=seed),
    "perceptron": lambda seed: OnlineTrainer(loss="perceptron", seed=seed),
    "PA (online MIRA: latent SVM, hope target)": lambda seed: OnlineTrainer(
        loss="latent-svm", target="hope", optimizer="pa", seed=seed
    ),
    "AROW (latent SVM)": lambda seed: OnlineTrainer(loss="latent-svm", optimizer="arow", seed=seed),
    "AdaGrad (latent SVM)": lambda seed: OnlineTrainer(loss="latent-svm", optimizer="adagrad", seed=seed),
    "AdaGrad + L1 0.01 (latent SVM)": lambda seed: OnlineTrainer(
        loss="latent-svm", optimizer="adagrad", l1=0.01, seed=seed
    ),
    "latent SVM (SGD)": lambda seed: OnlineTrainer(loss="latent-svm", seed=seed),
    "ramp (SGD)": lambda seed: OnlineTrainer(loss="ramp", seed=seed),
    "softmax-margin (SGD)": lambda seed: OnlineTrainer(loss="softmax-margin", seed=seed),
    "cost-margin (SGD)": lambda seed: OnlineTrainer(loss="costmargin", seed=seed),
    "Tillmann & Zhang perceptron (Table III)": lambda seed: RelevantSet(seed=seed),
    "Tillmann & Zhang cost-margin (Table II, eq. 7)": lambda seed: RelevantSet(update="costmargin", seed=seed),
}


def _bleu(tuning_set: TuningSet, weights: Weights) -> float:
    w = weights.vector(tuning_set.feature_space, len(tuning_set.feature_space))
    return 100 * float(tuning_set.score(ModelBest(tuning_set).stats(w).sum(axis=0)))


def benchmark_train(shared_dir: str, workdir: str) -> list[Figure]:
    """Targets (loss x optimizer issue): PRO on 1,000 x 100 in 3 s; one PL(5) objective + gradient in 20 ms."""
    nbest = make_bench_corpus(shared_dir, workdir, "nbest", 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tuning_set = TuningSet.from_corpus(
            read_graphs([str(nbest / "nbest.gz")]), read_references([str(nbest / "ref")]), BleuMetric(tokenize="none")
        )
    start = Weights({name: 0.1 for name in tuning_set.feature_space.names})
    began = time.perf_counter()
    result = Trainer(loss="pro", seed=1).fit(tuning_set, start)
    detail = f"{result.pairs} pairs, BLEU {100 * result.score_before:.2f} -> {100 * result.score_after:.2f}"
    figures = [Figure("PRO (sampling + classifier), 1,000 x 100", time.perf_counter() - began, 3.0, detail)]
    trainer = Trainer(loss="pl", top_k=5, seed=1)
    w = start.vector(tuning_set.feature_space, len(tuning_set.feature_space))
    loss = make_loss("pl", 5, 30)
    loss.prepare(trainer.candidates(tuning_set, w), w, np.random.default_rng(1))
    seconds = median_time(lambda: loss.value_and_gradient(w), 20)
    figures.append(Figure("PL(5) objective + gradient, 1,000 x 100 (30 kept per list)", seconds, 0.020))
    return figures


def _quiet_set(graph_paths: list[str], reference_paths: list[str]) -> TuningSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TuningSet.from_corpus(
            read_graphs(graph_paths), read_references(reference_paths), BleuMetric(tokenize="none")
        )


def benchmark_online(shared_dir: str, workdir: str) -> list[Figure]:
    """Targets (online tuners issue): an epoch of any online optimizer over 1,000 x 100 in 0.5 s; over the 200
    graphs of ``make_bench.py hg``, an online epoch no slower than an epoch of forest MIRA. Epoch times include
    the evaluation of the averaged weights, as MIRA's do."""
    nbest = make_bench_corpus(shared_dir, workdir, "nbest", 1000)
    tuning_set = _quiet_set([str(nbest / "nbest.gz")], [str(nbest / "ref")])
    start = Weights({name: 0.1 for name in tuning_set.feature_space.names})
    figures = []
    for name, options in (
        ("perceptron", {"loss": "perceptron"}),
        ("PA", {"loss": "latent-svm", "optimizer": "pa"}),
        ("AROW", {"loss": "latent-svm", "optimizer": "arow"}),
        ("SGD", {"loss": "latent-svm", "optimizer": "sgd"}),
        ("AdaGrad + L1", {"loss": "latent-svm", "optimizer": "adagrad", "l1": 0.01}),
    ):
        result = OnlineTrainer(epochs=3, seed=1, **options).fit(tuning_set, start)
        seconds = min(entry.seconds for entry in result.history)
        figures.append(Figure(f"online epoch, {name}, 1,000 x 100", seconds, 0.5))
    graphs = make_bench_corpus(shared_dir, workdir, "hg", 200)
    forest_set = _quiet_set([str(graphs / "hg")], [str(graphs / "ref")])
    start = read_weights([str(graphs / "dense"), str(graphs / "sparse")])
    mira = Mira(epochs=2, seed=1).fit(forest_set, start)
    mira_epoch = min(entry.seconds for entry in mira.history)
    online = OnlineTrainer(loss="latent-svm", target="hope", optimizer="pa", epochs=2, seed=1).fit(forest_set, start)
    online_epoch = min(entry.seconds for entry in online.history)
    label = "online epoch (latent SVM, PA), 200 graphs"
    figures.append(Figure(label, online_epoch, mira_epoch, f"forest MIRA epoch {mira_epoch:.2f} s"))
    return figures


def sparse_table(shared_dir: str, workdir: str, l1s: tuple[float, ...] = (0.0, 0.03, 0.1)) -> str:
    """The sparse-feature figures of docs/tuners.md: on the 200 graphs of ``make_bench.py hg`` (jittered copies
    of the Moses dense and sparse hypergraphs of ../shared, which come without a reference), batch MIRA (its
    defaults, 60 epochs) against AdaGrad on the latent SVM loss towards the hope with L1 weights ``l1s`` (as
    many epochs): the tuning BLEU of every result's model-best translations in the unpruned graphs, and the
    share of sparse features (those not in the dense weights file) whose weight ends nonzero."""
    graphs = make_bench_corpus(shared_dir, workdir, "hg", 200)
    tuning_set = _quiet_set([str(graphs / "hg")], [str(graphs / "ref")])
    start = read_weights([str(graphs / "dense"), str(graphs / "sparse")])
    dense = set(read_weights([str(graphs / "dense")]))
    sparse = [name for name in tuning_set.feature_space.names if name not in dense]
    tuners: dict[str, Callable[[], Tuner]] = {"batch MIRA": lambda: Mira(seed=1)}
    for l1 in l1s:
        tuners[f"AdaGrad, latent SVM (hope), L1 {l1:g}"] = partial(
            OnlineTrainer, loss="latent-svm", target="hope", optimizer="adagrad", l1=l1, epochs=60, seed=1
        )
    lines = [
        f"start weights: BLEU {_bleu(tuning_set, start):.2f}, {len(sparse)} sparse features of "
        f"{len(tuning_set.feature_space)}",
        "",
        "| tuner | tuning BLEU | sparse features nonzero | seconds |",
        "|---|---|---|---|",
    ]
    for name, make in tuners.items():
        began = time.perf_counter()
        result = make().fit(tuning_set, Weights(start))
        seconds = time.perf_counter() - began
        kept = sum(1 for f in sparse if result.weights.get(f, 0.0) != 0.0)
        lines.append(f"| {name} | {_bleu(tuning_set, result.weights):.2f} | {kept} of {len(sparse)} "
                     f"({100 * kept / max(len(sparse), 1):.0f}%) | {seconds:.1f} |")  # fmt: skip
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - prints the tables of docs/tuners.md
    arguments = [a for a in sys.argv[1:] if a != "sparse"]
    shared = arguments[0] if arguments else os.path.join("..", "shared")
    if "sparse" in sys.argv[1:]:
        print(sparse_table(shared, os.path.join(tempfile.gettempdir(), "hypertune-bench")))
    else:
        from hypertune.bench.tuner_table import datasets, loop_table, markdown, tuner_table, verdict

        def say(message: str) -> None:
            print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr)

        for data in datasets(shared):
            rows = tuner_table(data, TUNERS, progress=say)
            print(f"### {data.name}\n\n{markdown(rows)}\n\n{verdict(rows)}\n")
        workdir = arguments[1] if len(arguments) > 1 else os.path.join(tempfile.gettempdir(), "hypertune-bench")
        rows = loop_table(shared, workdir, progress=say)
        table = markdown(rows, "dev BLEU", "s/run")
        print(f"### In the tuning loop (make_bench hypergraphs)\n\n{table}\n\n{verdict(rows)}")
