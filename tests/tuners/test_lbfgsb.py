"""hypertune.tuners.lbfgsb drives scipy's compiled L-BFGS-B without importing scipy.optimize: every iterate, the
point found and its value must be scipy.optimize.minimize's own, bit for bit (scipy is the independent source)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy
import scipy.optimize
from support.paths import REPO

from hypertune.tuners import lbfgsb
from hypertune.tuners.lbfgsb import minimize_lbfgsb


def rosenbrock(x: np.ndarray) -> tuple[float, np.ndarray]:
    return float(scipy.optimize.rosen(x)), scipy.optimize.rosen_der(x)


def quadratic_0d(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A value returned as a 0-d array (scipy takes its item) and a gradient as a list."""
    a = np.arange(1.0, x.size + 1)
    return np.array(0.5 * float(a @ (x - 1.0) ** 2)), list(a * (x - 1.0))


def scipy_run(function, x0, iterations, ftol=lbfgsb.FTOL, bounds=None, stop_at=None):
    points: list[np.ndarray] = []

    def callback(x: np.ndarray) -> None:
        points.append(x)
        if stop_at is not None and len(points) == stop_at:
            raise StopIteration

    found = scipy.optimize.minimize(function, x0, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
                                    options={"maxiter": iterations, "ftol": ftol})  # fmt: skip
    return found.x, float(found.fun), points


def our_run(function, x0, iterations, ftol=lbfgsb.FTOL, bounds=None, stop_at=None):
    points: list[np.ndarray] = []

    def callback(x: np.ndarray) -> None:
        points.append(x)
        if stop_at is not None and len(points) == stop_at:
            raise StopIteration

    x, value = minimize_lbfgsb(function, x0, iterations=iterations, ftol=ftol, bounds=bounds, callback=callback)
    return x, value, points


def test_this_scipy_takes_the_direct_path():
    if not scipy.__version__.startswith(lbfgsb.CHECKED):
        pytest.skip(f"scipy {scipy.__version__} is not one whose driver was checked")
    assert lbfgsb._SETULB is not None


@pytest.mark.parametrize(
    ("function", "x0", "iterations", "ftol", "bounds", "stop_at"),
    [
        (rosenbrock, np.array([-1.2, 1.0, 0.5, -0.3, 2.0]), 500, lbfgsb.FTOL, None, None),  # converges
        (rosenbrock, np.array([-1.2, 1.0, 0.5]), 4, lbfgsb.FTOL, None, None),  # stopped by the iteration limit
        (rosenbrock, np.array([-1.2, 1.0, 0.5]), 100, 1e-4, [(None, None)] * 3, None),  # ftol; unbounded bounds
        (rosenbrock, np.array([-1.2, 1.0]), 100, lbfgsb.FTOL, None, 3),  # the callback raises StopIteration
        (quadratic_0d, np.array([3, -2, 0]), 50, lbfgsb.FTOL, None, None),  # integers in, a 0-d value out
        (rosenbrock, np.array([-1.2, 1.0, 0.5]), 100, lbfgsb.FTOL, [(-1.0, 0.8), (None, None), (0.5, 0.5)], None),
    ],
)
def test_same_numbers_as_scipy_minimize(function, x0, iterations, ftol, bounds, stop_at):
    want_x, want_value, want_points = scipy_run(function, x0, iterations, ftol, bounds, stop_at)
    x, value, points = our_run(function, x0, iterations, ftol, bounds, stop_at)
    assert x.tobytes() == want_x.tobytes()
    assert value == want_value
    assert len(points) == len(want_points) > 0
    assert all(a.tobytes() == b.tobytes() for a, b in zip(points, want_points, strict=True))


@pytest.mark.slow
def test_minimum_risk_and_training_do_not_import_scipy_optimize():
    """The tuners' modules and a PRO fit on the fixture n-best list leave scipy.optimize unloaded (0.15 s of
    CPU and 28 MB of a whole command)."""
    code = (
        "import json, sys, contextlib, io\n"
        "import hypertune.tuners.minrisk, hypertune.tuners.train\n"
        "from hypertune.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['pro', 'fixtures/mert/nbest.txt', '--refs', 'fixtures/mert/ref.', '--init',\n"
        "          'fixtures/mert/init.weights', '--quiet'])\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('scipy.optimize'))))\n"
    )
    if not scipy.__version__.startswith(lbfgsb.CHECKED):
        pytest.skip(f"scipy {scipy.__version__} uses scipy.optimize.minimize")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) == []
