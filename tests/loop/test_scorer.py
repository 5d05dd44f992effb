"""``hypertune tune --scorer CMD``: a scorer run after each decoding writes the given scores of the new n-best list,
so that ``--metric scores.NAME`` (a COMET-like utility) is tuned in the loop.

The decoder is the small rescoring decoder of the loop tests (tests/support/rescoring_decoder.py); the scorer is a
script written here that gives each hypothesis the fraction of its words found in its sentence's reference
(``overlap=VALUE``). Expected values are recomputed here from the files the runs write: the overlap by this file's
own arithmetic, the reranking of the accumulated lists with the final weights by a Python dot product.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sacrebleu
from support.rescoring_decoder import decoder_command

from hypertune.cli import main

#: The scorer: argv = n-best list, score file, references, iteration, a folder of switches (files) and a log.
SCORER = r"""
import os, sys, time
kbest, scores, ref, iteration, switches, log = sys.argv[1:7]
with open(log, "a") as handle:
    handle.write(f"{iteration}\n")
if int(iteration) >= 2 and os.path.exists(os.path.join(switches, "fail")):
    print("CUDA out of memory", file=sys.stderr)
    sys.exit(3)
if int(iteration) >= 2 and os.path.exists(os.path.join(switches, "pause")):
    time.sleep(60)
refs = open(ref).read().splitlines()
lines = []
for line in open(kbest):
    sid, words = line.split(" ||| ")[:2]
    hyp, mine = words.split(), set(refs[int(sid)].split())
    lines.append(f"overlap={sum(w in mine for w in hyp) / len(hyp)!r}\n")
if os.path.exists(os.path.join(switches, "short")):
    lines = lines[:-1]
with open(scores, "w") as handle:
    handle.writelines(lines)
"""


def overlap(words: str, reference: str) -> float:
    """The fraction of the hypothesis's words that its reference has (the scorer's score, computed here)."""
    hyp, mine = words.split(), set(reference.split())
    return sum(1 for w in hyp if w in mine) / len(hyp)


def read_nbest(path: Path) -> list[tuple[int, str, dict[str, float]]]:
    """(sentence, words, named features) of each line of the decoder's n-best list (``TM0= a b``: TM0_0, TM0_1)."""
    out = []
    for line in path.read_text().splitlines():
        sid, words, feats = line.split(" ||| ")[:3]
        values: dict[str, list[float]] = {}
        label = ""
        for token in feats.split():
            if token.endswith("="):
                label = token[:-1]
                values[label] = []
            else:
                values[label].append(float(token))
        named = {(f"{k}_{i}" if len(v) > 1 else k): x for k, v in values.items() for i, x in enumerate(v)}
        out.append((int(sid), words.strip(), named))
    return out


@pytest.fixture
def scoring(corpus: dict[str, Path], tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "scorer.py").write_text(SCORER)
    switches = tmp_path / "switches"
    switches.mkdir()
    log = tmp_path / "scored.txt"
    command = (
        f"{sys.executable} {tmp_path / 'scorer.py'} {{kbest}} {{scores}} {corpus['ref']} {{iteration}} {switches} {log}"
    )
    return {"command": Path(command), "switches": switches, "log": log}


def loop_args(corpus: dict[str, Path], scoring: dict[str, Path], workdir: Path, *more: str) -> list[str]:
    decoded = corpus["dir"] / "decoded.txt"
    decoder = decoder_command(corpus) + f" && echo {{iteration}} >> {decoded}"
    return ["tune", "--decoder", decoder, "--scorer", str(scoring["command"]), "--init", str(corpus["init"]),
            "--kbest", "4", "--iterations", "2", "--workdir", str(workdir), "--seed", "3", "--tuner", "mert",
            "--restarts", "2", *more]  # fmt: skip


def run_tune(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict, str]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


def mean_overlap_of_reranked(lists: list[Path], weights: dict[str, float], refs: list[str]) -> float:
    """Rerank the union of ``lists`` per sentence with ``weights`` (ties: the earlier hypothesis) and return the
    mean overlap of the chosen hypotheses."""
    best: dict[int, tuple[float, str]] = {}
    for path in lists:
        for sid, words, features in read_nbest(path):
            model = sum(weights.get(name, 0.0) * value for name, value in features.items())
            if sid not in best or model > best[sid][0]:
                best[sid] = (model, words)
    return sum(overlap(words, refs[sid]) for sid, (_, words) in best.items()) / len(best)


