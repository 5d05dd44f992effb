"""``hypertune tune``: the tuning loop -- decode, accumulate, tune, repeat -- that never loses work.

The tuner is one of the tuning commands (``mert``, ``mira``, ``minrisk``, ``train``, ``pro``), run in
process on the accumulated candidates exactly as ``hypertune TUNER INPUTS --refs REF --init W --seed S
--out W'`` would run it: its options are its own (parsed by its own parser, so they are never defined
twice and mean what its ``--help`` says), given after ``--tuner NAME`` or after ``--``. The loop itself,
the work directory, the decoder and the accumulation live in :mod:`hypertune.loop`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import json
import os
import re
import subprocess
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from hypertune import interrupts
from hypertune.cli import COMMANDS
from hypertune.errors import HypertuneError

#: The tuners ``--tuner`` offers: each is the tuning command of that name (module ``cli/<name>_command.py``).
TUNERS = ("mert", "mira", "minrisk", "train", "pro")

#: Options of the tuners that the loop sets itself in every iteration (their dests in the tuner's parser).
OWNED = {"init": "--init", "refs": "--refs", "out": "--out", "seed": "--seed", "out_format": "--out-format"}

EXAMPLE = """examples:
  hypertune tune --decoder 'hypertune decode graphs/ --weights {weights} --kbest {k} --out {kbest}' \\
      --refs ref --init init.weights --tuner mert --restarts 5 --workdir run1 --out tuned.weights
  hypertune tune --decoder 'moses -f {weights} -n-best-list {kbest} {k} distinct < dev.src' \\
      --decoder-config moses.ini --refs dev.ref --tuner mira --workdir mira.run --iterations 15
  hypertune tune ... --workdir run1 --resume            # after a crash or kill: go on from the last step
  hypertune tune ... --runs 5 --seed 1 --workdir runs   # five seeds: mean, sd, min, max of dev BLEU
  hypertune tune ... --tuner minrisk -- --iterations 50 # after --, options go to the tuner verbatim

