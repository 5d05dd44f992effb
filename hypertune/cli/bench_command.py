"""``hypertune bench``: time the engine (and metrics) on this machine, one line per figure."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import sys
import tempfile

from hypertune.bench import SHARED_SUITES, SUITES, cold_start_figures, engine_figures, metric_figures
from hypertune.cli import COMMANDS
from hypertune.cli.common import add_output_options, emit
from hypertune.cli.options import integer, positive_int, seed
from hypertune.errors import UsageError

EXAMPLE = """example:
  hypertune bench                      # engine figures on a 100,000-edge forest
  hypertune bench --suite all --json   # every figure, as JSON
  hypertune bench --suite mert --shared ../shared --workdir /tmp/hypertune-bench
                                       # MERT figures on the shared reference data (minutes)
  hypertune bench --suite moses-system --moses R/mosesdecoder --system R --workdir /tmp/bench --parts 1,2
                                       # hypertune's loop against mert-moses.pl on a real system (hours)
  hypertune bench --suite whole --shared ../shared --anchors /tmp/anchors --anchors /tmp/moses-system/mosesdecoder/bin
                                       # whole commands beside Moses's and cdec's tools (half an hour)
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "bench",
        help=COMMANDS["bench"],
        description="Time hypertune's hot paths on seeded synthetic data and print one "
        "line per figure (median of --repeat runs after a warm-up).",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--suite",
        choices=[*SUITES, "moses-system", "whole", "all"],
        default="engine",
        help="what to time (default engine)",
    )
    parser.add_argument(
        "--shared",
        default=os.path.join("..", "shared"),
        metavar="DIR",
        help="the shared reference folder (data/ and tools/) of the suites that need it (default ../shared)",
    )
    parser.add_argument(
        "--workdir",
        default=os.path.join(tempfile.gettempdir(), "hypertune-bench"),
        metavar="DIR",
        help="where generated benchmark corpora are kept between runs",
    )
    parser.add_argument(
        "--clean",
        action="store_true",
        help="remove the generated corpora in --workdir when done (by default they are kept and reused)",
    )
    parser.add_argument("--edges", type=integer(4), default=100_000, help="forest size for the engine suite")
    parser.add_argument("--features", type=positive_int, default=20, help="dense features for the engine suite")
    parser.add_argument("--hypotheses", type=positive_int, default=1_000_000, help="hypotheses for the metrics suite")
    parser.add_argument(
        "--repeat", type=positive_int, default=None, help="timed runs per figure (default 20; 3 for --suite whole)"
    )
    parser.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    moses = parser.add_argument_group("--suite moses-system (never in 'all'; results in WORKDIR/moses-system/)")
    moses.add_argument("--moses", metavar="DIR", help="the mosesdecoder folder (bin/moses, scripts/training/)")
    moses.add_argument("--system", metavar="DIR", help="the system (train/model/moses.ini, corpus/{val,test}.{de,en})")
    moses.add_argument("--parts", default="1,2,3,4,5", help="which parts, e.g. 1,2 (default all: 1,2,3,4,5)")
    moses.add_argument("--seeds", type=positive_int, default=3, help="runs per tuner, seeds 1..N (default 3)")
    moses.add_argument("--iterations", type=positive_int, default=3, help="tunings per run (default 3)")
    moses.add_argument("--stack", type=positive_int, default=20, help="moses -s (default 20)")
    moses.add_argument("--threads", type=positive_int, default=2, help="moses -threads (default 2)")
    moses.add_argument("--restarts", type=integer(0), default=20, help="k-best MERT's random restarts (default 20)")
    moses.add_argument(
        "--lattice-restarts", type=integer(0), default=5, help="lattice and hypergraph MERT's restarts (default 5)"
    )
    whole = parser.add_argument_group("--suite whole (never in 'all'; hypertune.bench.whole)")
    whole.add_argument(
        "--anchors",
        action="append",
        default=[],
        metavar="DIR",
        help="where the C++ tools are (DIR, DIR/bin, DIR/moses/build/bin, DIR/cdec/bin); repeatable",
    )
    add_output_options(parser)
    parser.set_defaults(run=run)


