"""``run_decoder``'s CPU accounting: the CPU of the decoder's own children (here a grandchild of the keeper,
under the shell) is counted, as the child itself measures it."""

from __future__ import annotations

import shlex
import signal
import sys
from pathlib import Path

import pytest

from hypertune.loop import DecoderError, run_decoder

BUSY = """
import sys, time
end = time.process_time() + 0.3
while time.process_time() < end:
    pass
open(sys.argv[1], "w").write(repr(time.process_time()))
"""


def test_cpu_seconds_count_what_the_command_ran(tmp_path: Path) -> None:
    own = tmp_path / "own"
    command = f"{shlex.quote(sys.executable)} -c {shlex.quote(BUSY)} {shlex.quote(str(own))} | cat"
    ran = run_decoder(command, str(tmp_path / "out"), str(tmp_path / "log"), 1)
    measured = float(own.read_text())  # the busy process's own CPU, by itself
    assert measured <= ran.cpu_seconds <= measured + 1.0  # plus the keeper's and the shell's start


def test_a_decoder_reaped_elsewhere_is_one_clear_error(tmp_path: Path) -> None:
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # as an application embedding hypertune may set it
    try:
        with pytest.raises(DecoderError, match="cannot tell how the decoder ended in iteration 2"):
            run_decoder("true", str(tmp_path / "out"), str(tmp_path / "log"), 2)
    finally:
        signal.signal(signal.SIGCHLD, previous)
