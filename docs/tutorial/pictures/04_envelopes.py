"""The pictures of chapter 4 (docs/tutorial/04-envelopes.md), one SVG per call, chosen by the file's name:

    python docs/tutorial/pictures/04_envelopes.py docs/tutorial/images/04-lines.svg       # survey Fig. 5
    python docs/tutorial/pictures/04_envelopes.py docs/tutorial/images/04-sweep-2.svg     # Fig. 7, step 2
    python docs/tutorial/pictures/04_envelopes.py docs/tutorial/images/04-minkowski.svg   # envelopes on a forest
    python docs/tutorial/pictures/04_envelopes.py docs/tutorial/images/04-surfaces.svg    # error surfaces

Every number is computed by hypertune from the chapter's data files (Neubig & Watanabe 2016, section 5.1):
the envelopes by the envelope semiring, the sweep's intermediate envelopes by ``upper_envelope`` of the
lines swept so far (what the sweep holds after each step), the BLEU statistics by hypertune's metrics.
Drawn with hypertune's deterministic matplotlib set-up (``hypertune.cli.plots``): same inputs, same bytes.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import Any, cast

import numpy as np

from hypertune.algorithms import enumerate_derivations, inside
from hypertune.algorithms.semiring_values import named_semiring
from hypertune.cli.plots import pyplot, save_figure
from hypertune.formats import read_graphs, read_weights
from hypertune.hypergraph import Derivation, Hypergraph
from hypertune.metrics import get_metric
from hypertune.semirings.envelope import Envelope, Line, upper_envelope
from hypertune.weights import Weights

EQ42 = "docs/tutorial/data/04-eq42.json"
FOREST = "docs/tutorial/data/04-forest.json"
START = "docs/tutorial/data/04-start.weights"
REFERENCES = "docs/tutorial/data/04-corpus.ref"
DIRECTION = Weights({"tm": 1.0})
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")
LABEL_BOX = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}


def goal_envelope(graph: Hypergraph) -> Envelope:
    """The goal's envelope along DIRECTION from START (the envelope semiring's inside pass)."""
    return node_envelopes(graph)[graph.goal]


def node_envelopes(graph: Hypergraph) -> list[Envelope]:
    """Every node's envelope along DIRECTION from START (the envelope semiring's inside pass)."""
    named = named_semiring("envelope", graph, read_weights(START), DIRECTION)
    return cast(list[Envelope], inside(graph, named.semiring, named.values))


def words(graph: Hypergraph, line: Line) -> str:
    """The translation of a line's derivation."""
    assert isinstance(line.derivation, Derivation)
    return " ".join(graph.derivation_words(line.derivation))


def candidate_lines(graph: Hypergraph) -> list[tuple[str, Line]]:
    """Every derivation's line (its edges' intercepts and slopes summed), named by its words."""
    a, b = read_weights(START).edge_scores(graph), DIRECTION.edge_scores(graph)
    out = []
    for derivation in enumerate_derivations(graph):
        edges = derivation.edges()
        line = Line(-math.inf, float(b[edges].sum()), float(a[edges].sum()), derivation)
        out.append((" ".join(graph.derivation_words(derivation)), line))
    return out


def draw_envelope(axes: Any, envelope: Envelope, xs: tuple[float, float], **style: Any) -> None:
    """The envelope as a thick polyline over ``xs``, its breakpoints as dots."""
    points = [xs[0], *(line.left for line in envelope[1:] if xs[0] < line.left < xs[1]), xs[1]]
    ys = [max(line.intercept + line.slope * x for line in envelope) for x in points]
    axes.plot(points, ys, color=style.get("color", "black"), linewidth=style.get("linewidth", 2.6), zorder=3)
    inner = [line.left for line in envelope[1:] if xs[0] < line.left < xs[1]]
    axes.plot(inner, ys[1:-1], "o", color=style.get("color", "black"), markersize=4, zorder=4)


def draw_lines(axes: Any, lines: list[tuple[str, Line]], xs: tuple[float, float], faded: frozenset[str]) -> None:
    """Every candidate line, labelled at its right end; the names in ``faded`` grey and dashed."""
    grid = np.array(xs)
    for i, (name, line) in enumerate(lines):
        grey = name in faded
        colour = "0.75" if grey else COLOURS[i % len(COLOURS)]
        axes.plot(
            grid, line.intercept + line.slope * grid, color=colour, linewidth=1.2, linestyle="--" if grey else "-"
        )
        y = line.intercept + line.slope * xs[1]
        axes.annotate(
            name, (xs[1], y), xytext=(3, 0), textcoords="offset points", va="center", fontsize=8, color=colour
        )


