"""``hypertune inspect``: sizes of graphs, per graph and in total."""

from __future__ import annotations

import argparse
import math
import os

from hypertune.choices import GRAPH_FORMATS
from hypertune.cli import COMMANDS
from hypertune.cli.common import add_output_options, emit, progress

EXAMPLE = """example:
  hypertune inspect fixtures/toy-forest.json
  hypertune inspect --json graphs/
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help=COMMANDS["inspect"],
        description="Print per graph and in total: nodes, edges, derivations, maximum arity and number of features.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="graph files or directories of per-sentence files")
    parser.add_argument("--format", choices=GRAPH_FORMATS, help="input format (default: detected)")
    add_output_options(parser)
    parser.set_defaults(run=run)


def format_count(count: int) -> str:
    """Exact below a trillion, otherwise ``1.4451e+18`` (counts can have thousands of digits)."""
    if count < 10**12:
        return str(count)
    exponent = int(count.bit_length() * math.log10(2))
    if 10**exponent > count:
        exponent -= 1
    return f"{count // 10 ** (exponent - 4) / 10**4:.4f}e+{exponent}"


def json_count(count: int) -> int | str:
    """The exact count for JSON, or its scientific form when it has more than 300 digits."""
    return count if count.bit_length() < 997 else format_count(count)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from hypertune.algorithms import describe_graph
    from hypertune.formats import read_graphs
    from hypertune.formats.registry import corpus_files
    from hypertune.symbols import FeatureSpace, Vocabulary

    graphs, files = [], []
    space, vocabulary = FeatureSpace(), Vocabulary()
    for path in args.paths:
        for file in (corpus_files(path) if os.path.exists(path) else []) or [path]:  # a folder of none: its error
            read = read_graphs(file, args.format, space, vocabulary)
            graphs.extend(read)
            files.extend([file] * len(read))
    if not graphs:
        from hypertune.errors import InputError

        raise InputError("holds no graph", " ".join(args.paths))
    rows = [describe_graph(g) for g in progress(args, graphs, len(graphs), "inspecting")]
    for row, file, g in zip(rows, files, graphs, strict=True):
        row["file"] = file
        if g.sentence_id is not None:
            row["id"] = g.sentence_id
    used = np.unique(np.concatenate([g.features.indices for g in graphs]))
    total = {
        "graphs": len(graphs),
        "nodes": sum(r["nodes"] for r in rows),
        "edges": sum(r["edges"] for r in rows),
        "derivations": sum(r["derivations"] for r in rows),
        "max_arity": max(r["max_arity"] for r in rows),
        "features": int(used.size),
    }
    lines = [f"{'graph':>6} {'nodes':>8} {'edges':>9} {'derivations':>14} {'arity':>5} {'features':>8}  file"]
    for i, r in enumerate(rows):
        lines.append(
            f"{i:>6} {r['nodes']:>8} {r['edges']:>9} {format_count(r['derivations']):>14} "
            f"{r['max_arity']:>5} {r['features']:>8}  {r['file']}"
        )
    lines.append(
        f"{'total':>6} {total['nodes']:>8} {total['edges']:>9} {format_count(total['derivations']):>14} "
        f"{total['max_arity']:>5} {total['features']:>8}"
    )
    for row in [*rows, total]:
        row["derivations"] = json_count(row["derivations"])
    emit(args, "\n".join(lines), {"graphs": rows, "total": total})
    return 0
