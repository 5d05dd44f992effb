"""numba's cache saves under the cache folder's lock (``hypertune.numba_cache``): savers adding different versions
of one kernel at once each get their own data file, and an index entry appears only after its data file is
written."""

from __future__ import annotations

import threading
from pathlib import Path

from numba.core import caching

from hypertune import numba_cache


def test_savers_at_once_each_keep_their_own_version(tmp_path: Path) -> None:
    assert caching.IndexDataCacheFile.save is numba_cache._locked_save  # installed with the package's kernels
    stamp = ("source", 1)
    keys = [(f"signature {i}", "target") for i in range(24)]
    start = threading.Barrier(len(keys))

    def save(key: tuple[str, str]) -> None:
        files = caching.IndexDataCacheFile(str(tmp_path), "kernel-1.py311", stamp)  # one per saver, as per process
        start.wait()
        for _ in range(20):  # saving a key again keeps its file
            files.save(key, f"code of {key[0]}")

    threads = [threading.Thread(target=save, args=(key,)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    reader = caching.IndexDataCacheFile(str(tmp_path), "kernel-1.py311", stamp)
    assert [reader.load(key) for key in keys] == [f"code of {key[0]}" for key in keys]
    assert sorted(p.name for p in tmp_path.glob("*.nbc")) == sorted(f"kernel-1.py311.{i}.nbc" for i in range(1, 25))


def test_an_entry_is_written_after_its_data_file(tmp_path: Path, monkeypatch) -> None:
    files = caching.IndexDataCacheFile(str(tmp_path), "kernel-1.py311", ("source", 1))
    written: list[str] = []
    monkeypatch.setattr(files, "_save_data", lambda name, data: written.append(f"data {name}"))
    monkeypatch.setattr(files, "_save_index", lambda overloads: written.append(f"index {sorted(overloads.values())}"))
    files.save(("signature", "target"), "code")
    assert written == ["data kernel-1.py311.1.nbc", "index ['kernel-1.py311.1.nbc']"]
