"""Batch MIRA and MERT on a dense k-best batch (issue 33: the rows themselves, no CSR, no graph) against the same
tuners on the same lists read as graphs (the CSR rows): the same weights and scores, bit for bit, repeated
hypotheses included."""

from __future__ import annotations

import numpy as np

from hypertune.formats.extractor import read_featstat, read_featstat_batch
from hypertune.formats.kbest_batch import KbestBatch
from hypertune.metrics import BleuMetric
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners import Mert, Mira, TuningSet
from hypertune.weights import Weights


def write_lists(tmp_path, seed: int = 5) -> tuple[str, str]:
    """Six sentences of 2-9 hypotheses with 4 dense features and BLEU statistics; some rows repeated."""
    rng = np.random.default_rng(seed)
    feats, scores = [], []
    for sid in range(6):
        n = int(rng.integers(2, 10))
        rows = np.round(rng.normal(size=(n, 4)), 3)
        rows[rng.random(n) < 0.3, 2] = 0.0
        matches = rng.integers(0, 6, size=(n, 4))
        lengths = matches + rng.integers(0, 4, size=(n, 4))
        stats = np.column_stack([matches[:, 0], lengths[:, 0], matches[:, 1], lengths[:, 1], matches[:, 2],
                                 lengths[:, 2], matches[:, 3], lengths[:, 3], np.full(n, 9)])  # fmt: skip
        if n > 3:  # a repeated hypothesis: features and statistics
            rows[-1], stats[-1] = rows[0], stats[0]
        feats.append(f"FEATURES_TXT_BEGIN_0 {sid} {n} 4 a_0 b_0 c_0 d_0\n")
        feats += [" ".join(f"{v:g}" for v in row) + "\n" for row in rows]
        feats.append("FEATURES_TXT_END_0\n")
        scores.append(f"SCORES_TXT_BEGIN_0 {sid} {n} 9 BLEU\n")
        scores += [" ".join(str(int(v)) for v in row) + "\n" for row in stats]
        scores.append("SCORES_TXT_END_0\n")
    (tmp_path / "FEATSTAT").write_text("".join(feats))
    (tmp_path / "SCORESTAT").write_text("".join(scores))
    return str(tmp_path / "FEATSTAT"), str(tmp_path / "SCORESTAT")


def test_mira_on_the_dense_batch_is_mira_on_the_graphs(tmp_path) -> None:
    feats, scores = write_lists(tmp_path)
    batch = read_featstat_batch(feats, FeatureSpace(), Vocabulary(), scores)
    assert isinstance(batch, KbestBatch)
    graphs = read_featstat(feats, FeatureSpace(), Vocabulary(), scores)
    start = Weights({"a": 0.3, "b": -0.2, "c": 0.1, "d": 0.05})
    for options in ({}, {"gain": "bleu+1", "model_bg": True}):
        packed = Mira(seed=2, epochs=4, **options).fit(TuningSet.from_corpus(batch, None, BleuMetric()), start)
        listed = Mira(seed=2, epochs=4, **options).fit(TuningSet.from_corpus(graphs, None, BleuMetric()), start)
        assert dict(packed.weights) == dict(listed.weights)
        assert [e.score for e in packed.history] == [e.score for e in listed.history]
        assert packed.score_after == listed.score_after
    assert not batch._graphs


def test_mert_on_the_batch_is_mert_on_the_graphs(tmp_path) -> None:
    """MERT's k-best line searcher on the batch's arrays (no graph made) against the same on the graphs."""
    feats, scores = write_lists(tmp_path, seed=8)
    batch = read_featstat_batch(feats, FeatureSpace(), Vocabulary(), scores)
    assert isinstance(batch, KbestBatch)
    graphs = read_featstat(feats, FeatureSpace(), Vocabulary(), scores)
    start = Weights({"a": 0.3, "b": -0.2, "c": 0.1, "d": 0.05})
    packed = Mert(restarts=1, seed=4, n_jobs=1).fit(TuningSet.from_corpus(batch, None, BleuMetric()), start)
    listed = Mert(restarts=1, seed=4, n_jobs=1).fit(TuningSet.from_corpus(graphs, None, BleuMetric()), start)
    assert dict(packed.weights) == dict(listed.weights)
    assert (packed.score_before, packed.score_after) == (listed.score_before, listed.score_after)
    assert not batch._graphs
