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
    parser.add_argument("--suite", choices=[*SUITES, "all"], default="engine", help="what to time (default engine)")
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
    parser.add_argument("--repeat", type=positive_int, default=20, help="timed runs per figure (default 20)")
    parser.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    add_output_options(parser)
    parser.set_defaults(run=run)


def _say(args: argparse.Namespace, message: str) -> None:
    """Progress, one line a suite: long runs say what they are doing, on a terminal or not (not under
    --json or --quiet)."""
    if not (args.json or args.quiet):
        print(f"bench: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    figures = []
    if args.suite in ("engine", "all"):
        _say(args, f"engine suite ({args.edges} edges, {args.repeat} runs a figure)")
        figures += engine_figures(args.edges, args.features, max(1, args.repeat), args.seed)
    if args.suite in ("metrics", "all"):
        _say(args, f"metrics suite ({args.hypotheses} hypotheses)")
        figures += metric_figures(args.hypotheses, args.seed)
    if args.suite in ("cold-start", "all"):
        _say(args, "cold-start suite (README's main job on an empty numba cache; a minute or two)")
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


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"
