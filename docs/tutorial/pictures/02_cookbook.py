"""Chapter 2's cookbook picture: the small forest, each node with its inside value in four semirings and the
goal with its 3 best derivations; each edge with its score, the best derivation in red.

    python docs/tutorial/pictures/02_cookbook.py docs/tutorial/images/02-cookbook.svg

The places are set by hand for this five-node forest (leaves at the bottom, the goal on top).
"""

from __future__ import annotations

import sys

import matplotlib
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

from hypertune.algorithms import inside, viterbi
from hypertune.algorithms.semiring_values import named_semiring, show
from hypertune.formats import read_graphs, read_weights

FOREST = "docs/tutorial/data/01-forest.json"
WEIGHTS = "docs/tutorial/data/01-forest.weights"
ROWS = {"counting": "count", "real": "real", "log": "log", "tropical": "max"}  # semiring: its short name
NODE_AT = {"kleine": (1.3, 1.55), "Haus": (3.3, 1.55), "das": (6.3, 1.55), "kleine Haus": (2.9, 4.0), "S": (5.2, 6.3)}
BOX = (1.35, 1.0)  # a node's box, inches (the goal's is taller)
DOT_AT = {  # each edge's dot, by target text and head
    ("the", "das"): (6.3, 0.35),
    ("small", "kleine"): (0.9, 0.35),
    ("little", "kleine"): (1.8, 0.35),
    ("house", "Haus"): (3.3, 0.35),
    ("[1] [2]", "kleine Haus"): (1.7, 2.75),
    ("[2] [1]", "kleine Haus"): (3.5, 2.75),
    ("cottage", "kleine Haus"): (4.6, 2.75),
    ("[1] [2]", "S"): (5.2, 4.85),
}


def main(path: str) -> None:
    forest = read_graphs(FOREST)[0]
    weights = read_weights(WEIGHTS)
    columns = {}
    for name in [*ROWS, "kbest:3"]:
        named = named_semiring(name, forest, weights)
        columns[name] = inside(forest, named.semiring, named.values)
    best = set(viterbi(forest, weights).derivation.edges())
    scores = weights.edge_scores(forest)
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update({"svg.hashsalt": "hypertune-tutorial", "svg.fonttype": "none"})
        figure = Figure(figsize=(7.4, 7.9))
        axis = figure.add_axes((0.0, 0.0, 1.0, 1.0))
        axis.set_xlim(0, 7.4)
        axis.set_ylim(0, 7.9)
        axis.set_axis_off()
        axis.text(3.7, 7.75, "the small forest's inside values (chapter 2)", ha="center", va="top", fontsize=10)
        boxes = {}
        for v in range(forest.num_nodes):
            label = forest.node_labels[v]
            lines = [f"{v} {label}" + (" (goal)" if v == forest.goal else "")]
            lines += [f"{short} {show(columns[name][v])}" for name, short in ROWS.items()]
            height = BOX[1]
            if v == forest.goal:
                derivations = columns["kbest:3"][v]
                lines += ["3 best:"] + [f"{s:g} {' '.join(forest.derivation_words(d))}" for s, d in derivations]
                height = 1.75
            x, y = NODE_AT[label]
            width = BOX[0] if v != forest.goal else 1.75
            boxes[v] = (x, y, width, height)
            axis.add_patch(
                FancyBboxPatch(
                    (x - width / 2, y - height / 2),
                    width,
                    height,
                    boxstyle="round,pad=0,rounding_size=0.05",
                    facecolor="white",
                    edgecolor="black",
                    linewidth=1.6 if v == forest.goal else 0.8,
                    zorder=3,
                )
            )
            axis.text(x, y, "\n".join(lines), ha="center", va="center", fontsize=8.5, zorder=4)
        for e in range(forest.num_edges):
            head = int(forest.head[e])
            hx, hy, _, hheight = boxes[head]
            dx, dy = DOT_AT[(forest.target_text(e), forest.node_labels[head])]
            color, width = ("red", 1.8) if e in best else ("black", 0.8)
            tails = forest.edge_tails(e)
            for i, t in enumerate(tails, start=1):
                tx, ty, _, theight = boxes[int(t)]
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
            axis.text(dx + 0.08, dy - 0.02, f"{forest.target_text(e)}\ns = {scores[e]:g}", fontsize=7.5, color=color,
                      ha="left", va="top", zorder=2)  # fmt: skip
        figure.savefig(path, metadata={"Date": None} if path.endswith(".svg") else None)


if __name__ == "__main__":
    main(sys.argv[1])
