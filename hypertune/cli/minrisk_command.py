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
  risk         mean expected 1 - BLEU+1. Exact on k-best lists; a lattice or forest is replaced by the
               k-best list of its --kbest best derivations under the initial weights.
  linear-bleu  mean expected linear-BLEU gain (Tromble et al. 2008, unclipped matches): exact everywhere.
"""


def register(subparsers: Any) -> None:
    from hypertune.choices import RISK_OBJECTIVES as OBJECTIVES
    from hypertune.choices import WEIGHTS_FORMATS
    from hypertune.cli.common import add_output_options
    from hypertune.cli.options import (
        add_cluster_options,
        add_input_options,
        add_metric_options,
        add_plot_option,
        add_weight_constraint_options,
        finite_float,
        non_negative_float,
        non_negative_int,
        positive_float,
        positive_int,
        seed,
    )

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
    parser.add_argument("--objective", choices=OBJECTIVES, default="xbleu", help="default: xbleu")
    parser.add_argument("--scale", type=finite_float, default=1.0, metavar="G", help="γ of p ∝ exp(γ·w·h) (default 1)")
    parser.add_argument("--optimize-scale", action="store_true", help="optimize γ jointly with the weights")
    parser.add_argument("--entropy", type=finite_float, default=0.0, metavar="T", help="minimize L - T·H (default 0)")
    parser.add_argument(
        "--anneal",
        metavar="START:FACTOR:FLOOR",
        help="deterministic annealing of T (e.g. 1000:0.5:0.001), then quenching of γ (Smith & Eisner 2006)",
    )
    parser.add_argument(
        "--quench-max", type=positive_float, default=64.0, metavar="G", help="quenching doubles γ up to G (default 64)"
    )
    parser.add_argument(
        "--l2", type=non_negative_float, default=0.0, metavar="L", help="L2 weight λ of λ‖w‖²/2 (default 0)"
    )
    parser.add_argument(
        "--l1", type=non_negative_float, default=0.0, metavar="L", help="L1 weight, by OWL-QN (default 0)"
    )
    parser.add_argument(
        "--smooth-bp",
        type=non_negative_float,
        default=0.0,
        metavar="TAU",
        help="xbleu: smooth brevity penalty -τ·log(1 + exp(-x/τ)) instead of min(0, x) (default 0: hard)",
    )
    parser.add_argument("--linear-p", type=finite_float, metavar="P", help="linear-bleu: unigram precision p")
    parser.add_argument("--linear-r", type=finite_float, metavar="R", help="linear-bleu: precision ratio r")
    parser.add_argument(
        "--kbest", type=positive_int, default=100, metavar="K", help="risk on lattices/forests: derivations per graph"
    )
    parser.add_argument(
        "--iterations", type=non_negative_int, default=100, metavar="N", help="L-BFGS iterations per run"
    )
    parser.add_argument(
        "--tolerance",
        type=non_negative_float,
        default=1e-7,
        metavar="F",
        help="a run stops when an iteration improves the objective by less than this fraction (default 1e-7)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="recorded with the result (nothing is random)")
    add_weight_constraint_options(parser)
    parser.add_argument("--evaluate", action="store_true", help="only compute the objective and its gradient at --init")
    parser.add_argument("--out", "-o", metavar="W", help="write the weights here (atomically)")
    parser.add_argument("--out-format", choices=WEIGHTS_FORMATS, default="cdec", help="weights format (default cdec)")
    add_cluster_options(parser)
    add_output_options(parser)
    add_plot_option(parser, "BLEU and the objective per L-BFGS iteration")
    parser.set_defaults(run=run, outputs=("out", "plot"))


def run(args: argparse.Namespace) -> int:
    from hypertune.cli.tuning import load_tuning_set, load_weights, local_shards, open_shards
    from hypertune.errors import UsageError

    if args.evaluate and args.out:
        raise UsageError("--evaluate trains nothing: it writes no weights (drop --out)")
    with open_shards(args) as shards:
        if shards is None:
            tuning_set = load_tuning_set(args)
            init, _ = load_weights(args.init, tuning_set, args)
            return _run(args, tuning_set, local_shards(args, tuning_set) or tuning_set, init)
        init, _ = load_weights(args.init, shards, args)
        return _run(args, shards, shards, init)


def shown(objective: str, value: float) -> str:
    """An objective's value as a human summary shows it: xBLEU and risk (expected 1 - BLEU+1) on BLEU's 0-100
    scale, as the BLEU beside them; linear BLEU's gain, which has no such scale, as it is."""
    from hypertune.cli.common import percent

    return percent(value) if objective in ("xbleu", "risk") else f"{value:.6g}"


def _run(args: argparse.Namespace, tuning_set: Any, data: Any, init: Any) -> int:
    """Train (or evaluate) on ``data`` (the tuning set or its shards); ``tuning_set`` is what is reported."""
    from hypertune.cli.common import emit, percent, show_progress
    from hypertune.cli.options import names_option, parse_bounds
    from hypertune.cli.tuning import BestSoFar, interruptible, report_tuning
    from hypertune.tuners.minrisk import Annealing, MinRisk

    def report(entry: Any) -> None:
        sys.stderr.write(
            f"\r\x1b[Kminrisk: iteration {entry.iteration}: objective {entry.objective:.6g}, "
            f"{args.objective} {shown(args.objective, entry.value)}, BLEU {percent(entry.score)} "
            f"(T {entry.temperature:g}, γ {entry.scale:g})"
        )
        sys.stderr.flush()

    tuner = MinRisk(
        objective=args.objective,
        scale=args.scale,
        optimize_scale=args.optimize_scale,
        entropy=args.entropy,
        anneal=Annealing.parse(args.anneal, args.quench_max) if args.anneal else None,
        l2=args.l2,
        l1=args.l1,
        smooth_bp=args.smooth_bp,
        linear_p=args.linear_p,
        linear_r=args.linear_r,
        kbest=args.kbest,
        iterations=args.iterations,
        tolerance=args.tolerance,
        fixed=names_option(args.fix),
        bounds=parse_bounds(args.bounds),
        seed=args.seed,
        progress=report if show_progress(args) and not args.evaluate else None,
        checkpoint=(best := BestSoFar()),
    )
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
    return report_tuning(args, tuning_set, result, details)
