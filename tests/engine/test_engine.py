"""The engine against brute force: every algorithm on random small hypergraphs and lattices."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies import hypergraphs, weights

from hypertune import algorithms as A
from hypertune.algorithms import count_derivations
from hypertune.generate import random_hypergraph
from hypertune.hypergraph import Derivation, Hypergraph
from hypertune.semirings import (
    BooleanSemiring,
    ExpectationSemiring,
    KBestSemiring,
    LogSemiring,
    RealSemiring,
    SecondOrderExpectationSemiring,
    Semiring,
    TropicalSemiring,
)
from hypertune.weights import Weights

graphs = st.one_of(hypergraphs(), hypergraphs(lattice=True), hypergraphs(max_arity=3, max_nodes=5))


def enumerated(hg: Hypergraph, w: Weights) -> tuple[list[Derivation], np.ndarray]:
    derivations = A.enumerate_derivations(hg)
    scores = w.edge_scores(hg)
    return derivations, np.array([scores[d.edges()].sum() for d in derivations])


@given(graphs, weights)
def test_inside_is_the_sum_over_derivations(hg, w):
    derivations, scores = enumerated(hg, w)
    assert len(derivations) == count_derivations(hg)
    for engine in ("generic", "compiled"):
        log_z = A.inside(hg, LogSemiring(), w.edge_scores(hg), engine)[hg.goal]
        assert log_z == pytest.approx(np.logaddexp.reduce(scores), rel=1e-9, abs=1e-9)
        z = A.inside(hg, RealSemiring(), np.exp(w.edge_scores(hg)), engine)[hg.goal]
        assert z == pytest.approx(np.exp(scores).sum(), rel=1e-9)
        assert A.inside(hg, BooleanSemiring(), np.ones(hg.num_edges), engine)[hg.goal] == 1


@given(graphs, weights)
def test_viterbi_is_the_best_derivation(hg, w):
    derivations, scores = enumerated(hg, w)
    best = A.viterbi(hg, w)
    assert best.score == pytest.approx(scores.max(), abs=1e-9)
    assert w.edge_scores(hg)[best.derivation.edges()].sum() == pytest.approx(best.score, abs=1e-9)
    generic_score, generic = A.best_derivation(hg, TropicalSemiring(), w.edge_scores(hg), engine="generic")
    assert generic_score == pytest.approx(best.score, abs=1e-12)
    assert generic == best.derivation
    vector = hg.derivation_features(best.derivation)
    assert best.score == pytest.approx(float(vector @ w.vector(hg.feature_space)), abs=1e-9)


@given(graphs, weights, st.integers(1, 12))
def test_kbest_equals_the_enumerated_top_k(hg, w, k):
    derivations, scores = enumerated(hg, w)
    found = A.kbest(hg, w, k)
    expected = np.sort(scores)[::-1][:k]
    assert [d.score for d in found] == pytest.approx(list(expected), abs=1e-9)
    assert len({d.derivation for d in found}) == len(found)
    for d in found:
        assert w.edge_scores(hg)[d.derivation.edges()].sum() == pytest.approx(d.score, abs=1e-9)
    semiring = KBestSemiring(k)
    eager = A.inside(hg, semiring, [semiring.edge_value(e, s) for e, s in enumerate(w.edge_scores(hg))])[hg.goal]
    assert [s for s, _ in eager] == pytest.approx(list(expected), abs=1e-9)


@given(graphs, weights, st.integers(1, 8))
def test_unique_kbest_keeps_the_best_derivation_of_each_string(hg, w, k):
    derivations, scores = enumerated(hg, w)
    best_by_yield: dict[tuple[int, ...], float] = {}
    for d, s in zip(derivations, scores, strict=True):
        words = tuple(hg.derivation_yield(d))
        best_by_yield[words] = max(s, best_by_yield.get(words, -math.inf))
    found = A.kbest(hg, w, k, unique=True)
    assert [d.score for d in found] == pytest.approx(sorted(best_by_yield.values(), reverse=True)[:k], abs=1e-9)
    assert len({tuple(d.words) for d in found}) == len(found)


@given(graphs, weights)
def test_posteriors_and_marginals_are_consistent(hg, w):
    derivations, scores = enumerated(hg, w)
    probabilities = np.exp(scores - np.logaddexp.reduce(scores))
    expected_counts = np.zeros(hg.num_edges)
    for d, p in zip(derivations, probabilities, strict=True):
        np.add.at(expected_counts, d.edges(), p)
    for engine in ("generic", "compiled"):
        posteriors = A.edge_posteriors(hg, w, engine)
        np.testing.assert_allclose(posteriors, expected_counts, atol=1e-9)
        goal_edges = list(hg.in_edges(hg.goal))
        assert posteriors[goal_edges].sum() == pytest.approx(1.0)
        marginals = A.node_marginals(hg, w, engine)
        assert marginals[hg.goal] == pytest.approx(1.0)


@given(graphs, weights)
def test_outside_generic_equals_compiled(hg, w):
    scores = w.edge_scores(hg)
    for semiring, values in (
        (LogSemiring(), scores),
        (RealSemiring(), np.exp(scores)),
        (TropicalSemiring(), scores),
        (BooleanSemiring(), np.ones(hg.num_edges)),
    ):
        fast = A.outside(hg, semiring, values, engine="compiled")
        slow = A.outside(hg, semiring, values, engine="generic")
        np.testing.assert_allclose(fast, np.array(slow, dtype=float), rtol=1e-9, atol=1e-12)


@given(graphs, weights)
def test_feature_expectations_three_ways_and_finite_differences(hg, w):
    derivations, scores = enumerated(hg, w)
    probabilities = np.exp(scores - np.logaddexp.reduce(scores))
    brute = sum(p * hg.derivation_features(d) for d, p in zip(derivations, probabilities, strict=True))
    posterior = A.feature_expectations(hg, w)
    np.testing.assert_allclose(posterior, brute, atol=1e-8)
    for engine in ("generic", "compiled"):
        np.testing.assert_allclose(A.feature_expectations(hg, w, engine, method="expectation"), brute, atol=1e-8)
    step = 1e-5
    for i, name in enumerate(hg.feature_space.names):
        up, down = w.copy(), w.copy()
        up[name] = w.get(name, 0.0) + step
        down[name] = w.get(name, 0.0) - step
        gradient = (A.log_partition(hg, up) - A.log_partition(hg, down)) / (2 * step)
        assert gradient == pytest.approx(posterior[i], abs=1e-5)


@given(graphs, weights)
def test_entropy_matches_brute_force(hg, w):
    _, scores = enumerated(hg, w)
    log_p = scores - np.logaddexp.reduce(scores)
    brute = float(-(np.exp(log_p) * log_p).sum())
    assert A.entropy(hg, w) == pytest.approx(brute, abs=1e-8)
    assert A.entropy(hg, w, method="expectation") == pytest.approx(brute, abs=1e-8)


@given(hypergraphs(max_nodes=4), weights)
def test_second_order_expectations_give_second_moments(hg, w):
    derivations, scores = enumerated(hg, w)
    p_edge = np.exp(w.edge_scores(hg))
    f = hg.feature_matrix().toarray()
    semiring = SecondOrderExpectationSemiring(f.shape[1], f.shape[1])
    values = [semiring.edge_value(p_edge[e], f[e], f[e]) for e in range(hg.num_edges)]
    z, r, s, t = A.inside(hg, semiring, values)[hg.goal]
    brute = sum(
        np.exp(sc) * np.outer(hg.derivation_features(d), hg.derivation_features(d))
        for d, sc in zip(derivations, scores, strict=True)
    )
    assert z == pytest.approx(np.exp(scores).sum(), rel=1e-9)
    np.testing.assert_allclose(t, brute, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(r, s)


@given(graphs, weights)
def test_expectation_semiring_compiled_equals_generic(hg, w):
    f = hg.feature_matrix().toarray()
    semiring = ExpectationSemiring(f.shape[1])
    values = semiring.edge_values(np.exp(w.edge_scores(hg)), f)
    fast = A.inside(hg, semiring, values, "compiled")
    slow = A.inside(hg, semiring, values, "generic")
    for v in range(hg.num_nodes):
        assert semiring.equal(fast[v], slow[v], 1e-9)


class MaxTimes(Semiring):
    """A user-defined semiring: Viterbi in probability space."""

    zero, one = 0.0, 1.0
    idempotent = selective = True

    def plus(self, a, b):
        return max(a, b)

    def times(self, a, b):
        return a * b


class MinPlus(Semiring):
    """Another: shortest path over costs."""

    zero, one = math.inf, 0.0
    idempotent = selective = True

    def plus(self, a, b):
        return min(a, b)

    def times(self, a, b):
        return a + b


@given(graphs, weights)
def test_user_defined_semirings_run_through_the_engine(hg, w):
    scores = w.edge_scores(hg)
    best = A.viterbi(hg, w)
    assert A.inside(hg, MaxTimes(), list(np.exp(scores)))[hg.goal] == pytest.approx(math.exp(best.score))
    assert A.inside(hg, MinPlus(), list(-scores))[hg.goal] == pytest.approx(-best.score, abs=1e-9)
    value, derivation = A.best_derivation(hg, MinPlus(), list(-scores))
    assert value == pytest.approx(-best.score, abs=1e-9)
    assert scores[derivation.edges()].sum() == pytest.approx(best.score, abs=1e-9)
    assert A.outside(hg, MaxTimes(), list(np.exp(scores)))[hg.goal] == 1.0


@settings(max_examples=25)  # 2,000 draws per example, by the generic sampler
@given(hypergraphs(max_nodes=4, max_derivations=30), weights)
def test_sampling_follows_the_distribution_and_the_seed(hg, w):
    derivations, scores = enumerated(hg, w)
    probabilities = dict(zip(derivations, np.exp(scores - np.logaddexp.reduce(scores)), strict=True))
    draws = A.sample(hg, w, 2000, random_state=5)
    assert [d.derivation for d in draws[:20]] == [d.derivation for d in A.sample(hg, w, 20, random_state=5)]
    counts = Counter(d.derivation for d in draws)
    assert set(counts) <= set(probabilities)
    for derivation, p in probabilities.items():
        # 5 standard deviations of a binomial proportion, plus slack for tiny p
        assert abs(counts[derivation] / 2000 - p) <= 5 * math.sqrt(p * (1 - p) / 2000) + 1e-3


def test_large_random_forest_fast_equals_generic():
    hg = random_hypergraph(3000, num_features=5, seed=11)
    w = Weights({f"F{i}": 0.1 * (i - 2) for i in range(5)})
    scores = w.edge_scores(hg)
    for semiring in (LogSemiring(), TropicalSemiring()):
        fast = A.inside(hg, semiring, scores, "compiled")
        slow = A.inside(hg, semiring, scores, "generic")
        np.testing.assert_allclose(fast, slow, rtol=1e-9)
    assert A.viterbi(hg, w).score == pytest.approx(A.best_derivation(hg, TropicalSemiring(), scores, "generic")[0])
    assert A.kbest(hg, w, 1)[0].score == pytest.approx(A.viterbi(hg, w).score)
    assert A.kbest(hg, w, 50)[-1].score <= A.kbest(hg, w, 10)[-1].score


def test_log_outside_is_exact_far_from_zero_and_with_impossible_edges():
    hg = random_hypergraph(400, num_features=3, seed=8)
    scores = Weights({"F0": 300.0, "F1": -200.0}).edge_scores(hg)
    scores[::7] = -np.inf  # edges that can never be used
    fast = A.outside(hg, LogSemiring(), scores, engine="compiled")
    slow = np.array(A.outside(hg, LogSemiring(), scores, engine="generic"))
    assert np.array_equal(np.isinf(fast), np.isinf(slow))
    finite = np.isfinite(slow)
    np.testing.assert_allclose(fast[finite], slow[finite], rtol=1e-9)
    beta = np.array(A.inside(hg, LogSemiring(), scores, engine="generic"))
    log_marginals = (slow + beta - beta[hg.goal])[finite]
    assert log_marginals.min() < -1000  # far beyond exp's range, still finite: no underflow to -inf


def test_compiled_engine_refuses_values_it_cannot_take():
    hg = random_hypergraph(50, seed=1)
    with pytest.raises(ValueError, match="no compiled kernel"):
        A.inside(hg, MaxTimes(), [1.0] * hg.num_edges, engine="compiled")
    with pytest.raises(ValueError, match="commutative"):
        A.outside(hg, KBestSemiring(2), [((0.0, Derivation(e)),) for e in range(hg.num_edges)])
    with pytest.raises(ValueError, match="edge values"):
        A.inside(hg, LogSemiring(), np.zeros(3))


def test_weights_scale_sharpens_the_distribution():
    hg = random_hypergraph(200, num_features=3, seed=4)
    w = Weights({n: 0.3 for n in ("F0", "F1", "F2")})
    sharp = Weights(dict(w), scale=50.0)
    assert A.entropy(hg, sharp) < A.entropy(hg, w)
    assert A.viterbi(hg, sharp).derivation == A.viterbi(hg, w).derivation


class RealButMax(RealSemiring):
    """A user's subclass of a built-in semiring with a compiled kernel: ⊕ overridden (max-times)."""

    def plus(self, a, b):
        return max(a, b)


