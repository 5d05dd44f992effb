"""Minimum risk and expected BLEU: expectations and their gradients against enumeration, the second-order
expectation semiring and finite differences; forest objectives against the forest's complete k-best list;
training and the command line."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.paths import FIXTURES
from support.strategies import hypergraphs

from hypertune.algorithms import enumerate_derivations, inside
from hypertune.algorithms.expectations import inside_outside, score_gradient
from hypertune.algorithms.kbest import LazyKBest
from hypertune.cli import main
from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.hypergraph import PackedGraphs, from_kbest
from hypertune.metrics import BleuMetric
from hypertune.metrics.bleu import bleu_plus_one
from hypertune.semirings import SecondOrderExpectationSemiring
from hypertune.tuners import TuningSet
from hypertune.tuners.minrisk import MinRisk
from hypertune.tuners.minrisk_options import Annealing, MinRiskOptions
from hypertune.tuners.options import OptionError
from hypertune.weights import Weights

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REFS = str(FIXTURES / "mert" / "ref.")
INIT = str(FIXTURES / "mert" / "init.weights")
CDEC_WEIGHTS = {
    "WordPenalty": 4.25,
    "LanguageModel": -1.1165,
    "PhraseModel_0": -0.96,
    "PhraseModel_1": -0.65,
    "PhraseModel_2": -0.77,
}


def derivation_edges(derivation) -> list[int]:
    edges, stack = [], [derivation]
    while stack:
        node = stack.pop()
        edges.append(node.edge)
        stack.extend(node.children)
    return edges


# ---------------------------------------------------------------------- the engine: E[Q] and ∂E[Q]/∂s
def brute_expectation(hg, scores: np.ndarray, q: np.ndarray) -> tuple[float, float]:
    paths = [derivation_edges(d) for d in enumerate_derivations(hg)]
    total = np.array([scores[p].sum() for p in paths])
    values = np.array([q[p].sum() for p in paths])
    top = total.max()
    p = np.exp(total - top)
    return float(p @ values / p.sum()), float(top + np.log(p.sum()))


@given(hypergraphs(max_nodes=6), st.integers(0, 2**31 - 1))
def test_expectation_and_its_score_gradient_match_enumeration_and_finite_differences(hg, seed):
    rng = np.random.default_rng(seed)
    scores, q = rng.normal(size=hg.num_edges), rng.normal(size=hg.num_edges)
    packed = PackedGraphs.pack([hg])
    io = inside_outside(packed, scores)
    expected, log_z = brute_expectation(hg, scores, q)
    assert io.log_partition[0] == pytest.approx(log_z, rel=1e-9, abs=1e-9)
    assert io.totals(q) == pytest.approx(expected, rel=1e-9, abs=1e-9)
    gradient = score_gradient(packed, io, q)
    h = 1e-5
    for e in range(hg.num_edges):
        up, down = scores.copy(), scores.copy()
        up[e] += h
        down[e] -= h
        numeric = (brute_expectation(hg, up, q)[0] - brute_expectation(hg, down, q)[0]) / (2 * h)
        assert gradient[e] == pytest.approx(numeric, abs=1e-6)


def test_packed_graphs_keep_their_own_distributions():
    rng = np.random.default_rng(3)
    from hypertune.generate import random_hypergraph

    first = random_hypergraph(40, seed=1, num_features=3)
    second = random_hypergraph(
        30, seed=2, num_features=3, feature_space=first.feature_space, vocabulary=first.vocabulary
    )
    packed = PackedGraphs.pack([first, second])
    scores, q = rng.normal(size=packed.num_edges), rng.normal(size=packed.num_edges)
    io = inside_outside(packed, scores)
    gradient = score_gradient(packed, io, q)
    cut = first.num_edges
    for k, (hg, part) in enumerate(((first, slice(0, cut)), (second, slice(cut, None)))):
        alone = PackedGraphs.pack([hg])
        io_alone = inside_outside(alone, scores[part])
        assert io.log_partition[k] == pytest.approx(io_alone.log_partition[0], rel=1e-12)
        np.testing.assert_allclose(gradient[part], score_gradient(alone, io_alone, q[part]), atol=1e-12)


def test_covariance_agrees_with_the_second_order_expectation_semiring():
    """Li & Eisner 2009, Table 1: with edge values <p, p q, p f, p q fᵀ> the goal gets t = Σ p(d) Q(d) f(d);
    Cov(Q, f) = t/Z - (r/Z)(s/Z) is the gradient's edge-feature sum computed the other way."""
    from hypertune.generate import random_hypergraph

    hg = random_hypergraph(60, seed=7, num_features=4)
    rng = np.random.default_rng(1)
    w = rng.normal(scale=0.3, size=len(hg.feature_space))
    features = hg.feature_matrix().toarray()
    scores = features @ w
    q = rng.normal(size=hg.num_edges)
    semiring = SecondOrderExpectationSemiring(1, features.shape[1])
    values = [semiring.edge_value(math.exp(scores[e]), q[e : e + 1], features[e]) for e in range(hg.num_edges)]
    z, r, s, t = inside(hg, semiring, values, engine="generic")[hg.goal]
    covariance = t[0] / z - (r[0] / z) * (s / z)
    io = inside_outside(PackedGraphs.pack([hg]), scores)
    np.testing.assert_allclose(features.T @ score_gradient(PackedGraphs.pack([hg]), io, q), covariance, atol=1e-10)


