"""``hypertune draw --renderer builtin``: a layered layout of a hypergraph, drawn with matplotlib (no Graphviz).

The layout is Sugiyama's scheme (Sugiyama, Tagawa & Toda 1981) on the bipartite graph of nodes and
hyperedges: every node sits on the layer of its depth (0 for a node made only by axioms, else one more than
the deepest tail of its in-edges: the longest path up from the leaves), every hyperedge (its label, its dot
on top) half a layer below its head, so each head is drawn above its tails and the goal on top. Within a
layer the order comes from barycenter sweeps (each item moved to the mean position of its neighbours in the
layer below, then above), keeping the order whose straight arrows cross least; then positions are pulled
towards their neighbours while keeping the order and each label's width (least squares under order
constraints: pool-adjacent-violators). Every step is deterministic, and so is the file written
(``cli/plots.py``: a fixed SVG hash salt, no date).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hypertune.formats.dot import Drawing
from hypertune.hypergraph import Hypergraph

READABLE_EDGES = 100
"""Beyond this many hyperedges one picture is hard to read: ``draw`` suggests ``--prune``."""

NODE_FONT, EDGE_FONT, TAIL_FONT, TITLE_FONT = 9.0, 8.0, 7.0, 9.0  # points
PAD = 0.06  # inches of box around a node's text
ROW = 0.6  # inches from a layer of nodes to the layer of the hyperedge labels above it
GAP = 0.18  # inches between neighbours in a layer
DOT = 0.035  # radius of a hyperedge's dot, inches
LABEL_PAD = 0.03  # inches of box around a hyperedge's label
MARGIN = 0.15  # inches around the picture
SWEEPS = 12  # barycenter sweeps (each one way); the order with fewest crossings is kept
PULLS = 8  # position passes after the order is fixed


@dataclass(frozen=True)
class Layout:
    """Where everything goes, in inches: ``x``/``y`` of the nodes (``0 .. N-1``) then of the hyperedges' dots
    (``N .. N+E-1``); ``depth`` of each node (its layer); ``crossings`` of the straight arrows drawn."""

    x: np.ndarray
    y: np.ndarray
    depth: np.ndarray
    crossings: int


def node_depths(hg: Hypergraph) -> np.ndarray:
    """Each node's layer: 0 when all its in-edges are axioms, else 1 + the largest depth among the tails of
    its in-edges (nodes are in topological order, so tails are done before their heads)."""
    depth = np.zeros(hg.num_nodes, dtype=np.int64)
    for v in range(hg.num_nodes):
        first, last = hg.node_offsets[v], hg.node_offsets[v + 1]
        tails = hg.tails[hg.tail_offsets[first] : hg.tail_offsets[last]]
        depth[v] = 1 + int(depth[tails].max()) if tails.size else 0
    return depth


def segments(hg: Hypergraph) -> tuple[np.ndarray, np.ndarray]:
    """The arrows as item pairs (lower, upper): each tail node to its edge's dot, each dot to its head."""
    n = hg.num_nodes
    arity = np.diff(hg.tail_offsets)
    edge_items = n + np.arange(hg.num_edges)
    low = np.concatenate([hg.tails, edge_items])
    high = np.concatenate([np.repeat(edge_items, arity), hg.head])
    return low.astype(np.int64), high.astype(np.int64)


def count_crossings(x: np.ndarray, y: np.ndarray, low: np.ndarray, high: np.ndarray) -> int:
    """How many pairs of the straight segments ``(x, y)[low] -> (x, y)[high]`` cross properly (pairs sharing
    an end are not counted)."""
    ax, ay, bx, by = x[low], y[low], x[high], y[high]
    total = 0
    for start in range(0, low.size, 256):  # rows in blocks: memory stays small on 400-edge graphs
        rows = slice(start, start + 256)

        def side(px: Any, py: Any, qx: Any, qy: Any, rx: Any, ry: Any) -> Any:
            return np.sign((qx - px) * (ry - py) - (qy - py) * (rx - px))

        p = (ax[rows, None], ay[rows, None], bx[rows, None], by[rows, None])
        s1 = side(*p, ax[None, :], ay[None, :]) * side(*p, bx[None, :], by[None, :])
        s2 = side(ax[None, :], ay[None, :], bx[None, :], by[None, :], p[0], p[1])
        s2 = s2 * side(ax[None, :], ay[None, :], bx[None, :], by[None, :], p[2], p[3])
        shared = (low[rows, None] == low[None, :]) | (low[rows, None] == high[None, :])
        shared |= (high[rows, None] == low[None, :]) | (high[rows, None] == high[None, :])
        total += int(np.count_nonzero((s1 < 0) & (s2 < 0) & ~shared))
    return total // 2


