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
  hypertune train nbest.gz --refs ref. --init init.opt --loss perceptron --runs 3 --out tuned.weights
  hypertune train forests/ --refs ref. --init w --loss latent-svm --optimizer adagrad --l1 0.001

Batch losses (docs/tuners.md), minimized by L-BFGS (OWL-QN with --l1): pro (Hopkins & May 2011: sampled
pairs, logistic), pl (Plackett-Luce, Xia, Zhai & Wang 2019: top-k likelihood of the lists ranked by gain,
--top-k, --sample), ranking (hinge on PRO's pairs), mse (model score regressed on the gain), softmax
(likelihood of each list's top-gain set). The gain is BLEU+1 (--gain-smooth moses or nakov for Moses pro's
smoothings). Lattices and forests give their --kbest best derivations under --init.

Structured losses, followed sentence by sentence by an online optimizer (--optimizer perceptron, pa, arow,
sgd, adagrad; the batch losses too): perceptron (Collins 2002), latent-svm (cdec's latent_svm; --target hope
for online MIRA's hinge), ramp (Gimpel & Smith 2012, cdec's rampion), softmax-margin (Gimpel & Smith 2010),
costmargin (Tillmann & Zhang, eq. 7). They search lattices and forests with the hope/fear search.
"""

PRO_EXAMPLE = """examples:
  hypertune pro nbest.gz --refs ref.0 ref.1 --init init.opt --out weights --out-format moses
  hypertune pro FEATSTAT.0 FEATSTAT.1 SCORESTAT.0 SCORESTAT.1 --init init.opt --seed 3
  hypertune pro forests/ --refs ref. --init weights --acceptance sigmoid --interpolate 0.5   # cdec pro.pl style
  hypertune pro nbest.gz --refs ref.0 --init init.opt --runs 5 --seed 1 --out weights   # five seeds, the best

PRO as Moses's pro and mert-moses.pl's --pairwise-ranked run it (Hopkins & May 2011): per sentence 5000
pairs sampled, those whose BLEU+1 differs by more than 0.05, the 50 with the largest difference, a
logistic classifier on their feature differences (both orientations, no bias), L2 0.1. Moses's -r
(a seed) is --seed here: -r is --refs on every hypertune command.
"""


def register(subparsers: Any) -> None:
    register_trainer(subparsers, "train", EXAMPLE, with_loss=True)


def register_trainer(subparsers: Any, name: str, example: str, with_loss: bool) -> None:
    """The ``train`` (``with_loss``) or ``pro`` command. ``train``'s flags are the union of the batch and the
    online trainers' options (:class:`~hypertune.tuners.train_options.TrainOptions`,
    :class:`~hypertune.tuners.train_options.OnlineOptions`: the online trainer's own in a group of their own);
    ``pro``'s are the batch trainer's, with the loss fixed to PRO."""
    from hypertune.choices import WEIGHTS_FORMATS
    from hypertune.cli.common import add_output_options, run_tuning_command
    from hypertune.cli.options import (
        add_cluster_options,
        add_heldout_options,
        add_input_options,
        add_metric_options,
        add_plot_option,
        add_prune_option,
        add_runs_option,
        add_tuner_options,
    )
    from hypertune.tuners.train_options import OnlineOptions, TrainOptions

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
    add_heldout_options(parser)
    if with_loss:
        add_tuner_options(parser, TrainOptions, merged=(OnlineOptions,))
        group = parser.add_argument_group("online optimizers and structured losses")
        add_tuner_options(group, OnlineOptions, skip=_fields(TrainOptions))
        add_prune_option(group)  # OnlineOptions.prune_density: the option MIRA's command shares
    else:  # pro is batch PRO: no --loss, no online options
        add_tuner_options(parser, TrainOptions, skip=("loss",))
    parser.add_argument("--out", "-o", metavar="W", help="write the weights here (atomically)")
    parser.add_argument("--out-format", choices=WEIGHTS_FORMATS, default="cdec", help="weights format (default cdec)")
    add_runs_option(parser)
    add_cluster_options(parser)
    add_output_options(parser)
    add_plot_option(parser, "the loss and the metric per L-BFGS iteration (online: per epoch)")
    pro = {} if with_loss else {"loss": "pro"}  # pro's TrainOptions.loss, given as no flag
    parser.set_defaults(run=run_tuning_command, fit=fit, outputs=("out", "plot"), **pro)


def _fields(options: type) -> tuple[str, ...]:
    import dataclasses

    return tuple(f.name for f in dataclasses.fields(options))


def _foreign(args: argparse.Namespace, runs: type, other: type) -> list[str]:
    """The flags of the options only ``other`` has (not ``runs``, the trainer that runs) that the command line
    set to something else than their default."""
    import dataclasses

    from hypertune.cli.options import option_flags

    own, flags = set(_fields(runs)), option_flags(other)
    return [
        flags[f.name]
        for f in dataclasses.fields(other)
        if f.name not in own
        and hasattr(args, dest := f.metadata.get("shared") or f.metadata.get("dest") or f.name)
        and getattr(args, dest) != f.default
    ]


def fit(args: argparse.Namespace) -> Any:
    """The batch or the online trainer on the command's inputs (a :class:`~hypertune.cli.tuning.Fitted`): online
    for a structured loss or an online optimizer."""
    from hypertune.choices import ONLINE_OPTIMIZERS, STRUCTURED_LOSSES

    if args.loss in STRUCTURED_LOSSES or args.optimizer in ONLINE_OPTIMIZERS:
        return _run_online(args)
    return _run_batch(args)


def _run_online(args: argparse.Namespace) -> Any:
    """A structured loss, or a batch loss with an online optimizer, sentence by sentence; with ``--cluster`` or
    ``--shards`` by iterative parameter mixing over the shards (docs/distributed.md)."""
    from hypertune.choices import ONLINE_OPTIMIZERS
    from hypertune.cli.common import show_progress
    from hypertune.cli.options import tuner_options
    from hypertune.cli.tuning import BestSoFar
    from hypertune.errors import UsageError
    from hypertune.tuners.online import OnlineTrainer
    from hypertune.tuners.train_options import OnlineOptions, TrainOptions

    if args.optimizer not in ONLINE_OPTIMIZERS + ("auto",):
        raise UsageError(f"the {args.loss} loss takes an online optimizer: {', '.join(ONLINE_OPTIMIZERS)}")
    given = _foreign(args, OnlineOptions, TrainOptions)
    if given:
        raise UsageError(f"{', '.join(given)}: options of L-BFGS, but the {args.loss} loss runs online here")
    if args.select and not (args.cluster or args.shards is not None):
        raise UsageError("--select chooses the features mixed over shards: give --cluster or --shards")

    def report(entry: Any) -> None:
        sys.stderr.write(f"\r\x1b[K{args.command}: epoch {entry.iteration}: {entry.updates} updates, "
                         f"BLEU {100 * entry.score:.2f}")  # fmt: skip
        sys.stderr.flush()

    options = tuner_options(args, OnlineOptions)
    online = OnlineTrainer(options, progress=report if show_progress(args) else None, checkpoint=(best := BestSoFar()))
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


def _run_batch(args: argparse.Namespace) -> Any:
    """A batch loss minimized by L-BFGS / OWL-QN; with ``--cluster`` or ``--shards`` over shards (partial losses
    and gradients summed in shard order)."""
    from hypertune.cli.common import show_progress
    from hypertune.cli.options import tuner_options
    from hypertune.cli.tuning import BestSoFar
    from hypertune.errors import UsageError
    from hypertune.tuners.train import Trainer
    from hypertune.tuners.train_options import OnlineOptions, TrainOptions

    given = _foreign(args, TrainOptions, OnlineOptions)
    if given:
        raise UsageError(f"{', '.join(given)}: options of the online optimizers, but the {args.loss} loss runs with "
                         f"L-BFGS here (add --optimizer sgd, adagrad, ... to follow it online)")  # fmt: skip

    def report(entry: Any) -> None:
        sys.stderr.write(f"\r\x1b[K{args.command}: iteration {entry.iteration}: loss {entry.loss:.6g}, "
                         f"BLEU {100 * entry.score:.2f}")  # fmt: skip
        sys.stderr.flush()

    options = tuner_options(args, TrainOptions)
    trainer = Trainer(options, progress=report if show_progress(args) else None, checkpoint=(best := BestSoFar()))
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
) -> Any:
    """Fit ``tuner`` from ``--init`` on the command's tuning set, its ``--shards`` or the ``--cluster``
    (:func:`~hypertune.cli.tuning.tuning_input`), and report it with ``describe(result)`` (and the shards).
    ``best``: the tuner's checkpoint, saved if the run is interrupted (:func:`~hypertune.cli.tuning.interruptible`)."""
    from hypertune.cli.common import show_progress
    from hypertune.cli.tuning import Fitted, interruptible, tuning_input
    from hypertune.tuners.corpus import TuningSet

    with tuning_input(args, args.init) as (tuning_set, data, init), interruptible(args, tuning_set, best=best):
        result = tuner.fit(data, init)
    if show_progress(args):
        sys.stderr.write("\n")
    details = describe(result)
    if not isinstance(data, TuningSet):
        details += f", {data.count} {shards}"
    return Fitted(tuning_set, result, details)
