"""One metric-neutral result and one "better" rule (issue #28, item 2): every tuning command's JSON carries
``score_before``, ``score_after``, ``metric``, ``higher_is_better`` beside the deprecated keys, and a best
restart or epoch is the lowest where a lower value of the metric is better (TER)."""

from __future__ import annotations

import json
import warnings

import pytest
import sacrebleu
from support.paths import FIXTURES

from hypertune.cli import main
from hypertune.formats import read_graphs, read_references
from hypertune.metrics import BleuMetric, TerMetric, best_index, better, worst
from hypertune.tuners import Mira, TuningSet
from hypertune.tuners.online import OnlineTrainer
from hypertune.weights import Weights

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REFS = str(FIXTURES / "mert" / "ref.")
INIT = str(FIXTURES / "mert" / "init.weights")
COMMON = [NBEST, "--refs", REFS, "--init", INIT, "--seed", "3", "--json"]

#: A poor start on shared/moses/mert-example: the epochs' metrics differ there, so the rule matters.
POOR_START = {f"d_{i}": 0.09682258433021701 for i in range(7)} | {
    "lm_0": -1.0, "lm_1": 0.060820931996895, "tm_0": 0.019364516866043402, "tm_1": 0.029046775299065103,
    "tm_2": 0.019364516866043402, "tm_3": 0.0, "tm_4": 0.0, "w": 3.0,
}  # fmt: skip


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_the_rule():
    assert better(0.3, 0.2) and not better(0.2, 0.3) and not better(0.2, 0.2)
    assert better(0.2, 0.3, False) and not better(0.3, 0.2, False) and not better(0.2, 0.2, False)
    assert not better(0.25, 0.2, True, tolerance=0.1) and better(0.1, 0.25, False, tolerance=0.1)
    assert better(0.0, worst(True), True) and better(1.0, worst(False), False)
    assert best_index([0.2, 0.5, 0.1, 0.5]) == 1 and best_index([0.2, 0.5, 0.1, 0.1], False) == 2
    assert TerMetric().better(0.1, 0.2) and BleuMetric().better(0.2, 0.1)


@pytest.mark.parametrize(
    "argv",
    [
        ["mert", "--restarts", "2"],
        ["mira", "--epochs", "3"],
        ["minrisk"],
        ["train"],
        ["pro"],
        ["train", "--loss", "perceptron", "--epochs", "3"],
        ["mert", "--metric", "ter", "--restarts", "2"],
    ],
    ids=lambda argv: " ".join(argv),
)
def test_every_tuning_command_says_score_metric_and_direction(argv, capsys):
    payload = run_json([argv[0], *COMMON, *argv[1:]], capsys)
    ter = "ter" in argv
    old = "ter" if ter else "bleu"
    assert payload["metric"].lower() == old
    assert payload["higher_is_better"] is (not ter)
    assert payload["score_before"] == payload[f"{old}_before"]
    assert payload["score_after"] == payload[f"{old}_after"]
    assert payload["history"] and all(entry["score"] == entry["bleu"] for entry in payload["history"])


def one_best(nbest: str, weights: dict[str, float]) -> list[str]:
    """Each sentence's best hypothesis of a Moses n-best list under ``weights`` (first on ties), computed here
    from the file's text: ``name: v v ...`` groups become ``name_0``, ``name_1``, ... (one value: ``name``)."""
    best: dict[int, tuple[float, str]] = {}
    for line in open(nbest, encoding="utf-8"):
        sid, words, features = line.split("|||")[:3]
        groups: list[tuple[str, list[float]]] = []
        for token in features.split():
            if token.endswith(":") or token.endswith("="):
                groups.append((token[:-1], []))
            else:
                groups[-1][1].append(float(token))
        score = 0.0
        for name, values in groups:
            names = [name] if len(values) == 1 else [f"{name}_{i}" for i in range(len(values))]
            score += sum(weights.get(n, 0.0) * v for n, v in zip(names, values, strict=True))
        if int(sid) not in best or score > best[int(sid)][0]:
            best[int(sid)] = (score, " ".join(words.split()))
    return [best[i][1] for i in sorted(best)]


def test_mert_with_ter_returns_the_restart_of_lowest_ter(shared, capsys):
    data = shared / "moses" / "mert-example"
    nbest, refs = str(data / "NBEST"), [str(data / f"REF.{i}") for i in range(3)]
    payload = run_json(
        ["mert", nbest, "--refs", str(data / "REF."), "--init", str(data / "init.opt"), "--metric", "ter",
         "--restarts", "6", "--seed", "1", "--json"],
        capsys,
    )  # fmt: skip
    scores = payload["restart_scores"]
    assert min(scores) < max(scores)  # the restarts differ: the highest TER would be another restart
    hyps = one_best(nbest, payload["weights"])
    references = [[line.rstrip("\n") for line in open(path, encoding="utf-8")] for path in refs]
    ter = sacrebleu.metrics.TER().corpus_score(hyps, references).score / 100
    assert ter == pytest.approx(payload["score_after"], abs=1e-12)
    assert ter == pytest.approx(min(scores), abs=1e-12) and payload["ter_after"] == payload["score_after"]


class LowerIsBetterBleu(BleuMetric):
    """BLEU declared lower-is-better: the best epoch must then be the one of lowest BLEU."""

    higher_is_better = False


@pytest.mark.parametrize(
    "tuner",
    [Mira(epochs=6, seed=1), OnlineTrainer(loss="perceptron", epochs=6, seed=1)],
    ids=["mira", "online"],
)
def test_best_epoch_is_the_lowest_for_a_lower_is_better_metric(tuner, shared):
    data = shared / "moses" / "mert-example"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graphs = read_graphs(str(data / "NBEST"))
    refs = read_references(str(data / "REF."))
    chosen = {}
    for metric in (LowerIsBetterBleu(tokenize="none"), BleuMetric(tokenize="none")):
        result = tuner.fit(TuningSet.from_corpus(graphs, refs, metric), Weights(POOR_START))
        scores = [entry.score for entry in result.history]
        assert len(set(scores)) > 1, "the epochs must differ for the test to mean anything"
        pick = min if not metric.higher_is_better else max
        expected = 1 + scores.index(pick(scores))  # the first epoch of the lowest (highest) metric
        if not metric.better(scores[expected - 1], result.score_before):
            expected = 0  # no epoch beats the start weights, which are kept (hypertune.tuners.finishing)
        assert result.best_epoch == expected and result.higher_is_better is metric.higher_is_better
        assert result.kept_start == (expected == 0)
        assert result.score_after == pytest.approx(([result.score_before, *scores])[expected], abs=1e-12)
        chosen[metric.higher_is_better] = result.best_epoch
    assert chosen[False] != chosen[True]
    assert result.bleu_after == result.score_after and result.history[0].bleu == result.history[0].score
