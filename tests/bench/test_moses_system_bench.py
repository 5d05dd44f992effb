"""The moses-system benchmark's bookkeeping, without Moses: which runs the parts plan, that a run with a result
is skipped (and a torn result redone), the timing wrapper, the sparse moses.ini, and the Markdown tables
(hand-computed means and standard deviations)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hypertune.bench import moses_system as bench
from hypertune.errors import UsageError


def test_parts_are_parsed_and_checked() -> None:
    assert bench.parse_parts("2,1,2") == (1, 2)
    for bad in ("", "1,x", "6", "1;2"):
        with pytest.raises(UsageError, match="--parts: expected numbers among 1, 2, 3, 4, 5"):
            bench.parse_parts(bad)


def test_plan_runs_each_run_once_per_seed() -> None:
    runs = bench.plan((2, 1), seeds=2)
    names = [run.name for run in runs]
    assert names == [
        "ht-mert-nbest-s1",
        "moses-mert-s1",
        "ht-mert-lattice-s1",
        "ht-mert-hypergraph-s1",
        "ht-mert-nbest-s2",
        "moses-mert-s2",
        "ht-mert-lattice-s2",
        "ht-mert-hypergraph-s2",
    ]
    assert bench.plan((5,), seeds=3) == []  # part 5 compares what the others finished


def test_plan_runs_minimum_risk_once() -> None:
    # minimum risk draws nothing at random: seeds 2 and 3 would repeat seed 1's run exactly
    names = [run.name for run in bench.plan((3,), seeds=2)]
    assert names.count("ht-minrisk-hypergraph-s1") == 1
    assert "ht-minrisk-hypergraph-s2" not in names
    assert "ht-mira-nbest-s2" in names and "moses-pro-s2" in names


def test_pro_l2_sweep_runs_at_seed_one_and_passes_its_option_to_the_tuner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [run.name for run in bench.plan((4,), seeds=2)]
    assert [n for n in names if "-l2-" in n] == [
        "ht-pro-sparse-l2-10-s1",
        "ht-pro-sparse-l2-100-s1",
        "ht-pro-sparse-l2-1000-s1",
    ]
    assert "ht-pro-sparse-s2" in names  # the default-L2 PRO run keeps its seeds
    commands: list[list[str]] = []

    def fake_run(command: list[str], *args: object, **kwargs: object) -> str:
        commands.append(list(command))
        raise bench.RunFailed("stop here")

    monkeypatch.setattr(bench, "_run", fake_run)
    runner = bench.Bench(bench.System("m", "s"), bench.Settings(), str(tmp_path))
    monkeypatch.setattr(runner, "model", lambda run: "moses.ini")
    with pytest.raises(bench.RunFailed):
        runner.hypertune_run(bench.RUNS["ht-pro-sparse-l2-100"], str(tmp_path))
    command = commands[0]
    assert command[command.index("--tuner") + 1] == "pro"
    assert command[-3:] == ["--", "--l2", "100"]  # after every option of tune's own


class CountingBench(bench.Bench):
    """A bench whose runs are made up: it records which it executes."""

    executed: list[str]

    def execute(self, run: bench.Run) -> dict[str, Any]:
        self.executed.append(run.name)
        result = {
            "dev_bleu": [30.0, 31.0],
            "test_bleu": 30.5,
            "seconds": 10.0,
            "tune_seconds": 2.0,
            "returned_iteration": 2,
            "test_output": "x",
            "name": run.name,
            "key": run.key,
            "seed": run.seed,
            "label": run.label,
        }
        os.makedirs(self.folder(run), exist_ok=True)
        Path(self.folder(run, "result.json")).write_text(json.dumps(result), encoding="utf-8")
        return result


def test_finished_runs_are_skipped_and_torn_results_redone(tmp_path: Path) -> None:
    runs = bench.plan((1,), seeds=2)
    done = tmp_path / "runs" / "moses-mert-s1"
    done.mkdir(parents=True)
    (done / "result.json").write_text(
        json.dumps({"key": "moses-mert", "seed": 1, "label": "m", "dev_bleu": [1.0], "test_bleu": 2.0, "seconds": 3.0}),
        encoding="utf-8",
    )
    torn = tmp_path / "runs" / "ht-mert-nbest-s2"
    torn.mkdir(parents=True)
    (torn / "result.json").write_text('{"dev_bleu": [', encoding="utf-8")
    messages: list[str] = []
    counting = CountingBench(bench.System("m", "s"), bench.Settings(), str(tmp_path), messages.append)
    counting.executed = []
    payload = counting.run_all(runs)
    assert counting.executed == ["ht-mert-nbest-s1", "ht-mert-nbest-s2", "moses-mert-s2"]
    assert [r["seed"] for r in payload["runs"]] == [1, 1, 2, 2]
    assert "[2/4] moses-mert-s1: done before (dev BLEU 1.00; test 2.00; 3 s)" in messages
    assert json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["runs"] == payload["runs"]
    counting.executed = []
    counting.run_all(runs)  # everything is done now
    assert counting.executed == []


FAKE_MOSES = """#!{python}
import sys, time
end = time.process_time() + 0.2
while time.process_time() < end:
    pass