def survey_lines() -> list[tuple[str, Line]]:
    """Eq. (42)'s candidates c1..c4 in the order of the file (one edge each)."""
    return [(f"c{k}", line) for k, (_, line) in enumerate(candidate_lines(read_graphs(EQ42)[0]), 1)]


def lines_picture(path: str) -> None:
    """Survey Fig. 5: the four lines of eq. (42), their envelope and its breakpoints."""
    plt = pyplot()
    lines, xs = survey_lines(), (-0.5, 5.5)
    envelope = upper_envelope(line for _, line in lines)
    figure, axes = plt.subplots(figsize=(6, 3.6))
    draw_lines(axes, lines, xs, frozenset())
    draw_envelope(axes, envelope, xs)
    for k, line in enumerate(envelope[1:]):
        y = line.intercept + line.slope * line.left
        offset = (0, -18) if k == 1 else (8, 8)  # 3.333 and 3.75 are close: one below, one above
        axes.annotate(f"{line.left:.4g}", (line.left, y), xytext=offset, textcoords="offset points",
                      ha="center" if k == 1 else "left", bbox=LABEL_BOX)  # fmt: skip
    finish(axes, "eq. (42): a + γ·b for four candidates, and their upper envelope")
    save_figure(figure, path)


def sweep_picture(path: str, step: int) -> None:
    """Survey Fig. 7 after ``step`` lines (by increasing slope): the envelope H of the lines swept so far."""
    plt = pyplot()
    lines, xs = survey_lines(), (-0.5, 5.5)
    order = sorted(lines, key=lambda item: (item[1].slope, item[1].intercept))
    if not 1 <= step <= len(order):
        raise SystemExit(f"{path}: the sweep has steps 1 to {len(order)}, not {step}")
    swept = order[:step]
    hull = upper_envelope(line for _, line in swept)
    name, new = swept[-1]
    figure, axes = plt.subplots(figsize=(6, 3.6))
    draw_lines(axes, lines, xs, frozenset(n for n, _ in order[step:]))
    draw_envelope(axes, hull, xs)
    if step > 1:
        x = hull[-1].left
        axes.plot([x], [new.intercept + new.slope * x], "o", color="crimson", markersize=7, zorder=5)
        axes.annotate(f"γ({name}) = {x:.4g}", (x, new.intercept + new.slope * x), xytext=(8, 12), ha="left",
                      textcoords="offset points", color="crimson", bbox=LABEL_BOX)  # fmt: skip
    title = f"step {step}: {name}" + (" starts H at γ = −∞" if step == 1 else f" takes over at γ = {hull[-1].left:.4g}")
    finish(axes, title)
    save_figure(figure, path)


def minkowski_picture(path: str) -> None:
    """The forest's envelopes: X:das, X:haus, and at S the Minkowski sum of the two (glue) and the phrase."""
    plt = pyplot()
    forest, xs = read_graphs(FOREST)[0], (-0.5, 4.5)
    values = node_envelopes(forest)
    a, b = read_weights(START).edge_scores(forest), DIRECTION.edge_scores(forest)
    figure, panels = plt.subplots(1, 3, figsize=(10, 3.4), sharey=True)
    labels = forest.node_labels or []
    for node, axes in enumerate(panels):
        if node == forest.goal:
            lines = candidate_lines(forest)
            kinds = ["phrase" if forest.edge_tails(d.edge).size == 0 else "glue" for d in enumerate_derivations(forest)]
            named_lines = [(f"{text} ({kind})", line) for (text, line), kind in zip(lines, kinds, strict=True)]
            draw_lines(axes, named_lines, xs, frozenset())
            for x in sorted({line.left for v in values[: forest.goal] for line in v[1:]}):
                axes.axvline(x, color="0.6", linestyle=":", linewidth=1)
        else:
            edges = list(forest.in_edges(node))
            edge_lines = [(forest.target_text(e), Line(-math.inf, float(b[e]), float(a[e]))) for e in edges]
            draw_lines(axes, edge_lines, xs, frozenset())
        draw_envelope(axes, values[node], xs)
        axes.set_title(f"{labels[node]}" + (": ⊗ of the two, ⊕ the phrase" if node == forest.goal else ": ⊕"))
        axes.set_xlim(xs[0], xs[1] + 1.6)
        axes.set_xlabel("γ")
        axes.grid(alpha=0.3)
    panels[0].set_ylabel("score a + γ·b")
    figure.tight_layout()
    save_figure(figure, path)


