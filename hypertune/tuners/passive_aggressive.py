"""The passive-aggressive step size (PA-I, Crammer et al. 2006), shared by MIRA (:mod:`hypertune.tuners.mira`)
and the online ``pa`` optimizer (:mod:`hypertune.tuners.online`)."""

from __future__ import annotations

import numba

import hypertune.numba_cache  # noqa: F401  # first: the kernels' cache stamps cover the whole package

_jit = numba.njit(cache=True, nogil=True)


@_jit
def pa_step_size(loss, norm, c_param):  # pragma: no cover - compiled
    """PA-I's step (Crammer et al. 2006, eq. 8): ``min(C, loss / ||diff||^2)``; the one copy, used by MIRA and by
    the online ``pa`` optimizer (:mod:`hypertune.tuners.online`). ``loss`` and ``norm`` must be positive."""
    return min(c_param, loss / norm)
