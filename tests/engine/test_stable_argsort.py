"""compiled.stable_argsort is NumPy's stable argsort of a block (ties in index order, -0.0 == 0.0, NaN last),
checked against ``np.argsort(kind="stable")`` itself on values made to tie, on every run/merge boundary; and a
helper (no Python wrapper) refuses a call from Python."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from hypertune.compiled import stable_argsort


@numba.njit
def _sorted_block(values, lo, hi):  # the helper has no Python wrapper: this calls it from Python
    order, scratch = np.empty(hi - lo, np.int64), np.empty(hi - lo, np.int64)
    stable_argsort(values, lo, hi, order, scratch)
    return order


@pytest.mark.parametrize("size", [0, 1, 2, 15, 16, 17, 31, 32, 33, 100, 257])
def test_stable_argsort_is_numpys(size: int) -> None:
    rng = np.random.default_rng(size)
    pool = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1.0, -1.0, 2.5, 1e-300])
    for _ in range(20):
        values = np.concatenate((rng.choice(pool, size=size), rng.normal(size=5)))
        lo, hi = 3 if size > 3 else 0, size
        expected = np.argsort(values[lo:hi], kind="stable") + lo
        assert _sorted_block(values, lo, hi).tolist() == expected.tolist()


def test_a_helper_called_from_python_raises() -> None:
    """Helpers have no Python wrapper; calling one from Python is a TypeError, not a jump to nothing."""
    with pytest.raises(TypeError, match="called from other kernels only"):
        stable_argsort(np.zeros(2), 0, 2, np.empty(2, np.int64), np.empty(2, np.int64))
