"""The builtin renderer of ``hypertune draw`` (``cli/draw_layout.py``): layers against depths worked by hand,
every head above its tails, layers without overlaps, crossings counted against pictures drawn by hand, and
SVG that is the same bytes on every run and holds its labels as text."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from support.paths import FIXTURES

from hypertune.cli import main
from hypertune.cli.draw_layout import GAP, count_crossings, layout, node_depths, render
from hypertune.formats.dot import drawing
from hypertune.hypergraph import HypergraphBuilder

pytest.importorskip("matplotlib")

FOREST = str(FIXTURES / "toy-forest.json")
WEIGHTS = str(FIXTURES / "toy-forest.weights")


def tiny_graph():
    """a, b axioms; c <- (a, b); d <- (c) and d <- (a) (a long edge); goal g <- (d, b). By hand: a and b are
    made by axioms only (depth 0), c one above its deepest tail (1), d above c (2: the longest way up, not the
    edge from a), g above d (3)."""
    b = HypergraphBuilder()
    a, bb, c, d, g = (b.add_node(label) for label in "abcdg")
    b.add_edge(a, [], {"x": -1.0}, "A")
    b.add_edge(bb, [], {"x": -2.0}, "B")
    b.add_edge(bb, [], {"x": -0.5}, "B2")
    b.add_edge(c, [a, bb], {"x": 1.0}, "[2] [1]")
    b.add_edge(d, [c], {}, "[1]")
    b.add_edge(d, [a], {}, "[1] D")
    b.add_edge(g, [d, bb], {}, "[1] [2]")
    return b.build_in_order()


def test_layers_are_the_depths_worked_by_hand_and_every_head_is_above_its_tails():
    hg = tiny_graph()
    assert node_depths(hg).tolist() == [0, 0, 1, 2, 3]
    half = np.full(hg.num_nodes + hg.num_edges, 0.2)
    where = layout(hg, half, half)
    assert where.depth.tolist() == [0, 0, 1, 2, 3]
    n = hg.num_nodes
    for e in range(hg.num_edges):
        head, dot = int(hg.head[e]), n + e
        assert where.y[head] > where.y[dot], e
        for t in hg.edge_tails(e):
            assert where.y[dot] > where.y[int(t)], (e, int(t))
    # one height per layer, in the order of the depths: a and b share the bottom row
    heights = where.y[:n]
    assert heights[0] == heights[1] < heights[2] < heights[3] < heights[4]
    # no two items of a row overlap: neighbours stand at least GAP clear of each other
    for row in np.unique(where.y):
        xs = np.sort(where.x[where.y == row])
        assert np.all(np.diff(xs) >= 0.4 + GAP - 1e-9)


def test_crossings_are_counted_as_drawn_by_hand():
    # two segments forming an X cross once; two sharing an end, or side by side, do not
    x = np.array([0.0, 1.0, 0.0, 1.0, 2.0])
    y = np.array([0.0, 0.0, 1.0, 1.0, 1.0])
    assert count_crossings(x, y, np.array([0, 1]), np.array([3, 2])) == 1
    assert count_crossings(x, y, np.array([0, 0]), np.array([2, 3])) == 0
    assert count_crossings(x, y, np.array([0, 1]), np.array([2, 3])) == 0
    # three lines from the bottom row, all reversed at the top, cross pairwise: 3 crossings
    x = np.array([0.0, 1.0, 2.0, 0.0, 1.0, 2.0])
    y = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    assert count_crossings(x, y, np.array([0, 1, 2]), np.array([5, 4, 3])) == 3


def test_a_graph_with_a_plane_layered_drawing_is_drawn_without_crossings():
    """Two chains side by side, listed crossed (the left leaf feeds the right node): the sweeps untangle them
    (drawn by hand: left leaf under its own parent, no arrow crosses)."""
    b = HypergraphBuilder()
    p, q, r, s, g = (b.add_node() for _ in range(5))
    b.add_edge(p, [], {}, "p")
    b.add_edge(q, [], {}, "q")
    b.add_edge(r, [q], {}, "[1]")
    b.add_edge(s, [p], {}, "[1]")
    b.add_edge(g, [r, s], {}, "[1] [2]")
    hg = b.build_in_order()
    half = np.full(hg.num_nodes + hg.num_edges, 0.2)
    assert layout(hg, half, half).crossings == 0


def test_builtin_svg_is_the_same_bytes_every_time_and_holds_its_labels(tmp_path):
    hg = tiny_graph()
    picture = drawing(hg, highlight=[0, 3], edge_values=[f"w·f {i}" for i in range(hg.num_edges)], title="tiny")
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    render(hg, picture, str(first))
    render(hg, picture, str(second))
    assert first.read_bytes() == second.read_bytes()
    svg = first.read_text()
    assert svg.lstrip().startswith("<?xml") and "<dc:date>" not in svg
    texts = re.findall(r"<text[^>]*>([^<]*)", svg)
    for label in ("0 a", "4 g (goal)", "[2] [1]", "[1] D", "w·f 6", "tiny"):
        assert label in texts, label
    assert texts.count("1") == texts.count("2") == 2  # the tail numbers of the two edges with two tails


def tails_of_fixture() -> list[list[int]]:
    """The tails of every edge as the fixture's JSON lists them (read without hypertune)."""
    return [edge["tails"] for edge in json.loads((FIXTURES / "toy-forest.json").read_text())["edges"]]


def test_toy_forest_drawn_by_the_command_shows_every_label(tmp_path, capsys):
    out = tmp_path / "forest.svg"
    assert (
        main(["draw", FOREST, "--weights", WEIGHTS, "--renderer", "builtin", "--show", "inside", "-o", str(out)]) == 0
    )
    assert capsys.readouterr().err == ""
    texts = re.findall(r"<text[^>]*>([^<]*)", out.read_text())
    spec = json.loads((FIXTURES / "toy-forest.json").read_text())
    for v, label in enumerate(spec["labels"]):
        assert any(t.startswith(f"{v} {label}") for t in texts), label
    for edge in spec["edges"]:
        assert edge["target"] in texts, edge["target"]
    # the edge "the": tm -0.4 * 1.0 + lm -1.0 * 0.5 = -0.9 (the fixture's weights, by hand)
    assert "w·f -0.9" in texts
    assert "log inside -2.23" in texts  # the goal (tests/cli/test_draw.py checks the DOT text the same way)
    numbers = sum(len(tails) for tails in tails_of_fixture() if len(tails) > 1)
    assert sum(t in ("1", "2") for t in texts) == numbers == 6


def test_png_and_pdf(tmp_path):
    for kind, magic in (("png", b"\x89PNG"), ("pdf", b"%PDF")):
        out = tmp_path / f"forest.{kind}"
        assert main(["draw", FOREST, "-w", WEIGHTS, "--renderer", "builtin", "-o", str(out)]) == 0
        assert out.read_bytes().startswith(magic)
