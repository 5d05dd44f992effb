"""Online tuners: every optimizer against a hand-worked two-sentence example, the structured losses against
their definitions and finite differences, seeds, and the command line."""

from __future__ import annotations

import collections
import itertools
import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from support import plain_rescoring as plain
from support.paths import FIXTURES

from hypertune.cli import main
from hypertune.errors import UsageError
from hypertune.formats import read_graphs, read_references
from hypertune.metrics import BleuMetric
from hypertune.tuners import TuningSet
from hypertune.tuners.losses import Candidates, make_loss
from hypertune.tuners.online import (
    BatchLossAdapter,
    ListSpace,
    OnlineOptimizer,
    OnlineTrainer,
    make_structured_loss,
)
from hypertune.weights import Weights

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REFS = str(FIXTURES / "mert" / "ref.")
INIT = str(FIXTURES / "mert" / "init.weights")

# The hand-worked example: two sentences of two candidates, two features, w₀ = (1, 0).
#   sentence 0: e0 h = (1, 0) B = 0.2;  e1 h = (0, 1) B = 0.6
#   sentence 1: e0 h = (1, 1) B = 0.5;  e1 h = (2, 0) B = 0.0
TWO = Candidates(
    sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])),
    np.array([0, 2, 4]),
    np.array([0.2, 0.6, 0.5, 0.0]),
)


def one_epoch(loss: str, optimizer: str, **options) -> np.ndarray:
    """Visit sentence 0 then sentence 1 once, each step computed under the weights of the moment."""
    space = ListSpace(TWO)
    structured = make_structured_loss(loss)
    w = np.array([1.0, 0.0])
    structured.start(space, w)
    opt = OnlineOptimizer(optimizer, **options)
    opt.start(2)
    for s in (0, 1):
        opt.apply(w, structured.step(space, s, w))
    return w


def test_perceptron_by_hand():
    # s0: model-best e0 (score 1) is not the oracle e1 (B 0.6): w += (0,1) − (1,0) → (0, 1);
    # s1: model-best e0 (score 1 > 0) is the oracle: no update.
    assert one_epoch("perceptron", "perceptron") == pytest.approx([0.0, 1.0])


def test_passive_aggressive_by_hand():
    # s0: oracle e1, fear argmax s − B = e0 (0.8 vs −0.6); loss = (0.6 − 0.2) − (0 − 1) = 1.4, ‖d‖² = 2,
    #     τ = min(C = 1, 0.7) → w = (0.3, 0.7);
    # s1: scores e0 1.0, e1 0.6; fear e1 (0.6 > 0.5); loss = 0.5 − (1.0 − 0.6) = 0.1, τ = 0.05 → (0.25, 0.75).
    assert one_epoch("latent-svm", "pa", C=1.0) == pytest.approx([0.25, 0.75])
    # with C = 0.01 every step is capped: (1, 0) + 0.01·(−1, 1) twice
    assert one_epoch("latent-svm", "pa", C=0.01) == pytest.approx([0.98, 0.02])


def test_arow_by_hand():
    # s0: loss 1.4, d = (−1, 1), Σ = I: β = 1/(2 + 1) → w = (8/15, 7/15), Σ = (2/3, 2/3);
    # s1: scores e0 1, e1 16/15, fear e1, loss = 0.5 + 1/15 = 17/30; Σd = (−2/3, 2/3), β = 1/(4/3 + 1) = 3/7;
    #     w += 17/30 · 3/7 · (−2/3, 2/3) = 17/105 · (−1, 1) → (39/105, 66/105).
    assert one_epoch("latent-svm", "arow", r=1.0) == pytest.approx([39 / 105, 66 / 105], rel=1e-12)


def test_sgd_by_hand_with_l2_and_both_l1_methods():
    # plain: (1, 0) + 0.1·(−1, 1) at s0 (loss 1.4) and at s1 (fear e1: 1.8 > 0.5, loss 1.3) → (0.8, 0.2)
    assert one_epoch("latent-svm", "sgd", learning_rate=0.1) == pytest.approx([0.8, 0.2])
    # L2 λ = 0.5: shrink by 1 − 0.05 before each step: (0.95, 0) → (0.85, 0.1) → (0.8075, 0.095) → (0.7075, 0.195)
    assert one_epoch("latent-svm", "sgd", learning_rate=0.1, l2=0.5) == pytest.approx([0.7075, 0.195])
    # FOBOS λ₁ = 0.5: soft-threshold by 0.05 after each step: (0.9, 0.1) → (0.85, 0.05) → (0.75, 0.15) → (0.7, 0.1)
    assert one_epoch("latent-svm", "sgd", learning_rate=0.1, l1=0.5) == pytest.approx([0.7, 0.1])
    # cumulative (Tsuruoka et al.): u = 0.05 then 0.1; (0.9, 0.1) → (0.85, 0.05), q = (−0.05, −0.05);
    # (0.75, 0.15) → (0.75 − (0.1 − 0.05), 0.15 − 0.05) = (0.7, 0.1)
    cumulative = one_epoch("latent-svm", "sgd", learning_rate=0.1, l1=0.5, l1_method="cumulative")
    assert cumulative == pytest.approx([0.7, 0.1])