The decoder command's placeholders: {weights} (this iteration's weights file, or --decoder-config with the
new weights), {kbest} or {lattices} (where the decoder writes), {k}, {iteration}, {seed}. Options the
loop does not know are the tuner's ('hypertune TUNER --help'); the loop sets the tuner's --init, --refs,
--seed and --out itself. See docs/tuning-loop.md.
"""


class _TuneParser(argparse.ArgumentParser):
    """The ``tune`` parser: options it does not know are kept for the tuner (in ``tuner_args``) instead of
    being an error, and the raw arguments are kept (``argv``) to start the runs of ``--runs``."""

    def parse_known_args(self, args=None, namespace=None):  # noqa: ANN001, ANN201 - argparse's signature
        args = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        if "--" in extras:
            cut = extras.index("--")
            extras = extras[:cut] + extras[cut + 1 :]
        namespace.tuner_args = extras
        namespace.argv = args
        return namespace, []


def register(subparsers: Any) -> None:
    from hypertune.choices import ACCUMULATE, WEIGHTS_FORMATS
    from hypertune.cli.common import add_output_options
    from hypertune.cli.options import non_negative_float, positive_int, seed

    parser = subparsers.add_parser(
        "tune",
        help=COMMANDS["tune"],
        description="Alternate decoding and tuning until no new candidates appear (Och 2003), as mert-moses.pl and "
        "dpmert.pl do, keeping every step in --workdir: a killed run continues with --resume and ends with the "
        "weights an uninterrupted run ends with. --runs R tunes R times and reports the spread of BLEU.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # an abbreviation must not take a tuner's option (--iter for --iterations)
    )
    parser.__class__ = _TuneParser
    parser.add_argument(
        "--decoder", required=True, metavar="CMD", help="the decoder's shell command (placeholders above)"
    )
    parser.add_argument(
        "--decoder-config",
        metavar="FILE",
        help="the decoder's configuration (moses.ini, Joshua config, cdec weights): each iteration gets a copy with "
        "the new weights as {weights}; default: a plain 'name value' weights file",
    )
    parser.add_argument("--refs", nargs="+", required=True, metavar="REF", help="dev reference files (or a prefix)")
    parser.add_argument(
        "--refs-per-sentence", type=positive_int, metavar="N", help="one interleaved file, N references each"
    )
    parser.add_argument(
        "--init",
        action="append",
        default=[],
        metavar="W",
        help="start weights, repeatable (later override earlier); default: those of --decoder-config",
    )
    parser.add_argument("--tuner", choices=TUNERS, default="mert", help="default: mert")
    parser.add_argument("--iterations", type=positive_int, default=10, metavar="N", help="most tunings (default 10)")
    parser.add_argument(
        "--kbest", type=positive_int, default=100, metavar="K", help="n-best size, the {k} placeholder (100)"
    )
    parser.add_argument(
        "--accumulate",
        choices=ACCUMULATE,
        default="nbest",
        help="nbest: the decoder writes {kbest}, merged over iterations without duplicates (default, as Moses); "
        "lattice: it writes {lattices}, joined over iterations; none: each iteration's output alone",
    )
    parser.add_argument(
        "--epsilon",
        type=non_negative_float,
        default=1e-5,
        metavar="E",
        help="stop when no weight moves by E or more (1e-5)",
    )
    parser.add_argument("--workdir", required=True, metavar="DIR", help="where every step is kept")
    parser.add_argument("--resume", action="store_true", help="continue the run in --workdir from its last step")
    parser.add_argument("--seed", type=seed, default=0, help="the run's seed; iteration seeds derive from it (0)")
    parser.add_argument(
        "--runs", type=positive_int, default=1, metavar="R", help="independent runs, seeds S..S+R-1 (1)"
    )
    parser.add_argument(
        "--parallel", type=positive_int, metavar="P", help="runs at once (default: one per core, at most R)"
    )
    parser.add_argument(
        "--average-weights",
        action="store_true",
        help="with --runs: write the mean of the runs' weights to --out (default: the best dev run's)",
    )
    parser.add_argument("--test-decoder", metavar="CMD", help="decode a test set with the final weights (placeholders)")
    parser.add_argument("--test-refs", nargs="+", metavar="REF", help="the test set's references")
    parser.add_argument("--out", "-o", metavar="W", help="write the final weights here (atomically)")
    parser.add_argument("--out-format", choices=WEIGHTS_FORMATS, default="cdec", help="weights format (default cdec)")
    parser.add_argument(
        "--cluster",
        metavar="SPEC",
        help="run every iteration's tuning on Dask (docs/distributed.md): local[:N] (started once for the loop) or "
        "tcp://HOST:PORT; not part of the run (a --resume may use another cluster); tuners other than mert need "
        "--shards N",
    )
    add_output_options(parser)
    parser.set_defaults(run=run, outputs=("out",))


# ---------------------------------------------------------------------------------------------- the tuner


def _tuner_parser(tuner: str) -> argparse.ArgumentParser:
    """The tuning command's own parser (``hypertune TUNER``), with its own options and defaults."""
    parser = argparse.ArgumentParser(prog=f"hypertune tune --tuner {tuner}", allow_abbrev=False)
    commands = parser.add_subparsers(dest="command")
    importlib.import_module(f"hypertune.cli.{tuner}_command").register(commands)
    return parser


def _metric_of(args: argparse.Namespace) -> tuple[str, bool]:
    """The name of the tuner's metric as results give it (``BLEU``, ``TER``) and whether higher is better; a
    command without ``--metric`` tunes BLEU."""
    if not hasattr(args, "metric"):
        return "BLEU", True
    from hypertune.cli.tuning import build_metric
    from hypertune.symbols import Vocabulary
    from hypertune.tuners.base import metric_label

    metric = build_metric(args, Vocabulary())
    return metric_label(metric), bool(metric.higher_is_better)


