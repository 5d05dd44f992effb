"""The tuner table of docs/tuners.md as an experiment: every tuner under 5-fold cross-validation over sentences
with 3 seeds, on two real k-best sets of ../shared (the Moses scorer data, 100 sentences x 100-best, and
Joshua's Bengali-English 10-best list, 100 sentences with 4 references), with MultEval's report (Clark et al.
2011) and approximate-randomization significance against the start weights and against MERT.

The folds are one seeded permutation of the sentences cut into 5 parts (:func:`folds`); each tuner tunes on 4
parts from the data's start weights and its weights pick the 1-best of the fifth. Every sentence is held out
exactly once, so one seed gives one held-out translation of every sentence: a system of ``n`` sentences, and
three seeds give three optimizer runs of it. :func:`hypertune.metrics.significance.compare_systems` then reports
the mean and sample standard deviation of the held-out corpus BLEU over the runs, a 95% bootstrap interval, and
the approximate-randomization p-value over the runs concatenated (run i paired with run i; the start weights,
which no seed changes, are one run repeated). ``python -m hypertune.bench.tuners ../shared`` prints it.
"""

from __future__ import annotations

import functools
import os
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.hypergraph import Hypergraph
from hypertune.metrics import BleuMetric, Metric
from hypertune.metrics.significance import SystemReport, compare_systems
from hypertune.tuners import TuningSet
from hypertune.tuners.base import Tuner
from hypertune.tuners.model_best import ModelBest
from hypertune.weights import Weights

#: Significance level of the table's marks.
ALPHA = 0.05


@dataclass
class Dataset:
    """A k-best set with its references, metric and start weights."""

    name: str
    graphs: list[Hypergraph]
    references: list[list[str]]
    metric: Metric
    start: Weights


def datasets(shared_dir: str) -> list[Dataset]:
    """The Moses scorer data (from the usual moses.ini weights) and Joshua's Bengali-English 10-best list (from
    the weights of its config, which produced it)."""
    from hypertune.bench.minrisk import MOSES_START

    moses = os.path.join(shared_dir, "data", "moses", "scorer-data")
    joshua = os.path.join(shared_dir, "data", "joshua-bn-en")
    return [
        Dataset(
            "Moses scorer data (100 x 100-best, 1 reference)",
            read_graphs([os.path.join(moses, "nbest.out.gz")]),
            read_references([os.path.join(moses, "reference.txt.gz")]),
            BleuMetric(tokenize="none", lowercase=True),
            Weights(MOSES_START),
        ),
        Dataset(
            "Joshua Bengali-English (100 x 10-best, 4 references)",
            read_graphs([os.path.join(joshua, "output.gold")]),
            read_references([os.path.join(joshua, f"reference.en.{i}") for i in range(4)]),
            BleuMetric(tokenize="none"),
            read_weights([os.path.join(joshua, "joshua.config")]),
        ),
    ]


def folds(sentences: int, count: int = 5, seed: int = 0) -> list[np.ndarray]:
    """``count`` disjoint sets of sentence positions covering ``0..sentences-1``: a seeded permutation cut into
    parts of sizes differing by at most one."""
    order = np.random.default_rng(seed).permutation(sentences)
    return [np.sort(part) for part in np.array_split(order, count)]


@dataclass
class Runs:
    """One tuner's cross-validated runs: per seed the held-out statistics of every sentence (in sentence order)
    and the mean tuning BLEU over the folds; the seconds of each fit."""

    held_out: list[np.ndarray] = field(default_factory=list)
    tuning: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


