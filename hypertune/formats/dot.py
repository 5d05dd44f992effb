"""What a picture of a hypergraph shows (:class:`Drawing`), and its Graphviz DOT text (``hypertune draw``).

Nodes are boxes (their id, and their label when the graph has one); every hyperedge is a small dot with
an arrow from each tail (numbered 1, 2, ... in the edge's tail order, the ``[1]``, ``[2]`` of its target
side, when it has several) and one to its head, labelled with its target side and, optionally, a value line (its score
``w·f``, or a posterior that also sets the arrow's width). Edges of a highlighted derivation are drawn red
and bold. DOT runs left to right, so a lattice reads like a sentence. No dependency: the text is written
here; ``dot`` (Graphviz) turns it into SVG or PNG when installed, and ``cli/draw_layout.py`` draws the
same :class:`Drawing` with matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hypertune.hypergraph import Hypergraph

DRAW_LIMIT = 400
"""The most edges a picture may have (beyond it nothing is readable): prune the graph first."""


@dataclass(frozen=True)
class Drawing:
    """The text and marks of one picture, whatever draws it: the lines of every node's box and of every
    hyperedge's label, the highlighted edges, per-edge widths in [0, 1] (posteriors) or None, a title."""

    nodes: tuple[tuple[str, ...], ...]
    edges: tuple[tuple[str, ...], ...]
    highlight: frozenset[int]
    widths: np.ndarray | None
    title: str


def drawing(
    hg: Hypergraph,
    highlight: Sequence[int] = (),
    edge_values: Sequence[str] | None = None,
    node_values: Sequence[str] | None = None,
    widths: np.ndarray | None = None,
    title: str = "",
) -> Drawing:
    """The :class:`Drawing` of ``hg``: each node ``"id label"`` (``(goal)`` added), each edge its target side;
    ``edge_values`` and ``node_values`` (one string per edge or node) add a second line."""
    nodes = []
    for v in range(hg.num_nodes):
        text = f"{v}" + (f" {hg.node_labels[v]}" if hg.node_labels and hg.node_labels[v] else "")
        text += " (goal)" if v == hg.goal else ""
        nodes.append((text,) if node_values is None else (text, node_values[v]))
    edges = []
    for e in range(hg.num_edges):
        words = hg.target_text(e) or "ε"
        edges.append((words,) if edge_values is None else (words, edge_values[e]))
    return Drawing(tuple(nodes), tuple(edges), frozenset(int(e) for e in highlight), widths, title)


def to_dot(hg: Hypergraph, picture: Drawing) -> str:
    """DOT text of ``hg`` showing ``picture``: a point per hyperedge, the arrows of several tails labelled 1, 2, ..."""
    lines = ["digraph hypergraph {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];']
    if picture.title:
        lines.append(f"  label={_quote(*picture.title.splitlines())}; labelloc=t;")
    for v in range(hg.num_nodes):
        lines.append(f"  n{v} [label={_quote(*picture.nodes[v])}{', peripheries=2' if v == hg.goal else ''}];")
    for e in range(hg.num_edges):
        marked = e in picture.highlight
        style = ', color="red", fontcolor="red", penwidth=2.5' if marked else ""
        if picture.widths is not None and not marked:
            style = f", penwidth={0.5 + 4.0 * float(picture.widths[e]):.2f}"
        red = ', color="red"' if marked else ""
        lines.append(f"  e{e} [shape=point, width=0.06{red}];")
        tails = hg.edge_tails(e)
        for i, t in enumerate(tails, start=1):
            number = f', headlabel="{i}", labelfontsize=9' if tails.size > 1 else ""
            lines.append(f"  n{int(t)} -> e{e} [arrowhead=none{number}{style}];")
        lines.append(f"  e{e} -> n{int(hg.head[e])} [label={_quote(*picture.edges[e])}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _quote(*lines: str) -> str:
    """A DOT string of one or more lines (``\\n`` between them; quotes and backslashes escaped)."""
    return '"' + "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in lines) + '"'