def test_adagrad_by_hand_with_and_without_l1():
    # G = (1, 1) then (2, 2): (1, 0) + 0.1·(−1, 1) → (0.9, 0.1) + 0.1/√2·(−1, 1)
    step = 0.1 / math.sqrt(2)
    assert one_epoch("latent-svm", "adagrad", learning_rate=0.1) == pytest.approx([0.9 - step, 0.1 + step])
    # FOBOS at AdaGrad's rate: shrink 0.05/√G: (0.9, 0.1) → (0.85, 0.05) → (0.85 − s, 0.05 + s) − 0.05/√2
    shrink = 0.05 / math.sqrt(2)
    with_l1 = one_epoch("latent-svm", "adagrad", learning_rate=0.1, l1=0.5)
    assert with_l1 == pytest.approx([0.85 - step - shrink, 0.05 + step - shrink])


def test_ramp_and_costmargin_steps_by_hand():
    space, w = ListSpace(TWO), np.array([1.0, 0.0])
    ramp = make_structured_loss("ramp")  # α = 10
    ramp.start(space, w)
    # hope argmax s + 10B: e0 3, e1 6 → e1; fear argmax s − 10B: e0 −1, e1 −6 → e0;
    # loss = (1 + 10·0.8) − (0 − 10·0.4) = 13, direction h(e1) − h(e0)
    step = ramp.step(space, 0, w)
    assert step.loss == pytest.approx(13.0) and dict(zip(step.idx, step.diff, strict=True)) == {0: -1.0, 1: 1.0}
    cost = make_structured_loss("costmargin", reading="hinge", truths=1)
    cost.start(space, w)
    # relevant set {model-best e0}; oracle e1; cost 0.4 · max(0, 1 − (0 − 1)) = 0.8; moves by 0.4·(h(e1) − h(e0))
    step = cost.step(space, 0, w)
    assert step.loss == pytest.approx(0.8) and step.diff == pytest.approx([-0.4, 0.4])


def test_ramp_cccp_fixes_the_hopes_for_a_round():
    space = ListSpace(TWO)
    ramp = make_structured_loss("ramp", cccp_passes=2)
    ramp.start(space, np.array([1.0, 0.0]))
    ramp.begin_epoch(space, np.array([1.0, 0.0]), 1)  # round start: s0's hope under (1, 0) is e1 (0 + 6 > 1 + 2)
    moved = np.array([100.0, 0.0])  # under these weights the hope would be e0 (100 + 2 > 6), as the fear is
    step = ramp.step(space, 0, moved)
    # hope e1 (fixed), fear e0: loss (100 + 10·0.8) − (0 − 10·0.4) = 112
    assert step.loss == pytest.approx(112.0) and dict(zip(step.idx, step.diff, strict=True)) == {0: -1.0, 1: 1.0}
    ramp.begin_epoch(space, moved, 2)  # the same round: hopes kept
    assert ramp.step(space, 0, moved).loss == pytest.approx(112.0)
    ramp.begin_epoch(space, moved, 3)  # a new round: the hope is e0 = the fear, nothing to learn
    assert ramp.step(space, 0, moved).idx.size == 0
    plain = make_structured_loss("ramp")  # hope searched at every visit
    assert plain.step(space, 0, moved).idx.size == 0


@settings(deadline=None, max_examples=30)
@given(st.integers(0, 10**6), st.floats(0.5, 3.0))
def test_softmax_margin_gradient_matches_central_differences(seed, alpha):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(2, 7))
    block = sp.csr_matrix(rng.normal(size=(size, 3)))
    gains = rng.uniform(0, 1, size)
    gains[int(rng.integers(size))] = 1.5  # a single oracle
    space = ListSpace(Candidates(block, np.array([0, size]), gains))
    loss = make_structured_loss("softmax-margin", cost_scale=alpha)
    w = rng.normal(size=3)
    oracle = int(np.argmax(gains))

    def value(v: np.ndarray) -> float:  # written out from the definition
        scores = block @ v
        return float(np.log(np.sum(np.exp(scores + alpha * (gains[oracle] - gains)))) - scores[oracle])

    step = loss.step(space, 0, w)
    assert step.loss == pytest.approx(value(w), rel=1e-9)
    gradient = np.zeros(3)
    gradient[step.idx] = -step.diff
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1e-6
        assert gradient[k] == pytest.approx((value(w + e) - value(w - e)) / 2e-6, rel=1e-4, abs=1e-6)


