"""The tracebacks and small traps of issue 27, one test each: what used to end in a Python traceback is one
line on stderr with exit code 1 or 2; ``bleu`` takes references and weights as the tuning commands do;
human summaries show metrics 0-100 throughout."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import sacrebleu
from support.paths import FIXTURES

from hypertune.cli import main

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REF = str(FIXTURES / "mert" / "ref.")
INIT = str(FIXTURES / "mert" / "init.weights")
FOREST = str(FIXTURES / "toy-forest.json")
FOREST_WEIGHTS = str(FIXTURES / "toy-forest.weights")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(err: str, command: str) -> str:
    """The error line of stderr, which must be its last line, after argparse's usage if any."""
    lines = err.rstrip("\n").split("\n")
    assert lines[-1].startswith(f"hypertune {command}: error: "), err
    assert "Traceback" not in err and sum(": error: " in line for line in lines) == 1, err
    return lines[-1]


# ---------------------------------------------------------------------- the tracebacks of the issue
TRACEBACKS = [
    ["mert", NBEST, "--refs", REF, "--init", INIT, "--seed", "-3"],
    ["mira", NBEST, "--refs", REF, "--init", INIT, "--seed", "-3"],
    ["pro", NBEST, "--refs", REF, "--init", INIT, "--seed", "-3"],
    ["train", NBEST, "--refs", REF, "--init", INIT, "--seed", "-3"],
    ["decode", FOREST, "-w", FOREST_WEIGHTS, "--sample", "3", "--seed", "-3"],
    ["generate", "out.json", "--seed", "-3"],
    ["mira", NBEST, "--refs", REF, "--init", INIT, "-C", "nan"],
    ["inside", FOREST, "--semiring", "os:path"],
    ["draw", FOREST, "-w", FOREST_WEIGHTS, "-o", "out.dot", "--prune", "-5"],
]


@pytest.mark.parametrize("argv", TRACEBACKS, ids=[" ".join(a[-2:]) + f" ({a[0]})" for a in TRACEBACKS])
def test_what_was_a_traceback_is_one_line(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, *argv)
    assert code == 2
    line = one_error_line(err, argv[0])
    assert repr(argv[-1]) in line or argv[-1] in line.split()


def test_generate_without_features_writes_featureless_graphs(capsys, tmp_path):
    out = tmp_path / "g.json"
    code, _, err = run(capsys, "generate", str(out), "--features", "0", "--edges", "20", "--json")
    assert code == 0, err
    code, text, _ = run(capsys, "inspect", str(out), "--json")
    assert json.loads(text)["total"]["features"] == 0


def init_opt(tmp_path: Path, low: str, high: str) -> str:
    """A Moses init.opt for the n-best fixture (LM0, TM0 twice, WordPenalty0)."""
    path = tmp_path / "init.opt"
    path.write_text(f"0.1 0.2 0.2 -0.3\n{low}\n{high}\n")
    return str(path)


def test_an_init_opt_whose_minimum_lies_above_its_maximum(capsys, tmp_path):
    inverted = init_opt(tmp_path, "1 1 1 1", "0 0 0 0")
    code, _, err = run(capsys, "mert", NBEST, "--refs", REF, "--init", inverted, "--restarts", "3")
    assert code == 2 and "LM0 (1 > 0)" in one_error_line(err, "mert")
    code, _, err = run(capsys, "mert", NBEST, "--refs", REF, "--init", inverted)  # no restarts: the box is unused
    assert code == 0, err
    negative = init_opt(tmp_path, "-1 -1 -1 -1", "-0.5 1 1 1")  # LM0's box lies below 0
    code, _, err = run(capsys, "mert", NBEST, "--refs", REF, "--init", negative, "--restarts", "3", "--positive")
    assert code == 2 and "LM0" in one_error_line(err, "mert")


