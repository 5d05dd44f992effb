"""``hypertune mert``: minimum error rate training on n-best lists, lattices and hypergraphs."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from hypertune.choices import WEIGHTS_FORMATS
from hypertune.cli import COMMANDS
from hypertune.cli.common import add_output_options, percent, run_tuning_command, show_progress
from hypertune.cli.options import (
    add_cluster_options,
    add_envelope_options,
    add_heldout_options,
    add_input_options,
    add_metric_options,
    add_plot_option,
    add_runs_option,
    add_tuner_options,
    non_negative_float,
    tuner_options,
)
from hypertune.errors import UsageError
from hypertune.tuners.mert_options import MertOptions

if TYPE_CHECKING:
    from hypertune.cli.tuning import Fitted
    from hypertune.tuners.base import Checkpoint
    from hypertune.tuners.corpus import TuningSet
    from hypertune.tuners.mert import Mert

EXAMPLE = """examples:
  hypertune mert fixtures/mert/nbest.txt --refs fixtures/mert/ref. --init fixtures/mert/init.weights --restarts 5
  hypertune mert NBEST --refs REF.0 REF.1 REF.2 --init init.opt --restarts 20 --seed 1 --out moses.weights \\
      --out-format moses
  hypertune mert FEATSTAT.txt SCORESTAT.txt --init INIT --json
  hypertune mert cand_database.txt --params params.txt --refs ref. --init params.txt
  hypertune mert forests/ --refs ref.0 ref.1 --init weights --metric ibm-bleu --random-directions 10
  hypertune mert NBEST --refs REF.0 --init init.opt --restarts 20 --runs 3 --seed 1 --out tuned.weights
      # three seeds: the spread of BLEU, the best run's weights, every run's in tuned.weights.run-SEED
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "mert",
        help=COMMANDS["mert"],
        description="Optimize weights for a corpus metric with exact line searches through the envelope "
        "semiring (Och 2003; Macherey et al. 2008; Kumar et al. 2009). Prints the metric before "
        "and after and writes the weights.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_options(parser)
    parser.add_argument(
        "--init",
        "-i",
        action="append",
        required=True,
        metavar="W",
        help="start weights in any weights format, repeatable (later override earlier); Moses "
        "init.opt's minimum and maximum lines bound the random restarts",
    )
    add_metric_options(parser)
    add_heldout_options(parser)
    add_tuner_options(parser, MertOptions)
    parser.add_argument(
        "--prune-density",
        type=non_negative_float,
        default=0.0,
        metavar="N",
        help="lattices/hypergraphs: first keep the N edges per reference word whose best derivation "
        "ranks highest under the start weights (Cherry & Foster 2012; 0 = no pruning, default)",
    )
    parser.add_argument(
        "--envelope-nbest",
        metavar="FILE",
        help="lattices/hypergraphs: write every derivation that appeared on an envelope as a Moses "
        "n-best list; give it with the next iteration's graphs to keep them in the search "
        "(Cherry & Foster 2012)",
    )
    parser.add_argument("--out", "-o", metavar="W", help="write the weights here (atomically)")
    parser.add_argument("--out-format", choices=WEIGHTS_FORMATS, default="cdec", help="weights format (default cdec)")
    add_runs_option(parser)
    add_envelope_options(parser)
    add_cluster_options(parser, shards_change_results=False)
    add_output_options(parser)
    add_plot_option(parser, "the metric each start point reached (grid, random-search: the best so far)")
    parser.set_defaults(run=run_tuning_command, fit=fit, outputs=("out", "envelope_nbest", "plot"))


def write_envelope_nbest(
    tuning_set: TuningSet, derivations: list[list[tuple[list[str], dict[str, float]]]], path: str
) -> None:
    """The envelope derivations as a Moses n-best list, with the tuning set's sentence ids."""
    from hypertune.formats.nbest import write_moses
    from hypertune.hypergraph import from_kbest

    lists = [
        from_kbest(found, tuning_set.feature_space, tuning_set.vocabulary, sentence_id=sid)
        for sid, found in zip(tuning_set.sentence_ids, derivations, strict=True)
        if found
    ]
    write_moses(lists, path)


def _progress_line(message: str) -> None:
    """A line search's progress overwrites the terminal line; a finished start point keeps its line."""
    if message.startswith("\r"):
        sys.stderr.write(f"\r\x1b[Kmert: {message[1:]}")
    else:
        sys.stderr.write(f"\r\x1b[Kmert: {message}\n")
    sys.stderr.flush()


