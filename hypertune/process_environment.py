"""The environment of a ``hypertune`` command: OpenBLAS on one thread, the user's environment for the commands
the user gives (a decoder in the tuning loop).

numpy and scipy each load an OpenBLAS that starts a thread per core; those threads wait for work by spinning,
which cost every command 0.2-0.3 s of CPU on a 2-core machine before it did anything (docs/performance.md, "One
BLAS thread for the command line"). hypertune's hot paths are its own compiled kernels and sparse products, not
BLAS; its optimizers already run BLAS on one thread (:mod:`hypertune.tuners.blas_threads`), so that results do not
depend on the number of cores. OpenBLAS reads ``OPENBLAS_NUM_THREADS`` when it is loaded, so
:func:`use_one_blas_thread` runs before numpy is imported; a value the user set is kept.
"""

from __future__ import annotations

import os

#: What a command sets for itself when the user has not.
COMMAND_DEFAULTS = {"OPENBLAS_NUM_THREADS": "1"}

_added: dict[str, str] = {}


def use_one_blas_thread() -> None:
    """Set :data:`COMMAND_DEFAULTS` that the environment lacks (before numpy and scipy load their OpenBLAS)."""
    for name, value in COMMAND_DEFAULTS.items():
        if name not in os.environ:
            os.environ[name] = value
            _added[name] = value


def user_environment() -> dict[str, str]:
    """This process's environment without what :func:`use_one_blas_thread` added: for the user's own commands."""
    env = dict(os.environ)
    for name, value in _added.items():
        if env.get(name) == value:
            del env[name]
    return env
