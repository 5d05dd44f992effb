"""``hypertune draw``: the DOT text is read back by a small parser and checked against the graph (every
node, every hyperedge with an arrow per tail and one to its head, the best derivation in red, posteriors as
labels); images need Graphviz and are checked only where it is installed."""

from __future__ import annotations

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
        assert f"\\n{posteriors[e]:.3f}" in label


def test_node_scores(tmp_path):
    nodes, _ = parse_dot(draw(tmp_path, "--show", "inside"))
    assert nodes["n4"].startswith('label="4 S (goal)\\ninside -2.23')


def test_large_graphs_need_pruning(shared, tmp_path, capsys):
    forest = str(shared / "cdec" / "forests" / "training_dpmert_test_data_0.json.gz")
    out = tmp_path / "big.dot"
    assert main(["draw", forest, "-o", str(out)]) == 1
    assert "add --prune N" in capsys.readouterr().err
    weights = tmp_path / "w"
    weights.write_text("WordPenalty 4.25\nLanguageModel -1.1165\nPhraseModel_0 -0.96\n")
    assert main(["draw", forest, "--weights", str(weights), "--prune", "60", "-o", str(out)]) == 0
    nodes, _ = parse_dot(out.read_text())
    assert 0 < sum(name.startswith("e") for name in nodes) < 400


def test_images_need_graphviz(tmp_path, capsys):
    out = tmp_path / "graph.svg"
    code = main(["draw", FOREST, "-o", str(out)])
    if shutil.which("dot") is None:
        assert code == 2 and "dot is not installed" in capsys.readouterr().err
    else:
        assert code == 0 and out.read_text().lstrip().startswith(("<?xml", "<svg"))
        canon = subprocess.run(["dot", "-Tcanon"], input=draw(tmp_path), capture_output=True, text=True, check=True)
        assert "digraph" in canon.stdout


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