# ---------------------------------------------------------------------- objectives on k-best lists
def fixture_set() -> TuningSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TuningSet.from_corpus(read_graphs(NBEST), read_references(REFS), BleuMetric(tokenize="none"))


def brute_kbest(tuning_set: TuningSet, w: np.ndarray, gamma: float, objective: str) -> tuple[float, float]:
    """The objective and the mean entropy written out directly: a softmax per list, BLEU+1 / corpus BLEU of
    expected statistics / linear BLEU with given p and r from the statistics."""
    losses, entropies, totals, gains = [], [], 0.0, []
    theta = np.array([-1.0] + [1 / (4 * 0.5 * 0.5 ** (n - 1)) for n in range(1, 5)])
    unclipped = TuningSet(
        tuning_set.graphs, tuning_set.references, BleuMetric(tokenize="none", clip=False), tuning_set.sentence_ids
    )
    for s, hg in enumerate(tuning_set.graphs):
        scores = gamma * (hg.feature_matrix(w.size) @ w)[1:]
        p = np.exp(scores - scores.max())
        p /= p.sum()
        stats = tuning_set.edge_stats(s)[1:]
        losses.append(p @ np.array([1 - bleu_plus_one(row, 4) for row in stats]))
        entropies.append(-(p * np.log(p)).sum())
        totals = totals + p @ stats
        plain = unclipped.edge_stats(s)[1:]
        gains.append(p @ (theta[0] * plain[:, 1] + plain[:, 0:8:2] @ theta[1:]))
    if objective == "risk":
        return float(np.mean(losses)), float(np.mean(entropies))
    if objective == "linear-bleu":
        return float(np.mean(gains)), float(np.mean(entropies))
    m, c, r = totals[0:8:2], totals[1:8:2], totals[8]
    bleu = math.exp(np.mean(np.log(m) - np.log(c)) + min(0.0, 1 - r / c[0]))
    return bleu, float(np.mean(entropies))


@pytest.mark.parametrize("objective", ["xbleu", "risk", "linear-bleu"])
@pytest.mark.parametrize("gamma", [0.3, 1.0])
def test_kbest_objectives_and_gradients(objective, gamma):
    tuning_set = fixture_set()
    weights = read_weights(INIT)
    names = tuning_set.feature_space.names
    w = weights.vector(tuning_set.feature_space, len(names))
    options = {"linear_p": 0.5, "linear_r": 0.5} if objective == "linear-bleu" else {}
    found = MinRisk(objective=objective, scale=gamma, **options).evaluate(tuning_set, weights)
    value, entropy = brute_kbest(tuning_set, w, gamma, objective)
    assert found.value == pytest.approx(value, rel=1e-10)
    assert found.entropy == pytest.approx(entropy, rel=1e-10)
    h = 1e-6
    for k, name in enumerate(names):
        up, down = w.copy(), w.copy()
        up[k] += h
        down[k] -= h
        numeric = (
            brute_kbest(tuning_set, up, gamma, objective)[0] - brute_kbest(tuning_set, down, gamma, objective)[0]
        ) / (2 * h)
        assert found.gradient.get(name, 0.0) == pytest.approx(numeric, rel=1e-4, abs=1e-7), name
    numeric = (
        brute_kbest(tuning_set, w, gamma + h, objective)[0] - brute_kbest(tuning_set, w, gamma - h, objective)[0]
    ) / (2 * h)
    assert found.scale_gradient == pytest.approx(numeric, rel=1e-4, abs=1e-7)