class CommandStep:
    """The loop's :class:`~hypertune.loop.TuningStep` made of a tuning command: every tuning is ``hypertune
    TUNER INPUTS --refs REF --init W --seed S --out OUT --json TUNER_ARGS`` run in this process (the same
    sentence matching, weights checks and tuner as the command), its JSON result returned."""

    def __init__(self, tuner: str, tuner_args: list[str], refs: list[str], refs_per_sentence: int | None) -> None:
        from hypertune.errors import UsageError

        self.tuner, self.tuner_args = tuner, list(tuner_args)
        self.refs, self.refs_per_sentence = list(refs), refs_per_sentence
        self.cluster: str | None = None  # a scheduler's address: every tuning runs there (tune --cluster)
        self.parser = _tuner_parser(tuner)
        self._warned: set[str] = set()
        probe = self._namespace(["INPUT"], "INIT", "OUT", 0)  # a wrong tuner option fails now, not in iteration 1
        for dest, option in OWNED.items():
            if hasattr(probe, dest) and getattr(probe, dest) != getattr(
                self._namespace(["INPUT"], "INIT", "OUT", 0, []), dest
            ):
                raise UsageError(f"{option} of the tuner is set by the loop in every iteration; give it to tune itself")
        self.metric, self.higher_is_better = _metric_of(probe)

    def _namespace(
        self, inputs: list[str], init: str, out: str | None, seed: int, extra: list[str] | None = None
    ) -> argparse.Namespace:
        argv = [self.tuner, *inputs, "--refs", *self.refs, "--init", init, "--seed", str(seed)]
        if self.refs_per_sentence:
            argv += ["--refs-per-sentence", str(self.refs_per_sentence)]
        if out:
            argv += ["--out", out, "--out-format", "cdec"]
        argv += ["--json", "--quiet", *(self.tuner_args if extra is None else extra)]
        try:
            return self.parser.parse_args(argv)
        except SystemExit as stop:  # argparse has printed the tuner's usage and error already
            raise SystemExit(2) from stop

    def tune(self, inputs: list[str], init: str, out: str, seed: int) -> dict[str, Any]:
        cluster = ["--cluster", self.cluster] if self.cluster else []
        args = self._namespace(inputs, init, out, seed, [*self.tuner_args, *cluster])
        args.save_interrupted = False  # an interrupted tuning is done again on --resume; the loop says so
        captured = io.StringIO()
        with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(captured):
            warnings.simplefilter("always")
            code = args.run(args)
        self._pass_on(caught)
        if code:
            from hypertune.errors import HypertuneError

            raise HypertuneError(f"hypertune {self.tuner} exited with status {code} on {' '.join(inputs)}")
        return json.loads(captured.getvalue())

    def score(self, inputs: list[str], weights: str) -> float:
        from hypertune.cli.tuning import load_tuning_set
        from hypertune.formats import read_weights
        from hypertune.loop import first_best_score
        from hypertune.metrics import BleuMetric

        args = self._namespace(inputs, weights, None, 0)
        metric = None if hasattr(args, "metric") else BleuMetric(tokenize=args.tokenize, lowercase=args.lowercase)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            tuning_set = load_tuning_set(args, metric)
        self._pass_on(caught)
        return first_best_score(tuning_set, read_weights(weights))

    def _pass_on(self, caught: list[warnings.WarningMessage]) -> None:
        """Show each warning once per run, not once per iteration: the same warning about another iteration's
        files, with other counts or other examples, is the same warning (its file and what it says, numbers
        aside, are its identity)."""
        for warning in caught:
            text = ": ".join(re.sub(r"\S*iteration-\d+\S*|\d+", "#", str(warning.message)).split(": ")[:2])
            if text not in self._warned:
                self._warned.add(text)
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)


# ---------------------------------------------------------------------------------------------- the command


def run(args: argparse.Namespace) -> int:
    from hypertune.errors import UsageError
    from hypertune.loop import check_template

    if bool(args.test_decoder) != bool(args.test_refs):
        raise UsageError("--test-decoder and --test-refs go together")
    if not args.init and not args.decoder_config:
        raise UsageError("give the start weights with --init, or a --decoder-config that holds them")
    output = "lattices" if args.accumulate == "lattice" else "kbest"
    check_template(args.decoder, output)
    if args.test_decoder:
        check_template(args.test_decoder, output)
    if args.runs > 1:
        return _run_many(args)
    return _run_one(args)


