"""cdec's ``minrisk_optimize`` as options of minimum risk: its sentence loss (1 - cdec's IBM BLEU of the sentence)
and its start weights (divided by their L2 norm); and the k-best batch read without graphs (issue 33)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from support.paths import FIXTURES

from hypertune.cli import main
from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.formats.nbest import read_moses_batch
from hypertune.metrics import BleuMetric
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners import TuningSet
from hypertune.tuners.minrisk import MinRisk, _batch_xbleu_space, _xbleu_space, sentence_bleu, unit_l2
from hypertune.tuners.minrisk_options import MinRiskOptions
from hypertune.tuners.model_best import ModelBest
from hypertune.tuners.options import OptionError
from hypertune.weights import Weights

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REFS = str(FIXTURES / "mert" / "ref.")
INIT = str(FIXTURES / "mert" / "init.weights")


def fixture_set(metric: BleuMetric | None = None) -> TuningSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TuningSet.from_corpus(read_graphs(NBEST), read_references(REFS), metric or BleuMetric(tokenize="none"))


def cdec_ibm(row: np.ndarray) -> float:
    """cdec's IBM BLEU of one sentence written out from mteval/ns.cc (BleuMetric::ComputeBreakdown)."""
    log_bleu, count = 0.0, 0
    for n in range(4):
        m, c = row[2 * n], row[2 * n + 1]
        if c > 0:
            log_bleu += math.log(m if m else 0.01) - math.log(c)
            count += 1
    if not count:
        return 0.0
    log_bleu /= count
    hyp, ref = row[1], row[8]
    if hyp < ref:
        log_bleu += (hyp - ref) / hyp
    return math.exp(log_bleu)


def test_ibm_sentence_bleu_is_cdecs_on_its_scorer_test(shared):
    """mteval/scorer_test.cc's sentence scores (../shared/data/cdec/bleu/scorer_test_fixture.tsv)."""
    lines = dict(
        line.rstrip("\n").split("\t", 1) for line in open(shared / "cdec" / "bleu" / "scorer_test_fixture.tsv")
    )
    metric = BleuMetric(tokenize="none", ref_length="ibm")
    for hyp, refs, expected in (("hyp1", "refs0", 0.23185077), ("hyp2", "refs1", 0.38101241)):
        references = [lines[f"{refs}[{k}]"] for k in range(4)]
        stats = np.asarray(metric.stats(lines[hyp], references), dtype=np.float64)[None, :]
        assert sentence_bleu(stats, 4, "ibm")[0] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("gamma", [0.3, 1.0])
def test_risk_with_cdecs_sentence_bleu_against_brute_force_and_finite_differences(gamma):
    tuning_set = fixture_set()
    weights = read_weights(INIT)
    names = tuning_set.feature_space.names
    w = weights.vector(tuning_set.feature_space, len(names))

    def brute(v: np.ndarray) -> float:  # cdec's RiskObjective per sentence (training/utils/risk.cc), averaged
        risks = []
        for s, hg in enumerate(tuning_set.graphs):
            scores = gamma * (hg.feature_matrix(v.size) @ v)[1:]
            p = np.exp(scores - scores.max())
            p /= p.sum()
            risks.append(p @ np.array([1 - cdec_ibm(row) for row in tuning_set.edge_stats(s)[1:]]))
        return float(np.mean(risks))

    found = MinRisk(objective="risk", sentence_bleu="ibm", scale=gamma).evaluate(tuning_set, weights)
    assert found.value == pytest.approx(brute(w), rel=1e-10)
    h = 1e-6
    for k, name in enumerate(names):
        up, down = w.copy(), w.copy()
        up[k] += h
        down[k] -= h
        assert found.gradient.get(name, 0.0) == pytest.approx((brute(up) - brute(down)) / (2 * h), rel=1e-4, abs=1e-7)


def test_l2_start_norm_starts_from_the_unit_vector_and_ignores_the_start_scale():
    tuning_set = fixture_set()
    weights = read_weights(INIT)
    values = np.array(list(weights.values()))
    unit = unit_l2(weights)
    assert np.array(list(unit.values())) == pytest.approx(values / math.sqrt((values**2).sum()), rel=1e-15)
    ten = type(weights)({k: 10 * v for k, v in weights.items()})
    a = MinRisk(start_norm="l2", iterations=5).fit(tuning_set, weights)
    b = MinRisk(start_norm="l2", iterations=5).fit(tuning_set, ten)
    assert dict(a.weights) == pytest.approx(dict(b.weights), rel=1e-9, abs=1e-12)
    plain = MinRisk().evaluate(tuning_set, unit)
    assert MinRisk(start_norm="l2").evaluate(tuning_set, ten).value == pytest.approx(plain.value, rel=1e-12)


def test_sentence_bleu_is_risks_loss_only(capsys):
    with pytest.raises(OptionError, match="sentence_bleu is the loss of the risk objective"):
        MinRiskOptions(sentence_bleu="ibm")
    assert main(["minrisk", NBEST, "--refs", REFS, "--init", INIT, "--sentence-bleu", "ibm"]) == 2
    assert "--sentence-bleu is the loss of the risk objective" in capsys.readouterr().err
    # a metric without BLEU statistics has its own sentence score as the loss: cdec's BLEU loss is refused
    argv = ["minrisk", NBEST, "--refs", REFS, "--init", INIT, "--objective", "risk", "--sentence-bleu", "ibm"]
    assert main([*argv, "--metric", "ter"]) == 2
    assert "--sentence-bleu ibm is a BLEU loss, but the metric (ter) has no BLEU statistics" in capsys.readouterr().err


def test_l2_start_norm_neither_overflows_nor_underflows():
    for size in (1e200, 1e-200):
        unit = unit_l2(Weights({"a": 3 * size, "b": 4 * size}))
        assert (unit["a"], unit["b"]) == pytest.approx((0.6, 0.8), rel=1e-15)


def test_a_batch_gives_minimum_risk_the_arrays_its_graphs_give(shared):
    """The batch path (no graph per list) against the graphs of the same lists: equal arrays, equal results."""
    folder = shared / "moses" / "nbest-5iter"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        references = read_references([str(folder / "reference")])
        batch = read_moses_batch(str(folder / "nbest.1.gz"), FeatureSpace(), Vocabulary())
        by_batch = TuningSet.from_corpus(batch, references, BleuMetric(tokenize="none"))
        by_graphs = TuningSet.from_corpus(
            read_graphs(str(folder / "nbest.1.gz")), references, BleuMetric(tokenize="none")
        )
    assert by_batch.batch is not None and by_graphs.batch is None
    made = len(batch._graphs)  # what reading made (the tuning set looks at the first list)
    w = np.linspace(-1.0, 1.0, len(by_batch.feature_space))
    fast, slow = ModelBest(by_batch), ModelBest(by_graphs)
    assert np.array_equal(fast.stats(w), slow.stats(w))
    a = _batch_xbleu_space(by_batch, MinRiskOptions(), 4)
    b = _xbleu_space(by_graphs, MinRiskOptions(), slow.stats(w), 4)
    for field in ("node_offsets", "tail_offsets", "tails", "target_offsets", "target", "node_starts", "edge_starts"):
        assert np.array_equal(getattr(a.packed, field), getattr(b.packed, field)), field
    for field in ("features", "quantities"):
        x, y = getattr(a, field), getattr(b, field)
        assert x.shape == y.shape
        assert all(np.array_equal(getattr(x, k), getattr(y, k)) for k in ("indptr", "indices", "data")), field
    assert len(batch._graphs) == made  # no list was made a graph here
