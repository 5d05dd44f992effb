"""``hypertune inside`` and the named semirings against enumeration of the toy forest's derivations, and the
worked trace against hand-computed products."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from support.paths import FIXTURES

from hypertune.algorithms import enumerate_derivations
from hypertune.algorithms.semiring_values import inside_trace, named_semiring
from hypertune.cli import main
from hypertune.formats import read_graphs, read_weights

FOREST = str(FIXTURES / "toy-forest.json")
WEIGHTS = str(FIXTURES / "toy-forest.weights")


def derivation_scores():
    hg = read_graphs(FOREST)[0]
    w = read_weights(WEIGHTS)
    scores = w.edge_scores(hg)
    features = hg.feature_matrix().toarray()
    found = [(float(scores[d.edges()].sum()), features[d.edges()].sum(axis=0), d) for d in enumerate_derivations(hg)]
    return hg, found


def run_json(capsys, *args: str) -> dict:
    assert main(["inside", FOREST, "--weights", WEIGHTS, "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_goal_values_against_enumeration(capsys):
    hg, found = derivation_scores()
    totals = [s for s, _, _ in found]
    z = sum(math.exp(s) for s in totals)
    assert run_json(capsys, "--semiring", "counting")["goal"] == len(found)
    assert run_json(capsys, "--semiring", "boolean")["goal"] is True
    # JSON numbers at full precision: equal to brute force far past the six digits the text shows
    assert run_json(capsys, "--semiring", "real")["goal"] == pytest.approx(z, rel=1e-12)
    assert run_json(capsys, "--semiring", "log")["goal"] == pytest.approx(math.log(z), rel=1e-12)
    assert run_json(capsys, "--semiring", "tropical")["goal"] == pytest.approx(max(totals), rel=1e-12)
    best = sorted(found, key=lambda x: -x[0])[:2]
    goal = run_json(capsys, "--semiring", "kbest:2")["goal"]
    assert [entry["score"] for entry in goal] == pytest.approx([s for s, _, _ in best], rel=1e-12)
    assert [entry["yield"] for entry in goal] == [" ".join(hg.derivation_words(d)) for _, _, d in best]
    assert [entry["edges"] for entry in goal] == [d.edges() for _, _, d in best]


def test_expectation_semiring_gives_expected_features():
    hg, found = derivation_scores()
    named = named_semiring("expectation", hg, read_weights(WEIGHTS))
    from hypertune.algorithms import inside

    z, r = inside(hg, named.semiring, named.values)[hg.goal]
    p = np.array([math.exp(s) for s, _, _ in found])
    expected = sum(pi * f for pi, (_, f, _) in zip(p / p.sum(), found, strict=True))
    np.testing.assert_allclose(np.asarray(r) / z, expected, rtol=1e-9)


def test_trace_products_are_the_hand_computation():
    hg = read_graphs(FOREST)[0]
    named = named_semiring("real", hg, read_weights(WEIGHTS))
    trace = inside_trace(hg, named.semiring, named.values)
    values = np.asarray(named.values)
    for steps in trace:
        running = 0.0
        for step in steps:
            product = values[step.edge] * math.prod(step.tail_values)
            running += product
            assert step.product == pytest.approx(product, rel=1e-12)
            assert step.running == pytest.approx(running, rel=1e-12)
            # a tail's value in the table is that node's final inside value (its last running sum)
            for u, x in zip(step.tails, step.tail_values, strict=True):
                assert x == trace[u][-1].running
    assert trace[hg.goal][-1].running == pytest.approx(sum(math.exp(s) for s, _, _ in derivation_scores()[1]))


def test_trace_text_and_outside(capsys):
    assert main(["inside", FOREST, "--weights", WEIGHTS, "--semiring", "real", "--trace", "--outside"]) == 0
    out = capsys.readouterr().out
    assert "edge 6 '[1] [2]': k6=0.740818 ⊗ β(1)=0.339073 ⊗ β(2)=0.532621 = 0.13379; sum so far 0.13379" in out
    assert out.rstrip().endswith("node 4 (goal): inside 0.10754, outside 1")


def test_user_semiring_by_module_and_class(tmp_path, monkeypatch, capsys):
    (tmp_path / "mysemiring.py").write_text(
        "from hypertune.semirings import Semiring\n"
        "class MaxTimes(Semiring):\n"
        "    zero, one = 0.0, 1.0\n"
        "    def plus(self, a, b): return max(a, b)\n"
        "    def times(self, a, b): return a * b\n"
        "    def edge_value(self, edge, score): return 2.0 ** score\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    _, found = derivation_scores()
    goal = run_json(capsys, "--semiring", "mysemiring:MaxTimes")["goal"]
    assert goal == pytest.approx(max(2.0**s for s, _, _ in found), rel=1e-5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--semiring", "nosuch"], "unknown semiring"),
        (["--semiring", "kbest:0"], "kbest:K"),
        (["--semiring", "envelope"], "needs a direction"),
        (["--semiring", "kbest:2", "--outside"], "commutative"),
        (["--semiring", "counting", "--graph", "3"], "has 1 graph"),
    ],
)
def test_refusals(args, message, capsys):
    assert main(["inside", FOREST, *args]) == 2
    assert message in capsys.readouterr().err


def test_trace_refuses_large_graphs(tmp_path, capsys):
    big = tmp_path / "big.json"
    assert main(["generate", str(big), "--edges", "400", "--seed", "1", "--quiet"]) == 0
    assert main(["inside", str(big), "--semiring", "counting", "--trace"]) == 1
    assert "at most 200" in capsys.readouterr().err


def test_misspelt_weight_names_warn_and_strict_refuses(tmp_path, capsys):
    weights = tmp_path / "w"
    weights.write_text("tm 1\nlmm 0.5\n")
    for command in (["inside", FOREST, "--semiring", "tropical"], ["draw", FOREST, "-o", str(tmp_path / "g.dot")]):
        assert main([*command, "--weights", str(weights)]) == 0
        assert "lmm (did you mean lm?)" in capsys.readouterr().err
        assert main([*command, "--weights", str(weights), "--strict"]) == 1
        assert "lmm" in capsys.readouterr().err