def _settings(args: argparse.Namespace) -> Any:
    from hypertune.errors import UsageError
    from hypertune.formats import read_weights
    from hypertune.formats.references import expand_prefix, read_references
    from hypertune.loop import DecoderConfig, LoopSettings, fingerprint_file

    config = DecoderConfig.from_file(args.decoder_config) if args.decoder_config else DecoderConfig()
    init = config.weights()
    init.update(read_weights(args.init) if args.init else {})
    for path in [*args.refs, *(args.test_refs or [])]:
        if path == "-" or (os.path.exists(path) and not os.path.isfile(path)):
            raise UsageError(f"{path}: the loop reads the references in every iteration; give a file, not a pipe")
    read_references(args.refs, args.refs_per_sentence)  # bad references fail now, before the decoder runs
    files = [name for p in args.refs for name in ([p] if os.path.isfile(p) else expand_prefix(p))]
    references = [fingerprint_file(name) for name in files]  # by content: the files may move
    return LoopSettings(
        decoder=args.decoder,
        init=init,
        tuner=args.tuner,
        tuner_args=args.tuner_args,
        references=references,
        kbest=args.kbest,
        iterations=args.iterations,
        accumulate=args.accumulate,
        epsilon=args.epsilon,
        seed=args.seed,
        decoder_config=config,
        extra={"refs_per_sentence": args.refs_per_sentence},
    )


def _run_one(args: argparse.Namespace) -> int:
    from hypertune.cli.common import emit, percent, show_progress, write_or_print
    from hypertune.formats.weights import format_weights, write_weights
    from hypertune.loop import TuningLoop, WorkDir

    settings = _settings(args)
    step = CommandStep(args.tuner, args.tuner_args, args.refs, args.refs_per_sentence)
    talk = not (args.json or args.quiet)
    terminal = show_progress(args)

    def report(event: str, data: dict[str, Any]) -> None:
        if not talk:
            return
        i = data.get("iteration")
        if event == "decoded":
            seconds = data.get("decode_seconds")
            took = f", decoded in {seconds:.1f} s" if seconds is not None else ""
            line = (f"iteration {i}: BLEU {percent(data['bleu'])}, {data['candidates_added']} new candidates "
                    f"({data['candidates']} in all){took}")  # fmt: skip
        elif event == "tuned":
            line = (f"iteration {i}: {args.tuner} {percent(data['tuner_bleu_before'] or 0)} -> "
                    f"{percent(data['tuner_bleu_after'] or 0)} on the candidates, weights moved "
                    f"{data['weights_moved']:.3g}, {data['tune_seconds']:.1f} s")  # fmt: skip
        elif terminal:
            sys.stderr.write(f"\r\x1b[Kiteration {i}: {event}...")
            sys.stderr.flush()
            return
        else:
            return
        sys.stderr.write(("\r\x1b[K" if terminal else "") + line + "\n")
        sys.stderr.flush()

    def tick(seconds: float) -> None:
        if talk and terminal:
            sys.stderr.write(f"\r\x1b[Kdecoding... {seconds:.0f} s")
            sys.stderr.flush()

    workdir = WorkDir(args.workdir)
    try:
        with _cluster(args, step):
            result = TuningLoop(settings, workdir, step, report, tick).run(resume=args.resume)
    except (KeyboardInterrupt, SystemError) as error:
        stop = interrupts.as_interrupt(error)
        if stop is None:
            raise
        raise stop.explained(_interrupted(args, workdir, stop, step.higher_is_better)) from None
    payload = result.to_json()
    if args.test_decoder:
        payload["test_bleu"] = _test_bleu(args, settings, workdir, result.weights_path)
    payload.update(tuner=args.tuner, workdir=args.workdir, seed=args.seed, output=args.out)
    if args.out:
        text = format_weights(result.weights, args.out_format)
        write_or_print(text, args.out, "weights", lambda: write_weights(result.weights, args.out, args.out_format))
    best = payload["best_iteration"]
    lines = [
        f"{result.metric} before {percent(result.score_before)} after {percent(result.score_after)} "
        f"({len(result.history)} "
        f"decodings, stopped: {result.stopped}; best: iteration {best}, {percent(result.history[best - 1]['bleu'])}; "
        f"{result.seconds:.1f} s)"
    ]
    if args.test_decoder:
        lines.append(f"test BLEU {percent(payload['test_bleu'])}")
    lines.append(f"weights written to {args.out}" if args.out else format_weights(result.weights, args.out_format))
    emit(args, "\n".join(line.rstrip() for line in lines), payload)
    return 0


