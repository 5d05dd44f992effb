"""Helpers shared by the command modules: output, progress, atomic writes."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from hypertune.errors import InputError

T = TypeVar("T")


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """``--json`` (one JSON object on stdout) and ``--quiet`` (no progress)."""
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress output")


def check_outputs(args: argparse.Namespace) -> None:
    """Check every output path of the command (the option names in its ``outputs`` default) before any
    input is read, so that a bad path fails at once, named as the user gave it, and no work is lost."""
    from hypertune.formats.io import check_writable

    for dest in getattr(args, "outputs", ()):
        path = getattr(args, dest, None)
        if path:
            check_writable(path, "OUT" if dest == "output" else "--" + dest.replace("_", "-"))
    if getattr(args, "plot", None):  # a picture needs matplotlib: say so before the work, not after it
        from hypertune.cli.plots import require_matplotlib

        require_matplotlib()


def emit(args: argparse.Namespace, summary: str, payload: dict[str, Any]) -> None:
    """Print ``payload`` as standard JSON under ``--json`` (infinities as the strings ``"inf"`` and
    ``"-inf"``, NaN as ``null``), else the human ``summary``."""
    if getattr(args, "json", False):
        json.dump(_finite(payload), sys.stdout, ensure_ascii=False, default=_json_default, allow_nan=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(summary.rstrip("\n") + "\n")


def _finite(value: Any) -> Any:
    """``value`` with non-finite floats spelled out (JSON has no infinity)."""
    import numpy as np

    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, np.ndarray):
        return _finite(value.tolist())
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def percent(score: float, digits: int = 2) -> str:
    """A metric value (0-1 inside hypertune and in JSON) as every human summary shows it: 0-100, as
    sacrebleu prints BLEU, chrF and TER."""
    return f"{100 * score:.{digits}f}"


def write_or_print(text: str, path: str, what: str, write) -> None:  # noqa: ANN001
    """``write()`` the result to ``path``; if that fails after all (disk full, the directory gone), print
    ``text`` on stdout and raise the error, so that a long run's result is never lost."""
    try:
        write()
    except OSError as error:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
        reason = error.strerror or str(error)
        raise InputError(f"cannot write the {what} ({reason}); they are printed on stdout instead", path) from None


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
