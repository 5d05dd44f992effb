"""Score files (``--scores FILE``, docs/formats.md): ``name=value`` lines read exactly, attached to the
hypotheses of k-best inputs in order; each bad input has its message."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from support.strategies import format_corruptions

from hypertune.errors import InputError
from hypertune.formats import read_graphs
from hypertune.formats.score_files import read_score_file, with_scores
from hypertune.generate import random_hypergraph
from hypertune.hypergraph import EdgeScores, from_kbest
from hypertune.symbols import FeatureSpace, Vocabulary

NBEST = Path(__file__).resolve().parents[2] / "fixtures" / "mert" / "nbest.txt"


def scores_of(tmp_path: Path, text: str) -> EdgeScores:
    path = tmp_path / "scores.txt"
    path.write_text(text, encoding="utf-8")
    return read_score_file(str(path))


def test_values_are_read_exactly_in_any_name_order(tmp_path):
    texts = ["0.853", "-1e-5", "0.1", "123456789012345678901234567890", "4.9e-324", "1.7976931348623157e308", "-0"]
    lines = [
        f"comet={a}  kiwi={b}" if i % 2 else f"\tkiwi={b} comet={a}"
        for i, (a, b) in enumerate(zip(texts, texts[::-1], strict=True))
    ]
    scores = scores_of(tmp_path, "\n".join(lines) + "\n\n")
    assert scores.names == ("kiwi", "comet")
    expected = [[float(b), float(a)] for a, b in zip(texts, texts[::-1], strict=True)]
    assert scores.values.tolist() == expected
    assert np.array_equal(np.signbit(scores.values), np.signbit(np.array(expected)))


def test_names_may_hold_any_character_but_space(tmp_path):
    scores = scores_of(tmp_path, "a=b=1 é=2\né=3 a=b=4")  # the name ends at the last '='
    assert scores.names == ("a=b", "é") and scores.values.tolist() == [[1, 2], [4, 3]]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("comet=1\ncomet=2 kiwi=3\n", 1, "score 'kiwi' is missing (other lines have it)"),
        ("comet=1 kiwi=2\n\ncomet=2 kiwi=3\n", 2, "score 'comet' is missing (other lines have it)"),
        ("comet=1 comet=2\n", 1, "score 'comet' given twice on one line"),
        ("comet=nan\n", 1, "score 'comet': values must be finite, got 'nan'"),
        ("comet=1\ncomet=-inf\n", 2, "score 'comet': values must be finite, got '-inf'"),
        ("comet=1e999\n", 1, "score 'comet': values must be finite, got '1e999'"),
        ("comet=x\n", 1, "score 'comet': expected a number, got 'x'"),
        ("comet=1\n0.5\n", 2, "expected 'name=value' pairs, got '0.5'"),
        ("comet=1\n=0.5\n", 2, "expected 'name=value' pairs, got '=0.5'"),
        ("comet=\n", 1, "expected 'name=value' pairs, got 'comet='"),
    ],
)
def test_bad_score_files(tmp_path, text, line, message):
    with pytest.raises(InputError) as caught:
        scores_of(tmp_path, text)
    assert str(caught.value) == f"{tmp_path / 'scores.txt'}:{line}: {message}"


def test_an_empty_score_file(tmp_path):
    with pytest.raises(InputError, match=r"scores.txt: no scores in the file"):
        scores_of(tmp_path, "\n  \n")


def test_rows_go_to_the_hypotheses_in_input_order(tmp_path):
    graphs = read_graphs(str(NBEST))
    hypotheses = [g.num_edges - 1 for g in graphs]
    total = sum(hypotheses)
    scores = scores_of(tmp_path, "".join(f"comet={k / 8} rank={k}\n" for k in range(total)))
    scored = with_scores(graphs, scores, "scores.txt")
    first = 0
    for graph, count in zip(scored, hypotheses, strict=True):
        assert graph.edge_scores.names == ("comet", "rank")
        assert graph.edge_scores.column("rank").tolist() == [0, *range(first, first + count)]
        first += count
    assert scored[0].features is graphs[0].features and graphs[0].edge_scores is None


def test_count_mismatch_non_kbest_and_scored_inputs_are_refused(tmp_path):
    graphs = read_graphs(str(NBEST))
    total = sum(g.num_edges - 1 for g in graphs)
    short = EdgeScores(["comet"], np.zeros((total - 1, 1)))
    with pytest.raises(InputError, match=f"s.txt: {total - 1} lines of scores for {total} hypotheses in the inputs"):
        with_scores(graphs, short, "s.txt")
    with pytest.raises(InputError, match="only k-best lists .* can take scores from a score file"):
        with_scores([random_hypergraph(40, seed=2)], short, "s.txt")
    scored = from_kbest([("a", {}), ("b", {})], FeatureSpace(), Vocabulary(), scores={"kiwi": [1, 2]})
    with pytest.raises(InputError, match=r"already have scores \(kiwi\)"):
        with_scores([scored], EdgeScores(["comet"], np.zeros((2, 1))), "s.txt")


@settings(max_examples=60)
@given(format_corruptions("comet=0.853 kiwi=0.79\nkiwi=-1e-3 comet=1\ncomet=0.5 kiwi=2.5e10\n"))
def test_corrupted_score_files_read_or_fail_in_one_line(corrupted):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "scores.txt")
        Path(path).write_text(corrupted, encoding="utf-8")
        try:
            scores = read_score_file(path)
        except InputError as error:
            assert error.path == path and "\n" not in str(error)
            return
    text = corrupted.replace("\r\n", "\n").replace("\r", "\n")  # as every reader takes line ends
    rows = [line.split() for line in text.rstrip().split("\n")]
    expected = [dict(pair.rsplit("=", 1) for pair in row) for row in rows]
    assert [dict(zip(scores.names, map(repr, values), strict=True)) for values in scores.values.tolist()] == [
        {name: repr(float(text)) for name, text in row.items()} for row in expected
    ]