def test_a_batch_loss_followed_online_is_its_per_sentence_share():
    rng = np.random.default_rng(3)
    offsets = np.array([0, 5, 9, 14])
    candidates = Candidates(sp.csr_matrix(rng.normal(size=(14, 3))), offsets, rng.uniform(0, 1, 14))
    space, w = ListSpace(candidates), rng.normal(size=3)
    adapter = BatchLossAdapter("softmax", 5, None, "threshold", seed=0)
    adapter.start(space, w)
    whole = make_loss("softmax")
    whole.prepare(candidates, w, np.random.default_rng(0))
    value, gradient = whole.value_and_gradient(w)
    steps = [adapter.step(space, s, w) for s in range(3)]
    assert sum(s.loss for s in steps) == pytest.approx(value, rel=1e-12)
    total = np.zeros(3)
    for s in steps:
        total[s.idx] -= s.diff
    assert total == pytest.approx(gradient, rel=1e-12)


def fixture_set() -> TuningSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TuningSet.from_corpus(read_graphs(NBEST), read_references(REFS), BleuMetric(tokenize="none"))


def test_seeds_reproduce_and_the_best_epoch_is_returned():
    poor = Weights({"LM0": -0.1, "TM0_0": 0.2, "TM0_1": 0.2, "WordPenalty0": 0.3})  # epochs beat it: not kept
    run = lambda seed: OnlineTrainer(loss="latent-svm", optimizer="adagrad", epochs=4, seed=seed).fit(  # noqa: E731
        fixture_set(), poor
    )
    a, b = run(5), run(5)
    assert dict(a.weights) == dict(b.weights) and [e.bleu for e in a.history] == [e.bleu for e in b.history]
    best = max(a.history, key=lambda e: e.bleu)
    assert a.best_epoch == best.iteration and a.bleu_after == pytest.approx(best.bleu)  # l1 scaling keeps BLEU


def test_options_that_do_not_fit_are_refused_in_parameter_names():
    """OnlineOptions' checks, worded in parameter names (the command line words them in flags)."""
    refused = {
        (("loss", "latent-svm"), ("optimizer", "pa"), ("minibatch", 4)):
            "minibatch needs optimizer perceptron, sgd or adagrad (pa steps one example)",
        (("loss", "perceptron"), ("l1", 0.1)): "l1 needs optimizer sgd or adagrad",
        (("loss", "latent-svm"), ("optimizer", "adagrad"), ("l1", 0.1), ("l1_method", "cumulative")):
            "the cumulative L1 penalty (Tsuruoka et al. 2009) is for optimizer sgd",
        (("loss", "latent-svm"), ("optimizer", "pa"), ("l2", 0.1)):
            "l2 needs optimizer sgd or adagrad (perceptron, pa and arow have no L2 term)",
        (("loss", "latent-svm"), ("optimizer", "arow"), ("learning_rate", 0.1)):
            "optimizer arow chooses its own step size: learning_rate does not apply",
        (("loss", "ramp"), ("target", "hope")): "target is for the perceptron and latent-svm losses, not ramp",
        (("loss", "latent-svm"), ("cccp_passes", 5)): "cccp_passes is for the ramp loss, not latent-svm",
        (("loss", "pl"), ("optimizer", "adagrad"), ("cost_scale", 2.0)):
            "cost_scale: for the structured losses, not pl",
        (("loss", "pl"), ("sample", 1)): "sample must be at least 2 for the pl loss, got 1",
        (("C", 0.0),): "C must be greater than 0, got 0.0",
        (("target", "fear"),): "target must be one of oracle, hope, got 'fear'",
    }  # fmt: skip
    for fields, message in refused.items():
        with pytest.raises(UsageError) as error:
            OnlineTrainer(**dict(fields))
        assert str(error.value) == message


