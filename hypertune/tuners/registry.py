"""The one list of tuners: each tuner's name, class, options class and the command that runs it.

A new tuner is its module (the class: ``Tuner(options=None, *, progress=None, checkpoint=None, **fields)``
with ``fit(tuning_set, init)``), its options class (:mod:`hypertune.tuners.options`; a light module) and one
:func:`register_tuner` line here. The command line then offers ``hypertune NAME`` with flags generated from
the options (:mod:`hypertune.cli.tuner_command`, unless the entry names a command module of its own) and
``hypertune tune --tuner NAME``; :data:`hypertune.tuners.TUNERS` has its class. Entries name classes as
``"module:Class"`` strings, so reading this list imports nothing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TunerEntry:
    """A tuner: ``name``; ``tuner`` and ``options``, its class and its options class as ``"module:Class"``;
    ``command``, the command that runs it (several tuners may share one: ``train`` runs the batch and the
    online trainers); ``summary``, the command's line in ``hypertune --help``."""

    name: str
    tuner: str
    options: str
    command: str = ""
    summary: str = ""

    @property
    def command_name(self) -> str:
        return self.command or self.name

    def tuner_class(self) -> Any:
        return _load(self.tuner)

    def options_class(self) -> Any:
        return _load(self.options)


def _load(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


#: Every tuner by name, in the order ``--help`` lists them.
TUNERS: dict[str, TunerEntry] = {}


def register_tuner(entry: TunerEntry) -> TunerEntry:
    """Add a tuner (a name given twice is an error: two tuners cannot share one)."""
    if entry.name in TUNERS:
        raise ValueError(f"a tuner named {entry.name!r} is registered already")
    TUNERS[entry.name] = entry
    return entry


def tuning_commands() -> list[str]:
    """The commands that run a tuner, each once, in registration order: ``tune --tuner`` offers these."""
    return list(dict.fromkeys(entry.command_name for entry in TUNERS.values()))


def entries_of(command: str) -> list[TunerEntry]:
    """The tuners a command runs."""
    return [entry for entry in TUNERS.values() if entry.command_name == command]


register_tuner(TunerEntry("mert", "hypertune.tuners.mert:Mert", "hypertune.tuners.mert_options:MertOptions"))
register_tuner(TunerEntry("mira", "hypertune.tuners.mira:Mira", "hypertune.tuners.mira_options:MiraOptions"))
register_tuner(
    TunerEntry("minrisk", "hypertune.tuners.minrisk:MinRisk", "hypertune.tuners.minrisk_options:MinRiskOptions")
)
register_tuner(TunerEntry("train", "hypertune.tuners.train:Trainer", "hypertune.tuners.train_options:TrainOptions"))
register_tuner(
    TunerEntry(
        "online", "hypertune.tuners.online:OnlineTrainer", "hypertune.tuners.train_options:OnlineOptions", "train"
    )
)
# pro is the batch trainer with the loss PRO, TrainOptions' default, fixed by its command (no --loss)
register_tuner(TunerEntry("pro", "hypertune.tuners.train:Trainer", "hypertune.tuners.train_options:TrainOptions"))
register_tuner(
    TunerEntry(
        "relevant-set",
        "hypertune.tuners.relevant_set:RelevantSet",
        "hypertune.tuners.relevant_set_options:RelevantSetOptions",
    )
)
