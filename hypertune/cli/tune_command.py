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
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from hypertune import interrupts
from hypertune.cli import COMMANDS
from hypertune.errors import HypertuneError

#: Options of the tuners that the loop sets itself in every iteration (their dests in the tuner's parser).
OWNED = {"init": "--init", "refs": "--refs", "out": "--out", "seed": "--seed", "out_format": "--out-format",
         "scores": "--scores", "runs": "--runs"}  # fmt: skip

EXAMPLE = """examples:
  hypertune tune --decoder 'hypertune decode graphs/ --weights {weights} --kbest {k} --out {kbest}' \\
      --refs ref --init init.weights --tuner mert --restarts 5 --workdir run1 --out tuned.weights
  hypertune tune --decoder 'moses -f {weights} -n-best-list {kbest} {k} distinct < dev.src' \\
      --decoder-config moses.ini --refs dev.ref --tuner mira --workdir mira.run --iterations 15
  hypertune tune ... --workdir run1 --resume            # after a crash or kill: go on from the last step
  hypertune tune ... --runs 5 --seed 1 --workdir runs   # five seeds: mean, sd, min, max of dev BLEU
  hypertune tune ... --return last                      # the last iteration's weights, not the best dev ones
  hypertune tune ... --tuner minrisk -- --iterations 50 # after --, options go to the tuner verbatim
  hypertune tune --decoder '...' --scorer 'python comet_lines.py {kbest} {scores}' --metric scores.comet \
      --init init.weights --workdir comet.run            # tune on COMET: a scorer writes each n-best's scores

The decoder command's placeholders: {weights} (this iteration's weights file, or --decoder-config with the
new weights), {kbest} or {lattices} (where the decoder writes), {k}, {iteration}, {seed}. The scorer's:
{kbest} (the n-best list just decoded), {scores} (the score file it writes: a line of name=value pairs per
hypothesis), {k}, {iteration}, {seed}. Options the loop does not know are the tuner's ('hypertune TUNER
--help'); the loop sets the tuner's --init, --refs, --scores, --seed and --out itself. See docs/tuning-loop.md.
"""


class _TuneParser(argparse.ArgumentParser):
    """The ``tune`` parser: options it does not know are kept for the tuner (in ``tuner_args``) instead of
    being an error, and the raw arguments are kept (``argv``) to start the runs of ``--runs``."""

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        if "--" in extras:
            cut = extras.index("--")
            extras = extras[:cut] + extras[cut + 1 :]
        namespace.tuner_args = extras
        namespace.argv = args
        return namespace, []


