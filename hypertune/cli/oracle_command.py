"""``hypertune oracle``: the best translation each search space holds under the metric (BLEU oracles)."""

from __future__ import annotations

import argparse
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
    from hypertune.cli.options import add_cluster_options, add_input_options, add_metric_options, add_plot_option

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
    parser.add_argument("--linear-p", type=float, metavar="P", help="linear: unigram precision p")
    parser.add_argument("--linear-r", type=float, metavar="R", help="linear: precision ratio r")
    parser.add_argument("--beam", "-k", type=int, default=1, metavar="K", help="partial: states per node (default 1)")
    parser.add_argument(
        "--max-strings", type=int, default=100_000, metavar="N", help="exact: most distinct strings enumerated per "
        "graph (default 100000)"
    )  # fmt: skip
    parser.add_argument(
        "--max-expansions", type=int, default=MAX_EXPANSIONS, metavar="N", help="exact: most partial derivations "
        f"the branch and bound expands per graph (default {MAX_EXPANSIONS})"
    )  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="corpus --variant sentence-order: the order's seed")
    parser.add_argument("--out", "-o", metavar="FILE", help="write the oracle translations, one per line")
    parser.add_argument(
        "--nbest", action="store_true", help="with --out: write a Moses n-best list (sentence ids, features)"
    )
    add_cluster_options(parser, shards_change_results=False)
    add_output_options(parser)
    add_plot_option(parser, "every sentence's model-best against its oracle score")
    parser.set_defaults(run=run, outputs=("out", "plot"))


def run(args: argparse.Namespace) -> int:
    from hypertune.cli.common import emit, percent, write_or_print
    from hypertune.cli.tuning import tuning_input
    from hypertune.errors import UsageError
    from hypertune.formats.io import write_atomically
    from hypertune.formats.nbest import write_moses
    from hypertune.hypergraph import from_kbest
    from hypertune.symbols import Vocabulary
    from hypertune.tuners.oracle import OracleSearch

    if args.nbest and not args.out:
        raise UsageError("--nbest says how --out is written: give --out FILE")
    if args.plot and args.cluster:
        raise UsageError("--plot scores every sentence's model-best in this process: run it without --cluster")
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
    )
    with tuning_input(args, args.weights) as (tuning_set, data, weights):  # --cluster: searched on the workers
        result = search.run(data, weights)
    texts = "".join(f"{o.text}\n" for o in result.oracles)
    if args.out and args.nbest:
        lists = [
            from_kbest(
                [(o.words, o.features)],
                tuning_set.feature_space,
                getattr(tuning_set, "vocabulary", None) or Vocabulary(),  # a cluster's shards: words as text
                metadata={"totals": [o.model_score]},
                sentence_id=sid,
            )
            for o, sid in zip(result.oracles, tuning_set.sentence_ids, strict=True)
        ]
        write_or_print(texts, args.out, "oracle translations", lambda: write_moses(lists, args.out))
    elif args.out:
        write_or_print(texts, args.out, "oracle translations", lambda: write_atomically(args.out, texts))
    if args.plot:
        import numpy as np

        from hypertune.cli.plots import plot_oracles
        from hypertune.tuners.corpus import ModelBest

        w = weights.vector(tuning_set.feature_space, len(tuning_set.feature_space))
        model = np.asarray(tuning_set.score(ModelBest(tuning_set).stats(w)), dtype=np.float64).reshape(-1)
        plot_oracles(model, np.asarray([o.score for o in result.oracles]), args.plot, args.metric)
    ids = tuning_set.sentence_ids
    lines = [f"{ids[o.sentence]}\t{o.score:.4f}\t{o.text}" for o in result.oracles] if not args.out else []
    lines.append(
        f"oracle BLEU {percent(result.bleu)} ({len(tuning_set)} sentences, method {result.method}, "
        f"{result.seconds:.2f} s)" + (f"; written to {args.out}" if args.out else "")
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
        "output": args.out,
        **result.details,
    }
    emit(args, "\n".join(lines), payload)
    return 0
