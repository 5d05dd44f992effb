"""``hypertune draw``: a picture of a hypergraph, lattice or k-best list (Graphviz DOT; SVG or PNG with dot)."""

from __future__ import annotations

import argparse
from typing import Any

from hypertune.cli import COMMANDS

EXAMPLE = """examples:
  hypertune draw fixtures/toy-forest.json --weights fixtures/toy-forest.weights -o forest.dot
  hypertune draw fixtures/toy-forest.json --weights fixtures/toy-forest.weights --show posteriors -o forest.svg
  hypertune draw hgdir/17.gz --weights w --prune 60 --show viterbi -o sentence17.png

The picture runs left to right: boxes are nodes (the goal has a double border), each dot is a hyperedge
with arrows from its tails and one to its head, labelled with its target side ([1], [2] for the tails).
--show viterbi marks the best derivation in red; posteriors also labels every edge with its posterior
and draws it that thick; inside/outside adds every node's log inside/outside score. A .dot file is
always written as text; .svg, .png and .pdf need Graphviz's dot. Graphs over 400 edges are refused:
--prune N keeps the N edges whose best derivation ranks highest.
"""

IMAGE_FORMATS = ("svg", "png", "pdf")


def register(subparsers: Any) -> None:
    from hypertune.cli.options import add_one_graph_options, positive_int

    parser = subparsers.add_parser(
        "draw",
        help=COMMANDS["draw"],
        description="Draw one graph as Graphviz DOT (or SVG/PNG/PDF when Graphviz is installed), with its best "
        "derivation, edge posteriors or node scores.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_one_graph_options(parser)
    parser.add_argument("--weights", "-w", action="append", default=[], metavar="W", help="weights (default 0)")
    parser.add_argument(
        "--show",
        choices=("viterbi", "posteriors", "inside", "outside"),
        default="viterbi",
        help="what to mark (default viterbi: the best derivation)",
    )
    parser.add_argument(
        "--prune", type=positive_int, metavar="N", help="first keep the N edges ranked highest (max-marginals)"
    )
    parser.add_argument("--out", "-o", required=True, metavar="FILE", help="FILE.dot, or .svg/.png/.pdf (needs dot)")
    parser.set_defaults(run=run, outputs=("out",))


def run(args: argparse.Namespace) -> int:
    import os
    import shutil
    import subprocess

    from hypertune.cli.tuning import graph_weights, load_one_graph
    from hypertune.errors import InputError, UsageError
    from hypertune.formats.dot import DRAW_LIMIT
    from hypertune.formats.io import write_atomically

    kind = os.path.splitext(args.out)[1].lstrip(".").lower()
    if kind not in ("dot", "gv", *IMAGE_FORMATS):
        raise UsageError(f"--out {args.out}: write .dot (text), or .svg, .png or .pdf (with Graphviz)")
    dot = shutil.which("dot")
    if kind in IMAGE_FORMATS and dot is None:
        raise UsageError(f"--out {args.out}: Graphviz's dot is not installed; write a .dot file instead")
    hg = load_one_graph(args)
    weights = graph_weights(args.weights, hg, args.strict)
    if args.prune:
        from hypertune.algorithms.prune import prune

        hg, _ = prune(hg, weights.edge_scores(hg), args.prune)
    if hg.num_edges > DRAW_LIMIT:
        advice = "add --prune N" if not args.prune else (
            f"--prune {args.prune} keeps ties at the cut-off (with no weights every edge ties): give --weights"
        )  # fmt: skip
        raise InputError(f"{hg.num_edges} edges are too many to draw (at most {DRAW_LIMIT}); {advice}", args.path)
    text = picture(hg, weights, args.show)
    if kind in IMAGE_FORMATS and dot is not None:  # (checked above: dot is there for an image)
        done = subprocess.run([dot, f"-T{kind}", "-o", args.out], input=text.encode(), capture_output=True, check=False)
        if done.returncode:
            raise InputError(f"dot failed: {done.stderr.decode(errors='replace').strip()}", args.out)
    else:
        write_atomically(args.out, text)
    return 0


def picture(hg: Any, weights: Any, show: str) -> str:
    """The DOT text of ``hg`` with the best derivation marked and what ``show`` asks for."""
    import numpy as np

    from hypertune.algorithms import edge_posteriors, log_inside_outside, viterbi
    from hypertune.formats.dot import to_dot

    best = viterbi(hg, weights)
    title = f"best: {best.text} ({best.score:.4g})"
    numbers = edge_posteriors(hg, weights) if show == "posteriors" else None
    values = None
    if show in ("inside", "outside"):
        _, beta, alpha = log_inside_outside(hg, weights)
        chosen = np.asarray(beta if show == "inside" else alpha)
        values = [f"{show} {x:.4g}" for x in chosen]
    return to_dot(hg, best.derivation.edges(), numbers, values, title)