@given(
    st.sampled_from(["xbleu", "risk", "linear-bleu"]), st.floats(0.05, 2.0), st.floats(0.0, 3.0), st.integers(0, 1000)
)
def test_training_gradient_with_entropy_and_l2_matches_finite_differences(objective, gamma, temperature, seed):
    """The function L-BFGS minimizes, L - T·H + λ‖w‖²/2, against central differences at random weights."""
    tuning_set = fixture_set()
    rng = np.random.default_rng(seed)
    names = tuning_set.feature_space.names
    weights = Weights(dict(zip(names, rng.normal(scale=0.5, size=len(names)), strict=True)))
    problem = MinRisk(objective=objective, l2=0.1, linear_p=0.4, linear_r=0.6).problem(tuning_set, weights)

    def value(w, g):
        return problem.value_and_gradient(w, g, temperature)[0]

    w = problem.start
    _, gradient, scale_gradient, _ = problem.value_and_gradient(w, gamma, temperature)
    h = 1e-6
    for k in range(len(names)):
        up, down = w.copy(), w.copy()
        up[k] += h
        down[k] -= h
        assert gradient[k] == pytest.approx((value(up, gamma) - value(down, gamma)) / (2 * h), rel=1e-4, abs=1e-6)
    numeric = (value(w, gamma + h) - value(w, gamma - h)) / (2 * h)
    assert scale_gradient == pytest.approx(numeric, rel=1e-4, abs=1e-6)


# ---------------------------------------------------------------------- forests
def cdec_forest(shared, name: str = "training_dpmert_test_data_0.json.gz"):
    forests = shared / "cdec" / "forests"
    graphs = read_graphs(str(forests / name))
    references = read_references([str(forests / f"lo_test.ref.{i}") for i in range(4)])
    return TuningSet.from_corpus(graphs, references[:1], BleuMetric(tokenize="none"))


def complete_kbest(tuning_set: TuningSet, weights: Weights) -> TuningSet:
    """The forest written out as its complete k-best list: every derivation, duplicates kept."""
    hg = tuning_set.graphs[0]
    search = LazyKBest(hg, weights.edge_scores(hg))
    names = hg.feature_space.names
    rows = []
    for _, d in search.best(10**6):
        v = hg.derivation_features(d)
        rows.append((hg.vocabulary.words(hg.derivation_yield(d)), {names[i]: float(v[i]) for i in np.flatnonzero(v)}))
    listed = from_kbest(rows, hg.feature_space, hg.vocabulary)
    return TuningSet([listed], tuning_set.references, BleuMetric(tokenize="none"))


@pytest.mark.parametrize("gamma", [0.1, 1.0])
def test_forest_objectives_against_the_complete_kbest_list(shared, gamma):
    """cdec's forest 0 (7,633 derivations): linear BLEU, entropy and their gradients are exact on the forest;
    forest xbleu (clipping applied to expected counts) stays within 2 % of the exact value."""
    forest = cdec_forest(shared)
    weights = Weights(CDEC_WEIGHTS)
    listed = complete_kbest(forest, weights)
    assert listed.graphs[0].num_edges - 1 == 7633
    options = {"linear_p": 0.6, "linear_r": 0.6}
    a = MinRisk(objective="linear-bleu", scale=gamma, **options).evaluate(forest, weights)
    b = MinRisk(objective="linear-bleu", scale=gamma, **options).evaluate(listed, weights)
    assert a.value == pytest.approx(b.value, rel=1e-10)
    assert a.entropy == pytest.approx(b.entropy, rel=1e-10)
    assert a.scale_gradient == pytest.approx(b.scale_gradient, rel=1e-9)
    for name in set(a.gradient) | set(b.gradient):
        assert a.gradient.get(name, 0.0) == pytest.approx(b.gradient.get(name, 0.0), rel=1e-8, abs=1e-12)
    x = MinRisk(objective="xbleu", scale=gamma).evaluate(forest, weights)
    y = MinRisk(objective="xbleu", scale=gamma).evaluate(listed, weights)
    assert x.value == pytest.approx(y.value, rel=0.02)
    assert x.value >= y.value - 1e-12  # clipping expected counts can only overestimate clipped matches


