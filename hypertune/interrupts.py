"""SIGINT and SIGTERM held until a safe point, so that a long computation stops cleanly and keeps its work.

Python raises ``KeyboardInterrupt`` from its SIGINT handler at the next bytecode it runs. When that is inside
the dispatcher of a compiled (numba) function, the kernel's result comes back with the exception set and
numba reports ``SystemError: CPUDispatcher(...) returned a result with an exception set``; and wherever it
happens, the run's state -- the best weights found so far -- is lost with the stack. So the command line
installs :func:`handler` for both signals (:func:`installed`), and runs the tuners inside :func:`deferred`:
there a signal is only recorded, and the computation stops at its next safe point -- between kernel calls,
where the tuners call :func:`check` (after every line search, sentence, epoch, objective evaluation) -- by
raising :class:`Interrupted`, with everything it reported so far intact (the tuners' ``checkpoint`` option).
A signal recorded after the last safe point is raised when the ``deferred`` block ends, and an error that
ends the block while a signal is pending becomes the interrupt (the signal probably caused it: a process
group's signal kills a cluster's workers too): a run that was signalled never ends as if it had not been.
Outside ``deferred`` the handler raises :class:`Interrupted` at once, as Python's own would; so does a second
signal while one is pending (the user insists).

A single compiled kernel that runs long (the exact oracle's branch and bound) is run by :func:`watched` in a
helper thread while this one waits, and polls a flag that a signal sets, so it too stops within moments.

Without :func:`installed` (the library used from Python), nothing changes: :func:`check` finds nothing
pending and Python's own handler raises ``KeyboardInterrupt`` as usual. This module imports nothing of
hypertune; every layer may use it (the tuners, the oracles and the cluster's logging do).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

#: The signals :func:`installed` handles.
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """A run stopped by ``signum``. ``exit_code``: 128 + the signal's number (130 for SIGINT, 143 for
    SIGTERM), as a shell reports a process the signal killed; ``message``: the one line the command line
    prints (the caller may give a fuller one, naming what was saved)."""

    def __init__(self, signum: int = signal.SIGINT, message: str | None = None) -> None:
        self.signum = int(signum)
        self.message = message or f"interrupted ({self.name})"
        super().__init__(self.message)

    @property
    def name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:  # pragma: no cover - only SIGINT and SIGTERM are handled
            return f"signal {self.signum}"

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    def explained(self, message: str) -> Interrupted:
        """The same interrupt with another message."""
        return Interrupted(self.signum, message)


class _State:
    pending: int | None = None  # the signal recorded inside deferred() and not raised yet
    depth = 0  # how many deferred() blocks are open


_state = _State()


def handler(signum: int, frame: object) -> None:
    """The signal handler :func:`installed` sets: records the signal inside :func:`deferred`, else raises."""
    if _state.depth == 0 or _state.pending is not None:
        _state.pending = None
        raise Interrupted(signum)
    _state.pending = signum


@contextmanager
def installed() -> Iterator[None]:
    """:func:`handler` for SIGINT and SIGTERM for the ``with`` block (the previous handlers restored after it).
    A signal the process ignores (a shell's background job ignores SIGINT, ``nohup`` SIGHUP) stays ignored,
    and off the main thread (where Python cannot set handlers) nothing is installed."""
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in SIGNALS:
            current = signal.getsignal(signum)
            if current is not signal.SIG_IGN:
                previous[signum] = current
                signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)


@contextmanager
def deferred() -> Iterator[None]:
    """Hold signals until the next :func:`check` for the ``with`` block (see the module docstring); one
    recorded after the last check is raised when the block ends."""
    _state.depth += 1
    try:
        yield
    except Exception as error:
        _state.depth -= 1
        signum, _state.pending = _state.pending, None
        if signum is not None:  # it failed while stopping: most likely of the signal (a worker it killed too)
            raise Interrupted(signum) from error
        raise
    except BaseException:
        _state.depth -= 1
        _state.pending = None
        raise
    _state.depth -= 1
    if _state.depth == 0 and _state.pending is not None:
        signum, _state.pending = _state.pending, None
        raise Interrupted(signum)


def pending() -> int | None:
    """The signal recorded and not raised yet, if any."""
    return _state.pending


def check() -> None:
    """A safe point: raise :class:`Interrupted` if a signal was recorded (see the module docstring). Cheap:
    call it as often as every sentence."""
    if _state.pending is not None:
        signum, _state.pending = _state.pending, None
        raise Interrupted(signum)


def watched(function: Callable[[], T], stop: Callable[[], None]) -> T:
    """``function()``, run in a helper thread while this one waits, when signals are deferred on the main
    thread: a signal that arrives meanwhile calls ``stop()`` at once (say, setting a flag that the compiled
    loop of ``function`` polls, so that it returns early), and :class:`Interrupted` is raised once ``function``
    has returned. ``function`` must release the GIL to run while this thread waits (numba ``nogil``).
    Otherwise (signals not deferred, or not the main thread) simply ``function()``."""
    if _state.depth == 0 or threading.current_thread() is not threading.main_thread():
        return function()
    outcome: list = []

    def target() -> None:
        try:
            outcome.append((True, function()))
        except BaseException as error:  # handed to the waiting thread
            outcome.append((False, error))

    thread = threading.Thread(target=target, name="hypertune-watched", daemon=True)
    thread.start()
    stopped = False
    while thread.is_alive():
        thread.join(0.05)
        if _state.pending is not None and not stopped:
            stop()
            stopped = True
    ok, value = outcome[0]
    if not ok:
        raise value
    check()
    return value


def as_interrupt(error: BaseException) -> Interrupted | None:
    """The interrupt behind ``error``: the :class:`Interrupted` (or ``KeyboardInterrupt``) itself, or the one a
    compiled function's dispatcher turned into ``SystemError`` ("returned a result with an exception set"),
    found among its causes; ``None`` when no interrupt is behind it."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, Interrupted):
            return current
        if isinstance(current, KeyboardInterrupt):
            return Interrupted(signal.SIGINT)
        if not isinstance(current, SystemError):
            return None
        current = current.__cause__ or current.__context__
    return None
