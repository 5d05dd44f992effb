"""Measurements of the oracle methods (figures for docs/oracle.md and docs/performance.md).

* :func:`oracle_quality`: on seeded random forests small enough to enumerate, how often ``linear`` and
  ``partial`` (beam 1 and 4) find the exact BLEU+1 oracle and their mean gap to it.
* :func:`benchmark_oracle`: on the 200 forests of ``make_bench.py hg OUT 200 7``, corpus BLEU of each
  method's oracles against the oracle of each forest's 1000-best list, with times; the greedy corpus oracle
  over the 1,000 x 100 lists of ``make_bench.py nbest``.
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any

import numpy as np

from hypertune.algorithms import sample
from hypertune.algorithms.kbest import LazyKBest
from hypertune.bench.core import Figure, make_bench_corpus
from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.generate import random_hypergraph
from hypertune.hypergraph import from_kbest
from hypertune.metrics import get_metric
from hypertune.tuners import TuningSet
from hypertune.tuners.oracle import OracleSearch
from hypertune.weights import Weights

QUALITY_METHODS: dict[str, dict[str, Any]] = {  # OracleSearch's options
    "linear": {"method": "linear", "linear_p": 0.8, "linear_r": 0.6},
    "partial": {"method": "partial"},
    "partial, beam 4": {"method": "partial", "beam": 4},
}


def oracle_quality(graphs: int = 100, seed: int = 0) -> dict[str, dict[str, float]]:
    """Per method: the share of sentences where it finds the exact oracle's BLEU+1 (``hits``) and the mean
    BLEU+1 gap to it (``gap``, 0-1), over ``graphs`` random forests (about 40 edges, 12 words) whose single
    reference is a sampled derivation's yield with a third of its words replaced at random."""
    rng = np.random.default_rng(seed)
    hits = {name: 0 for name in QUALITY_METHODS}
    gaps = {name: 0.0 for name in QUALITY_METHODS}
    for g in range(graphs):
        hg = random_hypergraph(40, vocabulary_size=12, num_features=3, seed=int(rng.integers(2**31)))
        words = sample(hg, Weights(), 1, random_state=g)[0].words
        vocabulary = [hg.vocabulary.word(i) for i in range(len(hg.vocabulary))]
        reference = " ".join(w if rng.random() > 1 / 3 else str(rng.choice(vocabulary)) for w in words)
        tuning_set = TuningSet([hg], [[reference]], get_metric("bleu+1", tokenize="none"))
        exact = OracleSearch(method="exact").run(tuning_set).oracles[0].score
        for name, options in QUALITY_METHODS.items():
            score = OracleSearch(**options).run(tuning_set).oracles[0].score
            hits[name] += score >= exact - 1e-12
            gaps[name] += exact - score
    return {name: {"hits": hits[name] / graphs, "gap": gaps[name] / graphs} for name in QUALITY_METHODS}


def exact_on_forests(shared_dir: str, workdir: str, graphs: int = 200) -> dict[str, Any]:
    """The exact oracle (branch and bound) on the first ``graphs`` forests of ``make_bench.py hg OUT 200 7``
    with their dense weights: per forest the expansions and seconds, corpus BLEU of the exact oracles, and for
    each approximation of :data:`QUALITY_METHODS` (``linear`` with p and r estimated instead) how often it
    finds the exact BLEU+1 and its mean gap. One sentence at a time, so one forest's time is its own."""
    corpus = make_bench_corpus(shared_dir, workdir, "hg", 200)
    tuning_set = _load([str(corpus / "hg" / f"{i}.gz") for i in range(graphs)], str(corpus / "ref"))
    weights = read_weights([str(corpus / "dense")])
    expansions, seconds, exact = [], [], []
    for s in range(len(tuning_set)):
        one = TuningSet([tuning_set.graphs[s]], [tuning_set.references[s]], tuning_set.metric, [0])
        began = time.perf_counter()
        result = OracleSearch(method="exact").run(one, weights)
        seconds.append(time.perf_counter() - began)
        expansions.append(int(result.details["exact"]["expansions"]))
        exact.append(result.oracles[0].score)
    figures: dict[str, Any] = {
        "expansions": expansions,
        "seconds": seconds,
        "bleu": OracleSearch(method="exact").run(tuning_set, weights).bleu,
    }
    for name, options in {**QUALITY_METHODS, "linear": {"method": "linear"}}.items():
        scores = [o.score for o in OracleSearch(**options).run(tuning_set, weights).oracles]
        figures[name] = {
            "hits": float(np.mean([x >= e - 1e-12 for x, e in zip(scores, exact, strict=True)])),
            "gap": float(np.mean([e - x for x, e in zip(scores, exact, strict=True)])),
        }
    return figures


