"""CONTRIBUTING.md's recipe for a tuner, followed: a toy tuner (tests/support/toy_tuner.py: its module, its options,
one registry line) runs from the Python API, as ``hypertune toy`` with flags generated from its options, and
as ``hypertune tune --tuner toy``. Expected values: BLEU by sacrebleu on the model-best hypotheses of the
n-best list, found here by plain arithmetic on the file's lines."""

from __future__ import annotations

import json

import pytest
import sacrebleu
from support.paths import FIXTURES
from support.rescoring_decoder import decoder_command

from hypertune.cli import main
from hypertune.formats.weights import parse_weights
from hypertune.tuners import registry

NBEST = FIXTURES / "mert" / "nbest.txt"
REFS = [FIXTURES / "mert" / "ref.0", FIXTURES / "mert" / "ref.1"]
INIT = FIXTURES / "mert" / "init.weights"


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recipe's one registry line."""
    monkeypatch.setitem(
        registry.TUNERS, "toy", registry.TunerEntry("toy", "support.toy_tuner:Toy", "support.toy_tuner:ToyOptions")
    )


def model_best_bleu(weights: dict[str, float]) -> float:
    """sacrebleu's corpus BLEU (0-1, tokenize none) of each sentence's best hypothesis under ``weights``
    (Moses labels: ``TM0= a b`` are features TM0_0 and TM0_1; the first of equal scores wins)."""
    best: dict[int, tuple[float, str]] = {}
    for line in NBEST.read_text().splitlines():
        sid, words, feats, _ = (part.strip() for part in line.split("|||"))
        values, label, position = {}, "", 0
        for token in feats.split():
            if token.endswith("="):
                label, position = token[:-1], 0
                continue
            values[(label, position)] = float(token)
            position += 1
        score = 0.0
        for (name, k), value in values.items():
            many = sum(1 for (other, _) in values if other == name) > 1
            score += weights.get(f"{name}_{k}" if many else name, 0.0) * value
        if int(sid) not in best or score > best[int(sid)][0]:
            best[int(sid)] = (score, words)
    refs = [path.read_text().splitlines() for path in REFS]
    hyps = [best[s][1] for s in sorted(best)]
    return sacrebleu.corpus_bleu(hyps, [[r[s] for s in sorted(best)] for r in refs], tokenize="none").score / 100


def toy_args(*more: str) -> list[str]:
    return ["toy", str(NBEST), "--refs", *map(str, REFS), "--init", str(INIT), *more]


def test_a_registered_tuner_runs_from_the_api_and_the_command_line(toy, capsys):
    from support.toy_tuner import Toy

    from hypertune.cli.tuning import load_tuning_set
    from hypertune.formats import read_weights

    assert main([*toy_args("--candidates", "15", "--spread", "0.3", "--seed", "4"), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    start = {"LM0": 0.1, "TM0_0": 0.2, "TM0_1": 0.2, "WordPenalty0": -0.3}  # fixtures/mert/init.weights by hand
    assert payload["score_before"] == pytest.approx(model_best_bleu(start), abs=1e-12)
    assert payload["score_after"] == pytest.approx(model_best_bleu(payload["weights"]), abs=1e-12)
    assert payload["score_after"] >= payload["score_before"] and len(payload["history"]) == 15
    import argparse

    args = argparse.Namespace(inputs=[str(NBEST)], refs=list(map(str, REFS)), metric="bleu", tokenize="none",
                              lowercase=False, smooth=None, ref_length=None, max_order=4)  # fmt: skip
    result = Toy(candidates=15, spread=0.3, seed=4).fit(load_tuning_set(args), read_weights([str(INIT)]))
    assert dict(result.weights) == payload["weights"] and result.score_after == payload["score_after"]


def test_its_flags_come_from_its_options(toy, capsys):
    with pytest.raises(SystemExit):
        main(["toy", "--help"])
    shown = capsys.readouterr().out
    assert "--candidates N" in shown and "random points tried (default 20)" in shown and "--spread" in shown
    with pytest.raises(SystemExit) as stop:
        main(toy_args("--candidates", "0"))
    assert stop.value.code == 2 and "--candidates: must be at least 1" in capsys.readouterr().err
    # a rule of the options class itself, worded in the command's flags
    assert main(toy_args("--candidates", "20000")) == 2
    assert "error: --candidates is a toy's: at most 10000, got 20000" in capsys.readouterr().err


def test_the_options_class_refuses_in_parameter_names():
    from support.toy_tuner import ToyOptions

    from hypertune.errors import UsageError

    with pytest.raises(UsageError, match="^spread must be greater than 0, got -1.0$"):
        ToyOptions(spread=-1.0)
    with pytest.raises(UsageError, match="unknown option"):
        ToyOptions.make(None, {"candidate": 3})


def test_the_loop_runs_it(toy, corpus, tmp_path, capsys):
    argv = ["tune", "--decoder", decoder_command(corpus), "--refs", str(corpus["ref"]), "--init", str(corpus["init"]),
            "--kbest", "5", "--iterations", "2", "--workdir", str(tmp_path / "wd"), "--tuner", "toy",
            "--candidates", "30", "--json"]  # fmt: skip
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["tuner"] == "toy" and len(result["history"]) == 3  # two tunings, three decodings
    tuned = json.loads((tmp_path / "wd" / "iteration-001" / "tuner.json").read_text())["result"]
    assert len(tuned["history"]) == 30 and tuned["score_after"] >= tuned["score_before"]
    decoded = parse_weights((tmp_path / "wd" / "iteration-002" / "weights").read_text(), "weights")
    assert decoded == pytest.approx(tuned["weights"], rel=1e-15)  # iteration 2 decodes with what the toy found