def test_scores_metric_in_the_loop_without_references(corpus, scoring, tmp_path, capsys):
    workdir = tmp_path / "wd"
    code, result, err = run_tune(loop_args(corpus, scoring, workdir, "--metric", "scores.overlap"), capsys)
    assert code == 0, err
    refs = corpus["ref"].read_text().splitlines()
    history = result["history"]
    assert result["metric"] == "scores.overlap" and len(history) == 3
    lists = []
    for entry in history:
        folder = workdir / f"iteration-{entry['iteration']:03d}"
        nbest = read_nbest(folder / "output" / "kbest")
        scores = (folder / "scores").read_text().splitlines()
        assert len(scores) == len(nbest) == 25 * 4  # one line per hypothesis, in the list's order
        assert [float(line.split("=")[1]) for line in scores] == [overlap(w, refs[s]) for s, w, _ in nbest]
        first: dict[int, str] = {}
        for sid, words, _ in nbest:
            first.setdefault(sid, words)  # the decoder's 1-best: its first line per sentence
        assert entry["score"] == pytest.approx(sum(overlap(w, refs[s]) for s, w in first.items()) / 25, abs=1e-12)
        lists.append(folder / "output" / "kbest")
    weights = result["weights"]
    # the final weights rerank every accumulated list to the final decoding's 1-best: the reported score
    assert result["score_after"] == pytest.approx(mean_overlap_of_reranked(lists, weights, refs), abs=1e-12)
    # the last tuning saw the lists before the last decoding, with their scores: its score_after is theirs
    assert history[-2]["tuner_score_after"] == pytest.approx(
        mean_overlap_of_reranked(lists[:-1], weights, refs), abs=1e-12
    )
    assert result["score_after"] > result["score_before"]
    assert scoring["log"].read_text().split() == ["1", "2", "3"]
    assert (workdir / "iteration-002" / "scorer.log").exists() and not list(workdir.rglob(".scores.partial*"))


def test_interpolation_with_bleu(corpus, scoring, tmp_path, capsys):
    workdir = tmp_path / "wd"
    argv = loop_args(corpus, scoring, workdir, "--refs", str(corpus["ref"]), "--metric", "scores.overlap:0.5,bleu:0.5")
    code, result, err = run_tune([*argv, "--iterations", "1"], capsys)
    assert code == 0, err
    refs = corpus["ref"].read_text().splitlines()
    for entry in result["history"]:  # 0.5 mean overlap + 0.5 sacrebleu's BLEU of the decoder's 1-best
        first: dict[int, str] = {}
        for sid, words, _ in read_nbest(workdir / f"iteration-{entry['iteration']:03d}" / "output" / "kbest"):
            first.setdefault(sid, words)
        hyps = [first[s] for s in sorted(first)]
        bleu = sacrebleu.corpus_bleu(hyps, [[refs[s] for s in sorted(first)]], tokenize="none").score / 100
        mean = sum(overlap(first[s], refs[s]) for s in first) / len(first)
        assert entry["score"] == pytest.approx(0.5 * mean + 0.5 * bleu, abs=1e-9)


