"""``--plot`` on the tuning commands, ``linesearch`` and ``oracle``: each picture is produced, is a real
image of its format, and holds the elements it promises (checked in the SVG's text)."""

from __future__ import annotations

import sys

import pytest
from support.paths import FIXTURES

from hypertune.cli import main

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REFS = str(FIXTURES / "mert" / "ref.")
INIT = str(FIXTURES / "mert" / "init.weights")

pytest.importorskip("matplotlib")


def svg(tmp_path, *args: str) -> str:
    out = tmp_path / "picture.svg"
    assert main([*args, "--plot", str(out), "--quiet"]) == 0
    text = out.read_text()
    assert text.lstrip().startswith("<?xml") and "</svg>" in text
    return text


def test_tuning_commands_draw_their_history(tmp_path, capsys):
    text = svg(tmp_path, "mert", NBEST, "--refs", REFS, "--init", INIT, "--restarts", "3", "--seed", "1")
    assert "mert: BLEU 88.81" in text and "iteration" in text and "kept" in text
    text = svg(tmp_path, "minrisk", NBEST, "--refs", REFS, "--init", INIT)
    assert "minrisk: BLEU" in text and "objective" in text
    text = svg(tmp_path, "mira", NBEST, "--refs", REFS, "--init", INIT, "--epochs", "4")
    assert "mira: BLEU" in text
    capsys.readouterr()


def test_line_search_picture(tmp_path, capsys):
    text = svg(tmp_path, "linesearch", NBEST, "--refs", REFS, "--weights", INIT, "--direction", "LM0")
    for element in ("upper envelopes", "corpus error surface", "best step 0.1301", "sentence 0: 4 lines", "start"):
        assert element in text
    capsys.readouterr()


def test_oracle_picture_and_png(tmp_path, capsys):
    text = svg(tmp_path, "oracle", NBEST, "--refs", REFS, "--method", "kbest", "--weights", INIT)
    assert "oracle bleu+1" in text and "5 sentences" in text
    png = tmp_path / "oracle.png"
    assert main(["oracle", NBEST, "--refs", REFS, "--method", "kbest", "--plot", str(png)]) == 0
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    capsys.readouterr()


def test_without_matplotlib_the_error_says_what_to_install_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "oracles.txt"
    code = main(
        ["oracle", NBEST, "--refs", REFS, "--method", "kbest", "--out", str(out), "--plot", str(tmp_path / "x.png")]
    )
    assert code == 2
    assert "hypertune[plot]" in capsys.readouterr().err
    assert not out.exists()