print(" ".join(sys.argv[1:]))
open({own!r}, "w").write(repr(time.process_time()))
sys.exit(3)
"""


def test_timing_wrapper_logs_each_call_its_cpu_and_keeps_the_exit_status(tmp_path: Path) -> None:
    fake, own = tmp_path / "moses", tmp_path / "own"
    fake.write_text(FAKE_MOSES.format(python=sys.executable, own=str(own)), encoding="utf-8")
    fake.chmod(0o755)
    times = tmp_path / "times"
    wrapper = tmp_path / "moses-timed"
    wrapper.write_text(bench.timing_wrapper(str(fake), str(times)), encoding="utf-8")
    wrapper.chmod(0o755)
    done = subprocess.run([str(wrapper), "-f", "a b.ini", "-show-weights"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (3, "-f a b.ini -show-weights\n")
    start, end, status, cpu, args = times.read_text(encoding="utf-8").split(None, 4)
    assert float(end) >= float(start) and status == "3" and args == "-f a b.ini -show-weights\n"
    measured = float(own.read_text(encoding="utf-8"))  # the fake's own CPU, by itself
    assert cpu.startswith("cpu=") and measured <= float(cpu[4:]) <= measured + 0.5


def test_decoder_times_leave_out_show_weights(tmp_path: Path) -> None:
    times = tmp_path / "times"
    times.write_text("10.0 12.5 0 cpu=4.5 -f x -n-best-list y 100 distinct\n1 2 0 cpu=0.5 -show-weights\n"
                     "20 21.25 0 cpu=2.0 -f z\n")  # fmt: skip
    assert bench.decoder_times(str(times)) == pytest.approx((2.5 + 1.25, 4.5 + 2.0))
    times.write_text("10.0 12.5 0 -f x -n-best-list y 100 distinct\n1 2 0 -show-weights\n20 21.25 0 -f z\n")
    assert bench.decoder_times(str(times)) == (pytest.approx(2.5 + 1.25), None)  # the older wrapper's log


def test_sparse_features_go_at_the_end_of_the_feature_section() -> None:
    ini = "[input-factors]\n0\n\n[feature]\nDistortion\nKENLM name=LM0\n\n[weight]\nDistortion0= 0.3\nLM0= 0.5\n"
    lines = bench.add_sparse_features(ini).splitlines()
    assert lines[3:8] == ["[feature]", "Distortion", "KENLM name=LM0", *bench.SPARSE_FEATURES]
    assert lines[8:] == ["", "[weight]", "Distortion0= 0.3", "LM0= 0.5"]


def test_markdown_tables() -> None:
    def run(seed: int, test: float, seconds: float) -> dict[str, Any]:
        return {
            "label": "hypertune MERT, 100-best",
            "key": "ht-mert-nbest",
            "seed": seed,
            "dev_bleu": [39.0, 41.0, 40.0],
            "returned_iteration": 2,
            "test_bleu": test,
            "seconds": seconds,
            "tune_seconds": seconds / 4,
            "cpu_seconds": seconds / 2,
            "tune_cpu_seconds": seconds / 8,
        }

    payload = {
        "machine": "x86_64, 2 cores",
        "date": "2026-11-27",
        "load": "load average 1.00",
        "settings": {"stack": 20, "threads": 2, "kbest": 100, "iterations": 2},
        "runs": [
            run(1, 40.0, 100.0),
            run(2, 41.0, 120.0),
            run(3, 42.0, 140.0),
            {"label": "mert-moses.pl MERT, 100-best", "seed": 1, "failed": "perl exited 2"},
        ],
        "comparisons": [
            {
                "baseline": "moses-mert",
                "system": "ht-mert-nbest",
                "seeds": [1, 2, 3],
                "systems": [{"score": 40.1}, {"score": 41.0, "sd": 0.5, "p_ar": 0.0123, "p_boot": None}],
            }
        ],
    }
    text = bench.markdown(payload)
    assert text.splitlines()[0] == (
        "x86_64, 2 cores, 2026-11-27, load average 1.00; stack 20, 2 threads, 100-best, 2 tunings (3 decodings)"
    )
    assert "| hypertune MERT, 100-best | 2 | 39.00 41.00 40.00 | 2 | 41.00 | 120 | 30 | 60 | 15 | - |" in text
    assert "| mert-moses.pl MERT, 100-best | 1 | failed: perl exited 2 | | | | |" in text
    assert "megam" not in text
    payload["runs"][0]["megam"] = "stand-in"
    assert "\nhypertune MERT, 100-best: megam was a stand-in (hypertune.bench.moses_system.MEGAM).\n" in bench.markdown(
        payload
    )
    # mean and sample sd of 40, 41, 42 (1.00), of 100, 120, 140 (20), of 25, 30, 35 (5); dev of the returned 2nd
    assert (
        "| hypertune MERT, 100-best | 3 | 41.00 ± 0.00 | 41.00 ± 1.00 | 120.00 ± 20.00 | 30.00 ± 5.00 | 60.00 ± 10.00 "
        "| 15.00 ± 2.50 |" in text
    )
    assert "| mert-moses.pl MERT, 100-best | hypertune MERT, 100-best | 3 | 40.10 | 41.00 ± 0.50 | 0.012 | - |" in text


@pytest.mark.slow
def test_megam_stand_in_minimizes_the_regularized_logistic_loss(tmp_path: Path) -> None:
    """PRO's pairs as mert-moses.pl writes them; the optimum is checked by another method (Nelder-Mead on the
    objective written here, no gradient) and by the sign of the data's one separating feature."""
    import sys

    import numpy as np
    import scipy.optimize

    data = tmp_path / "pro.data"
    rows = [(1, {"F0": 1.0, "F1": 0.5}), (0, {"F0": -1.0, "F1": -0.5}), (1, {"F0": 0.3, "TWI_a": 1.0}),
            (0, {"F0": -0.3, "TWI_a": -1.0}), (1, {"F1": -0.2}), (0, {"F1": 0.2})]  # fmt: skip
    data.write_text("".join(f"{y} " + " ".join(f"{n} {v}" for n, v in f.items()) + "\n" for y, f in rows))
    script = tmp_path / "megam"
    script.write_text(bench.MEGAM, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), "-fvals", "-maxi", "30", "-nobias", "binary", str(data)],
                          capture_output=True, text=True, check=True)  # fmt: skip
    weights = {name: float(value) for name, value in (line.split() for line in done.stdout.splitlines())}
    names = ["F0", "F1", "TWI_a"]
    x = np.array([[f.get(n, 0.0) for n in names] for _, f in rows])
    y = np.array([1.0 if label else -1.0 for label, _ in rows])

    def objective(w: np.ndarray) -> float:
        return float(np.sum(np.log1p(np.exp(-y * (x @ w)))) + 0.5 * w @ w)

    expected = scipy.optimize.minimize(
        objective, np.zeros(3), method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-12}
    ).x
    assert [weights[n] for n in names] == pytest.approx(expected, abs=1e-4)
    assert weights["F0"] > 0 and weights["TWI_a"] > 0


