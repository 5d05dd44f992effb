"""``hypertune NAME`` for a tuner of the registry (:mod:`hypertune.tuners.registry`) that has no command module
of its own: the inputs, ``--init``, the metric, the tuner's options generated from its options class, the output
options and cluster sharding, run by :func:`hypertune.cli.tuning.fit_tuner` and reported like every tuning
command. A new tuner gets its command from this module without writing one."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from hypertune.choices import WEIGHTS_FORMATS
from hypertune.cli.common import add_output_options, run_tuning_command
from hypertune.cli.options import (
    add_cluster_options,
    add_heldout_options,
    add_input_options,
    add_metric_options,
    add_runs_option,
    add_tuner_options,
)

if TYPE_CHECKING:
    from hypertune.cli.tuning import Fitted


def register(subparsers: argparse._SubParsersAction, command: str) -> None:
    from hypertune.tuners.registry import entries_of

    (entry,) = entries_of(command)
    options = entry.options_class()
    summary = entry.summary or options.summary or f"the {entry.name} tuner"
    parser = subparsers.add_parser(
        command,
        help=summary,
        description=f"{(options.__doc__ or summary).strip()} Prints the metric before and after and writes the "
        "weights.",
        epilog=f"example:\n  hypertune {command} NBEST --refs REF.0 REF.1 --init init.weights --out tuned.weights",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_options(parser)
    parser.add_argument("--init", "-i", action="append", metavar="W", help="start weights (repeatable; default 0)")
    add_metric_options(parser)
    add_heldout_options(parser)
    add_tuner_options(parser, options)
    parser.add_argument("--out", "-o", metavar="W", help="write the weights here (atomically)")
    parser.add_argument("--out-format", choices=WEIGHTS_FORMATS, default="cdec", help="weights format (default cdec)")
    add_runs_option(parser)
    add_cluster_options(parser)
    add_output_options(parser)
    parser.set_defaults(run=run_tuning_command, fit=fit, tuner=entry.name, outputs=("out",))


def fit(args: argparse.Namespace) -> Fitted:
    from hypertune.cli.tuning import fit_tuner

    return fit_tuner(args, args.tuner)
