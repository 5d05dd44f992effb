"""hypertune.tuners.blas_threads.one_blas_thread: inside, every loaded OpenBLAS reports one thread (asked through
its own exported getter with ctypes, not through threadpoolctl); after, the count it had."""

from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest
import scipy.linalg  # noqa: F401 - loads scipy's own OpenBLAS beside numpy's

from hypertune.tuners.blas_threads import one_blas_thread

GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
           "openblas_get_num_threads")  # fmt: skip


def openblas_thread_counts() -> list[int]:
    """Every mapped OpenBLAS's own thread count (Linux: /proc/self/maps)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {"/" + line.rstrip("\n").partition("/")[2] for line in maps if "openblas" in line}
    except OSError:
        return []
    counts = []
    for path in sorted(p for p in paths if os.path.basename(p)):
        library = ctypes.CDLL(path, mode=getattr(os, "RTLD_NOLOAD", 0) | os.RTLD_LAZY)
        for name in GETTERS:
            if hasattr(library, name):
                getter = getattr(library, name)
                getter.restype = ctypes.c_int
                counts.append(int(getter()))
                break
    return counts


def test_one_thread_inside_and_the_count_back_after():
    before = openblas_thread_counts()
    if not before:
        pytest.skip("no OpenBLAS loaded (numpy and scipy built with another BLAS, or no /proc)")
    with one_blas_thread():
        assert openblas_thread_counts() == [1] * len(before)
        assert float(np.ones(20_000) @ np.ones(20_000)) == 20_000.0  # BLAS still works
    assert openblas_thread_counts() == before


def test_the_count_comes_back_after_an_error():
    before = openblas_thread_counts()
    if not before:
        pytest.skip("no OpenBLAS loaded (numpy and scipy built with another BLAS, or no /proc)")
    with pytest.raises(ZeroDivisionError), one_blas_thread():
        _ = 1 / 0
    assert openblas_thread_counts() == before
