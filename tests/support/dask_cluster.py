"""A real Dask cluster for the tests: ``dask scheduler`` and ``dask worker`` started as separate processes on
localhost (the sharded-tuning tests and the tuning loop's lost-worker test)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

DASK = str(Path(sys.executable).with_name("dask"))
ENV = {**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent() -> None:
    """In the child: be killed when the test process dies (Linux), so a killed test run leaves no workers."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class RealCluster:
    """``dask scheduler`` and ``workers`` ``dask worker --no-nanny`` processes (a killed worker stays dead)."""

    def __init__(self, workers: int) -> None:
        self.address = f"tcp://127.0.0.1:{free_port()}"
        port = self.address.rsplit(":", 1)[1]
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": ENV, "cwd": "/",
                 "preexec_fn": die_with_parent}  # fmt: skip
        self.scheduler = subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", port,
                                           "--no-dashboard"], **quiet)  # fmt: skip
        self.workers = [
            subprocess.Popen(
                [
                    DASK,
                    "worker",
                    self.address,
                    "--nthreads",
                    "1",
                    "--no-nanny",
                    "--no-dashboard",
                    "--host",
                    "127.0.0.1",
                ],
                **quiet,
            )  # fmt: skip
            for _ in range(workers)
        ]
        import distributed  # optional: the tests that start a cluster skip without it

        self.client = distributed.Client(self.address, timeout=30)
        self.client.wait_for_workers(workers, timeout=60)

    def close(self) -> None:
        self.client.close()
        for process in [*self.workers, self.scheduler]:
            if process.poll() is None:
                process.terminate()
        for process in [*self.workers, self.scheduler]:
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
