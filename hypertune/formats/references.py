"""Reference translations: ``references[i]`` is the list of reference strings of sentence ``i``.

Three layouts:

* one file per reference (``--ref r0 --ref r1``): line ``i`` of every file is a reference of sentence
  ``i``; the files must have the same number of lines;
* a file prefix: ``ref`` finds ``ref0, ref1, ...`` (Moses) or ``ref.0, ref.1, ...`` (cdec, Z-MERT) --
  used when the path itself is not a file;
* an interleaved file with a fixed number ``per_sentence`` of references per sentence (Z-MERT's
  ``-rps``): lines ``k*i .. k*i+k-1`` are the references of sentence ``i``.

Lines are stripped of surrounding whitespace (tokens are whitespace-separated); gzip, bzip2 and xz
are transparent.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from hypertune.errors import InputError, UsageError
from hypertune.formats.io import open_text


def _read_lines(path: str) -> list[str]:
    try:
        with open_text(path) as handle:
            return [line.strip() for line in handle.read().split("\n")]
    except FileNotFoundError:
        raise InputError("no such reference file", path) from None
    except (UnicodeDecodeError, EOFError, OSError) as error:
        raise InputError(f"cannot read the reference file ({error})", path) from None


def _drop_final_newline(lines: list[str]) -> list[str]:
    return lines[:-1] if lines and lines[-1] == "" else lines


def expand_prefix(prefix: str) -> list[str]:
    """The files ``prefix0, prefix1, ...`` or ``prefix.0, prefix.1, ...`` (whichever exists)."""
    for separator in ("", "."):
        files = []
        k = 0
        while os.path.isfile(f"{prefix}{separator}{k}"):
            files.append(f"{prefix}{separator}{k}")
            k += 1
        if files:
            return files
    raise InputError("no such reference file, nor files named like it with .0, .1, ... or 0, 1, ...", prefix)


def read_references(paths: str | Iterable[str], per_sentence: int | None = None) -> list[list[str]]:
    """References per sentence (see the module docstring)."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    if not paths:
        raise UsageError("no reference files given")
    files: list[str] = []
    for path in paths:
        files.extend([path] if os.path.isfile(path) else expand_prefix(path))
    if per_sentence is not None:
        if per_sentence < 1:
            raise UsageError("the number of references per sentence must be at least 1")
        if len(files) != 1:
            raise UsageError("interleaved references come in one file")
        lines = _drop_final_newline(_read_lines(files[0]))
        if len(lines) % per_sentence:
            raise InputError(
                f"{len(lines)} lines are not a multiple of {per_sentence} references per sentence", files[0], len(lines)
            )
        return [lines[i : i + per_sentence] for i in range(0, len(lines), per_sentence)]
    columns = [_drop_final_newline(_read_lines(f)) for f in files]
    for f, column in zip(files[1:], columns[1:], strict=True):
        if len(column) != len(columns[0]):
            raise InputError(
                f"has {len(column)} lines but {files[0]} has {len(columns[0])}; every reference file needs one "
                "line per sentence",
                f,
            )
    return [list(refs) for refs in zip(*columns, strict=True)]
