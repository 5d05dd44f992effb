"""``hypertune mira``: batch MIRA on k-best lists, lattices or hypergraphs (a drop-in for Moses ``kbmira``)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from hypertune.cli import COMMANDS

EXAMPLE = """examples:
  hypertune mira nbest.1.gz nbest.2.gz --refs ref.0 --init weights.ini --out tuned.weights
  hypertune mira run/FEATSTAT.txt --init init.opt --seed 1 --json
  hypertune mira hgdir/ --refs ref --init dense --init sparse --type hypergraph --epochs 10
  hypertune mira nbest.gz --refs ref.0 --init weights.ini --runs 3 --out tuned.weights   # seeds 0-2, the best

Where Moses ran kbmira, its options work too:
  hypertune mira -F features.dat -S scores.dat --dense-init init.dense -C 0.01 -D 0.999 -J 60 -r 1 -o out
  hypertune mira --type hypergraph -H hgdir -R ref --dense-init dense --sparse-init sparse --hg-prune 50

Several n-best lists (FEATSTAT/SCORESTAT pairs) of the same sentences are accumulated and deduplicated.
Defaults are kbmira's: C 0.01, decay 0.999, 60 epochs, background BLEU starting at 1, pruning to 50
edges per reference word. The weights written are the averaged weights of the epoch with the best
corpus BLEU of the model-best translations (the start weights when no epoch beats them), L1-normalized
unless --normalize none (docs/cli.md, "The weights a tuning command writes"). See docs/mira.md.
"""


def register(subparsers: Any) -> None:
    from hypertune.choices import GAINS, MIRA_MODES, TOKENIZERS, WEIGHTS_FORMATS
    from hypertune.cli.common import add_output_options, run_tuning_command
    from hypertune.cli.options import (
        add_cache_option,
        add_cluster_options,
        add_graph_format_option,
        add_heldout_options,
        add_plot_option,
        add_prune_option,
        add_runs_option,
        add_strict_option,
        add_tuner_options,
        metric_help,
    )
    from hypertune.tuners.mira_options import MiraOptions

    parser = subparsers.add_parser(
        "mira",
        help=COMMANDS["mira"],
        description="Batch MIRA (Cherry & Foster 2012) on n-best lists, FEATSTAT/SCORESTAT files, lattices and "
        "hypergraphs.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="*", metavar="INPUT", help="n-best lists, FEATSTAT files, hypergraphs, hgdirs")
    parser.add_argument(
        "--refs",
        "--reference",
        "-R",
        nargs="+",
        action="extend",
        default=[],
        metavar="REF",
        help="reference files, or a prefix of REF.0 REF.1 ... (not needed with SCORESTAT input)",
    )
    parser.add_argument(
        "--init",
        "--dense-init",
        "--sparse-init",
        "-d",
        "-s",
        nargs="+",
        action="extend",
        default=[],
        metavar="W",
        help="initial weights files (later files override earlier ones)",
    )
    parser.add_argument("--ffile", "-F", action="append", default=[], metavar="FILE", help="kbmira feature file")
    parser.add_argument("--scfile", "-S", action="append", default=[], metavar="FILE", help="kbmira score file")
    parser.add_argument("--hgdir", "-H", action="append", default=[], metavar="DIR", help="kbmira hypergraph dir")
    parser.add_argument(  # MiraOptions.mode, as kbmira spells it (unset: auto)
        "--type", "-t", choices=MIRA_MODES[1:], default=None, help="what is searched (default: from the input)"
    )
    add_tuner_options(parser, MiraOptions, skip=("gain", "mode"))
    add_prune_option(parser)
    parser.add_argument(
        "--gain",
        choices=[g for g in GAINS if g != "linear"],  # linear BLEU needs Tromble's p and r, which mira does not take
        default="background",
        help="sentence gain: BLEU against a background pseudo-corpus (default, kbmira), BLEU+1, or Moses's smoothed "
        "sentence BLEU (moses, nakov)",
    )
    parser.add_argument("--out", "--output-file", "-o", metavar="W", help="write the tuned weights here")
    parser.add_argument(
        "--out-format",
        default="cdec",
        choices=WEIGHTS_FORMATS,
        help="weights file format (default: cdec, 'name value' lines)",
    )
    add_runs_option(parser)
    parser.add_argument("--metric", "-m", default="bleu", metavar="SPEC", help=metric_help("bleu"))
    parser.add_argument(
        "--scores",
        nargs="+",
        metavar="FILE",
        help="given scores of the hypotheses, one file per n-best/FEATSTAT input in its order (name=value lines)",
    )
    add_heldout_options(parser)
    parser.add_argument("--tokenize", "-tok", default="none", choices=TOKENIZERS, help="BLEU tokenizer (default: none)")
    parser.add_argument("--lowercase", "-lc", action="store_true", help="lowercase before scoring")
    add_graph_format_option(parser)
    add_cache_option(parser)
    add_strict_option(parser)
    add_cluster_options(parser)
    add_output_options(parser)
    add_plot_option(parser, "BLEU per epoch")
    parser.set_defaults(run=run_tuning_command, fit=fit, outputs=("out", "plot"))


def load_inputs(args: argparse.Namespace) -> tuple[Any, Any]:
    """The tuning set (k-best lists accumulated by sentence id, references looked up by id) and the initial
    weights, through the loader every tuning command shares."""
    from hypertune.cli.tuning import load_tuning_set, load_weights

    metric = input_arguments(args)
    tuning_set = load_tuning_set(args, metric)
    weights, _ = load_weights(args.init, tuning_set, args)
    return tuning_set, weights


def input_arguments(args: argparse.Namespace) -> Any:
    """kbmira's input options gathered into ``args.inputs`` and checked; the metric to tune (BLEU by default)."""
    from hypertune.cli.tuning import build_metric
    from hypertune.errors import UsageError
    from hypertune.symbols import Vocabulary

    if args.scfile and len(args.scfile) != len(args.ffile):
        raise UsageError(f"{len(args.ffile)} feature files but {len(args.scfile)} score files")
    args.inputs = [*args.inputs, *args.ffile, *args.scfile, *args.hgdir]
    if not args.inputs:
        raise UsageError("no inputs: give n-best lists, FEATSTAT files, hypergraphs or an hgdir")
    if not args.init:
        raise UsageError("give the initial weights with --init (or --dense-init/--sparse-init)")
    return build_metric(args, Vocabulary())


