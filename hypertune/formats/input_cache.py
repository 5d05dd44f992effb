"""Parsed inputs kept in a folder as native caches (:mod:`hypertune.formats.cache`), so that runs over the
same inputs (every MERT iteration, every run of a tuning loop) read them once.

An entry is named after the input's absolute path and its *state*: for every file it comes from (an hgdir
is all its files; a FEATSTAT is read with its SCORESTAT) the size, modification time in nanoseconds and
inode, plus the reader options and the cache format version. Touching, truncating, rewriting or replacing
an input changes its state, so its old entry is never used: it is deleted and a new one written. An
entry that cannot be read (damaged, or cut short) is reported in one line, deleted and rebuilt; it is
never used. Entries are written atomically, so two runs sharing a folder see whole files or none.

Each input is parsed into fresh feature names and vocabulary, cached, and then loaded from the cache into
the caller's, so the names come out in the same order whether or not the cache was used.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence

from hypertune.choices import CACHE_ENVIRONMENT
from hypertune.errors import InputError, warn
from hypertune.formats import cache
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary

#: The environment variable naming a default cache folder (``--cache`` overrides it).
ENVIRONMENT = CACHE_ENVIRONMENT

Reader = Callable[[FeatureSpace, Vocabulary], list[Hypergraph]]


def cache_folder(option: str | None) -> str | None:
    """The cache folder: the ``--cache`` option, else ``$HYPERTUNE_CACHE``, else ``None`` (no cache)."""
    return option or os.environ.get(ENVIRONMENT) or None


class InputCache:
    """Native copies of parsed inputs in ``folder`` (created when missing)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as error:
            raise InputError(f"cannot create the cache folder ({error.strerror or error})", folder) from None
        if not os.access(folder, os.W_OK):
            raise InputError("the cache folder is not writable", folder)

    def load(
        self,
        path: str,
        sources: Sequence[str],
        options: str,
        read: Reader,
        feature_space: FeatureSpace,
        vocabulary: Vocabulary,
    ) -> list[Hypergraph]:
        """The graphs of input ``path`` (made of the files ``sources``, read with ``options``): from its
        entry when the sources are as they were when it was written, else by ``read`` (then cached)."""
        name = _digest(os.path.abspath(path))
        entry = os.path.join(self.folder, f"{name}-{_digest(_state(sources), options, str(cache.VERSION))}.htc")
        if os.path.isfile(entry):
            try:
                return cache.read(entry, feature_space, vocabulary)
            except InputError as error:
                warn(f"{error}; the cache entry of {path} is rebuilt")
        for old in os.listdir(self.folder):  # entries of earlier states of this input, and a damaged one
            if old.startswith(name + "-") and old.endswith(".htc"):
                try:
                    os.remove(os.path.join(self.folder, old))
                except FileNotFoundError:  # another run removed it first
                    pass
        graphs = read(FeatureSpace(), Vocabulary())
        cache.write(graphs, entry)
        return cache.read(entry, feature_space, vocabulary)


def _state(sources: Sequence[str]) -> str:
    parts = []
    for source in sources:
        info = os.stat(source)
        parts.append(f"{os.path.abspath(source)}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ino}")
    return "\n".join(parts)


def _digest(*parts: str) -> str:
    return hashlib.sha1("\n".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:20]