def test_a_missing_optional_dependency_names_its_extra(capsys, monkeypatch):
    for name in [m for m in sys.modules if m == "hypertune.distributed" or m.startswith("hypertune.distributed.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed: ModuleNotFoundError
    code, _, err = run(capsys, "mert", NBEST, "--refs", REF, "--init", INIT, "--cluster", "local:2")
    assert code == 2 and "pip install 'hypertune[dist]'" in one_error_line(err, "mert")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, _, err = run(capsys, "mert", NBEST, "--refs", REF, "--init", INIT, "--plot", "never.png")
    assert code == 2 and "pip install 'hypertune[plot]'" in one_error_line(err, "mert")


# ---------------------------------------------------------------------- bleu takes what the tuning commands take
def first_hypotheses() -> list[str]:
    """Each sentence's first hypothesis in the n-best fixture, read here without hypertune."""
    first: dict[str, str] = {}
    for line in Path(NBEST).read_text().splitlines():
        sid, text = (field.strip() for field in line.split("|||")[:2])
        first.setdefault(sid, text)
    return list(first.values())


def test_bleu_takes_a_reference_prefix(capsys):
    files = [REF + "0", REF + "1"]
    references = [Path(f).read_text().splitlines() for f in files]
    expected = sacrebleu.corpus_bleu(first_hypotheses(), references, tokenize="none").score
    code, out, err = run(capsys, "bleu", "--nbest", NBEST, "--refs", REF, "--tokenize", "none", "--json")
    assert code == 0, err
    by_prefix = json.loads(out)
    assert by_prefix["score"] == pytest.approx(expected) and by_prefix["options"]["nrefs"] == 2
    _, out, _ = run(capsys, "bleu", "--nbest", NBEST, "--refs", *files, "--tokenize", "none", "--json")
    assert json.loads(out) == by_prefix


def test_bleu_takes_init_opt_weights(capsys, tmp_path):
    """Moses init.opt (positional, in the n-best list's feature order) scores as the same weights by name; the
    weights are chosen to pick other hypotheses than the n-best list's first."""
    named = tmp_path / "named.weights"
    named.write_text("LM0 0\nTM0_0 0\nTM0_1 0\nWordPenalty0 1\n")  # the shortest hypothesis wins
    positional = tmp_path / "init.opt"
    positional.write_text("0 0 0 1\n0 0 0 0\n1 1 1 1\n")
    scores = []
    for weights in (None, str(named), str(positional)):
        extra = ["--weights", weights] if weights else []
        code, out, err = run(capsys, "bleu", "--nbest", NBEST, "--refs", REF, "--tokenize", "none", "--json", *extra)
        assert code == 0, err
        scores.append(json.loads(out)["score"])
    assert scores[1] == scores[2] != scores[0]


# ---------------------------------------------------------------------- small traps
def test_convert_takes_quiet(capsys, tmp_path):
    code, out, err = run(capsys, "convert", FOREST_WEIGHTS, str(tmp_path / "w.json"), "--weights", "--to", "json", "-q")
    assert code == 0, err
    assert json.loads((tmp_path / "w.json").read_text())["tm"] == 1.0


def test_oracle_sentence_lines_are_on_the_summary_scale(capsys, tmp_path):
    """The oracle "the small house" against "the big house": BLEU+1 = (2/3 · 1/3 · 1/2 · 1/1)^(1/4) = 9^(-1/4)."""
    ref = tmp_path / "ref"
    ref.write_text("the big house\n")
    code, out, err = run(capsys, "oracle", FOREST, "--refs", str(ref), "--method", "exact")
    assert code == 0, err
    assert out.splitlines()[0] == f"0\t{100 * 9**-0.25:.2f}\tthe small house" == "0\t57.74\tthe small house"
    _, out, _ = run(capsys, "oracle", FOREST, "--refs", str(ref), "--method", "exact", "--json")
    assert json.loads(out)["sentences"][0]["score"] == pytest.approx(9**-0.25)  # JSON: a fraction


@pytest.mark.parametrize("objective", ["xbleu", "risk"])
def test_minrisk_summary_shows_its_objective_as_bleu(objective, capsys, tmp_path):
    argv = ["minrisk", NBEST, "--refs", REF, "--init", INIT, "--iterations", "3", "--objective", objective]
    _, out, _ = run(capsys, *argv, "--json")
    found = json.loads(out)
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    before, after = f"{100 * found['objective_before']:.2f}", f"{100 * found['objective_after']:.2f}"
    assert f"{objective} {before} -> {after}," in out.splitlines()[0]


def test_docs_say_which_bleu_json_keys_are_0_to_100():
    text = " ".join((FIXTURES.parent / "docs" / "cli.md").read_text().split())
    assert "`score` and `precisions` 0-100, beside `bleu` 0-1" in text
