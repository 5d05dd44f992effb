"""``hypertune linesearch``: one exact MERT line search, reported in detail."""

from __future__ import annotations

import argparse
import math
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

    from hypertune.cli.plots import SentenceLines
    from hypertune.tuners.corpus import TuningSet
    from hypertune.tuners.linesearch import ErrorSurfaces, LineSearchResult

EXAMPLE = """examples:
  hypertune linesearch forest0.json.gz forest1.json.gz --refs lo_test.ref. --weights w --direction WordPenalty \\
      --metric ibm-bleu
  hypertune linesearch nbest.txt --refs ref --weights w --direction lm=1,tm_0=-0.5 --json
  hypertune linesearch nbest.txt --refs ref --weights w --direction direction.weights
  hypertune linesearch nbest.txt --refs ref --weights w --direction LM0 --plot search.svg --sentence 2 --range -1 1
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
    add_plot_option(
        parser,
        "one sentence's candidate lines, upper envelope and breakpoints above the corpus metric of every interval, "
        "around the chosen step",
    )
    parser.add_argument(
        "--sentence",
        type=int,
        metavar="ID",
        help="--plot draws this sentence's lines (its id in the inputs; default: the sentence whose 1-best changes "
        "nearest the chosen step, which bounds the chosen interval)",
    )
    parser.add_argument(
        "--range",
        type=float,
        nargs=2,
        metavar=("LO", "HI"),
        help="--plot shows γ from LO to HI (default: the chosen step, the three breakpoints on each side of it, "
        "and γ = 0 where near)",
    )
    parser.set_defaults(run=run, outputs=("plot",))


def run(args: argparse.Namespace) -> int:
    from hypertune.cli.tuning import load_tuning_set, load_weights, metric_key, read_direction
    from hypertune.errors import UsageError
    from hypertune.tuners.linesearch import line_search
    from hypertune.tuners.mert import LineSearcher

    given = [name for name, value in (("--range", args.range), ("--sentence", args.sentence)) if value is not None]
    if given and not args.plot:
        raise UsageError(f"{' and '.join(given)} choose what --plot draws; without --plot nothing is drawn")
    if args.range is not None and not (math.isfinite(args.range[0]) and args.range[0] < args.range[1] < math.inf):
        raise UsageError(f"--range LO HI needs finite LO < HI, got {args.range[0]:g} {args.range[1]:g}")
    tuning_set = load_tuning_set(args)
    if args.sentence is not None and args.sentence not in tuning_set.sentence_ids:
        ids = tuning_set.sentence_ids
        raise UsageError(f"--sentence {args.sentence}: no such sentence in the inputs (ids {min(ids)}-{max(ids)})")
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
        w = weights.vector(tuning_set.feature_space)
        plot_search(args, tuning_set, w, direction, surfaces, result)
    emit(args, summary, payload)
    return 0


def plot_search(
    args: argparse.Namespace,
    tuning_set: TuningSet,
    w: np.ndarray,
    direction: np.ndarray,
    surfaces: ErrorSurfaces,
    result: LineSearchResult,
) -> None:
    """``--plot``: the lines of ``--sentence`` (or of :func:`nearest_sentence`) above the corpus error surface,
    in ``--range`` (or :func:`~hypertune.cli.plots.default_range`)."""
    import numpy as np

    from hypertune.cli.plots import plot_line_search
    from hypertune.tuners.base import metric_label

    ids = tuning_set.sentence_ids
    s = ids.index(args.sentence) if args.sentence is not None else nearest_sentence(surfaces, result.gamma)
    order = np.argsort(surfaces.breakpoints, kind="stable")
    xs = surfaces.breakpoints[order]
    cumulative = surfaces.initial + np.cumsum(surfaces.deltas[order], axis=0)
    last = np.flatnonzero(np.append(xs[1:] != xs[:-1], True)) if xs.size else np.zeros(0, dtype=np.int64)
    rows = np.vstack([surfaces.initial[None, :], cumulative[last]])
    scores = np.atleast_1d(np.asarray(tuning_set.score(rows), dtype=np.float64))
    window = tuple(args.range) if args.range is not None else None
    lines = sentence_lines(tuning_set, s, w, direction)
    scale = tuning_set.metric.display_scale
    plot_line_search(lines, (xs[last], scores), result, args.plot, metric_label(tuning_set.metric), scale, window)


def nearest_sentence(surfaces: ErrorSurfaces, gamma: float) -> int:
    """The index of the sentence whose statistics change at the finite breakpoint nearest ``gamma`` (one that
    bounds the chosen interval; the first of ties); 0 when no sentence's 1-best changes."""
    import numpy as np

    owner = np.repeat(np.arange(surfaces.sizes.size), np.maximum(surfaces.sizes - 1, 0))
    changes = np.isfinite(surfaces.breakpoints) & np.any(surfaces.deltas != 0, axis=1)
    if not changes.any():
        return 0
    distance = np.where(changes, np.abs(surfaces.breakpoints - gamma), np.inf)
    return int(owner[int(np.argmin(distance))])


#: Lattices and forests with at most this many derivations have every derivation drawn as a line.
CANDIDATE_LIMIT = 200


def sentence_lines(tuning_set: TuningSet, s: int, w: np.ndarray, direction: np.ndarray) -> SentenceLines:
    """Sentence ``s``'s lines along ``w + γ·direction``: every hypothesis of a k-best list (its edge into the
    goal plus the start axiom), every derivation of a lattice or forest of at most :data:`CANDIDATE_LIMIT`, else
    the derivations on its envelope; the envelope by probing
    (:func:`~hypertune.algorithms.envelope.envelope_by_probing`) with each line's translation."""
    import numpy as np

    from hypertune.algorithms.enumeration import enumerate_derivations
    from hypertune.algorithms.envelope import envelope_by_probing
    from hypertune.algorithms.inside_outside import count_derivations
    from hypertune.cli.plots import SentenceLines

    hg = tuning_set.graphs[s]
    features = hg.feature_matrix(w.size)
    a, b = features @ w, features @ direction
    envelope = envelope_by_probing(hg, a, b)
    kind = "lattice" if hg.is_lattice else "forest"
    if hg.is_kbest:
        axiom = hg.in_edges(0)
        hypotheses = np.arange(hg.node_offsets[hg.goal], hg.node_offsets[hg.goal + 1])
        intercepts = a[hypotheses] + a[axiom.start : axiom.stop].sum()
        slopes = b[hypotheses] + b[axiom.start : axiom.stop].sum()
        what = "hypotheses of its k-best list"
    elif (total := count_derivations(hg)) <= CANDIDATE_LIMIT:  # few: each derivation's edge counts, at once
        used = [np.bincount(d.edges(), minlength=hg.num_edges) for d in enumerate_derivations(hg, CANDIDATE_LIMIT)]
        counts = np.stack(used).astype(np.float64)
        intercepts, slopes = counts @ a, counts @ b
        what = f"derivations of its {kind}"
    else:
        intercepts, slopes = envelope.intercept, envelope.slope
        what = f"derivations on the envelope, of {total:.3g} in its {kind}"
    translations = [" ".join(hg.derivation_words(envelope.derivation(i))) for i in range(len(envelope))]
    return SentenceLines(tuning_set.sentence_ids[s], intercepts, slopes, what, envelope.left, envelope.intercept,
                         envelope.slope, translations)  # fmt: skip
