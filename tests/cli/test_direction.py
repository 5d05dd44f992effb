"""``--direction`` means one thing on every command (``linesearch``, ``inside --semiring envelope``): a feature
name, name=value pairs, numbers in the inputs' feature order, or a weights file, summed when repeated."""

from __future__ import annotations

import json

import pytest
from support.paths import FIXTURES

from hypertune.cli import main

NBEST, REFS, INIT = FIXTURES / "mert" / "nbest.txt", FIXTURES / "mert" / "ref.", FIXTURES / "mert" / "init.weights"
FOREST, FOREST_WEIGHTS = FIXTURES / "toy-forest.json", FIXTURES / "toy-forest.weights"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def linesearch(capsys: pytest.CaptureFixture[str], *direction: str) -> dict:
    spec = [part for d in direction for part in ("--direction", d)]
    return run(capsys, "linesearch", str(NBEST), "--refs", str(REFS), "--weights", str(INIT), *spec)


def test_every_spelling_of_a_direction_is_the_same_direction(capsys, tmp_path):
    (tmp_path / "d").write_text("LM0 2\nWordPenalty0 -1\n")
    (tmp_path / "half").write_text("LM0 1\n")
    expected = linesearch(capsys, str(tmp_path / "d"))  # a weights file, as inside took it
    # the features of fixtures/mert/nbest.txt, in order: LM0 TM0_0 TM0_1 WordPenalty0
    for spelling in (["LM0=2,WordPenalty0=-1"], ["2,0,0,-1"], ["LM0", "LM0", "WordPenalty0=-1"],
                     [str(tmp_path / "half"), "LM0=1,WordPenalty0=-1"]):  # fmt: skip
        assert linesearch(capsys, *spelling) == expected, spelling


def test_inside_takes_the_same_directions(capsys, tmp_path):
    (tmp_path / "d").write_text("lm 1\n")
    base = ["inside", str(FOREST), "--semiring", "envelope", "--weights", str(FOREST_WEIGHTS), "--direction"]
    assert run(capsys, *base, "lm") == run(capsys, *base, str(tmp_path / "d")) == run(capsys, *base, "lm=1")


@pytest.mark.parametrize(
    ("direction", "message"),
    [
        ("nope", "--direction 'nope': not a weights file, a feature name, name=value pairs or numbers"),
        ("LM0=1,nope=2", "--direction: no feature 'nope' in the input"),
        ("1,2", "--direction: 2 numbers for 4 features (LM0, TM0_0, TM0_1, WordPenalty0)"),
        ("LM0=0", "--direction is the zero vector"),
    ],
)
def test_a_bad_direction_is_one_line(capsys, direction, message):
    argv = ["linesearch", str(NBEST), "--refs", str(REFS), "--weights", str(INIT), "--direction", direction]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip().endswith(f"error: {message}")
