"""``hypertune bench --suite moses-system``: hypertune's tuning loop against Moses's own (``mert-moses.pl``) on a
real phrase-based system, the one ``../shared/tools/build_moses_system.sh`` builds (Multi30k German-English;
issue #35). Every run tunes on the dev set and is scored on the test set by decoding it with the weights it
returns. Parts (``--parts``):

1. k-best MERT with n-best accumulation: ``hypertune tune --tuner mert`` against ``mert-moses.pl`` (same moses,
   start weights, 100-best distinct lists, stack, threads and number of decodings), per seed;
2. lattice MERT on Moses search graphs (``-osgx``) and hypergraph MERT on Moses hypergraphs against k-best MERT
   (Macherey et al. 2008: fewer iterations, equal or better test BLEU?);
3. batch MIRA on k-best lists and hypergraphs against ``mert-moses.pl --batch-mira`` and ``--hg-mira``, PRO
   against ``--pairwise-ranked``, minimum risk on hypergraphs. ``--pairwise-ranked`` trains its classifier with
   megam, which Moses downloads and this machine cannot: without ``bin/megam_i686.opt`` the suite gives
   ``mert-moses.pl`` a folder of Moses's tools with a stand-in (:data:`MEGAM`: logistic regression without bias,
   L-BFGS for at most ``-maxi`` iterations, megam's default Gaussian prior of precision 1), and says so;
4. sparse features (Moses's ``TargetWordInsertionFeature`` and ``PhrasePairFeature`` added to a copy of the
   moses.ini) tuned by MIRA, PRO and AdaGrad against dense MERT (Cherry & Foster 2012; Hopkins & May 2011), and
   PRO at stronger L2 weights (:data:`PRO_L2_SWEEP`, seed 1 only);
5. ``hypertune compare`` (MultEval's report over the seeds, Clark et al. 2011) between the tuners' test outputs.

The same model for both: ``mert-moses.pl`` filters the phrase and reordering tables for the dev set
(``filter-model-given-input.pl``) before it decodes; the suite filters them once the same way and gives
``tune`` that moses.ini (:meth:`Bench.model`), so neither loads the whole tables in every decoding. The test
set is decoded with the whole model and the weights each run returned.

Resumable: each run lives in ``WORKDIR/runs/NAME-sSEED/`` and is skipped once its ``result.json`` is written (a
run cut short is resumed: ``tune --resume``, ``mert-moses.pl --continue``). Both loops make the same number of
decodings: ``tune --iterations N`` tunes N times and decodes N + 1 times; ``mert-moses.pl --maximum-iterations
N + 1`` decodes N + 1 times (its last tuning's weights are never decoded and ``--return-best-dev`` returns the best
decoded ones, as ``tune --return best`` does). The dev BLEU of every decoding is that of Moses's own 1-best
output (``decoder.out``, ``runN.out``), by ``hypertune bleu`` (:data:`BLEU`), for both loops; decoding time is
what the decoder took (a timing wrapper around moses for ``mert-moses.pl``); the test decoding is outside both.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from hypertune.errors import UsageError
from hypertune.formats.io import write_atomically

#: BLEU's options for every score of the suite: the tuners' (and Moses's scorer's), on the tokenized corpus: no
#: tokenizer, no smoothing (``hypertune bleu``'s own defaults are sacrebleu's, 13a and exp).
BLEU = ("--tokenize", "none", "--smooth", "none")
#: The parts of the suite, in order.
PARTS = (1, 2, 3, 4, 5)
#: Sparse feature functions added to the copy of moses.ini in part 4 (their values are all sparse).
SPARSE_FEATURES = (
    "TargetWordInsertionFeature name=TWI factor=0",
    "PhrasePairFeature name=PP input-factor=0 output-factor=0 unrestricted=1 simple=1",
)


#: The stand-in for megam (``megam_i686.opt -fvals -maxi N -nobias binary FILE``, as mert-moses.pl calls it for PRO):
#: L2-regularized logistic regression without bias on PRO's pairs (``label name value ...`` lines), its weights
#: as ``name value`` lines on standard output, as megam prints them.
MEGAM = """
import sys
import numpy as np
import scipy.optimize
import scipy.sparse

args = sys.argv[1:]
iterations = int(args[args.index("-maxi") + 1]) if "-maxi" in args else 100
names, rows, columns, values, labels = {}, [], [], [], []
with open(args[-1]) as handle:
    for line in handle:
        fields = line.split()
        if not fields:
            continue
        labels.append(1.0 if fields[0] == "1" else -1.0)
        for name, value in zip(fields[1::2], fields[2::2]):
            rows.append(len(labels) - 1)
            columns.append(names.setdefault(name, len(names)))
            values.append(float(value))
