"""The same reranking set given as JSONL and as a Moses n-best list with a score file (issue #30): every tuner
reads the same hypotheses, features and scores from both, so its results are the same, number for number."""

from __future__ import annotations

import json

import pytest

from hypertune.cli import main
from hypertune.formats import write_graphs
from hypertune.generate import random_reranking_set


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rerank")
    graphs, references = random_reranking_set(25, 12, num_features=5, seed=4)
    write_graphs(graphs, str(folder / "dev.jsonl"), "jsonl")
    write_graphs(graphs, str(folder / "dev.nbest"), "moses-nbest")
    rows = [f"comet={value!r}\n" for g in graphs for value in g.edge_scores.column("comet")[1:].tolist()]
    (folder / "dev.scores").write_text("".join(rows))
    (folder / "dev.ref").write_text("".join(r + "\n" for r in references))
    (folder / "start.weights").write_text("logprob 1\n")
    return folder


@pytest.mark.parametrize(
    "argv",
    [
        ["mert", "--restarts", "3", "--seed", "2"],
        ["mira", "--epochs", "4"],
        ["pro", "--seed", "1"],
        ["minrisk", "--iterations", "10"],
        ["train", "--loss", "perceptron", "--epochs", "3"],
    ],
    ids=lambda argv: argv[0] + ("-" + argv[2] if argv[0] == "train" else ""),
)
@pytest.mark.parametrize("metric", ["scores.comet", "scores.comet:0.5,bleu:0.5"])
def test_jsonl_and_nbest_with_scores_tune_alike(both, argv, metric, capsys):
    results = []
    for inputs in ([str(both / "dev.jsonl")], [str(both / "dev.nbest"), "--scores", str(both / "dev.scores")]):
        code = main([argv[0], *inputs, "--refs", str(both / "dev.ref"), "--init", str(both / "start.weights"),
                     "--metric", metric, "--json", "--quiet", *argv[1:]])  # fmt: skip
        out, err = capsys.readouterr()
        assert code == 0, err
        payload = json.loads(out)
        results.append((payload["weights"], payload["score_before"], payload["score_after"]))
    assert results[0] == results[1]
    assert results[0][2] != results[0][1] or argv[0] == "mira"  # the tuners moved: the comparison means something
