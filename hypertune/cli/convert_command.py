"""``hypertune convert``: read graphs in one format and write them in another (or weights files)."""

from __future__ import annotations

import argparse
import os
import sys

from hypertune.choices import GRAPH_FORMATS
from hypertune.cli import COMMANDS
from hypertune.cli.common import add_output_options
from hypertune.errors import InputError, UsageError, warn

EXAMPLE = """example:
  hypertune convert hg.json.gz hg.moses --to moses-hypergraph
  hypertune convert nbest.gz corpus.htc --to hypertune-cache       # native cache: loads 10x faster
  hypertune convert hgdir/ graphs.jsonl --to cdec-json
  hypertune convert hgdir/ copy/ --to moses-hgdir                  # kbmira --hgdir layout
  hypertune convert lattice.plf lattice.fst --to openfst --collapse-weights weights.txt
  hypertune convert dense.weights weights.ini --to moses-ini --weights
  hypertune convert init.opt weights.txt --to cdec --weights --feature-names nbest.gz
"""

#: Output formats that keep graph metadata such as a Moses hypergraph's source-covered counts.
KEEP_METADATA = ("moses-hypergraph", "moses-hgdir", "hypertune", "hypertune-cache")

#: What ``--help-formats`` says of each weights format; the writable ones are ``WEIGHTS_FORMATS``.
WEIGHTS_DESCRIPTIONS = {
    "cdec": "'name value' lines (cdec, Joshua, kbmira --sparse-init)",
    "moses": "'Name= v1 v2 ...' lines, components grouped (kbmira --dense-init)",
    "moses-ini": "moses.ini [weight] section (old [weight-X] sections are read too)",
    "kbmira-dense": "'Name= value' lines, one per component",
    "json": 'a JSON object {"name": value} (or {"weights": {...}})',
    "zmert": "Z-MERT parameter file 'name ||| value Opt min max'",
    "joshua-config": "Joshua config file (its weight lines)",
    "positional": "Moses init.opt or kbmira's legacy line of numbers (needs --feature-names)",
}


def formats_text() -> str:
    """The ``--help-formats`` listing: every graph reader and writer, then the weights formats."""
    from hypertune.formats import FORMATS
    from hypertune.formats.weights import WEIGHTS_FORMATS

    def row(name: str, writes: bool, description: str) -> str:
        return f"  {name:<19} {'read/write' if writes else 'read':<11} {description}\n"

    lines = ["graph formats (--from NAME, --to NAME; inputs are detected by content):\n"]
    for name in sorted(FORMATS):
        fmt = FORMATS[name]
        lines.append(row(name, fmt.write is not None, fmt.description))
    lines.append(
        row("moses-hgdir", True, "kbmira --hgdir: a directory of <sid>.gz Moses hypergraphs (read: give the directory)")
    )
    lines.append("\nweights formats (with --weights: --to NAME; inputs are detected by content):\n")
    for name, description in WEIGHTS_DESCRIPTIONS.items():
        lines.append(row(name, name in WEIGHTS_FORMATS, description))
    return "".join(lines)


