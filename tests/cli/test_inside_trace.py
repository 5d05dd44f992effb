"""``hypertune inside``'s outside trace, JSON values, expectation and envelope output, checked against the
values ../shared/data/README.md gives for cdec's toy graphs, brute force over the toy forest's derivations
and products worked by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from support.paths import FIXTURES, SHARED

from hypertune.algorithms import enumerate_derivations, inside, outside
from hypertune.algorithms.semiring_values import named_semiring
from hypertune.cli import main
from hypertune.formats import read_graphs, read_weights
from hypertune.weights import Weights

FOREST = str(FIXTURES / "toy-forest.json")
WEIGHTS = str(FIXTURES / "toy-forest.weights")
TOY = SHARED / "cdec" / "toy"
needs_shared = pytest.mark.skipif(not TOY.is_dir(), reason="../shared/data/cdec/toy is absent")


def run_json(capsys, *args: str) -> dict:
    assert main(["inside", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def equal_as_printed(value: float, printed: str) -> bool:
    """``value`` equals ``printed`` to the decimals the README prints it with (within one unit of the last:
    the README truncates some, -0.22365622 for -0.223656227)."""
    decimals = len(printed.partition(".")[2])
    return abs(value - float(printed)) <= 10.0**-decimals + 1e-12


def brute_force():
    """Every derivation of the toy forest: its score, probability-to-be, feature vector and nodes."""
    hg = read_graphs(FOREST)[0]
    scores = read_weights(WEIGHTS).edge_scores(hg)
    features = hg.feature_matrix().toarray()
    found = []
    for d in enumerate_derivations(hg):
        edges = d.edges()
        nodes = {int(hg.head[e]) for e in edges}
        found.append((float(scores[edges].sum()), features[edges].sum(axis=0), nodes, d))
    return hg, found


# ------------------------------------------------------------------ cdec's toy values (../shared)


@needs_shared
def test_json_values_are_full_precision_numbers_equal_to_the_shared_toy_values(capsys, tmp_path: Path):
    weights = tmp_path / "w"
    weights.write_text("f1 0.4\nf2 0.8\n")
    # ../shared/data/README.md, `toy/` hg_test.hg with f1 = 0.4, f2 = 0.8
    log_inside = ["0", "-0.4", "-0.8", "-0.96", "-1.562512", "-1.7861683"]
    log_outside = ["-1.7861683", "-1.3861683", "-0.9861683", "-0.8261683", "-0.22365622", "0"]
    got = run_json(capsys, str(TOY / "hg_test.hg"), "-s", "log", "-w", str(weights), "--outside", "--trace")
    for values, expected in ((got["inside"], log_inside), (got["outside"], log_outside)):
        assert all(type(x) is float for x in values)  # numbers, not strings
        assert all(equal_as_printed(x, p) for x, p in zip(values, expected, strict=True)), values
    assert any(len(repr(x)) > 12 for x in got["inside"])  # more digits than six: full precision
    # the trace's last running sum at each node is that node's value, also as numbers
    assert [node["edges"][-1]["sum"] for node in got["trace"]["inside"]] == pytest.approx(got["inside"], abs=1e-12)
    outside_sums = {node["node"]: node["edges"][-1]["sum"] for node in got["trace"]["outside"] if node["edges"]}
    assert all(equal_as_printed(outside_sums[v], log_outside[v]) for v in outside_sums)

    goal = run_json(capsys, str(TOY / "hg_test.hg"), "-s", "expectation", "-w", str(weights))["goal"]
    assert equal_as_printed(goal["expectation"]["f1"], "-2.5439765")
    assert equal_as_printed(goal["expectation"]["f2"], "-2.6357865")
    assert goal["r"]["f1"] == pytest.approx(goal["expectation"]["f1"] * goal["p"], rel=1e-12)
    assert run_json(capsys, str(TOY / "hg_test.hg"), "-s", "counting")["goal"] == 4


@needs_shared
def test_envelope_lines_with_their_yields_equal_the_shared_toy_envelope(capsys, tmp_path: Path):
    weights = tmp_path / "w"
    weights.write_text("f1 0.4\nf2 1\n")
    # ../shared/data/README.md, `toy/` test-ch-inside.json: 3 lines, breakpoints -0.9 and 1.171429, and yields
    args = [str(TOY / "test-ch-inside.json"), "-s", "envelope", "-w", str(weights), "--direction", "f1"]
    goal = run_json(capsys, *args)["goal"]
    assert [line["yield"] for line in goal] == ["Z A a B C c", "X A a B C c", "X A a b C c"]
    assert goal[0]["from"] == "-inf"
    assert all(equal_as_printed(line["from"], p) for line, p in zip(goal[1:], ["-0.9", "1.171429"], strict=True))
    assert main(["inside", *args]) == 0
    text = capsys.readouterr().out.splitlines()[-1]
    assert text.startswith('node 5 (goal): inside [-3.46 - 2.9γ from γ=-inf "Z A a B C c", ')
    assert text.endswith(' from γ=1.17143 "X A a b C c"]')


# ------------------------------------------------------------------ the outside trace


def test_outside_trace_is_the_recursion_worked_by_hand(capsys):
    hg, found = brute_force()
    got = run_json(capsys, FOREST, "-w", WEIGHTS, "-s", "real", "--outside", "--trace")
    k = np.exp(read_weights(WEIGHTS).edge_scores(hg))
    beta, alpha = got["inside"], got["outside"]
    for node in got["trace"]["outside"]:
        running = 0.0
        for step in node["edges"]:
            e, u = step["edge"], node["node"]
            tails = [int(t) for t in hg.edge_tails(e)]
            assert tails[step["tail"] - 1] == u and step["head"] == int(hg.head[e])
            others = [t for i, t in enumerate(tails) if i != step["tail"] - 1]
            product = alpha[step["head"]] * k[e] * math.prod(beta[w] for w in others)
            running += product
            assert step["product"] == pytest.approx(product, rel=1e-12)
            assert step["sum"] == pytest.approx(running, rel=1e-12)
        if node["edges"]:  # the goal has none: its α is one
            assert running == pytest.approx(alpha[node["node"]], rel=1e-12)
    # the independent check: β(v)·α(v) is the probability mass of the derivations through v
    for v in range(hg.num_nodes):
        through = sum(math.exp(s) for s, _, nodes, _ in found if v in nodes)
        assert beta[v] * alpha[v] == pytest.approx(through, rel=1e-12)
    assert [node["node"] for node in got["trace"]["outside"]] == list(reversed(range(hg.num_nodes)))


def test_outside_trace_text(capsys):
    hg = read_graphs(FOREST)[0]
    assert main(["inside", FOREST, "-w", WEIGHTS, "-s", "real", "--outside", "--trace"]) == 0
    out = capsys.readouterr().out
    assert "outside, top-down: α(goal) = one" in out
    assert "node 4 (goal): α = one\n" in out
    # node 0 is only tail 1 of the glue edge 9 into the goal: α(0) = 1 ⊗ k9 ⊗ β(3), with β(3) by hand from
    # node 3's edges: 6 and 7 over nodes 1 (edges 2, 3) and 2 (edges 4, 5), and the phrase 8
    k = np.exp(read_weights(WEIGHTS).edge_scores(hg))
    beta3 = (k[6] + k[7]) * (k[2] + k[3]) * (k[4] + k[5]) + k[8]
    line = f"  edge 9 '[1] [2]' (as tail [1]): α(4)=1 ⊗ k9={k[9]:.6g} ⊗ β(3)={beta3:.6g} = {k[9] * beta3:.6g};"
    assert line in out


# ------------------------------------------------------------------ expectation and envelope output


def test_expectation_output_names_the_features_and_gives_the_expectation(capsys):
    hg, found = brute_force()
    p = np.array([math.exp(s) for s, _, _, _ in found])
    expected = sum(pi * f for pi, (_, f, _, _) in zip(p / p.sum(), found, strict=True))
    names = list(hg.feature_space.names)
    goal = run_json(capsys, FOREST, "-w", WEIGHTS, "-s", "expectation")["goal"]
    assert list(goal["expectation"]) == names
    assert [goal["expectation"][n] for n in names] == pytest.approx(list(expected), rel=1e-9)
    assert goal["p"] == pytest.approx(p.sum(), rel=1e-12)
    assert main(["inside", FOREST, "-w", WEIGHTS, "-s", "expectation"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    shown = ", ".join(f"{n}={x:.6g}" for n, x in zip(names, expected, strict=True))
    assert last.endswith(f", expectation r/p [{shown}]")


def through_envelope(hg, found, v, w: Weights, d: Weights):
    """Brute force: (slope, intercept, yield) of every derivation through node ``v``."""
    b, m = w.edge_scores(hg), d.edge_scores(hg)
    out = []
    for _, _, nodes, x in found:
        if v in nodes:
            edges = x.edges()
            out.append((float(m[edges].sum()), float(b[edges].sum()), " ".join(hg.derivation_words(x))))
    return out


def test_envelope_outside_is_the_envelope_of_the_derivations_through_each_node(capsys):
    hg, found = brute_force()
    w, d = read_weights(WEIGHTS), Weights({"lm": 1.0})
    named = named_semiring("envelope", hg, w, d, outside=True)
    beta = inside(hg, named.semiring, named.values)
    alpha = outside(hg, named.semiring, named.values, beta)
    tree = named_semiring("envelope", hg, w, d)  # the inside lines are the ordered semiring's
    assert all(tree.semiring.equal(x, y) for x, y in zip(inside(hg, tree.semiring, tree.values), beta, strict=True))
    for v in range(hg.num_nodes):
        envelope = named.semiring.times(beta[v], alpha[v])
        lines = through_envelope(hg, found, v, w, d)
        ends = [x.left for x in envelope[1:]]
        points = [ends[0] - 10.0, ends[-1] + 10.0] if ends else [0.0]
        points += [(a + b) / 2 for a, b in zip(ends, ends[1:], strict=False)]
        for g in points:
            best = max(lines, key=lambda line: line[1] + line[0] * g)
            top = [x for x in envelope if x.left <= g][-1]  # the line active at g: the last to start before it
            assert top.intercept + top.slope * g == pytest.approx(best[1] + best[0] * g, abs=1e-9)
        assert len(envelope) <= len(lines)
    # and the command prints it, each line with its yield (an outside line's hole as _)
    got = run_json(capsys, FOREST, "-w", WEIGHTS, "-s", "envelope", "--direction", "lm", "--outside")
    for v in range(hg.num_nodes):  # each node is used once by a derivation: one hole in each outside line
        assert all("_" not in line["yield"].split() for line in got["inside"][v])
        assert all(line["yield"].split().count("_") == 1 for line in got["outside"][v])
    goal_lines = got["inside"][hg.goal]
    lines = through_envelope(hg, found, hg.goal, w, d)
    for i, line in enumerate(goal_lines):
        g = line["from"] + 1e-3 if i else -100.0
        assert line["yield"] == max(lines, key=lambda x: x[1] + x[0] * g)[2]


# ------------------------------------------------------------------ user semirings


def write_module(tmp_path: Path, monkeypatch, name: str, body: str) -> str:
    """A module ``name`` (a new name each time: Python keeps imported modules) with ``MaxTimes`` plus ``body``."""
    (tmp_path / f"{name}.py").write_text(
        "from hypertune.semirings import Semiring\n"
        "class MaxTimes(Semiring):\n"
        "    zero, one = 0.0, 1.0\n"
        "    def plus(self, a, b): return max(a, b)\n"
        "    def times(self, a, b): return a * b\n" + body
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return f"{name}:MaxTimes"


def test_a_user_semiring_without_edge_value_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    name = write_module(tmp_path, monkeypatch, "user_no_edge_value", "")
    assert main(["inside", FOREST, "-w", WEIGHTS, "-s", name]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "user_no_edge_value:MaxTimes has no edge_value: define edge_value(self, edge, score)" in err


@pytest.mark.parametrize(
    ("module", "body", "message"),
    [
        ("user_zero", "    def edge_value(self, edge, score): return 1 / 0\n", "edge_value(edge, score) failed: Zero"),
        ("user_text", "    def edge_value(self, edge, score): return 'x'\n", "failed: TypeError"),
    ],
)
def test_a_failing_user_semiring_is_one_line(tmp_path, monkeypatch, capsys, module, body, message):
    name = write_module(tmp_path, monkeypatch, module, body)
    assert main(["inside", FOREST, "-w", WEIGHTS, "-s", name]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err
