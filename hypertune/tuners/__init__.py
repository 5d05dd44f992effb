"""Tuners: MERT, MIRA and friends, built on the engine and the metrics.

Every tuner follows :class:`~hypertune.tuners.base.Tuner`: options as keyword arguments of the
constructor, ``fit(tuning_set, init)`` returning a :class:`~hypertune.tuners.base.TuningResult`.
:data:`TUNERS` names them; a new tuner is one module plus one line there.
"""

from hypertune.tuners.base import Iteration, Tuner, TuningResult
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.mert import Mert, MertResult
from hypertune.tuners.minrisk import MinRisk, MinRiskResult
from hypertune.tuners.mira import Mira, MiraResult, batch_mira
from hypertune.tuners.online import OnlineResult, OnlineTrainer
from hypertune.tuners.train import Trainer, TrainResult

#: The tuners by the name the command line and the docs use.
TUNERS: dict[str, type] = {
    "mert": Mert,
    "mira": Mira,
    "minrisk": MinRisk,
    "train": Trainer,
    "online": OnlineTrainer,
}

__all__ = [
    "TUNERS",
    "Iteration",
    "Mert",
    "MertResult",
    "MinRisk",
    "MinRiskResult",
    "Mira",
    "MiraResult",
    "OnlineResult",
    "OnlineTrainer",
    "TrainResult",
    "Trainer",
    "Tuner",
    "TuningResult",
    "TuningSet",
    "batch_mira",
]
