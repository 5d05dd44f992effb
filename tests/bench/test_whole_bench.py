"""``hypertune bench --suite whole`` (hypertune.bench.whole): one child's measurement, the anchors' lookup and
skipping, kbmira's weight names, and the table (tiny child processes only; no benchmark corpus)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from hypertune.bench.whole import (
    Result,
    Row,
    Side,
    Step,
    Usage,
    find_anchor,
    kbmira_weights,
    markdown,
    measure,
    resolve,
    run_rows,
)

PYTHON = sys.executable


@pytest.mark.slow
def test_measure_reports_the_child_alone_and_its_peak_memory() -> None:
    """A child that holds 300 MiB has a peak of at least that; ``python -c pass`` has far less, even while this
    process holds 400 MiB (Linux keeps the peak of a process that calls exec: a direct child would report it)."""
    held_here = bytearray(400 * 2**20)
    held_here[:: 2**12] = b"x" * len(held_here[:: 2**12])  # touched: resident
    idle, _ = measure(Step((PYTHON, "-c", "pass")))
    del held_here
    held, _ = measure(Step((PYTHON, "-c", "b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096])")))
    assert held.peak_mb >= 300
    assert 1 < idle.peak_mb < 200
    assert idle.wall > 0 and idle.user >= 0


def test_measure_connects_files_and_names_a_failing_command(tmp_path: Path) -> None:
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("forest\n")
    upper = "import sys; sys.stdout.write(sys.stdin.read().upper()); print('note', file=sys.stderr)"
    _, output = measure(Step((PYTHON, "-c", upper), stdin=str(source), stdout=str(target)))
    assert target.read_text() == "FOREST\n" and output == "note\n"
    with pytest.raises(RuntimeError, match="exited with 3: broken"):
        measure(Step((PYTHON, "-c", "import sys; print('broken'); sys.exit(3)")))


def test_usage_of_a_pipeline_sums_times_and_keeps_the_largest_peak() -> None:
    assert Usage(1.0, 0.5, 40.0, 0.25) + Usage(2.0, 1.5, 30.0, 0.5) == Usage(3.0, 2.0, 40.0, 0.75)


def _tool(path: Path, executable: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho tool\n")
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_anchors_are_found_in_the_build_scripts_layouts(tmp_path: Path) -> None:
    kbmira = _tool(tmp_path / "anchors" / "moses" / "build" / "bin" / "kbmira")
    mert = _tool(tmp_path / "bin-folder" / "mert")
    _tool(tmp_path / "anchors" / "cdec" / "bin" / "minrisk_optimize", executable=False)
    folders = [str(tmp_path / "anchors"), str(tmp_path / "bin-folder")]
    assert find_anchor("kbmira", folders) == str(kbmira)
    assert find_anchor("mert", folders) == str(mert)
    assert find_anchor("minrisk_optimize", folders) is None  # not executable
    assert find_anchor("extractor", folders) is None
    pipeline = Side([Step(("kbmira", "-J", "60")), Step(("mert", "-d", "15"))])
    resolved = resolve(pipeline, folders)
    assert resolved is not None and [s.argv for s in resolved.steps] == [
        (str(kbmira), "-J", "60"),
        (str(mert), "-d", "15"),
    ]
    assert resolve(Side([Step(("kbmira",)), Step(("extractor",))]), folders) is None


def test_a_row_whose_anchor_is_absent_runs_hypertune_alone(tmp_path: Path) -> None:
    made = tmp_path / "count"
    side = Side([Step((PYTHON, "-c", f"open({str(made)!r}, 'a').write('x')"))])
    row = Row("tiny work", "cdec minrisk_optimize", side, Side([Step(("no-such-anchor-tool",))]))
    (result,) = run_rows([row], [str(tmp_path)], repeat=2)
    assert made.read_text() == "xx" and len(result.hypertune_runs) == 2 and result.anchor_runs == []
    assert result.ratio is None
    assert markdown([result]).splitlines()[2].startswith("| tiny work | cdec minrisk_optimize: not built here | ")


def test_kbmira_dense_weights_get_the_dense_inits_names(tmp_path: Path) -> None:
    out = tmp_path / "kb.w"
    out.write_text("F0 0.5\nF2 -1\nF1 0.25\nsparse_a 0.125\n")
    dense, sparse = kbmira_weights(["LM", "TM_1", "TM_2"])(str(out))
    assert Path(dense).read_text() == "LM 0.5\nTM_1 0.25\nTM_2 -1\n"
    assert Path(sparse).read_text() == "sparse_a 0.125\n"
    legacy = tmp_path / "legacy.w"  # a positional --dense-init: the values in order, for the input to name
    legacy.write_text("F1 0.25\nF0 0.5\nF2 -1\n")
    (positional,) = kbmira_weights(None)(str(legacy))
    assert Path(positional).read_text() == "0.5 0.25 -1\n"


def test_the_table_gives_the_best_run_its_range_and_the_ratio() -> None:
    result = Result(
        "k-best MIRA",
        "Moses kbmira",
        anchor_runs=[Usage(2.0, 1.5, 43.0, 0.0), Usage(1.8, 1.4, 40.0, 0.1)],
        hypertune_runs=[Usage(0.9, 0.8, 1200.0, 0.4)],
        anchor_bleu=0.12,
        hypertune_bleu=0.125,
        note="one scorer",
    )
    assert markdown([result]).splitlines() == [
        "| work | anchor | hypertune | ratio: wall, CPU |",
        "|---|---|---|---|",
        "| k-best MIRA (one scorer) | Moses kbmira: 1.8 s (of 2: 1.8 s-2.0 s), user 1.4 s + sys 100 ms, 40 MB, "
        "BLEU 12.00 | 900 ms, user 800 ms + sys 400 ms, 1,200 MB, BLEU 12.50 | 0.50, 0.80 |",
    ]