def test_forest_risk_with_every_derivation_extracted_is_exact(shared):
    forest = cdec_forest(shared, "decoder_test_data_small.json.gz")
    weights = Weights({"LanguageModel": 0.2, "PhraseModel_0": 0.3, "WordPenalty": -0.1})
    listed = complete_kbest(forest, weights)
    assert listed.graphs[0].num_edges - 1 == 166
    a = MinRisk(objective="risk", kbest=10**4).evaluate(forest, weights)
    b = MinRisk(objective="risk").evaluate(listed, weights)
    assert a.value == pytest.approx(b.value, rel=1e-12)


def test_forest_xbleu_gradient_matches_finite_differences(shared):
    forest = cdec_forest(shared, "decoder_test_data_small.json.gz")
    names = forest.feature_space.names
    weights = Weights({name: 0.1 * (k % 3 - 1) for k, name in enumerate(names)})
    found = MinRisk(objective="xbleu").evaluate(forest, weights)
    h = 1e-6
    for name in names:
        up, down = Weights(weights), Weights(weights)
        up[name] = weights.get(name, 0.0) + h
        down[name] = weights.get(name, 0.0) - h
        numeric = (
            MinRisk(objective="xbleu").evaluate(forest, up).value
            - MinRisk(objective="xbleu").evaluate(forest, down).value
        ) / (2 * h)
        assert found.gradient.get(name, 0.0) == pytest.approx(numeric, rel=1e-4, abs=1e-8), name


# ---------------------------------------------------------------------- training
def test_training_improves_the_objective_and_is_reproducible():
    tuning_set = fixture_set()
    for objective in ("xbleu", "risk", "linear-bleu"):
        first = MinRisk(objective=objective, l2=0.01).fit(tuning_set, read_weights(INIT))
        again = MinRisk(objective=objective, l2=0.01).fit(tuning_set, read_weights(INIT))
        assert dict(first.weights) == dict(again.weights)
        better = (
            first.objective_after <= first.objective_before
            if objective == "risk"
            else first.objective_after >= first.objective_before
        )
        assert better, objective
        assert first.history and first.history[-1].iteration == len(first.history)


def test_fixed_features_and_bounds_hold():
    tuning_set = fixture_set()
    init = read_weights(INIT)
    names = tuning_set.feature_space.names
    result = MinRisk(fixed=[names[0]], bounds={names[1]: (-0.05, 0.05)}, normalize="none").fit(tuning_set, init)
    assert not result.kept_start  # the start breaks the bounds: no candidate
    assert result.weights[names[0]] == init.get(names[0], 0.0)
    assert -0.05 <= result.weights[names[1]] <= 0.05


def test_annealing_schedule_halves_t_then_doubles_the_scale():
    steps = Annealing(start=8, factor=0.5, floor=1, quench_max=8).schedule(1.0)
    assert steps == [(8, 1.0), (4, 1.0), (2, 1.0), (1, 1.0), (0.0, 2.0), (0.0, 4.0), (0.0, 8.0)]
    with pytest.raises(Exception, match="START:FACTOR:FLOOR"):
        Annealing.parse("1000:0.5")


def test_an_annealing_spec_and_an_annealing_object_are_one_schedule():
    """The options hold the spec and quench_max (the command line's values); an Annealing is taken apart."""
    given = MinRiskOptions(anneal=Annealing(10, 0.25, 0.1, 4))
    assert (given.anneal, given.quench_max) == ("10.0:0.25:0.1", 4.0)
    spec = MinRiskOptions(anneal="10:0.25:0.1", quench_max=4)
    assert spec.annealing == given.annealing == Annealing(10, 0.25, 0.1, 4)
    assert MinRiskOptions().annealing is None