class CrossValidation:
    """The folds' tuning and held-out sets of one dataset, built once for every tuner."""

    def __init__(self, data: Dataset, count: int = 5, seed: int = 0) -> None:
        self.data = data
        ids = sorted({g.sentence_id if g.sentence_id is not None else k for k, g in enumerate(data.graphs)})
        self.ids = ids
        position = {sid: k for k, sid in enumerate(ids)}
        self.sets: list[tuple[TuningSet, TuningSet, np.ndarray]] = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # each part leaves the other parts' reference lines unused
            for part in folds(len(ids), count, seed):
                held = {ids[k] for k in part}
                tune = [g for g in data.graphs if g.sentence_id not in held]
                test = [g for g in data.graphs if g.sentence_id in held]
                held_out = TuningSet.from_corpus(test, data.references, data.metric)
                rows = np.array([position[sid] for sid in held_out.sentence_ids])
                self.sets.append((TuningSet.from_corpus(tune, data.references, data.metric), held_out, rows))

    @property
    def sentences(self) -> int:
        return len(self.ids)

    def held_out_stats(self, weights_of: Callable[[TuningSet], Weights], runs: Runs | None = None) -> np.ndarray:
        """Every sentence's held-out statistics, each fold's sentences scored with the weights
        ``weights_of(tuning set)`` gives; the tuning BLEU and seconds go to ``runs``."""
        out = np.zeros((self.sentences, self.data.metric.stats_size))
        tuned = []
        for tuning, held_out, rows in self.sets:
            began = time.perf_counter()
            weights = weights_of(tuning)
            if runs is not None:
                runs.seconds.append(time.perf_counter() - began)
            out[rows] = model_best_stats(held_out, weights)
            tuned.append(float(tuning.score(model_best_stats(tuning, weights).sum(axis=0))))
        if runs is not None:
            runs.tuning.append(100 * statistics.mean(tuned))
        return out

    def run(self, make: Callable[[int], Tuner], seeds: tuple[int, ...]) -> Runs:
        runs = Runs()
        for seed in seeds:
            runs.held_out.append(self.held_out_stats(functools.partial(self._fit, make, seed), runs))
        return runs

    def _fit(self, make: Callable[[int], Tuner], seed: int, tuning: TuningSet) -> Weights:
        return make(seed).fit(tuning, Weights(self.data.start)).weights


def model_best_stats(tuning_set: TuningSet, weights: Weights) -> np.ndarray:
    """The statistics of each sentence's 1-best under ``weights``."""
    w = weights.vector(tuning_set.feature_space, len(tuning_set.feature_space))
    return np.asarray(ModelBest(tuning_set).stats(w))


@dataclass
class Row:
    """A line of the table: the tuner's report (score, spread, interval), its p-values against the start weights
    and against MERT with the differences of the mean scores (``None`` where it is that system), its mean
    tuning BLEU and seconds per fit."""

    tuner: str
    report: SystemReport
    p_start: float | None
    delta_start: float | None
    p_mert: float | None
    delta_mert: float | None
    tuning: float
    seconds: float


def tuner_table(
    data: Dataset,
    tuners: dict[str, Callable[[int], Tuner]],
    seeds: tuple[int, ...] = (1, 2, 3),
    baseline: str = "MERT, 20 restarts",
    trials: int = 10000,
    samples: int = 1000,
    progress: Callable[[str], None] | None = None,
) -> list[Row]:
    """One row per tuner (the start weights first), each tuned ``len(seeds)`` times under 5-fold
    cross-validation, compared with the start weights and with ``baseline``."""
    cv = CrossValidation(data)
    start = cv.held_out_stats(lambda tuning: data.start)
    start_runs = np.stack([start] * len(seeds))
    results = {}
    for name, make in tuners.items():
        if progress:
            progress(f"{data.name}: {name}")
        results[name] = cv.run(make, seeds)
    score, higher = data.metric.score, data.metric.higher_is_better

    def compare(base: np.ndarray, runs: np.ndarray) -> tuple[SystemReport, SystemReport]:
        first, second = compare_systems(score, [base, runs], higher, samples, trials)
        return first, second

    start_report = compare(start_runs, start_runs)[0]
    rows = [Row("start weights", start_report, None, None, None, None, 100 * _score(cv, data.start), 0.0)]
    mert = np.stack(results[baseline].held_out) if baseline in results else None
    for name, runs in results.items():
        stats = np.stack(runs.held_out)
        base, report = compare(start_runs, stats)
        row = Row(name, report, report.p_ar, report.score - base.score, None, None, statistics.mean(runs.tuning),
                  statistics.mean(runs.seconds))  # fmt: skip
        if mert is not None and name != baseline:
            base, versus = compare(mert, stats)
            row.p_mert, row.delta_mert = versus.p_ar, versus.score - base.score
        rows.append(row)
    return rows


def _score(cv: CrossValidation, weights: Weights) -> float:
    """The mean tuning-set BLEU of ``weights`` over the folds."""
    return statistics.mean(
        float(tuning.score(model_best_stats(tuning, weights).sum(axis=0))) for tuning, _, _ in cv.sets
    )