x = scipy.sparse.csr_matrix((values, (rows, columns)), shape=(len(labels), len(names)))
y = np.asarray(labels)


def loss(w):
    margins = y * (x @ w)
    probability = 0.5 * (1.0 + np.tanh(-0.5 * margins))  # sigmoid(-margin), without overflow
    value = np.logaddexp(0.0, -margins).sum() + 0.5 * w @ w
    return value, -(x.T @ (y * probability)) + w


w = scipy.optimize.minimize(loss, np.zeros(len(names)), jac=True, method="L-BFGS-B",
                            options={"maxiter": iterations}).x
for name, column in names.items():
    print(f"{name} {float(w[column])!r}")
"""


@dataclass(frozen=True)
class System:
    """Where Moses (``--moses``, the mosesdecoder folder) and the system (``--system``) are."""

    moses_root: str
    system_root: str

    @property
    def moses(self) -> str:
        return os.path.join(self.moses_root, "bin", "moses")

    @property
    def bin(self) -> str:
        return os.path.join(self.moses_root, "bin")

    @property
    def mert_moses(self) -> str:
        return os.path.join(self.moses_root, "scripts", "training", "mert-moses.pl")

    @property
    def ini(self) -> str:
        return os.path.join(self.system_root, "train", "model", "moses.ini")

    @property
    def filter_model(self) -> str:
        return os.path.join(self.moses_root, "scripts", "training", "filter-model-given-input.pl")

    def corpus(self, part: str, side: str) -> str:
        return os.path.join(self.system_root, "corpus", f"{part}.{side}")

    def check(self) -> None:
        """A usage error naming the first file the suite needs that is missing."""
        needed = [
            self.moses,
            self.mert_moses,
            self.filter_model,
            os.path.join(self.bin, "mert"),
            os.path.join(self.bin, "kbmira"),
            self.ini,
        ] + [self.corpus(p, s) for p in ("val", "test") for s in ("de", "en")]
        for path in needed:
            if not os.path.exists(path):
                raise UsageError(
                    f"--suite moses-system: no {path} (--moses DIR: the mosesdecoder folder with bin/ and "
                    "scripts/; --system DIR: the folder with train/model/moses.ini and corpus/)"
                )


@dataclass(frozen=True)
class Settings:
    """The settings every run shares."""

    seeds: int = 3
    iterations: int = 3  # tunings; every loop decodes iterations + 1 times
    stack: int = 20
    threads: int = 2
    kbest: int = 100
    restarts: int = 20  # k-best MERT's random restarts (mert-moses.pl's default 20)
    lattice_restarts: int = 5  # lattice and hypergraph MERT's (each line search covers ~1M arcs: minutes)


@dataclass(frozen=True)
class Run:
    """One tuning run: ``tool`` (``hypertune`` or ``moses``), its tuner, what it accumulates (``nbest``,
    ``lattice``: Moses search graphs, ``hypergraph``), with the sparse features or not, and its seed."""

    key: str
    label: str
    tool: str
    tuner: str
    space: str = "nbest"
    sparse: bool = False
    seed: int = 1
    options: tuple[str, ...] = ()  # the tuner's own options (after ``--``)
    sweep: bool = False  # one setting of a sweep: run at seed 1 only

    @property
    def name(self) -> str:
        return f"{self.key}-s{self.seed}"


#: PRO's L2 weights λ tried with the sparse features (its default 0.1 overfits them: dev BLEU 51, test below dense
#: MERT); each at seed 1 only (a sweep, not a tuner of its own).
PRO_L2_SWEEP = ("10", "100", "1000")
#: Every run of the suite (without its seed), by key.
RUNS = {
    run.key: run
    for run in (
        Run("ht-mert-nbest", "hypertune MERT, 100-best", "hypertune", "mert"),
        Run("moses-mert", "mert-moses.pl MERT, 100-best", "moses", "mert"),
        Run("ht-mert-lattice", "hypertune lattice MERT, search graphs", "hypertune", "mert", "lattice"),
        Run("ht-mert-hypergraph", "hypertune hypergraph MERT", "hypertune", "mert", "hypergraph"),
        Run("ht-mira-nbest", "hypertune batch MIRA, 100-best", "hypertune", "mira"),
        Run("ht-mira-hypergraph", "hypertune hypergraph MIRA", "hypertune", "mira", "hypergraph"),
        Run("moses-mira", "mert-moses.pl --batch-mira", "moses", "mira"),
        Run("moses-hg-mira", "mert-moses.pl --hg-mira", "moses", "mira", "hypergraph"),
        Run("ht-pro-nbest", "hypertune PRO, 100-best", "hypertune", "pro"),
        Run("moses-pro", "mert-moses.pl --pairwise-ranked", "moses", "pro"),
        Run("ht-minrisk-hypergraph", "hypertune minimum risk, hypergraphs", "hypertune", "minrisk", "hypergraph"),
        Run("ht-mira-sparse", "hypertune batch MIRA, sparse features", "hypertune", "mira", sparse=True),
        Run("ht-pro-sparse", "hypertune PRO, sparse features", "hypertune", "pro", sparse=True),
        Run("ht-adagrad-sparse", "hypertune AdaGrad (PRO loss), sparse features", "hypertune", "adagrad", sparse=True),
        Run("moses-mira-sparse", "mert-moses.pl --batch-mira, sparse features", "moses", "mira", sparse=True),
        *(
            Run(
                f"ht-pro-sparse-l2-{l2}",
                f"hypertune PRO, sparse features, L2 {l2}",
                "hypertune",
                "pro",
                sparse=True,
                options=("--l2", l2),
                sweep=True,
            )
            for l2 in PRO_L2_SWEEP
        ),
    )
}
#: The runs of each part (a run two parts name is run once).
PART_RUNS = {
    1: ("ht-mert-nbest", "moses-mert"),
    2: ("ht-mert-nbest", "ht-mert-lattice", "ht-mert-hypergraph"),
    3: (
        "ht-mira-nbest",
        "ht-mira-hypergraph",
        "moses-mira",
        "moses-hg-mira",
        "ht-pro-nbest",
        "moses-pro",
        "ht-minrisk-hypergraph",
    ),
    4: (
        "ht-mert-nbest",
        "ht-mira-sparse",
        "ht-pro-sparse",
        "ht-adagrad-sparse",
        "moses-mira-sparse",
        *(f"ht-pro-sparse-l2-{l2}" for l2 in PRO_L2_SWEEP),
    ),
}
#: Part 5's comparisons: (baseline, system), each over the seeds both have finished.
COMPARISONS = (
    ("moses-mert", "ht-mert-nbest"),
    ("ht-mert-nbest", "ht-mert-lattice"),
    ("ht-mert-nbest", "ht-mert-hypergraph"),
    ("moses-mira", "ht-mira-nbest"),
    ("moses-hg-mira", "ht-mira-hypergraph"),
    ("moses-pro", "ht-pro-nbest"),
    ("ht-mert-nbest", "ht-minrisk-hypergraph"),
    ("ht-mert-nbest", "ht-mira-sparse"),
    ("ht-mert-nbest", "ht-pro-sparse"),
    ("ht-mert-nbest", "ht-adagrad-sparse"),
    ("moses-mira-sparse", "ht-mira-sparse"),
)


def parse_parts(text: str) -> tuple[int, ...]:
    """``--parts 1,2`` -> (1, 2); a usage error for anything but numbers of :data:`PARTS`."""
    parts: list[int] = []
    for item in text.split(","):
        if not item.strip().isdigit() or int(item) not in PARTS:
            raise UsageError(
                f"--parts: expected numbers among {', '.join(map(str, PARTS))} separated by commas, got {text!r}"
            )
        parts.append(int(item))
    return tuple(sorted(set(parts)))


#: Tuners with nothing random (the same decoder and start give the same run whatever the seed): run at seed 1 only.
DETERMINISTIC = frozenset({"minrisk"})


def plan(parts: Iterable[int], seeds: int) -> list[Run]:
    """The runs of ``parts``, each once, seed by seed (seeds 1..N), in the order of the parts; a
    :data:`DETERMINISTIC` tuner's run and a sweep's at seed 1 only."""
    keys = list(dict.fromkeys(key for part in sorted(parts) for key in PART_RUNS.get(part, ())))
    return [
        Run(**{**asdict(RUNS[key]), "seed": seed})
        for seed in range(1, seeds + 1)
        for key in keys
        if seed == 1 or not (RUNS[key].tuner in DETERMINISTIC or RUNS[key].sweep)
    ]


# ------------------------------------------------------------------------------------------------ the runner


@dataclass
class Bench:
    """Runs the suite's runs in ``workdir`` (each skipped when its ``result.json`` exists) and gathers them."""

    system: System
    settings: Settings
    workdir: str
    say: Callable[[str], None] = field(default=lambda message: None)
    python: Sequence[str] = field(default_factory=lambda: [sys.executable, "-m", "hypertune"])

    def folder(self, run: Run, *parts: str) -> str:
        return os.path.join(self.workdir, "runs", run.name, *parts)

    def run_all(self, runs: Sequence[Run], parts: Iterable[int] = ()) -> dict[str, Any]:
        """Every run (progress through ``say``), then part 5's comparisons if asked; the whole results object,
        also written to ``WORKDIR/results.json``."""
        results: list[dict[str, Any]] = []
        for number, run in enumerate(runs, 1):
            where = f"[{number}/{len(runs)}] {run.name}"
            done = read_result(self.folder(run, "result.json"))
            if done is not None:
                self.say(f"{where}: done before ({_brief(done)})")
                results.append(done)
                continue
            self.say(f"{where}: {run.label}, seed {run.seed} ...")
            started = time.perf_counter()
            try:
                result = self.execute(run)
            except RunFailed as failure:
                self.say(f"{where}: FAILED: {failure}")
                results.append({**asdict(run), "name": run.name, "failed": str(failure)})
                continue
            self.say(f"{where}: {_brief(result)} ({time.perf_counter() - started:.0f} s)")
            results.append(result)
        for result in results:
            if "nonzero_weights" not in result and os.path.isfile(result.get("returned_ini", "")):  # before it was kept
                result["nonzero_weights"] = self.nonzero_weights(result["returned_ini"])
        comparisons = self.compare_all(self.finished()) if 5 in parts else []
        payload = {
            "suite": "moses-system",
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "date": datetime.date.today().isoformat(),
            "load": _load(),
            "settings": asdict(self.settings),
            "system": asdict(self.system),
            "runs": results,
            "comparisons": comparisons,
        }
        write_atomically(os.path.join(self.workdir, "results.json"), json.dumps(payload, indent=1) + "\n")
        return payload

    def execute(self, run: Run) -> dict[str, Any]:
        folder = self.folder(run)
        os.makedirs(folder, exist_ok=True)
        if run.tool == "moses":
            result = self.moses_run(run, folder)
        else:
            result = self.hypertune_run(run, folder)
        test_out = os.path.join(folder, "test.out")
        result["test_bleu"] = self.decode_test(result["returned_ini"], test_out)
        result["test_output"] = test_out
        result["nonzero_weights"] = self.nonzero_weights(result["returned_ini"])
        result.update({**asdict(run), "name": run.name})
        write_atomically(os.path.join(folder, "result.json"), json.dumps(result, indent=1) + "\n")
        return result

    def nonzero_weights(self, ini: str) -> dict[str, int]:
        """How many of a returned moses.ini's weights (its ``[weight-file]`` included) are not zero: all, and those
        of features the system's own moses.ini has no weight for (the sparse features)."""
        from hypertune.formats import read_weights

        dense = set(read_weights(self.system.ini))
        used = [name for name, value in read_weights(ini).items() if value != 0.0]
        return {"all": len(used), "sparse": sum(name not in dense for name in used)}

    # -------------------------------------------------------------- the pieces
    def ini(self, run: Run) -> str:
        """The moses.ini a run starts from: the system's, or a copy with :data:`SPARSE_FEATURES` added."""
        if not run.sparse:
            return self.system.ini
        path = os.path.join(self.workdir, "sparse", "moses.ini")
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(self.system.ini, encoding="utf-8") as handle:
                text = handle.read()
            write_atomically(path, add_sparse_features(text))
        return path

    def model(self, run: Run) -> str:
        """The moses.ini a hypertune run decodes the dev set with: :meth:`ini` with its tables filtered for the dev
        set by Moses's ``filter-model-given-input.pl``, as ``mert-moses.pl`` filters them (made once)."""
        folder = os.path.join(self.workdir, "filtered", "sparse" if run.sparse else "dense")
        if not os.path.exists(os.path.join(folder, "done")):
            if os.path.exists(folder):
                shutil.rmtree(folder)  # a filtering cut short
            os.makedirs(os.path.dirname(folder), exist_ok=True)
            self.say(f"filtering the model for the dev set into {folder}")
            _run(
                ["perl", self.system.filter_model, folder, self.ini(run), self.system.corpus("val", "de")],
                folder + ".log",
            )
            write_atomically(os.path.join(folder, "done"), "")
        return os.path.join(folder, "moses.ini")

    def moses_flags(self) -> str:
        return f"-s {self.settings.stack} -threads {self.settings.threads}"

    def decoder_template(self, run: Run) -> str:
        """The ``tune --decoder`` command of a hypertune run: Moses's own command line for its output."""
        moses, dev = shlex.quote(self.system.moses), shlex.quote(self.system.corpus("val", "de"))
        output = {
            "nbest": "-n-best-list {kbest} {k} distinct",
            "lattice": "-output-search-graph-extended {lattices}",
            "hypergraph": "-output-search-graph-hypergraph true gz {lattices}",
        }[run.space]
        command = f"{moses} -f {{weights}} {self.moses_flags()} {output} -i {dev}"
        return f"mkdir -p {{lattices}} && {command}" if run.space == "hypergraph" else command

    def tuner_options(self, run: Run) -> list[str]:
        if run.tuner == "mert":
            restarts = self.settings.restarts if run.space == "nbest" else self.settings.lattice_restarts
            return ["--tuner", "mert", "--restarts", str(restarts)]
        if run.tuner == "adagrad":
            return ["--tuner", "train", "--optimizer", "adagrad"]
        return ["--tuner", run.tuner]

    def hypertune_run(self, run: Run, folder: str) -> dict[str, Any]:
        workdir = os.path.join(folder, "tune")
        command = [
            *self.python,
            "tune",
            "--decoder",
            self.decoder_template(run),
            "--decoder-config",
            self.model(run),
            "--refs",
            self.system.corpus("val", "en"),
            *self.tuner_options(run),
            "--kbest",
            str(self.settings.kbest),
            "--iterations",
            str(self.settings.iterations),
            "--seed",
            str(run.seed),
            "--accumulate",
            "nbest" if run.space == "nbest" else "lattice",
            "--workdir",
            workdir,
            "--json",
        ]
        resumed = os.path.exists(os.path.join(workdir, "config.json"))
        if resumed:
            command.append("--resume")
        if run.options:
            command += ["--", *run.options]  # the tuner's own, verbatim
        started, cpu_started = time.perf_counter(), _children_cpu()
        out = _run(command, os.path.join(folder, "tune.log"))
        wall, cpu = time.perf_counter() - started, _children_cpu() - cpu_started
        loop = json.loads(out)
        history = loop["history"]
        decode = sum(entry.get("decode_seconds") or 0.0 for entry in history)
        decode_cpu = [entry.get("decode_cpu_seconds") for entry in history]
        decoded = [os.path.join(workdir, f"iteration-{e['iteration']:03d}", "decoder.out") for e in history]
        returned = loop["returned_iteration"]
        return {
            "dev_bleu": [self.bleu(path, "val") for path in decoded],
            "loop_dev_scores": [100 * entry["score"] for entry in history],
            "returned_iteration": returned,
            "decodings": len(history),
            "stopped": loop["stopped"],
            "seconds": wall,
            "decode_seconds": decode,
            "tune_seconds": wall - decode,
            **_cpu_fields(None if resumed or None in decode_cpu else cpu, sum(filter(None, decode_cpu))),
            "returned_ini": self.whole_model(run, os.path.join(workdir, f"iteration-{returned:03d}", "weights")),
        }

    def whole_model(self, run: Run, weights: str) -> str:
        """The run's whole moses.ini (not filtered) with the weights file ``weights`` (and its sparse weights in
        ``moses.ini.sparse``), in the run's ``returned/`` folder: what the test set is decoded with."""
        from hypertune.formats import read_weights
        from hypertune.loop.decoder import DecoderConfig

        folder = self.folder(run, "returned")
        os.makedirs(folder, exist_ok=True)
        return DecoderConfig.from_file(self.ini(run)).write(read_weights(weights), folder)

    def moses_run(self, run: Run, folder: str) -> dict[str, Any]:
        """``mert-moses.pl`` with a timing wrapper around moses (``moses-timed``, one line per call)."""
        mertdir = self.system.bin
        if run.tuner == "pro" and not os.path.exists(os.path.join(mertdir, "megam_i686.opt")):
            mertdir = self.megam_stand_in()
        work = os.path.join(folder, "mert-work")
        times = os.path.join(folder, "decoder.times")
        wrapper = os.path.join(folder, "moses-timed")
        write_atomically(wrapper, timing_wrapper(self.system.moses, times))
        os.chmod(wrapper, 0o755)
        command = [
            "perl",
            self.system.mert_moses,
            self.system.corpus("val", "de"),
            self.system.corpus("val", "en"),
            wrapper,
            self.ini(run),
            "--mertdir",
            mertdir,
            "--working-dir",
            work,
            f"--decoder-flags={self.moses_flags()}",
            "--nbest",
            str(self.settings.kbest),
            "--maximum-iterations",
            str(self.settings.iterations + 1),
            "--return-best-dev",
        ]
        seed = f"-r {run.seed}"
        if run.tuner == "mert":
            command += [f"--mertmertargs={seed}", "--random-restarts", str(self.settings.restarts)]
        elif run.tuner == "mira":
            command += ["--hg-mira" if run.space == "hypergraph" else "--batch-mira", f"--batch-mira-args={seed}"]
        elif run.tuner == "pro":
            command += ["--pairwise-ranked", f"--proargs={seed}"]
        resumed = os.path.exists(os.path.join(work, "finished_step.txt"))
        if resumed:
            command.append("--continue")
        else:  # a fresh start: an earlier attempt's decodings are not this run's
            if os.path.exists(work):
                shutil.rmtree(work)
            if os.path.exists(times):
                os.remove(times)
        started, cpu_started = time.perf_counter(), _children_cpu()
        log = os.path.join(folder, "mert.log")
        _run(command, log, cwd=folder, both=True)  # mert-moses.pl says which iteration it returns on stdout
        wall, cpu = time.perf_counter() - started, _children_cpu() - cpu_started
        runs = sorted(
            (int(m.group(1)), name) for name in os.listdir(work) if (m := re.fullmatch(r"run(\d+)\.out", name))
        )
        best = re.findall(r"copying weights from best iteration \((\d+)", _read(log))
        decode, decode_cpu = decoder_times(times)
        return {
            "dev_bleu": [self.bleu(os.path.join(work, name), "val") for _, name in runs],
            "returned_iteration": int(best[-1]) if best else None,
            "decodings": len(runs),
            "stopped": "mert-moses.pl",
            "seconds": wall,
            "decode_seconds": decode,
            "tune_seconds": wall - decode,
            **_cpu_fields(None if resumed or decode_cpu is None else cpu, decode_cpu or 0.0),
            "returned_ini": os.path.join(work, "moses.ini"),
            "megam": None if mertdir == self.system.bin else "stand-in (hypertune.bench.moses_system.MEGAM)",
        }

    def megam_stand_in(self) -> str:
        """A folder of links to Moses's tools with :data:`MEGAM` as ``megam_i686.opt`` (mert-moses.pl's ``--mertdir``
        for PRO when Moses has no megam)."""
        folder = os.path.join(self.workdir, "mertdir-megam-stand-in")
        os.makedirs(folder, exist_ok=True)
        for name in os.listdir(self.system.bin):
            link = os.path.join(folder, name)
            if not os.path.lexists(link):
                os.symlink(os.path.join(self.system.bin, name), link)
        megam = os.path.join(folder, "megam_i686.opt")
        write_atomically(megam, f"#!{sys.executable}\n{MEGAM.lstrip()}")
        os.chmod(megam, 0o755)
        return folder

    def decode_test(self, ini: str, out: str) -> float:
        """Decode the test set with ``ini`` (the weights a run returned) and return the BLEU of the 1-best."""
        if not os.path.exists(out):
            command = [
                self.system.moses,
                "-f",
                ini,
                *self.moses_flags().split(),
                "-i",
                self.system.corpus("test", "de"),
            ]
            with open(out + ".partial", "wb") as handle, open(out + ".log", "wb") as log:
                status = subprocess.run(command, stdout=handle, stderr=log, check=False).returncode
            if status != 0:
                os.remove(out + ".partial")
                raise RunFailed(f"{out}.log: moses failed with exit status {status} on the test set")
            os.replace(out + ".partial", out)
        return self.bleu(out, "test")

    def bleu(self, hypotheses: str, part: str) -> float:
        """BLEU (0-100) of a 1-best file against ``part``'s references, with the tuners' options (:data:`BLEU`)."""
        out = _run(
            [*self.python, "bleu", "--hyp", hypotheses, "--refs", self.system.corpus(part, "en"), *BLEU, "--json"]
        )
        return float(json.loads(out)["score"])

    def finished(self) -> list[dict[str, Any]]:
        """The results of every run finished in the work directory (of this call or an earlier one)."""
        folder = os.path.join(self.workdir, "runs")
        names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
        return [r for name in names if (r := read_result(os.path.join(folder, name, "result.json"))) is not None]

    def compare_all(self, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Part 5: ``hypertune compare --runs K`` for each pair of :data:`COMPARISONS` over the seeds both finished."""
        outputs: dict[str, dict[int, str]] = {}
        for result in results:
            if "failed" not in result:
                outputs.setdefault(result["key"], {})[result["seed"]] = result["test_output"]
        comparisons = []
        for base, other in COMPARISONS:
            for one, two in ((base, other), (other, base)):  # a deterministic run stands for itself at every seed
                if RUNS[one].tuner in DETERMINISTIC and 1 in outputs.get(one, {}):
                    outputs[one] = {seed: outputs[one][1] for seed in {1, *outputs.get(two, {})}}
            seeds = sorted(set(outputs.get(base, {})) & set(outputs.get(other, {})))
            if not seeds:
                continue
            self.say(f"compare {base} and {other} over seeds {', '.join(map(str, seeds))}")
            files = [outputs[base][s] for s in seeds] + [outputs[other][s] for s in seeds]
            out = _run(
                [
                    *self.python,
                    "compare",
                    *files,
                    "--runs",
                    str(len(seeds)),
                    "--refs",
                    self.system.corpus("test", "en"),
                    "--seed",
                    "0",
                    *BLEU,
                    "--json",
                ]
            )
            report = json.loads(out)
            comparisons.append({"baseline": base, "system": other, "seeds": seeds, "systems": report["systems"]})
        return comparisons


class RunFailed(Exception):
    """A run that could not finish (a tool failed, or is missing): recorded, and the suite goes on."""


def add_sparse_features(text: str) -> str:
    """A moses.ini with :data:`SPARSE_FEATURES` added at the end of its ``[feature]`` section (they have no dense
    values, so the dense order stays)."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "[feature]")
    except StopIteration:
        raise UsageError("the system's moses.ini has no [feature] section") from None
    end = start + 1
    while end < len(lines) and not lines[end].strip().startswith("["):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    return "\n".join([*lines[:end], *SPARSE_FEATURES, *lines[end:]]) + "\n"


#: The timing wrapper's Python part (:func:`timing_wrapper`): argv is ``moses times args...``.
TIMER = """
import os, subprocess, sys, time
moses, times, args = sys.argv[1], sys.argv[2], sys.argv[3:]
start = time.time()
process = subprocess.Popen([moses, *args])
_, status, usage = os.wait4(process.pid, 0)
code = os.waitstatus_to_exitcode(status)
with open(times, "a") as log:
    log.write(f"{start} {time.time()} {code} cpu={usage.ru_utime + usage.ru_stime} {' '.join(args)}\\n")
sys.exit(code if code >= 0 else 128 - code)
"""


def timing_wrapper(moses: str, times: str) -> str:
    """A shell script that runs moses with its arguments and appends ``start end status cpu=CPU args`` to
    ``times`` (CPU: moses's user and system seconds, its threads included, by ``os.wait4`` in :data:`TIMER`)."""
    return (
        "#!/bin/sh\n"
        f'exec {shlex.quote(sys.executable)} -c {shlex.quote(TIMER)} {shlex.quote(moses)} {shlex.quote(times)} "$@"\n'
    )


def decoder_times(times: str) -> tuple[float, float | None]:
    """The wall and CPU seconds of the decodings a timing wrapper logged (``-show-weights`` calls left out); the
    CPU is ``None`` when a line has none (a log of the older shell wrapper)."""
    wall, cpu = 0.0, 0.0
    with_cpu = True
    for line in _read(times).splitlines():
        fields = line.split(None, 3)
        if len(fields) < 3:
            continue
        rest = fields[3] if len(fields) > 3 else ""
        used = None
        if rest.startswith("cpu="):
            used_text, _, rest = rest.partition(" ")
            used = float(used_text[4:])
        if "-show-weights" in rest.split():
            continue
        wall += float(fields[1]) - float(fields[0])
        if used is None:
            with_cpu = False
        else:
            cpu += used
    return wall, cpu if with_cpu else None


def _cpu_fields(cpu: float | None, decode_cpu: float) -> dict[str, float | None]:
    """A run's CPU seconds, whole and without decoding (``None`` when not all of it was measured: a resumed run,
    or decodings logged without CPU)."""
    return {"cpu_seconds": cpu, "tune_cpu_seconds": None if cpu is None else cpu - decode_cpu}


def _children_cpu() -> float:
    """User and system CPU seconds of every child process this one has waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def read_result(path: str) -> dict[str, Any] | None:
    """A finished run's result, or ``None`` when it has none (or a torn one, which is redone)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _brief(result: dict[str, Any]) -> str:
    if "failed" in result:
        return f"failed: {result['failed']}"
    dev = " ".join(f"{b:.2f}" for b in result["dev_bleu"])
    return f"dev BLEU {dev}; test {result['test_bleu']:.2f}; {result['seconds']:.0f} s"


def _run(command: Sequence[str], log: str | None = None, cwd: str | None = None, both: bool = False) -> str:
    """Run ``command``; its standard output, its standard error to ``log`` (``both``: its output too, and ``""``
    is returned; a failure: :class:`RunFailed`)."""
    with open(log, "ab") if log else open(os.devnull, "wb") as err:
        out = err if both else subprocess.PIPE
        done = subprocess.run(list(command), stdout=out, stderr=err, cwd=cwd, check=False)
    if done.returncode != 0:
        where = f"; see {log}" if log else ""
        raise RunFailed(f"{os.path.basename(command[0])} {' '.join(command[1:3])} ... exited {done.returncode}{where}")
    return "" if both else done.stdout.decode("utf-8", "replace")


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _load() -> str:
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


# ------------------------------------------------------------------------------------------------ the tables


def _mean_sd(values: list[float]) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _measured(results: list[dict[str, Any]], key: str) -> list[float]:
    """The runs' values of ``key``, those measured (runs of older versions, or resumed ones, have none)."""
    return [r[key] for r in results if r.get(key) is not None]


def _used(result: dict[str, Any]) -> str:
    used = result.get("nonzero_weights")
    return "-" if not used else f"{used['all']} ({used['sparse']})"


def _score(system: dict[str, Any]) -> str:
    """A system of ``compare``'s JSON: its mean score, with the sd over runs when it has several."""
    sd = system.get("sd")
    return f"{system['score']:.2f}" + ("" if sd is None else f" ± {sd:.2f}")


def markdown(payload: dict[str, Any]) -> str:
    """The suite's tables: every run (dev BLEU per decoding, the decoding returned, test BLEU, times), the mean
    and standard deviation over seeds of each tuner, and part 5's comparisons."""
    settings = payload.get("settings", {})
    head = (
        f"{payload.get('machine', '')}, {payload.get('date', '')}, {payload.get('load', '')}; stack "
        f"{settings.get('stack')}, {settings.get('threads')} threads, {settings.get('kbest')}-best, "
        f"{settings.get('iterations')} tunings ({(settings.get('iterations') or 0) + 1} decodings)"
    )
    lines = [
        head,
        "",
        "| run | seed | dev BLEU by decoding | returned | test BLEU | s whole | s without decoding "
        "| CPU s whole | CPU s without decoding | weights ≠ 0 (sparse) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[str, list[dict[str, Any]]] = {}
    for result in payload.get("runs", []):
        label = result.get("label", result.get("key", "?"))
        if "failed" in result:
            lines.append(f"| {label} | {result.get('seed')} | failed: {result['failed']} | | | | | | | |")
            continue
        groups.setdefault(label, []).append(result)
        dev = " ".join(f"{b:.2f}" for b in result["dev_bleu"])
        returned = result.get("returned_iteration")
        lines.append(
            f"| {label} | {result['seed']} | {dev} | {returned if returned is not None else '-'} | "
            f"{result['test_bleu']:.2f} | {result['seconds']:.0f} | {result['tune_seconds']:.0f} | "
            f"{_seconds(result.get('cpu_seconds'))} | {_seconds(result.get('tune_cpu_seconds'))} | {_used(result)} |"
        )
    stand_in = sorted({r["label"] for results in groups.values() for r in results if r.get("megam")})
    if stand_in:
        lines += ["", f"{', '.join(stand_in)}: megam was a stand-in (hypertune.bench.moses_system.MEGAM)."]
    lines += [
        "",
        "| tuner | runs | dev BLEU returned | test BLEU | s whole | s without decoding | CPU s whole "
        "| CPU s without decoding |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, results in groups.items():
        returned_dev = [r["dev_bleu"][(r.get("returned_iteration") or len(r["dev_bleu"])) - 1] for r in results]
        lines.append(
            f"| {label} | {len(results)} | {_mean_sd(returned_dev)} | {_mean_sd([r['test_bleu'] for r in results])} | "
            f"{_mean_sd([r['seconds'] for r in results])} | {_mean_sd([r['tune_seconds'] for r in results])} | "
            f"{_mean_sd(_measured(results, 'cpu_seconds'))} | {_mean_sd(_measured(results, 'tune_cpu_seconds'))} |"
        )
    if payload.get("comparisons"):
        lines += [
            "",
            "| baseline | system | seeds | baseline test BLEU | system test BLEU | p (AR) | p (bootstrap) |",
            "|---|---|---|---|---|---|---|",
        ]
        for c in payload["comparisons"]:
            base, other = c["systems"][0], c["systems"][1]
            p_ar = "-" if other.get("p_ar") is None else f"{other['p_ar']:.3f}"
            p_boot = "-" if other.get("p_boot") is None else f"{other['p_boot']:.3f}"
            lines.append(
                f"| {RUNS[c['baseline']].label} | {RUNS[c['system']].label} | {len(c['seeds'])} | "
                f"{_score(base)} | {_score(other)} | {p_ar} | {p_boot} |"
            )
    return "\n".join(lines) + "\n"


def run_suite(
    system: System,
    settings: Settings,
    workdir: str,
    parts: Sequence[int] = PARTS,
    say: Callable[[str], None] = lambda message: None,
) -> dict[str, Any]:
    """The suite (``hypertune bench --suite moses-system``): its results object, with the Markdown tables under
    ``markdown`` (also in ``WORKDIR/results.md``)."""
    system.check()
    os.makedirs(workdir, exist_ok=True)
    bench = Bench(system, settings, workdir, say)
    payload = bench.run_all(plan(parts, settings.seeds), parts)
    payload["markdown"] = markdown(payload)
    write_atomically(os.path.join(workdir, "results.md"), payload["markdown"])
    return payload
