"""``hypertune mbr`` (issue #34): one line per sentence in id order, --json's keys, given utility matrices from JSONL
(and their one-line errors), --tune-scale's curve against sacrebleu's corpus BLEU of the outputs at each scale."""

from __future__ import annotations

import json

import numpy as np
import pytest
import sacrebleu
from support.paths import FIXTURES

from hypertune.cli import main
from hypertune.errors import InputError
from hypertune.formats.jsonl import utility_matrices

#: Sentence 1 (given first), then sentence 0 in two pieces: the output is in id order all the same.
LINES = [
    {"id": 1, "hyp": "a b c", "features": {"lm": -1.0}, "utilities": {"comet": [0.1, 0.9]}},
    {"id": 0, "hyp": "x y", "features": {"lm": -2.0}, "utilities": {"comet": [0.2, 0.3, 0.1]}},
    {"id": 0, "hyp": "x z", "features": {"lm": -1.0}, "utilities": {"comet": [0.2, 0.2, 0.2]}},
    {"id": 1, "hyp": "a b d", "features": {"lm": -3.0}, "utilities": {"comet": [0.5, 0.6]}},
    {"id": 0, "hyp": "x y z", "features": {"lm": -1.5}, "utilities": {"comet": [0.9, 0.9, 0.0]}},
]


def write_jsonl(path, lines) -> str:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


@pytest.fixture
def samples(tmp_path) -> str:
    return write_jsonl(tmp_path / "samples.jsonl", LINES)


@pytest.fixture
def weights(tmp_path) -> str:
    path = tmp_path / "w.txt"
    path.write_text("lm 1.0\n")
    return str(path)


def test_given_utilities_uniform_choose_the_largest_row_sum(samples, capsys):
    # sentence 0's row sums 0.6, 0.6, 1.8 -> "x y z"; sentence 1's 1.0, 1.1 -> "a b d"
    assert main(["mbr", samples, "--uniform", "--utility", "comet"]) == 0
    assert capsys.readouterr().out == "x y z\na b d\n"
    # leaving the diagonal out: 0.4, 0.4, 1.8 and 0.9, 0.5 -> "x y z", "a b c"
    assert main(["mbr", samples, "--uniform", "--utility", "comet", "--exclude-self"]) == 0
    assert capsys.readouterr().out == "x y z\na b c\n"


