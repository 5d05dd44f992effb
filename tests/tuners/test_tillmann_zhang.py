"""Tillmann & Zhang as written (*An Online Relevant Set Algorithm for Statistical Machine Translation*): the
three readings of the cost-margin update (eq. 7, Table II as printed, the plain hinge) and Table III's
perceptron, each against a hand-worked example; the relevant-set tuner from the command line and in the
tuning loop. Expected scores of the command-line runs come from tests/support/plain_rescoring (sacrebleu)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from support import plain_rescoring as plain
from support.paths import FIXTURES

from hypertune.cli import main
from hypertune.errors import UsageError
from hypertune.tuners.costmargin import costmargin_choice
from hypertune.tuners.losses import Candidates
from hypertune.tuners.online import ListSpace, make_structured_loss
from hypertune.tuners.relevant_set import RelevantSetRun
from hypertune.tuners.relevant_set_options import RelevantSetOptions
from hypertune.tuners.train_options import OnlineOptions

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REFS = [str(FIXTURES / "mert" / "ref.0"), str(FIXTURES / "mert" / "ref.1")]


def candidates(lists: list[list[tuple[tuple[float, float], float]]]) -> Candidates:
    """Sentences of (features, gain) candidates over two features."""
    rows = [h for hyps in lists for h, _ in hyps]
    gains = [g for hyps in lists for _, g in hyps]
    offsets = np.cumsum([0] + [len(hyps) for hyps in lists])
    return Candidates(sp.csr_matrix(np.array(rows, dtype=float)), offsets, np.array(gains))


# ---------------------------------------------------------------------- the update's readings
def test_the_three_readings_pick_three_alternatives_by_hand():
    # One truth (gain b = 0.6, score s = 1.0) against three alternatives; Δ = b − b', m = s − s':
    #   a: b' 0.2, s' 0.5  -> Δ 0.4, m  0.5;  b: b' 0.5, s' 1.5 -> Δ 0.1, m −0.5;  c: b' 0.0, s' −1 -> Δ 0.6, m 2.
    cost = np.array([[0.4, 0.1, 0.6]])
    margin = np.array([[0.5, -0.5, 2.0]])
    # eq7: ψ = Δ(1 − m)₊² = 0.4·0.25 = 0.1, 0.1·2.25 = 0.225, 0  -> b; step c = Δ(1 − m)₊ = 0.1·1.5 = 0.15
    eq7 = costmargin_choice("eq7", cost, margin)
    assert (eq7.alternative[0], eq7.coefficient[0], eq7.value[0]) == (1, pytest.approx(0.15), pytest.approx(0.225))
    # hinge: ψ = Δ(1 − m)₊ = 0.2, 0.15, 0  -> a; step c = Δ = 0.4
    hinge = costmargin_choice("hinge", cost, margin)
    assert (hinge.alternative[0], hinge.coefficient[0], hinge.value[0]) == (0, pytest.approx(0.4), pytest.approx(0.2))
    # table2: l = Δ(1 − m) = 0.2, 0.15, −0.6  -> argmin c, the least violating; step c = Δ = 0.6, no hinge
    table2 = costmargin_choice("table2", cost, margin)
    assert (table2.alternative[0], table2.coefficient[0], table2.value[0]) == (2, 0.6, pytest.approx(-0.6))
    # nothing violates eq. 4's margin: no step in the hinged readings, Table II's step all the same
    calm = np.array([[2.0, 3.0, 2.0]])
    assert not np.any(costmargin_choice("eq7", cost, calm).coefficient)
    assert not np.any(costmargin_choice("hinge", cost, calm).coefficient)
    assert costmargin_choice("table2", cost, calm).coefficient[0] == 0.6  # l = −0.4, −0.2, −0.6 → c, Δ = 0.6
    with pytest.raises(UsageError, match="unknown cost-margin reading"):
        costmargin_choice("eq9", cost, margin)


# One sentence, two features, w = (1, 0):
#   e0 h (1, 0) B 0.2 (s 1);  e1 h (0, 1) B 0.6 (s 0);  e2 h (0, 0) B 0.5 (s 0);  e3 h (2, 0) B 0.0 (s 2)
ONE = candidates([[((1, 0), 0.2), ((0, 1), 0.6), ((0, 0), 0.5), ((2, 0), 0.0)]])


@pytest.mark.parametrize(
    ("reading", "loss", "direction"),
    [
        # relevant set {e3} (the model-best); V_2 = {e1, e2}; y₁ = h(e1) − h(e3) = (−2, 1), y₂ = (−2, 0);
        # Δ₁ = 0.6, m₁ = −2; Δ₂ = 0.5, m₂ = −2.
        # eq7: ψ = 0.6·9 = 5.4, 0.5·9 = 4.5 (mean 4.95); d = (0.6·3·y₁ + 0.5·3·y₂)/2 = (−3.3, 0.9)
        ("eq7", 4.95, [-3.3, 0.9]),
        # hinge: ψ = 1.8, 1.5 (mean 1.65); d = (0.6·y₁ + 0.5·y₂)/2 = (−1.1, 0.3)
        ("hinge", 1.65, [-1.1, 0.3]),
        # table2: the best truth e1 only; l = 0.6·(1 + 2) = 1.8; d = 0.6·y₁ = (−1.2, 0.6)
        ("table2", 1.8, [-1.2, 0.6]),
    ],
)
def test_the_online_costmargin_step_by_hand(reading, loss, direction):
    space, w = ListSpace(ONE), np.array([1.0, 0.0])
    cost = make_structured_loss("costmargin", reading=reading, truths=2)
    cost.start(space, w)
    step = cost.step(space, 0, w)
    assert step.loss == pytest.approx(loss) and list(step.idx) == [0, 1] and step.diff == pytest.approx(direction)


def test_the_online_costmargin_takes_no_step_when_the_model_best_is_a_truth():
    # with V_5 the whole list, every relevant derivation is a truth: no alternative (eq. 3's V − V_K is empty)
    space, w = ListSpace(ONE), np.array([1.0, 0.0])
    cost = make_structured_loss("costmargin")
    cost.start(space, w)
    assert cost.step(space, 0, w).idx.size == 0


def test_the_readings_and_truths_are_refused_off_costmargin():
    with pytest.raises(UsageError, match="reading is for the costmargin loss, not perceptron"):
        OnlineOptions(loss="perceptron", reading="hinge")
    with pytest.raises(UsageError, match="truths is for the costmargin loss, not ramp"):
        OnlineOptions(loss="ramp", truths=1)
    with pytest.raises(UsageError, match="reading is for update costmargin"):
        RelevantSetOptions(reading="table2")
    with pytest.raises(UsageError, match="truths is for truth oracle"):
        RelevantSetOptions(truths=2)
    with pytest.raises(UsageError, match="decodings must be at least 3"):
        RelevantSetOptions(decodings=2)


# ---------------------------------------------------------------------- Table III
# Three sentences over two features; gains given by hand.
#   A: a0 (1, 1) B 0.3;  a1 (2, 0) B 0.8
#   B: b0 (0, 1) B 0.4;  b1 (1, 0) B 0.4   (equal gains)
#   C: c0 (0, 2) B 0.5;  c1 (3, −1.5) B 0.1
THREE = candidates(
    [
        [((1, 1), 0.3), ((2, 0), 0.8)],
        [((0, 1), 0.4), ((1, 0), 0.4)],
        [((0, 2), 0.5), ((3, -1.5), 0.1)],
    ]
)


def test_table_iii_perceptron_by_hand():
    """L = 4 (the two seed decodings, then two rounds), R = 2 passes in corpus order, η = 0.1, w₀ = (0.1, 0.1).

    Seeds. w₁ = (0.1, 0.1); w₂ = w₁ + δ with δ the seed's first draw, (+0.0027, −0.0046): any δ with δ₁ > δ₂
    gives what follows. Under w₁: A a0 0.2 = a1 0.2 → a0 (the first); B b0 0.1 = b1 0.1 → b0; C c0 0.2 > c1 0.15
    → c0. Under w₂ ≈ (0.10274, 0.09540): A a1 0.2055 > a0 0.1981 → a1; B b1 0.1027 > b0 0.0954 → b1;
    C c0 0.1908 > c1 0.3082 − 0.1431 = 0.1651 → c0. V_rel: A {a0, a1}, B {b0, b1}, C {c0}.

    Round ℓ = 3 from w = (0.1, 0.1). Pass 1: A: t = argmax s = a0 (0.2 = 0.2, the first), s = a1 (B 0.8):
    w += 0.1·((2, 0) − (1, 1)) → (0.2, 0). B: equal gains, so s is the higher-scoring b1 (0.2 > 0), also t: no
    update. C: only c0: no update. Pass 2: A: a1 0.4 > a0 0.2, t = s: nothing; B, C as before. w₃ = (0.2, 0),
    1 update. Decoding under w₃: A a1, B b1 (both known), C: c1 0.6 > c0 0 → V_rel(C) = {c0, c1}.

    Round ℓ = 4 from w = (0.1, 0.1). Pass 1: A as before → (0.2, 0). B: nothing. C: t = c1 (0.6 > 0), s = c0
    (B 0.5): w += 0.1·((0, 2) − (3, −1.5)) = (−0.3, 0.35) → (−0.1, 0.35). Pass 2: A: a0 0.25 > a1 −0.2, t = a0,
    s = a1: w += (0.1, −0.1) → (0, 0.25). B: b0 0.25 > b1 0: s = t = b0. C: c0 0.5 > c1 −0.375: s = t.
    w₄ = (0, 0.25), 3 updates (A, C, A). L = 4: no decoding after the last round."""
    options = RelevantSetOptions(decodings=4, passes=2, learning_rate=0.1, shuffle=False, seed=0)
    run = RelevantSetRun(THREE, options, np.random.default_rng(0))
    got = list(run.iterations(np.array([0.1, 0.1])))
    delta = np.random.default_rng(0).uniform(-0.01, 0.01, 2)  # the documented draw: δ first, from the seed
    assert delta[0] > delta[1]
    weights = [w for w, _, _ in got]
    assert weights[0] == pytest.approx([0.1, 0.1]) and weights[1] == pytest.approx(0.1 + delta, abs=1e-15)
    assert weights[2] == pytest.approx([0.2, 0.0], abs=1e-12)
    assert weights[3] == pytest.approx([0.0, 0.25], abs=1e-12)
    assert [u for _, u, _ in got] == [0, 0, 1, 3]
    assert [r for _, _, r in got] == pytest.approx([0, 0, 5 / 3, 2])  # mean |V_rel| each round trained on
    assert run.relevant == [[0, 1], [0, 1], [0, 1]]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        # Seeds: under w₁ = (0.1, 0.1) e3 (0.2) beats e0, e1 (0.1) and e2 (0); under w₂ as well. V_rel = {e3},
        # V_2 = {e1, e2}. One pass from w₀ = (0.1, 0.1), η = 0.1: s(e1) = 0.1, s(e2) = 0, s(e3) = 0.2;
        # eq7: e1: Δ 0.6, m −0.1, c = 0.6·1.1 = 0.66, y (−2, 1); e2: Δ 0.5, m −0.2, c = 0.5·1.2 = 0.6, y (−2, 0);
        #      d = (0.66·y₁ + 0.6·y₂)/2 = (−1.26, 0.33) → w₃ = (0.1, 0.1) + 0.1·d = (−0.026, 0.133)
        ({}, [-0.026, 0.133]),
        # hinge: c = 0.6, 0.5 → d = (−1.1, 0.3) → (−0.01, 0.13)
        ({"reading": "hinge"}, [-0.01, 0.13]),
        # table2: e1 only, c = 0.6 → d = (−1.2, 0.6) → (−0.02, 0.16)
        ({"reading": "table2"}, [-0.02, 0.16]),
        # the relevant truth: V_rel = {e3} is its own truth, nothing to move from
        ({"truth": "relevant"}, [0.1, 0.1]),
    ],
)
def test_a_costmargin_round_by_hand(options, expected):
    truths = {} if options.get("truth") == "relevant" else {"truths": 2}
    settings = RelevantSetOptions(update="costmargin", decodings=3, passes=1, learning_rate=0.1, **truths, **options)
    run = RelevantSetRun(ONE, settings, np.random.default_rng(0))
    w3, updates, _ = list(run.iterations(np.array([0.1, 0.1])))[2]
    assert w3 == pytest.approx(expected, abs=1e-12)
    assert updates == (0 if options.get("truth") == "relevant" else 1)


# ---------------------------------------------------------------------- the command line and the loop
def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "flags",
    [
        ["--truth", "oracle"],  # Table III's update towards each list's oracle
        ["--update", "costmargin", "--truths", "2"],  # eq. 7, V_2: fixtures' lists have only 5 candidates
    ],
)
def test_the_command_improves_on_flat_weights(tmp_path, capsys, flags):
    flat = tmp_path / "flat.weights"
    flat.write_text("LM0= 0.1\nTM0= 0.1 0.1\nWordPenalty0= 0.1\n")
    out = tmp_path / "tuned.weights"
    payload = run_json(capsys, "relevant-set", NBEST, "--refs", *REFS, "--init", str(flat), "--decodings", "6",
                       "--learning-rate", "0.01", *flags, "--out", str(out), "--json")  # fmt: skip
    lists, refs = plain.read_nbest(NBEST), [open(r).read().splitlines() for r in REFS]

    def bleu(weights: dict[str, float]) -> float:
        return plain.corpus_bleu(plain.model_best(lists, weights), refs)

    assert payload["score_before"] == pytest.approx(bleu(plain.read_weights(flat)), abs=1e-12)
    assert payload["score_after"] == pytest.approx(bleu(payload["weights"]), abs=1e-12)
    assert payload["score_after"] > payload["score_before"] and not payload["kept_start"]
    assert len(payload["history"]) == 6 and payload["history"][0]["score"] == payload["score_before"]  # w₁ = flat
    assert payload["best_iteration"] >= 3
    assert plain.read_weights(out) == pytest.approx(payload["weights"], rel=1e-12)
    again = run_json(capsys, "relevant-set", NBEST, "--refs", *REFS, "--init", str(flat), "--decodings", "6",
                     "--learning-rate", "0.01", *flags, "--json")  # fmt: skip
    assert again["weights"] == payload["weights"]  # seeded: the same run twice


def test_its_help_names_the_paper_and_has_an_example(capsys):
    with pytest.raises(SystemExit):
        main(["relevant-set", "--help"])
    text = capsys.readouterr().out
    assert "Tillmann & Zhang" in text and "example:" in text and "--update" in text


def test_the_loop_runs_it(corpus, tmp_path, capsys):
    from support.rescoring_decoder import decoder_command

    argv = ["tune", "--decoder", decoder_command(corpus), "--refs", str(corpus["ref"]), "--init", str(corpus["init"]),
            "--kbest", "5", "--iterations", "2", "--workdir", str(tmp_path / "wd"), "--tuner", "relevant-set",
            "--decodings", "4", "--passes", "2", "--json"]  # fmt: skip
    result = run_json(capsys, *argv)
    assert result["tuner"] == "relevant-set" and len(result["history"]) >= 2  # stops early once nothing is new
    tuned = json.loads((tmp_path / "wd" / "iteration-001" / "tuner.json").read_text())["result"]
    assert len(tuned["history"]) == 4 and tuned["update"] == "perceptron"
    assert tuned["score_after"] >= tuned["score_before"]


def test_shards_in_one_process_run_the_whole_set(capsys):
    args = ["relevant-set", NBEST, "--refs", *REFS, "--decodings", "4", "--update", "costmargin", "--truths", "2",
            "--learning-rate", "0.01", "--json"]  # fmt: skip
    whole = run_json(capsys, *args)
    assert run_json(capsys, *args, "--shards", "2")["weights"] == whole["weights"]