def test_resume_after_a_kill_between_decoding_and_scoring_scores_again(corpus, scoring, tmp_path, capsys):
    reference = tmp_path / "reference"
    code, expected, err = run_tune(loop_args(corpus, scoring, reference, "--metric", "scores.overlap"), capsys)
    assert code == 0, err
    decoded, scored = corpus["dir"] / "decoded.txt", scoring["log"]
    decoded.unlink()
    scored.unlink()
    workdir = tmp_path / "wd"
    argv = loop_args(corpus, scoring, workdir, "--metric", "scores.overlap")
    (scoring["switches"] / "pause").write_text("")  # the scorer of iteration 2 hangs until killed
    process = subprocess.Popen([sys.executable, "-m", "hypertune", *argv, "--quiet"], stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (scored.exists() and scored.read_text().split() == ["1", "2"]) and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(process.pid, signal.SIGKILL)  # iteration 2 is decoded, its scoring under way
    process.wait()
    assert (workdir / "iteration-002" / "output" / "kbest").exists() and not (
        workdir / "iteration-002" / "scores"
    ).exists()
    (scoring["switches"] / "pause").unlink()
    code, result, err = run_tune([*argv, "--resume"], capsys)
    assert code == 0, err
    assert decoded.read_text().split() == ["1", "2", "3"]  # no decoding was done twice
    assert scored.read_text().split() == ["1", "2", "2", "3"]  # the unfinished scoring was done again
    assert result["weights"] == expected["weights"] and result["resumed"]
    assert [h["score"] for h in result["history"]] == [h["score"] for h in expected["history"]]
    assert not list(workdir.rglob(".scores.partial*")) and not list(workdir.rglob(".hypertune-*"))
    code, again, err = run_tune([*argv, "--resume"], capsys)  # a finished scoring is never redone
    assert code == 0 and scored.read_text().split() == ["1", "2", "2", "3"]


def test_a_failing_scorer_stops_the_loop_and_resume_goes_on(corpus, scoring, tmp_path, capsys):
    workdir = tmp_path / "wd"
    argv = loop_args(corpus, scoring, workdir, "--metric", "scores.overlap")
    (scoring["switches"] / "fail").write_text("")
    code, _, err = run_tune(argv, capsys)
    assert code == 1
    message = err.strip().splitlines()[-1]
    assert f"{workdir}/iteration-002/scorer.log: the scorer failed with exit status 3 in iteration 2" in message
    assert message.endswith("its last lines: CUDA out of memory")
    assert (workdir / "iteration-001" / "tuner.json").exists() and (workdir / "iteration-002" / "output").exists()
    assert not (workdir / "iteration-002" / "scores").exists()
    (scoring["switches"] / "fail").unlink()
    code, result, err = run_tune([*argv, "--resume"], capsys)
    assert code == 0 and len(result["history"]) == 3, err


def test_a_score_file_of_another_length_is_refused(corpus, scoring, tmp_path, capsys):
    workdir = tmp_path / "wd"
    (scoring["switches"] / "short").write_text("")
    code, _, err = run_tune(loop_args(corpus, scoring, workdir, "--metric", "scores.overlap"), capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1
    unchecked, kbest = workdir / "iteration-001" / "scores.unchecked", workdir / "iteration-001" / "output" / "kbest"
    assert err.strip() == (
        f"hypertune tune: error: {unchecked}: the scorer wrote 99 lines of scores in iteration 1 for the 100 "
        f"hypotheses of {kbest} (one line per hypothesis, in the n-best list's order)"
    )
    assert not (workdir / "iteration-001" / "scores").exists()


def test_usage_errors(corpus, scoring, tmp_path, capsys):
    argv = loop_args(corpus, scoring, tmp_path / "wd", "--metric", "scores.overlap")
    without = [a for k, a in enumerate(argv) if a != "--scorer" and argv[k - 1] != "--scorer"]
    code, _, err = run_tune(without, capsys)
    assert (
        code == 2 and "--metric scores.overlap reads given scores (overlap) of every hypothesis: give --scorer" in err
    )
    code, _, err = run_tune([*without[:-2], "--metric", "bleu"], capsys)
    assert code == 2 and "--refs is required: --metric BLEU compares the hypotheses with references" in err
    code, _, err = run_tune([*argv[:3], "--scorer", "comet {kbest}", *argv[5:]], capsys)
    assert code == 2 and "put {kbest} (the n-best list just decoded) and {scores}" in err
    code, _, err = run_tune([*argv, "--", "--scores", "x"], capsys)
    assert code == 2 and "--scores of the tuner is set by the loop in every iteration; give it to tune --scorer" in err
    code, _, err = run_tune([*argv[:2], "x {weights} {lattices}", *argv[3:], "--accumulate", "lattice"], capsys)
    assert code == 2 and "--scorer scores n-best lists: use --accumulate nbest or none with it" in err
    code, _, err = run_tune([*argv, "--test-decoder", "x {weights} {kbest}", "--test-refs", str(corpus["ref"])], capsys)
    assert code == 2 and "--test-decoder scores the test set with --metric scores.overlap, which needs" in err
    assert not (tmp_path / "wd").exists()  # refused before anything ran
