"""The pictures of chapter 5 (docs/tutorial/05-hope-fear-oracles.md), one SVG per call, chosen by the file's name:

    python docs/tutorial/pictures/05_hope_fear.py docs/tutorial/images/05-hope-fear.svg  # the 27, by brute force
    python docs/tutorial/pictures/05_hope_fear.py docs/tutorial/images/05-search.svg     # forest vs exact hope

05-hope-fear: every derivation of the toy forest as a point (BLEU+1 against the reference, model score w·f),
with the lines of equal hope score w·f + BLEU+1 through the exact hope and through the forest search's hope
(the vertical gap between them is the search error), and the line of equal fear score w·f − BLEU+1 through the
fear (Chiang 2012, section 4). 05-search: the forest drawn twice by hypertune's own renderer
(``hypertune.cli.draw_layout``), the forest search's hope in red on the left, the exact hope on the right,
with the partial hope scores the search compares at node 3.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from hypertune.algorithms import enumerate_derivations
from hypertune.cli.draw_layout import EDGE_FONT, LABEL_PAD, MARGIN, NODE_FONT, PAD, _draw_edge, _draw_node, layout
from hypertune.cli.plots import pyplot, save_figure
from hypertune.formats import read_graphs, read_weights
from hypertune.formats.dot import Drawing, drawing
from hypertune.hypergraph import Hypergraph
from hypertune.metrics import get_metric
from hypertune.tuners import TuningSet
from hypertune.tuners.hope_fear import Gain, HopeFearDecoder, node_fractions

FOREST = "fixtures/toy-forest.json"
WEIGHTS = "fixtures/toy-forest.weights"
REFERENCE = "the small house"


def brute_force() -> tuple[Hypergraph, list[Any], list[str], np.ndarray, np.ndarray]:
    """The toy forest, its 27 derivations, their strings, model scores w·f and BLEU+1 against the reference."""
    forest = read_graphs(FOREST)[0]
    weights = read_weights(WEIGHTS)
    bleu1 = get_metric("bleu+1", tokenize="none")
    derivations = enumerate_derivations(forest)
    texts = [" ".join(forest.derivation_words(d)) for d in derivations]
    scores = weights.edge_scores(forest)
    model = np.array([scores[d.edges()].sum() for d in derivations])
    gain = np.array([bleu1.sentence_score(t, [REFERENCE]) for t in texts])
    return forest, derivations, texts, model, gain


def forest_search_hope(forest: Hypergraph) -> Any:
    """The hope of hypertune's approximate forest search (``HopeFearDecoder``, BLEU+1)."""
    weights = read_weights(WEIGHTS)
    tuning_set = TuningSet([forest], [[REFERENCE]], get_metric("bleu+1", tokenize="none"))
    vector = weights.vector(forest.feature_space, len(forest.feature_space))
    return HopeFearDecoder(tuning_set).hope_fear(0, vector, Gain("bleu+1")).hope


def hope_fear(out: str) -> None:
    forest, _, texts, model, gain = brute_force()
    hope, fear, best = (int(np.argmax(x)) for x in (model + gain, model - gain, model))
    assert hope == fear == best  # what the annotation says
    found = texts.index(" ".join(forest.vocabulary.words(forest_search_hope(forest).words)))
    bottom = -6.0  # the top of the cloud, where hope and fear are; the rest is counted
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6.4, 4.6))
    shown = model >= bottom
    axis.plot(gain[shown], model[shown], "o", color="grey", ms=4, label="the derivations (brute force)")
    x = np.array([0.0, 1.1])
    exact_level, found_level = model[hope] + gain[hope], model[found] + gain[found]
    axis.plot(x, exact_level - x, "--", color="C0", label=f"w·f + B = {exact_level:.2f}: through the exact hope")
    axis.plot(x, found_level - x, ":", color="C0", label=f"w·f + B = {found_level:.2f}: through the forest search's")
    axis.plot(
        x,
        model[fear] - gain[fear] + x,
        "-",
        color="C3",
        lw=0.8,
        label=f"w·f − B = {model[fear] - gain[fear]:.2f}: through the fear",
    )
    axis.annotate("", (0.05, found_level - 0.05), (0.05, exact_level - 0.05),
                  arrowprops={"arrowstyle": "<->", "color": "C0"})  # fmt: skip
    axis.annotate(f"search error {exact_level - found_level:.2f}", (0.07, (exact_level + found_level) / 2 - 0.1),
                  fontsize=8, color="C0")  # fmt: skip
    axis.plot(gain[hope], model[hope], "o", color="C3", ms=8)
    axis.annotate(f"{texts[hope]}: exact hope, fear and model-best\n(w·f {model[hope]:.2f}, B {gain[hope]:.3f})",
                  (gain[hope], model[hope]), (0.5, -2.75), fontsize=8,
                  arrowprops={"arrowstyle": "->", "color": "grey"})  # fmt: skip
    axis.plot(gain[found], model[found], "s", color="C0", ms=7)
    axis.annotate(f"{texts[found]}: the forest\nsearch's hope (w·f {model[found]:.2f}, B 1)",
                  (gain[found], model[found]), (0.71, -4.75), fontsize=8,
                  arrowprops={"arrowstyle": "->", "color": "grey"})  # fmt: skip
    axis.annotate(
        f"{int((~shown).sum())} more below, down to w·f {model.min():.2f}",
        (1.08, bottom + 0.08),
        fontsize=8,
        ha="right",
    )
    axis.set_xlim(0, 1.1)
    axis.set_ylim(bottom, -2.4)
    axis.set_xlabel("B = BLEU+1 against 'the small house'")
    axis.set_ylabel("model score w·f")
    axis.set_title("Toy forest: hope = argmax w·f + B, fear = argmax w·f − B", fontsize=10)
    axis.legend(loc="lower left", fontsize=7)
    save_figure(figure, out)