@pytest.mark.parametrize(
    "options",
    [
        ["--loss", "perceptron"],
        ["--loss", "ramp", "--minibatch", "2"],
        ["--loss", "ramp", "--cccp-passes", "2", "--corpus-order"],
        ["--loss", "pl", "--optimizer", "adagrad"],
    ],
)
def test_train_command_runs_online_tuners(options, tmp_path, capsys):
    """The reported BLEU before and after are sacrebleu's of the fixture's n-best lists rescored (without
    hypertune) under the start and the written weights; the perceptron reaches every oracle (BLEU 1)."""
    out = tmp_path / "w"
    args = ["train", NBEST, "--refs", REFS, "--init", INIT, *options, "--epochs", "3", "--out", str(out), "--json"]
    assert main(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert len(payload["history"]) == 3 and payload["best_epoch"] in (0, 1, 2, 3)  # 0: the start weights kept
    lists, references = plain.read_nbest(NBEST), plain.reference_streams(REFS)
    written = plain.read_weights(out)
    assert written == pytest.approx(payload["weights"])
    before = plain.corpus_bleu(plain.model_best(lists, plain.read_weights(INIT)), references)
    after = plain.corpus_bleu(plain.model_best(lists, written), references)
    assert payload["bleu_before"] == pytest.approx(before) and payload["bleu_after"] == pytest.approx(after)
    assert payload["kept_start"] == (payload["best_epoch"] == 0) == (after <= before)
    if options == ["--loss", "perceptron"]:
        assert after == pytest.approx(1.0)
    assert math.fsum(abs(v) for v in payload["weights"].values()) == pytest.approx(1.0)


def test_train_command_refuses_a_batch_optimizer_for_a_structured_loss(capsys):
    assert main(["train", NBEST, "--refs", REFS, "--init", INIT, "--loss", "ramp", "--optimizer", "lbfgs"]) == 2
    assert "online optimizer" in capsys.readouterr().err
    assert main(["train", NBEST, "--refs", REFS, "--init", INIT, "--loss", "pro", "--minibatch", "4"]) == 2
    assert "--minibatch: options of the online optimizers" in capsys.readouterr().err


def toy_forest_derivations() -> list[tuple[str, dict[str, float]]]:
    """Every derivation of fixtures/toy-forest.json (27) as (words, features), expanded by plain recursion
    over its JSON (no hypertune)."""
    edges = json.loads((FIXTURES / "toy-forest.json").read_text())["edges"]

    def derivations(node: int) -> list[tuple[list[str], dict[str, float]]]:
        out = []
        for edge in (e for e in edges if e["head"] == node):
            for children in itertools.product(*(derivations(t) for t in edge["tails"])):
                words: list[str] = []
                for token in edge["target"].split():
                    words += children[int(token[1:-1]) - 1][0] if token.startswith("[") else [token]
                features = collections.Counter(edge["features"])
                for _, child in children:
                    features.update(child)
                out.append((words, dict(features)))
        return out

    return [(" ".join(words), features) for words, features in derivations(4)]


@pytest.mark.parametrize("optimizer", ["perceptron", "pa"])
def test_online_tuners_search_forests(optimizer, tmp_path, capsys):
    """Trained on the toy forest (BLEU up to bigrams: its reference has three words), both tuners end on
    weights whose best derivation, found by enumerating all 27, is the reference; the perceptron's weights
    are worked by hand."""
    forest = str(FIXTURES / "toy-forest.json")
    ref = str(FIXTURES / "toy-forest.ref")
    weights = str(FIXTURES / "toy-forest.weights")
    args = ["train", forest, "--refs", ref, "--init", weights, "--max-order", "2", "--epochs", "2", "--json"]
    if optimizer == "perceptron":
        args += ["--loss", "perceptron"]
    else:
        args += ["--loss", "latent-svm", "--target", "hope", "--optimizer", "pa", "-C", "10"]
    assert main(args) == 0
    payload = json.loads(capsys.readouterr().out)
    derivations, reference = [toy_forest_derivations()], [[Path(ref).read_text().strip()]]
    assert len(derivations[0]) == 27
    start = plain.read_weights(weights)
    assert plain.model_best(derivations, start) == ["the cottage"]
    assert plain.model_best(derivations, payload["weights"]) == ["the small house"]
    assert payload["bleu_before"] == plain.corpus_bleu(["the cottage"], reference, max_order=2) == 0.0
    assert payload["bleu_after"] == pytest.approx(plain.corpus_bleu(["the small house"], reference, max_order=2))
    assert payload["bleu_after"] == pytest.approx(1.0) and not payload["kept_start"]
    if optimizer == "perceptron":
        # epoch 1: the model-best "the cottage" (glue 1, tm -1.2, lm -3.6) is not the oracle "the small house"
        # (glue 2, tm -1.4, lm -4.8): w1 = w0 + (glue +1, tm -0.2, lm -1.2) = (tm .8, lm -.7, glue .8, reorder
        # -1, drop -2), which makes the oracle best, so epoch 2 makes no update. The average of w0 and w1 is
        # (.9, -.1, .3, -1, -2), written over its l1 norm 4.3.
        expected = {"tm": 0.9, "lm": -0.1, "glue": 0.3, "reorder": -1.0, "drop": -2.0}
        assert payload["weights"] == pytest.approx({k: v / 4.3 for k, v in expected.items()})
