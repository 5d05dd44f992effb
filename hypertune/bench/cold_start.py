"""The cold start (issue #33): README's main job, ``hypertune mert`` on the five-sentence fixture, in a fresh
process with an empty numba cache, as on a machine that has just installed hypertune; then again on the
cache it wrote. Also which kernels a command compiles (:func:`kernels_used`), which
tests/engine/test_compiled_kernels_used.py checks for the main job.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from hypertune.bench.core import Figure
from hypertune.errors import UsageError

#: README.md's first command's main job (run from the repository root).
MAIN_JOB = (
    "mert",
    "fixtures/mert/nbest.txt",
    "--refs",
    "fixtures/mert/ref.",
    "--init",
    "fixtures/mert/init.weights",
    "--restarts",
    "5",
    "--seed",
    "1",
)
COLD_START_TARGET = 15.0  # seconds beyond the install before the main job's result is printed (#33)

# Runs a command of the CLI and prints (on the last line of stderr) the numba kernels of hypertune that Python
# called, with how many versions of each it needed (each a compile, or a load from numba's cache). Kernels
# that only other kernels call are compiled into their callers (and loaded with them), so they are not
# counted: the count is the same on a cold cache and a warm one.
_LIST_KERNELS = """
import collections, json, sys
from numba.core.dispatcher import Dispatcher
entries = collections.Counter()
compile_for_args = Dispatcher._compile_for_args
def counted(self, *args, **kws):
    entries[self.py_func.__module__ + "." + self.py_func.__qualname__] += 1
    return compile_for_args(self, *args, **kws)
Dispatcher._compile_for_args = counted
from hypertune.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
print(json.dumps({"code": code, "kernels": dict(entries)}), file=sys.stderr)
"""


def repository_root() -> Path:
    """The checkout that holds ``fixtures/`` (an editable install); a UsageError elsewhere."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "fixtures" / "mert" / "nbest.txt").is_file():
        raise UsageError(f"the cold-start suite runs README's main job on {root}/fixtures: not found")
    return root


def _run(command: Sequence[str], cache_dir: str | None, root: Path) -> tuple[float, float, dict]:
    """``(wall seconds, CPU seconds, the listing)`` of one ``hypertune`` command in a fresh process, with
    numba's cache in ``cache_dir`` (None: where this process has it)."""
    env = dict(os.environ) if cache_dir is None else {**os.environ, "NUMBA_CACHE_DIR": cache_dir}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _LIST_KERNELS, *command], cwd=root, env=env, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stderr.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"hypertune {' '.join(command)} failed: {done.stderr.strip()[-2000:]}")
    return wall, cpu, json.loads(lines[-1])


def kernels_used(command: Sequence[str] = MAIN_JOB, cache_dir: str | None = None) -> dict[str, int]:
    """The kernels (module.name) that ``hypertune COMMAND`` calls from Python, each compiled (or loaded from
    numba's cache) with the kernels it calls, and how many versions of each it needed, in a fresh process
    (``cache_dir``: numba's cache; default this process's, usually next to the sources)."""
    return dict(_run(command, cache_dir, repository_root())[2]["kernels"])


def cold_start_figures() -> list[Figure]:
    """README's main job on an empty numba cache (every kernel it uses compiled: the first run on a fresh
    machine) against the 15 s goal, and the same command again on the cache the first run wrote."""
    root = repository_root()
    with tempfile.TemporaryDirectory(prefix="hypertune-cold-") as cache_dir:
        cold_wall, cold_cpu, listing = _run(MAIN_JOB, cache_dir, root)
        warm_wall, warm_cpu, _ = _run(MAIN_JOB, cache_dir, root)
    versions = sum(listing["kernels"].values())
    kernels = len(listing["kernels"])
    load = os.getloadavg()[0]
    return [
        Figure(
            "cold start: README's main job, empty numba cache",
            cold_wall,
            COLD_START_TARGET,
            f"CPU {cold_cpu:.1f} s, {kernels} kernels ({versions} versions) with their callees, load {load:.1f}",
        ),
        Figure(
            "warm start: the same, kernels from the cache",
            warm_wall,
            None,
            f"CPU {warm_cpu:.1f} s, load {load:.1f}",
        ),
    ]