def fit(args: argparse.Namespace) -> Fitted:
    """MERT on the command's inputs (pruned first with ``--prune-density``; sharded with ``--cluster`` or
    ``--shards``), reported on the inputs as given; writing ``--envelope-nbest`` is the run's ``after``."""
    from hypertune.cli.tuning import (
        Fitted,
        cluster_shards,
        interruptible,
        load_tuning_set,
        load_weights,
        local_shards,
    )
    from hypertune.tuners.finishing import finish_weights, keeps_start
    from hypertune.tuners.model_best import ModelBest
    from hypertune.tuners.pruning import prune_tuning_set

    if args.cluster:
        if args.envelope_nbest:
            raise UsageError("--envelope-nbest runs in one process: the envelope derivations stay on the shards")
        with cluster_shards(args, args.prune_density) as on_cluster:
            init, box = load_weights(args.init, on_cluster, args)
            pruned = f" on the graphs pruned to {args.prune_density:g} edges/word" if args.prune_density else ""
            # an interrupt shuts the cluster down on its way out
            with interruptible(args, on_cluster, pruned) as best:
                result = _mert(args, box, best).fit_shards(on_cluster, init)
            details = f"{_searched(args, result)}, {on_cluster.count} shards"
            if args.prune_density:  # the workers hold only their pruned shards
                details += f", scored on the graphs pruned to {args.prune_density:g} edges/word"
            return Fitted(on_cluster, result, details)
    tuning_set = given = load_tuning_set(args)
    init, box = load_weights(args.init, tuning_set, args)
    if args.prune_density:
        tuning_set = prune_tuning_set(tuning_set, init, args.prune_density)
    shards = local_shards(args, tuning_set)  # --shards N in this process: the cluster's code path, the same result
    if shards is not None and args.envelope_nbest:
        raise UsageError("--envelope-nbest runs unsharded: the envelope derivations stay on the shards")
    pruned = f" on the graphs pruned to {args.prune_density:g} edges/word" if tuning_set is not given else ""
    with interruptible(args, tuning_set, pruned) as best:
        mert = _mert(args, box, best)
        result = mert.fit(tuning_set, init) if shards is None else mert.fit_shards(shards, init)
    if args.envelope_nbest and result.envelope_derivations is None:
        raise UsageError("--envelope-nbest is for lattices and hypergraphs; k-best input has nothing to add")
    details = _searched(args, result)
    if tuning_set is not given:  # searched on pruned graphs; report the weights on the inputs as given
        model_best = ModelBest(given)
        result.pruned_score_after = result.score_after
        result.score_before = model_best.score(init.vector(given.feature_space))
        result.score_after = model_best.score(result.weights.vector(given.feature_space))
        if not result.kept_start and keeps_start(result.score_before, result.score_after, result.higher_is_better,
                                                 result.start_feasible):  # fmt: skip
            space = given.feature_space  # the start weights are a candidate on the inputs as given too
            result.weights = finish_weights(init, space, init.vector(space), args.normalize)
            result.score_after, result.kept_start = result.score_before, True
        details += f", {percent(result.pruned_score_after)} on the graphs pruned to {args.prune_density:g} edges/word"
    after = None
    derivations, path = result.envelope_derivations, args.envelope_nbest
    if path and derivations is not None:  # (checked above: --envelope-nbest has derivations)

        def after() -> None:
            write_envelope_nbest(tuning_set, derivations, path)

    return Fitted(given, result, details + (f", {shards.count} shards" if shards else ""), after)


def _mert(
    args: argparse.Namespace, box: tuple[dict[str, float], dict[str, float]] | None, checkpoint: Checkpoint
) -> Mert:
    from hypertune.tuners.mert import Mert

    report = _progress_line if show_progress(args) else None
    options = tuner_options(args, MertOptions, restart_box=box, collect_envelopes=bool(args.envelope_nbest))
    return Mert(options, progress=report, checkpoint=checkpoint)


def _searched(args: argparse.Namespace, result: Any) -> str:
    """What the search did: start points and line searches, or, for random search and the grid, the weight
    vectors scored (the last history entry's count)."""
    from hypertune.tuners.mert_options import SEARCH_OPTIMIZERS

    if args.optimizer in SEARCH_OPTIMIZERS:
        return f"{args.optimizer}, {result.history[-1].iteration if result.history else 0} weight vectors scored"
    return f"{result.optimizer}: {len(result.history)} start points, {result.line_searches} line searches"
