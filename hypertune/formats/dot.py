"""Graphviz DOT pictures of hypergraphs (``hypertune draw``).

Nodes are boxes (their id, and their label when the graph has one); every hyperedge is a small dot with
an arrow from each tail and one to its head, labelled with its target side (``[1]``, ``[2]`` for the
tails) and, optionally, a number (a posterior) that also sets the arrow's width. Edges of a highlighted
derivation are drawn red and bold. Left to right, so a lattice reads like a sentence. No dependency:
the text is written here; ``dot`` (Graphviz) turns it into SVG or PNG when installed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hypertune.hypergraph import Hypergraph

DRAW_LIMIT = 400
"""The most edges a picture may have (beyond it nothing is readable): prune the graph first."""


def to_dot(
    hg: Hypergraph,
    highlight: Sequence[int] = (),
    edge_numbers: np.ndarray | None = None,
    node_values: Sequence[str] | None = None,
    title: str = "",
) -> str:
    """DOT text of ``hg``: ``highlight`` the edges of a derivation, ``edge_numbers`` (one per edge, 0-1: a
    posterior) as labels and arrow widths, ``node_values`` as a second line in every node."""
    marked = {int(e) for e in highlight}
    lines = ["digraph hypergraph {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];']
    if title:
        lines.append(f"  label={_quote(title)}; labelloc=t;")
    for v in range(hg.num_nodes):
        text = f"{v}" + (f" {hg.node_labels[v]}" if hg.node_labels and hg.node_labels[v] else "")
        text += " (goal)" if v == hg.goal else ""
        parts = [text] if node_values is None else [text, node_values[v]]
        lines.append(f"  n{v} [label={_quote(*parts)}{', peripheries=2' if v == hg.goal else ''}];")
    for e in range(hg.num_edges):
        style = ', color="red", fontcolor="red", penwidth=2.5' if e in marked else ""
        width = ""
        label = [_target(hg, e)]
        if edge_numbers is not None:
            label.append(f"{edge_numbers[e]:.3f}")
            width = f", penwidth={0.5 + 4.0 * float(edge_numbers[e]):.2f}" if e not in marked else ""
        lines.append(f"  e{e} [shape=point, width=0.06{style}];")
        for t in hg.edge_tails(e):
            lines.append(f"  n{int(t)} -> e{e} [arrowhead=none{style}{width}];")
        lines.append(f"  e{e} -> n{int(hg.head[e])} [label={_quote(*label)}{style}{width}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _target(hg: Hypergraph, edge: int) -> str:
    return " ".join(hg.vocabulary.word(int(t)) if t >= 0 else f"[{-int(t)}]" for t in hg.edge_target(edge)) or "ε"


def _quote(*lines: str) -> str:
    """A DOT string of one or more lines (``\\n`` between them; quotes and backslashes escaped)."""
    return '"' + "\\n".join(line.replace("\\", "\\\\").replace('"', '\\"') for line in lines) + '"'
