"""``tune`` returns the weights of the best dev decoding (``--return best``, the default; ``--return last``: the
last decoding's), and with a test set scores both. The decoders are scripts whose output gets worse at the last
iteration (or never changes its 1-best), so the best iteration is known before the loop runs; BLEU comes from
sacrebleu on the decoders' own output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.rescoring_decoder import decoder_command, first_lines_bleu

from hypertune.cli import main

# Writes K hypotheses per sentence of words no reference has (new ones in every iteration): BLEU 0.
WORSE = r"""
import sys
out, k, iteration = sys.argv[1], int(sys.argv[2]), sys.argv[3]
with open(out, "w") as handle:
    for sid in range(25):
        for j in range(k):
            features = f"LM0= {j * 0.1} TM0= 0.5 -{j} WordPenalty0= -2 d= 0"
            handle.write(f"{sid} ||| zz{iteration}x{j} yy{j} ||| {features} ||| 0\n")
"""

# Every sentence's first hypothesis is its reference, the others change in each iteration: equal dev BLEU.
SAME = r"""
import sys
ref, out, k, iteration = sys.argv[1], sys.argv[3], int(sys.argv[4]), sys.argv[5]  # argv[2]: the weights
with open(out, "w") as handle:
    for sid, line in enumerate(open(ref).read().splitlines()):
        handle.write(f"{sid} ||| {line} ||| LM0= 1 TM0= 0 0 WordPenalty0= 0 d= 0 ||| 0\n")
        for j in range(1, k):
            handle.write(f"{sid} ||| q{iteration}x{j} ||| LM0= 0 TM0= {j} 0 WordPenalty0= -1 d= {iteration} ||| 0\n")
"""


def worse_at_the_end(corpus: dict[str, Path]) -> str:
    """The rescoring decoder in iterations 1 and 2, then the decoder of :data:`WORSE`."""
    script = corpus["dir"] / "worse.py"
    script.write_text(WORSE)
    return (f"if [ {{iteration}} -ge 3 ]; then python3 {script} {{kbest}} {{k}} {{iteration}}; "
            f"else {decoder_command(corpus)}; fi")  # fmt: skip


def tune(corpus: dict[str, Path], workdir: Path, decoder: str, capsys, *more: str) -> tuple[dict, str]:
    argv = ["tune", "--decoder", decoder, "--refs", str(corpus["ref"]), "--init", str(corpus["init"]), "--kbest",
            "5", "--iterations", "2", "--workdir", str(workdir), "--seed", "3", "--tuner", "mert", "--restarts", "2",
            "--epsilon", "0", *more]  # fmt: skip
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


def dev_scores(workdir: Path, ref: Path, decodings: int) -> list[float]:
    return [first_lines_bleu(workdir / f"iteration-{i:03d}" / "output" / "kbest", ref) for i in range(1, decodings + 1)]


def test_a_last_iteration_that_got_worse_is_not_returned(corpus, tmp_path, capsys):
    workdir, out = tmp_path / "wd", tmp_path / "tuned"
    test = ["--test-decoder", decoder_command(corpus), "--test-refs", str(corpus["ref"])]
    result, _ = tune(corpus, workdir, worse_at_the_end(corpus), capsys, "--out", str(out), *test)
    assert [h["iteration"] for h in result["history"]] == [1, 2, 3]
    dev = dev_scores(workdir, corpus["ref"], 3)
    assert dev[2] == 0.0 < max(dev[:2])
    best = 1 + dev.index(max(dev))
    assert result["best_iteration"] == result["returned_iteration"] == best and result["returns"] == "best"
    assert result["score_after"] == pytest.approx(dev[best - 1], abs=1e-12)
    assert result["score_last"] == pytest.approx(0.0, abs=1e-12)
    # what the best decoding used, byte for byte; every iteration's weights stay in the work directory
    assert out.read_text() == (workdir / f"iteration-{best:03d}" / "weights").read_text()
    assert all((workdir / f"iteration-{i:03d}" / "weights").is_file() for i in (1, 2, 3))
    # the test set decoded with the weights returned and with the last ones, each scored by sacrebleu
    for key, i in (("test_score", best), ("test_score_last", 3)):
        folder = workdir / f"test-{i:03d}"
        assert (folder / "weights").read_text() == (workdir / f"iteration-{i:03d}" / "weights").read_text()
        assert result[key] == pytest.approx(first_lines_bleu(folder / "output" / "kbest", corpus["ref"]), abs=1e-12)
    assert result["test_bleu"] == result["test_score"]  # the deprecated alias


def test_return_last_keeps_the_old_behaviour_and_the_summary_names_both(corpus, tmp_path, capsys):
    workdir, out = tmp_path / "wd", tmp_path / "tuned"
    result, _ = tune(corpus, workdir, worse_at_the_end(corpus), capsys, "--out", str(out), "--return", "last")
    assert result["returned_iteration"] == 3 and result["returns"] == "last"
    assert result["score_after"] == result["score_last"] == pytest.approx(0.0, abs=1e-12)
    assert out.read_text() == (workdir / "iteration-003" / "weights").read_text()
    best = result["best_iteration"]
    assert best in (1, 2)
    # --return is not part of the run: the finished run resumes with the other choice, no decoding again
    code = main(["tune", "--decoder", worse_at_the_end(corpus), "--refs", str(corpus["ref"]), "--init",
                 str(corpus["init"]), "--kbest", "5", "--iterations", "2", "--workdir", str(workdir), "--seed", "3",
                 "--tuner", "mert", "--restarts", "2", "--epsilon", "0", "--resume"])  # fmt: skip
    text, err = capsys.readouterr()
    assert code == 0, err
    shown = f"{100 * result['history'][best - 1]['score']:.2f}"
    assert f"returned: iteration {best}, the best (the last, 3, scored 0.00)" in text
    assert f"after {shown} " in text


def test_ties_go_to_the_earliest_decoding(corpus, tmp_path, capsys):
    script = corpus["dir"] / "same.py"
    script.write_text(SAME)
    decoder = f"python3 {script} {corpus['ref']} {{weights}} {{kbest}} {{k}} {{iteration}}"
    workdir, out = tmp_path / "wd", tmp_path / "tuned"
    result, _ = tune(corpus, workdir, decoder, capsys, "--out", str(out))
    scores = [h["score"] for h in result["history"]]
    assert len(scores) == 3 and scores == [pytest.approx(1.0, abs=1e-12)] * 3
    assert result["best_iteration"] == result["returned_iteration"] == 1
    assert out.read_text() == (workdir / "iteration-001" / "weights").read_text() == corpus["init"].read_text()


def test_runs_that_return_the_same_weights_are_a_warning(corpus, tmp_path, capsys):
    script = corpus["dir"] / "same.py"
    script.write_text(SAME)
    decoder = f"python3 {script} {corpus['ref']} {{weights}} {{kbest}} {{k}} {{iteration}}"
    argv = ["tune", "--decoder", decoder, "--refs", str(corpus["ref"]), "--init", str(corpus["init"]), "--kbest",
            "3", "--iterations", "1", "--workdir", str(tmp_path / "wd"), "--tuner", "minrisk", "--runs", "2",
            "--json"]  # fmt: skip
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert [run["weights"] for run in result["runs"]] == [result["weights"]] * 2
    assert "the 2 runs returned the same weights: the loop did not depend on the seed" in err
