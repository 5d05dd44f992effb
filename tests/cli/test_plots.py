"""``--plot`` on the tuning commands, ``linesearch`` and ``oracle``: each picture is produced, is a real
image of its format, holds the elements it promises (checked in the SVG's text), and draws the right data:
the figure is caught before it is saved and its lines compared with values worked out here by brute force
from the n-best file (``support.plain_rescoring``), not by hypertune."""

from __future__ import annotations

import itertools
import json
import sys

import numpy as np
import pytest
from support import plain_rescoring as plain
from support.paths import FIXTURES

from hypertune.cli import main

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REFS = str(FIXTURES / "mert" / "ref.")
INIT = str(FIXTURES / "mert" / "init.weights")
SEARCH = ["linesearch", NBEST, "--refs", REFS, "--weights", INIT, "--direction", "LM0"]

pytest.importorskip("matplotlib")


def svg(tmp_path, *args: str) -> str:
    out = tmp_path / "picture.svg"
    assert main([*args, "--plot", str(out), "--quiet"]) == 0
    text = out.read_text()
    assert text.lstrip().startswith("<?xml") and "</svg>" in text
    return text


@pytest.fixture
def caught(monkeypatch):
    """The figures the commands draw, kept open instead of saved."""
    from hypertune.cli import plots

    figures: list = []
    monkeypatch.setattr(plots, "save_figure", lambda figure, path, dpi=110: figures.append(figure))
    yield figures
    plots.pyplot().close("all")


