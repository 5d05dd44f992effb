"""``hypertune bench --suite whole`` (issue #33): hypertune's whole commands beside the C++ tools users run today
(Moses ``extractor``, ``mert``, ``kbmira``; cdec ``dpmert_bench``, ``minrisk_optimize``, ``mr_pro_map`` +
``mr_pro_reduce``), each a fresh process timed from start to exit: wall time, user CPU and peak resident memory
(``os.wait4``'s resource usage of that child), and the BLEU of each side's weights scored by one scorer.

An anchor runs only where its binaries are found in ``--anchors`` folders (each folder itself, its ``bin/``,
``moses/build/bin/`` and ``cdec/bin/``: the layouts of ``../shared/tools/build_*.sh`` under ``PREFIX``); a row
without them shows hypertune alone. cdec's tuners read the agenda that ``build_cdec_tuners.sh`` leaves in
``cdec/tuners_run/``; ``dpmert_bench`` the forests in ``cdec/src/training/dpmert/test_data/``.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from hypertune.bench.core import make_bench_corpus

# ---------------------------------------------------------------------- one process, measured


@dataclass(frozen=True)
class Usage:
    """What a whole command cost: wall, user-CPU and system-CPU seconds and peak resident memory (MB); the sum
    of the steps of a pipeline run one after the other (the peak is the largest step's). System time counts: a
    large NumPy array faults in transparent huge pages, which the kernel may compact memory for."""

    wall: float
    user: float
    peak_mb: float
    system: float = 0.0

    @property
    def cpu(self) -> float:
        return self.user + self.system

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.wall + other.wall, self.user + other.user, max(self.peak_mb, other.peak_mb), self.system + other.system
        )


@dataclass(frozen=True)
class Step:
    """One process: its argv, and files for its standard input and output (None: none / a log)."""

    argv: tuple[str, ...]
    stdin: str | None = None
    stdout: str | None = None


# Runs argv[2:] as its child and writes "wall user peak_kib system" of that child to the file argv[1]. A measured
# command is a grandchild of the bench: Linux carries the peak memory of the process that calls exec into the new
# program's (``maxrss`` survives exec), so a direct child of a large bench process would report at least the
# bench's size; this small interpreter's copy is all the child inherits.
_WRAPPER = """
import os, sys, time
started = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as error:
        os.write(2, f"{sys.argv[2]}: {error}\\n".encode())
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
wall = time.monotonic() - started
with open(sys.argv[1], "w") as report:
    report.write(f"{wall} {usage.ru_utime} {usage.ru_maxrss} {usage.ru_stime}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def measure(step: Step, cwd: str | None = None, env: dict[str, str] | None = None) -> tuple[Usage, str]:
    """Run ``step`` and return its :class:`Usage` (``os.wait4``'s resource usage of that process alone, taken by
    a small intermediate process: see ``_WRAPPER``) and its output (standard error, after standard output
    unless that goes to a file); a RuntimeError naming the command when it fails."""
    with contextlib.ExitStack() as files:
        err: IO[bytes] = files.enter_context(tempfile.TemporaryFile())
        log: IO[bytes] = files.enter_context(open(step.stdout, "w+b") if step.stdout else tempfile.TemporaryFile())
        stdin: int | IO[bytes] = files.enter_context(open(step.stdin, "rb")) if step.stdin else subprocess.DEVNULL
        report = files.enter_context(tempfile.NamedTemporaryFile("r", suffix=".usage"))
        argv = (sys.executable, "-S", "-c", _WRAPPER, report.name, *step.argv)
        code = subprocess.run(argv, stdin=stdin, stdout=log, stderr=err, cwd=cwd, env=env, check=False).returncode
        text = ""
        for handle in (err,) if step.stdout else (log, err):
            handle.seek(0)
            text += handle.read().decode("utf-8", "replace")
        figures = report.read().split()
    if code != 0 or len(figures) != 4:
        raise RuntimeError(f"{' '.join(step.argv)} exited with {code}: {text.strip()[-1500:]}")
    wall, user, peak_kib, system = (float(x) for x in figures)
    peak_mb = peak_kib / (1024.0 * 1024.0) if sys.platform == "darwin" else peak_kib / 1024.0  # bytes on macOS
    return Usage(wall, user, peak_mb, system), text


# ---------------------------------------------------------------------- rows


@dataclass
class Side:
    """One side of a row: its steps (argv[0] of an anchor is a binary's name, looked up in the anchor folders),
    where it writes its weights, and how to read them (``read_weights(path) -> weights files for the scorer``)."""

    steps: list[Step]
    weights: str | None = None
    convert: Callable[[str], list[str]] | None = None
    cwd: str | None = None
    env: dict[str, str] | None = None
    bleu_from_output: Callable[[str], float | None] | None = None
    fresh: str | None = None  # a folder removed before each run (an empty numba cache)


@dataclass
class Row:
    """A row of the table: the work, the anchor's side (None: not built here), hypertune's side, and the
    inputs of the one scorer (hypertune's reading of the row's data: ``hypertune mert`` arguments)."""

    work: str
    anchor_name: str
    hypertune: Side
    anchor: Side | None = None
    scorer: list[str] | None = None
    note: str = ""
    runs: int | None = None  # at most this many runs (a row of minutes on a loaded machine)


@dataclass
class Result:
    """The measured row: best (least wall) and every run of each side, and BLEU of each side's weights."""

    work: str
    anchor_name: str
    anchor_runs: list[Usage] = field(default_factory=list)
    hypertune_runs: list[Usage] = field(default_factory=list)
    anchor_bleu: float | None = None
    hypertune_bleu: float | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if not self.anchor_runs or not self.hypertune_runs:
            return None
        return best(self.hypertune_runs).wall / best(self.anchor_runs).wall


def best(runs: Sequence[Usage]) -> Usage:
    return min(runs, key=lambda usage: usage.wall)


ANCHOR_LAYOUTS = ("", "bin", os.path.join("moses", "build", "bin"), os.path.join("cdec", "bin"))


def find_anchor(name: str, folders: Sequence[str]) -> str | None:
    """The executable ``name`` in the first of ``folders`` (or their ``bin``, ``moses/build/bin``, ``cdec/bin``)
    that has it; None when none does."""
    for folder in folders:
        for layout in ANCHOR_LAYOUTS:
            path = os.path.join(folder, layout, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


def _find_folder(relative: str, folders: Sequence[str]) -> str | None:
    for folder in folders:
        for base in (folder, os.path.dirname(os.path.normpath(folder))):
            if os.path.isdir(os.path.join(base, relative)):
                return os.path.join(base, relative)
    return None


def resolve(side: Side | None, folders: Sequence[str]) -> Side | None:
    """``side`` with its binaries' paths, or None when one of them is not in ``folders``."""
    if side is None:
        return None
    steps = []
    for step in side.steps:
        path = find_anchor(step.argv[0], folders)
        if path is None:
            return None
        steps.append(Step((path, *step.argv[1:]), step.stdin, step.stdout))
    return Side(steps, side.weights, side.convert, side.cwd, side.env, side.bleu_from_output, side.fresh)


def hypertune(*arguments: str) -> Step:
    return Step((sys.executable, "-m", "hypertune", *arguments))


def kbmira_weights(dense_names: Sequence[str] | None) -> Callable[[str], list[str]]:
    """kbmira's output names dense weights F0, F1, ... in the order of ``--dense-init``'s lines
    (``dense_names``); with a legacy (positional) dense init they are written back positionally, for the
    scorer to name in the input's feature order."""

    def convert(path: str) -> list[str]:
        dense: dict[int, str] = {}
        sparse = []
        for line in Path(path).read_text().splitlines():
            name, value = line.split()
            match = re.fullmatch(r"F(\d+)", name)
            if match:
                dense[int(match.group(1))] = value
            else:
                sparse.append(f"{name} {value}")
        order = sorted(dense)
        out = [path + ".dense"]
        if dense_names is None:
            Path(out[0]).write_text(" ".join(dense[i] for i in order) + "\n")
        else:
            Path(out[0]).write_text("".join(f"{dense_names[i]} {dense[i]}\n" for i in order))
        if sparse:
            out.append(path + ".sparse")
            Path(out[1]).write_text("\n".join(sparse) + "\n")
        return out

    return convert


def cdec_weights(path: str) -> list[str]:
    """cdec's tuners print ``name value`` lines after ``#`` comments: the lines alone."""
    text = "".join(line + "\n" for line in Path(path).read_text().splitlines() if not line.startswith("#"))
    Path(path + ".txt").write_text(text)
    return [path + ".txt"]


def _bleu_after(pattern: str, scale: float = 1.0) -> Callable[[str], float | None]:
    """BLEU (as a fraction) from the last match of ``pattern`` in a command's output, printed ``scale`` times
    the fraction."""

    def parse(output: str) -> float | None:
        found = re.findall(pattern, output)
        return float(found[-1]) / scale if found else None

    return parse


def plan(shared_dir: str, workdir: str, folders: Sequence[str]) -> list[Row]:
    """The rows of issue #33's table, their corpora made in ``workdir`` by ``make_bench.py``."""
    from hypertune.bench.cold_start import MAIN_JOB, repository_root
    from hypertune.bench.mert import CDEC_WEIGHTS
    from hypertune.formats import read_weights

    out = os.path.join(workdir, "whole")
    os.makedirs(out, exist_ok=True)
    o = partial_path(out)
    rows = []

    nbest = make_bench_corpus(shared_dir, workdir, "nbest", 1000)
    dims = len((nbest / "init.opt").read_text().split("\n")[0].split())
    rows.append(
        Row(
            "k-best MERT, 1,000 × 100 n-best text, 20 restarts",
            "Moses extractor + mert",
            Side(
                [
                    hypertune(
                        "mert",
                        f"{nbest}/nbest.gz",
                        "--refs",
                        f"{nbest}/ref",
                        "--init",
                        f"{nbest}/init.opt",
                        "--restarts",
                        "20",
                        "--seed",
                        "1",
                        "--jobs",
                        "1",
                        "--tokenize",
                        "none",
                        "-o",
                        o("mert.ht"),
                        "--quiet",
                    )
                ],
                o("mert.ht"),
            ),
            Side(
                [
                    Step(
                        (
                            "extractor",
                            "--nbest",
                            f"{nbest}/nbest.gz",
                            "--reference",
                            f"{nbest}/ref",
                            "--ffile",
                            o("mert.FEAT"),
                            "--scfile",
                            o("mert.SCORE"),
                        )
                    ),
                    Step(
                        (
                            "mert",
                            "-d",
                            str(dims),
                            "--ffile",
                            o("mert.FEAT"),
                            "--scfile",
                            o("mert.SCORE"),
                            "--ifile",
                            f"{nbest}/init.opt",
                            "-n",
                            "20",
                            "-r",
                            "1",
                        )
                    ),
                ],
                o("weights.txt"),
                cwd=out,
            ),
            [f"{nbest}/nbest.gz", "--refs", f"{nbest}/ref", "--tokenize", "none"],
            runs=1,
        )
    )

    hg = make_bench_corpus(shared_dir, workdir, "hg", 200)
    graphs = sorted(str(p) for p in (hg / "hg").iterdir())
    options = ["--dense-init", f"{hg}/dense", "--sparse-init", f"{hg}/sparse", "-J", "10", "-r", "1"]
    kbmira_hg = ("kbmira", "--type", "hypergraph", "--hgdir", f"{hg}/hg", "--reference", f"{hg}/ref", *options)
    rows.append(
        Row(
            "forest MIRA, 200 Moses hypergraphs × 10 epochs",
            "Moses kbmira --type hypergraph",
            Side(
                [
                    hypertune(
                        "mira",
                        "--type",
                        "hypergraph",
                        "--hgdir",
                        f"{hg}/hg",
                        "--reference",
                        f"{hg}/ref",
                        *options,
                        "-o",
                        o("hgmira.ht"),
                        "--quiet",
                    )
                ],
                o("hgmira.ht"),
            ),
            Side(
                [Step((*kbmira_hg, "-o", o("hgmira.kb")))],
                o("hgmira.kb"),
                kbmira_weights(list(read_weights(f"{hg}/dense"))),
                cwd=out,
            ),
            [*graphs, "--refs", f"{hg}/ref", "--tokenize", "none"],
            "BLEU: both weights' 1-best on the unpruned graphs",
            runs=1,
        )
    )

    rows.append(
        Row(
            "lattice MERT with the defaults, the same 200 hypergraphs (sparse features)",
            "",
            Side(
                [
                    hypertune(
                        "mert",
                        *graphs,
                        "--refs",
                        f"{hg}/ref",
                        "--tokenize",
                        "none",
                        "--init",
                        f"{hg}/dense",
                        "--init",
                        f"{hg}/sparse",
                        "-o",
                        o("lattice-mert.ht"),
                        "--quiet",
                    )
                ],
                bleu_from_output=_bleu_after(r"BLEU before [0-9.]+ after ([0-9.]+)", 100.0),
            ),
            note="BLEU as the command prints it",
            runs=1,
        )
    )

    forests = Path(shared_dir) / "data" / "cdec" / "forests"
    start = o("cdec.weights")
    Path(start).write_text("".join(f"{name} {value}\n" for name, value in CDEC_WEIGHTS.items()))
    rows.append(
        Row(
            "k-best extraction: `decode --kbest 100000`, cdec forest 1 (14,141 edges)",
            "",
            Side(
                [
                    hypertune(
                        "decode",
                        str(forests / "training_dpmert_test_data_1.json.gz"),
                        "-w",
                        start,
                        "--kbest",
                        "100000",
                        "--out",
                        o("kbest100000.txt"),
                    )
                ]
            ),
        )
    )
    test_data = _find_folder(os.path.join("cdec", "src", "training", "dpmert", "test_data"), folders)
    rows.append(
        Row(
            "one exact line search, cdec forests 0 + 1 (whole command, one search)",
            "cdec dpmert_bench (100 searches)",
            Side(
                [
                    hypertune(
                        "linesearch",
                        *(str(forests / f"training_dpmert_test_data_{i}.json.gz") for i in (0, 1)),
                        "--refs",
                        *(str(forests / f"lo_test.ref.{i}") for i in range(4)),
                        "--weights",
                        start,
                        "--direction",
                        "WordPenalty",
                        "--metric",
                        "ibm-bleu",
                        "--json",
                    )
                ],
                bleu_from_output=_bleu_after(r'"best_bleu": ([0-9.]+)'),
            ),
            Side([Step(("dpmert_bench", str(test_data), "100"))], bleu_from_output=_bleu_after(r"BLEU=([0-9.]+)"))
            if test_data
            else None,
            note="BLEU: the best step's, as each prints it",
        )
    )

    for count in (10_000, 1_000):
        corpus = make_bench_corpus(shared_dir, workdir, "nbest", count)
        if not (corpus / "FEAT").is_file():
            extractor = find_anchor("extractor", folders)
            if extractor is None:
                continue  # the FEAT/SCORE files are Moses extractor's output
            measure(
                Step(
                    (
                        extractor,
                        "--nbest",
                        f"{corpus}/nbest.gz",
                        "--reference",
                        f"{corpus}/ref",
                        "--ffile",
                        f"{corpus}/FEAT",
                        "--scfile",
                        f"{corpus}/SCORE",
                    )
                )
            )
        options = [
            "--ffile",
            f"{corpus}/FEAT",
            "--scfile",
            f"{corpus}/SCORE",
            "--dense-init",
            f"{corpus}/dense.legacy",
            "-J",
            "60",
            "-r",
            "1",
        ]
        rows.append(
            Row(
                f"k-best MIRA, 60 epochs, FEAT/SCORE of {count:,} × 100",
                "Moses kbmira",
                Side([hypertune("mira", *options, "-o", o(f"mira{count}.ht"), "--quiet")], o(f"mira{count}.ht")),
                Side(
                    [Step(("kbmira", *options, "-o", o(f"mira{count}.kb")))],
                    o(f"mira{count}.kb"),
                    kbmira_weights(None),
                    cwd=out,
                ),
                [f"{corpus}/FEAT", f"{corpus}/SCORE"],
            )
        )

    scorer = Path(shared_dir) / "data" / "moses" / "scorer-data"
    init = str(Path(shared_dir) / "data" / "moses" / "mert-example" / "init.opt")
    data = [
        str(scorer / "nbest.out.gz"),
        "--refs",
        str(scorer / "reference.txt.gz"),
        "--tokenize",
        "none",
        "--lowercase",
    ]
    run = _find_folder(os.path.join("cdec", "tuners_run"), folders)
    rows.append(
        Row(
            "minimum risk, Moses scorer data 100 × 100",
            "cdec minrisk_optimize",
            Side([hypertune("minrisk", *data, "--init", init, "-o", o("minrisk.ht"), "--quiet")], o("minrisk.ht")),
            Side(
                [
                    Step(
                        ("minrisk_optimize", "-r", "ref.txt", "-m", "IBM_BLEU", "-i", "agenda", "-w", "weights.init"),
                        stdout=o("minrisk.cdec"),
                    )
                ],
                o("minrisk.cdec"),
                cdec_weights,
                run,
            )
            if run
            else None,
            data,
        )
    )
    repo = o("pro.kbest_repo")
    rows.append(
        Row(
            "PRO, the same data",
            "cdec mr_pro_map + mr_pro_reduce",
            Side([hypertune("pro", *data, "--init", init, "--seed", "1", "-o", o("pro.ht"), "--quiet")], o("pro.ht")),
            Side(
                [
                    Step(
                        ("mr_pro_map", "-m", "IBM_BLEU", "-r", "ref.txt", "-w", "weights.init", "-K", repo, "-S", "1"),
                        stdin=os.path.join(run, "agenda"),
                        stdout=o("pro.pairs"),
                    ),
                    Step(
                        (
                            "mr_pro_reduce",
                            "-w",
                            "weights.init",
                            "-C",
                            "500",
                            "-y",
                            "5000",
                            "--interpolate_with_weights",
                            "1",
                        ),
                        stdin=o("pro.pairs"),
                        stdout=o("pro.cdec"),
                    ),
                ],
                o("pro.cdec"),
                cdec_weights,
                run,
            )
            if run
            else None,
            data,
        )
    )

    root = str(repository_root())
    cache = o("numba-cache")
    for label, fresh in (
        ("README's main job, empty numba cache (a fresh machine)", True),
        ("README's main job again, kernels from the cache", False),
    ):
        rows.append(
            Row(
                label,
                "",
                Side(
                    [hypertune(*MAIN_JOB, "--quiet")],
                    cwd=root,
                    env={**os.environ, "NUMBA_CACHE_DIR": cache},
                    fresh=cache if fresh else None,
                ),
                runs=1 if fresh else None,
            )
        )
    return rows


def partial_path(folder: str) -> Callable[[str], str]:
    return lambda name: os.path.join(folder, name)


# ---------------------------------------------------------------------- running and scoring


def score(scorer: Sequence[str], weights_files: Sequence[str]) -> float:
    """The 1-best BLEU of ``weights_files`` on the inputs of ``hypertune mert SCORER`` (read as that command
    reads them: the same metric and options for every side of a row)."""
    from hypertune.bench.tuner_table import model_best_stats
    from hypertune.cli import build_parser
    from hypertune.cli.tuning import load_tuning_set, load_weights

    args = build_parser().parse_args(["mert", *scorer, *(x for path in weights_files for x in ("--init", path))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unused reference lines, weights naming absent features
        tuning_set = load_tuning_set(args)
        weights, _ = load_weights(list(weights_files), tuning_set, args)
    return float(tuning_set.score(model_best_stats(tuning_set, weights).sum(axis=0)))


def _run_side(side: Side) -> tuple[Usage, str]:
    if side.fresh:
        shutil.rmtree(side.fresh, ignore_errors=True)
    total: Usage | None = None
    output = ""
    for step in side.steps:
        usage, text = measure(step, side.cwd, side.env)
        total = usage if total is None else total + usage
        output += text
    assert total is not None
    return total, output


def _side_bleu(side: Side, output: str, scorer: list[str] | None) -> float | None:
    if side.bleu_from_output is not None:
        return side.bleu_from_output(output)
    if scorer is None or side.weights is None:
        return None
    return score(scorer, side.convert(side.weights) if side.convert else [side.weights])


def run_whole(
    shared_dir: str,
    workdir: str,
    anchors: Sequence[str] = (),
    repeat: int = 3,
    say: Callable[[str], None] = lambda message: None,
    only: Sequence[int] | None = None,
) -> list[Result]:
    """The rows of :func:`plan` (``only``: their numbers), measured by :func:`run_rows`."""
    rows = plan(shared_dir, workdir, anchors)
    return run_rows([row for n, row in enumerate(rows) if only is None or n in only], anchors, repeat, say)


def run_rows(
    rows: Sequence[Row], anchors: Sequence[str], repeat: int = 3, say: Callable[[str], None] = lambda message: None
) -> list[Result]:
    """Each row: anchor (where its binaries are in ``anchors``) then hypertune, ``repeat`` times interleaved (the
    machine's load drifts alike for both), then each side's last weights scored."""
    results = []
    for row in rows:
        anchor = resolve(row.anchor, anchors)
        result = Result(row.work, row.anchor_name, note=row.note)
        outputs = {"anchor": "", "hypertune": ""}
        runs = min(repeat, row.runs or repeat)
        try:
            for attempt in range(runs):
                say(f"{row.work}: run {attempt + 1} of {runs}")
                if anchor is not None:
                    usage, outputs["anchor"] = _run_side(anchor)
                    result.anchor_runs.append(usage)
                usage, outputs["hypertune"] = _run_side(row.hypertune)
                result.hypertune_runs.append(usage)
        except RuntimeError as error:  # a command failed: the row says so, the other rows still run
            result.note = "; ".join(filter(None, [result.note, f"failed: {str(error).splitlines()[0][:300]}"]))
            say(f"{row.work}: {result.note}")
            results.append(result)
            continue
        try:
            if anchor is not None:
                result.anchor_bleu = _side_bleu(anchor, outputs["anchor"], row.scorer)
            result.hypertune_bleu = _side_bleu(row.hypertune, outputs["hypertune"], row.scorer)
        except (Exception, SystemExit) as error:  # the timings stand; the row says why BLEU is missing
            result.note = "; ".join(filter(None, [result.note, f"BLEU not scored: {error}"]))
        say(markdown([result]).splitlines()[-1])
        results.append(result)
    return results


# ---------------------------------------------------------------------- the table


def _usage_text(runs: Sequence[Usage], bleu: float | None) -> str:
    if not runs:
        return "—"
    walls = sorted(u.wall for u in runs)
    top = best(runs)
    spread = f" (of {len(runs)}: {_seconds(walls[0])}-{_seconds(walls[-1])})" if len(runs) > 1 else ""
    cpu = f"user {_seconds(top.user)} + sys {_seconds(top.system)}"
    text = f"{_seconds(top.wall)}{spread}, {cpu}, {top.peak_mb:,.0f} MB"
    return text + ("" if bleu is None else f", BLEU {100 * bleu:.2f}")


def _seconds(value: float) -> str:
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.1f} s" if value < 100 else f"{value:.0f} s"


def header() -> str:
    """Date, machine, load and commit of a measurement."""
    try:
        commit = subprocess.run(
            ["git", "log", "--oneline", "-1"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    return f"{when}; {machine}; load average {load}" + (f"; commit {commit[:7]}" if commit else "")


def markdown(results: Sequence[Result]) -> str:
    """The table: wall (best of the runs, their range), user and system CPU and peak memory of that run, BLEU,
    and hypertune's over the anchor's wall and CPU (user + system; of the best runs)."""
    lines = ["| work | anchor | hypertune | ratio: wall, CPU |", "|---|---|---|---|"]
    for r in results:
        anchor = f"{r.anchor_name}: {_usage_text(r.anchor_runs, r.anchor_bleu)}" if r.anchor_runs else "—"
        if r.anchor_name and not r.anchor_runs:
            anchor = f"{r.anchor_name}: not built here"
        ratio = "—" if r.ratio is None else f"{r.ratio:.2f}, {best(r.hypertune_runs).cpu / best(r.anchor_runs).cpu:.2f}"
        work = r.work + (f" ({r.note})" if r.note else "")
        lines.append(f"| {work} | {anchor} | {_usage_text(r.hypertune_runs, r.hypertune_bleu)} | {ratio} |")
    return "\n".join(lines)


def payload(results: Sequence[Result]) -> dict[str, Any]:
    """The ``--json`` record of the suite."""
    return {
        "measured": header(),
        "rows": [
            {
                "work": r.work,
                "anchor": r.anchor_name or None,
                "anchor_runs": [vars(u) for u in r.anchor_runs],
                "hypertune_runs": [vars(u) for u in r.hypertune_runs],
                "anchor_bleu": r.anchor_bleu,
                "hypertune_bleu": r.hypertune_bleu,
                "ratio": r.ratio,
                "note": r.note,
            }
            for r in results
        ],
    }


if __name__ == "__main__":  # pragma: no cover - python -m hypertune.bench.whole SHARED WORKDIR ANCHORS...
    found = run_whole(sys.argv[1], sys.argv[2], sys.argv[3:], say=lambda m: print(m, file=sys.stderr, flush=True))
    print(header())
    print(markdown(found))
    print(json.dumps(payload(found)))
