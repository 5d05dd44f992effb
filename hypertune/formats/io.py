"""Opening and writing files.

Reading: gzip, bzip2 and xz are recognised by their magic bytes, whatever the file is called; ``-`` is
standard input; pipes and process substitution (``<(...)``, ``/dev/stdin``) work, since a file is opened
once and its first bytes are peeked, not re-read. A truncated or corrupt compressed file raises
:class:`~hypertune.errors.InputError` naming the file, like every other unreadable input.

A UTF-8 byte-order mark at the start of a file (Windows editors write one) is not part of the text: every
reader here drops it (:func:`read_bytes`, :func:`read_text`, :func:`read_head`, :func:`open_binary`,
:func:`open_text`), so that neither a format's sniffer nor its reader ever sees it, and a weights file's
first name is not ``\\ufefftm_0``.

Writing: :func:`write_atomically` writes through a temporary file and a rename, with the permissions a
plain ``open(path, "w")`` would give; :func:`check_writable` tells before any work is done whether a
path can be written at all.
"""

from __future__ import annotations

import bz2
import codecs
import errno
import gzip
import io
import lzma
import os
import re
import stat
import sys
import tempfile
import zlib
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Protocol

from hypertune.errors import InputError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

_MAGIC = (
    (b"\x1f\x8b", "gzip", lambda raw: gzip.GzipFile(fileobj=raw, mode="rb")),
    (b"BZh", "bzip2", lambda raw: bz2.BZ2File(raw, "rb")),
    (b"\xfd7zXZ\x00", "xz", lambda raw: lzma.LZMAFile(raw, "rb")),
)


class _Decompressor(Protocol):
    def decompress(self, data: bytes, max_length: int, /) -> bytes: ...


_HEAD_DECOMPRESSORS: dict[str, Callable[[], _Decompressor]] = {
    "gzip": lambda: zlib.decompressobj(16 + zlib.MAX_WBITS),
    "bzip2": bz2.BZ2Decompressor,
    "xz": lzma.LZMADecompressor,
}
_CORRUPT = (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile, OSError)
#: The UTF-8 byte-order mark, dropped from the start of every text input.
BOM = codecs.BOM_UTF8


class _Decompressed(io.RawIOBase):
    """A decompressing stream whose read errors (truncation, corruption) name the file."""

    def __init__(self, stream: io.BufferedIOBase, raw: IO[bytes], kind: str, path: str) -> None:
        self._stream, self._raw, self._kind, self._path = stream, raw, kind, path

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        try:
            return self._stream.readinto(buffer)
        except _CORRUPT as error:
            if isinstance(error, OSError) and not isinstance(error, gzip.BadGzipFile) and error.errno is not None:
                raise
            reason = "ends early (truncated)" if isinstance(error, EOFError) else f"is corrupt ({error})"
            raise InputError(f"the {self._kind} data {reason}", self._path) from None

    def close(self) -> None:
        if not self.closed:
            self._stream.close()
            if self._raw is not sys.stdin.buffer:
                self._raw.close()
        super().close()


def open_binary(path: str | os.PathLike[str]) -> io.BufferedReader:
    """``path`` opened for reading bytes (``-``: standard input), decompressed transparently."""
    name = os.fspath(path)
    raw = sys.stdin.buffer if name == "-" else open(name, "rb")
    if not isinstance(raw, io.BufferedReader):  # pragma: no cover - stdin replaced by a plain stream
        raw = io.BufferedReader(raw)
    head = raw.peek(6)[:6]
    for magic, kind, opener in _MAGIC:
        if head.startswith(magic):
            return _without_bom(io.BufferedReader(_Decompressed(opener(raw), raw, kind, name)))
    return _without_bom(raw)


def _without_bom(stream: io.BufferedReader) -> io.BufferedReader:
    """``stream`` past a UTF-8 byte-order mark at its start, if it has one (peeked, so pipes work)."""
    if stream.peek(len(BOM))[: len(BOM)] == BOM:
        stream.read(len(BOM))
    return stream