def layout(hg: Hypergraph, left: np.ndarray, right: np.ndarray) -> Layout:
    """The layout of ``hg`` whose items (nodes, then dots) reach ``left[i]`` and ``right[i]`` inches either side
    of their anchor (half a box; a dot's radius, and its label on the right)."""
    depth = node_depths(hg)
    rank = np.concatenate([2 * depth, 2 * depth[hg.head] - 1])
    rank -= rank.min()
    y = rank * ROW
    low, high = segments(hg)
    layers = [items for r in range(int(rank.max()) + 1) if (items := np.flatnonzero(rank == r)).size]
    x = np.zeros(rank.size)
    for items in layers:
        x[items] = np.arange(items.size) - (items.size - 1) / 2
    best, fewest = x.copy(), count_crossings(x, y, low, high)
    for sweep in range(SWEEPS):
        upward = sweep % 2 == 0
        for items in layers if upward else layers[::-1]:
            key = _neighbour_means(x, items, low, high, upward)
            ordered = items[np.lexsort((x[items], key))]
            x[ordered] = np.arange(items.size) - (items.size - 1) / 2
        crossings = count_crossings(x, y, low, high)
        if crossings < fewest:
            best, fewest = x.copy(), crossings
    order = [items[np.argsort(best[items], kind="stable")] for items in layers]
    x = np.zeros(rank.size)
    for items in order:
        x[items] = _packed(items, left, right, np.zeros(items.size))
    for sweep in range(PULLS):
        upward = sweep % 2 == 0
        for items in order if upward else order[::-1]:
            x[items] = _packed(items, left, right, _neighbour_means(x, items, low, high, upward))
    x -= (x - left).min() - MARGIN
    return Layout(x=x, y=y + MARGIN, depth=depth, crossings=count_crossings(x, y, low, high))


def _neighbour_means(x: np.ndarray, items: np.ndarray, low: np.ndarray, high: np.ndarray, below: bool) -> np.ndarray:
    """The mean ``x`` of each item's neighbours below (``below``) or above; its own ``x`` where it has none."""
    mine, other = (high, low) if below else (low, high)
    sums = np.bincount(mine, weights=x[other], minlength=x.size)[items]
    counts = np.bincount(mine, minlength=x.size)[items]
    return np.where(counts > 0, sums / np.maximum(counts, 1), x[items])


