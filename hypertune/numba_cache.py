"""numba's on-disk kernel cache, made to notice changes anywhere in the package.

numba marks a cached kernel stale when the file that defines it changes, not when a function it calls from
another file does (``select_hope_fear`` in ``tuners/hope_fear.py``, compiled into MIRA's epoch in
``tuners/mira.py``): after such an edit a kernel would run the old callee, silently. The locator here wraps
numba's own for every file of this package and adds to each kernel's freshness stamp one of the whole package
(:func:`package_stamp`: its Python files' number, total size and latest modification), so that a change to any
of them recompiles the kernels. Every module that defines cached kernels imports this one first (a kernel's
locator is chosen when it is decorated); numba's private locator list is used, and left alone when a numba
version lacks it.

A module defines dozens of kernels, and numba checks for each that its cache folder exists and is writable by
creating a file there (0.1 ms each, 15-20 ms of every command's start): the locator remembers the cache folder
each source folder's kernels got, and checks it once (a folder found unwritable is asked about again).

numba adds a version of a kernel to its cache by reading the kernel's index, picking the first free data file
name (``NAME.1.nbc``, ...), writing the index and then the data file. Two processes adding different versions of
one kernel at once (``tune --runs``, a cluster's workers, two commands on an empty cache) can both pick the same
name, and the index then names one version's file for the other's code, which numba would load without a
check. Each save here holds an exclusive lock on the cache folder's :data:`LOCK_NAME` while it reads the index,
writes the data file and only then the index (:func:`_locked_save`; every numba cache of the process, the
user's kernels' too); loads take no lock. What numba stores is unchanged.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import sys
from typing import Any

from numba.core import caching, config

#: The package's folder: kernels of files below it get the package's stamp.
ROOT = os.path.dirname(os.path.abspath(__file__))


def package_stamp(root: str = ROOT) -> tuple[int, int, int]:
    """The number, total size and latest modification time (ns) of the ``.py`` files below ``root``: it changes
    when any of them is edited, added or removed."""
    count = size = latest = 0
    for folder, folders, files in os.walk(root):
        folders[:] = [f for f in folders if f != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                try:
                    status = os.stat(os.path.join(folder, name))
                except OSError:  # a dangling link (an editor's lock file, .#x.py) or a file removed meanwhile
                    continue
                count, size, latest = count + 1, size + status.st_size, max(latest, status.st_mtime_ns)
    return count, size, latest


@functools.cache
def _stamp() -> tuple[int, int, int]:
    return package_stamp()


_IMPL: Any = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
_BASE: Any = getattr(caching, "_CacheLocator", object)


#: numba's locators whose ``from_function`` is: the file exists, make the locator, check its folder writable.
_CHECKED_BY_FOLDER = tuple(
    c
    for c in (
        getattr(caching, name, None)
        for name in ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")
    )
    if isinstance(c, type)
)


class PackageLocator(_BASE):
    """numba's locator of a kernel of this package (the first of numba's own that takes its file), with the
    package's stamp beside the file's."""

    numba_locators: list[Any] = []
    #: (numba's locator, a source folder) -> the cache folder made and found writable for that folder's kernels.
    checked: dict[tuple[Any, str], str] = {}

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._py_file = getattr(inner, "_py_file", None)  # read by numba when it refuses to cache a kernel

    def ensure_cache_path(self) -> None:
        self.inner.ensure_cache_path()

    def get_cache_path(self) -> str:
        return str(self.inner.get_cache_path())

    def get_source_stamp(self) -> Any:
        return (self.inner.get_source_stamp(), _stamp())

    def get_disambiguator(self) -> str:
        return str(self.inner.get_disambiguator())

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> PackageLocator | None:
        if not os.path.abspath(py_file).startswith(ROOT + os.sep):
            return None
        for locator in cls.numba_locators:
            inner = cls._checked_before(locator, py_func, py_file) or locator.from_function(py_func, py_file)
            if inner is not None:
                if locator in _CHECKED_BY_FOLDER:
                    cls.checked[(locator, os.path.dirname(py_file))] = os.path.abspath(inner.get_cache_path())
                return cls(inner)
        return None

    @classmethod
    def _checked_before(cls, locator: Any, py_func: Any, py_file: str) -> Any:
        """numba's ``locator`` of ``py_func`` without its folder check when another kernel of the same source
        folder got the same cache folder already (a changed ``NUMBA_CACHE_DIR`` or working folder gives another:
        checked anew). numba's other conditions are kept: the file exists, a cache folder is configured for
        ``NUMBA_CACHE_DIR``'s locator, and a frozen program always goes through numba."""
        folder = cls.checked.get((locator, os.path.dirname(py_file)))
        if folder is None or getattr(sys, "frozen", False) or not os.path.exists(py_file):
            return None
        if locator.__name__ == "UserProvidedCacheLocator" and not getattr(config, "CACHE_DIR", None):
            return None
        inner = locator(py_func, py_file)
        return inner if os.path.abspath(inner.get_cache_path()) == folder else None


#: The lock file in each cache folder.
LOCK_NAME = "numba-cache.lock"


def _locked_save(self: Any, key: Any, data: Any) -> None:
    """numba's ``IndexDataCacheFile.save`` under the cache folder's lock, the data file written before the index
    names it."""
    import fcntl

    with open(os.path.join(self._cache_path, LOCK_NAME), "a") as lock:
        with contextlib.suppress(OSError):  # a file system without locks: saved as numba would, the data first
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        overloads = self._load_index()
        name = overloads.get(key)
        if name is None:
            taken = set(overloads.values())
            name = next(n for n in (self._data_name(i) for i in itertools.count(1)) if n not in taken)
        self._save_data(name, data)
        if overloads.get(key) != name:
            overloads[key] = name
            self._save_index(overloads)


def _install() -> None:
    files: Any = getattr(caching, "IndexDataCacheFile", None)
    if files is not None and sys.platform != "win32" and files.save is not _locked_save:
        files.save = _locked_save
    classes = getattr(_IMPL, "_locator_classes", None)
    if _BASE is object or not isinstance(classes, list) or PackageLocator in classes:
        return
    PackageLocator.numba_locators = list(classes)
    classes.insert(0, PackageLocator)


_install()