def open_text(path: str | os.PathLike[str]) -> IO[str]:
    """A UTF-8 text stream over ``path`` (see the module docstring)."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8")


def read_text(path: str | os.PathLike[str], what: str = "file") -> str:
    """The whole text of ``path`` read once; unreadable or non-UTF-8 input is an :class:`InputError`
    naming the file (``what`` says which kind of file, e.g. "reference file")."""
    return read_bytes(path, what).decode("utf-8")


def read_bytes(path: str | os.PathLike[str], what: str = "file") -> bytes:
    """The whole (decompressed) content of ``path`` as UTF-8 bytes with every line ending turned into
    ``\\n``: byte for byte the text :func:`read_text` gives, encoded, for the compiled readers. Errors as
    :func:`read_text`, non-UTF-8 input included."""
    name = os.fspath(path)
    try:
        if name != "-" and os.path.isfile(name):
            with open(name, "rb") as raw:
                data = raw.read()
            if data[:2] == _MAGIC[0][0]:  # gzip in one call: three times faster than the stream
                data = _gunzip(data, name)
            elif any(data.startswith(magic) for magic, _, _ in _MAGIC):
                with open_binary(name) as handle:
                    data = handle.read()
        else:
            with open_binary(name) as handle:
                data = handle.read()
    except FileNotFoundError:
        raise InputError(f"no such {what}", name) from None
    except IsADirectoryError:
        raise InputError(f"is a directory, expected a {what}", name) from None
    except OSError as error:
        raise InputError(f"cannot read the {what} ({error.strerror or error})", name) from None
    if data.startswith(BOM):
        data = data[len(BOM) :]
    try:
        if not data.isascii():  # ASCII is UTF-8: checked without decoding (a tenth of the time)
            data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"not UTF-8 text ({error.reason} at byte {error.start}); expected a {what}", name) from None
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data


def _gunzip(data: bytes, path: str) -> bytes:
    try:
        return gzip.decompress(data)
    except EOFError:
        raise InputError("the gzip data ends early (truncated)", path) from None
    except (zlib.error, gzip.BadGzipFile) as error:
        raise InputError(f"the gzip data is corrupt ({error})", path) from None


def read_head(path: str | os.PathLike[str], size: int = 4096) -> str:
    """The first ``size`` characters (at most) of a (possibly compressed) text file, for format sniffing:
    as much as can be decoded, ``""`` for binary data. A truncated compressed file still shows its
    beginning, so that its reader (not the sniffer) reports the truncation."""
    try:
        with open(path, "rb") as raw:
            data = raw.read(max(1 << 16, 4 * size))
    except OSError:
        return ""
    for magic, kind, _ in _MAGIC:
        if data.startswith(magic):
            try:
                # partial output is fine (no end-of-stream check); at most what is needed
                data = _HEAD_DECOMPRESSORS[kind]().decompress(data, 4 * size)
            except (zlib.error, lzma.LZMAError, OSError, EOFError):
                return ""
    if data.startswith(BOM):
        data = data[len(BOM) :]
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(data[: 4 * size], final=False)[:size]
    except UnicodeDecodeError:
        return ""


def is_empty(path: str | os.PathLike[str]) -> bool:
    """True when the file holds nothing but whitespace (after decompression; unreadable data is not empty)."""
    try:
        with open_binary(path) as stream:
            return not stream.read(4096).strip()
    except (InputError, *_CORRUPT):
        return False


def require_rereadable(path: str | os.PathLike[str], what: str = "graph input") -> None:
    """Graph files are sniffed, then read: a pipe or process substitution would lose its beginning to the
    sniffer and give a silently shorter input, so it is refused (weights and references, read once, may
    come from pipes)."""
    name = os.fspath(path)
    if os.path.exists(name) and not os.path.isdir(name) and not os.path.isfile(name):
        raise InputError(f"a {what} must be a file or a directory, not a pipe or device (write it to a file)", name)


def check_writable(path: str | os.PathLike[str], option: str = "") -> None:
    """Raise :class:`InputError` naming ``path`` as given unless a file can be written there: its directory
    exists and is writable, and the path is not a directory or a read-only file. Call it right after the
    arguments are parsed, so that a bad output path fails before any work is done."""
    name = os.fspath(path)
    where = f" ({option})" if option else ""
    if name == "-":
        return
    directory = os.path.dirname(os.path.abspath(name))
    if os.path.isdir(name):
        raise InputError(f"is a directory, expected a file to write{where}", name)
    if not os.path.isdir(directory):
        parent = os.path.dirname(name) or "."
        raise InputError(f"cannot write there: no such directory {parent}{where}", name)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"cannot write there: the directory is not writable{where}", name)
    if os.path.exists(name) and not os.access(name, os.W_OK):
        raise InputError(f"cannot write there: the file exists and is read-only{where}", name)


def default_file_mode() -> int:
    """The permissions a plain ``open`` gives a new file (0o666 less the umask)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomically(path: str | os.PathLike[str], text: str | bytes) -> None:
    """Write ``text`` (UTF-8; or bytes as they are) to ``path`` through a temporary file and a rename: never a
    half-written file. The file keeps the permissions of the file it replaces, else gets those a plain ``open``
    would give (umask). A symbolic link stays: the file it points to is replaced. A path that names an open
    descriptor (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``) is written through that
    descriptor, after what is already there (a terminal, a pipe, or the file the shell redirected to); any other
    path that is no regular file (``/dev/null``, a named pipe) is written into."""
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    name = os.fspath(path)
    descriptor = _descriptor_of(name)
    if descriptor is not None:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()  # what was printed before comes first
        try:
            with open(descriptor, "wb", closefd=False) as out:
                out.write(data)
        except OSError as error:
            error.filename = name
            raise
        return
    try:
        status: os.stat_result | None = os.stat(name)  # through links
    except OSError:
        status = None
    if status is not None and not stat.S_ISREG(status.st_mode):
        with open(name, "wb") as stream:
            stream.write(data)
        return
    if os.path.islink(name):
        name = os.path.realpath(name)
        if os.path.islink(name):  # a loop of links
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), os.fspath(path))
    directory = os.path.dirname(os.path.abspath(name))
    mode = stat.S_IMODE(status.st_mode) if status is not None else default_file_mode()
    try:
        fd, tmp = tempfile.mkstemp(prefix=".hypertune-", dir=directory)
    except OSError as error:
        error.filename = name  # name the user's path, not the temporary file
        raise
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, name)
    except BaseException as error:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(error, OSError):
            error.filename = name  # name the user's path, not the temporary file
        raise


_DESCRIPTOR_PATH = re.compile(r"/dev/(stdout|stderr)|/dev/fd/(\d+)|/proc/self/fd/(\d+)")


def _descriptor_of(name: str) -> int | None:
    """The open descriptor that ``name`` stands for (``/dev/stdout`` is 1), or None."""
    match = _DESCRIPTOR_PATH.fullmatch(os.path.normpath(name))
    if match is None:
        return None
    if match.group(1):
        return 1 if match.group(1) == "stdout" else 2
    return int(match.group(2) or match.group(3))
