"""The cross-validated tuner table (:mod:`hypertune.bench.tuner_table`): the folds cover every sentence once, each
held-out sentence is scored with the weights tuned without it, and the verdict reads the p-values. Expected
values: sacrebleu's sentence statistics of hand-picked 1-bests, and hand-made rows."""

from __future__ import annotations

import numpy as np
import pytest
import sacrebleu

from hypertune.bench.tuner_table import ALPHA, CrossValidation, Dataset, Row, folds, verdict
from hypertune.hypergraph import from_kbest
from hypertune.metrics import BleuMetric
from hypertune.metrics.significance import SystemReport
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.weights import Weights


def test_folds_cover_every_sentence_once_in_near_equal_parts():
    parts = folds(23, 5, seed=4)
    assert sorted(np.concatenate(parts).tolist()) == list(range(23))
    assert sorted(len(p) for p in parts) == [4, 4, 5, 5, 5]
    assert [p.tolist() for p in folds(23, 5, seed=4)] == [p.tolist() for p in parts]  # seeded
    assert [p.tolist() for p in folds(23, 5, seed=5)] != [p.tolist() for p in parts]


def test_each_held_out_sentence_is_scored_with_the_weights_of_its_fold():
    space, vocabulary = FeatureSpace(), Vocabulary()
    references = [[f"a{i} b{i} c{i} d{i}"] for i in range(10)]
    graphs = [from_kbest([(f"a{i} b{i} c{i} d{i}", {"f": 1.0}), (f"x{i} y{i}", {"f": -1.0})], space, vocabulary,
                         sentence_id=i) for i in range(10)]  # fmt: skip
    metric = BleuMetric(tokenize="none")
    cv = CrossValidation(Dataset("toy", graphs, references, metric, Weights({"f": 1.0})), count=5, seed=0)
    held_in = {i for tuning, _, _ in cv.sets for i in tuning.sentence_ids}
    assert held_in == set(range(10)) and sum(len(h) for _, h, _ in cv.sets) == 10
    # the weights depend on the fold: f = +1 (the reference wins) where sentence 0 is tuned on, else -1
    chosen = cv.held_out_stats(lambda tuning: Weights({"f": 1.0 if 0 in tuning.sentence_ids else -1.0}))
    fold_of_0 = next(k for k, (_, held, _) in enumerate(cv.sets) if 0 in held.sentence_ids)
    expected = [""] * 10
    for k, (_, held, rows) in enumerate(cv.sets):
        for sid, row in zip(held.sentence_ids, rows, strict=True):
            expected[row] = f"a{sid} b{sid} c{sid} d{sid}" if k != fold_of_0 else f"x{sid} y{sid}"
    hypothesis_length = metric.stats_names.index("c1")  # the unigram count: the 1-best's length
    assert chosen[:, hypothesis_length].tolist() == [len(words.split()) for words in expected]
    bleu = sacrebleu.corpus_bleu(expected, [[r[0] for r in references]], tokenize="none").score / 100
    assert float(metric.score(chosen.sum(axis=0))) == pytest.approx(bleu, rel=1e-12)


def _row(name: str, p_start: float | None, d_start: float | None, p_mert: float | None, d_mert: float | None) -> Row:
    report = SystemReport(0.1, 0.09, 0.11, None, None, (0.1,), None)
    return Row(name, report, p_start, d_start, p_mert, d_mert, 10.0, 1.0)


def test_the_verdict_names_significant_differences_in_their_direction_or_none():
    rows = [_row("start weights", None, None, None, None), _row("MERT", 0.01, -0.006, None, None),
            _row("MIRA", 0.2, 0.001, ALPHA / 2, 0.007), _row("PRO", 0.001, 0.004, 0.9, 0.01)]  # fmt: skip
    assert verdict(rows) == (
        f"Significantly better than the start weights (p < {ALPHA}): PRO. Significantly worse than the start weights: "
        "MERT. Significantly better than MERT: MIRA. Significantly worse than MERT: none."
    )