def markdown(rows: list[Row], tuning: str = "tuning BLEU", seconds: str = "s/fit") -> str:
    """The table: held-out BLEU (mean, sd over seeds, 95% interval), the difference from the start weights and
    from MERT with the approximate-randomization p-value (marked * below :data:`ALPHA`), the ``tuning`` BLEU and
    the ``seconds`` columns."""
    lines = [
        f"| tuner | held-out BLEU, mean ± sd | 95% interval | vs start: Δ, p | vs MERT: Δ, p | {tuning} | {seconds} |",
        "|---|---|---|---|---|---|---|",
    ]
    for k, row in enumerate(rows):
        r = row.report
        sd = f" ± {100 * r.sd:.2f}" if r.sd is not None and k > 0 else ""  # the start weights: no seed, no spread
        cells = [row.tuner, f"{100 * r.score:.2f}{sd}", f"{100 * r.ci_low:.2f}-{100 * r.ci_high:.2f}"]
        cells += [_versus(row.delta_start, row.p_start), _versus(row.delta_mert, row.p_mert)]
        cells += [f"{row.tuning:.2f}", f"{row.seconds:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _versus(delta: float | None, p: float | None) -> str:
    if delta is None or p is None:
        return "-"
    return f"{100 * delta:+.2f}, {p:.3f}{'*' if p < ALPHA else ''}"


def verdict(rows: list[Row]) -> str:
    """What the table says of BLEU (higher is better): which tuners differ significantly (approximate
    randomization, p < :data:`ALPHA`) from the start weights and from MERT, in which direction, or that none
    does."""

    def named(pairs: list[tuple[str, float | None, float | None]], sign: int) -> str:
        found = [name for name, p, d in pairs if p is not None and d is not None and p < ALPHA and sign * d > 0]
        return ", ".join(found) if found else "none"

    start = [(r.tuner, r.p_start, r.delta_start) for r in rows]
    mert = [(r.tuner, r.p_mert, r.delta_mert) for r in rows]
    return (f"Significantly better than the start weights (p < {ALPHA}): {named(start, 1)}. "
            f"Significantly worse than the start weights: {named(start, -1)}. "
            f"Significantly better than MERT: {named(mert, 1)}. "
            f"Significantly worse than MERT: {named(mert, -1)}.")  # fmt: skip


# ------------------------------------------------------------------------------------------ in the tuning loop
#: The tuners of the loop experiment: ``tune --tuner`` and its options (``{dense}``: the dense feature names), and
#: whether the seed changes anything (minimum risk's loop is deterministic: one run stands for every seed).
LOOP_TUNERS: dict[str, tuple[list[str], bool]] = {
    "MERT, 20 restarts, dense features": (["--tuner", "mert", "--restarts", "20", "--optimize", "{dense}"], True),
    "batch MIRA": (["--tuner", "mira"], True),
    "PRO": (["--tuner", "pro"], True),
    "minimum risk (xbleu)": (["--tuner", "minrisk"], False),
}


def first_hypotheses(nbest: str) -> dict[int, str]:
    """Each sentence's first hypothesis in a Moses n-best list (the decoder's 1-best), sentence markers removed."""
    first: dict[int, str] = {}
    with open(nbest, encoding="utf-8") as handle:
        for line in handle:
            sid, words = line.split(" ||| ")[:2]
            first.setdefault(int(sid), " ".join(w for w in words.split() if w not in ("<s>", "</s>")))
    return first


def loop_table(  # noqa: PLR0913 - the experiment's settings
    shared_dir: str,
    workdir: str,
    seeds: tuple[int, ...] = (1, 2, 3),
    iterations: int = 5,
    parallel: int = 1,
    tuners: dict[str, tuple[list[str], bool]] | None = None,
    trials: int = 10000,
    samples: int = 1000,
    progress: Callable[[str], None] | None = None,
) -> list[Row]:
    """MERT, MIRA, PRO and minimum risk in ``hypertune tune`` with ``hypertune decode --unique`` as the decoder
    (where re-decoding can change length): the 200 hypergraphs of ``make_bench.py hg`` split into a dev half
    (ids 0-99) and a test half (100-199), ``iterations`` iterations from the dense and sparse start weights,
    ``len(seeds)`` runs each (``tune --runs``, the best dev iteration's weights, ``--test-decoder`` on the test
    half); held-out BLEU of the test half's 1-best, compared as :func:`tuner_table` does. Each tuner's work
    directory is kept in ``workdir`` and resumed when run again."""
    import json
    import subprocess
    import sys

    from hypertune.bench.core import make_bench_corpus

    corpus = make_bench_corpus(shared_dir, workdir, "hg", 200)
    halves = {}
    for half, ids in (("dev", range(100)), ("test", range(100, 200))):
        folder = os.path.join(workdir, f"loop-{half}")
        os.makedirs(folder, exist_ok=True)
        for i in ids:
            link = os.path.join(folder, f"{i}.gz")
            if not os.path.lexists(link):
                os.symlink(os.path.abspath(corpus / "hg" / f"{i}.gz"), link)
        halves[half] = folder
    ref = str(corpus / "ref")
    references = read_references([ref])
    metric = BleuMetric(tokenize="none")
    dense = ",".join(read_weights([str(corpus / "dense")]))
    init = ["--init", str(corpus / "dense"), "--init", str(corpus / "sparse")]
    hypertune = [sys.executable, "-m", "hypertune"]

    def decoder(half: str) -> str:
        return (f"{sys.executable} -m hypertune decode {halves[half]} --weights {{weights}} --kbest {{k}} --unique "
                "--out {kbest} -q")  # fmt: skip

    def stats_of(nbest: str) -> np.ndarray:
        first = first_hypotheses(nbest)
        ids = sorted(first)
        return metric.corpus_stats([first[i] for i in ids], [references[i] for i in ids])

    start_nbest = os.path.join(workdir, "loop-start.nbest")
    if not os.path.exists(start_nbest):
        command = decoder("test").replace("{weights}", f"{corpus / 'dense'} --weights {corpus / 'sparse'}")
        subprocess.run(command.replace("{k}", "1").replace("{kbest}", start_nbest), shell=True, check=True,
                       stderr=subprocess.DEVNULL)  # fmt: skip
    start = stats_of(start_nbest)
    start_runs = np.stack([start] * len(seeds))
    results: dict[str, tuple[np.ndarray, float, float]] = {}
    start_dev = float("nan")
    for name, (options, seeded) in (tuners or LOOP_TUNERS).items():
        if progress:
            progress(f"tuning loop: {name}")
        folder = os.path.join(workdir, "loop-" + "".join(c if c.isalnum() else "-" for c in name))
        runs = len(seeds) if seeded else 1
        argv = [*hypertune, "tune", "--decoder", decoder("dev"), "--refs", ref, *init, "--kbest", "100",
                "--iterations", str(iterations), "--seed", str(seeds[0]), "--runs", str(runs), "--parallel",
                str(parallel), "--workdir", folder, "--test-decoder", decoder("test"), "--test-refs", ref, "--json",
                "--quiet", *[word.replace("{dense}", dense) for word in options]]  # fmt: skip
        argv += ["--resume"] if os.path.exists(os.path.join(folder, "config.json")) else []
        began = time.perf_counter()
        done = subprocess.run(argv, check=True, capture_output=True, text=True)
        seconds = time.perf_counter() - began
        summary = json.loads(done.stdout)
        each = summary["runs"] if runs > 1 else [summary]  # a single run's JSON is the run's own
        held_out = []
        for run in each:
            run_dir = os.path.join(folder, f"run-{run['seed']}") if runs > 1 else folder
            held_out.append(stats_of(os.path.join(run_dir, f"test-{run['returned_iteration']:03d}", "output", "kbest")))
        held_out *= len(seeds) // runs  # a deterministic tuner's one run stands for every seed
        dev = statistics.mean(run["score_after"] for run in each)
        results[name] = (np.stack(held_out), 100 * dev, seconds / runs)
        start_dev = 100 * each[0]["score_before"]  # the start weights' first decoding, the same in every run
    score, higher = metric.score, metric.higher_is_better
    base = compare_systems(score, [start_runs, start_runs], higher, samples, trials)[0]
    rows = [Row("start weights", base, None, None, None, None, start_dev, 0.0)]
    mert = next(iter(results.values()))[0]
    for k, (name, (stats, dev, seconds)) in enumerate(results.items()):
        first, report = compare_systems(score, [start_runs, stats], higher, samples, trials)
        row = Row(name, report, report.p_ar, report.score - first.score, None, None, dev, seconds)
        if k > 0:
            first, versus = compare_systems(score, [mert, stats], higher, samples, trials)
            row.p_mert, row.delta_mert = versus.p_ar, versus.score - first.score
        rows.append(row)
    return rows
