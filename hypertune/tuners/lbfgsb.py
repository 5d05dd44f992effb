"""scipy's L-BFGS-B (Byrd, Lu, Nocedal & Zhu 1995; Zhu et al. 1997) without importing ``scipy.optimize``.

Importing ``scipy.optimize`` loads linear programming, FFT, spatial transforms and the rest of the package:
0.15 s of CPU and 28 MB here, a tenth of a whole ``hypertune pro`` or ``minrisk`` command on the Moses scorer
data, for one compiled routine. :func:`minimize_lbfgsb` loads that routine (``setulb``, scipy's C translation of
the Fortran code) alone and runs scipy's own driver loop around it: the same calls with the same numbers, so
the iterates, the callback's points and the result are those of ``scipy.optimize.minimize(function, x0,
jac=True, method="L-BFGS-B", ...)`` bit for bit (tests/tuners/test_lbfgsb.py compares them). Only the case the
tuners use without bounds is driven here; finite bounds (whose equal pairs scipy removes from the problem),
and a scipy whose driver has not been checked against this one (:data:`CHECKED`), go to
``scipy.optimize.minimize`` itself.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: The scipy versions whose L-BFGS-B driver (``scipy/optimize/_lbfgsb_py.py``, ``_minimize_lbfgsb``) and
#: ``setulb`` signature :func:`minimize_lbfgsb` repeats.
CHECKED = ("1.17.",)
_SIGNATURE = "setulb(m,x,l,u,nbd,f,g,factr,pgtol,wa,iwa,task,lsave,isave,dsave,maxls,ln_task)"
#: scipy's defaults for the options the tuners leave alone: stored corrections, projected-gradient tolerance,
#: line-search steps per iteration, function evaluations.
_MAXCOR, _GTOL, _MAXLS, _MAXFUN = 10, 1e-5, 20, 15000
#: scipy's default ``ftol``.
FTOL = 2.2204460492503131e-09

Function = Callable[[np.ndarray], tuple[float, np.ndarray]]
Bounds = Sequence[tuple[float | None, float | None]]


def _load_setulb() -> Callable[..., None] | None:
    """``setulb`` from scipy's compiled module, loaded on its own (None: a scipy not in :data:`CHECKED`)."""
    import scipy

    if not scipy.__version__.startswith(CHECKED):
        return None
    module = sys.modules.get("scipy.optimize._lbfgsb")
    if module is None:
        folder = os.path.join(os.path.dirname(scipy.__file__), "optimize")
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_lbfgsb" + suffix)
            if os.path.exists(path):
                spec = importlib.util.spec_from_file_location("scipy.optimize._lbfgsb", path)
                if spec is None or spec.loader is None:
                    return None
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                # not left in sys.modules: a later ``import scipy.optimize`` imports it as its own submodule
                if sys.modules.get(spec.name) is module:
                    del sys.modules[spec.name]
                break
        else:
            return None
    setulb = getattr(module, "setulb", None)
    if setulb is None or not (setulb.__doc__ or "").startswith(_SIGNATURE):
        return None
    return setulb


#: Loaded with this module, so that its BLAS is loaded before a tuner sets the BLAS threads
#: (:func:`hypertune.tuners.blas_threads.one_blas_thread`).
_SETULB = _load_setulb()


def minimize_lbfgsb(
    function: Function,
    x0: np.ndarray,
    *,
    iterations: int,
    ftol: float = FTOL,
    bounds: Bounds | None = None,
    callback: Callable[[np.ndarray], None] | None = None,
) -> tuple[np.ndarray, float]:
    """Minimize ``function(x) = (value, gradient)`` from ``x0`` by L-BFGS-B with at most ``iterations``
    iterations, ``callback(x)`` after each; the point found and its value. The same numbers as
    ``scipy.optimize.minimize(function, x0, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
    options={"maxiter": iterations, "ftol": ftol})``; ``bounds`` as scipy's, ``None`` for an unbounded side."""
    unbounded = bounds is None or all(low is None and high is None for low, high in bounds)
    if _SETULB is None or not unbounded:
        import scipy.optimize

        found = scipy.optimize.minimize(function, x0, jac=True, method="L-BFGS-B", bounds=bounds, callback=callback,
                                        options={"maxiter": iterations, "ftol": ftol})  # fmt: skip
        return found.x, float(found.fun)
    return _drive(_SETULB, function, x0, iterations, ftol, callback)


def _drive(
    setulb: Callable[..., None],
    function: Function,
    x0: np.ndarray,
    iterations: int,
    ftol: float,
    callback: Callable[[np.ndarray], None] | None,
) -> tuple[np.ndarray, float]:
    """scipy's ``_minimize_lbfgsb`` loop with no bounds, its ``ScalarFunction`` cache (a point equal to the last
    one evaluated is not evaluated again) and its callback wrapping (a copy of the point; ``StopIteration``
    stops the run)."""
    x = np.array(np.atleast_1d(np.asarray(x0, dtype=np.float64)).ravel(), dtype=np.float64)
    n, m = x.size, _MAXCOR
    factr = ftol / np.finfo(float).eps
    evaluated: list[Any] = [None, None, None]  # the point, value and gradient of the last evaluation
    evaluations = 0

    def value_and_gradient(point: np.ndarray) -> tuple[Any, np.ndarray]:
        nonlocal evaluations
        if evaluated[0] is None or not np.array_equal(point, evaluated[0]):
            value, gradient = function(np.copy(point))
            if not np.isscalar(value):
                value = np.asarray(value).item()
            evaluated[:] = [np.array(point, dtype=np.float64), value, np.atleast_1d(gradient)]
            evaluations += 1
        return evaluated[1], evaluated[2]

    value_and_gradient(x)  # scipy evaluates the start when it sets the problem up
    low, high, nbd = np.zeros(n, np.float64), np.zeros(n, np.float64), np.zeros(n, np.int32)
    f: Any = np.array(0.0, dtype=np.float64)
    g = np.zeros((n,), dtype=np.float64)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m, np.float64)
    iwa = np.zeros(3 * n, dtype=np.int32)
    task, ln_task = np.zeros(2, dtype=np.int32), np.zeros(2, dtype=np.int32)
    lsave, isave, dsave = np.zeros(4, dtype=np.int32), np.zeros(44, dtype=np.int32), np.zeros(29, dtype=np.float64)
    done = 0
    while True:
        g = g.astype(np.float64)
        setulb(m, x, low, high, nbd, f, g, factr, _GTOL, wa, iwa, task, lsave, isave, dsave, _MAXLS, ln_task)
        if task[0] == 3:  # evaluate at x
            f, g = value_and_gradient(x)
        elif task[0] == 1:  # a new iterate
            done += 1
            if callback is not None:
                try:
                    callback(np.copy(x))
                except StopIteration:
                    task[:] = (5, 505)
            if done >= iterations:
                task[:] = (5, 504)
            elif evaluations > _MAXFUN:
                task[:] = (5, 502)
        else:
            break
    return x, float(f)
