"""Helpers shared by the command modules: output, progress, atomic writes."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from hypertune.formats.io import write_atomically  # noqa: F401  (re-exported for commands)

T = TypeVar("T")


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """``--json`` (one JSON object on stdout) and ``--quiet`` (no progress)."""
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress output")


def emit(args: argparse.Namespace, summary: str, payload: dict[str, Any]) -> None:
    """Print ``payload`` as JSON under ``--json``, else the human ``summary``."""
    if getattr(args, "json", False):
        json.dump(payload, sys.stdout, ensure_ascii=False, default=_json_default)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(summary.rstrip("\n") + "\n")


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"cannot serialise {type(obj).__name__}")


def show_progress(args: argparse.Namespace) -> bool:
    """Progress goes to stderr only on a terminal and never under --json/--quiet."""
    return not (getattr(args, "json", False) or getattr(args, "quiet", False)) and sys.stderr.isatty()


def progress(args: argparse.Namespace, items: Iterable[T], total: int | None, label: str) -> Iterator[T]:
    """Yield ``items``, drawing a one-line counter on stderr when :func:`show_progress`."""
    if not show_progress(args):
        yield from items
        return
    done = 0
    for item in items:
        yield item
        done += 1
        of = f"/{total}" if total else ""
        sys.stderr.write(f"\r{label}: {done}{of}")
        sys.stderr.flush()
    sys.stderr.write("\r" + " " * (len(label) + 24) + "\r")
    sys.stderr.flush()