def fit(args: argparse.Namespace) -> Any:
    """Batch MIRA on the command's inputs (a :class:`~hypertune.cli.tuning.Fitted`)."""
    from hypertune.cli.tuning import cluster_shards, load_weights, local_shards
    from hypertune.errors import UsageError

    started = time.perf_counter()
    if args.select and not (args.cluster or args.shards is not None):  # one shard would mix nothing, as train says
        raise UsageError("--select chooses the features mixed over shards: give --cluster or --shards")
    if args.cluster:
        with cluster_shards(args, metric=input_arguments(args)) as shards:
            initial, _ = load_weights(args.init, shards, args)
            return _run(args, shards, shards, initial, started)
    tuning_set, initial = load_inputs(args)
    return _run(args, tuning_set, local_shards(args, tuning_set) or tuning_set, initial, started)


def _run(args: argparse.Namespace, tuning_set: Any, data: Any, initial: Any, started: float) -> Any:
    """Train on ``data`` (the tuning set, or its shards: iterative parameter mixing); report ``tuning_set``."""
    from hypertune.cli.common import percent
    from hypertune.cli.tuning import Fitted, interruptible
    from hypertune.tuners.base import metric_label

    load_seconds = time.perf_counter() - started
    label, scale = metric_label(tuning_set.metric), tuning_set.metric.display_scale

    def report(epoch: Any) -> None:
        print(
            f"epoch {epoch.epoch}: {epoch.updates}/{epoch.examples} updates, avg loss = "
            f"{epoch.average_loss:.4g}, {label} = {percent(epoch.score, scale=scale)}",
            file=sys.stderr,
        )

    kbest = getattr(tuning_set, "is_kbest", False)  # shards: not known here
    graphs = args.type == "hypergraph" or (not args.type and not kbest)
    pruned = f" on the graphs pruned to {args.prune_density:g} edges/word" if args.prune_density and graphs else ""
    with interruptible(args, tuning_set, pruned) as best:
        result = _mira(args, report, best).fit(data, initial)
    result.timing["load"] = load_seconds
    result.timing["total"] = result.seconds = time.perf_counter() - started
    mixing = f", mixing {data.count} shards" if data is not tuning_set or args.cluster else ""
    pruned = ""
    if result.pruned_score_after is not None:  # epochs were scored on the pruned graphs; the summary on the inputs
        pruned = f", {percent(result.pruned_score_after)} on the graphs pruned to {args.prune_density:g} edges/word"
    details = f"epoch {result.best_epoch} of {args.epochs}, {result.mode}{mixing}{pruned}"
    return Fitted(tuning_set, result, details)


def _mira(args: argparse.Namespace, report: Any, checkpoint: Any) -> Any:
    """The tuner of the command's options (``report``: the epoch lines on a terminal)."""
    from hypertune.cli.common import show_progress
    from hypertune.cli.options import tuner_options
    from hypertune.tuners.mira import Mira
    from hypertune.tuners.mira_options import MiraOptions

    options = tuner_options(args, MiraOptions, mode=args.type or "auto")
    return Mira(options, progress=report if show_progress(args) else None, checkpoint=checkpoint)
