"""An output path that is also an input is refused before any work, naming both, and the input is left
byte for byte as it was (issue 27: ``mert same.nb --out same.nb`` replaced a 1,000-line n-best list with 14
lines of weights)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from support.paths import FIXTURES

from hypertune.cli import main


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The MERT fixtures (an n-best list, two references ``ref.0 ref.1``, start weights) and an hgdir, copied
    into a temporary working directory."""
    for name in ("nbest.txt", "ref.0", "ref.1", "init.weights"):
        shutil.copy(FIXTURES / "mert" / name, tmp_path / name)
    shutil.copytree(FIXTURES / "formats" / "hgdir", tmp_path / "hgdir")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def refused(capsys: pytest.CaptureFixture[str], argv: list[str], output: str, *named: str) -> None:
    """``hypertune ARGV`` exits 1 with one line naming ``output`` and every one of ``named``, and leaves every
    file of the working directory as it was."""
    before = {p: p.read_bytes() for p in Path(".").rglob("*") if p.is_file()}
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1, err
    assert err.count("\n") == 1 and "also an input" in err, err
    assert f"error: {output}:" in err and all(name in err for name in named), err
    assert out == ""
    after = {p: p.read_bytes() for p in Path(".").rglob("*") if p.is_file()}
    assert after == before


TUNE = ["--refs", "ref.", "--init", "init.weights"]


def test_the_nbest_list_itself(corpus, capsys):
    shutil.copy("nbest.txt", "same.nb")
    refused(capsys, ["mert", "same.nb", *TUNE, "--out", "same.nb"], "same.nb", "(same.nb)")


@pytest.mark.parametrize("command", ["mert", "mira", "minrisk", "train", "pro"])
def test_a_reference_file_of_a_prefix(corpus, capsys, command):
    refused(capsys, [command, "nbest.txt", *TUNE, "--out", "ref.1"], "ref.1", "--refs ref.1")


def test_the_start_weights_and_the_other_outputs(corpus, capsys):
    refused(capsys, ["mert", "nbest.txt", *TUNE, "--out", "init.weights"], "init.weights", "--init init.weights")
    refused(capsys, ["mert", "nbest.txt", *TUNE, "--plot", "ref.0"], "ref.0", "--plot", "--refs ref.0")
    refused(capsys, ["mert", "nbest.txt", *TUNE, "--envelope-nbest", "nbest.txt"], "nbest.txt", "--envelope-nbest")


def test_the_same_file_under_another_name(corpus, capsys):
    os.link("nbest.txt", "hard.nb")
    os.symlink("ref.0", "soft.ref")
    refused(capsys, ["mert", "nbest.txt", *TUNE, "--out", "hard.nb"], "hard.nb", "(nbest.txt)")
    refused(capsys, ["mert", "nbest.txt", *TUNE, "--out", "soft.ref"], "soft.ref", "--refs ref.0")


def test_a_file_read_from_an_input_folder(corpus, capsys):
    refused(capsys, ["decode", "hgdir", "-w", "hgdir/weights", "--out", "hgdir/1"], "hgdir/1", "(hgdir/1)")
    refused(capsys, ["decode", "hgdir/", "-w", "hgdir/weights", "--out", "hgdir/weights"], "hgdir/weights", "--weights")


def test_convert_and_tune(corpus, capsys):
    refused(capsys, ["convert", "init.weights", "init.weights", "--weights", "--to", "json"], "init.weights")
    decoder = f"cp {FIXTURES / 'mert' / 'nbest.txt'} {{kbest}} # {{weights}}"
    argv = ["tune", "--decoder", decoder, *TUNE, "--workdir", "run", "--iterations", "1", "--out", "ref.0"]
    refused(capsys, argv, "ref.0", "--refs ref.0")
    assert not os.path.exists("run")  # refused before any work


def test_outputs_beside_the_inputs_are_fine(corpus, capsys):
    """The check names no false culprit: a new file, an existing file that is no input, and a file in an input
    folder that is not read from it (an hgdir's weights file is not one of its graphs)."""
    Path("old.weights").write_text("LM0 1\n")
    assert main(["mert", "nbest.txt", *TUNE, "--out", "old.weights"]) == 0
    assert main(["mert", "nbest.txt", *TUNE, "--out", "new.weights"]) == 0
    shutil.copy("hgdir/weights", "hgdir.weights")
    assert main(["decode", "hgdir", "-w", "hgdir.weights", "--out", "hgdir/weights"]) == 0
    _, err = capsys.readouterr()
    assert "also an input" not in err
    assert Path("hgdir/weights").read_text().startswith("0 ||| ")  # the n-best list written over the old weights
