"""One weights-finishing rule and the start weights as a candidate (hypertune.tuners.finishing), on every tuning
command: the written weights' L1 norm is 1 with the start's unknown features kept, ``--normalize none`` writes
them as found, and a run that found nothing better than its start returns the start weights."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import sacrebleu
from support.paths import FIXTURES

from hypertune.cli import main
from hypertune.errors import UsageError
from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.metrics import BleuMetric
from hypertune.symbols import FeatureSpace
from hypertune.tuners import Mert, TuningSet
from hypertune.tuners.finishing import finish_weights, keeps_start, normalize_l1
from hypertune.tuners.train import Trainer
from hypertune.weights import Weights

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REFS = str(FIXTURES / "mert" / "ref.")
INIT = str(FIXTURES / "mert" / "init.weights")
START = {"LM0": 0.1, "TM0_0": 0.2, "TM0_1": 0.2, "WordPenalty0": -0.3}  # init.weights, read by eye
UNKNOWN = 0.7  # the weight of a feature the n-best list lacks, added to a copy of init.weights

COMMANDS = {
    "mert": ["mert"],
    "mira": ["mira"],  # 60 epochs: the 52nd beats the start
    "minrisk": ["minrisk"],
    "pro": ["pro"],
    "train-pl": ["train", "--loss", "pl"],
    "online-perceptron": ["train", "--loss", "perceptron", "--epochs", "3"],
    "online-pa": ["train", "--loss", "pro", "--optimizer", "pa", "--epochs", "3"],
}


def run_json(capsys: pytest.CaptureFixture, *argv: str) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unknown name's warning
        assert main([*argv, "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


def fixture_set() -> TuningSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TuningSet.from_corpus(read_graphs(NBEST), read_references(REFS), BleuMetric(tokenize="none"))


def one_best(weights: dict[str, float]) -> list[str]:
    """Each sentence's model-best hypothesis of the n-best fixture under ``weights`` (first on ties), by brute
    force from the file's text (``TM0= a b`` is ``TM0_0``, ``TM0_1``)."""
    best: dict[int, tuple[float, str]] = {}
    for line in Path(NBEST).read_text().splitlines():
        sid, words, features = (part.strip() for part in line.split("|||")[:3])
        groups: list[tuple[str, list[float]]] = []
        for token in features.split():
            if token.endswith("="):
                groups.append((token[:-1], []))
            else:
                groups[-1][1].append(float(token))
        score = 0.0
        for name, values in groups:
            names = [name] if len(values) == 1 else [f"{name}_{i}" for i in range(len(values))]
            score += sum(weights.get(n, 0.0) * v for n, v in zip(names, values, strict=True))
        if int(sid) not in best or score > best[int(sid)][0]:
            best[int(sid)] = (score, words)
    return [best[i][1] for i in sorted(best)]


def sacrebleu_of(weights: dict[str, float]) -> float:
    references = [Path(REFS + str(k)).read_text().splitlines() for k in (0, 1)]
    return sacrebleu.corpus_bleu(one_best(weights), references, tokenize="none").score / 100


# ---------------------------------------------------------------------- the rule, worked by hand
def test_finish_weights_by_hand():
    space = FeatureSpace(["a", "b"])
    start = Weights({"x": 2.0, "a": 1.0})  # x: a feature the inputs lack
    raw = finish_weights(start, space, np.array([3.0, -1.0]), "none")
    assert list(raw.items()) == [("x", 2.0), ("a", 3.0), ("b", -1.0)]  # the start's order, then the new names
    scaled = finish_weights(start, space, np.array([3.0, -1.0]))  # "l1" by default: |2| + |3| + |-1| = 6
    assert dict(scaled) == pytest.approx({"x": 2 / 6, "a": 3 / 6, "b": -1 / 6}, abs=1e-15)
    zero = finish_weights(Weights(), space, np.zeros(2))
    assert dict(zero) == {"a": 0.0, "b": 0.0}  # every feature of the inputs is written, zeros too
    assert dict(normalize_l1(Weights({"a": -4.0, "b": 1.0}))) == {"a": -0.8, "b": 0.2}
    with pytest.raises(UsageError, match="normalize"):
        finish_weights(start, space, np.zeros(2), "l2")


def test_keeps_start_follows_the_metric_direction():
    assert keeps_start(0.30, 0.30) and keeps_start(0.30, 0.25) and not keeps_start(0.30, 0.31)  # BLEU
    assert keeps_start(0.30, 0.35, False) and not keeps_start(0.30, 0.25, False)  # TER: lower is better
    assert not keeps_start(0.30, 0.25, feasible=False)  # a start outside the bounds is no candidate


