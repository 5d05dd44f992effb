"""The command line: summaries, --json, errors as one-line messages with exit codes, --help examples."""

from __future__ import annotations

import json
import re

import pytest
from support.paths import FIXTURES, REPO

from hypertune.cli import COMMANDS, _registered_tuners, build_parser, main

FOREST = str(FIXTURES / "toy-forest.json")
WEIGHTS = str(FIXTURES / "toy-forest.weights")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_readme_commands_are_what_ci_runs():
    readme = (REPO / "README.md").read_text()
    block = re.search(r"```sh\n(.*?)```", readme, re.S).group(1).strip().splitlines()
    assert len(block) == 2
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-2:] == block


def test_inspect_summary_and_json(capsys):
    code, out, _ = run(capsys, "inspect", FOREST)
    assert code == 0 and "total" in out and "27" in out
    code, out, _ = run(capsys, "inspect", FOREST, "--json")
    payload = json.loads(out)
    assert payload["total"] == {"graphs": 1, "nodes": 5, "edges": 11, "derivations": 27, "max_arity": 2, "features": 5}


def test_decode_best_and_kbest(capsys):
    code, out, _ = run(capsys, "decode", FOREST, "--weights", WEIGHTS)
    assert code == 0 and out == "0\t-3.2\tthe cottage\n"
    code, out, _ = run(capsys, "decode", FOREST, "-w", WEIGHTS, "--kbest", "3", "--json")
    derivations = json.loads(out)["graphs"][0]["derivations"]
    assert [d["text"] for d in derivations] == ["the cottage", "the small house", "the little house"]
    assert derivations[1]["features"] == {"tm": pytest.approx(-1.4), "lm": pytest.approx(-4.8), "glue": 2.0}


def test_decode_weights_override_in_order(tmp_path, capsys):
    override = tmp_path / "w"
    override.write_text("glue 5\n")
    _, out, _ = run(capsys, "decode", FOREST, "-w", WEIGHTS, "-w", str(override))
    assert out.split("\t")[2].strip() == "the small house"


def test_errors_are_one_line_with_exit_codes(tmp_path, capsys):
    code, out, err = run(capsys, "inspect", str(tmp_path / "missing.json"))
    assert code == 1 and err.count("\n") == 1 and "missing.json" in err and "no such file" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "hypertune", "nodes": 2, "edges": [{"head": 1, "tails": [3]}]}\n')
    code, _, err = run(capsys, "inspect", str(bad))
    assert code == 1 and "bad.json:1:" in err and "dangling" in err and err.count("\n") == 1
    weights = tmp_path / "w"
    weights.write_text("tm 1\nlm one\n")
    code, _, err = run(capsys, "decode", FOREST, "-w", str(weights))
    assert code == 1 and f"{weights}:2:" in err and "expected numbers" in err
    with pytest.raises(SystemExit) as stop:  # a bad option value is argparse's usage error
        main(["decode", FOREST, "-w", WEIGHTS, "--kbest", "0"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.splitlines()[-1].startswith("hypertune decode: error: argument --kbest")


def test_every_command_has_help_with_an_example(capsys):
    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    assert set(subparsers.choices) == {name.replace("_", "-") for name in COMMANDS} | set(_registered_tuners())
    for name, sub in subparsers.choices.items():
        text = sub.format_help()
        assert "example" in text and f"hypertune {name}" in text, name


def test_generate_then_inspect_is_reproducible(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert run(capsys, "generate", str(a), "--edges", "300", "--graphs", "2", "--seed", "4")[0] == 0
    assert run(capsys, "generate", str(b), "--edges", "300", "--graphs", "2", "--seed", "4", "--quiet")[0] == 0
    assert a.read_bytes() == b.read_bytes()
    _, out, _ = run(capsys, "inspect", str(a), "--json")
    assert json.loads(out)["total"]["graphs"] == 2
    _, out, _ = run(capsys, "generate", str(tmp_path / "k.json"), "--kbest", "5", "--json")
    assert json.loads(out)["edges"] == 6


def test_bench_prints_one_line_per_figure(capsys):
    code, out, _ = run(capsys, "bench", "--edges", "2000", "--repeat", "2")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("#") and len(lines) == 4
    assert all(" ms" in line for line in lines[1:])
    code, out, _ = run(capsys, "bench", "--edges", "2000", "--repeat", "2", "--json")
    assert [f["name"] for f in json.loads(out)["figures"]][0].startswith("edge scoring")


def test_bleu_of_nbest_and_graphs(tmp_path, capsys):
    nbest = str(FIXTURES / "mert" / "nbest.txt")
    refs = [str(FIXTURES / "mert" / "ref.0"), str(FIXTURES / "mert" / "ref.1")]
    code, out, _ = run(capsys, "bleu", "--nbest", nbest, "--refs", *refs, "--tokenize", "none", "--json")
    assert code == 0 and json.loads(out)["score"] == pytest.approx(100.0)  # the listed 1-bests are references
    weights = tmp_path / "w"
    weights.write_text("LM0 1\nTM0_0 0\nTM0_1 0\nWordPenalty0 0\n")  # LM only: prefers short hypotheses
    code, out, _ = run(
        capsys, "bleu", "--nbest", nbest, "-w", str(weights), "--refs", *refs, "--tokenize", "none", "--json"
    )
    assert code == 0 and json.loads(out)["score"] < 100.0
    ref = tmp_path / "ref"
    ref.write_text("the cottage\n")
    code, out, _ = run(
        capsys,
        "bleu",
        "--graphs",
        FOREST,
        "-w",
        WEIGHTS,
        "--refs",
        str(ref),
        "--json",
        "--smooth",
        "none",
        "--max-order",
        "2",
    )
    assert code == 0 and json.loads(out)["score"] == pytest.approx(100.0)
    code, _, err = run(capsys, "bleu", "--graphs", FOREST, "--refs", str(ref))
    assert code == 2 and "--weights" in err


def test_decode_samples_and_expectations(capsys):
    from hypertune import algorithms
    from hypertune.formats import read_graphs, read_weights

    argv = ["decode", FOREST, "-w", WEIGHTS, "--sample", "50", "--seed", "3", "--expectations", "--json"]
    first = json.loads(run(capsys, *argv)[1])["graphs"][0]
    again = json.loads(run(capsys, *argv)[1])["graphs"][0]
    assert first == again and len(first["derivations"]) == 50  # the seed fixes the samples
    forest, weights = read_graphs(FOREST)[0], read_weights(WEIGHTS)
    assert first["log_z"] == pytest.approx(algorithms.log_partition(forest, weights))
    assert first["entropy"] == pytest.approx(algorithms.entropy(forest, weights))
    expected = algorithms.feature_expectations(forest, weights)
    assert first["expected_features"]["tm"] == pytest.approx(expected[forest.feature_space.get("tm")])
    texts = {d["text"] for d in first["derivations"]}
    assert "the cottage" in texts  # the most probable derivation shows up in 50 samples
