"""``hypertune decode``: the best or k best derivations of dumped graphs under given weights."""

from __future__ import annotations

import argparse

from hypertune.algorithms import kbest, viterbi
from hypertune.cli.common import add_output_options, emit, progress
from hypertune.errors import UsageError
from hypertune.formats import FORMATS, read_graphs, read_weights

EXAMPLE = """example:
  hypertune decode fixtures/toy-forest.json --weights fixtures/toy-forest.weights
  hypertune decode graphs/ --weights dense --weights sparse --kbest 10 --unique --json
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "decode",
        help="best (or k best) derivations of graphs under weights",
        description="Rescore dumped search spaces: print the model-best (or k best) "
        "derivation of every graph with its score and features.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="graph files or directories of per-sentence files")
    parser.add_argument(
        "--weights",
        "-w",
        action="append",
        required=True,
        metavar="FILE",
        help="weights file (repeatable; later files override earlier ones)",
    )
    parser.add_argument("--format", choices=sorted(FORMATS), help="input format (default: detected)")
    parser.add_argument("--kbest", "-k", type=int, default=1, metavar="K", help="number of derivations (default 1)")
    parser.add_argument("--unique", action="store_true", help="skip derivations whose string was already printed")
    parser.add_argument("--features", action="store_true", help="also print feature vectors in the summary")
    add_output_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.kbest < 1:
        raise UsageError("--kbest must be at least 1")
    weights = read_weights(args.weights)
    graphs = read_graphs(args.paths, args.format)
    results = []
    lines = []
    for i, hg in enumerate(progress(args, graphs, len(graphs), "decoding")):
        if args.kbest == 1 and not args.unique:
            best = [viterbi(hg, weights)]
        else:
            best = kbest(hg, weights, args.kbest, unique=args.unique)
        results.append(
            {"graph": i, "derivations": [{"score": d.score, "text": d.text, "features": d.features} for d in best]}
        )
        for rank, d in enumerate(best):
            prefix = f"{i}" if args.kbest == 1 and not args.unique else f"{i}\t{rank + 1}"
            lines.append(f"{prefix}\t{d.score:.6g}\t{d.text}")
            if args.features:
                lines.append("\t\t" + " ".join(f"{k}={v:g}" for k, v in d.features.items()))
    emit(args, "\n".join(lines), {"graphs": results})
    return 0
