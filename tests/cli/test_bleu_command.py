"""``hypertune bleu`` prints the number sacrebleu prints."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
import sacrebleu

from hypertune.cli import bleu_command
from hypertune.errors import InputError, UsageError

HYPS = ["The cat sat on the mat.", "A dog ran in the park today", "Hello world!"]
REF0 = ["The cat sat on a mat.", "The dog ran in the park today.", "Hello, world!"]
REF1 = ["A cat was sitting on the mat.", "Today a dog was running in the park.", "hello there world"]


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hypertune")
    sub = parser.add_subparsers()
    bleu_command.register(sub)
    args = parser.parse_args(["bleu", *argv])
    return args.run(args)


@pytest.fixture
def files(tmp_path: Path) -> tuple[str, str, str]:
    paths = []
    for name, lines in (("hyp", HYPS), ("ref0", REF0), ("ref1", REF1)):
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(str(path))
    return paths[0], paths[1], paths[2]


def test_summary_matches_sacrebleu(files, capsys) -> None:
    hyp, ref0, ref1 = files
    assert run(["--hyp", hyp, "--refs", ref0, ref1]) == 0
    out = capsys.readouterr().out.strip()
    expected = sacrebleu.corpus_bleu(HYPS, [REF0, REF1])
    assert out == f"BLEU = {expected.score:.2f} {expected._verbose}"


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--tokenize", "none"],
        ["--lowercase"],
        ["--smooth", "none"],
        ["--smooth", "floor", "--smooth-value", "0.2"],
        ["--tokenize", "intl", "-lc", "--smooth", "add-k"],
    ],
)
def test_json_matches_sacrebleu(files, capsys, options) -> None:
    hyp, ref0, ref1 = files
    assert run(["--hyp", hyp, "--refs", ref0, ref1, "--json", *options]) == 0
    payload = json.loads(capsys.readouterr().out)
    kwargs = {"tokenize": "13a", "lowercase": False, "smooth_method": "exp", "smooth_value": None}
    if "--tokenize" in options:
        kwargs["tokenize"] = options[options.index("--tokenize") + 1]
    if "--lowercase" in options or "-lc" in options:
        kwargs["lowercase"] = True
    if "--smooth" in options:
        kwargs["smooth_method"] = options[options.index("--smooth") + 1]
    if "--smooth-value" in options:
        kwargs["smooth_value"] = float(options[options.index("--smooth-value") + 1])
    expected = sacrebleu.corpus_bleu(HYPS, [REF0, REF1], **kwargs)
    assert payload["score"] == pytest.approx(expected.score, abs=1e-9)
    assert payload["hyp_len"] == expected.sys_len and payload["ref_len"] == expected.ref_len
    assert payload["bp"] == pytest.approx(expected.bp)
    assert list(payload["stats"]) == ["m1", "c1", "m2", "c2", "m3", "c3", "m4", "c4", "reflen"]
    if kwargs["smooth_method"] != "add-k":
        assert [payload["stats"][f"m{n}"] for n in range(1, 5)] == expected.counts
        assert payload["precisions"] == pytest.approx(expected.precisions)


def test_sentence_scores_match_sacrebleu(files, capsys) -> None:
    hyp, ref0, ref1 = files
    assert run(["--hyp", hyp, "--refs", ref0, ref1, "--sentence", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    for row, h, r0, r1 in zip(payload["sentences"], HYPS, REF0, REF1, strict=True):
        assert row["score"] == pytest.approx(sacrebleu.sentence_bleu(h, [r0, r1]).score, abs=1e-9)
    assert run(["--hyp", hyp, "--refs", ref0, "--sentence"]) == 0
    lines = capsys.readouterr().out.strip().split("\n")
    assert len(lines) == 3 and all(line.startswith("BLEU = ") for line in lines)


def test_line_count_mismatch_names_files(files, tmp_path) -> None:
    hyp, ref0, _ = files
    short = tmp_path / "short"
    short.write_text("one line\n", encoding="utf-8")
    with pytest.raises(InputError) as error:
        run(["--hyp", hyp, "--refs", ref0, str(short)])
    message = str(error.value)
    assert str(short) in message and hyp in message and "1 lines" in message and "3" in message


def test_bad_options(files) -> None:
    hyp, ref0, _ = files
    with pytest.raises(SystemExit):  # argparse's usage error, exit 2
        run(["--hyp", hyp, "--refs", ref0, "--max-order", "0"])
    with pytest.raises(UsageError):
        run(["--hyp", hyp, "--refs", ref0, "--ref-length", "ibm", "--smooth", "exp"])
    with pytest.raises(SystemExit):
        run(["--hyp", hyp, "--refs", ref0, "--smooth", "bogus"])


def test_registered_in_main_cli(files, capsys) -> None:
    from hypertune import cli

    if "bleu" not in cli.COMMANDS:
        pytest.skip("bleu is not yet in hypertune.cli.COMMANDS")
    hyp, ref0, ref1 = files
    assert cli.main(["bleu", "--hyp", hyp, "--refs", ref0, ref1]) == 0
    assert capsys.readouterr().out.startswith("BLEU = ")
