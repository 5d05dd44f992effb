"""``hypertune train`` and ``hypertune pro``: a loss over k-best candidates minimized with L-BFGS, or a loss
followed sentence by sentence by an online optimizer."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from hypertune.cli import COMMANDS

EXAMPLE = """examples:
  hypertune train nbest.gz --refs ref.0 ref.1 --init init.opt --loss pl --top-k 5 --out tuned.weights
  hypertune train FEATSTAT.txt SCORESTAT.txt --init INIT --loss softmax --json
  hypertune train forests/ --refs ref. --init w --loss ranking --kbest 200
  hypertune train nbest.gz --refs ref. --init init.opt --loss perceptron --epochs 10 --seed 2
  hypertune train forests/ --refs ref. --init w --loss latent-svm --optimizer adagrad --l1 0.001

Batch losses (docs/tuners.md), minimized by L-BFGS (OWL-QN with --l1): pro (Hopkins & May 2011: sampled
pairs, logistic), pl (Plackett-Luce/ListMLE, Xia et al.: top-k likelihood of the lists ranked by gain,
--top-k, --sample), ranking (hinge on PRO's pairs), mse (model score regressed on the gain), softmax
(likelihood of each list's top-gain set). The gain is BLEU+1 (--gain-smooth moses or nakov for Moses pro's
smoothings). Lattices and forests give their --kbest best derivations under --init.

Structured losses, followed sentence by sentence by an online optimizer (--optimizer perceptron, pa, arow,
sgd, adagrad; the batch losses too): perceptron (Collins 2002), latent-svm (cdec's latent_svm; --target hope
for online MIRA's hinge), ramp (Gimpel & Smith 2012, cdec's rampion), softmax-margin (Gimpel & Smith 2010),
costmargin (Tillmann & Zhang 2006). They search lattices and forests with the hope/fear search.
"""

PRO_EXAMPLE = """examples:
  hypertune pro nbest.gz --refs ref.0 ref.1 --init init.opt --out weights --out-format moses
  hypertune pro FEATSTAT.0 FEATSTAT.1 SCORESTAT.0 SCORESTAT.1 --init init.opt --seed 3
  hypertune pro forests/ --refs ref. --init weights --acceptance sigmoid --interpolate 0.5   # cdec pro.pl style

PRO as Moses's pro and mert-moses.pl's --pairwise-ranked run it (Hopkins & May 2011): per sentence 5000
pairs sampled, those whose BLEU+1 differs by more than 0.05, the 50 with the largest difference, a
logistic classifier on their feature differences (both orientations, no bias), L2 0.1. Moses's -r
(a seed) is --seed here: -r is --refs on every hypertune command.
"""


def register(subparsers: Any) -> None:
    register_trainer(subparsers, "train", EXAMPLE, with_loss=True)


def register_trainer(subparsers: Any, name: str, example: str, with_loss: bool) -> None:
    from hypertune.choices import (
        ACCEPTANCES,
        GAIN_SMOOTHINGS,
        LOSSES,
        ONLINE_OPTIMIZERS,
        STRUCTURED_LOSSES,
        WEIGHTS_FORMATS,
    )
    from hypertune.choices import TRAIN_OPTIMIZERS as OPTIMIZERS
    from hypertune.cli.common import add_output_options
    from hypertune.cli.options import (
        add_cluster_options,
        add_input_options,
        add_metric_options,
        add_plot_option,
        finite_float,
        non_negative_float,
        non_negative_int,
        positive_int,
        seed,
    )

    parser = subparsers.add_parser(
        name,
        help=COMMANDS[name],
        description="Tune weights by minimizing a loss over k-best candidates with L-BFGS, or online, sentence by "
        "sentence; prints the metric of the model-best translations before and after and writes the weights.",
        epilog=example,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_options(parser)
    parser.add_argument("--init", "-i", action="append", required=True, metavar="W", help="start weights (repeatable)")
    add_metric_options(parser)  # the reported metric's; the training gain's smoothing is --gain-smooth
    if with_loss:
        parser.add_argument("--loss", choices=LOSSES + STRUCTURED_LOSSES, default="pro", help="default: pro")
    parser.add_argument(
        "--l2", type=non_negative_float, metavar="L", help="L2 weight λ of λ‖w‖²/2 (default: the loss's, see docs)"
    )
    parser.add_argument(
        "--l1", type=non_negative_float, default=0.0, metavar="L", help="L1 weight of λ‖w‖₁, by OWL-QN (default 0)"
    )
    parser.add_argument(
        "--optimizer",
        choices=OPTIMIZERS + ONLINE_OPTIMIZERS if with_loss else OPTIMIZERS,  # pro is batch PRO: no online options
        default="auto",
        help="batch: lbfgs, or owlqn for L1; online: perceptron, pa, arow, sgd, adagrad (default: auto, the loss's)"
        if with_loss
        else "lbfgs, or owlqn for L1 (default: auto)",
    )
    parser.add_argument(
        "--top-k", type=positive_int, default=5, metavar="K", help="pl: the top of each list scored (5)"
    )
    parser.add_argument(
        "--sample", type=positive_int, default=30, metavar="M", help="pl: candidates kept per list (30)"
    )
    parser.add_argument(
        "--kbest", type=positive_int, default=100, metavar="K", help="lattices/forests: derivations each"
    )
    parser.add_argument(
        "--gain-smooth", choices=GAIN_SMOOTHINGS, default="plus1", help="the sentence gain: BLEU+1 (default) or Moses's"
    )
    parser.add_argument(
        "--acceptance",
        choices=ACCEPTANCES,
        default="threshold",
        help="pro/ranking: accept sampled pairs whose gains differ by > 0.05 (threshold, Moses; default) or by "
        "cdec's sigmoid rule",
    )
    parser.add_argument("--interpolate", type=finite_float, default=1.0, metavar="B", help="β·w_new + (1 − β)·w_init")
    parser.add_argument(
        "--iterations", type=non_negative_int, default=200, metavar="N", help="most L-BFGS iterations (200)"
    )
    if with_loss:
        add_online_options(parser)
    parser.add_argument("--normalize", choices=("l1", "none"), default="l1", help="divide by the L1 norm (default)")
    parser.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    parser.add_argument("--out", "-o", metavar="W", help="write the weights here (atomically)")
    parser.add_argument("--out-format", choices=WEIGHTS_FORMATS, default="cdec", help="weights format (default cdec)")
    add_cluster_options(parser)
    add_output_options(parser)
    add_plot_option(parser, "BLEU and the loss per L-BFGS iteration")
    parser.set_defaults(run=run, outputs=("out", "plot"), **({} if with_loss else {"loss": "pro"}))


def add_online_options(parser: argparse.ArgumentParser) -> None:
    """The options of the online optimizers and structured losses (docs/tuners.md)."""
    from hypertune.choices import L1_METHODS
    from hypertune.cli.options import (
        add_prune_option,
        finite_float,
        non_negative_float,
        non_negative_int,
        positive_float,
        positive_int,
    )

    group = parser.add_argument_group("online optimizers and structured losses")
    group.add_argument("--epochs", type=positive_int, default=15, metavar="N", help="passes over the sentences (15)")
    group.add_argument(
        "--learning-rate", type=positive_float, metavar="ETA", help="sgd/adagrad step size (default: the loss's)"
    )
    group.add_argument(
        "-C", type=non_negative_float, default=0.01, metavar="C", help="pa: PA-I's largest step (0.01, as MIRA)"
    )
    group.add_argument("--arow-r", type=positive_float, default=1.0, metavar="R", help="arow: its regularizer r (1)")
    group.add_argument("--l1-method", choices=L1_METHODS, default="fobos", help="how sgd/adagrad apply --l1")
    group.add_argument("--minibatch", type=positive_int, default=1, metavar="B", help="sentences per update (1)")
    group.add_argument(
        "--cost-scale", type=finite_float, metavar="A", help="α of the cost α·(1 − BLEU+1) (loss's default)"
    )
    group.add_argument(
        "--cccp-passes",
        type=non_negative_int,
        default=0,
        metavar="T",
        help="ramp: fix the hopes for rounds of T epochs, as rampion's CCCP (rampion: 5; default 0, every visit)",
    )
    group.add_argument("--corpus-order", action="store_true", help="visit sentences in corpus order, not shuffled")
    group.add_argument(
        "--target", choices=("oracle", "hope"), default="oracle", help="perceptron/latent-svm: what to move towards"
    )
    group.add_argument(
        "--no-average", action="store_true", help="keep the last weights, not their average (the default with --l1)"
    )
    group.add_argument(
        "--select",
        type=non_negative_int,
        default=0,
        metavar="K",
        help="with shards (--cluster/--shards; iterative parameter mixing): mix only the K features of largest l2 "
        "norm across shards, the others 0 (Simianer et al. 2012; default 0: all)",
    )
    add_prune_option(group)


def run(args: argparse.Namespace) -> int:
    from hypertune.tuners.online import ONLINE_OPTIMIZERS, STRUCTURED_LOSSES

    if args.loss in STRUCTURED_LOSSES or args.optimizer in ONLINE_OPTIMIZERS:
        return _run_online(args)
    return _run_batch(args)


def _run_online(args: argparse.Namespace) -> int:
    """A structured loss, or a batch loss with an online optimizer, sentence by sentence; with ``--cluster`` or
    ``--shards`` by iterative parameter mixing over the shards (docs/distributed.md)."""
    from hypertune.cli.common import show_progress
    from hypertune.cli.tuning import BestSoFar
    from hypertune.errors import UsageError
    from hypertune.tuners.online import ONLINE_OPTIMIZERS, OnlineTrainer

    if args.optimizer in ("lbfgs", "owlqn"):
        raise UsageError(f"the {args.loss} loss takes an online optimizer: {', '.join(ONLINE_OPTIMIZERS)}")
    if args.select and not (args.cluster or args.shards is not None):
        raise UsageError("--select chooses the features mixed over shards: give --cluster or --shards")

    def report(entry: Any) -> None:
        sys.stderr.write(f"\r\x1b[K{args.command}: epoch {entry.iteration}: {entry.updates} updates, "
                         f"BLEU {100 * entry.score:.2f}")  # fmt: skip
        sys.stderr.flush()

    online = OnlineTrainer(
        loss=args.loss,
        optimizer=args.optimizer,
        epochs=args.epochs,
        learning_rate=args.learning_rate,
        C=args.C,
        r=args.arow_r,
        l2=args.l2,
        l1=args.l1,
        l1_method=args.l1_method,
        minibatch=args.minibatch,
        cost_scale=args.cost_scale,
        target=args.target,
        cccp_passes=args.cccp_passes,
        shuffle=not args.corpus_order,
        average=False if args.no_average else None,
        kbest=args.kbest,
        prune_density=args.prune_density or None,
        top_k=args.top_k,
        sample=args.sample,
        acceptance=args.acceptance,
        smooth=args.gain_smooth,
        normalize=args.normalize,
        seed=args.seed,
        select=args.select,
        progress=report if show_progress(args) else None,
        checkpoint=(best := BestSoFar()),
    )
    return _fit_and_report(
        args,
        online,
        lambda result: (
            f"{result.loss} loss, {result.optimizer}: best epoch {result.best_epoch} of "
            f"{len(result.history)}, {result.nonzero} of {result.features} weights nonzero"
        ),
        "shards mixed",
        best,
    )


def _run_batch(args: argparse.Namespace) -> int:
    """A batch loss minimized by L-BFGS / OWL-QN; with ``--cluster`` or ``--shards`` over shards (partial losses
    and gradients summed in shard order)."""
    from hypertune.cli.common import show_progress
    from hypertune.cli.tuning import BestSoFar
    from hypertune.errors import UsageError
    from hypertune.tuners.train import Trainer

    online_only = {
        "--target": getattr(args, "target", "oracle") != "oracle",
        "--cccp-passes": bool(getattr(args, "cccp_passes", 0)),
        "--cost-scale": getattr(args, "cost_scale", None) is not None,
        "--learning-rate": getattr(args, "learning_rate", None) is not None,
        "--minibatch": getattr(args, "minibatch", 1) != 1,
        "--no-average": getattr(args, "no_average", False),
        "--corpus-order": getattr(args, "corpus_order", False),
        "--select": bool(getattr(args, "select", 0)),
    }
    given = [name for name, present in online_only.items() if present]
    if given:
        raise UsageError(f"{', '.join(given)}: options of the online optimizers, but the {args.loss} loss runs with "
                         f"L-BFGS here (add --optimizer sgd, adagrad, ... to follow it online)")  # fmt: skip

    def report(entry: Any) -> None:
        sys.stderr.write(f"\r\x1b[K{args.command}: iteration {entry.iteration}: loss {entry.loss:.6g}, "
                         f"BLEU {100 * entry.score:.2f}")  # fmt: skip
        sys.stderr.flush()

    trainer = Trainer(
        loss=args.loss,
        l2=args.l2,
        l1=args.l1,
        optimizer=args.optimizer,
        top_k=args.top_k,
        sample=args.sample,
        kbest=args.kbest,
        smooth=args.gain_smooth,
        acceptance=args.acceptance,
        interpolate=args.interpolate,
        normalize=args.normalize,
        iterations=args.iterations,
        seed=args.seed,
        progress=report if show_progress(args) else None,
        checkpoint=(best := BestSoFar()),
    )
    return _fit_and_report(
        args,
        trainer,
        lambda result: (
            f"{result.loss} loss {result.loss_before:.6g} -> {result.loss_after:.6g}, {len(result.history)} iterations"
        ),
        "shards",
        best,
    )


def _fit_and_report(
    args: argparse.Namespace, tuner: Any, describe: Callable[[Any], str], shards: str, best: Any
) -> int:
    """Fit ``tuner`` from ``--init`` on the command's tuning set, its ``--shards`` or the ``--cluster``
    (:func:`~hypertune.cli.tuning.tuning_input`), and report it with ``describe(result)`` (and the shards).
    ``best``: the tuner's checkpoint, saved if the run is interrupted (:func:`~hypertune.cli.tuning.interruptible`)."""
    from hypertune.cli.common import show_progress
    from hypertune.cli.tuning import interruptible, report_tuning, tuning_input
    from hypertune.tuners.corpus import TuningSet

    with tuning_input(args, args.init) as (tuning_set, data, init), interruptible(args, tuning_set, best=best):
        result = tuner.fit(data, init)
    if show_progress(args):
        sys.stderr.write("\n")
    details = describe(result)
    if not isinstance(data, TuningSet):
        details += f", {data.count} {shards}"
    return report_tuning(args, tuning_set, result, details)