@pytest.mark.parametrize(
    ("fields", "flags", "in_names", "in_flags"),
    [
        (
            {"anneal": "10:0.5:1", "entropy": 1.0},
            ["--anneal", "10:0.5:1", "--entropy", "1"],
            "annealing sets T and γ itself: give anneal without entropy and optimize_scale",
            "annealing sets T and γ itself: give --anneal without --entropy and --optimize-scale",
        ),
        (
            {"l1": 0.1, "bounds": {"LM0": (-1.0, 1.0)}},
            ["--l1", "0.1", "--bounds", "LM0=-1:1"],
            "l1 (OWL-QN) takes no bounds and no optimize_scale",
            "--l1 (OWL-QN) takes no --bounds and no --optimize-scale",
        ),
        (
            {"anneal": "10:0.5"},
            ["--anneal", "10:0.5"],
            "anneal '10:0.5': expected START:FACTOR:FLOOR, e.g. 1000:0.5:0.001",
            "--anneal '10:0.5': expected START:FACTOR:FLOOR, e.g. 1000:0.5:0.001",
        ),
        (
            {"anneal": "inf:0.5:1"},  # an endless schedule
            ["--anneal", "inf:0.5:1"],
            "anneal needs finite START > 0, 0 < FACTOR < 1, 0 < FLOOR <= START and a positive quench_max "
            "(got inf:0.5:1.0, quench to 64.0)",
            "--anneal needs finite START > 0, 0 < FACTOR < 1, 0 < FLOOR <= START and a positive --quench-max "
            "(got inf:0.5:1.0, quench to 64.0)",
        ),
    ],
)
def test_options_refuse_a_bad_combination_in_names_and_the_command_in_flags(fields, flags, in_names, in_flags, capsys):
    with pytest.raises(OptionError) as refused:
        MinRisk(**fields)
    assert str(refused.value) == in_names
    assert main(["minrisk", NBEST, "--refs", REFS, "--init", INIT, *flags]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"hypertune minrisk: error: {in_flags}"


def test_annealed_training_keeps_the_weights_with_the_best_unregularized_objective():
    tuning_set = fixture_set()
    result = MinRisk(objective="risk", anneal=Annealing(10, 0.25, 0.1, 4), normalize="none").fit(
        tuning_set, read_weights(INIT)
    )
    assert not result.kept_start
    temperatures = {entry.temperature for entry in result.history}
    assert {10, 2.5, 0.625, 0.15625, 0.0} <= temperatures
    direct = MinRisk(objective="risk", scale=result.scale).evaluate(tuning_set, result.weights)
    assert direct.value == pytest.approx(result.objective_after, rel=1e-12)
    assert result.objective_after <= min(e.value for e in result.history if e.temperature == 0.0) + 1e-12


# ---------------------------------------------------------------------- command line
def test_cli_evaluate_json(capsys):
    code = main(["minrisk", NBEST, "--refs", REFS, "--init", INIT, "--evaluate", "--json"])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert {"objective", "xbleu", "entropy", "gradient", "scale_gradient", "sentences"} <= set(payload)
    tuning_set = fixture_set()
    w = read_weights(INIT).vector(tuning_set.feature_space, len(tuning_set.feature_space))
    xbleu, entropy = brute_kbest(tuning_set, w, 1.0, "xbleu")  # written out directly, not the tuner's code
    assert payload["objective"] == pytest.approx(xbleu, rel=1e-10)
    assert payload["entropy"] == pytest.approx(entropy, rel=1e-10)
    assert payload["sentences"] == 5


def test_cli_trains_and_writes_weights(tmp_path, capsys):
    out = tmp_path / "w"
    code = main(["minrisk", NBEST, "--refs", REFS, "--init", INIT, "--objective", "risk", "--out", str(out), "--json",
                 "--normalize", "none"])  # fmt: skip
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["objective"] == "risk" and payload["output"] == str(out)
    tuning_set = fixture_set()
    space, width = tuning_set.feature_space, len(tuning_set.feature_space)
    written = read_weights(str(out)).vector(space, width)
    start = read_weights(INIT).vector(space, width)
    # the written weights have the lower risk, computed directly; the JSON reports that risk and those weights
    assert brute_kbest(tuning_set, written, 1.0, "risk")[0] < brute_kbest(tuning_set, start, 1.0, "risk")[0]
    assert payload["objective_after"] == pytest.approx(brute_kbest(tuning_set, written, 1.0, "risk")[0], rel=1e-9)
    assert payload["weights"] == pytest.approx(dict(read_weights(str(out))))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--anneal", "10:0.5:1", "--entropy", "1"], "annealing sets T"),
        (["--anneal", "10:2:1"], "0 < FACTOR < 1"),
        (["--metric", "ter", "--objective", "linear-bleu"], "needs BLEU statistics"),
        (["--linear-p", "0.5", "--objective", "linear-bleu"], "both --linear-p and --linear-r"),
        (["--evaluate", "--out", "x"], "writes no weights"),
    ],
)
def test_cli_refuses_options_that_do_not_fit(extra, message, capsys):
    code = main(["minrisk", NBEST, "--refs", REFS, "--init", INIT, *extra])
    assert code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("objective", ["xbleu", "risk", "linear-bleu"])
