"""``hypertune minrisk``: minimum-risk / expected-BLEU training on n-best lists, lattices and forests."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hypertune.cli import COMMANDS

EXAMPLE = """examples:
  hypertune minrisk nbest.gz --refs ref.0 ref.1 --init init.weights --out tuned.weights
  hypertune minrisk FEATSTAT.txt SCORESTAT.txt --init INIT --objective risk --l2 0.01 --json
  hypertune minrisk forests/ --refs ref. --init w --objective linear-bleu --anneal 1000:0.5:0.001
  hypertune minrisk forests/ --refs ref. --init w --objective xbleu --evaluate --json

Objectives (p(e) ∝ exp(γ·w·h(e)); see docs/minrisk.md):
  xbleu        corpus BLEU of expected statistics (default). Exact on k-best lists; on lattices and
               forests from expected n-gram counts of the graph split by n-gram state, clipped per
               reference n-gram (an approximation, documented).
  risk         mean expected 1 - BLEU+1 (--sentence-bleu ibm: cdec's IBM BLEU). Exact on k-best lists; a
               lattice or forest is replaced by the k-best list of its --kbest best derivations under the
               initial weights.
  linear-bleu  mean expected linear-BLEU gain (Tromble et al. 2008, unclipped matches): exact everywhere.

cdec's minrisk_optimize is --objective risk --sentence-bleu ibm --start-norm l2 (docs/minrisk.md).
"""


def register(subparsers: Any) -> None:
    from hypertune.choices import WEIGHTS_FORMATS
    from hypertune.cli.common import add_output_options, run_tuning_command
    from hypertune.cli.options import (
        add_cluster_options,
        add_heldout_options,
        add_input_options,
        add_metric_options,
        add_plot_option,
        add_runs_option,
        add_tuner_options,
    )
    from hypertune.tuners.minrisk_options import MinRiskOptions

    parser = subparsers.add_parser(
        "minrisk",
        help=COMMANDS["minrisk"],
        description="Minimize expected loss or maximize expected BLEU over k-best lists, lattices and forests "
        "with L-BFGS (Smith & Eisner 2006; Li & Eisner 2009; Rosti et al. 2010/2011). Prints the "
        "metric of the model-best translations before and after and writes the weights.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_options(parser)
    parser.add_argument("--init", "-i", action="append", required=True, metavar="W", help="start weights (repeatable)")
    add_metric_options(parser)
    add_heldout_options(parser)
    add_tuner_options(parser, MinRiskOptions)
    parser.add_argument("--evaluate", action="store_true", help="only compute the objective and its gradient at --init")
    parser.add_argument("--out", "-o", metavar="W", help="write the weights here (atomically)")
    parser.add_argument("--out-format", choices=WEIGHTS_FORMATS, default="cdec", help="weights format (default cdec)")
    add_runs_option(parser, refused="minimum risk training draws nothing at random (its seed is only recorded)")
    add_cluster_options(parser)
    add_output_options(parser)
    add_plot_option(parser, "the metric and the tuned objective per L-BFGS iteration, annealing stages marked")
    parser.set_defaults(run=run_tuning_command, fit=fit, outputs=("out", "plot"))


def fit(args: argparse.Namespace) -> Any:
    """Minimum risk on the command's inputs (a :class:`~hypertune.cli.tuning.Fitted`; ``--evaluate``: the exit
    code, having printed the objective and its gradient)."""
    from hypertune.cli.options import tuner_options
    from hypertune.cli.tuning import load_tuning_set, load_weights, local_shards, open_shards
    from hypertune.errors import UsageError
    from hypertune.tuners.minrisk_options import MinRiskOptions

    if args.evaluate and args.out:
        raise UsageError("--evaluate trains nothing: it writes no weights (drop --out)")
    options = tuner_options(args, MinRiskOptions)  # refused in flags before any input is read
    with open_shards(args) as shards:
        if shards is None:
            tuning_set = load_tuning_set(args)
            init, _ = load_weights(args.init, tuning_set, args)
            return _run(args, options, tuning_set, local_shards(args, tuning_set) or tuning_set, init)
        init, _ = load_weights(args.init, shards, args)
        return _run(args, options, shards, shards, init)


def shown(objective: str, value: float) -> str:
    """An objective's value as a human summary shows it: xBLEU and risk (expected 1 - BLEU+1) on BLEU's 0-100
    scale, as the BLEU beside them; linear BLEU's gain, which has no such scale, as it is."""
    from hypertune.cli.common import percent

    return percent(value) if objective in ("xbleu", "risk") else f"{value:.6g}"


def _run(args: argparse.Namespace, options: Any, tuning_set: Any, data: Any, init: Any) -> Any:
    """Train (or evaluate) with ``options`` on ``data`` (the tuning set or its shards); ``tuning_set`` is what is
    reported."""
    from hypertune.cli.common import emit, percent, show_progress
    from hypertune.cli.tuning import BestSoFar, Fitted, interruptible
    from hypertune.tuners.minrisk import MinRisk

    def report(entry: Any) -> None:
        sys.stderr.write(
            f"\r\x1b[Kminrisk: iteration {entry.iteration}: objective {entry.objective:.6g}, "
            f"{args.objective} {shown(args.objective, entry.value)}, BLEU {percent(entry.score)} "
            f"(T {entry.temperature:g}, γ {entry.scale:g})"
        )
        sys.stderr.flush()

    progress = report if show_progress(args) and not args.evaluate else None
    tuner = MinRisk(options, progress=progress, checkpoint=(best := BestSoFar()))
    if args.evaluate:
        found = tuner.evaluate(data, init)
        lines = [f"{found.objective} {found.value:.10g}, entropy {found.entropy:.6g} nats per sentence "
                 f"({found.sentences} sentences)", f"d/dγ {found.scale_gradient:.6g}"]  # fmt: skip
        lines += [f"d/d{name} {value:.6g}" for name, value in found.gradient.items()]
        emit(args, "\n".join(lines), found.to_json())
        return 0
    with interruptible(args, tuning_set, best=best):
        result = tuner.fit(data, init)
    if show_progress(args):
        sys.stderr.write("\n")
    details = (
        f"{args.objective} {shown(args.objective, result.objective_before)} -> "
        f"{shown(args.objective, result.objective_after)}, "
        f"{len(result.history)} L-BFGS iterations"
    )
    return Fitted(tuning_set, result, details)