def _say(args: argparse.Namespace, message: str) -> None:
    """Progress, one line a suite: long runs say what they are doing, on a terminal or not (not under
    --json or --quiet)."""
    if not (args.json or args.quiet):
        print(f"bench: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    args.repeat = args.repeat or (3 if args.suite == "whole" else 20)
    if args.suite == "moses-system":
        return _moses_system(args)
    if args.suite == "whole":
        return _whole(args)
    figures = []
    if args.suite in ("engine", "all"):
        _say(args, f"engine suite ({args.edges} edges, {args.repeat} runs a figure)")
        figures += engine_figures(args.edges, args.features, max(1, args.repeat), args.seed)
    if args.suite in ("metrics", "all"):
        _say(args, f"metrics suite ({args.hypotheses} hypotheses)")
        figures += metric_figures(args.hypotheses, args.seed)
    if args.suite in ("cold-start", "all"):
        _say(args, "cold-start suite (README's main job on an empty numba cache, three times; minutes)")
        figures += cold_start_figures()
    for name, suite in SHARED_SUITES.items():
        if args.suite in (name, "all"):
            if not os.path.isdir(os.path.join(args.shared, "data")):
                raise UsageError(f"--suite {name} needs the shared reference data: no {args.shared}/data")
            _say(args, f"{name} suite (corpora in {args.workdir}; minutes)")
            figures += suite(args.shared, args.workdir)
    if args.clean and os.path.isdir(args.workdir):
        shutil.rmtree(args.workdir)
        _say(args, f"removed {args.workdir}")
    lines = []
    for f in figures:
        goal = "" if f.target is None else f"project goal {_ms(f.target)}"
        if f.target is not None and f.anchor != "project goal":
            goal = f"goal {_ms(f.target)}: {f.anchor}"
        target = f"  ({goal}; {'met' if f.met else 'MISSED'})" if goal else ""
        lines.append(f"{f.name}: {_ms(f.seconds)}{target}  [{f.detail}]")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    payload = {
        "machine": machine,
        "date": datetime.date.today().isoformat(),
        "figures": [
            {"name": f.name, "seconds": f.seconds, "target_seconds": f.target, "anchor": f.anchor, "detail": f.detail}
            for f in figures
        ],
    }
    emit(args, "\n".join([f"# {machine}, {payload['date']}", *lines]), payload)
    return 0


def _moses_system(args: argparse.Namespace) -> int:
    """``--suite moses-system`` (hypertune.bench.moses_system): the tables, or with --json the results object."""
    from hypertune.bench.moses_system import Settings, System, parse_parts, run_suite

    if not args.moses or not args.system:
        raise UsageError("--suite moses-system needs --moses DIR (mosesdecoder) and --system DIR (the built system)")
    settings = Settings(
        seeds=args.seeds,
        iterations=args.iterations,
        stack=args.stack,
        threads=args.threads,
        restarts=args.restarts,
        lattice_restarts=args.lattice_restarts,
    )
    payload = run_suite(
        System(os.path.abspath(args.moses), os.path.abspath(args.system)),
        settings,
        os.path.abspath(os.path.join(args.workdir, "moses-system")),
        parse_parts(args.parts),
        lambda message: _say(args, f"moses-system: {message}"),
    )
    emit(args, payload["markdown"].rstrip("\n"), payload)
    return 0


def _whole(args: argparse.Namespace) -> int:
    """``--suite whole`` (hypertune.bench.whole): the table of whole commands beside the C++ tools."""
    from hypertune.bench.whole import header, markdown, payload, run_whole

    for needed in ("data", os.path.join("tools", "make_bench.py")):
        if not os.path.exists(os.path.join(args.shared, needed)):
            raise UsageError(f"--suite whole needs the shared reference folder: no {os.path.join(args.shared, needed)}")
    anchors = [os.path.abspath(folder) for folder in args.anchors]
    say = lambda message: _say(args, f"whole: {message}")  # noqa: E731
    found = run_whole(os.path.abspath(args.shared), os.path.abspath(args.workdir), anchors, args.repeat, say)
    emit(args, "\n".join([f"# {header()}", markdown(found)]), payload(found))
    return 0


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"
