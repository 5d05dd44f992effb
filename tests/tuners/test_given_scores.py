"""Tuning on given scores (``--metric scores.NAME``, issue #30) against brute force computed here with NumPy:
MERT's exact line search against every interval between the envelope breakpoints; every tuner's reported
``score_after`` against the reranked mean score of its written weights; minimum risk's expected score and
gradient against the softmax written out and finite differences; the gains MIRA, PRO, PL and the online tuners
see; the oracle; and the errors, in one line."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
import sacrebleu
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from support.scored_lists import ScoredLists, random_lists, scored_lists

from hypertune.cli import main
from hypertune.errors import InputError, UsageError
from hypertune.hypergraph import HypergraphBuilder
from hypertune.metrics import GivenScore, TerMetric
from hypertune.metrics.gains import gain_for
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners import Mert, MinRisk, Mira, OnlineTrainer, Trainer, TuningSet
from hypertune.tuners.hope_fear import HopeFearDecoder
from hypertune.tuners.kbest_candidates import kbest_candidates
from hypertune.tuners.linesearch import line_search
from hypertune.tuners.mert import LineSearcher
from hypertune.tuners.mira import KbestPack
from hypertune.tuners.oracle import OracleSearch
from hypertune.weights import Weights


# ---------------------------------------------------------------------- brute force along a line
def mean_at(lists: ScoredLists, a: list[np.ndarray], b: list[np.ndarray], t: float) -> float:
    """The mean score of each sentence's best hypothesis at ``w0 + t·d`` (lines ``a + t·b``, first on ties)."""
    return float(np.mean([sc["comet"][int(np.argmax(x + t * y))] for sc, x, y in zip(lists.scores, a, b, strict=True)]))


def choices_at(a: list[np.ndarray], b: list[np.ndarray], t: float) -> list[int]:
    return [int(np.argmax(x + t * y)) for x, y in zip(a, b, strict=True)]


def brute_line(lists: ScoredLists, w0: np.ndarray, d: np.ndarray):
    """Along ``w0 + t·d``: every crossing of two hypotheses' lines (a superset of the envelope breakpoints),
    the intervals between consecutive ones ``(-inf, p0), [p0, p1), ..., [pK, inf)``, a point inside each and
    the mean score there, and the exact envelope breakpoints: the crossings where some sentence's best
    hypothesis changes."""
    a = [m @ w0 for m in lists.features]
    b = [m @ d for m in lists.features]
    crossings = set()
    for x, y in zip(a, b, strict=True):
        for i, j in itertools.combinations(range(x.size), 2):
            if y[i] != y[j]:
                crossings.add(float((x[j] - x[i]) / (y[i] - y[j])))
    points = sorted(crossings)
    if points:
        inside = [points[0] - 1.0, *[(p + q) / 2 for p, q in itertools.pairwise(points)], points[-1] + 1.0]
    else:
        inside = [0.0]
    starts, ends = [-math.inf, *points], [*points, math.inf]
    values = [mean_at(lists, a, b, t) for t in inside]
    chosen = [choices_at(a, b, t) for t in inside]
    envelope = [p for k, p in enumerate(points) if chosen[k] != chosen[k + 1]]
    return a, b, starts, ends, inside, values, envelope


def distance_to_zero(lo: float, hi: float) -> float:
    """The line search's distance of an interval from γ = 0 (0 when its closure holds 0)."""
    return 0.0 if lo <= 0 <= hi else min(abs(lo), abs(hi))


