"""``hypertune draw``: a picture of a hypergraph, lattice or k-best list (Graphviz DOT; SVG, PNG or PDF through
Graphviz's dot or the builtin matplotlib renderer, ``cli/draw_layout.py``)."""

from __future__ import annotations

import argparse
from typing import Any

from hypertune.cli import COMMANDS

EXAMPLE = """examples:
  hypertune draw fixtures/toy-forest.json --weights fixtures/toy-forest.weights -o forest.svg --renderer builtin
  hypertune draw fixtures/toy-forest.json --weights fixtures/toy-forest.weights --show posteriors -o forest.dot
  hypertune draw hgdir/17.gz --weights w --prune 60 --show viterbi -o sentence17.png

Boxes are nodes (the goal has a double border); each dot is a hyperedge with an arrow from each tail,
numbered 1, 2, ... in the edge's tail order (the [1], [2] of its target side) when it has several, and one
arrow to its head; its label is its target side and, with --weights, its score w·f. --show viterbi marks
the best derivation in red; posteriors also labels every edge with its posterior p and draws it that
thick; inside/outside add every node's log inside/outside value (log semiring: log-sum-exp of w·f).
Without --weights every edge scores 0: no best derivation is marked (all tie), posteriors are the share of
derivations through an edge, and log inside is the log of a node's number of derivations.

A .dot file is Graphviz text. .svg, .png and .pdf are drawn by --renderer graphviz (Graphviz's dot: left
to right) or builtin (matplotlib, no Graphviz: the leaves at the bottom, the goal on top; the same bytes
on every run); auto (default) takes dot when it is installed, else builtin. Graphs over 400 edges are
refused, and over 100 are hard to read: --prune N keeps the N edges whose best derivation ranks highest.
"""

IMAGE_FORMATS = ("svg", "png", "pdf")
RENDERERS = ("auto", "graphviz", "builtin")


def register(subparsers: Any) -> None:
    from hypertune.cli.options import add_one_graph_options, positive_int

    parser = subparsers.add_parser(
        "draw",
        help=COMMANDS["draw"],
        description="Draw one graph as Graphviz DOT, or as SVG/PNG/PDF (through Graphviz's dot, or hypertune's "
        "own renderer), with its best derivation, edge posteriors or node scores.",
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
    parser.add_argument(
        "--renderer",
        choices=RENDERERS,
        default="auto",
        help="who draws an image: Graphviz's dot, hypertune's own (matplotlib), or auto (default: dot when installed)",
    )
    parser.add_argument("--out", "-o", required=True, metavar="FILE", help="FILE.dot, or .svg/.png/.pdf")
    parser.set_defaults(run=run, outputs=("out",))


def run(args: argparse.Namespace) -> int:
    import os
    import subprocess
    import warnings

    from hypertune.cli.tuning import graph_weights, load_one_graph
    from hypertune.errors import HypertuneWarning, InputError
    from hypertune.formats.dot import DRAW_LIMIT, to_dot
    from hypertune.formats.io import write_atomically

    kind = os.path.splitext(args.out)[1].lstrip(".").lower()
    renderer = choose_renderer(args.out, kind, args.renderer)
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
    if not args.weights:
        warnings.warn(HypertuneWarning(UNWEIGHTED[args.show]), stacklevel=1)
    shown = picture(hg, weights, args.show, weighted=bool(args.weights))
    if renderer == "builtin":
        from hypertune.cli.draw_layout import READABLE_EDGES, render

        if hg.num_edges > READABLE_EDGES:
            message = f"{hg.num_edges} edges are hard to read in one picture: --prune 60 keeps the 60 ranked highest"
            warnings.warn(HypertuneWarning(message), stacklevel=1)
        render(hg, shown, args.out)
    elif renderer == "graphviz":
        command = [str(_dot()), f"-T{kind}", "-o", args.out]
        done = subprocess.run(command, input=to_dot(hg, shown).encode(), capture_output=True, check=False)
        if done.returncode:
            raise InputError(f"dot failed: {done.stderr.decode(errors='replace').strip()}", args.out)
    else:
        write_atomically(args.out, to_dot(hg, shown))
    return 0


#: The one line ``draw`` prints without ``--weights``: what the picture then shows.
UNWEIGHTED = {
    "viterbi": "no --weights: every edge scores 0, so every derivation ties and none is marked; "
    "the drawing shows structure only",
    "posteriors": "no --weights: every edge scores 0; each posterior is the share of derivations that use the edge",
    "inside": "no --weights: every edge scores 0; each log inside value is the log of the node's number of derivations",
    "outside": "no --weights: every edge scores 0; each log outside value is the log of the number of ways to "
    "complete the node into a derivation of the goal",
}


def choose_renderer(out: str, kind: str, asked: str) -> str:
    """``"dot-text"``, ``"graphviz"`` or ``"builtin"`` for ``--out`` of extension ``kind``: a usage error (one
    line) for an unknown extension, a renderer that cannot write it or one that is not installed."""
    from hypertune.errors import UsageError

    if kind in ("dot", "gv"):
        if asked == "builtin":
            raise UsageError(f"--out {out}: the builtin renderer draws .svg, .png or .pdf; .dot is Graphviz's text")
        return "dot-text"
    if kind not in IMAGE_FORMATS:
        raise UsageError(f"--out {out}: write .dot (text), or .svg, .png or .pdf (a picture)")
    if asked == "graphviz" or (asked == "auto" and _dot() is not None):
        if _dot() is None:
            raise UsageError("--renderer graphviz: Graphviz's dot is not installed; use --renderer builtin")
        return "graphviz"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(
            f"--out {out}: a picture needs Graphviz's dot or matplotlib (pip install 'hypertune[plot]'); "
            "or write a .dot file"
        ) from None
    return "builtin"


def _dot() -> str | None:
    import shutil

    return shutil.which("dot")


def picture(hg: Any, weights: Any, show: str, weighted: bool = True) -> Any:
    """The :class:`~hypertune.formats.dot.Drawing` of ``hg``: with weights, each edge's score w·f and the best
    derivation in red; what ``show`` asks for (posteriors on the edges, log inside/outside in the nodes)."""
    import numpy as np

    from hypertune.algorithms import edge_posteriors, log_inside_outside, viterbi
    from hypertune.formats.dot import drawing

    highlight: list[int] = []
    edge_values = None
    if weighted:
        best = viterbi(hg, weights)
        highlight = best.derivation.edges()
        title = f"best derivation (red): {best.text}  (w·f {best.score:.4g})"
        edge_values = [f"w·f {s:.3g}" for s in weights.edge_scores(hg)]
    else:
        title = "structure only: no weights (every edge scores 0)"
    widths = None
    if show == "posteriors":
        widths = edge_posteriors(hg, weights)
        posteriors = [f"p {p:.3f}" for p in widths]
        edge_values = (
            posteriors if edge_values is None else [f"{a}, {b}" for a, b in zip(edge_values, posteriors, strict=True)]
        )
        title += "\nedges: posterior p (arrow width)"
    node_values = None
    if show in ("inside", "outside"):
        _, beta, alpha = log_inside_outside(hg, weights)
        chosen = np.asarray(beta if show == "inside" else alpha)
        node_values = [f"log {show} {x:.4g}" for x in chosen]
        title += f"\nboxes: log {show} (log semiring: log-sum-exp of w·f)"
    return drawing(hg, highlight, edge_values, node_values, widths, title)
