"""The ``hypertune`` command runs OpenBLAS on one thread unless the user says otherwise, and gives the commands
the user names (a decoder in the tuning loop) the user's own environment (hypertune/process_environment.py). The
thread count is read back from the loaded library by threadpoolctl, in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hypertune import process_environment
from hypertune.loop import run_decoder

PROBE = """
import json, sys
from hypertune.process_environment import use_one_blas_thread
use_one_blas_thread()
import numpy, threadpoolctl
print(json.dumps(sorted({i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"})))
"""


def _blas_threads(env: dict[str, str]) -> list[int]:
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: OpenBLAS starts one thread anyway")
def test_one_blas_thread_unless_the_user_set_a_number() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    assert _blas_threads(env) == [1]
    assert _blas_threads({**env, "OPENBLAS_NUM_THREADS": "2"}) == [2]


def test_the_users_commands_get_the_users_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setattr(process_environment, "_added", {})
    process_environment.use_one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    out = tmp_path / "out"
    run_decoder('echo "[${OPENBLAS_NUM_THREADS-unset}]"', str(out), str(tmp_path / "log"), 1)
    assert out.read_text() == "[unset]\n"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")  # the user's own setting stays, here and for the decoder
    monkeypatch.setattr(process_environment, "_added", {})
    process_environment.use_one_blas_thread()
    run_decoder('echo "[${OPENBLAS_NUM_THREADS-unset}]"', str(out), str(tmp_path / "log"), 2)
    assert os.environ["OPENBLAS_NUM_THREADS"] == "3" and out.read_text() == "[3]\n"
