"""``write_atomically`` (formats/io.py): what it replaces and what it writes into. A path that is a symbolic
link keeps its link; a path that is no regular file (a named pipe here; ``/dev/stdout`` in use) is written
into, never replaced by a regular file (it once renamed its temporary file over ``/dev/stdout``), and a path
that names an open descriptor is written through it, after what the process printed before."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hypertune.formats.io import write_atomically


def test_a_regular_file_is_replaced_whole_and_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "weights.txt"
    target.write_text("old old old\n")
    target.chmod(0o640)
    write_atomically(target, "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["weights.txt"]  # no temporary file left


def test_a_symbolic_link_stays_and_its_file_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    real = tmp_path / "runs" / "weights.1"
    real.write_text("old\n")
    link = tmp_path / "weights"
    link.symlink_to(Path("runs") / "weights.1")
    write_atomically(link, b"new\n")
    assert link.is_symlink() and os.readlink(link) == os.path.join("runs", "weights.1")
    assert real.read_text() == "new\n"
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["weights.1"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_named_pipe_is_written_into_not_replaced(tmp_path: Path) -> None:
    pipe = tmp_path / "out"
    os.mkfifo(pipe)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(pipe.read_bytes()), daemon=True)
    reader.start()
    write_atomically(pipe, "line one\nline two\n")
    reader.join(timeout=30)
    assert received == [b"line one\nline two\n"]
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


REDIRECTED = """
import sys
from hypertune.formats.io import write_atomically
print("before")
write_atomically(sys.argv[1], "WEIGHTS\\n")
print("after")
"""


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_standard_output_redirected_to_a_file_is_written_through_not_replaced(tmp_path: Path, name: str) -> None:
    if not os.path.exists(name):
        pytest.skip(f"{name} does not exist here")
    log = tmp_path / "log"
    log.write_text("earlier line\n")
    with open(log, "ab") as out:  # as the shell's >> gives it
        subprocess.run([sys.executable, "-c", REDIRECTED, name], stdout=out, check=True)
    assert log.read_text() == "earlier line\nbefore\nWEIGHTS\nafter\n"


def test_a_link_into_a_missing_folder_is_an_error_naming_its_target(tmp_path: Path) -> None:
    link = tmp_path / "weights"
    link.symlink_to(tmp_path / "missing" / "weights.1")
    with pytest.raises(FileNotFoundError) as raised:
        write_atomically(link, "new\n")
    assert raised.value.filename == str(tmp_path / "missing" / "weights.1")


def test_a_loop_of_links_is_an_error_and_stays(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to("loop")
    with pytest.raises(OSError, match="symbolic links") as raised:
        write_atomically(loop, "new\n")
    assert raised.value.errno == errno.ELOOP and loop.is_symlink()
