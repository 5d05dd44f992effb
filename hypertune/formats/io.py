"""Opening files: gzip, bzip2 and xz are recognised by their magic bytes, whatever the file is called."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import tempfile
from typing import IO

_MAGIC = ((b"\x1f\x8b", gzip.open), (b"BZh", bz2.open), (b"\xfd7zXZ\x00", lzma.open))


def open_text(path: str | os.PathLike[str]) -> IO[str]:
    """A text stream over ``path`` (UTF-8), decompressing transparently."""
    with open(path, "rb") as raw:
        head = raw.read(6)
    for magic, opener in _MAGIC:
        if head.startswith(magic):
            return io.TextIOWrapper(opener(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def read_head(path: str | os.PathLike[str], size: int = 4096) -> str:
    """The first ``size`` characters of a (possibly compressed) text file, for format sniffing."""
    with open_text(path) as handle:
        try:
            return handle.read(size)
        except (UnicodeDecodeError, EOFError, OSError, lzma.LZMAError):
            return ""


def write_atomically(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: never a half-written file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".hypertune-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
