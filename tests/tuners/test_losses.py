"""The losses of ``hypertune train``/``pro``: gradients against central differences on random candidate
lists, PRO's sampler against its definition, Plackett-Luce against the hand-worked three-candidate example
of Xia et al. (Table 1), and the trainer through the command line."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from support.paths import FIXTURES

from hypertune.cli import main
from hypertune.errors import UsageError
from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.metrics import BleuMetric
from hypertune.tuners import Trainer, TuningSet
from hypertune.tuners.losses import Candidates, PlackettLuceLoss, make_loss, sample_pairs

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REFS = str(FIXTURES / "mert" / "ref.")
INIT = str(FIXTURES / "mert" / "init.weights")


def random_candidates(seed: int, sentences: int = 4, width: int = 3) -> Candidates:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 9, sentences)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    features = sp.csr_matrix(rng.normal(size=(offsets[-1], width)))
    gains = np.round(rng.uniform(0, 1, offsets[-1]), 2)  # rounded: ties happen
    return Candidates(features, offsets, gains)


@given(st.sampled_from(["pro", "pl", "ranking", "mse", "softmax"]), st.integers(0, 10**6))
def test_every_loss_gradient_matches_central_differences(name, seed):
    candidates = random_candidates(seed)
    loss = make_loss(name, top_k=3, sample=4)
    w = np.random.default_rng(seed + 1).normal(size=3)
    try:
        loss.prepare(candidates, w, np.random.default_rng(seed))
    except Exception as error:  # every pair within the threshold: nothing to learn (said clearly)
        assert "nothing to learn" in str(error)
        return
    _, gradient = loss.value_and_gradient(w)
    h = 1e-6
    for k in range(3):
        up, down = w.copy(), w.copy()
        up[k] += h
        down[k] -= h
        numeric = (loss.value_and_gradient(up)[0] - loss.value_and_gradient(down)[0]) / (2 * h)
        assert gradient[k] == pytest.approx(numeric, rel=1e-4, abs=1e-5), (name, k)


def test_pro_sampler_follows_its_definition():
    candidates = random_candidates(7, sentences=6)
    better, worse = sample_pairs(candidates, np.random.default_rng(3), samples=200, threshold=0.05, keep=5)
    owner = candidates.owner()
    assert np.all(owner[better] == owner[worse])
    assert np.all(candidates.gains[better] - candidates.gains[worse] > 0.05)
    assert np.all(np.bincount(owner[better], minlength=6) <= 5)
    again = sample_pairs(candidates, np.random.default_rng(3), samples=200, threshold=0.05, keep=5)
    assert np.array_equal(better, again[0]) and np.array_equal(worse, again[1])
    other = sample_pairs(candidates, np.random.default_rng(4), samples=200, threshold=0.05, keep=5)
    assert not (np.array_equal(better, other[0]) and np.array_equal(worse, other[1]))
    # the kept pairs are those with the largest gain differences among the sampled ones
    for s in range(6):
        mine = owner[better] == s
        if mine.any():
            kept = candidates.gains[better[mine]] - candidates.gains[worse[mine]]
            assert kept.size <= 5 and np.all(kept > 0.05)


def test_cdec_sigmoid_acceptance_follows_its_definition():
    """cdec's mr_pro_map: two hypotheses of equal length, gains 0.7 and 0.4: every drawn pair is (0, 1) or
    (1, 0) with |Δg| = 0.3 = the mean, so each is accepted with probability σ(0.3 + 0.3)."""
    samples = 20000
    two = Candidates(sp.csr_matrix(np.eye(2)), np.array([0, 2]), np.array([0.7, 0.4]), lengths=np.array([6.0, 6.0]))
    better, worse = sample_pairs(two, np.random.default_rng(1), samples, keep=samples, acceptance="sigmoid")
    p = 1.0 / (1.0 + math.exp(-0.6))
    assert abs(better.size - samples * p) < 5 * math.sqrt(samples * p * (1 - p))
    assert np.all(better == 0) and np.all(worse == 1)
    # lengths 5 (twenty times) and 50: the length differences' RMS is sqrt(2/21 * 45²) ≈ 13.9, so pairs with
    # the long hypothesis lie 3.2 deviations out and are never drawn; equal gains are never accepted
    gains = np.r_[np.linspace(0.1, 0.5, 20), 0.9]
    lengths = np.r_[np.full(20, 5.0), 50.0]
    outlier = Candidates(sp.csr_matrix(np.eye(21)), np.array([0, 21]), gains, lengths=lengths)
    better, worse = sample_pairs(outlier, np.random.default_rng(2), 5000, keep=50, acceptance="sigmoid")
    assert better.size == 50 and not np.any(better == 20) and not np.any(worse == 20)
    assert np.all(gains[better] > gains[worse])
    with pytest.raises(UsageError, match="lengths"):
        sample_pairs(Candidates(two.features, two.offsets, two.gains), np.random.default_rng(1), acceptance="sigmoid")


def test_plackett_luce_is_the_hand_worked_example():
    """Xia et al. (Table 1): three objects with scores s; the permutation (2, 3, 1) has probability
    p₂ · p₃ / (1 − p₂), p = softmax(s). Gains 0.2, 0.9, 0.5 rank the candidates 2, 3, 1."""
    s = np.array([0.3, 1.1, -0.4])
    candidates = Candidates(sp.csr_matrix(np.eye(3)), np.array([0, 3]), np.array([0.2, 0.9, 0.5]))
    loss = PlackettLuceLoss(top_k=3, sample=None)
    loss.prepare(candidates, s, np.random.default_rng(0))
    p = np.exp(s) / np.exp(s).sum()
    assert loss.value_and_gradient(s)[0] == pytest.approx(-math.log(p[1] * p[2] / (1 - p[1])), rel=1e-12)
    top_one = PlackettLuceLoss(top_k=1, sample=None)
    top_one.prepare(candidates, s, np.random.default_rng(0))
    assert top_one.value_and_gradient(s)[0] == pytest.approx(-math.log(p[1]), rel=1e-12)


def test_plackett_luce_resampling_keeps_the_best_and_worst_thirds():
    candidates = random_candidates(11, sentences=1)
    rows = 8
    candidates = Candidates(sp.csr_matrix(np.random.default_rng(1).normal(size=(rows, 3))), np.array([0, rows]),
                            np.linspace(1, 0, rows))  # fmt: skip
    loss = PlackettLuceLoss(top_k=2, sample=6)
    loss.prepare(candidates, np.zeros(3), np.random.default_rng(5))
    kept = loss.lists.rows[0][loss.lists.mask[0]]
    assert kept.size == 6 and list(kept[:2]) == [0, 1] and list(kept[-2:]) == [6, 7]
    assert list(kept) == sorted(kept)  # still best-first


def fixture_set() -> TuningSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TuningSet.from_corpus(read_graphs(NBEST), read_references(REFS), BleuMetric(tokenize="none"))


def test_trainer_is_reproducible_and_interpolates():
    a = Trainer(loss="pro", seed=4, normalize="none").fit(fixture_set(), read_weights(INIT))
    b = Trainer(loss="pro", seed=4, normalize="none").fit(fixture_set(), read_weights(INIT))
    assert dict(a.weights) == dict(b.weights)
    half = Trainer(loss="pro", seed=4, normalize="none", interpolate=0.5).fit(fixture_set(), read_weights(INIT))
    init = read_weights(INIT)
    for name, value in a.weights.items():
        assert half.weights[name] == pytest.approx(0.5 * value + 0.5 * init.get(name, 0.0), abs=1e-12)
    normalized = Trainer(loss="pro", seed=4).fit(fixture_set(), read_weights(INIT))
    assert math.fsum(abs(v) for v in normalized.weights.values()) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "command",
    [["pro"], ["pro", "--acceptance", "sigmoid"], ["train", "--loss", "pl"], ["train", "--loss", "softmax"]],
)
def test_commands_report_tuning_results(command, tmp_path, capsys):
    out = tmp_path / "w"
    assert main([*command, NBEST, "--refs", REFS, "--init", INIT, "--out", str(out), "--json", "--seed", "2"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert list(payload)[:7] == ["bleu_before", "bleu_after", "metric", "weights", "history", "seconds", "seed"]
    assert payload["seed"] == 2 and payload["output"] == str(out)
    assert dict(read_weights(str(out))) == pytest.approx(payload["weights"])