@contextlib.contextmanager
def _cluster(args: argparse.Namespace, step: CommandStep) -> Iterator[None]:
    """``--cluster``: every tuning of the loop runs on it (``local[:N]`` is started once, here, and its address
    given to the tunings). A lost worker stops the tuning, and the loop, with the one-line error naming the
    shard; the finished steps are kept and ``tune --resume`` does the tuning again."""
    if not args.cluster:
        yield
        return
    from hypertune.errors import UsageError

    if step.tuner != "mert" and getattr(step._namespace(["INPUT"], "INIT", "OUT", 0), "shards", None) is None:
        raise UsageError(f"tune --cluster: give --shards N for --tuner {step.tuner} (its result depends on the "
                         "number of shards, and a resumed run must cut the same shards on any cluster)")  # fmt: skip
    from hypertune.distributed import open_cluster, parse_cluster

    spec = parse_cluster(args.cluster)
    if spec.kind != "local":
        step.cluster = args.cluster
        yield
        return
    with open_cluster(spec) as client:
        step.cluster = client.scheduler.address
        yield


def _interrupted(args: argparse.Namespace, workdir: Any, stop: Any, higher_is_better: bool = True) -> str:
    """The one line of an interrupted loop: the work directory keeps every finished step (``--resume`` goes on
    from there), and the weights of the best decoding so far are written beside ``--out`` (``OUT.interrupted``;
    printed on stdout without ``--out``)."""
    from hypertune.cli.common import percent
    from hypertune.formats import read_weights
    from hypertune.formats.weights import format_weights, write_weights
    from hypertune.metrics import best_index

    line = f"interrupted ({stop.name}); {args.workdir} keeps every finished step: continue with --resume"
    history = (workdir.read_json("state.json") or {}).get("history", [])
    decoded = [entry for entry in history if entry.get("bleu") is not None]
    if not decoded:
        return line
    best = decoded[best_index([entry["bleu"] for entry in decoded], higher_is_better)]
    i = best["iteration"]
    weights = read_weights(workdir.iteration(i, "weights"))  # what the decoding of iteration i used
    what = f"the best weights so far (iteration {i}, BLEU {percent(best['bleu'])})"
    if args.out and args.out != "-":
        path = f"{args.out}.interrupted"
        try:
            write_weights(weights, path, args.out_format)
            return f"{line}; {what} written to {path}"
        except (OSError, HypertuneError):
            pass
    text = format_weights(weights, args.out_format)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return f"{line}; {what} printed on stdout"


def _test_bleu(args: argparse.Namespace, settings: Any, workdir: Any, weights_path: str) -> float:
    """Decode the test set once with the final weights (kept in ``DIR/test``, so a resumed run does not
    decode it again) and score the decoder's 1-best against ``--test-refs``."""
    from hypertune.formats import read_weights
    from hypertune.formats.io import write_atomically
    from hypertune.formats.weights import format_weights
    from hypertune.loop import expand, run_decoder

    folder = workdir.file("test")
    output = os.path.join(folder, "output")
    weights = read_weights(weights_path)
    name = settings.output_name
    written = format_weights(weights, "cdec")
    done = os.path.join(folder, "weights")
    if os.path.isdir(output) and (not os.path.exists(done) or open(done, encoding="utf-8").read() != written):  # noqa: SIM115
        workdir.discard("test")  # decoded with other weights (the run was resumed with more iterations)
    if not os.path.isdir(output):
        os.makedirs(folder, exist_ok=True)
        write_atomically(os.path.join(folder, "weights"), written)
        config = settings.decoder_config.write(weights, folder)
        staging = workdir.staging("test", "output")
        values = {
            "weights": config,
            "kbest": os.path.join(staging, "kbest"),
            "lattices": os.path.join(staging, "lattices"),
            "iteration": "test",
            "k": settings.kbest,
            "seed": args.seed,
        }
        command = expand(args.test_decoder, values)
        run_decoder(command, os.path.join(folder, "decoder.out"), os.path.join(folder, "decoder.log"), 0)
        os.replace(staging, output)
    step = CommandStep(args.tuner, args.tuner_args, args.test_refs, None)
    return step.score([os.path.join(output, name)], os.path.join(folder, "weights"))


