"""What every benchmark shares: a figure (a median time, the project's target and its anchor), timing, and
the benchmark corpora of ``shared/tools/make_bench.py``, built once per work folder and reused."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Figure:
    """One measured figure: the median wall time, the project's target for it (seconds) and where that
    target comes from (``anchor``: the project's own goal, or the tool it must beat on this machine)."""

    name: str
    seconds: float
    target: float | None = None
    detail: str = ""
    anchor: str = "project goal"

    @property
    def met(self) -> bool | None:
        return None if self.target is None else self.seconds <= self.target


def median_time(function: Callable[[], object], repeat: int) -> float:
    function()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def make_bench_corpus(
    shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str], kind: str, count: int, seed: int = 7
) -> Path:
    """``workdir/<kind><count>``, written by the shared ``tools/make_bench.py`` (``shared_dir`` is the
    ``shared`` folder) into a temporary folder and renamed, so an interrupted run leaves nothing half-made."""
    out = Path(workdir) / f"{kind}{count}"
    if not out.is_dir():
        Path(workdir).mkdir(parents=True, exist_ok=True)
        tool = Path(shared_dir) / "tools" / "make_bench.py"
        staging = Path(tempfile.mkdtemp(prefix=f".{kind}{count}-", dir=workdir))
        try:
            subprocess.run(
                [sys.executable, str(tool), kind, str(staging / "corpus"), str(count), str(seed)],
                check=True,
                capture_output=True,
            )
            os.replace(staging / "corpus", out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return out
