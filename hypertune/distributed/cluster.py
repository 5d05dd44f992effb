"""Where the workers are: ``--cluster local[:N]`` or ``--cluster tcp://HOST:PORT``.

``local[:N]`` starts a Dask ``LocalCluster`` of ``N`` worker processes (default: the machine's cores), one
thread each, with ``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS`` and ``OPENBLAS_NUM_THREADS`` set to 1 in the
workers' environment so that N workers use N cores, not N times the cores. ``tcp://HOST:PORT`` connects to a
running scheduler (``dask scheduler``) whose workers were started with ``dask worker --nthreads 1`` (see
docs/distributed.md). The client's session closes the cluster it started when the run ends.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hypertune import interrupts
from hypertune.errors import UsageError

#: environment of every local worker process: one thread per process for numba, OpenMP and BLAS
WORKER_ENVIRONMENT = {
    "NUMBA_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}


@dataclass(frozen=True)
class ClusterSpec:
    """A parsed ``--cluster`` value: ``local`` with ``workers`` processes, or a scheduler ``address``."""

    kind: str  # "local" or "remote"
    workers: int = 0
    address: str = ""

    def describe(self) -> str:
        return f"a local cluster of {self.workers} worker processes" if self.kind == "local" else self.address


def parse_cluster(text: str) -> ClusterSpec:
    """``local``, ``local:N`` or ``tcp://HOST:PORT`` (``tls://`` too); anything else is a usage error."""
    if text == "local" or text.startswith("local:"):
        count = text.partition(":")[2]
        if not count:
            return ClusterSpec("local", os.cpu_count() or 1)
        if not count.isdigit() or int(count) < 1:
            raise UsageError(f"--cluster {text!r}: expected local, local:N with N >= 1, or tcp://HOST:PORT")
        return ClusterSpec("local", int(count))
    scheme, sep, rest = text.partition("://")
    if sep and scheme in ("tcp", "tls", "ucx") and rest and ":" in rest:
        return ClusterSpec("remote", address=text)
    raise UsageError(f"--cluster {text!r}: expected local, local:N or a scheduler address tcp://HOST:PORT")


def worker_environment(dask: Any) -> dict[str, str]:
    """What a local worker process starts with: Dask's own pre-spawn environment, one thread per library
    (:data:`WORKER_ENVIRONMENT`), and *without* Dask's ``MALLOC_TRIM_THRESHOLD_=65536``. Setting that variable
    fixes glibc's mmap threshold at 128 kB, so every large array the envelope kernels allocate and free in a
    line search is a fresh mmap: 22,000 page faults and 40-50 ms of system time per line search per worker
    on the benchmark (docs/distributed.md), a third of the worker's time."""
    environ = {k: str(v) for k, v in (dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {}).items()}
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    environ.update(WORKER_ENVIRONMENT)
    return environ


def require_dask() -> Any:
    """The ``distributed`` module, or a one-line usage error naming the extra to install (the package's
    ``__init__`` calls this before anything imports Dask, so no command can end in a ModuleNotFoundError)."""
    try:
        import distributed
    except ImportError as error:
        raise UsageError(
            f"--cluster needs Dask distributed, which is not installed ({error}): pip install 'hypertune[dist]'"
        ) from None
    return distributed


@contextmanager
def open_cluster(
    spec: ClusterSpec | str, progress: Callable[[str], None] | None = None, timeout: float = 30.0
) -> Iterator[Any]:
    """A ``distributed.Client`` of the cluster ``spec`` for the ``with`` block (a local cluster is started
    and shut down with it). ``progress`` gets the dashboard's address when the scheduler serves one (it
    needs ``bokeh``). A scheduler that cannot be reached within ``timeout`` seconds is a one-line error."""
    spec = parse_cluster(spec) if isinstance(spec, str) else spec
    distributed = require_dask()
    for name in ("distributed", "distributed.nanny", "distributed.worker", "distributed.scheduler"):
        logging.getLogger(name).setLevel(logging.ERROR)  # a lost worker is reported once, by us
        if _quiet_while_stopping not in logging.getLogger(name).filters:  # a signal to the process group
            logging.getLogger(name).addFilter(_quiet_while_stopping)  # kills the workers: no news then
    cluster = None
    try:
        if spec.kind == "local":
            import dask

            with (
                dask.config.set({"distributed.nanny.pre-spawn-environ": worker_environment(dask)}),
                _environment_kept(),
                _signals_ignored(),
            ):
                cluster = distributed.LocalCluster(
                    n_workers=spec.workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",  # any free port (the dashboard itself needs bokeh)
                    silence_logs=logging.ERROR,
                    env=dict(WORKER_ENVIRONMENT),
                )
            client = distributed.Client(cluster, timeout=timeout)
        else:
            client = distributed.Client(spec.address, timeout=timeout)
    except (OSError, TimeoutError) as error:
        if cluster is not None:
            cluster.close()
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UsageError(f"--cluster {spec.address or 'local'}: cannot reach the scheduler ({reason})") from None
    try:
        link = dashboard_link(client)
        if progress is not None:
            progress(f"dask: {spec.describe()}" + (f", dashboard {link}" if link else " (no dashboard: needs bokeh)"))
        yield client
    except KeyboardInterrupt:  # a signal to the process group reached the workers too: their going is no news
        for name in ("distributed", "distributed.nanny", "distributed.worker", "distributed.scheduler"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        raise
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _quiet_while_stopping(record: logging.LogRecord) -> bool:
    """A logging filter: nothing from Dask while a signal is pending (:func:`hypertune.interrupts.pending`)."""
    return interrupts.pending() is None


@contextmanager
def _signals_ignored() -> Iterator[None]:
    """SIGINT ignored while the local workers are spawned, so that they inherit it (an ignored signal stays
    ignored across exec, and Python then installs no handler of its own): Ctrl-C on a terminal reaches the
    whole process group, and the workers must not die of it, with tracebacks, while the client stops at its
    next safe point and closes the cluster itself (:mod:`hypertune.interrupts`). A Ctrl-C during those seconds
    is lost."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.SIG_DFL)


@contextmanager
def _environment_kept() -> Iterator[None]:
    """Dask's nannies write the workers' environment (``NUMBA_NUM_THREADS=1``, ...) into this process's own
    ``os.environ`` to spawn them; put ours back, or this process's numba, whose thread count is fixed once its
    threads start, refuses to compile anything more ("Cannot set NUMBA_NUM_THREADS to a different value")."""
    saved = dict(os.environ)
    try:
        yield
    finally:
        for name in set(os.environ) - set(saved):
            del os.environ[name]
        for name, value in saved.items():
            if os.environ.get(name) != value:
                os.environ[name] = value


def dashboard_link(client: Any) -> str | None:
    """The scheduler's dashboard address, or None when it serves none."""
    try:
        services = client.scheduler_info().get("services", {})
    except Exception:  # an old or unusual scheduler: no link
        return None
    if "dashboard" not in services:
        return None
    try:
        import bokeh  # noqa: F401 - without it the scheduler serves no dashboard pages
    except ImportError:
        return None
    return client.dashboard_link
