"""``hypertune pro``: PRO (Hopkins & May 2011) as Moses's ``pro`` runs it; ``hypertune train --loss pro``
with PRO's help and examples."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    from hypertune.cli.train_command import PRO_EXAMPLE, register_trainer

    register_trainer(subparsers, "pro", PRO_EXAMPLE, with_loss=False)