def test_json_has_each_choice_its_expected_utility_and_the_map_one(samples, weights, capsys):
    assert main(["mbr", samples, "--weights", weights, "--utility", "comet", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"sentences", "summary"}
    first, second = report["sentences"]
    assert set(first) == {"id", "index", "hyp", "expected_utility", "map_index", "map_hyp", "map_expected_utility"}
    assert [first["id"], second["id"]] == [0, 1]
    # sentence 1: scores -1, -3: p = (1, e^-2) / (1 + e^-2); rows (0.1, 0.9) and (0.5, 0.6)
    p = np.exp([-1.0, -3.0]) / np.exp([-1.0, -3.0]).sum()
    expected = [0.1 * p[0] + 0.9 * p[1], 0.5 * p[0] + 0.6 * p[1]]
    assert second["index"] == 1 and second["expected_utility"] == pytest.approx(expected[1])
    assert second["map_index"] == 0 and second["map_expected_utility"] == pytest.approx(expected[0])
    assert report["summary"]["sentences"] == 2 and report["summary"]["utility"] == "comet"
    # sentence 0: p ~ (e^-2, e^-1, e^-1.5); the third row (0.9, 0.9, 0) wins over the MAP hypothesis, the second
    assert (first["index"], first["map_index"]) == (2, 1)
    assert report["summary"]["changed"] == 2


def test_metric_output_is_one_line_per_sentence_in_id_order(samples, weights, tmp_path, capsys):
    out = tmp_path / "out.txt"
    assert main(["mbr", samples, "--weights", weights, "--metric", "chrf", "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 2 and lines[0].startswith("x") and lines[1].startswith("a b")
    assert "wrote 2 sentence(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"utilities": {"comet": [0.1, 0.2]}}, "utility 'comet' has 2 value(s), expected 3"),
        ({"utilities": {"comet": [0.1, "x", 0.2]}}, "utility 'comet' must be a list of numbers"),
        ({"utilities": {"comet": [0.1, True, 0.2]}}, "utility 'comet' must be a list of numbers"),
        ({"utilities": {"qe": [0.1, 0.2, 0.3]}}, "no utility 'comet' (this line has 'qe')"),
        ({"utilities": [0.1, 0.2, 0.3]}, '"utilities" must be an object'),
        ({}, 'no "utilities" (other lines have them'),
    ],
)
def test_bad_utilities_are_one_line_errors_naming_file_and_line(tmp_path, capsys, line, message):
    lines = [dict(entry) for entry in LINES]
    lines[2] = {k: v for k, v in lines[2].items() if k != "utilities"} | line
    path = write_jsonl(tmp_path / "bad.jsonl", lines)
    assert main(["mbr", path, "--uniform", "--utility", "comet"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"{path}:3: " in err and message in err
    with pytest.raises(InputError, match="bad.jsonl"):
        utility_matrices(path, "comet")


def test_non_finite_utilities_and_files_without_them(tmp_path):
    path = tmp_path / "nan.jsonl"
    path.write_text('{"id": 0, "hyp": "a", "utilities": {"comet": [NaN]}}\n')
    with pytest.raises(InputError, match=r"nan.jsonl:1: utility 'comet': values must be finite"):
        utility_matrices(str(path), "comet")
    path.write_text('{"id": 0, "hyp": "a", "utilities": {"comet": [1%s]}}\n' % ("0" * 400))
    with pytest.raises(InputError, match=r"nan.jsonl:1: utility 'comet': values must be finite"):
        utility_matrices(str(path), "comet")
    path.write_text('{"id": 0, "hyp": "a"}\n')
    with pytest.raises(InputError, match='no "utilities" in the file'):
        utility_matrices(str(path), "comet")


def test_utility_matrices_read_rows_in_file_order(samples):
    matrices = utility_matrices(samples, "comet")
    assert matrices[0].tolist() == [[0.2, 0.3, 0.1], [0.2, 0.2, 0.2], [0.9, 0.9, 0.0]]
    assert matrices[1].tolist() == [[0.1, 0.9], [0.5, 0.6]]


def test_options_that_do_not_fit_are_usage_errors(samples, weights, capsys):
    assert main(["mbr", samples]) == 2  # posteriors need weights (or --uniform)
    assert main(["mbr", samples, "--weights", weights, "--tune-scale"]) == 2  # no --refs
    assert main(["mbr", samples, "--uniform", "--scale", "2"]) == 2
    assert main(["mbr", samples, "--uniform", "--metric", "scores.comet"]) == 2
    assert main(["mbr", str(FIXTURES / "mert" / "nbest.txt"), "--uniform", "--utility", "comet"]) == 2  # not JSONL
    capsys.readouterr()


def test_tune_scale_reports_the_corpus_bleu_of_each_scale(tmp_path, capsys):
    sentences = [
        ["the cat sat on the mat", "a cat sat on a mat", "the cat is on the mat", "cat mat"],
        ["he went home early", "he goes home", "he went to home early today", "home he went"],
        ["it rains a lot here", "it is raining much here", "here it rains a lot", "rain"],
    ]
    refs = ["the cat sat on a mat", "he went home early today", "it rains a lot here"]
    lines = [
        {"id": s, "hyp": hyp, "features": {"lm": -float(k) * (1 + s), "len": float(len(hyp.split()))}}
        for s, hyps in enumerate(sentences)
        for k, hyp in enumerate(hyps)
    ]
    data = write_jsonl(tmp_path / "dev.jsonl", lines)
    ref = tmp_path / "ref.txt"
    ref.write_text("".join(r + "\n" for r in refs))
    w = tmp_path / "w.txt"
    w.write_text("lm 1.0\nlen -0.3\n")
    scales = ["0", "0.5", "2", "8"]
    argv = ["mbr", data, "--weights", str(w)]
    assert main([*argv, "--tune-scale", "--refs", str(ref), "--scales", ",".join(scales), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    curve = report["scale_curve"]
    assert [point["scale"] for point in curve] == [float(a) for a in scales]
    for point, scale in zip(curve, scales, strict=True):
        assert main([*argv, "--scale", scale]) == 0
        output = capsys.readouterr().out.splitlines()
        assert point["bleu"] == pytest.approx(sacrebleu.corpus_bleu(output, [refs]).score / 100, abs=1e-12)
    best = max(point["bleu"] for point in curve)
    assert report["summary"]["scale"] == next(p["scale"] for p in curve if p["bleu"] == best)


FOREST = str(FIXTURES / "toy-forest.json")
FOREST_WEIGHTS = str(FIXTURES / "toy-forest.weights")


def test_lattice_and_consensus_methods_print_what_the_library_decides(capsys):
    from hypertune.formats import read_graphs, read_weights
    from hypertune.mbr.consensus import consensus_corpus
    from hypertune.mbr.lattice import lattice_mbr_corpus

    graphs, weights = read_graphs(FOREST), read_weights([FOREST_WEIGHTS])
    assert main(["mbr", FOREST, "--weights", FOREST_WEIGHTS, "--method", "lattice", "--scale", "0.5"]) == 0
    lattice = lattice_mbr_corpus(graphs, weights, scale=0.5).choices
    assert capsys.readouterr().out == "".join(c.text + "\n" for c in lattice)
    assert main(["mbr", FOREST, "--weights", FOREST_WEIGHTS, "--method", "consensus", "--kbest", "5", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    chosen = consensus_corpus(graphs, weights, kbest=5)
    assert [row["hyp"] for row in report["sentences"]] == [c.text for c in chosen]
    assert report["summary"]["method"] == "consensus" and report["sentences"][0]["rank"] == chosen[0].rank


def test_each_methods_options_are_refused_with_the_others(capsys):
    base = ["mbr", FOREST, "--weights", FOREST_WEIGHTS]
    assert main([*base, "--method", "lattice", "--exclude-self"]) == 2
    assert main([*base, "--method", "consensus", "--linear-p", "0.8", "--linear-r", "0.6"]) == 2
    assert main([*base, "--unique"]) == 2
    assert main([*base, "--method", "lattice", "--linear-p", "0.8"]) == 2
    err = capsys.readouterr().err
    assert "--exclude-self: for --method kbest, not lattice" in err and "--linear-p and --linear-r come together" in err
