"""``--plot`` on the tuning commands, ``linesearch`` and ``oracle``: each picture is produced, is a real
image of its format, and holds the elements it promises (checked in the SVG's text)."""

from __future__ import annotations

import itertools
import re
import sys

import pytest
from support import plain_rescoring as plain
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


@pytest.mark.parametrize(
    ("command", "options", "element"),
    [
        ("mert", ["--restarts", "3", "--seed", "1"], "kept"),
        ("minrisk", [], "objective"),
        ("mira", ["--epochs", "4"], "kept"),
    ],
)
def test_tuning_commands_draw_their_history(command, options, element, tmp_path, capsys):
    """The title gives BLEU before and after as sacrebleu scores the n-best lists rescored (without
    hypertune) under the start and the written weights."""
    weights = tmp_path / "weights"
    text = svg(tmp_path, command, NBEST, "--refs", REFS, "--init", INIT, *options, "--out", str(weights))
    lists, references = plain.read_nbest(NBEST), plain.reference_streams(REFS)
    before = plain.corpus_bleu(plain.model_best(lists, plain.read_weights(INIT)), references)
    after = plain.corpus_bleu(plain.model_best(lists, plain.read_weights(weights)), references)
    assert f"{command}: BLEU {100 * before:.2f} → {100 * after:.2f}" in text
    assert "iteration" in text and element in text
    capsys.readouterr()


def line_search_by_enumeration(direction: str) -> tuple[list[float], list[list[int]]]:
    """Along ``INIT + γ·direction``: one γ inside every piece between the breakpoints of all n-best lists
    (pairwise intersections of their lines), and at each the index of every list's model-best hypothesis."""
    lists, start = plain.read_nbest(NBEST), plain.read_weights(INIT)
    lines = [[(plain.model_score(h, start), h[1].get(direction, 0.0)) for h in hypotheses] for hypotheses in lists]
    points = sorted(
        (b2 - b1) / (m1 - m2)
        for sentence in lines
        for (b1, m1), (b2, m2) in itertools.combinations(sentence, 2)
        if m1 != m2
    )
    gammas = [points[0] - 1, *((a + b) / 2 for a, b in zip(points, points[1:], strict=False)), points[-1] + 1]
    best = [[max(range(len(s)), key=lambda i, s=s, g=g: s[i][0] + g * s[i][1]) for s in lines] for g in gammas]
    return gammas, best


def test_line_search_picture(tmp_path, capsys):
    """The chosen step reaches the best BLEU along the line and sentence 0's envelope has as many lines as
    hypotheses that are model-best somewhere on it, both found by enumerating the pieces of the line."""
    text = svg(tmp_path, "linesearch", NBEST, "--refs", REFS, "--weights", INIT, "--direction", "LM0")
    for element in ("upper envelopes", "corpus error surface", "start"):
        assert element in text
    lists, references, start = plain.read_nbest(NBEST), plain.reference_streams(REFS), plain.read_weights(INIT)

    def bleu(gamma: float) -> float:
        return plain.corpus_bleu(plain.model_best(lists, {**start, "LM0": start["LM0"] + gamma}), references)

    gammas, best = line_search_by_enumeration("LM0")
    step = float(re.search(r"best step ([-0-9.e]+)", text).group(1))
    assert bleu(step) == pytest.approx(max(bleu(g) for g in gammas)) and bleu(step) > bleu(0.0)
    assert f"sentence 0: {len({b[0] for b in best})} lines" in text
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