class _HelpFormats(argparse.Action):
    """``--help-formats``: print :func:`formats_text` and exit 0, before required arguments are checked."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        sys.stdout.write(formats_text())
        parser.exit(0)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "convert",
        help=COMMANDS["convert"],
        description="Read search spaces (files or directories of per-sentence files, format detected unless "
        "--from names it) and write them in another format. With --weights, convert weights files instead.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", metavar="IN", nargs="+", help="input files or directories (weights: later override)")
    parser.add_argument("output", metavar="OUT", help="output file (a directory for --to moses-hgdir)")
    parser.add_argument("--to", required=True, metavar="FORMAT", help="output format (see --help-formats)")
    parser.add_argument("--from", dest="source", choices=GRAPH_FORMATS, help="input format (default: detected)")
    parser.add_argument("--help-formats", action=_HelpFormats, help="list the formats read and written, and exit")
    parser.add_argument(
        "--weights",
        action="store_true",
        help="the inputs are weights files: convert them (to cdec, moses, moses-ini, kbmira-dense, json, zmert)",
    )
    parser.add_argument(
        "--collapse-weights",
        action="append",
        metavar="FILE",
        help="weights file (repeatable; later files override): write each arc's features as the one cost "
        "-(w.f); needed for --to openfst unless the graphs' only feature is FstWeight",
    )
    parser.add_argument(
        "--feature-names",
        metavar="FILE",
        help="an n-best, FEATSTAT or Z-MERT parameter file "
        "giving the feature order of positional weights (init.opt, legacy dense line) or of "
        "Z-MERT candidates",
    )
    add_output_options(parser)
    parser.set_defaults(run=run)


def _feature_names(path: str | None) -> list[str] | None:
    """The feature order in ``--feature-names``: the dense features of an n-best list (its first line) or
    of a FEATSTAT header, or the parameters of a Z-MERT parameter file."""
    if path is None:
        return None
    from hypertune.formats.io import read_head
    from hypertune.formats.nbest import feature_order
    from hypertune.formats.weights import read_zmert_params

    if not os.path.isfile(path):
        raise InputError("no such file (--feature-names)", path)
    lines = [line.strip() for line in read_head(path, 1 << 16).split("\n")]
    first = next((line for line in lines if line and not line.startswith("#")), "")
    fields = first.split("|||")
    if first.startswith("FEATURES_TXT_BEGIN_") or (len(fields) >= 4 and fields[0].strip().isdigit()):
        return feature_order(path)
    if len(fields) == 2:
        return [p.name for p in read_zmert_params(path)]
    raise InputError("--feature-names: expected an n-best list, a FEATSTAT file or a Z-MERT parameter file", path, 1)


def _read_inputs(args: argparse.Namespace, names: list[str] | None) -> list:
    """The input graphs; Z-MERT candidates are named by ``--feature-names``."""
    from hypertune.formats import read_graphs

    if names is None or args.source not in ("zmert", None):
        return read_graphs(args.input, args.source)
    from hypertune.formats.nbest import read_zmert
    from hypertune.formats.registry import corpus_files, detect_format
    from hypertune.symbols import FeatureSpace, Vocabulary

    space, vocab = FeatureSpace(), Vocabulary()
    graphs = []
    for path in args.input:
        if not os.path.exists(path):
            raise InputError("no such file or directory", path)
        for file in corpus_files(path):
            fmt = args.source or detect_format(file).name
            if fmt == "zmert":
                graphs.extend(read_zmert(file, space, vocab, names=names))
            else:
                graphs.extend(read_graphs(file, fmt, space, vocab))
    return graphs


def _collapse(graphs: list, paths: list[str], names: list[str] | None) -> list:
    """Every graph with its features collapsed to OpenFst's one cost ``-(w.f)`` under the weights in
    ``paths``, which must name the graphs' features (:func:`~hypertune.weights.check_feature_names`)."""
    from hypertune.formats.openfst import collapse
    from hypertune.formats.weights import read_weights
    from hypertune.weights import check_feature_names

    weights = read_weights(paths, feature_names=names)
    if graphs:
        check_feature_names(weights, graphs[0].feature_space, " ".join(paths), graphs=graphs)
    return [collapse(hg, weights) for hg in graphs]


def _warn_source_covered(graphs: list, to: str) -> None:
    """One-line warnings where Moses source-covered counts (a Moses hypergraph's third column, which kbmira's
    hope/fear BLEU divides by the root's count) are lost, or written as 0 for graphs that have none."""
    have = 0
    for hg in graphs:
        have += hg.source_covered is not None
    if have and to not in KEEP_METADATA:
        warn(
            f"the source-covered counts of {have} graph(s) (a Moses hypergraph's third column) are lost: "
            f"{to} has no place for them ({', '.join(KEEP_METADATA)} keep them)"
        )
    if to in ("moses-hypergraph", "moses-hgdir") and have < len(graphs):
        warn(
            f"{len(graphs) - have} graph(s) have no source-covered counts: the third column is written as 0, "
            "which kbmira's hope/fear BLEU cannot use (it scales reference lengths by it)"
        )


def run(args: argparse.Namespace) -> int:
    """Convert weights files (``--weights``) or graphs, and print a one-line (or JSON) summary."""
    import json

    from hypertune.cli.common import refuse_outputs_over_inputs
    from hypertune.formats import FORMATS, write_graphs
    from hypertune.formats.io import check_writable

    if args.to == "moses-hgdir" and os.path.isdir(args.output):
        check_writable(os.path.join(args.output, "0.gz"), "OUT")
    else:
        check_writable(args.output, "OUT")
    refuse_outputs_over_inputs(args, [("OUT", args.output)])
    if args.collapse_weights and args.weights:
        raise UsageError("--collapse-weights converts graphs; it does not go with --weights")
    if args.collapse_weights and args.to != "openfst":
        raise UsageError("--collapse-weights goes with --to openfst (whose arcs carry one weight)")
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
        graphs = _read_inputs(args, names)
        if graphs and all(hg.sentence_id is not None for hg in graphs):  # a shell glob's f10 before f2: by id
            graphs = sorted(graphs, key=lambda hg: hg.sentence_id)
        if args.collapse_weights:
            graphs = _collapse(graphs, args.collapse_weights, names)
        if args.to == "moses-hgdir":
            from hypertune.formats.moses_hypergraph import write_hgdir

            write_hgdir(graphs, args.output)
        else:
            write_graphs(graphs, args.output, args.to)
        _warn_source_covered(graphs, args.to)
        summary = {"graphs": len(graphs), "output": args.output, "format": args.to}
    if args.json:
        json.dump(summary, sys.stdout)
        sys.stdout.write("\n")
    else:
        what = f"{summary.get('graphs', summary.get('weights'))} {'weights' if args.weights else 'graphs'}"
        sys.stdout.write(f"wrote {what} to {args.output} ({args.to})\n")
    return 0
