"""The cold start (issue #33): README's main job, ``hypertune mert`` on the five-sentence fixture, in a fresh
process with an empty numba cache, as on a machine that has just installed hypertune (best of a few runs: the
machine is shared); then again on the cache it wrote. Also which kernels a command compiles
(:func:`kernels_used`), which tests/engine/test_compiled_kernels_used.py checks for the main job, and what
each costs to compile (:func:`compile_seconds`).
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
# counted: the count is the same on a cold cache and a warm one. Also the CPU seconds of each such kernel's
# compile, the kernels it calls included (numba's compile events; a callee that an earlier kernel compiled is
# not compiled again; the first kernel's figure includes numba's one-off start-up).
_LIST_KERNELS = """
import collections, json, sys, time
from numba.core import event
from numba.core.dispatcher import Dispatcher
entries = collections.Counter()
compile_for_args = Dispatcher._compile_for_args
def counted(self, *args, **kws):
    entries[self.py_func.__module__ + "." + self.py_func.__qualname__] += 1
    return compile_for_args(self, *args, **kws)
Dispatcher._compile_for_args = counted
seconds, depth, start = collections.Counter(), [0], [0.0]
class Timer(event.Listener):
    def on_start(self, ev):
        depth[0] += 1
        if depth[0] == 1:
            start[0] = time.process_time()
    def on_end(self, ev):
        depth[0] -= 1
        if depth[0] == 0:
            f = ev.data["dispatcher"].py_func
            seconds[f.__module__ + "." + f.__qualname__] += time.process_time() - start[0]
event.register("numba:compile", Timer())
from hypertune.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
print(json.dumps({"code": code, "kernels": dict(entries), "seconds": dict(seconds)}), file=sys.stderr)
"""
COLD_RUNS = 3  # cold runs of the main job, the best (least CPU) reported


def repository_root() -> Path:
    """The checkout that holds ``fixtures/`` (an editable install); a UsageError elsewhere."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "fixtures" / "mert" / "nbest.txt").is_file():
        raise UsageError(f"the cold-start suite runs README's main job on {root}/fixtures: not found")
    return root


def _run(command: Sequence[str], cache_dir: str | None, root: Path) -> tuple[float, float, dict]:
    """``(wall seconds, CPU seconds, the listing)`` of one ``hypertune`` command in a fresh process, with
    numba's cache in ``cache_dir`` (None: where this process has it); the listing also has ``user``, the
    process's user CPU seconds."""
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
    listing = json.loads(lines[-1])
    listing["user"] = after.ru_utime - before.ru_utime
    return wall, cpu, listing


def kernels_used(command: Sequence[str] = MAIN_JOB, cache_dir: str | None = None) -> dict[str, int]:
    """The kernels (module.name) that ``hypertune COMMAND`` calls from Python, each compiled (or loaded from
    numba's cache) with the kernels it calls, and how many versions of each it needed, in a fresh process
    (``cache_dir``: numba's cache; default this process's, usually next to the sources)."""
    return dict(_run(command, cache_dir, repository_root())[2]["kernels"])


def compile_seconds(command: Sequence[str] = MAIN_JOB) -> dict[str, float]:
    """CPU seconds of compiling each kernel that ``hypertune COMMAND`` calls from Python (with the kernels it
    calls that no earlier kernel compiled), on an empty numba cache in a fresh process (the first kernel's
    figure includes numba's one-off start-up)."""
    with tempfile.TemporaryDirectory(prefix="hypertune-cold-") as cache_dir:
        return dict(_run(command, cache_dir, repository_root())[2]["seconds"])


def cold_start_figures(runs: int = COLD_RUNS) -> list[Figure]:
    """README's main job on an empty numba cache (every kernel it uses compiled: the first run on a fresh
    machine) against the 15 s goal, best of ``runs`` (each on a new cache: the least wall time, and the CPU
    seconds and each kernel's compile of the run with the least CPU); and the same command again on the cache
    the last run wrote."""
    root = repository_root()
    colds = []
    for i in range(max(1, runs)):
        with tempfile.TemporaryDirectory(prefix="hypertune-cold-") as cache_dir:
            colds.append(_run(MAIN_JOB, cache_dir, root))
            if i == max(1, runs) - 1:
                warm_wall, warm_cpu, _ = _run(MAIN_JOB, cache_dir, root)
    _, cold_cpu, listing = min(colds, key=lambda run: run[1])
    versions = sum(listing["kernels"].values())
    kernels = len(listing["kernels"])
    load = os.getloadavg()[0]
    costs = sorted(listing["seconds"].items(), key=lambda item: -item[1])
    compiles = ", ".join(f"{name.removeprefix('hypertune.')} {seconds:.1f}" for name, seconds in costs)
    walls = ", ".join(f"{run[0]:.1f}" for run in colds)
    return [
        Figure(
            f"cold start: README's main job, empty numba cache (best of {len(colds)})",
            min(run[0] for run in colds),
            COLD_START_TARGET,
            f"CPU {cold_cpu:.1f} s (user {listing['user']:.1f}), walls {walls} s, {kernels} kernels ({versions} "
            f"versions) with their callees; compile CPU s: {compiles}; load {load:.1f}",
        ),
        Figure(
            "warm start: the same, kernels from the cache",
            warm_wall,
            None,
            f"CPU {warm_cpu:.1f} s, load {load:.1f}",
        ),
    ]
