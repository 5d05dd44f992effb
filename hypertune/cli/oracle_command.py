"""``hypertune oracle``: the best translation each search space holds under the metric (BLEU oracles)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hypertune.cli import COMMANDS

EXAMPLE = """examples:
  hypertune oracle nbest.gz --refs ref.0 ref.1 --method kbest
  hypertune oracle forests/ --refs ref. --method partial --weights w --out oracles.txt
  hypertune oracle forests/ --refs ref. --method corpus --json
  hypertune oracle forests/ --refs ref. --method exact --weights w --max-expansions 5000000

Methods (see docs/oracle.md): kbest (k-best lists, exact, any sentence metric), linear (Viterbi under linear
BLEU over the n-gram-split graph, exact for that gain), partial (BLEU+1 of each node's best partial
derivation, approximate), exact (the true sentence oracle: graphs of at most 1,000 derivations enumerated,
larger ones by branch and bound over the n-gram-split graph, up to --max-expansions; metrics other than
BLEU+1/add-k BLEU by enumeration up to --max-strings), corpus (greedy corpus-BLEU oracle from the sentence
oracles of --start-method). The sentence metric is BLEU+1 unless --metric says otherwise; the corpus line
is corpus BLEU of the oracle translations.
"""


def register(subparsers: Any) -> None:
    from hypertune.choices import CORPUS_ORACLE_VARIANTS as VARIANTS
    from hypertune.choices import ORACLE_MAX_EXPANSIONS as MAX_EXPANSIONS
    from hypertune.choices import ORACLE_METHODS as METHODS
    from hypertune.cli.common import add_output_options
    from hypertune.cli.options import (
        add_cluster_options,
        add_input_options,
        add_metric_options,
        add_plot_option,
        finite_float,
        positive_int,
        seed,
    )

    parser = subparsers.add_parser(
        "oracle",
        help=COMMANDS["oracle"],
        description="Find the oracle translation of every sentence's k-best list, lattice or forest: the one "
        "the metric likes best, exactly or by the standard approximations.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_options(parser)
    add_metric_options(parser, default="bleu+1")  # the sentence metric: BLEU+1 (Lin & Och 2004) unless told
    parser.add_argument("--method", choices=METHODS, default="partial", help="default: partial")
    parser.add_argument(
        "--start-method",
        choices=METHODS[:-1],
        default="partial",
        help="corpus: the sentence oracles it starts from (default partial)",
    )
    parser.add_argument(
        "--variant", choices=VARIANTS, default="best-switch", help="corpus: greedy best switch (default) or "
        "sentences one at a time in a seeded order"
    )  # fmt: skip
    parser.add_argument("--weights", "-w", action="append", default=[], metavar="W", help="model weights (default 0)")
    parser.add_argument("--linear-p", type=finite_float, metavar="P", help="linear: unigram precision p")
    parser.add_argument("--linear-r", type=finite_float, metavar="R", help="linear: precision ratio r")
    parser.add_argument(
        "--beam", "-k", type=positive_int, default=1, metavar="K", help="partial: states per node (default 1)"
    )
    parser.add_argument(
        "--max-strings",
        type=positive_int,
        default=100_000,
        metavar="N",
        help="exact: most distinct strings enumerated per graph (default 100000)",
    )
    parser.add_argument(
        "--max-expansions",
        type=positive_int,
        default=MAX_EXPANSIONS,
        metavar="N",
        help=f"exact: most partial derivations the branch and bound expands per graph (default {MAX_EXPANSIONS})",
    )
    parser.add_argument("--seed", type=seed, default=0, help="corpus --variant sentence-order: the order's seed")
    parser.add_argument("--out", "-o", metavar="FILE", help="write the oracle translations, one per line")
    parser.add_argument(
        "--nbest", action="store_true", help="with --out: write a Moses n-best list (sentence ids, features)"
    )
    add_cluster_options(parser, shards_change_results=False)
    add_output_options(parser)
    add_plot_option(parser, "every sentence's model-best against its oracle score")
    parser.set_defaults(run=run, outputs=("out", "plot"))


def run(args: argparse.Namespace) -> int:
    from hypertune import interrupts
    from hypertune.cli.common import emit, percent
    from hypertune.cli.tuning import tuning_input
    from hypertune.errors import HypertuneError, UsageError
    from hypertune.tuners.base import metric_label
    from hypertune.tuners.corpus import TuningSet
    from hypertune.tuners.oracle import Oracle, OracleSearch

    if args.nbest and not args.out:
        raise UsageError("--nbest says how --out is written: give --out FILE")
    if args.plot and args.cluster:
        raise UsageError("--plot scores every sentence's model-best in this process: run it without --cluster")
    kept: list[Oracle] = []  # the sentences found so far, kept if the run is interrupted
    search = OracleSearch(
        method=args.method,
        start_method=args.start_method,
        variant=args.variant,
        linear_p=args.linear_p,
        linear_r=args.linear_r,
        beam=args.beam,
        max_strings=args.max_strings,
        max_expansions=args.max_expansions,
        seed=args.seed,
        keep_going=True,  # a sentence beyond --max-expansions/--max-strings: the others are still searched
        progress=(ticker := _Ticker(args)),
        checkpoint=kept.append,
    )
    with tuning_input(args, args.weights) as (tuning_set, data, weights):  # --cluster: searched on the workers
        try:
            with interrupts.deferred():  # Ctrl-C stops between sentences, or inside the branch and bound
                result = search.run(data, weights)
        except interrupts.Interrupted as stop:
            ticker.clear()
            raise stop.explained(_interrupted(args, tuning_set, kept, stop, data is tuning_set)) from None
        ticker.clear()
    finished = {o.sentence: o for o in result.oracles}  # all but the unfinished (--max-expansions, --max-strings)
    if finished and args.out:  # nothing finished, nothing written: the error says so
        _write(args, tuning_set, result.oracles, args.out)
    if args.plot and isinstance(tuning_set, TuningSet):  # (checked above: --plot runs without --cluster)
        import numpy as np

        from hypertune.cli.plots import plot_oracles
        from hypertune.tuners.model_best import ModelBest

        w = weights.vector(tuning_set.feature_space, len(tuning_set.feature_space))
        model = np.asarray(tuning_set.score(ModelBest(tuning_set).stats(w)), dtype=np.float64).reshape(-1)
        model = model[[o.sentence for o in result.oracles]]  # the finished sentences'
        plot_oracles(model, np.asarray([o.score for o in result.oracles]), args.plot, args.metric)
    ids = tuning_set.sentence_ids
    scale = tuning_set.metric.display_scale
    label = metric_label(tuning_set.metric)
    lines = (
        [f"{ids[o.sentence]}\t{percent(o.score, scale=scale)}\t{o.text}" for o in result.oracles]
        if not args.out
        else []
    )
    count = f"{len(finished)} finished of {len(tuning_set)}" if result.unfinished else str(len(tuning_set))
    lines.append(
        f"oracle {label} {percent(result.bleu, scale=scale)} ({count} sentences, method {result.method}, "
        f"{result.seconds:.2f} s)" + (f"; written to {args.out}" if args.out and finished else "")
    )
    payload = {
        "oracle_bleu": result.bleu,
        "method": result.method,
        "metric": args.metric,
        "sentences": [
            {"id": ids[o.sentence], "text": o.text, "score": o.score, "model_score": o.model_score}
            for o in result.oracles
        ],
        "seconds": result.seconds,
        "output": args.out if finished else None,
        **result.details,
    }
    if result.unfinished:
        payload["unfinished"] = [{"id": ids[s], "reason": reason} for s, reason in result.unfinished]
    emit(args, "\n".join(lines), payload)
    if result.unfinished:
        raise HypertuneError(_unfinished(args, result.unfinished, ids, len(tuning_set), len(finished)))
    return 0


def _write(args: argparse.Namespace, tuning_set: Any, oracles: list, path: str) -> None:
    """The oracles to ``path``: one line per sentence (an empty one for a sentence without an oracle), or with
    ``--nbest`` a Moses n-best list of the sentences that have one."""
    from hypertune.cli.common import write_or_print
    from hypertune.formats.io import write_atomically
    from hypertune.formats.nbest import write_moses
    from hypertune.hypergraph import from_kbest
    from hypertune.symbols import Vocabulary

    found = {o.sentence: o for o in oracles}
    texts = "".join(f"{found[s].text}\n" if s in found else "\n" for s in range(len(tuning_set)))
    if args.nbest:
        lists = [
            from_kbest(
                [(o.words, o.features)],
                tuning_set.feature_space,
                getattr(tuning_set, "vocabulary", None) or Vocabulary(),  # a cluster's shards: words as text
                metadata={"totals": [o.model_score]},
                sentence_id=tuning_set.sentence_ids[o.sentence],
            )
            for o in oracles
        ]
        write_or_print(texts, path, "oracle translations", lambda: write_moses(lists, path))
    else:
        write_or_print(texts, path, "oracle translations", lambda: write_atomically(path, texts))


def _interrupted(args: argparse.Namespace, tuning_set: Any, kept: list, stop: Any, local: bool) -> str:
    """Keep what an interrupted search found: the finished sentences' oracles beside the output
    (``OUT.interrupted``, as ``--out`` is written), or on stdout as the summary lists them (under ``--json``:
    ``interrupted`` and ``sentences``); the one line. Shards (``local`` false) keep theirs to themselves."""
    from hypertune.cli.common import emit, percent

    head = f"interrupted ({stop.name})"
    if not local:
        return f"{head}; nothing written (the shards' oracles stay on the workers)"
    if not kept:
        return f"{head}; no sentence finished, nothing written"
    some = f"the finished sentences' oracles ({len(kept)} of {len(tuning_set)})"
    if args.out and args.out != "-":
        path = f"{args.out}.interrupted"
        _write(args, tuning_set, kept, path)
        gaps = "" if args.nbest else ", an empty line for each sentence not searched"
        return f"{head}; {some} written to {path}{gaps}"
    ids = tuning_set.sentence_ids
    sentences = [{"id": ids[o.sentence], "text": o.text, "score": o.score, "model_score": o.model_score} for o in kept]
    lines = "\n".join(f"{ids[o.sentence]}\t{percent(o.score)}\t{o.text}" for o in kept)
    emit(args, lines, {"interrupted": stop.name, "sentences": sentences, "output": None})
    return f"{head}; {some} printed on stdout"


class _Ticker:
    """``OracleSearch``'s progress: the sentences done, drawn as a counter on a terminal (:func:`show_progress`)."""

    def __init__(self, args: argparse.Namespace) -> None:
        from hypertune.cli.common import show_progress

        self.done, self.shown = 0, show_progress(args)

    def __call__(self, done: int, total: int) -> None:
        self.done = done
        if self.shown:
            sys.stderr.write(f"\r\x1b[Koracle: {done}/{total} sentences")
            sys.stderr.flush()

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _unfinished(args: argparse.Namespace, unfinished: list, ids: Any, total: int, finished: int) -> str:
    """The one-line error of a run that left sentences unfinished: the first one's reason (which says which limit
    to raise), the others named, and where the finished sentences went."""
    names = [str(ids[s]) for s, _ in unfinished]
    head = unfinished[0][1]
    if len(names) > 1:
        listed = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        head = f"{len(names)} of {total} sentences unfinished ({listed}); the first, {head}"
    if not finished:
        return f"{head}; no sentence finished, nothing written"
    some = f"the finished sentences' oracles ({finished} of {total})"
    if args.out:
        gaps = "" if args.nbest else ", an empty line for each unfinished one"
        return f"{head}; {some} are written to {args.out}{gaps}"
    return f"{head}; {some} are printed on stdout"