@settings(max_examples=30, deadline=None)
@given(
    scored_lists(),
    st.lists(st.integers(-4, 4), min_size=2, max_size=2),
    st.lists(st.integers(-2, 2), min_size=2, max_size=2).filter(any),
)
def test_line_search_finds_the_best_interval_of_the_exact_envelope(lists, start, direction):
    """Any direction (the general path: slopes by a matrix product): the best value over every interval, the
    number of envelope breakpoints, the value at the returned step and at γ = 0, and the tie rule (the best
    interval nearest γ = 0)."""
    w0, d = np.array(start) / 2.0, np.array(direction, dtype=np.float64)
    tuning_set = lists.tuning_set()
    result = line_search(LineSearcher(tuning_set, n_jobs=1).surfaces(w0, d), tuning_set.metric.score)
    a, b, starts, ends, inside, values, envelope = brute_line(lists, w0, d)
    best = max(values)
    assert result.score == pytest.approx(best, abs=1e-12)
    assert result.breakpoints == len(envelope)
    assert mean_at(lists, a, b, result.gamma) == pytest.approx(best, abs=1e-12)
    zero = int(np.searchsorted(np.array(starts[1:]), 0.0, side="right"))  # the interval [p_k, p_k+1) holding 0
    assert result.score_at_zero == pytest.approx(values[zero], abs=1e-12)
    nearest = min(distance_to_zero(lo, hi) for lo, hi, v in zip(starts, ends, values, strict=True) if v >= best - 1e-12)
    assert distance_to_zero(*result.interval) == pytest.approx(nearest, abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(scored_lists(), st.lists(st.integers(-4, 4), min_size=2, max_size=2), st.integers(0, 1))
def test_mert_along_one_feature_reaches_the_brute_force_best(lists, start, column):
    """MERT moving one feature (its unit direction: the sorted-column path) ends at the best of the intervals
    and of the start itself (MERT never ends below its start); its written weights rerank to ``score_after``."""
    assume(any(m[:, column].any() for m in lists.features))
    w0 = np.array(start) / 2.0
    d = np.zeros(2)
    d[column] = 1.0
    tuning_set = lists.tuning_set()
    name = lists.names[column]
    init = Weights(dict(zip(lists.names, w0.tolist(), strict=True)))
    result = Mert(optimizer="coordinate", features=(name,), restarts=0, normalize="none", n_jobs=1).fit(
        tuning_set, init
    )
    _, _, _, _, _, values, _ = brute_line(lists, w0, d)
    at_start = lists.mean_score(w0)
    assert result.score_before == pytest.approx(at_start, abs=1e-12)
    assert result.score_after == pytest.approx(max(*values, at_start), abs=1e-12)
    written = lists.vector(dict(result.weights))
    assert written[1 - column] == w0[1 - column]  # the other feature did not move
    assert lists.mean_score(written) == pytest.approx(result.score_after, abs=1e-12)


def test_mert_does_not_step_into_an_interval_rounding_made():
    """Worked by hand (found by the test above): sentence 1's lines along f1 from w = (0.5, 0) are h0 = 1,
    h1 = 0.5 - γ, h2 = -2γ, all three meeting at γ = -0.5; for γ < -0.5 h2 wins (score -0.25, mean -0.125). From
    there a second search meets the three again in one point, and rounding left an interval a few ulps wide
    where h1 (score 0) seemed best: MERT stepped into it, rescored -0.25 at the step and kept its start."""
    lists = ScoredLists(
        features=[np.array([[0.0, 0], [0, 0], [0, -1], [2, 2]]), np.array([[2.0, 0], [1, -1], [0, -2], [0, 0]])],
        scores=[{"comet": np.zeros(4)}, {"comet": np.array([-0.5, 0.0, -0.25, 0.0])}],
        texts=[["s0 h0", "s0 h1", "s0 h2", "s0 h3"], ["s1 h0", "s1 h1", "s1 h2", "s1 h3"]],
    )
    init = Weights({"f0": 0.5, "f1": 0.0})
    for optimizer in ("coordinate", "cyclic", "powell"):
        result = Mert(optimizer=optimizer, features=("f1",), normalize="none", n_jobs=1).fit(lists.tuning_set(), init)
        assert (result.score_before, result.score_after) == (-0.25, -0.125), optimizer
        assert result.weights["f1"] < -0.5 and not result.kept_start


# ---------------------------------------------------------------------- every tuner: score_after is real
TUNERS = {
    "mert": lambda: Mert(restarts=2, seed=3, n_jobs=1),
    "mira": lambda: Mira(seed=3, epochs=5),
    "pro": lambda: Trainer(loss="pro", seed=3),
    "pl": lambda: Trainer(loss="pl", seed=3),
    "minrisk": lambda: MinRisk(seed=3),
    "perceptron": lambda: OnlineTrainer(loss="perceptron", seed=3, epochs=3),
}


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("tuner", list(TUNERS))
def test_written_weights_rerank_to_the_reported_score(tuner, seed):
    lists = random_lists(np.random.default_rng(seed), sentences=8, hypotheses=(4, 8), correlated=True)
    tuning_set = lists.tuning_set()
    init = Weights({"f0": 1.0, "f1": -1.0, "f2": 0.5})
    result = TUNERS[tuner]().fit(tuning_set, init)
    assert result.metric == "scores.comet" and result.higher_is_better
    assert result.score_before == pytest.approx(lists.mean_score(lists.vector(init)), abs=1e-12)
    assert lists.mean_score(lists.vector(dict(result.weights))) == pytest.approx(result.score_after, abs=1e-12)
    assert result.score_after >= result.score_before - 1e-12  # no tuner ends below its start (kept_start)


@pytest.mark.parametrize("tuner", ["mert", "pro"])
def test_an_interpolation_of_given_scores_is_tuned_and_reported_as_the_weighted_means(tuner):
    """``scores.a:0.7,scores.b:-0.3`` (a lower-is-better score with a negative weight): the written weights'
    0.7·mean(a) − 0.3·mean(b) of the reranked hypotheses is ``score_after``."""
    lists = random_lists(np.random.default_rng(9), sentences=8, hypotheses=(4, 8), names=("a", "b"), correlated=True)
    result = TUNERS[tuner]().fit(lists.tuning_set("scores.a:0.7,scores.b:-0.3"), Weights({"f0": 1.0, "f1": -1.0}))
    w = lists.vector(dict(result.weights))
    expected = 0.7 * lists.mean_score(w, "a") - 0.3 * lists.mean_score(w, "b")
    assert result.score_after == pytest.approx(expected, abs=1e-12)
    assert result.score_after > result.score_before


# ---------------------------------------------------------------------- minimum risk: the expected score
def expected_score(lists: ScoredLists, w: np.ndarray, gamma: float) -> float:
    """Mean over sentences of Σ p_i s_i, p = softmax(γ · features @ w)."""
    total = 0.0
    for matrix, scores in zip(lists.features, lists.scores, strict=True):
        z = gamma * (matrix @ w)
        p = np.exp(z - z.max())
        total += float(p @ scores["comet"]) / p.sum()
    return total / len(lists.features)


def expected_score_gradient(lists: ScoredLists, w: np.ndarray, gamma: float) -> np.ndarray:
    """∂/∂w of :func:`expected_score`: γ·Cov_p(s, h) per sentence, averaged (the softmax's derivative)."""
    total = np.zeros(w.size)
    for matrix, scores in zip(lists.features, lists.scores, strict=True):
        z = gamma * (matrix @ w)
        p = np.exp(z - z.max())
        p /= p.sum()
        s = scores["comet"]
        total += gamma * (p @ (s[:, None] * matrix) - (p @ s) * (p @ matrix))
    return total / len(lists.features)


@pytest.mark.parametrize(("seed", "gamma"), [(0, 1.0), (1, 0.3), (2, 2.5)])
def test_minrisk_expected_score_and_gradient_against_the_softmax_and_finite_differences(seed, gamma):
    rng = np.random.default_rng(seed)
    lists = random_lists(rng, sentences=5, hypotheses=(2, 6))
    tuning_set = lists.tuning_set()
    w = rng.normal(size=3)
    weights = Weights(dict(zip(lists.names, w.tolist(), strict=True)))
    found = MinRisk(scale=gamma).evaluate(tuning_set, weights)
    assert found.objective == "expected-score"
    assert found.value == pytest.approx(expected_score(lists, w, gamma), rel=1e-10, abs=1e-12)
    analytic = expected_score_gradient(lists, w, gamma)
    h = 1e-6
    for k, name in enumerate(lists.names):
        up, down = w.copy(), w.copy()
        up[k] += h
        down[k] -= h
        numeric = (expected_score(lists, up, gamma) - expected_score(lists, down, gamma)) / (2 * h)
        assert analytic[k] == pytest.approx(numeric, rel=1e-5, abs=1e-8)  # the formula itself
        assert found.gradient.get(name, 0.0) == pytest.approx(numeric, rel=1e-5, abs=1e-8), name
    numeric = (expected_score(lists, w, gamma + h) - expected_score(lists, w, gamma - h)) / (2 * h)
    assert found.scale_gradient == pytest.approx(numeric, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize(("gamma", "temperature"), [(1.0, 0.0), (0.7, 0.5)])
def test_minrisk_training_function_gradient_matches_finite_differences(gamma, temperature):
    """The function L-BFGS minimizes (−expected score − T·H + λ‖w‖²/2) against central differences; without
    entropy and L2 its value is minus the expected score written out."""
    rng = np.random.default_rng(7)
    lists = random_lists(rng, sentences=5, hypotheses=(2, 6))
    tuning_set = lists.tuning_set()
    weights = Weights(dict(zip(lists.names, rng.normal(size=3).tolist(), strict=True)))
    problem = MinRisk(l2=0.1).problem(tuning_set, weights)
    w = problem.start
    value, gradient, scale_gradient, _ = problem.value_and_gradient(w, gamma, temperature)
    plain = MinRisk().problem(tuning_set, weights).value_and_gradient(w, gamma, 0.0)[0]
    assert plain == pytest.approx(-expected_score(lists, lists.vector(dict(weights)), gamma), rel=1e-10)
    h = 1e-6
    for k in range(w.size):
        up, down = w.copy(), w.copy()
        up[k] += h
        down[k] -= h
        numeric = (problem.value_and_gradient(up, gamma, temperature)[0]
                   - problem.value_and_gradient(down, gamma, temperature)[0]) / (2 * h)  # fmt: skip
        assert gradient[k] == pytest.approx(numeric, rel=1e-5, abs=1e-8)
    numeric = (problem.value_and_gradient(w, gamma + h, temperature)[0]
               - problem.value_and_gradient(w, gamma - h, temperature)[0]) / (2 * h)  # fmt: skip
    assert scale_gradient == pytest.approx(numeric, rel=1e-5, abs=1e-8)


# ---------------------------------------------------------------------- gains: what the tuners see
def distinct_lists(seed: int) -> ScoredLists:
    """Random lists whose hypotheses all differ in features (the last feature is the hypothesis index), so
    that no tuner drops a repeated one."""
    lists = random_lists(np.random.default_rng(seed), sentences=5, hypotheses=(2, 6))
    for matrix in lists.features:
        matrix[:, -1] = np.arange(matrix.shape[0])
    return lists


@pytest.mark.parametrize("smooth", ["plus1", "nakov"])
def test_pro_pl_and_the_online_losses_see_the_scores_as_gains(smooth):
    lists = distinct_lists(0)
    tuning_set = lists.tuning_set()
    candidates = kbest_candidates(tuning_set, np.zeros(3), smooth=smooth)
    np.testing.assert_array_equal(candidates.gains, np.concatenate([s["comet"] for s in lists.scores]))
    np.testing.assert_array_equal(np.diff(candidates.offsets), [m.shape[0] for m in lists.features])
    np.testing.assert_array_equal(candidates.features.toarray(), np.vstack(lists.features))


def test_mira_sees_the_scores_as_gains():
    lists = distinct_lists(1)
    tuning_set = lists.tuning_set()
    pack = KbestPack.from_tuning_set(tuning_set, HopeFearDecoder(tuning_set))
    gains = gain_for(tuning_set.metric, "background").score(pack.stats)  # MIRA's gain (mira.py: gain_for)
    np.testing.assert_array_equal(gains, np.concatenate([s["comet"] for s in lists.scores]))


def test_ter_gains_are_minus_sacrebleus_sentence_ter():
    rng = np.random.default_rng(4)
    words = ["the", "a", "house", "is", "small", "big", "old"]
    lists = random_lists(rng, sentences=4, hypotheses=(2, 4))
    lists.texts = [[" ".join(rng.choice(words, size=int(rng.integers(2, 7)))) for _ in m] for m in lists.features]
    references = [[" ".join(rng.choice(words, size=int(rng.integers(3, 7))))] for _ in lists.features]
    tuning_set = lists.tuning_set(TerMetric(), references)
    candidates = kbest_candidates(tuning_set, np.zeros(3))
    expected = [
        -sacrebleu.sentence_ter(h, r).score / 100 for t, r in zip(lists.texts, references, strict=True) for h in t
    ]
    np.testing.assert_allclose(candidates.gains, expected, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------- oracle
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kbest_oracle_is_the_best_scoring_hypothesis(seed):
    """Each sentence's max-score hypothesis; ties to the higher model score, then the greater string
    (docs/oracle.md); the corpus value is the mean of the max scores. Integer features and weights and scores in
    quarters make ties of both kinds common."""
    rng = np.random.default_rng(seed)
    lists = random_lists(rng, sentences=8, hypotheses=(2, 8))
    w = rng.integers(-1, 2, size=3).astype(np.float64)
    result = OracleSearch(method="kbest").run(lists.tuning_set(), Weights(dict(zip(lists.names, w, strict=True))))
    expected = []
    for matrix, scores, texts in zip(lists.features, lists.scores, lists.texts, strict=True):
        s, model = scores["comet"], matrix @ w
        top = [i for i in range(s.size) if s[i] == s.max()]
        top = [i for i in top if model[i] == max(model[top])]
        expected.append(max(texts[i] for i in top))
    assert [o.text for o in result.oracles] == expected
    best = [s["comet"].max() for s in lists.scores]
    assert [o.score for o in result.oracles] == pytest.approx(best, abs=1e-15)
    assert result.bleu == pytest.approx(np.mean(best), abs=1e-12)


# ---------------------------------------------------------------------- errors, in one line
def one_line(error: BaseException) -> str:
    message = str(error)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_a_lattice_is_refused_with_a_given_score():
    builder = HypergraphBuilder(FeatureSpace(), Vocabulary())
    start, middle, goal = builder.add_nodes(3)
    builder.add_edge(start, (), None, [])
    builder.add_edge(middle, [start], {"f0": 1.0}, [0, "a"])
    builder.add_edge(middle, [start], {"f0": 2.0}, [0, "b"])
    builder.add_edge(goal, [middle], {"f1": 1.0}, [0, "c"])
    lattice = builder.build(goal, sentence_id=0)
    assert not lattice.is_kbest
    with pytest.raises(InputError) as caught:
        TuningSet.from_corpus([lattice], None, GivenScore("comet"))
    assert "lattice or forest" in one_line(caught.value) and "scores.comet" in str(caught.value)


def test_a_missing_score_name_is_named():
    lists = random_lists(np.random.default_rng(0), sentences=2)
    with pytest.raises(InputError) as caught:
        lists.tuning_set("scores.bleurt")
    message = one_line(caught.value)
    assert "'bleurt'" in message and "comet" in message
    plain = [g.annotated(edge_scores=None) for g in lists.graphs()]
    with pytest.raises(InputError) as caught:
        TuningSet.from_corpus(plain, None, GivenScore("comet"))
    assert "carry no scores" in one_line(caught.value)


def test_linear_bleu_objective_is_refused_with_a_given_score():
    lists = random_lists(np.random.default_rng(0), sentences=3)
    init = Weights({"f0": 1.0})
    tuner = MinRisk(objective="linear-bleu", linear_p=0.5, linear_r=0.5)
    for call in (tuner.fit, tuner.evaluate):
        with pytest.raises(UsageError) as caught:
            call(lists.tuning_set(), init)
        assert "--objective linear-bleu needs BLEU statistics" in one_line(caught.value)


# ---------------------------------------------------------------------- the command line
def write_inputs(lists: ScoredLists, folder) -> tuple[str, str, str]:
    """A Moses n-best list, its score file (one line per hypothesis, in order) and start weights."""
    nbest, scores, init = folder / "nbest.txt", folder / "scores.txt", folder / "init.weights"
    lines, rows = [], []
    for s, (matrix, sc, texts) in enumerate(zip(lists.features, lists.scores, lists.texts, strict=True)):
        for row, value, text in zip(matrix, sc["comet"], texts, strict=True):
            features = " ".join(f"{n}= {v:g}" for n, v in zip(lists.names, row, strict=True))
            lines.append(f"{s} ||| {text} ||| {features} ||| 0")
            rows.append(f"comet={float(value)!r} other=1")
    nbest.write_text("\n".join(lines) + "\n")
    scores.write_text("\n".join(rows) + "\n")
    init.write_text("f0= 1\nf1= -1\nf2= 0.5\n")
    return str(nbest), str(scores), str(init)


def test_cli_tunes_on_a_given_score_without_references(tmp_path, capsys):
    lists = random_lists(np.random.default_rng(3), sentences=6, correlated=True)
    nbest, scores, init = write_inputs(lists, tmp_path)
    code = main(["mert", nbest, "--scores", scores, "--metric", "scores.comet", "--init", init, "--restarts", "2",
                 "--seed", "1", "--json"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["metric"] == "scores.comet"
    assert report["score_before"] == pytest.approx(lists.mean_score(np.array([1.0, -1.0, 0.5])), abs=1e-12)
    assert set(lists.names) <= set(report["weights"])
    written = lists.vector(report["weights"])
    assert lists.mean_score(written) == pytest.approx(report["score_after"], abs=1e-12)


def test_cli_without_references_for_bleu_says_they_are_required(tmp_path, capsys):
    nbest, _, init = write_inputs(random_lists(np.random.default_rng(3), sentences=2), tmp_path)
    code = main(["mert", nbest, "--init", init])
    err = capsys.readouterr().err
    assert code == 2
    assert "--refs is required" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_refuses_linear_bleu_with_a_given_score_in_one_line(tmp_path, capsys):
    nbest, scores, init = write_inputs(random_lists(np.random.default_rng(3), sentences=2), tmp_path)
    code = main(["minrisk", nbest, "--scores", scores, "--metric", "scores.comet", "--init", init,
                 "--objective", "linear-bleu", "--linear-p", "0.5", "--linear-r", "0.5"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert "needs BLEU statistics" in err and len(err.strip().splitlines()) == 1