def surfaces_picture(path: str) -> None:
    """Sentence BLEU+1 of each sentence's model-best translation, and corpus BLEU of the summed statistics."""
    plt = pyplot()
    graphs = read_graphs([EQ42, FOREST])
    references = Path(REFERENCES).read_text(encoding="utf-8").splitlines()
    bleu, bleu1 = get_metric("bleu"), get_metric("bleu+1")
    envelopes = [goal_envelope(g) for g in graphs]
    xs = (-0.5, 5.0)
    figure, rows = plt.subplots(3, 1, figsize=(6.4, 6.2), sharex=True)
    points = sorted({line.left for env in envelopes for line in env[1:]})
    starts, ends = [-math.inf, *points], [*points, math.inf]
    corpus = []
    for left in starts:
        stats = np.zeros(bleu.stats_size)
        for graph, env, reference in zip(graphs, envelopes, references, strict=True):
            line = [x for x in env if x.left <= left][-1]
            stats = stats + bleu.stats(words(graph, line), [reference])
        corpus.append(100 * float(bleu.score(stats)))
    best = int(np.argmax(corpus))
    for s, (graph, env, reference) in enumerate(zip(graphs, envelopes, references, strict=True)):
        pieces = []
        for k, line in enumerate(env):
            right = env[k + 1].left if k + 1 < len(env) else math.inf
            text = words(graph, line)
            pieces.append((line.left, right, 100 * bleu1.sentence_score(text, [reference]), text))
        step_plot(rows[s], pieces, xs, f"sentence {s} (reference “{reference}”): BLEU+1")
    step_plot(rows[2], [(x, y, v, "") for x, y, v in zip(starts, ends, corpus, strict=True)], xs, "corpus BLEU")
    for axes in rows:
        axes.axvspan(max(starts[best], xs[0]), min(ends[best], xs[1]), color="gold", alpha=0.3, zorder=0)
    rows[2].set_xlabel("γ (step along tm)")
    figure.tight_layout()
    save_figure(figure, path)


def step_plot(axes: Any, pieces: list[tuple[float, float, float, str]], xs: tuple[float, float], title: str) -> None:
    """A step function: (from, to, value, label) pieces clipped to ``xs``, each labelled above its step."""
    for left, right, value, label in pieces:
        lo, hi = max(left, xs[0]), min(right, xs[1])
        if lo >= hi:
            continue
        axes.plot([lo, hi], [value, value], color="black", linewidth=2)
        if label:
            axes.annotate(label, ((lo + hi) / 2, value), xytext=(0, 4), textcoords="offset points", ha="center",
                          fontsize=7)  # fmt: skip
        if math.isfinite(left) and left > xs[0]:
            axes.axvline(left, color="0.6", linestyle=":", linewidth=1)
    axes.set_ylim(-5, 118)
    axes.set_title(title, fontsize=9)
    axes.grid(alpha=0.3)


def finish(axes: Any, title: str) -> None:
    axes.set_xlabel("γ")
    axes.set_ylabel("score a + γ·b")
    axes.set_ylim(-2.2, 3.2)
    axes.set_xlim(-0.5, 6.0)
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    axes.figure.tight_layout()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        raise SystemExit(__doc__)
    path = argv[0]
    name = Path(path).stem  # .svg for the chapter; .png works too
    sweep = re.fullmatch(r"04-sweep-(\d+)", name)
    if name == "04-lines":
        lines_picture(path)
    elif sweep:
        sweep_picture(path, int(sweep.group(1)))
    elif name == "04-minkowski":
        minkowski_picture(path)
    elif name == "04-surfaces":
        surfaces_picture(path)
    else:
        raise SystemExit(f"{path}: no such picture in chapter 4 (04-lines, 04-sweep-K, 04-minkowski, 04-surfaces)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
