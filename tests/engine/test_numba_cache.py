"""numba's kernel cache sees the whole package (``hypertune.numba_cache``): a kernel's freshness stamp changes
when any of the package's Python files changes, not only its own file."""

from __future__ import annotations

import os
from pathlib import Path

from numba.core import caching

from hypertune import numba_cache
from hypertune.tuners import mira


def test_the_package_stamp_follows_every_python_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__pycache__").mkdir()
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub" / "b.py").write_text("y = 22\n")
    (tmp_path / "sub" / "__pycache__" / "c.py").write_text("ignored\n")
    (tmp_path / "notes.txt").write_text("not Python\n")
    os.utime(tmp_path / "a.py", ns=(1, 1_000))
    os.utime(tmp_path / "sub" / "b.py", ns=(1, 2_000))
    assert numba_cache.package_stamp(str(tmp_path)) == (2, 6 + 7, 2_000)  # files, bytes, latest change
    os.utime(tmp_path / "a.py", ns=(1, 3_000))  # an edit of another file than the kernel's
    assert numba_cache.package_stamp(str(tmp_path))[2] == 3_000
    (tmp_path / "sub" / "d.py").write_text("")
    assert numba_cache.package_stamp(str(tmp_path))[0] == 3
    (tmp_path / ".#a.py").symlink_to("user@host.1:1")  # an editor's lock file: a dangling link, not counted
    assert numba_cache.package_stamp(str(tmp_path))[0] == 3


def test_the_package_kernels_carry_the_package_stamp_and_others_do_not() -> None:
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # type: ignore[attr-defined]
    assert impl._locator_classes[0] is numba_cache.PackageLocator
    kernel = mira._kbest_model_stats.py_func  # a kernel that calls helpers of other files
    locator = numba_cache.PackageLocator.from_function(kernel, mira.__file__)
    assert locator is not None
    own, package = locator.get_source_stamp()
    files = [f for f in Path(numba_cache.ROOT).rglob("*.py") if "__pycache__" not in f.parts]  # counted here anew
    expected = (len(files), sum(f.stat().st_size for f in files), max(f.stat().st_mtime_ns for f in files))
    assert own == locator.inner.get_source_stamp() and package == expected
    assert numba_cache.PackageLocator.from_function(test_the_package_stamp_follows_every_python_file, __file__) is None
