"""``hypertune hope-fear``: the hope, fear and model-best translations of every sentence."""

from __future__ import annotations

import argparse
from typing import Any

from hypertune.cli import COMMANDS

EXAMPLE = """examples:
  hypertune hope-fear nbest.gz --refs ref.0 --weights moses.ini
  hypertune hope-fear hgdir/ --refs ref --weights dense sparse --json

hope = argmax model score + BLEU, fear = argmax model score - BLEU, model = argmax model score, with
BLEU the sentence's BLEU against a background pseudo-corpus starting at 1 in every statistic (Moses
kbmira; --gain bleu+1 for BLEU+1 alone). k-best lists are searched exactly; lattices and hypergraphs
approximately (Moses's forest search), or exactly for --gain linear with --search exact. The BLEU
statistics printed are exact (m1 c1 ... m4 c4 reflen), recomputed from the strings.
"""


def register(subparsers: Any) -> None:
    from hypertune.choices import GAINS, HOPE_FEAR_SEARCHES, TOKENIZERS
    from hypertune.cli.common import add_output_options
    from hypertune.cli.options import add_cache_option, add_graph_format_option, add_strict_option, finite_float

    parser = subparsers.add_parser(
        "hope-fear",
        help=COMMANDS["hope_fear"],
        description="Per sentence: the hope, fear and model-best derivations with model scores and BLEU statistics.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="n-best lists, FEATSTAT files, graphs, hgdirs")
    parser.add_argument(
        "--refs", nargs="+", default=[], metavar="REF", help="reference files (not needed with SCORESTAT input)"
    )
    parser.add_argument("--weights", "-w", nargs="+", required=True, metavar="W", help="weights files")
    parser.add_argument(
        "--gain",
        choices=GAINS,
        default="background",
        help="sentence gain: BLEU against a background pseudo-corpus (default, kbmira), BLEU+1, linear BLEU (p and "
        "r from the model-best translations), or Moses's smoothed sentence BLEU (moses, nakov)",
    )
    parser.add_argument(
        "--search",
        choices=HOPE_FEAR_SEARCHES,
        default="approximate",
        help="lattices/hypergraphs: Moses's approximate forest search (default), or exact (--gain linear only)",
    )
    parser.add_argument(
        "--background", type=finite_float, default=1.0, metavar="V", help="initial background statistic"
    )
    parser.add_argument("--safe-hope", action="store_true", help="bound the model score's influence on the hope")
    parser.add_argument("--tokenize", "-tok", default="none", choices=TOKENIZERS, help="(default: none)")
    parser.add_argument("--lowercase", "-lc", action="store_true", help="lowercase before scoring")
    add_graph_format_option(parser)
    add_cache_option(parser)
    add_strict_option(parser)
    add_output_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from hypertune.cli.common import emit, progress
    from hypertune.cli.tuning import load_tuning_set, load_weights
    from hypertune.metrics import BleuMetric, LinearBleu
    from hypertune.metrics.gains import Gain
    from hypertune.tuners.hope_fear import HopeFearDecoder
    from hypertune.tuners.shards import ordered_sum

    metric = BleuMetric(tokenize=args.tokenize, lowercase=args.lowercase)
    tuning_set = load_tuning_set(args, metric)
    weights = load_weights(args.weights, tuning_set, args)[0].vector(tuning_set.feature_space)
    linear = None
    if args.gain == "linear":
        # p and r of linear BLEU from the model-best translations' corpus statistics (Tromble et al. 2008)
        first = HopeFearDecoder(tuning_set)
        corpus = ordered_sum([first.model_best_stats(s, weights) for s in range(len(tuning_set))])
        linear = LinearBleu.from_stats(corpus, bleu=BleuMetric(tokenize=args.tokenize, clip=False))
    gain = Gain(args.gain, metric.max_order, 1.0, args.background, linear)
    decoder = HopeFearDecoder(tuning_set, search=args.search)
    rows, lines = [], []
    for s in progress(args, range(len(tuning_set)), len(tuning_set), "hope/fear"):
        hf = decoder.hope_fear(s, weights, gain, args.safe_hope)
        row: dict[str, Any] = {"sentence": tuning_set.sentence_ids[s]}
        for name in ("hope", "fear", "model"):
            h = getattr(hf, name)
            text = None if h.words is None else " ".join(tuning_set.vocabulary.words(h.words))
            row[name] = {
                "text": text,
                "model_score": h.model_score,
                "gain": h.gain,
                "stats": [float(x) for x in h.stats],
                "bleu": float(metric.score(h.stats)),
            }
            shown = text if text is not None else f"(hypothesis {h.derivation.edge - 1})"
            stats = " ".join(f"{x:g}" for x in h.stats)
            lines.append(f"{tuning_set.sentence_ids[s]}\t{name}\t{h.model_score:.6g}\t{h.gain:.6g}\t{stats}\t{shown}")
        rows.append(row)
    summary = "sentence\tkind\tmodel\tgain\tstats\ttranslation\n" + "\n".join(lines)
    emit(args, summary, {"gain": args.gain, "search": args.search, "sentences": rows})
    return 0
