"""Helpers shared by the command modules: output, progress, atomic writes."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from hypertune.errors import InputError

T = TypeVar("T")


def add_output_options(parser: argparse.ArgumentParser) -> None:
    """``--json`` (one JSON object on stdout) and ``--quiet`` (no progress)."""
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress output")


def check_outputs(args: argparse.Namespace) -> None:
    """Check every output path of the command (the option names in its ``outputs`` default) before any
    input is read, so that a bad path fails at once, named as the user gave it, and no work is lost: it
    must be writable and must not be one of the inputs (:func:`refuse_outputs_over_inputs`). The optional
    dependencies the options need (matplotlib for ``--plot``, Dask for ``--cluster``) are checked here too."""
    from hypertune.formats.io import check_writable

    outputs = []
    for dest in getattr(args, "outputs", ()):
        path = getattr(args, dest, None)
        if path:
            option = "OUT" if dest == "output" else "--" + dest.replace("_", "-")
            check_writable(path, option)
            outputs.append((option, path))
    refuse_outputs_over_inputs(args, outputs)
    if getattr(args, "plot", None):  # a picture needs matplotlib: say so before the work, not after it
        from hypertune.cli.plots import require_matplotlib

        require_matplotlib()
    if getattr(args, "cluster", None):  # and --cluster needs Dask: a one-line error naming the extra
        from hypertune.distributed.cluster import require_dask

        require_dask()


#: The metavars of options (and positionals) whose values are paths the command reads.
INPUT_METAVARS = frozenset({"FILE", "W", "D", "REF", "PATH", "DIR", "INPUT", "IN", "GRAPH"})
#: Options with such a metavar that are not inputs: folders the command keeps its own files in.
NOT_INPUTS = frozenset({"cache", "workdir"})


def input_paths(args: argparse.Namespace) -> list[tuple[str, str]]:
    """``(option, path)`` for every path the command reads, found from its own parser (the options whose
    metavar names a file, a folder, weights or references, less its ``outputs``), so that a new option is
    covered without a line here: reference prefixes expanded to their files (``ref.`` to ``ref.0 ref.1``)
    and directories to the files read from them."""
    import os

    from hypertune.cli import build_parser
    from hypertune.errors import HypertuneError
    from hypertune.formats.references import expand_prefix
    from hypertune.formats.registry import corpus_files

    command = getattr(args, "command", None)
    if not command:
        return []
    parser = build_parser(command)
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    outputs = set(getattr(args, "outputs", ()))
    found: list[tuple[str, str]] = []
    for action in commands.choices[command]._actions:
        if action.metavar not in INPUT_METAVARS or action.dest in outputs | NOT_INPUTS:
            continue
        value = getattr(args, action.dest, None)
        names = [name for name in action.option_strings if name.startswith("--")] or action.option_strings
        option = names[0] if names else str(action.metavar)  # its first long name, as --help shows it
        for path in [value] if isinstance(value, str) else value if isinstance(value, list) else []:
            if not isinstance(path, str) or not path or path == "-":
                continue
            if os.path.isdir(path):
                found += [(option, path)] + [(option, f) for f in corpus_files(path)]
            elif os.path.exists(path):
                found.append((option, path))
            elif action.metavar == "REF":
                try:
                    found += [(option, f) for f in expand_prefix(path)]
                except HypertuneError:  # no such file: the command says so when it reads it
                    pass
    return found


def refuse_outputs_over_inputs(args: argparse.Namespace, outputs: list[tuple[str, str]]) -> None:
    """Raise :class:`InputError` naming both when an output path (``(option, path)``) is also an input -- the
    same file by inode (a hard or symbolic link too), an input folder, or a folder holding an input -- before
    any work, since writing it would destroy the input (``mert same.nb --out same.nb``)."""
    import os

    existing = [(option, path) for option, path in outputs if path != "-" and os.path.exists(path)]
    if not existing:
        return
    for option, path in existing:
        for source, read in input_paths(args):
            if _same_or_inside(path, read):
                shown = f"{source} {read}" if source.startswith("-") else read
                raise InputError(
                    f"the output ({option}) is also an input ({shown}); writing it would destroy it: choose "
                    "another output path",
                    path,
                )


def _same_or_inside(output: str, read: str) -> bool:
    """Whether writing ``output`` would overwrite ``read``: the same file or folder, or ``read`` inside
    the folder ``output``."""
    import os

    try:
        if os.path.samefile(output, read):
            return True
    except OSError:
        return False
    if os.path.isdir(output):
        inside = os.path.relpath(os.path.realpath(read), os.path.realpath(output))
        return not inside.startswith(os.pardir) and inside != os.curdir
    return False


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


def percent(score: float, digits: int = 2, scale: float = 100.0) -> str:
    """A metric value (0-1 inside hypertune and in JSON) as every human summary shows it: 0-100, as
    sacrebleu prints BLEU, chrF and TER; ``scale`` 1 (``Metric.display_scale`` of given scores, which are never
    rescaled): as it is, with two more digits."""
    if scale == 100.0:
        return f"{100 * score:.{digits}f}"
    return f"{scale * score:.{digits + 2}f}"


def write_or_print(text: str, path: str, what: str, write: Callable[[], object]) -> None:
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


def run_tuning_command(args: argparse.Namespace) -> int:
    """Every tuning command's ``run``: its ``fit(args)``, then the one report
    (:func:`hypertune.cli.tuning.run_tuning`; imported here so that ``--help`` loads no library)."""
    from hypertune.cli.tuning import run_tuning

    return run_tuning(args)