def test_forest_training_function_with_entropy_matches_finite_differences(shared, objective):
    """On a real cdec forest (166 derivations), the function L-BFGS minimizes, entropy and L2 included."""
    forest = cdec_forest(shared, "decoder_test_data_small.json.gz")
    names = forest.feature_space.names
    weights = Weights({name: 0.2 * (k % 3 - 1) for k, name in enumerate(names)})
    problem = MinRisk(objective=objective, l2=0.05, linear_p=0.5, linear_r=0.5).problem(forest, weights)
    w = problem.start
    _, gradient, scale_gradient, _ = problem.value_and_gradient(w, 0.8, 0.7)
    h = 1e-6
    for k in range(len(names)):
        up, down = w.copy(), w.copy()
        up[k] += h
        down[k] -= h
        numeric = (problem.value_and_gradient(up, 0.8, 0.7)[0] - problem.value_and_gradient(down, 0.8, 0.7)[0]) / (
            2 * h
        )
        assert gradient[k] == pytest.approx(numeric, rel=1e-4, abs=1e-7), names[k]
    numeric = (problem.value_and_gradient(w, 0.8 + h, 0.7)[0] - problem.value_and_gradient(w, 0.8 - h, 0.7)[0]) / (
        2 * h
    )
    assert scale_gradient == pytest.approx(numeric, rel=1e-4, abs=1e-7)


def test_featstat_input_gradient_matches_finite_differences(shared):
    """Moses extractor output (10 sentences x 100 hypotheses, statistics precomputed)."""
    from hypertune.formats.extractor import read_featstat
    from hypertune.symbols import FeatureSpace, Vocabulary

    folder = shared / "moses" / "featstat-10x100"
    graphs = read_featstat(str(folder / "FEATSTAT.txt"), FeatureSpace(), Vocabulary(), str(folder / "SCORESTAT.txt"))
    tuning_set = TuningSet.from_corpus(graphs, None, BleuMetric())
    names = tuning_set.feature_space.names
    weights = Weights({name: 0.05 * (k % 5 - 2) for k, name in enumerate(names)})

    def risk(w: Weights) -> float:
        return MinRisk(objective="risk", scale=0.5).evaluate(tuning_set, w).value

    found = MinRisk(objective="risk", scale=0.5).evaluate(tuning_set, weights)
    h = 1e-6
    for name in names:
        up, down = Weights(weights), Weights(weights)
        up[name] += h
        down[name] -= h
        assert found.gradient[name] == pytest.approx((risk(up) - risk(down)) / (2 * h), rel=1e-4, abs=1e-8), name


def test_l1_by_owlqn_reaches_the_optimality_conditions():
    """With --l1 the end point satisfies the L1 optimality conditions of L + λ‖w‖²/2 + l1‖w‖₁ over the free
    weights (the risk's gradient from the trainer's own function; zeros exactly zero)."""
    tuning_set = fixture_set()
    options = MinRisk(objective="risk", l1=0.05, l2=0.01, iterations=500, tolerance=1e-14, normalize="none")
    poor = Weights({"LM0": -0.1, "TM0_0": 0.2, "TM0_1": 0.2, "WordPenalty0": 0.3})  # the end point beats it
    result = options.fit(tuning_set, poor)
    assert not result.kept_start
    problem = options.problem(tuning_set, poor)
    w = result.weights.vector(tuning_set.feature_space, len(tuning_set.feature_space))
    _, gradient, _, _ = problem.value_and_gradient(w, 1.0)
    free = problem.free
    x, g = w[free], gradient[free]
    assert np.any(x == 0.0)
    assert np.all(np.abs(g[x != 0] + 0.05 * np.sign(x[x != 0])) < 1e-3)
    assert np.all(np.abs(g[x == 0]) <= 0.05 + 1e-3)