def test_nonzero_weights_counts_the_weight_files_sparse_weights(tmp_path: Path) -> None:
    system = tmp_path / "system" / "train" / "model"
    system.mkdir(parents=True)
    (system / "moses.ini").write_text("[weight]\nLM0= 0.5\nWordPenalty0= -1\n", encoding="utf-8")
    returned = tmp_path / "returned.ini"
    (tmp_path / "sparse").write_text("PP_a~~b 0.25\nPP_c~~d 0\nTWI_the -1\n", encoding="utf-8")
    returned.write_text("[weight]\nLM0= 0.5\nWordPenalty0= 0\n[weight-file]\nsparse\n", encoding="utf-8")
    b = bench.Bench(bench.System("m", str(tmp_path / "system")), bench.Settings(), str(tmp_path))
    # LM0, PP_a~~b and TWI_the are not zero; the last two are not in the system's moses.ini
    assert b.nonzero_weights(str(returned)) == {"all": 3, "sparse": 2}


def test_a_deterministic_run_is_compared_at_every_seed_of_the_other(tmp_path: Path, monkeypatch) -> None:
    calls: list[list[str]] = []

    def fake_run(command, log=None, cwd=None, both=False):
        calls.append(list(command))
        return json.dumps({"systems": [{"score": 40.0}, {"score": 40.5}]})

    monkeypatch.setattr(bench, "_run", fake_run)
    results = [{"key": "ht-mert-nbest", "seed": s, "test_output": f"mert{s}"} for s in (1, 2, 3)]
    results.append({"key": "ht-minrisk-hypergraph", "seed": 1, "test_output": "risk1"})
    b = bench.Bench(bench.System("m", "s"), bench.Settings(), str(tmp_path))
    (comparison,) = b.compare_all(results)
    assert comparison["seeds"] == [1, 2, 3]
    (command,) = calls
    files = command[command.index("compare") + 1 : command.index("--runs")]
    assert files == ["mert1", "mert2", "mert3", "risk1", "risk1", "risk1"]
    assert command[command.index("--runs") + 1] == "3"
