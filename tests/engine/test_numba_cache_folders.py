"""numba checks a kernel's cache folder (made, writable) once per source folder of the package, not once per
kernel, and a kernel still gets the cache folder numba's own locator gives it."""

from __future__ import annotations

from pathlib import Path

import pytest
from numba.core import caching, config

from hypertune import numba_cache
from hypertune.formats import _scan, extractor
from hypertune.metrics import _kernels


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The cache folders numba checks from now on (each check writes a temporary file there), with the
    locator's memory of checked folders emptied for the test and given back after it."""
    made: list[str] = []
    original = caching._CacheLocator.ensure_cache_path

    def ensure(self: object) -> None:
        made.append(self.get_cache_path())  # type: ignore[attr-defined]
        original(self)  # type: ignore[arg-type]

    monkeypatch.setattr(caching._CacheLocator, "ensure_cache_path", ensure)
    monkeypatch.setattr(numba_cache.PackageLocator, "checked", {})
    return made


def test_a_folder_is_checked_once_and_each_kernel_gets_numbas_own_folder(checks: list[str]) -> None:
    kernels = [(_scan.parse_decimal, _scan.__file__), (extractor.sniff, extractor.__file__)]  # formats/
    kernels.append((_kernels.build_tables, _kernels.__file__))  # metrics/
    got = [numba_cache.PackageLocator.from_function(f, file) for f, file in kernels]
    assert len(checks) == 2  # formats/__pycache__ once, metrics/__pycache__ once
    for locator, (f, file) in zip(got, kernels, strict=True):
        assert locator is not None
        own = caching.InTreeCacheLocator.from_function(f, file)  # numba's locator, asked directly
        assert own is not None
        assert locator.get_cache_path() == own.get_cache_path() == str(Path(file).parent / "__pycache__")
        assert locator.get_disambiguator() == own.get_disambiguator()


def test_a_changed_cache_dir_is_checked_anew(
    checks: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = numba_cache.PackageLocator.from_function(_scan.parse_decimal, _scan.__file__)
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path))  # what NUMBA_CACHE_DIR sets
    second = numba_cache.PackageLocator.from_function(_scan.parse_integer, _scan.__file__)
    third = numba_cache.PackageLocator.from_function(extractor.sniff, extractor.__file__)
    assert first is not None and second is not None and third is not None
    assert first.get_cache_path() == str(Path(_scan.__file__).parent / "__pycache__")
    assert second.get_cache_path().startswith(str(tmp_path)) and Path(second.get_cache_path()).is_dir()
    assert third.get_cache_path() == second.get_cache_path()
    assert len(checks) == 2  # the package folder, then the user's folder once
    monkeypatch.setattr(config, "CACHE_DIR", "")
    fourth = numba_cache.PackageLocator.from_function(extractor.sniff, extractor.__file__)
    assert fourth is not None and fourth.get_cache_path() == first.get_cache_path()