def measured(hg: Hypergraph, picture: Drawing) -> tuple[Any, np.ndarray, np.ndarray, float, float]:
    """The layout of ``picture`` as ``hypertune draw --renderer builtin`` makes it: positions, box and label
    sizes (inches), and the panel's width and height."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    scratch = Figure()
    renderer = FigureCanvasAgg(scratch).get_renderer()

    def size(lines: tuple[str, ...], points: float) -> tuple[float, float]:
        box = scratch.text(0, 0, "\n".join(lines), fontsize=points).get_window_extent(renderer)
        return box.width / scratch.dpi, box.height / scratch.dpi

    boxes = np.array([size(lines, NODE_FONT) for lines in picture.nodes]).reshape(-1, 2) + 2 * PAD
    labels = np.array([size(lines, EDGE_FONT) for lines in picture.edges]).reshape(-1, 2) + 2 * LABEL_PAD
    half = np.concatenate([boxes[:, 0], labels[:, 0]]) / 2
    where = layout(hg, half, half)
    width = float((where.x + half).max()) + MARGIN
    height = float(where.y.max()) + boxes[:, 1].max() / 2 + MARGIN
    return where, boxes, labels, width, height


def panel(axis: Any, hg: Hypergraph, picture: Drawing, drawn: tuple[Any, np.ndarray, np.ndarray, float, float]) -> None:
    """``picture`` drawn on ``axis`` (whose data units are inches) at the layout ``drawn``."""
    where, boxes, labels, width, height = drawn
    for v in range(hg.num_nodes):
        _draw_node(axis, where.x[v], where.y[v], boxes[v], picture.nodes[v], v == hg.goal)
    for e in range(hg.num_edges):
        _draw_edge(axis, hg, e, picture, where, boxes, labels[e])
    axis.set_xlim(0, width)
    axis.set_ylim(-MARGIN, height)
    axis.set_axis_off()


def search(out: str) -> None:
    forest, derivations, texts, model, gain = brute_force()
    weights = read_weights(WEIGHTS)
    scores = weights.edge_scores(forest)
    found = forest_search_hope(forest)
    exact = int(np.argmax(model + gain))
    bleu1 = get_metric("bleu+1", tokenize="none")
    partial_length = len(REFERENCE.split()) * node_fractions(forest)[3]
    partial = {}  # node 3's in-edges: the partial hope score the search compares
    for e, text, edges in ((6, "small house", [6, 2, 4]), (7, "house small", [7, 2, 4]), (8, "cottage", [8])):
        stats = bleu1.stats(text, [REFERENCE])
        stats[-1] = partial_length
        partial[e] = scores[edges].sum() + float(Gain("bleu+1").score(stats))
    left_values = [f"w·f {s:.3g}" + (f"\npartial hope {partial[e]:.2f}" if e in partial else "") for e, s in
                   enumerate(scores)]  # fmt: skip
    right_values = [f"w·f {s:.3g}" for s in scores]
    found_text = " ".join(forest.vocabulary.words(found.words))
    left = drawing(forest, found.derivation.edges(), left_values)
    right = drawing(forest, derivations[exact].edges(), right_values)
    plt = pyplot()
    drawn = [measured(forest, picture) for picture in (left, right)]
    title = 0.45  # inches above each panel for its title
    widths = [d[3] for d in drawn]
    height = max(d[4] for d in drawn)
    figure = plt.figure(figsize=(sum(widths), height + title))
    axes = []
    for i, (picture, d) in enumerate(zip((left, right), drawn, strict=True)):
        axis = figure.add_axes((sum(widths[:i]) / sum(widths), 0.0, d[3] / sum(widths), d[4] / (height + title)))
        panel(axis, forest, picture, d)
        axes.append(axis)
    axes[0].set_title(f"forest search: hope = {found_text}\nw·f + B = {found.model_score:.2f} + {found.gain:.2f} = "
                      f"{found.model_score + found.gain:.2f}", fontsize=9)  # fmt: skip
    axes[1].set_title(f"exact (27 derivations): hope = {texts[exact]}\nw·f + B = {model[exact]:.2f} + "
                      f"{gain[exact]:.2f} = {model[exact] + gain[exact]:.2f}", fontsize=9)  # fmt: skip
    save_figure(figure, out)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        raise SystemExit(__doc__)
    path = argv[0]
    name = Path(path).stem
    if name == "05-hope-fear":
        hope_fear(path)
    elif name == "05-search":
        search(path)
    else:
        raise SystemExit(f"{path}: no such picture in chapter 5 (05-hope-fear.svg, 05-search.svg)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
