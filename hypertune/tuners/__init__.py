"""Tuners: MERT, MIRA and friends, built on the engine and the metrics.

Every tuner follows :class:`~hypertune.tuners.base.Tuner`: options as keyword arguments of the
constructor, ``fit(tuning_set, init)`` returning a :class:`~hypertune.tuners.base.TuningResult`.
:data:`TUNERS` has each tuner's class by name, from the one list of tuners, :mod:`hypertune.tuners.registry`
(a new tuner: its module, its options and one line there).

The names below are loaded on first use (PEP 562), so that a command pays only for the tuner it runs:
``hypertune mira`` does not import scipy.optimize, which minimum risk and L-BFGS training need.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each exported name and the module that defines it.
_EXPORTS = {
    "Iteration": "base",
    "Tuner": "base",
    "TuningResult": "base",
    "TuningSet": "corpus",
    "Mert": "mert",
    "MertResult": "mert",
    "MinRisk": "minrisk",
    "MinRiskResult": "minrisk",
    "Mira": "mira",
    "MiraResult": "mira",
    "batch_mira": "mira",
    "OnlineResult": "online",
    "OnlineTrainer": "online",
    "Trainer": "train",
    "TrainResult": "train",
}

__all__ = ["TUNERS", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    if name == "TUNERS":
        from hypertune.tuners.registry import TUNERS

        value: Any = {name: entry.tuner_class() for name, entry in TUNERS.items()}
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name != "TUNERS":  # the registry may grow (a test's toy tuner): read it every time
        globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
