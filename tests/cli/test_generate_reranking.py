"""``hypertune generate --reranking``: seeded synthetic reranking sets in JSONL (docs/formats.md): the same
seed gives the same bytes, and the features and the hypotheses' words relate to the given score as the
documented model says (QE strong, copy negative, noise none; more reference words, higher score)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from hypertune.cli import main
from hypertune.formats import read_graphs


def generate(tmp_path, name: str, *extra: str) -> list[dict]:
    out = tmp_path / name
    args = ["generate", str(out), "--reranking", "--sentences", "40", "--candidates", "30", "--quiet", *extra]
    assert main(args) == 0
    data = out.read_bytes()
    if name.endswith(".gz"):
        data = gzip.decompress(data)
    return [json.loads(line) for line in data.decode().splitlines()]


def test_the_same_seed_gives_the_same_bytes(tmp_path, capsys):
    generate(tmp_path, "a.jsonl", "--seed", "3", "--refs-out", str(tmp_path / "a.ref"))
    generate(tmp_path, "b.jsonl", "--seed", "3", "--refs-out", str(tmp_path / "b.ref"))
    generate(tmp_path, "c.jsonl", "--seed", "4")
    generate(tmp_path, "a.jsonl.gz", "--seed", "3")
    generate(tmp_path, "b.jsonl.gz", "--seed", "3")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "a.ref").read_bytes() == (tmp_path / "b.ref").read_bytes()
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()
    assert gzip.decompress((tmp_path / "a.jsonl.gz").read_bytes()) == (tmp_path / "a.jsonl").read_bytes()
    assert (tmp_path / "a.jsonl").read_bytes() != (tmp_path / "c.jsonl").read_bytes()


def pearson(x, y) -> float:
    return float(np.corrcoef(np.asarray(x, float), np.asarray(y, float))[0, 1])


def test_features_and_words_follow_the_score_as_documented(tmp_path, capsys):
    rows = generate(
        tmp_path, "set.jsonl", "--seed", "1", "--refs-out", str(tmp_path / "set.ref"), "--score-name", "xcomet"
    )
    references = (tmp_path / "set.ref").read_text().splitlines()
    assert len(rows) == 40 * 30 and len(references) == 40
    assert [r["id"] for r in rows] == [i for i in range(40) for _ in range(30)]
    names = ["logprob", "length", "qe", "qe_small", "mbr", "lm", "copy", "noise"]
    assert all(list(r["features"]) == names and list(r["scores"]) == ["xcomet"] for r in rows)
    score = [r["scores"]["xcomet"] for r in rows]
    assert all(0 < s < 1 for s in score)
    feature = {name: [r["features"][name] for r in rows] for name in names}
    assert feature["length"] == [len(r["hyp"].split()) for r in rows]
    assert pearson(feature["qe"], score) > 0.6
    assert pearson(feature["copy"], score) < -0.2
    assert abs(pearson(feature["noise"], score)) < 0.1
    matched = []  # the share of a hypothesis's words found in its reference
    for r in rows:
        reference = set(references[r["id"]].split())
        words = r["hyp"].split()
        matched.append(sum(w in reference for w in words) / len(words))
    assert pearson(matched, score) > 0.4
    graphs = read_graphs(str(tmp_path / "set.jsonl"))  # sniffed as JSONL
    assert len(graphs) == 40 and all(g.num_edges == 31 and g.edge_scores.names == ("xcomet",) for g in graphs)
    assert np.concatenate([g.edge_scores.column("xcomet")[1:] for g in graphs]).tolist() == score


def test_feature_counts_and_refs_out_without_reranking(tmp_path, capsys):
    rows = generate(tmp_path, "few.jsonl", "--features", "3")
    assert list(rows[0]["features"]) == ["logprob", "length", "qe"]
    rows = generate(tmp_path, "many.jsonl", "--features", "10")
    assert list(rows[0]["features"])[8:] == ["f8", "f9"]
    assert main(["generate", str(tmp_path / "g.json"), "--refs-out", str(tmp_path / "r")]) == 2
    assert "--refs-out goes with --reranking" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["", "a b"])
def test_a_score_name_must_be_a_word(tmp_path, capsys, name):
    assert main(["generate", str(tmp_path / "x.jsonl"), "--reranking", "--score-name", name]) == 2
    assert "--score-name must be a name without spaces" in capsys.readouterr().err
