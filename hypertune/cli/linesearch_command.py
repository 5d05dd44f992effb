"""``hypertune linesearch``: one exact MERT line search, reported in detail."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from hypertune.cli import COMMANDS
from hypertune.cli.common import add_output_options, emit, percent
from hypertune.cli.options import (
    add_direction_option,
    add_envelope_options,
    add_input_options,
    add_metric_options,
    add_plot_option,
)

if TYPE_CHECKING:
    import numpy as np

    from hypertune.tuners.corpus import TuningSet

EXAMPLE = """examples:
  hypertune linesearch forest0.json.gz forest1.json.gz --refs lo_test.ref. --weights w --direction WordPenalty \\
      --metric ibm-bleu
  hypertune linesearch nbest.txt --refs ref --weights w --direction lm=1,tm_0=-0.5 --json
  hypertune linesearch nbest.txt --refs ref --weights w --direction direction.weights
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "linesearch",
        help=COMMANDS["linesearch"],
        description="Compute every sentence's upper envelope along w + γ·d, merge the error surfaces and print "
        "the envelope sizes, the number of segments, the best step γ and its score.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_options(parser)
    parser.add_argument(
        "--weights",
        "-w",
        action="append",
        required=True,
        metavar="W",
        help="the point w (any weights format, repeatable)",
    )
    add_direction_option(parser, required=True)
    add_metric_options(parser)
    add_envelope_options(parser)
    add_output_options(parser)
    add_plot_option(parser, "the first sentences' envelopes and the corpus error surface")
    parser.set_defaults(run=run, outputs=("plot",))


def run(args: argparse.Namespace) -> int:
    from hypertune.cli.tuning import load_tuning_set, load_weights, metric_key, read_direction
    from hypertune.tuners.linesearch import line_search
    from hypertune.tuners.mert import LineSearcher

    tuning_set = load_tuning_set(args)
    weights, _ = load_weights(args.weights, tuning_set, args)
    space = tuning_set.feature_space
    direction = read_direction(args.direction, space, args.strict).vector(space)
    searcher = LineSearcher(tuning_set, args.jobs, envelope=args.envelope)
    surfaces = searcher.surfaces(weights.vector(tuning_set.feature_space), direction)
    result = line_search(surfaces, tuning_set.score, tuning_set.metric.higher_is_better)
    key = metric_key(tuning_set.metric)
    payload = {
        "envelope_sizes": surfaces.sizes.tolist(),
        "segments": result.segments,
        "breakpoints": result.breakpoints,
        "best_step": result.gamma,
        f"best_{key}": result.score,
        "best_interval": list(result.interval),
        f"{key}_at_zero": result.score_at_zero,
    }
    sizes = " ".join(map(str, surfaces.sizes[:20])) + (" ..." if len(surfaces.sizes) > 20 else "")
    summary = (
        f"envelope sizes: {sizes}\nsegments {result.segments}, distinct breakpoints {result.breakpoints}\n"
        f"best step {result.gamma:.6g} in [{result.interval[0]:.6g}, {result.interval[1]:.6g}): "
        f"{key.upper()} {percent(result.score, 6)} (at step 0: {percent(result.score_at_zero, 6)})"
    )
    if args.plot:
        plot_search(args.plot, tuning_set, weights.vector(tuning_set.feature_space), direction, surfaces, result)
    emit(args, summary, payload)
    return 0


def plot_search(path: str, tuning_set: TuningSet, w: np.ndarray, direction: np.ndarray, surfaces, result) -> None:
    """The first four sentences' envelopes (found again by probing) and the corpus error surface."""
    import numpy as np

    from hypertune.algorithms.envelope import envelope_by_probing
    from hypertune.cli.plots import plot_line_search
    from hypertune.tuners.base import metric_label

    envelopes = []
    for s, hg in enumerate(tuning_set.graphs[:4]):
        features = hg.feature_matrix(w.size)
        envelopes.append((tuning_set.sentence_ids[s], envelope_by_probing(hg, features @ w, features @ direction)))
    order = np.argsort(surfaces.breakpoints, kind="stable")
    xs = surfaces.breakpoints[order]
    cumulative = surfaces.initial + np.cumsum(surfaces.deltas[order], axis=0)
    last = np.flatnonzero(np.append(xs[1:] != xs[:-1], True)) if xs.size else np.zeros(0, dtype=np.int64)
    rows = np.vstack([surfaces.initial[None, :], cumulative[last]])
    scores = np.asarray(tuning_set.score(rows), dtype=np.float64)
    plot_line_search(envelopes, (xs[last], scores), result, path, metric_label(tuning_set.metric))