# ---------------------------------------------------------------------- every command on the MERT fixture
@pytest.fixture(scope="module")
def init_with_unknown(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("init") / "init.weights"
    path.write_text(Path(INIT).read_text() + f"Unknown0= {UNKNOWN}\n")  # Moses style, as init.weights
    return str(path)


@pytest.mark.parametrize("command", list(COMMANDS))
def test_written_weights_have_l1_norm_one_and_keep_unknown_start_weights(command, init_with_unknown, tmp_path, capsys):
    argv = [*COMMANDS[command], NBEST, "--refs", REFS, "--init", init_with_unknown]
    scaled_file, raw_file = tmp_path / "scaled", tmp_path / "raw"
    scaled = run_json(capsys, *argv, "--out", str(scaled_file))
    raw = run_json(capsys, *argv, "--out", str(raw_file), "--normalize", "none")
    written, found = dict(read_weights(str(scaled_file))), dict(read_weights(str(raw_file)))
    assert math.fsum(abs(v) for v in written.values()) == pytest.approx(1.0, abs=1e-12)
    assert set(written) == set(found) == {*START, "Unknown0"}
    assert found["Unknown0"] == UNKNOWN  # kept as given; scaled by the same factor as the rest
    norm = math.fsum(abs(v) for v in found.values())
    assert written == pytest.approx({name: value / norm for name, value in found.items()}, rel=1e-12, abs=1e-15)
    assert scaled["kept_start"] == raw["kept_start"] and scaled["score_after"] == raw["score_after"]
    if raw["kept_start"]:  # the start weights as given
        assert found == {**START, "Unknown0": UNKNOWN}
    assert sacrebleu_of(written) == pytest.approx(scaled["score_after"], abs=1e-12)


def test_minrisk_and_mira_now_normalize(init_with_unknown, capsys):
    """The two tuners that wrote their weights unnormalized before: their raw weights are far from norm 1."""
    for command in ("minrisk", "mira"):
        raw = run_json(capsys, *COMMANDS[command], NBEST, "--refs", REFS, "--init", init_with_unknown,
                       "--normalize", "none")  # fmt: skip
        assert not raw["kept_start"] and math.fsum(abs(v) for v in raw["weights"].values()) > 1.5


# ---------------------------------------------------------------------- the start weights as a candidate
def test_pro_that_ends_below_its_start_returns_the_start_weights(capsys):
    """PRO's own end point on the fixture scores below the start weights (its last iteration); the command
    returns the start weights, L1-normalized, and their BLEU (sacrebleu over the model-best hypotheses)."""
    payload = run_json(capsys, "pro", NBEST, "--refs", REFS, "--init", INIT)
    assert payload["history"][-1]["score"] < payload["score_before"]  # what PRO found is worse
    assert payload["kept_start"] is True and payload["score_after"] == payload["score_before"]
    norm = sum(abs(v) for v in START.values())
    assert payload["weights"] == pytest.approx({name: value / norm for name, value in START.items()}, abs=1e-15)
    assert payload["score_after"] == pytest.approx(sacrebleu_of(payload["weights"]), abs=1e-12)
    assert main(["pro", NBEST, "--refs", REFS, "--init", INIT]) == 0
    out = capsys.readouterr().out
    assert "kept the start weights: nothing found scored better" in out.splitlines()[0]


def test_a_kept_start_is_what_the_checkpoints_end_on():
    reported = []
    tuner = Trainer(loss="pro", checkpoint=lambda weights, score: reported.append((dict(weights), score)))
    result = tuner.fit(fixture_set(), Weights(START))
    assert result.kept_start
    if reported:  # an iterate beat the start, then the run fell back: the start weights reported last
        assert reported[-1][0] == pytest.approx(dict(result.weights), abs=1e-15)
        assert reported[-1][1] == result.score_before


def test_mert_from_weights_nothing_beats_keeps_them():
    tuning_set = fixture_set()
    first = Mert(n_jobs=1).fit(tuning_set, Weights(START))
    assert first.score_after == 1.0 and not first.kept_start  # BLEU 100 on the fixture: nothing beats it
    again = Mert(n_jobs=1, restarts=2, seed=1).fit(tuning_set, first.weights)
    assert again.kept_start and again.score_after == again.score_before == 1.0
    assert dict(again.weights) == pytest.approx(dict(first.weights), abs=1e-15)