def benchmark_oracle(shared_dir: str, workdir: str) -> list[Figure]:
    """Targets (oracle issue): linear and partial over the 200 forests in 10 s together; the greedy corpus
    oracle over 1,000 x 100 in 2 s. Lattice oracles must beat each forest's 1000-best-list oracle."""
    figures = []
    hg200 = make_bench_corpus(shared_dir, workdir, "hg", 200)
    tuning_set = _load([str(hg200 / "hg")], str(hg200 / "ref"))
    weights = read_weights([str(hg200 / "dense")])
    found = {}
    for name in ("linear", "partial", "corpus"):
        began = time.perf_counter()
        found[name] = OracleSearch(method=name).run(tuning_set, weights).bleu
        found[f"{name} seconds"] = time.perf_counter() - began
    began = time.perf_counter()
    lists = _kbest_lists(tuning_set, weights, 1000)
    kbest = OracleSearch(method="kbest").run(lists, weights).bleu
    extraction = time.perf_counter() - began
    detail = (
        f"oracle BLEU: linear {100 * found['linear']:.2f}, partial {100 * found['partial']:.2f}, corpus "
        f"{100 * found['corpus']:.2f} ({found['corpus seconds']:.1f} s), 1000-best lists {100 * kbest:.2f} "
        f"(extraction {extraction:.0f} s)"
    )
    figures.append(Figure("oracle linear + partial, 200 forests", found["linear seconds"] + found["partial seconds"],
                          10.0, detail))  # fmt: skip
    nbest = make_bench_corpus(shared_dir, workdir, "nbest", 1000)
    tuning_set = _load([str(nbest / "nbest.gz")], str(nbest / "ref"))
    began = time.perf_counter()
    result = OracleSearch(method="corpus").run(tuning_set)
    seconds = time.perf_counter() - began
    start = OracleSearch(method="kbest").run(tuning_set).bleu
    detail = f"oracle BLEU {100 * result.bleu:.2f} (sentence oracles: {100 * start:.2f})"
    figures.append(Figure("oracle corpus (greedy), 1,000 x 100", seconds, 2.0, detail))
    return figures


def _load(graphs: list[str], references: str) -> TuningSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unused reference lines
        return TuningSet.from_corpus(
            read_graphs(graphs), read_references([references]), get_metric("bleu+1", tokenize="none")
        )


def _kbest_lists(tuning_set: TuningSet, weights: Weights, k: int) -> TuningSet:
    """Each graph's k-best list of distinct strings under ``weights``, as a tuning set."""
    lists = []
    names = tuning_set.feature_space.names
    for hg in tuning_set.graphs:
        found = LazyKBest(hg, weights.edge_scores(hg), unique=True).best(k)
        rows = []
        for _, d in found:
            v = hg.derivation_features(d)
            rows.append((hg.derivation_words(d), {names[i]: float(v[i]) for i in np.flatnonzero(v)}))
        lists.append(from_kbest(rows, hg.feature_space, hg.vocabulary, sentence_id=hg.sentence_id))
    return TuningSet(lists, tuning_set.references, tuning_set.metric, tuning_set.sentence_ids)


if __name__ == "__main__":  # pragma: no cover - prints the quality tables
    for method, figure in oracle_quality().items():
        print(f"{method}: hits {100 * figure['hits']:.0f} %, mean gap {100 * figure['gap']:.2f} BLEU+1 points")
    found = exact_on_forests(os.path.join("..", "shared"), "/tmp/hypertune-bench")
    spent, searched = np.asarray(found.pop("seconds")), np.asarray(found.pop("expansions"))
    print(f"exact on the 200 benchmark forests: corpus BLEU {100 * found.pop('bleu'):.2f}; expansions median "
          f"{np.median(searched):.0f}, 90th percentile {np.percentile(searched, 90):.0f}, most {searched.max()}; "
          f"seconds in all {spent.sum():.1f}, most {spent.max():.2f}")  # fmt: skip
    for method, figure in found.items():
        print(f"{method}: hits {100 * figure['hits']:.0f} %, mean gap {100 * figure['gap']:.2f} BLEU+1 points")
    print(os.linesep.join(str(f) for f in benchmark_oracle(os.path.join("..", "shared"), "/tmp/hypertune-bench")))