def _run_many(args: argparse.Namespace) -> int:
    """``--runs R``: R runs of this command with seeds S..S+R-1 in ``DIR/run-<seed>``, as processes (at most
    ``--parallel`` at once), then the spread of their BLEU and the best or averaged weights."""
    from hypertune.cli.common import emit, percent, write_or_print
    from hypertune.errors import HypertuneError
    from hypertune.formats import read_weights
    from hypertune.formats.weights import format_weights, write_weights
    from hypertune.loop import WorkDir, average_weights, spread
    from hypertune.loop.decoder import die_with_parent
    from hypertune.metrics import best_index
    from hypertune.weights import Weights

    workdir = WorkDir(args.workdir)
    seeds = [args.seed + r for r in range(args.runs)]
    parallel = args.parallel or max(1, min(args.runs, os.cpu_count() or 1))
    head, tail = (args.argv, []) if "--" not in args.argv else _split(args.argv)
    results: dict[int, dict[str, Any]] = {}
    running: list[tuple[int, subprocess.Popen, Any, Any]] = []
    with workdir.locked(), _one_local_cluster(args) as address, _stopped_when_interrupted(args, running):
        workdir.check_config({"runs": args.runs, "seed": args.seed, "argv": _config_argv(args.argv)}, args.resume)
        if address:  # the runs share the one local cluster instead of starting one each
            head = [
                address if k and head[k - 1] == "--cluster" else f"--cluster={address}" if word.startswith("--cluster=")
                else word
                for k, word in enumerate(head)
            ]  # fmt: skip
        pending = list(seeds)
        while pending or running:
            while pending and len(running) < parallel:
                seed = pending.pop(0)
                folder = workdir.file(f"run-{seed}")
                argv = [*head, "--runs", "1", "--seed", str(seed), "--workdir", folder, "--json", "--quiet"]
                argv += ["--out", workdir.file(f"run-{seed}.weights"), "--out-format", "cdec"]
                argv += ["--resume"] if os.path.exists(os.path.join(folder, "config.json")) else []
                argv += ["--", *tail] if tail else []
                out = open(workdir.file(f"run-{seed}.json"), "w", encoding="utf-8")  # noqa: SIM115
                err = open(workdir.file(f"run-{seed}.log"), "w", encoding="utf-8")  # noqa: SIM115
                command = [sys.executable, "-m", "hypertune", "tune", *argv]
                linux = sys.platform.startswith("linux")  # a killed set of runs takes its runs with it
                process = subprocess.Popen(
                    command, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                    preexec_fn=die_with_parent if linux else None,  # noqa: PLW1509
                )  # fmt: skip
                running.append((seed, process, out, err))
                if not (args.json or args.quiet):
                    print(f"run with seed {seed} started ({folder})", file=sys.stderr)
            seed, process, out, err = running[0]
            status = process.wait()  # the run stays in running until it ends: an interrupt stops it too
            running.pop(0)
            out.close()
            err.close()
            if status != 0:
                for _, other, *files in running:
                    other.wait()
                    for handle in files:
                        handle.close()
                log = workdir.file(f"run-{seed}.log")
                lines = [line.strip() for line in open(log, encoding="utf-8") if line.strip()][-2:]
                raise HypertuneError(
                    f"{log}: the run with seed {seed} failed (exit status {status}): {' | '.join(lines)}"
                )
            results[seed] = json.load(open(workdir.file(f"run-{seed}.json"), encoding="utf-8"))
            if not (args.json or args.quiet):
                print(
                    f"run with seed {seed}: {results[seed]['metric']} {percent(results[seed]['score_after'])}",
                    file=sys.stderr,
                )
    runs = [results[s] for s in seeds]
    dev = spread([r["score_after"] for r in runs])
    kept = (
        "bleu_before",
        "bleu_after",
        "score_before",
        "score_after",
        "metric",
        "higher_is_better",
        "iterations",
        "stopped",
        "best_iteration",
        "test_bleu",
        "weights",
    )  # bleu_*: deprecated, kept for one release
    summaries = [{"seed": s, **{k: r[k] for k in kept if k in r}} for s, r in zip(seeds, runs, strict=True)]
    payload: dict[str, Any] = {"runs": summaries, "dev_bleu": dev}
    if args.test_decoder:
        payload["test_bleu"] = spread([r["test_bleu"] for r in runs])
    all_weights = [Weights(r["weights"]) for r in runs]
    if args.average_weights:
        final = average_weights(all_weights)
        chosen = "averaged over the runs"
    else:
        best = best_index([r["score_after"] for r in runs], runs[0].get("higher_is_better", True))
        final = read_weights(workdir.file(f"run-{seeds[best]}.weights"))
        chosen = f"of the best dev run (seed {seeds[best]})"
    payload.update(weights=dict(final), weights_chosen=chosen, workdir=args.workdir, output=args.out)
    if args.out:
        text = format_weights(final, args.out_format)
        write_or_print(text, args.out, "weights", lambda: write_weights(final, args.out, args.out_format))
    lines = [_spread_line("dev BLEU", dev)]
    if args.test_decoder:
        lines.append(_spread_line("test BLEU", payload["test_bleu"]))
    lines.append(
        f"weights {chosen}: "
        + (f"written to {args.out}" if args.out else "\n" + format_weights(final, args.out_format))
    )
    emit(args, "\n".join(line.rstrip() for line in lines), payload)
    return 0


