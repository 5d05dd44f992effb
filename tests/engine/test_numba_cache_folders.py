"""numba checks a kernel's cache folder (made, writable) once per source folder of the package, not once per
kernel, and a kernel still gets the locator, cache folder and names numba's own locators give it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from numba.core import caching, config

from hypertune import numba_cache
from hypertune.formats import _scan, sniffing
from hypertune.metrics import _kernels


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The cache folders numba checks from now on (each check writes a temporary file there), with no
    ``NUMBA_CACHE_DIR`` and the locator's memory of checked folders emptied for the test (both given back)."""
    made: list[str] = []
    original = caching._CacheLocator.ensure_cache_path

    def ensure(self: object) -> None:
        made.append(self.get_cache_path())  # type: ignore[attr-defined]
        original(self)  # type: ignore[arg-type]

    monkeypatch.setattr(caching._CacheLocator, "ensure_cache_path", ensure)
    monkeypatch.setattr(numba_cache.PackageLocator, "checked", {})
    monkeypatch.setattr(config, "CACHE_DIR", "")
    return made


def numbas_own(function: Any, file: str) -> Any:
    """What numba's locators alone give ``function`` of ``file``: the first that takes it."""
    found = (c.from_function(function, file) for c in numba_cache.PackageLocator.numba_locators)
    return next((locator for locator in found if locator is not None), None)


def test_a_folder_is_checked_once_and_each_function_gets_numbas_own_locator(checks: list[str]) -> None:
    functions = [(_scan.parse_decimal, _scan.__file__), (sniffing.sniff_plf, sniffing.__file__)]  # formats/
    functions.append((_kernels.build_tables, _kernels.__file__))  # metrics/
    got = [numba_cache.PackageLocator.from_function(f, file) for f, file in functions]
    assert len(checks) == 2  # formats/__pycache__ once, metrics/__pycache__ once
    for locator, (f, file) in zip(got, functions, strict=True):
        own = numbas_own(f, file)
        assert locator is not None and own is not None
        assert type(locator.inner) is type(own)
        assert locator.get_cache_path() == own.get_cache_path() == str(Path(file).parent / "__pycache__")
        assert locator.get_disambiguator() == own.get_disambiguator()


def test_a_missing_source_file_gets_no_locator_as_with_numba(checks: list[str]) -> None:
    assert numba_cache.PackageLocator.from_function(_scan.parse_decimal, _scan.__file__) is not None
    missing = os.path.join(os.path.dirname(_scan.__file__), "no_such_module.py")  # a folder checked already
    assert numbas_own(_scan.parse_integer, missing) is None
    assert numba_cache.PackageLocator.from_function(_scan.parse_integer, missing) is None


def test_a_changed_cache_dir_is_checked_anew(
    checks: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = numba_cache.PackageLocator.from_function(_scan.parse_decimal, _scan.__file__)
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "a"))  # what NUMBA_CACHE_DIR sets
    second = numba_cache.PackageLocator.from_function(_scan.parse_integer, _scan.__file__)
    third = numba_cache.PackageLocator.from_function(sniffing.sniff_plf, sniffing.__file__)
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "b"))
    fourth = numba_cache.PackageLocator.from_function(sniffing.sniff_zmert, sniffing.__file__)
    assert len(checks) == 3  # the package folder, then each user folder once
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "a"))
    own_third = numbas_own(sniffing.sniff_plf, sniffing.__file__)
    assert first is not None and second is not None and third is not None and fourth is not None
    assert first.get_cache_path() == str(Path(_scan.__file__).parent / "__pycache__")
    assert second.get_cache_path() == third.get_cache_path() == own_third.get_cache_path()
    assert second.get_cache_path().startswith(str(tmp_path / "a")) and Path(second.get_cache_path()).is_dir()
    assert fourth.get_cache_path().startswith(str(tmp_path / "b")) and Path(fourth.get_cache_path()).is_dir()
    for unset in ("", None):  # NUMBA_CACHE_DIR unset, or None set from Python: numba's in-tree folder again
        monkeypatch.setattr(config, "CACHE_DIR", unset)
        again = numba_cache.PackageLocator.from_function(sniffing.sniff_plf, sniffing.__file__)
        assert again is not None and again.get_cache_path() == first.get_cache_path()
