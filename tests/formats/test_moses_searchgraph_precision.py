"""The Moses search graph reader's check ``score = score(back) + transition`` allows the printed precision.

Moses writes its search graph with three fixed decimals (``FixPrecision(out, 3)`` in moses/Manager.cpp) and
computes ``transition`` as the single-precision difference ``score(hyp) - score(back)``, so the printed
numbers disagree by rounding: issue #35's line ``score=-0.994`` after ``back=1`` (``0.138``) with
``transition=-1.133`` is one. Printed on the 0.001 grid, ``score - transition - score(back)`` is a multiple of
0.001 whose rounding error is below 3 x 0.0005: 0.001 is rounding, 0.002 is an inconsistency.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hypertune.algorithms import viterbi
from hypertune.errors import InputError
from hypertune.formats import moses_searchgraph
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.weights import Weights

#: 'ein Haus' -> hypotheses 1 'a' (true score 0.13849), 2 'a house' (0.13849 - 1.13280 = -0.99431), 3 'one'
#: (-0.40012), 4 'one house' recombined into 2 (-0.40012 - 1.20049 = -1.60061). Printed as Moses prints:
#: each number rounded to three decimals on its own (transitions from the true values, not the printed ones).
ROUNDED = """\
0 hyp=0 stack=0 forward=1 fscore=-0.994
0 hyp=1 stack=1 back=0 score=0.138 transition=0.138 forward=2 fscore=-0.994 covered=0-0 out=a
0 hyp=3 stack=1 back=0 score=-0.400 transition=-0.400 forward=4 fscore=-1.601 covered=0-0 out=one
0 hyp=2 stack=2 back=1 score=-0.994 transition=-1.133 forward=-1 fscore=0.000 covered=1-1 out=house
0 hyp=4 stack=2 back=3 score=-1.601 transition=-1.200 recombined=2 forward=-1 fscore=0.000 covered=1-1 out=house
"""


def read_text(tmp_path: Path, text: str) -> list:
    path = tmp_path / "rounded.osg"
    path.write_text(text, encoding="utf-8")
    return moses_searchgraph.read(str(path), FeatureSpace(), Vocabulary())


@pytest.mark.parametrize(
    ("text", "expected"),
    [("-0.994", 0.0005), ("12", 0.5), ("0.000", 0.0005), ("-1.133000", 5e-7), ("1.5e-05", 5e-7), ("2E+3", 500.0)],
)
def test_half_unit_is_half_the_last_printed_place(text: str, expected: float) -> None:
    assert moses_searchgraph.half_unit(text) == pytest.approx(expected, rel=1e-12)


def test_three_decimal_rounding_is_read_and_its_best_path_is_moses_best(tmp_path: Path) -> None:
    # line 4 is the issue's: -0.994 - (-1.133) = 0.139, one unit of 0.001 off the printed 0.138
    (graph,) = read_text(tmp_path, ROUNDED)
    best = viterbi(graph, Weights({"Transition": 1.0}))
    assert best.words == ["a", "house"]
    assert best.score == pytest.approx(0.138 + -1.133)  # the printed transitions of the path, summed by hand


def test_two_units_off_is_an_inconsistency(tmp_path: Path) -> None:
    text = ROUNDED.replace("score=-0.994 transition=-1.133", "score=-0.994 transition=-1.134")
    with pytest.raises(InputError, match=r"rounded\.osg:4: score=-0\.994 is not the score of back=1") as caught:
        read_text(tmp_path, text)
    assert "off by 0.002" in str(caught.value) and "(0.0015)" in str(caught.value)


def test_the_tolerance_follows_the_printed_decimals(tmp_path: Path) -> None:
    # six decimals on this line: 0.0005 + 0.0000005 + 0.0000005 allows no 0.001 disagreement any more
    text = ROUNDED.replace("score=-0.994 transition=-1.133", "score=-0.994000 transition=-1.133000")
    with pytest.raises(InputError, match=r"off by 0\.001, more than the printed precision allows \(0\.000501\)"):
        read_text(tmp_path, text)
    exact = ROUNDED.replace("score=-0.994 transition=-1.133", "score=-0.994000 transition=-1.132000")
    assert len(read_text(tmp_path, exact)) == 1


def test_arcs_from_the_start_agree_within_their_precision(tmp_path: Path) -> None:
    # the start's score is not printed: the first arc from it implies 0.138 - 0.138 = 0, the second -0.4 + 0.4
    off = ROUNDED.replace("score=-0.400 transition=-0.400", "score=-0.400 transition=-0.403")
    with pytest.raises(InputError, match=r"rounded\.osg:3: score=-0\.4 is not the score of back=0"):
        read_text(tmp_path, off)


def test_random_single_precision_searches_printed_with_three_decimals_are_read(tmp_path: Path) -> None:
    """Trees of hypotheses scored in float32 as Moses scores them, each number printed with '%.3f' (C++'s
    fixed/precision(3)): every file is read; moving one printed score by 0.002 is refused."""
    rng = np.random.default_rng(35)
    lines = []
    for sid in range(30):
        scores = {0: np.float32(rng.uniform(-1, 1))}  # Moses's start may score anything; it is not printed
        stacks, backs = {0: 0}, {0: -1}
        for _ in range(4):  # paths from a random hypothesis to the last stack: every hypothesis reaches it
            back = int(rng.choice(list(scores)))
            while stacks[back] < 4:
                hyp = len(scores)
                scores[hyp] = np.float32(scores[back] + np.float32(rng.uniform(-8, 2)))
                stacks[hyp], backs[hyp], back = stacks[back] + 1, back, hyp
        forward = {h: next((c for c in backs if backs[c] == h), -1) for h in scores}
        lines.append(f"{sid} hyp=0 stack=0")
        for hyp in range(1, len(scores)):
            back = backs[hyp]
            transition = np.float32(scores[hyp] - scores[back])
            lines.append(
                f"{sid} hyp={hyp} stack={stacks[hyp]} back={back} score={scores[hyp]:.3f} transition={transition:.3f} "
                f"forward={forward[hyp]} covered={stacks[back]}-{stacks[back]} out=w{hyp}"
            )
    text = "\n".join(lines) + "\n"
    assert len(read_text(tmp_path, text)) == 30
    victim = next(line for line in lines if " back=" in line and " back=0 " not in line)
    value = victim.split(" score=")[1].split()[0]
    damaged = victim.replace(f" score={value} ", f" score={float(value) + 0.002:.3f} ")
    with pytest.raises(InputError, match="is not the score of back="):
        read_text(tmp_path, text.replace(victim, damaged, 1))
