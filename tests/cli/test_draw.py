"""``hypertune draw``: the DOT text is read back by a small parser and checked against the graph (every
node, every hyperedge with an arrow per tail and one to its head, tails numbered in order, the best derivation
in red, posteriors and scores as labels, what is shown without weights); Graphviz images are checked only
where it is installed (the builtin renderer: test_draw_layout.py)."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess

from support.paths import FIXTURES

from hypertune.algorithms import edge_posteriors, viterbi
from hypertune.cli import main
from hypertune.formats import read_graphs, read_weights

FOREST = str(FIXTURES / "toy-forest.json")
WEIGHTS = str(FIXTURES / "toy-forest.weights")
STATEMENT = re.compile(r"^\s*(\w+)(?:\s*->\s*(\w+))?\s*(?:\[(.*)\])?;\s*$")


def parse_dot(text: str) -> tuple[dict[str, str], list[tuple[str, str, str]]]:
    """Node statements (name -> attributes) and edge statements (from, to, attributes) of our DOT output;
    fails on anything else (unbalanced braces, unknown lines)."""
    lines = text.strip().splitlines()
    assert lines[0] == "digraph hypergraph {" and lines[-1] == "}"
    nodes, edges = {}, []
    for line in lines[1:-1]:
        if line.strip().startswith(("rankdir", "node [", "label=")):
            continue
        match = STATEMENT.match(line)
        assert match, f"not a DOT statement: {line!r}"
        source, target, attributes = match.groups()
        if target:
            edges.append((source, target, attributes or ""))
        else:
            nodes[source] = attributes or ""
    return nodes, edges


def draw(tmp_path, *args: str) -> str:
    out = tmp_path / "graph.dot"
    assert main(["draw", FOREST, "--weights", WEIGHTS, "-o", str(out), *args]) == 0
    return out.read_text()


def test_every_node_and_hyperedge_is_drawn_with_the_best_derivation_marked(tmp_path):
    hg = read_graphs(FOREST)[0]
    nodes, edges = parse_dot(draw(tmp_path))
    assert {f"n{v}" for v in range(hg.num_nodes)} | {f"e{e}" for e in range(hg.num_edges)} == set(nodes)
    arrows = sum(hg.edge_tails(e).size + 1 for e in range(hg.num_edges))
    assert len(edges) == arrows
    for e in range(hg.num_edges):
        into = [(s, t) for s, t, _ in edges if t == f"e{e}"]
        assert sorted(s for s, _ in into) == sorted(f"n{int(u)}" for u in hg.edge_tails(e))
        assert [t for s, t, _ in edges if s == f"e{e}"] == [f"n{int(hg.head[e])}"]
    best = set(viterbi(hg, read_weights(WEIGHTS)).derivation.edges())
    red = {int(name[1:]) for name, attributes in nodes.items() if name.startswith("e") and "red" in attributes}
    assert red == best


def test_posteriors_label_the_edges(tmp_path):
    hg = read_graphs(FOREST)[0]
    _, edges = parse_dot(draw(tmp_path, "--show", "posteriors"))
    posteriors = edge_posteriors(hg, read_weights(WEIGHTS))
    for e in range(hg.num_edges):
        label = next(a for s, _, a in edges if s == f"e{e}")
        assert f"p {posteriors[e]:.3f}" in label


def test_node_scores_are_named_log_inside(tmp_path):
    nodes, _ = parse_dot(draw(tmp_path, "--show", "inside"))
    assert nodes["n4"].startswith('label="4 S (goal)\\nlog inside -2.23')
    nodes, _ = parse_dot(draw(tmp_path, "--show", "outside"))
    assert nodes["n4"].startswith('label="4 S (goal)\\nlog outside 0"')  # the goal's outside is the unit, log 1


def test_tail_order_is_numbered_as_the_file_lists_the_tails(tmp_path):
    """Every edge with several tails numbers their arrows 1, 2, ... in the order of the fixture's JSON lists
    (read here without hypertune: edge 7, "[2] [1]", has tails [1, 2] and so n1 is its 1 and n2 its 2)."""
    spec = json.loads((FIXTURES / "toy-forest.json").read_text())
    _, edges = parse_dot(draw(tmp_path))
    for e, edge in enumerate(spec["edges"]):
        into = [(s, re.search(r'headlabel="(\d+)"', a)) for s, t, a in edges if t == f"e{e}"]
        if len(edge["tails"]) > 1:
            assert [(s, m.group(1)) for s, m in into] == [(f"n{t}", str(i + 1)) for i, t in enumerate(edge["tails"])]
        else:
            assert all(m is None for _, m in into)


def test_edges_show_their_rule_and_score(tmp_path):
    _, edges = parse_dot(draw(tmp_path))
    labels = {s: a for s, _, a in edges if s.startswith("e")}
    # edge 0 "the": tm -0.4 * 1.0 + lm -1.0 * 0.5 = -0.9; edge 9 "[1] [2]": glue 1 * -0.2 (the fixture, by hand)
    assert labels["e0"].startswith('label="the\\nw·f -0.9"')
    assert labels["e9"].startswith('label="[1] [2]\\nw·f -0.2"')


def test_without_weights_the_drawing_says_it_shows_structure_only(tmp_path, capsys):
    out = tmp_path / "graph.dot"
    assert main(["draw", FOREST, "-o", str(out)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "hypertune draw: warning: no --weights: every edge scores 0, so every derivation ties and none is marked; "
        "the drawing shows structure only"
    ]
    nodes, edges = parse_dot(out.read_text())
    assert not any("red" in a for a in nodes.values()) and not any("red" in a for _, _, a in edges)
    assert not any("w·f" in a for _, _, a in edges)
    assert "structure only" in out.read_text()
    assert main(["draw", FOREST, "--show", "inside", "-o", str(out)]) == 0
    assert "log of the node's number of derivations" in capsys.readouterr().err
    nodes, _ = parse_dot(out.read_text())
    assert nodes["n4"].startswith(f'label="4 S (goal)\\nlog inside {math.log(27):.4g}')  # 27 derivations (README)


def test_renderers(tmp_path, capsys):
    """auto draws an image with dot where it is installed, else with the builtin renderer; graphviz without dot
    and builtin into a .dot file are one-line usage errors."""
    out = tmp_path / "graph.svg"
    assert main(["draw", FOREST, "-w", WEIGHTS, "-o", str(out)]) == 0
    assert out.read_text().lstrip().startswith(("<?xml", "<svg"))
    code = main(["draw", FOREST, "-w", WEIGHTS, "--renderer", "graphviz", "-o", str(out)])
    if shutil.which("dot") is None:
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "dot is not installed; use --renderer builtin" in err
    else:
        assert code == 0
        canon = subprocess.run(["dot", "-Tcanon"], input=draw(tmp_path), capture_output=True, text=True, check=True)
        assert "digraph" in canon.stdout
    assert main(["draw", FOREST, "-w", WEIGHTS, "--renderer", "builtin", "-o", str(tmp_path / "g.dot")]) == 2
    assert "builtin renderer draws .svg, .png or .pdf" in capsys.readouterr().err


def test_unknown_extension_is_refused(tmp_path, capsys):
    assert main(["draw", FOREST, "-o", str(tmp_path / "graph.txt")]) == 2
    assert ".dot" in capsys.readouterr().err


def shared_graphs(shared):
    toy = shared / "cdec" / "toy"
    return [str(p) for p in sorted(toy.glob("hg_test.*"))] + [str(shared / "moses" / "toy-forest" / "0")]


def test_shared_graphs_draw_to_valid_dot(shared, tmp_path):
    """cdec's toy graphs and a Moses hypergraph: every node and hyperedge is in the DOT text read back."""
    for path in shared_graphs(shared):
        hg = read_graphs(path)[0]
        out = tmp_path / "graph.dot"
        assert main(["draw", path, "-o", str(out), "--show", "posteriors"]) == 0, path
        nodes, edges = parse_dot(out.read_text())
        assert sum(name.startswith("n") for name in nodes) == hg.num_nodes, path
        assert sum(name.startswith("e") for name in nodes) == hg.num_edges, path
        assert len(edges) == sum(hg.edge_tails(e).size + 1 for e in range(hg.num_edges)), path
        if shutil.which("dot"):
            subprocess.run(["dot", "-Tcanon"], input=out.read_text(), capture_output=True, text=True, check=True)
