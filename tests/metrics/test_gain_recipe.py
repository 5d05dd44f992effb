"""CONTRIBUTING.md's recipe for a gain, followed: a toy gain (tests/support/toy_gain.py: its function, one registry
line, its name in ``choices.GAINS``) runs as ``hypertune hope-fear --gain toy`` and ``hypertune mira --gain toy``
on an n-best list and as ``hypertune tune --tuner mira --gain toy``; lattices and forests refuse it in one line,
as it has no compiled kernel. Expected hopes and fears: the n-best file's lines scored by hand (model score and
clipped unigram precision)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from support.paths import FIXTURES
from support.rescoring_decoder import decoder_command
from support.toy_gain import unigram_precision

from hypertune import choices
from hypertune.cli import main
from hypertune.metrics import gains

NBEST = FIXTURES / "mert" / "nbest.txt"
REFS = [FIXTURES / "mert" / "ref.0", FIXTURES / "mert" / "ref.1"]
INIT = FIXTURES / "mert" / "init.weights"
START = {"LM0": 0.1, "TM0_0": 0.2, "TM0_1": 0.2, "WordPenalty0": -0.3}  # fixtures/mert/init.weights by hand


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recipe: the name at the end of choices.GAINS and the one registry line (on copies, undone after)."""
    monkeypatch.setattr(choices, "GAINS", (*choices.GAINS, "toy"))
    monkeypatch.setattr(gains, "GAINS", dict(gains.GAINS))
    gains.register_gain("toy", "clipped unigram precision", rows=unigram_precision)


def by_hand() -> dict[int, tuple[str, str]]:
    """Each sentence's hope (max w·h + B) and fear (max w·h - B), the first of equals, B = clipped unigram
    precision against both references (Moses labels: ``TM0= a b`` are features TM0_0 and TM0_1)."""
    refs = [path.read_text().splitlines() for path in REFS]
    lists: dict[int, list[tuple[float, float, str]]] = {}
    for line in NBEST.read_text().splitlines():
        sid, words, feats, _ = (part.strip() for part in line.split("|||"))
        values: dict[str, list[float]] = {}
        for token in feats.split():
            if token.endswith("="):
                label = token[:-1]
                values[label] = []
            else:
                values[label].append(float(token))
        score = sum(START[label if len(v) == 1 else f"{label}_{k}"] * x
                    for label, v in values.items() for k, x in enumerate(v))  # fmt: skip
        hyp = Counter(words.split())
        most = Counter()
        for ref in refs:
            for word, count in Counter(ref[int(sid)].split()).items():
                most[word] = max(most[word], count)
        gain = sum(min(c, most[w]) for w, c in hyp.items()) / max(sum(hyp.values()), 1)
        lists.setdefault(int(sid), []).append((score, gain, words))
    out = {}
    for sid, rows in lists.items():
        hope = max(range(len(rows)), key=lambda i: (rows[i][0] + rows[i][1], -i))
        fear = max(range(len(rows)), key=lambda i: (rows[i][0] - rows[i][1], -i))
        out[sid] = (rows[hope][2], rows[fear][2])
    return out


def test_a_registered_gain_runs_in_hope_fear_and_mira(toy, capsys):
    argv = ["hope-fear", str(NBEST), "--refs", *map(str, REFS), "--weights", str(INIT), "--gain", "toy", "--json"]
    assert main(argv) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["gain"] == "toy"
    expected = by_hand()
    assert {row["sentence"]: (row["hope"]["text"], row["fear"]["text"]) for row in found["sentences"]} == expected
    assert main(["mira", str(NBEST), "--refs", *map(str, REFS), "--init", str(INIT), "--gain", "toy", "--epochs",
                 "3", "--json"]) == 0  # fmt: skip
    tuned = json.loads(capsys.readouterr().out)
    assert len(tuned["history"]) == 3 and set(tuned["weights"]) == set(START)


def test_lattices_and_forests_refuse_a_gain_without_kernel(toy, capsys):
    forest = FIXTURES / "toy-forest.json"
    argv = ["hope-fear", str(forest), "--refs", str(FIXTURES / "toy-forest.ref"), "--weights",
            str(FIXTURES / "toy-forest.weights"), "--gain", "toy"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "the toy gain has no compiled kernel" in err and len(err.strip().splitlines()) == 1


def test_the_loop_runs_it(toy, corpus, tmp_path, capsys):
    argv = ["tune", "--decoder", decoder_command(corpus), "--refs", str(corpus["ref"]), "--init", str(corpus["init"]),
            "--kbest", "5", "--iterations", "2", "--workdir", str(tmp_path / "wd"), "--tuner", "mira",
            "--gain", "toy", "--epochs", "2", "--json"]  # fmt: skip
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tuner"] == "mira" and len(result["history"]) == 3  # two tunings, three decodings
    tuned = json.loads((tmp_path / "wd" / "iteration-001" / "tuner.json").read_text())["result"]
    assert len(tuned["history"]) == 2
