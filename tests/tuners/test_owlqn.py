"""OWL-QN against the optimality conditions of L1-regularized problems (a subgradient of the objective is
zero: ∇f + c·sign(x) = 0 where x ≠ 0, |∇f| ≤ c where x = 0), on random least-squares and logistic problems."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from support.paths import FIXTURES

from hypertune.cli import main
from hypertune.tuners.owlqn import minimize_owlqn, pseudo_gradient


def assert_optimal(x: np.ndarray, g: np.ndarray, c: np.ndarray, tolerance: float) -> None:
    nonzero = x != 0
    assert np.all(np.abs(g[nonzero] + c[nonzero] * np.sign(x[nonzero])) <= tolerance)
    assert np.all(np.abs(g[~nonzero]) <= c[~nonzero] + tolerance)


@given(st.integers(0, 10**6), st.floats(0.1, 20.0), st.booleans())
def test_least_squares_with_l1_reaches_the_optimality_conditions(seed, c, logistic):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(30, 8))
    truth = np.where(rng.random(8) < 0.5, rng.normal(scale=2, size=8), 0.0)
    if logistic:
        y = np.where(a @ truth + 0.3 * rng.normal(size=30) > 0, 1.0, -1.0)

        def f(x):
            m = y * (a @ x)
            return float(np.logaddexp(0, -m).sum()), a.T @ (-y * np.exp(-np.logaddexp(0, m)))
    else:
        b = a @ truth + 0.1 * rng.normal(size=30)

        def f(x):
            r = a @ x - b
            return 0.5 * float(r @ r), a.T @ r

    weights = np.full(8, c)
    weights[0] = 0.0  # one free coordinate, as the scale of minimum risk
    result = minimize_owlqn(f, np.zeros(8), weights, iterations=2000, tolerance=1e-14)
    assert_optimal(result.x, f(result.x)[1], weights, tolerance=1e-3 * max(1.0, c))


def test_pseudo_gradient_is_the_one_sided_derivative():
    x = np.array([1.0, -1.0, 0.0, 0.0, 0.0])
    g = np.array([0.5, 0.5, -3.0, 3.0, 0.5])
    assert pseudo_gradient(x, g, 1.0).tolist() == [1.5, -0.5, -2.0, 2.0, 0.0]


def test_l1_through_the_command_line(tmp_path, capsys):
    nbest, refs, init = (str(FIXTURES / "mert" / n) for n in ("nbest.txt", "ref.", "init.weights"))
    assert main(["train", nbest, "--refs", refs, "--init", init, "--l1", "1", "--optimizer", "lbfgs"]) == 2
    assert "owlqn" in capsys.readouterr().err
    poor = tmp_path / "poor.weights"  # a start the sparse end point beats (else the start would be kept)
    poor.write_text("LM0 -0.1\nTM0_0 0.2\nTM0_1 0.2\nWordPenalty0 0.3\n")
    assert main(["train", nbest, "--refs", refs, "--init", str(poor), "--l1", "50", "--normalize", "none",
                 "--json"]) == 0  # fmt: skip
    payload = json.loads(capsys.readouterr().out)
    assert not payload["kept_start"] and any(v == 0.0 for v in payload["weights"].values())