def register(subparsers: Any) -> None:
    from hypertune.choices import ACCUMULATE, LOOP_RETURNS, WEIGHTS_FORMATS
    from hypertune.cli.common import add_output_options
    from hypertune.cli.options import non_negative_float, positive_int, seed
    from hypertune.tuners.registry import tuning_commands

    parser = subparsers.add_parser(
        "tune",
        help=COMMANDS["tune"],
        description="Alternate decoding and tuning until no new candidates appear (Och 2003), as mert-moses.pl and "
        "dpmert.pl do, keeping every step in --workdir: a killed run continues with --resume and ends with the "
        "weights an uninterrupted run ends with. It returns the weights of the decoding with the best dev score "
        "(--return last: the last decoding's). --runs R tunes R times and reports the spread of BLEU.",
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
    parser.add_argument(
        "--refs",
        nargs="+",
        default=[],
        metavar="REF",
        help="dev reference files (or a prefix); not needed when the tuner's --metric is scores.NAME",
    )
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
    parser.add_argument("--tuner", choices=tuning_commands(), default="mert", help="default: mert")
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
    parser.add_argument(
        "--return",
        dest="returns",
        choices=LOOP_RETURNS,
        default="best",
        help="best: the weights of the decoding with the best dev score, the earliest of equal ones (default, as "
        "mert-moses.pl --return-best-dev); last: the last decoding's",
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
    parser.add_argument(
        "--scorer",
        metavar="CMD",
        help="a shell command run after each decoding that writes the given scores of its n-best list {kbest} to "
        "{scores}, a line of name=value pairs per hypothesis (as --scores), for the tuner's --metric scores.NAME "
        "(COMET, a QE model, ...): docs/tuning-loop.md",
    )
    parser.add_argument(
        "--test-decoder",
        metavar="CMD",
        help="decode a test set with the weights returned, and with the last decoding's when they differ "
        "(placeholders)",
    )
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
    """The tuning command's own parser (``hypertune TUNER``), with its own options and defaults: the command's
    module, or the generated command of a registered tuner without one (:mod:`hypertune.cli.tuner_command`)."""
    from hypertune.cli import COMMANDS

    parser = argparse.ArgumentParser(prog=f"hypertune tune --tuner {tuner}", allow_abbrev=False)
    commands = parser.add_subparsers(dest="command")
    if tuner.replace("-", "_") in COMMANDS:
        importlib.import_module(f"hypertune.cli.{tuner.replace('-', '_')}_command").register(commands)
    else:
        importlib.import_module("hypertune.cli.tuner_command").register(commands, tuner)
    return parser


def _metric_of(args: argparse.Namespace) -> Any:
    """The tuner's metric (:class:`~hypertune.metrics.Metric`); a command without ``--metric`` tunes BLEU."""
    from hypertune.symbols import Vocabulary

    if not hasattr(args, "metric"):
        from hypertune.metrics import BleuMetric

        return BleuMetric(vocabulary=Vocabulary())
    from hypertune.cli.tuning import build_metric

    return build_metric(args, Vocabulary())


class CommandStep:
    """The loop's :class:`~hypertune.loop.TuningStep` made of a tuning command: every tuning is what ``hypertune
    TUNER INPUTS --refs REF --init W --seed S TUNER_ARGS`` runs (the same sentence matching, weights checks and
    tuner as the command), called in this process through the command's ``fit``
    (:class:`~hypertune.cli.tuning.Fitted`): the tuner's options are parsed once, here, and each iteration
    changes only its inputs, start weights, output and seed."""

    def __init__(self, tuner: str, tuner_args: list[str], refs: list[str], refs_per_sentence: int | None) -> None:
        from hypertune.errors import UsageError

        self.tuner, self.tuner_args = tuner, list(tuner_args)
        self.refs, self.refs_per_sentence = list(refs), refs_per_sentence
        self.cluster: str | None = None  # a scheduler's address: every tuning runs there (tune --cluster)
        self.parser = _tuner_parser(tuner)
        self._warned: set[str] = set()
        self.template = self._parse(self.tuner_args)  # a wrong tuner option fails now, not in iteration 1
        plain = self._parse([])
        for dest, option in OWNED.items():
            if hasattr(self.template, dest) and getattr(self.template, dest) != getattr(plain, dest):
                owner = "tune --scorer" if dest == "scores" else "tune itself"
                raise UsageError(f"{option} of the tuner is set by the loop in every iteration; give it to {owner}")
        from hypertune.tuners.base import metric_label

        metric = _metric_of(self.template)
        self.metric, self.higher_is_better = metric_label(metric), bool(metric.higher_is_better)
        self.needs_references = bool(metric.needs_references)
        self.given_names: tuple[str, ...] = tuple(metric.given_names)  # the scores a scorer must write
        self.display_scale = float(metric.display_scale)

    def shown(self, value: float) -> str:
        """A value of the metric as summaries show it: 0-100 (BLEU, TER), or as given (a mean COMET)."""
        from hypertune.cli.common import percent

        return percent(value, scale=self.display_scale)

    def _parse(self, extra: list[str]) -> argparse.Namespace:
        """The tuner's options (the references are set afterwards, :meth:`_namespace`: a file name is no option)."""
        argv = [self.tuner, "INPUT", "--init", "INIT", "--json", "--quiet", *extra]
        if self.refs_per_sentence:
            argv += ["--refs-per-sentence", str(self.refs_per_sentence)]
        try:
            return self.parser.parse_args(argv)
        except SystemExit as stop:  # argparse has printed the tuner's usage and error already
            raise SystemExit(2) from stop

    def _namespace(
        self, inputs: list[str], init: str, out: str | None, seed: int, scores: list[str] | None = None
    ) -> argparse.Namespace:
        """The parsed tuner options with this iteration's inputs (and their score files), start weights, output
        and seed."""
        import copy

        args = copy.copy(self.template)
        args.inputs, args.init, args.out, args.out_format = list(inputs), [init], out, "cdec"
        args.refs = list(self.refs)
        args.scores = list(scores) if scores else None
        if hasattr(args, "seed"):
            args.seed = seed
        return args

    def tune(
        self, inputs: list[str], init: str, out: str, seed: int, scores: list[str] | None = None
    ) -> dict[str, Any]:
        from hypertune.formats.weights import write_weights

        args = self._namespace(inputs, init, out, seed, scores)
        if self.cluster:
            args.cluster = self.cluster
        args.save_interrupted = False  # an interrupted tuning is done again on --resume; the loop says so
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fitted = args.fit(args)
        self._pass_on(caught)
        write_weights(fitted.result.weights, out, "cdec")
        if fitted.after is not None:
            fitted.after()
        return {**fitted.result.to_json(), "sentences": len(fitted.described), "output": out}

    def score(self, inputs: list[str], weights: str, scores: list[str] | None = None) -> float:
        from hypertune.cli.tuning import load_tuning_set
        from hypertune.formats import read_weights
        from hypertune.loop import first_best_score
        from hypertune.metrics import BleuMetric

        args = self._namespace(inputs, weights, None, 0, scores)
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
    step = CommandStep(args.tuner, args.tuner_args, args.refs, args.refs_per_sentence)
    _check_scoring(args, step)
    if args.runs > 1:
        return _run_many(args, step)
    return _run_one(args, step)


def _check_scoring(args: argparse.Namespace, step: CommandStep) -> None:
    """Up front, before any decoding: a metric of given scores needs ``--scorer`` (and then no ``--refs``), any
    other metric needs ``--refs``; the scorer scores n-best lists (``--accumulate nbest`` or ``none``)."""
    from hypertune.errors import UsageError
    from hypertune.loop import check_scorer_template

    if step.given_names and not args.scorer:
        names = ", ".join(step.given_names)
        raise UsageError(f"--metric {step.metric} reads given scores ({names}) of every hypothesis: give --scorer CMD, "
                         "a command that writes them for each decoding's n-best list {kbest} to {scores} "
                         "(docs/tuning-loop.md)")  # fmt: skip
    if step.needs_references and not args.refs:
        raise UsageError(f"--refs is required: --metric {step.metric} compares the hypotheses with references (only "
                         "scores.NAME metrics need none)")  # fmt: skip
    if not args.scorer:
        return
    check_scorer_template(args.scorer)
    if args.accumulate == "lattice":
        raise UsageError("--scorer scores n-best lists: use --accumulate nbest or none with it, not lattice")
    if args.test_decoder and step.given_names:
        raise UsageError(f"--test-decoder scores the test set with --metric {step.metric}, which needs given scores "
                         "the loop has only for the dev set; score the test set apart (hypertune rerank)")  # fmt: skip


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
    if args.refs:
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
        scorer=args.scorer,
        returns=args.returns,
    )


def _run_one(args: argparse.Namespace, step: CommandStep) -> int:
    from hypertune.cli.common import emit, show_progress, write_or_print
    from hypertune.formats.weights import format_weights, write_weights
    from hypertune.loop import TuningLoop, WorkDir
    from hypertune.loop.loop import entry_score

    settings = _settings(args)
    shown = step.shown
    talk = not (args.json or args.quiet)
    terminal = show_progress(args)
    doing = ["decoding"]  # what the command under way does, for the ticks: decoding or scoring

    def report(event: str, data: dict[str, Any]) -> None:
        if not talk:
            return
        i = data.get("iteration")
        if event in ("decoding", "scoring"):
            doing[0] = event
        if event == "decoded":
            seconds, scoring = data.get("decode_seconds"), data.get("scorer_seconds")
            took = f", decoded in {seconds:.1f} s" if seconds is not None else ""
            took += f", scored in {scoring:.1f} s" if scoring is not None else ""
            line = (f"iteration {i}: {step.metric} {shown(entry_score(data) or 0)}, {data['candidates_added']} new "
                    f"candidates ({data['candidates']} in all){took}")  # fmt: skip
        elif event == "tuned":
            line = (f"iteration {i}: {args.tuner} {shown(data['tuner_score_before'] or 0)} -> "
                    f"{shown(data['tuner_score_after'] or 0)} on the candidates, weights moved "
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
            sys.stderr.write(f"\r\x1b[K{doing[0]}... {seconds:.0f} s")
            sys.stderr.flush()

    workdir = WorkDir(args.workdir)
    try:
        with _cluster(args, step):
            result = TuningLoop(settings, workdir, step, report, tick).run(resume=args.resume)
    except (KeyboardInterrupt, SystemError) as error:
        stop = interrupts.as_interrupt(error)
        if stop is None:
            raise
        raise stop.explained(_interrupted(args, workdir, stop, step)) from None
    payload = result.to_json()
    returned, last = result.returned_iteration, result.history[-1]["iteration"]
    if args.test_decoder:
        payload["test_score"] = payload["test_bleu"] = _test_score(args, settings, workdir, returned)
        payload["test_score_last"] = (
            payload["test_score"] if last == returned else _test_score(args, settings, workdir, last)
        )
    payload.update(tuner=args.tuner, workdir=args.workdir, seed=args.seed, output=args.out)
    if args.out:
        text = format_weights(result.weights, args.out_format)
        write_or_print(text, args.out, "weights", lambda: write_weights(result.weights, args.out, args.out_format))
    lines = [
        f"{result.metric} before {shown(result.score_before)} after {shown(result.score_after)} "
        f"({len(result.history)} decodings, stopped: {result.stopped}; {_returned(result, shown)}; "
        f"{result.seconds:.1f} s)"
    ]
    if args.test_decoder:
        test = f"test {step.metric} {shown(payload['test_score'])} with the weights returned"
        if last != returned:
            test += f", {shown(payload['test_score_last'])} with the last decoding's"
        lines.append(test)
    lines.append(f"weights written to {args.out}" if args.out else format_weights(result.weights, args.out_format))
    emit(args, "\n".join(line.rstrip() for line in lines), payload)
    return 0


@contextlib.contextmanager
def _cluster(args: argparse.Namespace, step: CommandStep) -> Iterator[None]:
    """``--cluster``: every tuning of the loop runs on it (:func:`hypertune.loop.runs.shared_cluster`)."""
    if not args.cluster:
        yield
        return
    from hypertune.errors import UsageError
    from hypertune.loop.runs import shared_cluster

    if step.tuner != "mert" and getattr(step.template, "shards", None) is None:
        raise UsageError(f"tune --cluster: give --shards N for --tuner {step.tuner} (its result depends on the "
                         "number of shards, and a resumed run must cut the same shards on any cluster)")  # fmt: skip
    with shared_cluster(args.cluster) as address:
        step.cluster = address
        yield


def _interrupted(args: argparse.Namespace, workdir: Any, stop: Any, step: CommandStep) -> str:
    """The one line of an interrupted loop: the work directory keeps every finished step (``--resume`` goes on
    from there), and the weights of the best decoding so far are written beside ``--out`` (``OUT.interrupted``;
    printed on stdout without ``--out``)."""
    from hypertune.formats import read_weights
    from hypertune.formats.weights import format_weights, write_weights
    from hypertune.loop.loop import best_iteration, entry_score

    line = f"interrupted ({stop.name}); {args.workdir} keeps every finished step: continue with --resume"
    history = (workdir.read_json("state.json") or {}).get("history", [])
    if not any(entry_score(entry) is not None for entry in history):
        return line
    i = best_iteration(history, step.higher_is_better)
    best = next(entry for entry in history if entry["iteration"] == i)
    weights = read_weights(workdir.iteration(i, "weights"))  # what the decoding of iteration i used
    what = f"the best weights so far (iteration {i}, {step.metric} {step.shown(entry_score(best) or 0)})"
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


def _returned(result: Any, shown: Callable[[float], str]) -> str:
    """Which decoding's weights the loop returned, and the other one of the best and the last."""
    from hypertune.loop.loop import scored

    best, last = result.best_iteration, result.history[-1]["iteration"]
    if best == last:
        return f"returned: iteration {last}, the best and the last"
    if result.returns == "best":
        return f"returned: iteration {best}, the best (the last, {last}, scored {shown(result.score_last)})"
    best_score = scored(result.history[best - 1])
    return f"returned: iteration {last}, the last (the best, {best}, scored {shown(best_score)})"


def _test_score(args: argparse.Namespace, settings: Any, workdir: Any, iteration: int) -> float:
    """Decode the test set once with the weights decoding ``iteration`` used (kept in ``DIR/test-NNN``, so a
    resumed run does not decode it again) and score the decoder's 1-best against ``--test-refs`` with the
    tuner's metric."""
    from hypertune.formats import read_weights
    from hypertune.formats.io import write_atomically
    from hypertune.formats.weights import format_weights
    from hypertune.loop import expand, run_decoder

    folder = workdir.file(f"test-{iteration:03d}")
    output = os.path.join(folder, "output")
    weights = read_weights(workdir.iteration(iteration, "weights"))
    name = settings.output_name
    written = format_weights(weights, "cdec")
    done = os.path.join(folder, "weights")
    if os.path.isdir(output) and (not os.path.exists(done) or open(done, encoding="utf-8").read() != written):
        workdir.discard(os.path.basename(folder))  # decoded with other weights (a run redone after a change)
    if not os.path.isdir(output):
        os.makedirs(folder, exist_ok=True)
        write_atomically(os.path.join(folder, "weights"), written)
        config = settings.decoder_config.write(weights, folder)
        staging = workdir.staging(os.path.basename(folder), "output")
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
        settings.decoder_config.finish_output(staging, name)  # e.g. Moses's extended search graph, named
        os.replace(staging, output)
    step = CommandStep(args.tuner, args.tuner_args, args.test_refs, None)
    return step.score([os.path.join(output, name)], os.path.join(folder, "weights"))


def _run_many(args: argparse.Namespace, step: CommandStep) -> int:
    """``--runs R``: R runs of this command with seeds S..S+R-1 in ``DIR/run-<seed>``, as processes (at most
    ``--parallel`` at once; :func:`hypertune.loop.runs.run_seeds`), then the spread of their dev metric and the
    best or averaged weights (:func:`hypertune.loop.runs.summarize_runs`)."""
    from hypertune.cli.common import emit, write_or_print
    from hypertune.cli.tuning import spread_line
    from hypertune.formats.weights import format_weights, write_weights
    from hypertune.loop import WorkDir
    from hypertune.loop.runs import run_seeds, shared_cluster, summarize_runs

    workdir = WorkDir(args.workdir)
    seeds = [args.seed + r for r in range(args.runs)]
    parallel = args.parallel or max(1, min(args.runs, os.cpu_count() or 1))
    head, tail = (args.argv, []) if "--" not in args.argv else _split(args.argv)
    say = None if args.json or args.quiet else (lambda line: print(line, file=sys.stderr))
    with workdir.locked(), shared_cluster(args.cluster) as address:
        workdir.check_config({"runs": args.runs, "seed": args.seed, "argv": _config_argv(args.argv)}, args.resume)
        if address:  # the runs share the one cluster instead of starting one each
            head = [
                address if k and head[k - 1] == "--cluster" else f"--cluster={address}" if word.startswith("--cluster=")
                else word
                for k, word in enumerate(head)
            ]  # fmt: skip

        def command(seed: int) -> list[str]:
            folder = workdir.file(f"run-{seed}")
            argv = ["tune", *head, "--runs", "1", "--seed", str(seed), "--workdir", folder, "--json", "--quiet"]
            argv += ["--out", workdir.file(f"run-{seed}.weights"), "--out-format", "cdec"]
            argv += ["--resume"] if os.path.exists(os.path.join(folder, "config.json")) else []
            return argv + (["--", *tail] if tail else [])

        results = run_seeds(workdir, seeds, parallel, command, say, step.shown)
    payload, final = summarize_runs(workdir, seeds, results, args.average_weights)
    if all(results[s]["weights"] == results[seeds[0]]["weights"] for s in seeds):
        from hypertune.errors import warn

        warn(f"the {len(seeds)} runs returned the same weights: the loop did not depend on the seed (the decoder and "
             f"--tuner {args.tuner} with these options draw nothing at random)")  # fmt: skip
    payload.update(weights=dict(final), workdir=args.workdir, output=args.out)
    if args.out:
        text = format_weights(final, args.out_format)
        write_or_print(text, args.out, "weights", lambda: write_weights(final, args.out, args.out_format))
    lines = [spread_line(f"dev {step.metric}", payload["dev_score"], step.shown)]
    if "test_score" in payload:
        lines.append(spread_line(f"test {step.metric}", payload["test_score"], step.shown))
    lines.append(
        f"weights {payload['weights_chosen']}: "
        + (f"written to {args.out}" if args.out else "\n" + format_weights(final, args.out_format))
    )
    emit(args, "\n".join(line.rstrip() for line in lines), payload)
    return 0


def _split(argv: list[str]) -> tuple[list[str], list[str]]:
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


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
