"""Reference translations: ``references[i]`` is the list of reference strings of sentence ``i``.

Three layouts:

* one file per reference (``--ref r0 --ref r1``): line ``i`` of every file is a reference of sentence
  ``i``; the files must have the same number of lines;
* a file prefix: ``ref`` finds ``ref0, ref1, ...`` (Moses) or ``ref.0, ref.1, ...`` (cdec, Z-MERT) --
  used when the path itself does not exist;
* an interleaved file with a fixed number ``per_sentence`` of references per sentence (Z-MERT's
  ``-rps``): lines ``k*i .. k*i+k-1`` are the references of sentence ``i``.

Lines are stripped of surrounding whitespace (tokens are whitespace-separated); gzip, bzip2 and xz
are transparent; ``-``, pipes and process substitution are read once. A file that is evidently not
references (an n-best list, a FEATSTAT file, JSON, binary data) is refused with a message saying so.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from hypertune.errors import InputError, UsageError
from hypertune.formats.io import read_text


class References(list):
    """References per sentence (a list of lists of strings) that remembers the ``files`` they came from,
    so that a sentence id past their end can name them."""

    def __init__(self, rows: Iterable[list[str]] = (), files: Iterable[str] = ()) -> None:
        super().__init__(rows)
        self.files = list(files)

    def describe(self) -> str:
        """The reference files as a user would name them."""
        return " ".join(self.files) if self.files else "the references"


def not_references_reason(text: str) -> str | None:
    """Why ``text`` is evidently not a reference file, or ``None``."""
    if "\0" in text[:4096]:
        return "binary data"
    stripped = text.lstrip()
    if stripped.startswith(("FEATURES_TXT_BEGIN", "SCORES_TXT_BEGIN")):
        return "a Moses FEATSTAT/SCORESTAT file"
    if stripped.startswith("{") and stripped.rstrip().endswith("}"):
        return "JSON (a graph or weights file?)"
    lines = [line for line in stripped.split("\n", 20)[:20] if line.strip()]
    if lines and sum(line.count("|||") >= 2 for line in lines) > len(lines) // 2:
        return "an n-best list ('|||' fields)"
    return None


def read_reference_text(path: str) -> str:
    """The text of one reference file, refused if it is evidently something else."""
    text = read_text(path, "reference file")
    reason = not_references_reason(text)
    if reason is not None:
        raise InputError(f"this looks like {reason}, not references (one translation per line)", path)
    return text


def _read_lines(path: str) -> list[str]:
    return [line.strip() for line in read_reference_text(path).split("\n")]


def text_lines(text: str) -> list[str]:
    """The lines of a text, as written (a final newline ends the last line; it does not start another)."""
    return _drop_final_newline(text.split("\n"))


def _drop_final_newline(lines: list[str]) -> list[str]:
    return lines[:-1] if lines and lines[-1] == "" else lines


def reference_files(paths: Iterable[str]) -> list[str]:
    """The reference files of ``paths`` as given on a command line: each a file, or a prefix of ``REF.0 REF.1
    ...`` (:func:`expand_prefix`)."""
    files: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            raise InputError("is a directory, expected a reference file or a prefix of REF.0 REF.1 ...", path)
        files.extend([path] if _is_file(path) else expand_prefix(path))
    return files


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


def _is_file(path: str) -> bool:
    """A path to read as one file: standard input, a file, a pipe or a process substitution."""
    return path == "-" or (os.path.exists(path) and not os.path.isdir(path))


def read_references(paths: str | Iterable[str], per_sentence: int | None = None) -> References:
    """References per sentence (see the module docstring)."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    if not paths:
        raise UsageError("no reference files given")
    files = reference_files(paths)
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
        return References((lines[i : i + per_sentence] for i in range(0, len(lines), per_sentence)), files)
    columns = [_drop_final_newline(_read_lines(f)) for f in files]
    for f, column in zip(files[1:], columns[1:], strict=True):
        if len(column) != len(columns[0]):
            raise InputError(
                f"has {len(column)} lines but {files[0]} has {len(columns[0])}; every reference file needs one "
                "line per sentence",
                f,
            )
    return References((list(refs) for refs in zip(*columns, strict=True)), files)
