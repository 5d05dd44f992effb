"""Format readers against the real decoder output in ../shared/data (skipped when absent)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from hypertune.algorithms import count_derivations, feature_expectations, inside, log_inside_outside, viterbi
from hypertune.formats import (
    cache,
    cdec_json,
    detect_format,
    moses_hypergraph,
    nbest,
    plf,
    read_graphs,
    read_references,
    read_weights,
)
from hypertune.formats.nbest import feature_order
from hypertune.formats.weights import read_mert_init, read_zmert_params
from hypertune.semirings import LogSemiring
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.weights import Weights

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data is absent")


def data(relative: str) -> str:
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"{relative} is absent")
    return str(path)


def one(relative: str):
    (hg,) = read_graphs(data(relative))
    return hg


# ---------------------------------------------------------------------- cdec


@pytest.mark.parametrize(
    ("name", "nodes", "edges", "derivations"),
    [
        ("cdec/forests/training_dpmert_test_data_0.json.gz", 350, 1026, 7633),
        ("cdec/forests/decoder_test_data_small.json.gz", 36, 86, 166),
        ("cdec/forests/decoder_test_data_perro.json.gz", 10, 21, 16),
        ("cdec/toy/hg_test.hg", 6, 8, 4),
        ("cdec/toy/hg_test.tiny", 2, 3, 2),
        ("cdec/toy/hg_test.tiny_lattice", 3, 4 + 1, 4),  # + cdec's implicit axiom into node 0
        ("cdec/toy/hg_test.lattice", 4, 8 + 1, 10),
        ("cdec/toy/hg_test.hg_balanced", 9, 13, 16),
        ("cdec/toy/hg_test.hg_int", 2, 4, 4),
        ("cdec/toy/test-ch-inside.json", 6, 8, 4),
        ("cdec/toy/test-zero-origin.json", 7, 10, 6),
    ],
)
def test_cdec_counts(name, nodes, edges, derivations):
    assert detect_format(data(name)).name == "cdec-json"
    hg = one(name)
    assert (hg.num_nodes, hg.num_edges, count_derivations(hg)) == (nodes, edges, derivations)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "nodes", "edges", "derivations"),
    [
        ("cdec/forests/training_dpmert_test_data_1.json.gz", 2197, 14141, 1.445e18),
        ("cdec/forests/decoder_test_data_urdu.json.gz", 3450, 23174, 8.05e22),
    ],
)
def test_cdec_large_forest_counts(name, nodes, edges, derivations):
    hg = one(name)
    assert (hg.num_nodes, hg.num_edges) == (nodes, edges)
    assert count_derivations(hg) == pytest.approx(derivations, rel=1e-3)


def test_cdec_toy_inside_outside_expectations():
    hg = one("cdec/toy/hg_test.hg")
    weights = Weights({"f1": 0.4, "f2": 0.8})
    _, beta, alpha = log_inside_outside(hg, weights)
    assert beta == pytest.approx([0, -0.4, -0.8, -0.96, -1.562512, -1.7861683], abs=1e-6)
    assert alpha == pytest.approx([-1.7861683, -1.3861683, -0.9861683, -0.8261683, -0.22365622, 0], abs=1e-6)
    expectations = feature_expectations(hg, weights)
    columns = [hg.feature_space.get("f1"), hg.feature_space.get("f2")]
    assert expectations[columns] == pytest.approx([-2.5439765, -2.6357865], abs=1e-6)


def test_cdec_tiny_viterbi_and_scaled_inside():
    hg = one("cdec/toy/hg_test.tiny")
    weights = Weights({"f1": 0.4, "f2": 0.8})
    best = viterbi(hg, weights)
    assert best.score == pytest.approx(-80.84) and best.words == ["X", "<s>"]
    scaled = Weights(weights, scale=0.6)
    assert inside(hg, LogSemiring(), scaled.edge_scores(hg))[hg.goal] == pytest.approx(-47.8577, abs=1e-4)


def test_cdec_tiny_lattice():
    hg = one("cdec/toy/hg_test.tiny_lattice")
    weights = Weights({"f1": 1.0})
    _, beta, alpha = log_inside_outside(hg, weights)
    assert math.exp(beta[hg.goal]) == pytest.approx(1.7934048, rel=1e-6)
    assert np.exp(alpha) == pytest.approx([1.7934048, 1.3114071, 1], rel=1e-6)
    assert viterbi(hg, weights).score == pytest.approx(-0.3)


def test_cdec_small_forest_viterbi():
    hg = one("cdec/forests/decoder_test_data_small.json.gz")
    weights = Weights(
        {
            "Model_0": -2,
            "Model_1": -0.5,
            "Model_2": -1.1,
            "Model_3": -1,
            "Model_4": -1,
            "Model_5": 0.5,
            "Model_6": 0.2,
            "Model_7": -3,
        }
    )
    best = viterbi(hg, weights)
    assert " ".join(best.words) == "there is a small house"
    assert best.score == pytest.approx(-3.00298, abs=1e-5)
    scaled = Weights(weights, scale=0.6)
    assert inside(hg, LogSemiring(), scaled.edge_scores(hg))[hg.goal] == pytest.approx(2.1431036, abs=1e-6)


def test_cdec_json_round_trip_of_a_real_forest(tmp_path):
    hg = one("cdec/forests/training_dpmert_test_data_0.json.gz")
    out = tmp_path / "forest.json"
    cdec_json.write([hg], str(out))
    (back,) = cdec_json.read(str(out), FeatureSpace(), Vocabulary())
    assert count_derivations(back) == 7633
    assert np.array_equal(back.tails, hg.tails)
    assert all(back.target_text(e) == hg.target_text(e) for e in range(hg.num_edges))
    assert all(back.edge_features(e) == hg.edge_features(e) for e in range(0, hg.num_edges, 17))


def test_cdec_references_prefix():
    references = read_references(str(SHARED / "cdec/forests/lo_test.ref"))
    assert len(references) == 2 and all(len(r) == 4 for r in references)


# ---------------------------------------------------------------------- PLF


def test_plf_input_facts():
    first, second = read_graphs(data("cdec/plf/input.txt"))
    assert (first.num_nodes, first.num_edges - 1, count_derivations(first)) == (3, 4, 3)
    assert (second.num_nodes, second.num_edges - 1, count_derivations(second)) == (2, 3, 3)
    assert first.edge_features(1) == {"LatticeCost_0": 0.5}
    features = [second.edge_features(e) for e in range(1, 4)]
    assert {"LatticeCost_0": 0.1, "UsesDPrime": 1.0} in features and {} in features
    words = {second.target_text(e) for e in range(1, 4)}
    assert "[1] D'" in words


def test_plf_round_trip_is_exact(tmp_path):
    path = data("cdec/plf/hg_test_roundtrip.plf")
    graphs = plf.read(path, FeatureSpace(), Vocabulary())
    out = tmp_path / "out.plf"
    plf.write(graphs, str(out))
    assert out.read_text(encoding="utf-8") == Path(path).read_text(encoding="utf-8")
    assert viterbi(graphs[0], Weights({"LatticeCost_0": 1})).words == ["haupt", "grund", "für'"]


# ---------------------------------------------------------------------- Moses


def test_moses_hypergraph_counts_and_weights_names():
    for kind, nodes, edges in (("dense", 2239, 5342), ("sparse", 1248, 4032)):
        hg = one(f"moses/hypergraphs/{kind}/hg.gz")
        assert (hg.num_nodes, hg.num_edges) == (nodes, edges)
        assert count_derivations(hg) > 0
    dense = one("moses/hypergraphs/dense/hg.gz")
    weights = read_weights(data("moses/hypergraphs/dense/dense.weights"))
    assert len(weights) == 31
    used = {dense.feature_space.names[c] for c in np.unique(dense.features.indices)}
    assert set(weights) <= used  # every dense weight names a feature of the graph (1-based -> 0-based)
    assert "TranslationModel0_12" in used and "TranslationModel0_13" not in used
    sparse = read_weights(
        [data("moses/hypergraphs/sparse/dense.weights"), data("moses/hypergraphs/sparse/sparse.weights")]
    )
    assert len(sparse) > 300 and viterbi(one("moses/hypergraphs/sparse/hg.gz"), sparse).words[0] == "<s>"


def test_moses_toy_forest_model_best():
    hg = one("moses/toy-forest/0")
    best = viterbi(hg, read_weights(data("moses/toy-forest/dense.weights")))
    assert best.words == "<s> a b j k </s>".split()
    assert best.features == {"foo": 3.0, "bar": 4.0}


def test_moses_hypergraph_round_trip(tmp_path):
    hg = one("moses/hypergraphs/sparse/hg.gz")
    out = tmp_path / "hg"
    moses_hypergraph.write([hg], str(out))
    (back,) = moses_hypergraph.read(str(out), FeatureSpace(), Vocabulary())
    assert np.array_equal(back.tails, hg.tails) and back.metadata == hg.metadata
    assert all(back.edge_features(e) == hg.edge_features(e) for e in range(hg.num_edges))


@pytest.mark.parametrize("name", ["moses/mert-example/NBEST", "moses/scorer-data/nbest.out.gz"])
def test_moses_legacy_nbest(name):
    graphs = read_graphs(data(name))
    expected = [f"d_{i}" for i in range(7)] + ["lm_0", "lm_1"] + [f"tm_{i}" for i in range(5)] + ["w"]
    assert list(graphs[0].feature_space.names) == expected
    assert graphs[0].edge_features(1)["d_1"] == -7.66174 and graphs[0].edge_features(1)["w"] == -9
    assert graphs[0].num_edges == 101
    assert feature_order(data(name)) == expected
    start, low, high = read_mert_init(data("moses/mert-example/init.opt"), expected)
    assert start["lm_1"] == 0.3 and start["tm_0"] == 0.2 and start["w"] == 1 and high["d_0"] == 1


def test_moses_nbest_5iter_and_featstat_agree():
    for i in range(1, 6):
        graphs = read_graphs(data(f"moses/nbest-5iter/nbest.{i}.gz"))
        assert len(graphs) == 10
    names = [f"d_{i}" for i in range(7)] + ["lm"] + [f"tm_{i}" for i in range(5)] + ["w"]
    assert list(graphs[0].feature_space.names) == names
    featstat = read_graphs(data("moses/featstat-10x100/FEATSTAT.txt"))
    assert len(featstat) == 10 and all(g.num_edges == 101 for g in featstat)
    assert list(featstat[0].feature_space.names) == names
    first = read_graphs(data("moses/nbest-5iter/nbest.1.gz"))[0]
    assert featstat[0].edge_features(1) == first.edge_features(1)
    stats = featstat[0].edge_stats
    assert stats.shape == (101, 9) and stats[1].tolist() == [6, 14, 1, 13, 0, 12, 0, 11, 18]
    start, low, high = read_mert_init(
        data("moses/featstat-10x100/INIT"), feature_order(data("moses/featstat-10x100/FEATSTAT.txt"))
    )
    assert start["lm"] == 0.5 and start["tm_0"] == -1


def test_joshua_nbest_and_weights():
    graphs = read_graphs(data("joshua-bn-en/output.gold"))
    assert len(graphs) == 100 and sum(g.num_edges - 1 for g in graphs) == 805
    weights = read_weights(data("joshua-bn-en/joshua.config"))
    assert weights["tm_pt_0"] == pytest.approx(-2.4497429277910214) and weights["OOVPenalty"] == 1.0
    names = set(graphs[0].feature_space.names)
    assert {"lm_0", "tm_pt_16", "tm_glue_0", "WordPenalty", "OOVPenalty"} <= names
    # The totals are w . f with the config's weights, except that this Joshua version applied a fixed
    # OOVPenalty weight of -100 (the config's 1.0 is not what produced the file).
    weights["OOVPenalty"] = -100.0
    for hg in graphs[:20]:
        scores = hg.features @ weights.vector(hg.feature_space)
        assert scores[1:] == pytest.approx(hg.metadata["totals"], abs=0.05)


def test_zmert_example():
    params = read_zmert_params(data("zmert/params.txt"))
    names = [p.name for p in params]
    assert names == ["LM", "first model", "second model"]
    graphs = nbest.read_zmert(data("zmert/cand_database.txt"), FeatureSpace(), Vocabulary(), names=names)
    assert len(graphs) == 10 and all(g.num_edges == 51 for g in graphs)
    assert graphs[0].edge_features(1) == {"LM": -126.855, "first model": -5.823, "second model": -8.813}
    assert dict(read_weights(data("zmert/params.txt"))) == {"LM": 0.1, "first model": 0.2, "second model": -0.1}
    assert len(read_references(str(SHARED / "zmert/ref"))) == 10


def test_moses_references():
    assert len(read_references(str(SHARED / "moses/mert-example/REF."))) == 3
    refs = read_references([data(f"moses/mert-example/REF.{i}") for i in range(3)])
    assert refs[0][1] == "also be there is looking further ."


@pytest.mark.slow
def test_cache_of_real_graphs(tmp_path):
    space, vocab = FeatureSpace(), Vocabulary()
    graphs = read_graphs(
        [
            data("moses/hypergraphs/dense/hg.gz"),
            data("cdec/forests/training_dpmert_test_data_0.json.gz"),
            data("moses/featstat-10x100/FEATSTAT.txt"),
        ],
        feature_space=space,
        vocabulary=vocab,
    )
    out = tmp_path / "corpus.htc"
    cache.write(graphs, str(out))
    back = read_graphs(str(out))
    assert len(back) == len(graphs)
    for a, b in zip(graphs, back, strict=True):
        assert count_derivations(a) == count_derivations(b)
        assert a.target_text(a.num_edges - 1) == b.target_text(b.num_edges - 1)
        assert a.edge_features(a.num_edges - 1) == b.edge_features(b.num_edges - 1)