def by_gid(figure, gid: str):
    found = [a for axis in figure.axes for a in axis.get_children() if a.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


# ---------------------------------------------------------------------- tuning histories


@pytest.mark.parametrize(
    ("command", "options", "element"),
    [
        ("mert", ["--restarts", "3", "--seed", "1"], "start point (1: the given start weights; 2 on: random restarts)"),
        ("minrisk", [], "objective xbleu: expected corpus BLEU, maximized"),
        ("mira", ["--epochs", "4"], "epoch"),
    ],
)
def test_tuning_commands_draw_their_history(command, options, element, tmp_path, capsys):
    """The title gives BLEU before and after as sacrebleu scores the n-best lists rescored (without
    hypertune) under the start and the written weights; the x-axis says what the entries count."""
    weights = tmp_path / "weights"
    text = svg(tmp_path, command, NBEST, "--refs", REFS, "--init", INIT, *options, "--out", str(weights))
    lists, references = plain.read_nbest(NBEST), plain.reference_streams(REFS)
    before = plain.corpus_bleu(plain.model_best(lists, plain.read_weights(INIT)), references)
    after = plain.corpus_bleu(plain.model_best(lists, plain.read_weights(weights)), references)
    assert f"{command}: BLEU {100 * before:.2f} → {100 * after:.2f}" in text
    assert element in text and "kept" in text and "before tuning" in text
    capsys.readouterr()


def run_json(capsys, *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_mert_restarts_are_points_not_a_curve(tmp_path, caught, capsys):
    """Each start point is its own run: one point per start (1 the given start, then the three restarts) at
    the BLEU the run reports for it, and no line joining them."""
    result = run_json(capsys, "mert", NBEST, "--refs", REFS, "--init", INIT, "--restarts", "3", "--seed", "1",
                      "--plot", str(tmp_path / "x.svg"))  # fmt: skip
    (figure,) = caught
    line = by_gid(figure, "metric")
    assert line.get_linestyle() == "None" and line.get_marker() == "o"
    assert list(line.get_xdata()) == [1, 2, 3, 4]
    assert np.allclose(line.get_ydata(), [100 * e["score"] for e in result["history"]])
    assert figure.axes[0].get_xlabel().startswith("start point")


def test_train_draws_its_loss_first_and_bleu_on_a_second_axis(tmp_path, caught, capsys):
    """``train --plot`` promises the loss: the main axis is the loss per L-BFGS iteration (the run's own history),
    BLEU is on a second axis, both labelled."""
    result = run_json(capsys, "train", NBEST, "--refs", REFS, "--init", INIT, "--loss", "pl",
                      "--plot", str(tmp_path / "x.svg"))  # fmt: skip
    (figure,) = caught
    main_axis, second = figure.axes
    loss = by_gid(figure, "loss")
    assert loss.axes is main_axis and "loss" in main_axis.get_ylabel()
    assert np.allclose(loss.get_ydata(), [e["loss"] for e in result["history"]])
    assert main_axis.get_xlabel() == "L-BFGS iteration"
    assert by_gid(figure, "metric").axes is second and second.get_ylabel() == "BLEU"
    assert "L2 included" in main_axis.get_ylabel()


def test_minrisk_marks_its_annealing_stages(tmp_path, caught, capsys):
    """With ``--anneal 10:0.5:1`` the entropy weight T goes 10, 5, 2.5, 1.25, then 0 (the quench): one labelled
    mark per stage; the second axis is the tuned objective, named."""
    run_json(capsys, "minrisk", NBEST, "--refs", REFS, "--init", INIT, "--anneal", "10:0.5:1",
             "--plot", str(tmp_path / "x.svg"))  # fmt: skip
    (figure,) = caught
    marks = [t.get_text() for t in figure.axes[0].texts if t.get_text().startswith("T=")]
    assert marks == ["T=10", "T=5", "T=2.5", "T=1.25", "T=0"]
    assert figure.axes[1].get_ylabel().startswith("objective xbleu")
    labels = figure.axes[0].get_legend().get_texts()
    assert any("entropy weight T" in t.get_text() for t in labels)


# ---------------------------------------------------------------------- one line search


def hand_lines(direction: str) -> list[list[tuple[float, float]]]:
    """Every hypothesis's line (intercept w·h, slope h_direction) per sentence, from the n-best file."""
    lists, start = plain.read_nbest(NBEST), plain.read_weights(INIT)
    return [[(plain.model_score(h, start), h[1].get(direction, 0.0)) for h in hypotheses] for hypotheses in lists]


def changes(lines: list[tuple[float, float]]) -> list[float]:
    """The γ where the highest line changes: pairwise intersections at which the argmax differs just left
    and right (brute force)."""
    best = lambda g: max(range(len(lines)), key=lambda i: (lines[i][0] + g * lines[i][1], -i))  # noqa: E731
    points = {(b2 - b1) / (m1 - m2) for (b1, m1), (b2, m2) in itertools.combinations(lines, 2) if m1 != m2}
    return sorted(x for x in points if best(x - 1e-9) != best(x + 1e-9))


def line_search_by_enumeration(direction: str) -> tuple[list[float], list[list[int]]]:
    """Along ``INIT + γ·direction``: one γ inside every piece between the breakpoints of all n-best lists
    (pairwise intersections of their lines), and at each the index of every list's model-best hypothesis."""
    lines = hand_lines(direction)
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
    """The chosen step reaches the best BLEU along the line, found by enumerating the pieces of the line;
    the picture names its axes and its parts."""
    text = svg(tmp_path, *SEARCH)
    for element in ("upper envelope", "corpus BLEU", "start γ = 0", "γ: step along the direction d",
                    "model score (w + γ·d)·h", "candidate lines a + γ·b", "breakpoints of the envelope"):  # fmt: skip
        assert element in text
    lists, references, start = plain.read_nbest(NBEST), plain.reference_streams(REFS), plain.read_weights(INIT)

    def bleu(gamma: float) -> float:
        return plain.corpus_bleu(plain.model_best(lists, {**start, "LM0": start["LM0"] + gamma}), references)

    gammas, _ = line_search_by_enumeration("LM0")
    step = float(text.split("chosen step γ = ")[1].split("<")[0])
    assert bleu(step) == pytest.approx(max(bleu(g) for g in gammas)) and bleu(step) > bleu(0.0)
    capsys.readouterr()


@pytest.mark.parametrize("sentence", [0, 3])
def test_line_search_draws_every_candidate_line_and_the_envelope(sentence, tmp_path, caught, capsys):
    """Sentence s's drawn candidate lines are its hypotheses' lines w·h + γ·h_LM0 computed from the file; the
    envelope drawn is their maximum wherever it is drawn, and its dots are where the maximum changes (brute
    force), those inside the picture."""
    assert main([*SEARCH, "--sentence", str(sentence), "--plot", str(tmp_path / "x.svg")]) == 0
    (figure,) = caught
    lines = hand_lines("LM0")[sentence]
    drawn = []
    for (x0, y0), (x1, y1) in by_gid(figure, "candidates").get_segments():
        slope = (y1 - y0) / (x1 - x0)
        drawn.append((y0 - slope * x0, slope))
    assert np.allclose(sorted(drawn), sorted(lines))
    top = figure.axes[0]
    envelope = [a for a in top.get_lines() if (a.get_gid() or "").startswith("envelope-")]
    xs = np.concatenate([a.get_xdata() for a in envelope])
    ys = np.concatenate([a.get_ydata() for a in envelope])
    assert np.allclose(ys, [max(a + x * b for a, b in lines) for x in xs])
    low, high = top.get_xlim()
    dots = by_gid(figure, "breakpoints").get_xdata()
    assert np.allclose(dots, [x for x in changes(lines) if low < x < high])
    assert f"sentence {sentence}, {len(lines)} hypotheses" in top.get_title()
    capsys.readouterr()


def forest_lines(path, weights: dict[str, float], direction: str) -> list[tuple[float, float]]:
    """Every derivation's line of a hypertune JSON forest, by plain recursion over its edges (brute force)."""
    edges = json.loads(path.read_text())["edges"]

    def lines(node: int) -> list[tuple[float, float]]:
        out = []
        for edge in (e for e in edges if e["head"] == node):
            a = sum(weights.get(name, 0.0) * value for name, value in edge["features"].items())
            own = [(a, edge["features"].get(direction, 0.0))]
            for parts in itertools.product(own, *(lines(t) for t in edge["tails"])):
                out.append((sum(p[0] for p in parts), sum(p[1] for p in parts)))
        return out

    return lines(max(e["head"] for e in edges))


def test_a_small_forest_draws_every_derivation(tmp_path, caught, capsys):
    """The toy forest's 27 derivations are few enough: each is drawn as its line w·h + γ·h_lm."""
    forest, weights = FIXTURES / "toy-forest.json", FIXTURES / "toy-forest.weights"
    search = ["linesearch", str(forest), "--refs", str(FIXTURES / "toy-forest.ref"), "--weights", str(weights)]
    assert main([*search, "--direction", "lm", "--plot", str(tmp_path / "x.svg"), "--quiet"]) == 0
    (figure,) = caught
    drawn = []
    for (x0, y0), (x1, y1) in by_gid(figure, "candidates").get_segments():
        slope = (y1 - y0) / (x1 - x0)
        drawn.append((y0 - slope * x0, slope))
    expected = forest_lines(forest, plain.read_weights(weights), "lm")
    assert len(expected) == 27 and np.allclose(sorted(drawn), sorted(expected))
    assert "27 derivations of its forest" in figure.axes[0].get_title()
    capsys.readouterr()


def test_default_range_shows_the_chosen_step_its_sentence_and_nearest_breakpoints(tmp_path, caught, capsys):
    """By default the picture shows the chosen step and the nearest breakpoint of any sentence on each side (the
    chosen interval's ends, by brute force), and the sentence drawn is one whose 1-best changes at one of
    them."""
    result = run_json(capsys, *SEARCH, "--plot", str(tmp_path / "x.svg"))
    (figure,) = caught
    low, high = figure.axes[1].get_xlim()
    every = [changes(s) for s in hand_lines("LM0")]
    gamma = result["best_step"]
    left = max(x for s in every for x in s if x < gamma)
    right = min(x for s in every for x in s if x > gamma)
    assert low < left < gamma < right < high
    sentence = int(figure.axes[0].get_title().split()[1].rstrip(","))
    assert np.isclose(every[sentence], left).any() or np.isclose(every[sentence], right).any()
    assert figure.axes[1].get_xlabel() == "γ: step along the direction d (the weights are w + γ·d)"
    assert figure.axes[1].get_ylabel() == "corpus BLEU"


def test_range_overrides_the_default(tmp_path, caught, capsys):
    assert main([*SEARCH, "--range", "-2", "3", "--plot", str(tmp_path / "x.svg"), "--quiet"]) == 0
    (figure,) = caught
    assert figure.axes[1].get_xlim() == (-2.0, 3.0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--range", "1", "-1"], "--range LO HI needs finite LO < HI, got 1 -1"),
        (["--range", "0", "inf"], "--range LO HI needs finite LO < HI, got 0 inf"),
        (["--sentence", "9"], "--sentence 9: no such sentence in the inputs (ids 0-4)"),
    ],
)
def test_bad_plot_options_are_one_line(options, message, tmp_path, capsys):
    assert main([*SEARCH, *options, "--plot", str(tmp_path / "x.svg")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x.svg").exists()


def test_plot_options_without_plot_are_refused(capsys):
    assert main([*SEARCH, "--range", "-1", "1", "--sentence", "2"]) == 2
    err = capsys.readouterr().err
    assert "--range and --sentence choose what --plot draws; without --plot nothing is drawn" in err


def test_default_range_on_cdec_forests_shows_the_optimum(shared, tmp_path, caught, capsys):
    """cdec's lo_test (weights of ../shared's README): the optimum at γ = -7.31 lies in [-8.19, -6.44), while
    the envelopes' outer breakpoints lie near ±10⁶; the default range is around the optimum and the start."""
    forests = shared / "cdec" / "forests"
    w = tmp_path / "w"
    w.write_text("WordPenalty 4.25\nLanguageModel -1.1165\nPhraseModel_0 -0.96\nPhraseModel_1 -0.65\n"
                 "PhraseModel_2 -0.77\nPassThrough -10\n")  # fmt: skip
    graphs = [str(forests / f"training_dpmert_test_data_{i}.json.gz") for i in (0, 1)]
    options = ["--direction", "WordPenalty", "--metric", "ibm-bleu", "--plot", str(tmp_path / "x.svg")]
    assert main(["linesearch", *graphs, "--refs", str(forests / "lo_test.ref."), "--weights", str(w), *options]) == 0
    (figure,) = caught
    low, high = figure.axes[1].get_xlim()
    assert low < -8.19 and -6.44 < 0.0 < high and high - low < 20
    assert "derivations on the envelope" in figure.axes[0].get_title()
    capsys.readouterr()


def test_svg_is_deterministic(tmp_path, capsys):
    """The same picture twice gives the same bytes (fixed svg.hashsalt, no date)."""
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    assert main([*SEARCH, "--plot", str(first), "--quiet"]) == 0
    assert main([*SEARCH, "--plot", str(second), "--quiet"]) == 0
    assert first.read_bytes() == second.read_bytes()
    assert "<dc:date>" not in first.read_text()


# ---------------------------------------------------------------------- oracles


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
