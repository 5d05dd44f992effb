"""Chapter 2's cookbook picture: the small forest with each node's inside value in all eight semirings of
the cookbook (boolean, counting, real, log, tropical, expectation, envelope along lm at every node; the
3 best derivations at the goal); each edge with its score and its lm value, the best derivation in red.

    python docs/tutorial/pictures/02_cookbook.py docs/tutorial/images/02-cookbook.svg

The places are set by hand for this five-node forest (leaves at the bottom, the goal on top).
"""

from __future__ import annotations

import math
import sys
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from hypertune.algorithms import inside, viterbi
from hypertune.algorithms.semiring_values import named_semiring
from hypertune.formats import read_graphs, read_weights
from hypertune.weights import Weights

FOREST = "docs/tutorial/data/01-forest.json"
WEIGHTS = "docs/tutorial/data/01-forest.weights"
DIRECTION = Weights({"lm": 1.0})  # the envelope's direction, as in the chapter's cookbook block
NAMES = ["boolean", "counting", "real", "log", "tropical", "kbest:3", "expectation", "envelope"]
WIDTH, HEIGHT = 11.0, 9.2  # the figure, inches
NODE_AT = {"kleine": (1.6, 2.0), "Haus": (4.6, 2.0), "das": (9.3, 2.0), "kleine Haus": (3.0, 4.9), "S": (7.4, 7.6)}
BOX_WIDTH, LINE_HEIGHT = 2.85, 0.14  # a node's box and one line of its text, inches
DOT_AT = {  # each edge's dot, by target text and head
    ("the", "das"): (9.3, 0.45),
    ("small", "kleine"): (1.0, 0.45),
    ("little", "kleine"): (2.2, 0.45),
    ("house", "Haus"): (4.6, 0.45),
    ("[1] [2]", "kleine Haus"): (1.9, 3.45),
    ("[2] [1]", "kleine Haus"): (4.1, 3.45),
    ("cottage", "kleine Haus"): (5.6, 3.45),
    ("[1] [2]", "S"): (7.4, 6.3),
}


def number(x: float) -> str:
    return "-inf" if x == -math.inf else f"{x:.6g}"


def line_text(intercept: float, slope: float) -> str:
    return f"{number(intercept)} {'-' if slope < 0 else '+'} {number(abs(slope))}γ"


def node_text(forest: Any, v: int, columns: dict[str, list[Any]]) -> list[str]:
    """The lines of node v's box: its name, then its value in each semiring."""
    goal = v == forest.goal
    lines = [f"{v} {forest.node_labels[v]}" + (" (goal)" if goal else "")]
    lines.append(f"boolean {'true' if columns['boolean'][v] else 'false'}   counting {int(columns['counting'][v])}")
    lines.append(f"real {number(columns['real'][v])}   log {number(columns['log'][v])}")
    lines.append(f"tropical {number(columns['tropical'][v])}")
    p, r = columns["expectation"][v]
    names = forest.feature_space.names
    lines.append(f"expectation ⟨{number(p)}, r⟩:")
    lines.append("  r = " + ", ".join(f"{n} {number(x)}" for n, x in zip(names, r, strict=True)))
    lines.append("envelope along lm:")
    for x in columns["envelope"][v]:
        words = f'  "{" ".join(forest.derivation_words(x.derivation))}"' if goal else ""
        lines.append(f"  from {number(x.left)}: {line_text(x.intercept, x.slope)}{words}")
    if goal:
        lines.append("kbest:3:")
        for score, derivation in columns["kbest:3"][v]:
            lines.append(f"  {score:g}  {' '.join(forest.derivation_words(derivation))}")
    return lines


def main(path: str) -> None:
    forest = read_graphs(FOREST)[0]
    weights = read_weights(WEIGHTS)
    columns = {}
    for name in NAMES:
        named = named_semiring(name, forest, weights, DIRECTION)
        columns[name] = inside(forest, named.semiring, named.values)
    best = set(viterbi(forest, weights).derivation.edges())
    scores, lm = weights.edge_scores(forest), DIRECTION.edge_scores(forest)
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update({"svg.hashsalt": "hypertune-tutorial", "svg.fonttype": "none"})
        figure = Figure(figsize=(WIDTH, HEIGHT))
        axis = figure.add_axes((0.0, 0.0, 1.0, 1.0))
        axis.set_xlim(0, WIDTH)
        axis.set_ylim(0, HEIGHT)
        axis.set_axis_off()
        axis.text(
            0.2,
            HEIGHT - 0.2,
            "the small forest's inside values in eight semirings (chapter 2)\n"
            "edge labels: target, score s = w·f and lm value (the envelope's edge line is s + γ·lm);\n"
            "r = the expectation semiring's Σ exp(score)·f over the node's derivations",
            ha="left",
            va="top",
            fontsize=9,
        )
        boxes = {}
        for v in range(forest.num_nodes):
            lines = node_text(forest, v, columns)
            x, y = NODE_AT[forest.node_labels[v]]
            height = LINE_HEIGHT * len(lines) + 0.12
            boxes[v] = (x, y, height)
            axis.add_patch(
                FancyBboxPatch(
                    (x - BOX_WIDTH / 2, y - height / 2),
                    BOX_WIDTH,
                    height,
                    boxstyle="round,pad=0,rounding_size=0.05",
                    facecolor="white",
                    edgecolor="black",
                    linewidth=1.6 if v == forest.goal else 0.8,
                    zorder=3,
                )
            )
            axis.text(x - BOX_WIDTH / 2 + 0.08, y, "\n".join(lines), ha="left", va="center", fontsize=8, zorder=4)
        for e in range(forest.num_edges):
            head = int(forest.head[e])
            hx, hy, hheight = boxes[head]
            dx, dy = DOT_AT[(forest.target_text(e), forest.node_labels[head])]
            color, width = ("red", 1.8) if e in best else ("black", 0.8)
            for i, t in enumerate(forest.edge_tails(e), start=1):
                tx, ty, theight = boxes[int(t)]
                arrow = FancyArrowPatch(
                    (tx, ty + theight / 2), (dx, dy), arrowstyle="-|>", mutation_scale=8, shrinkA=0, shrinkB=3
                )
                arrow.set(color=color, linewidth=width, zorder=1)
                axis.add_patch(arrow)
                axis.text(
                    0.6 * dx + 0.4 * tx, 0.6 * dy + 0.4 * (ty + theight / 2), str(i), fontsize=7, color="tab:blue"
                )
            arrow = FancyArrowPatch(
                (dx, dy), (hx, hy - hheight / 2), arrowstyle="-|>", mutation_scale=9, shrinkA=0, shrinkB=0
            )
            arrow.set(color=color, linewidth=width, zorder=1)
            axis.add_patch(arrow)
            axis.add_patch(Circle((dx, dy), 0.045, color=color, zorder=2))
            label = f"{forest.target_text(e)}\ns = {scores[e]:g}, lm {lm[e]:g}"
            axis.text(dx + 0.08, dy - 0.02, label, fontsize=7.5, color=color, ha="left", va="top", zorder=2)
        figure.savefig(path, metadata={"Date": None} if path.endswith(".svg") else None)


if __name__ == "__main__":
    main(sys.argv[1])
