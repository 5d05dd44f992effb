"""``hypertune convert``: read graphs in one format and write them in another (or weights files)."""

from __future__ import annotations

import argparse
import os

from hypertune.errors import UsageError
from hypertune.formats import FORMATS, read_graphs, write_graphs

EXAMPLE = """example:
  hypertune convert hg.json.gz hg.moses --to moses-hypergraph
  hypertune convert nbest.gz corpus.htc --to hypertune-cache       # native cache: loads 10x faster
  hypertune convert hgdir/ graphs.jsonl --to cdec-json
  hypertune convert hgdir/ copy/ --to moses-hgdir                  # kbmira --hgdir layout
  hypertune convert dense.weights weights.ini --to moses-ini --weights
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "convert",
        help="convert graphs (or weights) between formats",
        description="Read search spaces (files or directories of per-sentence files, format detected unless "
        "--from names it) and write them in another format. With --weights, convert weights files instead.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", metavar="IN", nargs="+", help="input files or directories (weights: later override)")
    parser.add_argument("output", metavar="OUT", help="output file (a directory for --to moses-hgdir)")
    parser.add_argument("--to", required=True, metavar="FORMAT", help="output format (see --help-formats)")
    parser.add_argument("--from", dest="source", choices=sorted(FORMATS), help="input format (default: detected)")
    parser.add_argument(
        "--weights",
        action="store_true",
        help="convert weights files (cdec, moses, moses-ini, kbmira-dense, json, zmert)",
    )
    parser.add_argument(
        "--feature-names",
        metavar="FILE",
        help="an n-best, FEATSTAT or Z-MERT parameter file "
        "giving the feature order of positional weights (init.opt, legacy dense line) or of "
        "Z-MERT candidates",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON summary")
    parser.set_defaults(run=run)


def _feature_names(path: str | None) -> list[str] | None:
    if path is None:
        return None
    from hypertune.formats.io import open_text
    from hypertune.formats.weights import detect_weights_format, read_zmert_params

    with open_text(path) as handle:
        head = handle.read(65536)
    if detect_weights_format(head) == "zmert":
        return [p.name for p in read_zmert_params(path)]
    from hypertune.formats.nbest import feature_order

    return feature_order(path)


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from hypertune.cli.common import check_writable

    if args.to == "moses-hgdir" and os.path.isdir(args.output):
        check_writable(os.path.join(args.output, "0.gz"), "OUT")
    else:
        check_writable(args.output, "OUT")
    names = _feature_names(args.feature_names)
    if args.weights:
        from hypertune.formats.weights import WEIGHTS_FORMATS, read_weights, write_weights

        if args.to not in WEIGHTS_FORMATS:
            raise UsageError(f"unknown weights format {args.to!r}; choose from {', '.join(WEIGHTS_FORMATS)}")
        weights = read_weights(args.input, feature_names=names)
        write_weights(weights, args.output, args.to)
        summary = {"weights": len(weights), "output": args.output, "format": args.to}
    else:
        if args.to != "moses-hgdir" and args.to not in FORMATS:
            raise UsageError(f"unknown format {args.to!r}; choose from {', '.join(sorted(FORMATS))}, moses-hgdir")
        if names is not None and (args.source == "zmert" or args.source is None):
            from hypertune.formats.nbest import read_zmert
            from hypertune.formats.registry import corpus_files, detect_format
            from hypertune.symbols import FeatureSpace, Vocabulary

            space, vocab = FeatureSpace(), Vocabulary()
            graphs = []
            for path in args.input:
                for file in corpus_files(path):
                    fmt = args.source or detect_format(file).name
                    if fmt == "zmert":
                        graphs.extend(read_zmert(file, space, vocab, names=names))
                    else:
                        graphs.extend(read_graphs(file, fmt, space, vocab))
        else:
            graphs = read_graphs(args.input, args.source)
        if args.to == "moses-hgdir":
            from hypertune.formats.moses_hypergraph import write_hgdir

            write_hgdir(graphs, args.output)
        else:
            write_graphs(graphs, args.output, args.to)
        summary = {"graphs": len(graphs), "output": args.output, "format": args.to}
    if args.json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
    else:
        what = f"{summary.get('graphs', summary.get('weights'))} {'weights' if args.weights else 'graphs'}"
        sys.stdout.write(f"wrote {what} to {args.output} ({args.to})\n")
    return 0