@contextlib.contextmanager
def _stopped_when_interrupted(args: argparse.Namespace, running: list[tuple[Any, ...]]) -> Iterator[None]:
    """``--runs``: an interrupt stops the runs still going (SIGTERM: each keeps its finished steps) and waits for
    them; the one line says that ``--resume`` goes on."""
    try:
        yield
    except (KeyboardInterrupt, SystemError) as error:
        stop = interrupts.as_interrupt(error)
        if stop is None:
            raise
        for _, process, *_files in running:
            if process.poll() is None:
                process.terminate()
        for _, process, *files in running:
            process.wait()
            for handle in files:
                handle.close()
        raise stop.explained(
            f"interrupted ({stop.name}); {args.workdir} keeps every run's finished steps: continue with --resume"
        ) from None


def _spread_line(label: str, values: dict[str, float]) -> str:
    from hypertune.cli.common import percent

    return (f"{label} over {values['runs']} runs: mean {percent(values['mean'])}, sd {percent(values['sd'])}, "
            f"min {percent(values['min'])}, max {percent(values['max'])}")  # fmt: skip


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


@contextlib.contextmanager
def _one_local_cluster(args: argparse.Namespace) -> Iterator[str | None]:
    """``--runs R --cluster local[:N]``: one local cluster started here for all the runs, its scheduler's
    address given to each (R clusters of N workers at once would oversubscribe the cores); None otherwise."""
    if not args.cluster:
        yield None
        return
    from hypertune.distributed import open_cluster, parse_cluster

    spec = parse_cluster(args.cluster)
    if spec.kind != "local":
        yield None
        return
    with open_cluster(spec) as client:
        yield client.scheduler.address


def _config_argv(argv: list[str]) -> list[str]:
    """The arguments that make a set of runs what it is (``--resume``, ``--quiet``, ``--json``, ``--parallel``,
    ``--out``, ``--workdir`` and ``--cluster`` do not: the directory may move between a run and its ``--resume``,
    and the cluster change)."""
    out, skip = [], False
    for word in argv:
        if skip:
            skip = False
            continue
        if word in ("--resume", "--quiet", "-q", "--json"):
            continue
        if word in ("--parallel", "--out", "-o", "--out-format", "--workdir", "--cluster"):
            skip = True
            continue
        out.append(word)
    return out