class LogButMax(LogSemiring):
    """Log semiring with ⊕ = max: Viterbi in log space."""

    def plus(self, a, b):
        return max(a, b)


class TropicalButMin(TropicalSemiring):
    """Tropical semiring turned into min-plus: the worst derivation's score."""

    zero = math.inf

    def plus(self, a, b):
        return min(a, b)


class BooleanParity(BooleanSemiring):
    """GF(2): ⊕ is exclusive or, so inside is the parity of the number of derivations."""

    def plus(self, a, b):
        return bool(a) != bool(b)


class SameAsReal(RealSemiring):
    """A subclass that computes what its parent does and says so by re-declaring the kernel."""

    kernel = "real"


@given(graphs, weights)
def test_a_subclass_overriding_plus_never_runs_its_parents_kernel(hg, w):
    """Expected values from brute force over the derivations, whatever engine inside picks."""
    derivations, scores = enumerated(hg, w)
    edge_scores = w.edge_scores(hg)
    goal = hg.goal
    assert A.inside(hg, RealButMax(), np.exp(edge_scores))[goal] == pytest.approx(np.exp(scores).max(), rel=1e-9)
    assert A.inside(hg, LogButMax(), edge_scores)[goal] == pytest.approx(scores.max(), abs=1e-9)
    assert A.inside(hg, TropicalButMin(), edge_scores)[goal] == pytest.approx(scores.min(), abs=1e-9)
    assert A.best_derivation(hg, TropicalButMin(), edge_scores)[0] == pytest.approx(scores.min(), abs=1e-9)
    assert A.inside(hg, BooleanParity(), np.ones(hg.num_edges))[goal] == (len(derivations) % 2 == 1)
    assert A.inside(hg, SameAsReal(), np.exp(edge_scores))[goal] == pytest.approx(np.exp(scores).sum(), rel=1e-9)


def test_only_the_declaring_class_gets_the_compiled_kernel():
    arguments = {
        BooleanSemiring: (),
        LogSemiring: (),
        RealSemiring: (),
        TropicalSemiring: (),
        ExpectationSemiring: (2,),
    }
    for semiring, args in arguments.items():
        assert semiring.kernel is not None and semiring(*args).compiled_kernel == semiring.kernel
        subclass = type(f"My{semiring.__name__}", (semiring,), {"plus": lambda self, a, b: a})
        assert subclass(*args).compiled_kernel is None, semiring.__name__
    assert SameAsReal().compiled_kernel == "real"