def _packed(items: np.ndarray, left: np.ndarray, right: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Positions in the given order, as near ``wanted`` as possible (least squares) with each item at least
    ``GAP`` clear of the one before: pool-adjacent-violators on the positions less the required offsets."""
    offsets = np.concatenate([[0.0], np.cumsum(right[items[:-1]] + left[items[1:]] + GAP)])
    target = wanted - offsets
    blocks: list[list[float]] = []  # [mean, count]
    for value in target:
        blocks.append([float(value), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, count = blocks.pop()
            blocks[-1] = [
                (blocks[-1][0] * blocks[-1][1] + mean * count) / (blocks[-1][1] + count),
                blocks[-1][1] + count,
            ]
    fitted = np.repeat([b[0] for b in blocks], [int(b[1]) for b in blocks])
    return fitted + offsets


def render(hg: Hypergraph, picture: Drawing, path: str) -> None:
    """Draw ``picture`` of ``hg`` into ``path`` (``.svg``, ``.png`` or ``.pdf``), byte for byte the same on every
    run: layers bottom (leaves) to top (goal), boxes for nodes, a dot per hyperedge with an arrow from each
    tail (numbered when it has several) and one to its head, red for the highlighted derivation."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from hypertune.cli.plots import pyplot, save_figure

    plt = pyplot()  # SVG text as text, a fixed hash salt: the same picture, the same bytes
    measure = Figure()
    renderer = FigureCanvasAgg(measure).get_renderer()

    def size(lines: tuple[str, ...], points: float) -> tuple[float, float]:
        box = measure.text(0, 0, "\n".join(lines), fontsize=points).get_window_extent(renderer)
        return box.width / measure.dpi, box.height / measure.dpi

    boxes = np.array([size(lines, NODE_FONT) for lines in picture.nodes]).reshape(-1, 2) + 2 * PAD
    labels = np.array([size(lines, EDGE_FONT) for lines in picture.edges]).reshape(-1, 2) + 2 * LABEL_PAD
    title_width, title_height = size((picture.title,), TITLE_FONT) if picture.title else (0.0, 0.0)
    half = np.concatenate([boxes[:, 0], np.maximum(labels[:, 0], 2 * DOT)]) / 2
    where = layout(hg, half, half)
    width = max(float((where.x + half).max()) + MARGIN, title_width + 2 * MARGIN)
    top = float(where.y.max()) + boxes[:, 1].max() / 2 + MARGIN + title_height + (0.1 if picture.title else 0.0)
    figure = plt.figure(figsize=(width, top + MARGIN))
    axis = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    axis.set_xlim(0, width)
    axis.set_ylim(-MARGIN, top)
    axis.set_axis_off()
    if picture.title:
        axis.text(width / 2, top - MARGIN / 2, picture.title, fontsize=TITLE_FONT, ha="center", va="top")
    for v in range(hg.num_nodes):
        _draw_node(axis, where.x[v], where.y[v], boxes[v], picture.nodes[v], v == hg.goal)
    for e in range(hg.num_edges):
        _draw_edge(axis, hg, e, picture, where, boxes, labels[e])
    save_figure(figure, path, dpi=_dpi(width, top + MARGIN))


def _draw_node(axis: Any, x: float, y: float, box: np.ndarray, lines: tuple[str, ...], goal: bool) -> None:
    """A node's box (doubled for the goal) and its text."""
    from matplotlib.patches import FancyBboxPatch

    w, h = float(box[0]), float(box[1])
    for grow in (0.0, 0.035) if goal else (0.0,):
        axis.add_patch(
            FancyBboxPatch(
                (x - w / 2 - grow, y - h / 2 - grow),
                w + 2 * grow,
                h + 2 * grow,
                boxstyle="round,pad=0,rounding_size=0.04",
                facecolor="white" if grow == 0 else "none",
                edgecolor="black",
                linewidth=0.8,
                zorder=3,
            )
        )
    axis.text(x, y, "\n".join(lines), fontsize=NODE_FONT, ha="center", va="center", zorder=4)


TAIL_NUMBER_BOX = {"boxstyle": "circle,pad=0.1", "facecolor": "white", "edgecolor": "none"}


def _draw_edge(
    axis: Any, hg: Hypergraph, e: int, picture: Drawing, where: Layout, boxes: np.ndarray, label: np.ndarray
) -> None:
    """Hyperedge ``e`` at its place in the layout: its label in a box with the edge's dot on top, an arrow from
    the top of each tail's box to the label (numbered 1, 2, ... when there are several) and one from the dot
    to the bottom of its head's box."""
    from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

    n = hg.num_nodes
    x, y = float(where.x[n + e]), float(where.y[n + e])
    w, h = float(label[0]), float(label[1])
    dot = (x, y + h / 2 + DOT)
    marked = e in picture.highlight
    color = "red" if marked else "black"
    weight = 2.0 if marked else 0.8
    if picture.widths is not None and not marked:
        weight = 0.5 + 3.0 * float(picture.widths[e])

    def arrow(start: tuple[float, float], end: tuple[float, float], size: float) -> None:
        patch = FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=size, shrinkA=0, shrinkB=0)
        patch.set(color=color, linewidth=weight, zorder=1)
        axis.add_patch(patch)

    tails = hg.edge_tails(e)
    for i, t in enumerate(tails, start=1):
        start = np.array([where.x[t], where.y[t] + boxes[t, 1] / 2])
        end = np.array([x + float(np.clip(0.4 * (start[0] - x), -0.35 * w, 0.35 * w)), y - h / 2])
        arrow((float(start[0]), float(start[1])), (float(end[0]), float(end[1])), 7)
        if tails.size > 1:
            length = max(float(np.hypot(*(end - start))), 1e-9)
            mark = end + (start - end) / length * min(0.14, 0.5 * length)
            axis.text(*mark, str(i), fontsize=TAIL_FONT, color="tab:blue", ha="center", va="center", zorder=2,
                      bbox=TAIL_NUMBER_BOX)  # fmt: skip
    head = int(hg.head[e])
    arrow((dot[0], dot[1] + DOT), (float(where.x[head]), float(where.y[head] - boxes[head, 1] / 2)), 8)
    axis.add_patch(Circle(dot, DOT, color=color, zorder=2))
    axis.add_patch(
        FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0,rounding_size=0.03", facecolor="white",
                       edgecolor="lightgrey" if not marked else "red", linewidth=0.5, zorder=2)
    )  # fmt: skip
    axis.text(x, y, "\n".join(picture.edges[e]), fontsize=EDGE_FONT, color=color, ha="center", va="center", zorder=3)


def _dpi(width: float, height: float) -> int:
    """150 dpi for PNG, less for pictures so large that Agg would refuse them (2^16 pixels a side)."""
    return int(min(150.0, 30000.0 / max(width, height)))
