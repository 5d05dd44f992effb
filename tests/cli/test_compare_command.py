"""``hypertune compare`` (issue #31): each system's score is sacrebleu's corpus score of its file (BLEU, TER),
with its interval around it; --runs groups files and reports MultEval's mean and sd of the runs' sacrebleu
scores; scores.NAME read from what ``rerank --out-format jsonl`` wrote, without references; bad inputs are one
line (counts: exit 1; --runs: exit 2); the seed decides the numbers."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
import sacrebleu

from hypertune.cli import main

REFS = [
    "the cat sat on the mat today",
    "a dog barked at the old postman",
    "we will meet again in the spring",
    "she reads a book every night before bed",
    "the train to the city leaves at noon",
    "my brother plays the guitar very well",
]
SYSTEMS = {
    "base": [
        "the cat sat on a mat today",
        "a dog barked at an old postman",
        "we meet again in spring",
        "she reads one book each night before bed",
        "the train to city leaves at noon",
        "my brother plays guitar very well",
    ],
    "new": [
        "the cat sat on the mat today",
        "a dog barked at old postman",
        "we will meet again in the spring",
        "she reads a book each night before the bed",
        "the train for the city leaves at noon",
        "my brother plays the guitar well",
    ],
    "other": [
        "a cat sits on the mat",
        "the dog barked at the postman",
        "we will meet in the spring again",
        "she read a book every night",
        "the city train leaves at noon",
        "my brother plays a guitar very well",
    ],
}
FAST = ["--bootstrap", "200", "--trials", "500"]


def write(folder: Path, name: str, lines: list[str]) -> str:
    path = folder / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {name: write(tmp_path, name, lines) for name, lines in SYSTEMS.items()}
    paths["ref"] = write(tmp_path, "ref", REFS)
    return paths


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["compare", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_json_scores_are_sacrebleus_with_intervals_around_them(files, capsys):
    code, out, err = run([files["base"], files["new"], "--refs", files["ref"], "--json", *FAST], capsys)
    assert code == 0 and not err
    payload = json.loads(out)
    assert payload["metric"] == "bleu" and payload["sentences"] == 6 and payload["runs"] == 1
    assert payload["seed"] == 0 and payload["options"]["tok"] == "13a" and payload["options"]["smooth"] == "exp"
    base, new = payload["systems"]
    for row, name in ((base, "base"), (new, "new")):
        assert row["files"] == [files[name]]
        assert row["score"] == pytest.approx(sacrebleu.corpus_bleu(SYSTEMS[name], [REFS]).score, abs=1e-9)
        assert row["ci_low"] <= row["score"] <= row["ci_high"]
    assert base["p_ar"] is None and base["p_boot"] is None
    assert 0 < new["p_ar"] <= 1 and 0 <= new["p_boot"] <= 1
    assert new["p_ar"] * 501 == pytest.approx(round(new["p_ar"] * 501))  # (c + 1)/(N + 1)


def test_ter_is_lower_is_better_and_shown_as_sacrebleu_shows_it(files, capsys):
    code, out, _ = run([files["base"], files["new"], "--refs", files["ref"], "--metric", "ter", *FAST], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("ter, 6 sentences;")
    expected = [f"{sacrebleu.corpus_ter(SYSTEMS[n], [REFS]).score:.2f}" for n in ("base", "new")]
    assert [line.split()[1] for line in lines[2:]] == expected
    assert lines[2].split()[-1] == "baseline"
    argv = [files["base"], files["new"], "--refs", files["ref"], "--metric", "ter", "--json", *FAST]
    code, out, _ = run(argv, capsys)
    new = json.loads(out)["systems"][1]
    assert new["score"] < json.loads(out)["systems"][0]["score"] and new["p_boot"] < 0.5  # a lower TER beats


def test_runs_report_multeval_mean_and_sd_of_sacrebleu_scores(tmp_path, files, capsys):
    # system A: base, other, base; system B: new, new, other (runs over the same six sentences)
    a = [files["base"], files["other"], files["base"]]
    b = [files["new"], files["new"], files["other"]]
    code, out, _ = run([*a, *b, "--runs", "3", "--refs", files["ref"], "--json", *FAST], capsys)
    assert code == 0
    payload = json.loads(out)
    assert payload["runs"] == 3 and [s["files"] for s in payload["systems"]] == [a, b]
    for row, group in zip(payload["systems"], (a, b), strict=True):
        names = [Path(p).name for p in group]
        scores = [sacrebleu.corpus_bleu(SYSTEMS[n], [REFS]).score for n in names]
        assert row["run_scores"] == pytest.approx(scores, abs=1e-9)
        assert row["score"] == pytest.approx(statistics.mean(scores), abs=1e-9)
        assert row["sd"] == pytest.approx(statistics.stdev(scores), abs=1e-9)
    code, out, _ = run([*a, *b, "--runs", "3", "--refs", files["ref"], *FAST], capsys)
    row = out.splitlines()[2].split()
    assert row[:4] == [f"{files['base']}", "(+2)", f"{payload['systems'][0]['score']:.2f}", "±"]


def test_unequal_line_counts_are_one_line_naming_the_file(tmp_path, files, capsys):
    short = write(tmp_path, "short", SYSTEMS["new"][:4])
    code, out, err = run([files["base"], short, "--refs", files["ref"]], capsys)
    assert code == 1 and not out
    assert err == f"hypertune compare: error: {short}: 4 sentences, but {files['base']} has 6\n"
    ref = write(tmp_path, "ref5", REFS[:5])
    code, _, err = run([files["base"], files["new"], "--refs", ref], capsys)
    assert code == 1 and err == f"hypertune compare: error: {ref}: 5 lines, but {files['base']} has 6 sentences\n"


def test_files_that_are_not_groups_of_runs_are_a_usage_error(files, capsys):
    code, _, err = run([files["base"], files["new"], files["other"], "--runs", "2", "--refs", files["ref"]], capsys)
    assert code == 2 and err.count("\n") == 1 and "3 system files do not form groups of --runs 2" in err


def test_given_scores_from_rerank_jsonl_need_no_references(tmp_path, capsys):
    kbest = tmp_path / "test.jsonl"
    hypotheses = [  # (id, hyp, feature f, comet)
        (0, "a b", 1.0, 0.5), (0, "a c", 0.0, 0.9),
        (1, "d", 0.0, 0.25), (1, "e", 2.0, 0.75),
        (2, "f g", 3.0, 0.125), (2, "f h", 1.0, 0.625),
    ]  # fmt: skip
    kbest.write_text("".join(json.dumps({"id": i, "hyp": h, "features": {"f": f}, "scores": {"comet": c}}) + "\n"
                             for i, h, f, c in hypotheses))  # fmt: skip
    outputs = []
    for sign in ("1", "-1"):
        weights = tmp_path / f"w{sign}"
        weights.write_text(f"f {sign}\n")
        out = tmp_path / f"best{sign}.jsonl"
        assert main(["rerank", str(kbest), "-w", str(weights), "--out", str(out), "--out-format", "jsonl"]) == 0
        outputs.append(str(out))
    capsys.readouterr()
    # f = +1 picks the higher f: comets 0.5, 0.75, 0.125 (mean 0.458333...); f = -1: 0.9, 0.25, 0.625 (0.591666...)
    code, out, err = run([*outputs, "--metric", "scores.comet", "--json", *FAST], capsys)
    assert code == 0, err
    base, other = json.loads(out)["systems"]
    assert base["score"] == pytest.approx((0.5 + 0.75 + 0.125) / 3, abs=1e-12)
    assert other["score"] == pytest.approx((0.9 + 0.25 + 0.625) / 3, abs=1e-12)
    assert json.loads(out)["options"] == {"nrefs": 0, "bootstrap": 200, "trials": 500, "confidence": 0.95}
    # the summary shows given scores as they are
    code, out, _ = run([*outputs, "--metric", "scores.comet", *FAST], capsys)
    assert out.splitlines()[2].split()[1] == "0.4583"
    # a score the file does not carry, and the same file scored by BLEU against references
    code, _, err = run([*outputs, "--metric", "scores.qe"], capsys)
    assert code == 1 and "the scores comet" in err and err.count("\n") == 1
    code, out, _ = run([*outputs, "--refs", write(tmp_path, "ref", ["a b", "e", "f h"]), "--json", *FAST], capsys)
    expected = sacrebleu.corpus_bleu(["a b", "e", "f g"], [["a b", "e", "f h"]]).score
    assert json.loads(out)["systems"][0]["score"] == pytest.approx(expected, abs=1e-9)


def test_the_seed_decides_the_numbers(files, capsys):
    argv = [files["base"], files["new"], files["other"], "--refs", files["ref"], "--json", *FAST]
    first = json.loads(run([*argv, "--seed", "5"], capsys)[1])
    assert json.loads(run([*argv, "--seed", "5"], capsys)[1]) == first
    second = json.loads(run([*argv, "--seed", "6"], capsys)[1])
    assert [s["score"] for s in second["systems"]] == [s["score"] for s in first["systems"]]
    intervals = [[(s["ci_low"], s["ci_high"]) for s in payload["systems"]] for payload in (first, second)]
    assert intervals[0] != intervals[1]


def test_other_metrics_and_bleu_variants(files, capsys):
    argv = [files["base"], files["new"], "--refs", files["ref"], "--json", *FAST]
    payload = json.loads(run([*argv, "--metric", "chrf"], capsys)[1])
    assert payload["systems"][1]["score"] == pytest.approx(
        sacrebleu.corpus_chrf(SYSTEMS["new"], [REFS]).score, abs=1e-9
    )
    assert "tok" not in payload["options"]  # no BLEU, no BLEU options
    # ibm-bleu keeps its reference length and its own smoothing under bleu's defaults (exp would be refused)
    options = json.loads(run([*argv, "--metric", "ibm-bleu"], capsys)[1])["options"]
    assert (options["ref_length"], options["smooth"]) == ("ibm", "none")
    options = json.loads(run([*argv, "--metric", "bleu+1"], capsys)[1])["options"]
    assert (options["ref_length"], options["smooth"]) == ("closest", "plus1")


def test_jsonl_needs_one_hypothesis_for_each_sentence_id(tmp_path, capsys):
    lines = [{"id": 1, "hyp": "f g h i j"}, {"id": 0, "hyp": "a b c d e"}]  # any order of the ids 0..n-1
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps(x) + "\n" for x in lines))
    ref = write(tmp_path, "ref", ["a b c d e", "f g h i j"])
    code, out, _ = run([str(good), "--refs", ref, "--json", *FAST], capsys)
    assert code == 0 and json.loads(out)["systems"][0]["score"] == pytest.approx(100.0)
    kbest = tmp_path / "kbest.jsonl"
    kbest.write_text("".join(json.dumps(x) + "\n" for x in [*lines, {"id": 0, "hyp": "c"}]))
    code, _, err = run([str(kbest), "--refs", str(tmp_path / "ref")], capsys)
    assert code == 1 and err == f"hypertune compare: error: {kbest}: sentence 0 has 2 hypotheses; compare takes one " \
        "per sentence (what 'rerank --out-format jsonl' writes)\n"  # fmt: skip
    gap = tmp_path / "gap.jsonl"
    gap.write_text(json.dumps({"id": 0, "hyp": "a"}) + "\n" + json.dumps({"id": 2, "hyp": "b"}) + "\n")
    code, _, err = run([str(gap), "--refs", str(tmp_path / "ref")], capsys)
    assert code == 1 and "no sentence 1" in err and err.count("\n") == 1
