"""MERT: the envelope semiring and line search against brute force, cdec's line-search test, real data."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies import hypergraphs, weights

from hypertune import algorithms as A
from hypertune.algorithms import count_derivations
from hypertune.algorithms.envelope import (
    _kbest_kernel,
    envelope_by_probing,
    envelope_inside,
    envelope_yields,
    kbest_envelopes,
    kbest_surface_rows,
    packed_envelopes,
)
from hypertune.cli import main
from hypertune.errors import GraphError, UsageError
from hypertune.generate import random_hypergraph
from hypertune.hypergraph import PackedGraphs, from_kbest
from hypertune.metrics import BleuMetric
from hypertune.semirings.envelope import EnvelopeSemiring, Line, upper_envelope
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.linesearch import ErrorSurfaces, corpus_statistics, line_search
from hypertune.tuners.mert import LineSearcher, Mert
from hypertune.tuners.sentence_ids import merge_kbest
from hypertune.tuners.shards import LocalShards
from hypertune.weights import Weights

directions = st.builds(
    lambda vs: Weights(dict(zip(("f0", "f1", "f2"), vs, strict=True))),
    st.tuples(*[st.floats(-2, 2, allow_nan=False, allow_subnormal=False)] * 3),
)
graphs = st.one_of(hypergraphs(max_derivations=300), hypergraphs(lattice=True, max_derivations=300))


def brute_lines(hg, w, d):
    derivations = A.enumerate_derivations(hg)
    b, m = w.edge_scores(hg), d.edge_scores(hg)
    return [(b[x.edges()].sum(), m[x.edges()].sum(), x) for x in derivations]


def well_scaled(values: np.ndarray) -> bool:
    """No non-zero value below 1e-9 of the largest (as the probing kernel's SCALE_RANGE)."""
    nonzero = np.abs(values[values != 0])
    return nonzero.size == 0 or nonzero.min() >= 1e-9 * nonzero.max()


def significant(left, slope, intercept) -> np.ndarray:
    """Envelope lines without segments narrower than rounding error (subnormal slopes make such slivers;
    generic and compiled code may keep different ones)."""
    left = np.asarray(left, dtype=float)
    right = np.append(left[1:], np.inf)
    wide = (right - left) > 1e-9 * np.maximum(1.0, np.abs(np.where(np.isinf(left), 0, left)))
    return np.column_stack([np.where(np.isinf(left), 0, left), slope, intercept])[wide]


@pytest.mark.parametrize("method", [envelope_inside, envelope_by_probing], ids=["semiring", "probing"])
@given(hg=graphs, w=weights, d=directions)
def test_envelope_is_the_upper_envelope_of_all_derivations(method, hg, w, d):
    b, m = w.edge_scores(hg), d.edge_scores(hg)
    semiring = EnvelopeSemiring()
    generic = A.inside(hg, semiring, [semiring.edge_value(e, b[e], m[e]) for e in range(hg.num_edges)])[hg.goal]
    fast = method(hg, b, m)
    if well_scaled(b) and well_scaled(m):  # else rounding decides which slivers exist, differently in each
        ours = significant(
            [line.left for line in generic], [line.slope for line in generic], [line.intercept for line in generic]
        )
        theirs = significant(fast.left, fast.slope, fast.intercept)
        assert len(ours) == len(theirs)
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)
    lines = brute_lines(hg, w, d)
    probes = np.concatenate([fast.left[1:] + 1e-6, fast.left[1:] - 1e-6, [-1e6, 1e6, 0.0]])
    for gamma in probes:
        best = max(bb + gamma * mm for bb, mm, _ in lines)
        i = int(np.searchsorted(fast.left, gamma, side="right")) - 1
        assert fast.intercept[i] + gamma * fast.slope[i] == pytest.approx(best, rel=1e-12, abs=1e-6)
    tokens, offsets = envelope_yields(fast)
    for i in range(len(fast)):
        derivation = fast.derivation(i)
        assert b[derivation.edges()].sum() == pytest.approx(fast.intercept[i], abs=1e-9)
        assert m[derivation.edges()].sum() == pytest.approx(fast.slope[i], abs=1e-9)
        assert list(tokens[offsets[i] : offsets[i + 1]]) == hg.derivation_yield(derivation)
    for line in generic:  # the generic semiring's back-pointers agree with its own lines
        assert m[line.derivation.edges()].sum() == pytest.approx(line.slope, abs=1e-9)
        assert b[line.derivation.edges()].sum() == pytest.approx(line.intercept, abs=1e-9)


@pytest.mark.parametrize("lattice", [True, False], ids=["lattice", "forest"])
def test_probing_gives_the_semiring_envelope_exactly(lattice):
    """On graphs of thousands of edges with continuous features, the two compiled methods agree bit for bit:
    the same lines, breakpoints and (no ties) derivations; a packed corpus gives the same as graph by graph."""
    rng = np.random.default_rng(7)
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs = [
        random_hypergraph(3000, lattice=lattice, num_features=6, seed=s, feature_space=space, vocabulary=vocabulary)
        for s in range(4)
    ]
    width = len(space)
    packed = PackedGraphs.pack(graphs)
    for _ in range(3):
        w0, d = rng.normal(size=width), rng.normal(size=width) * (rng.random(width) < 0.5)
        d[0] = 1.0
        expected = []
        for hg in graphs:
            features = hg.feature_matrix(width)
            semiring = envelope_inside(hg, features @ w0, features @ d)
            probing = envelope_by_probing(hg, features @ w0, features @ d)
            assert len(semiring) > 3
            for field in ("left", "slope", "intercept"):
                assert np.array_equal(getattr(semiring, field), getattr(probing, field))
            assert [semiring.derivation(i) for i in range(len(semiring))] == [
                probing.derivation(i) for i in range(len(probing))
            ]
            expected.append((semiring.left, *envelope_yields(semiring)))
        features = packed.features
        sizes, left, tokens, token_offsets = packed_envelopes(packed, features @ w0, features @ d)
        assert list(sizes) == [e[0].size for e in expected]
        assert np.array_equal(left, np.concatenate([e[0] for e in expected]))
        assert np.array_equal(tokens, np.concatenate([e[1] for e in expected]))
        assert np.array_equal(np.diff(token_offsets), np.concatenate([np.diff(e[2]) for e in expected]))
        sizes, left, _, _ = packed_envelopes(packed, features @ w0, features @ d, 1, 3)
        assert list(sizes) == [e[0].size for e in expected[1:3]]


def test_probing_hands_badly_scaled_graphs_to_the_semiring():
    """Hypothesis's case: with intercepts and slopes of 1e-182 beside ones of 1, the middle line (0, 0) is
    above the others at their intersection by less than rounding error, yet wins on [-2, -1.43]."""
    kbest = from_kbest([(["a"], {"b": 0.0, "m": 0.0}), (["b"], {"b": 1.984375, "m": 1.3890625}), (["c"], {})])
    b = np.array([0.0, 0.0, 1.984375, -2.13297283e-182])
    m = np.array([0.0, 0.0, 1.3890625, -1.06648641e-182])
    semiring, probing = envelope_inside(kbest, b, m), envelope_by_probing(kbest, b, m)
    assert len(semiring) == 3
    for field in ("left", "slope", "intercept"):
        assert np.array_equal(getattr(semiring, field), getattr(probing, field))
    assert [kbest.derivation_words(probing.derivation(i)) for i in range(3)] == [["c"], ["a"], ["b"]]


def test_probing_with_parallel_derivations():
    """Every derivation with the same slope: the envelope is one line, the highest."""
    kbest = from_kbest([([f"h{i}"], {"b": b, "m": 1.0}) for i, b in enumerate([0.5, 2.0, 1.0])])
    result = envelope_by_probing(kbest, Weights({"b": 1}).edge_scores(kbest), Weights({"m": 1}).edge_scores(kbest))
    assert list(result.intercept) == [2.0] and list(result.left) == [-math.inf]
    assert kbest.derivation_words(result.derivation(0)) == ["h1"]


def test_survey_four_lines():
    """The survey's example: 2.5 - 0.8γ, 1 - 0.2γ, 2 - 0.5γ, -0.5 + 0.2γ (docs/mert.md)."""
    lines = [(2.5, -0.8), (1.0, -0.2), (2.0, -0.5), (-0.5, 0.2)]
    kbest = from_kbest([([f"h{i}"], {"b": b, "m": m}) for i, (b, m) in enumerate(lines)])
    result = envelope_inside(kbest, Weights({"b": 1}).edge_scores(kbest), Weights({"m": 1}).edge_scores(kbest))
    assert list(result.slope) == [-0.8, -0.5, -0.2, 0.2]
    np.testing.assert_allclose(result.left[1:], [5 / 3, 10 / 3, 3.75])
    assert [kbest.derivation_words(result.derivation(i)) for i in range(4)] == [["h0"], ["h2"], ["h1"], ["h3"]]
    probed = envelope_by_probing(kbest, Weights({"b": 1}).edge_scores(kbest), Weights({"m": 1}).edge_scores(kbest))
    assert np.array_equal(probed.left, result.left) and np.array_equal(probed.slope, result.slope)
    segments, left, hypothesis = kbest_envelopes(
        np.array([0, 4]), np.array([b for b, _ in lines]), np.array([m for _, m in lines])
    )
    assert list(hypothesis) == [0, 2, 1, 3] and list(segments) == [0, 4]
    assert upper_envelope([Line(0, m, b) for b, m in lines])[1].left == pytest.approx(5 / 3)


def test_parallel_lines_keep_the_larger_intercept():
    hull = upper_envelope([Line(0, 1.0, 0.0, "a"), Line(0, 1.0, 2.0, "b"), Line(0, 1.0, 1.0, "c")])
    assert [line.derivation for line in hull] == ["b"]
    segments, _, hypothesis = kbest_envelopes(np.array([0, 3]), np.array([0.0, 2.0, 2.0]), np.ones(3))
    assert list(hypothesis) == [1]  # the earlier of two identical lines


def random_corpus(seed: int, sentences: int = 4):
    rng = np.random.default_rng(seed)
    vocab = list("abcdef")
    graphs, refs = [], []
    space, vocabulary = FeatureSpace(), Vocabulary()
    for _ in range(sentences):
        hyps = [
            (list(rng.choice(vocab, size=int(rng.integers(2, 7)))), {f"f{k}": float(rng.normal()) for k in range(3)})
            for _ in range(int(rng.integers(2, 9)))
        ]
        graphs.append(from_kbest(hyps, space, vocabulary))
        refs.append([" ".join(rng.choice(vocab, size=int(rng.integers(3, 7)))) for _ in range(2)])
    return TuningSet(graphs, refs, BleuMetric(tokenize="none", smooth="plus1"))


@pytest.mark.parametrize("seed", range(12))
def test_line_search_equals_a_scan_of_every_interval(seed):
    tuning_set = random_corpus(seed)
    rng = np.random.default_rng(seed)
    space = tuning_set.feature_space
    w0, d = rng.normal(size=len(space)), rng.normal(size=len(space))
    searcher = LineSearcher(tuning_set)
    surfaces = searcher.surfaces(w0, d)
    result = line_search(surfaces, tuning_set.score)
    points = np.unique(surfaces.breakpoints)
    probes = np.concatenate(
        [
            [points[0] - 1 if points.size else 0.0],
            (points[1:] + points[:-1]) / 2,
            [points[-1] + 1 if points.size else 0.0],
        ]
    )
    scanned = [searcher.score(w0 + g * d) for g in probes]
    assert result.score == pytest.approx(max(scanned), abs=1e-12)
    assert searcher.score(w0 + result.gamma * d) == pytest.approx(result.score, abs=1e-12)
    assert result.score_at_zero == pytest.approx(searcher.score(w0), abs=1e-12)
    # the same corpus as general graphs (not the k-best fast path) gives the same surfaces
    for envelope in ("probing", "semiring"):
        as_graphs = LineSearcher(tuning_set, envelope=envelope, kbest_sweep=False)
        other = line_search(as_graphs.surfaces(w0, d), tuning_set.score)
        assert other.score == pytest.approx(result.score, abs=1e-12) and other.gamma == pytest.approx(result.gamma)


def numpy_corpus_statistics(surfaces: ErrorSurfaces) -> tuple[np.ndarray, np.ndarray]:
    """The corpus error surface as NumPy computes it (the line search's merge before it was compiled)."""
    order = np.argsort(surfaces.breakpoints, kind="stable")
    xs = surfaces.breakpoints[order]
    cumulative = surfaces.initial + np.cumsum(surfaces.deltas[order], axis=0)
    last = np.flatnonzero(np.append(xs[1:] != xs[:-1], True)) if xs.size else np.zeros(0, dtype=np.int64)
    return xs[last], np.vstack([surfaces.initial[None, :], cumulative[last]])


@pytest.mark.parametrize("seed", range(30))
def test_compiled_merge_is_numpys_bit_for_bit(seed):
    """Breakpoints with ties, -0.0 beside 0.0, infinities and NaN, across magnitudes; fractional changes
    (sums depend on their order); one column (NumPy sums it pairwise) or nine; none at all."""
    rng = np.random.default_rng(seed)
    size, width = int(rng.integers(0, 300)), int(rng.choice([1, 2, 9]))
    points = rng.normal(size=size) * 10.0 ** rng.integers(-30, 30)
    points = np.round(points, int(rng.integers(0, 3))) if seed % 2 else points
    special = rng.random(size) < 0.05
    points[special] = rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan], int(special.sum()))
    firsts = rng.normal(size=(int(rng.integers(1, 20)), width)) * 1e3
    surfaces = ErrorSurfaces(firsts.sum(axis=0), points, rng.normal(size=(size, width)), np.ones(1), firsts)
    expected = numpy_corpus_statistics(surfaces)
    got = corpus_statistics(surfaces)
    for a, b in zip(got, expected, strict=True):
        assert a.shape == b.shape and a.tobytes() == b.tobytes()
    assert np.array_equal(np.signbit(got[0]), np.signbit(expected[0]))


@pytest.mark.parametrize("seed", range(12))
def test_compiled_kbest_surfaces_are_the_envelopes_statistics(seed):
    """The fused sweep gives the arrays ErrorSurfaces.from_segments builds from the k-best envelopes."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, size=int(rng.integers(1, 30)))
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    intercepts = np.round(rng.normal(size=offsets[-1]), 1)  # ties and parallel lines
    slopes = np.round(rng.normal(size=offsets[-1]), int(seed % 3))
    stats = rng.random((offsets[-1], 5))
    for order in (None, np.lexsort((slopes, np.repeat(np.arange(sizes.size), sizes)))):
        segments, left, hypothesis = kbest_envelopes(offsets, intercepts, slopes, order)
        expected = ErrorSurfaces.from_segments(segments, left, stats[hypothesis])
        # each list's first highest line at γ = 0, by hand: what a caller hands over once per point
        tops = np.array([lo + int(np.argmax(intercepts[lo:hi])) for lo, hi in zip(offsets, offsets[1:], strict=False)])
        for known in (None, tops):
            firsts, breakpoints, deltas, counts = kbest_surface_rows(offsets, intercepts, slopes, order, stats, known)
            for a, b in zip(
                (firsts, breakpoints, deltas, counts),
                (expected.firsts, expected.breakpoints, expected.deltas, expected.sizes),
                strict=True,
            ):
                assert a.tobytes() == b.tobytes()


def test_kbest_surface_rows_refuses_tops_outside_their_lists():
    offsets, intercepts, slopes, stats = np.array([0, 2, 3]), np.zeros(3), np.arange(3.0), np.ones((3, 5))
    for tops in (np.array([0, 1]), np.array([2, 2]), np.array([0])):  # list 1's row is 2; one row per list
        with pytest.raises(GraphError, match="tops must give one row of each list"):
            kbest_surface_rows(offsets, intercepts, slopes, None, stats, tops)


def rowwise_bleu(rows: np.ndarray, order: int, ibm: bool) -> np.ndarray:
    """Corpus BLEU of every row (no smoothing; or cdec's IBM BLEU), with NumPy's reductions along each row
    of the (rows, orders) layout: the formulation of metrics.bleu before its column-wise rewrite."""
    m, c = rows[:, 0 : 2 * order : 2].copy(), rows[:, 1 : 2 * order : 2].copy()
    hyp, ref = rows[:, 1], rows[:, 2 * order]
    short = hyp < ref
    log_bp = np.zeros_like(hyp)
    log_bp[short] = (1.0 - ref / np.where(hyp > 0, hyp, 1.0))[short]
    log_bp[short & (hyp <= 0)] = -np.inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if ibm:
            present = c > 0
            logs = np.where(present, np.log(np.where(m > 0, m, 0.01)) - np.log(np.where(present, c, 1.0)), 0.0)
            count = present.sum(axis=1)
            return np.where(count > 0, np.exp(logs.sum(axis=1) / np.maximum(count, 1) + log_bp), 0.0)
        valid = np.cumprod(c > 0, axis=1).astype(bool)
        precision = np.where(valid & (m > 0), m / np.where(c > 0, c, 1.0), 0.0)
        logs = np.where(precision > 0, np.log(np.where(precision > 0, precision, 1.0)), -9999999999.0)
        score = np.exp(log_bp) * np.exp(logs.sum(axis=1) / np.full(len(rows), order))
        return np.where((m > 0).any(axis=1), score, 0.0)


@pytest.mark.parametrize("order", [1, 2, 4, 7, 8, 9])
def test_vectorized_bleu_is_the_rowwise_formulation_bit_for_bit(order):
    """The line search scores thousands of rows per call; the column-wise code must give the same bits."""
    rng = np.random.default_rng(order)
    rows = np.zeros((2000, 2 * order + 1))
    length = rng.integers(0, 50, 2000) * 10.0 ** rng.integers(0, 4, 2000)
    for n in range(order):
        rows[:, 2 * n + 1] = np.maximum(length - n * rng.integers(0, 3, 2000), 0)
        rows[:, 2 * n] = np.floor(rows[:, 2 * n + 1] * rng.random(2000) * (rng.random(2000) > 0.1))
    rows[:, -1] = rng.integers(0, 60, 2000) * 10.0 ** rng.integers(0, 4, 2000) + rng.random(2000) * 0.5
    rows[::7] += rng.random((len(rows[::7]), 2 * order + 1))  # fractional statistics
    matched = rows[(rows[:, 0 : 2 * order] > 0).all(axis=1)]  # every order with matches: a corpus's rows
    for ibm in (False, True):
        metric = BleuMetric(max_order=order, ref_length="ibm" if ibm else "closest")
        assert metric.score(rows).tobytes() == rowwise_bleu(rows, order, ibm).tobytes()
        assert metric.score(matched).tobytes() == rowwise_bleu(matched, order, ibm).tobytes()


def adversarial_lines(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """k-best lists whose lines make the sweep's comparisons hard: small integers (ties, parallel and
    concurrent lines), lines through one point up to a few ulps, magnitudes from 1e-8 to 1e8, nearly
    parallel lines, duplicates, and feature-like lines with rounded slopes."""
    sizes = rng.integers(1, 120, size=int(rng.integers(1, 40)))
    total = int(sizes.sum())
    kind = int(rng.integers(0, 6))
    if kind == 0:
        b, m = rng.integers(-3, 4, total).astype(float), rng.integers(-3, 4, total).astype(float)
    elif kind == 1:
        m = rng.normal(size=total)
        b = 1.0 - rng.normal() * m + rng.normal(size=total) * 1e-15 * (rng.random(total) < 0.5)
    elif kind == 2:
        b = rng.normal(size=total) * 10.0 ** rng.integers(-8, 8, total)
        m = rng.normal(size=total) * 10.0 ** rng.integers(-8, 8, total)
    elif kind == 3:
        b, m = rng.normal(size=total), 1.0 + rng.normal(size=total) * 1e-12
    elif kind == 4:
        pick = rng.integers(0, 5, total)
        b, m = rng.normal(size=5)[pick], rng.normal(size=5)[pick]
    else:
        features = rng.normal(size=(total, 5))
        b, m = features @ rng.normal(size=5), np.round(features[:, 0], int(rng.integers(0, 4)))
    return np.concatenate(([0], np.cumsum(sizes))), b, m


@pytest.mark.parametrize("block", range(10))
def test_kbest_prefilter_keeps_the_sweep_bit_for_bit(block):
    """Dropping the lines clearly below the hull of three before Och's sweep changes nothing: the same
    segments, breakpoints and hypotheses as the plain sweep over every line (2,000 adversarial corpora)."""
    for seed in range(200 * block, 200 * (block + 1)):
        offsets, b, m = adversarial_lines(np.random.default_rng(seed))
        sentence = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
        for order in (np.empty(0, dtype=np.int64), np.lexsort((m, sentence))):
            filtered = _kbest_kernel(offsets, b, m, order, True)
            plain = _kbest_kernel(offsets, b, m, order, False)
            assert all(x.tobytes() == y.tobytes() for x, y in zip(filtered, plain, strict=True)), seed


def test_lattice_mert_is_the_same_with_either_envelope_method():
    """Whole MERT runs on random lattices: probing and the semiring make the same moves."""
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs = [
        random_hypergraph(
            400, lattice=True, num_features=5, vocabulary_size=12, seed=s, feature_space=space, vocabulary=vocabulary
        )
        for s in range(6)
    ]
    rng = np.random.default_rng(3)
    refs = [[" ".join(rng.choice(vocabulary.words(range(len(vocabulary))), size=8))] for _ in graphs]
    tuning_set = TuningSet(graphs, refs, BleuMetric(tokenize="none", smooth="plus1"))
    init = Weights({name: 0.2 for name in space.names})
    runs = [
        Mert(optimizer="cyclic", random_directions=2, seed=5, envelope=envelope, n_jobs=2).fit(tuning_set, init)
        for envelope in ("probing", "semiring")
    ]
    assert runs[0].bleu_after > runs[0].bleu_before
    assert runs[0].bleu_after == runs[1].bleu_after and runs[0].line_searches == runs[1].line_searches
    assert dict(runs[0].weights) == dict(runs[1].weights)
    with pytest.raises(UsageError, match="envelope"):
        LineSearcher(tuning_set, envelope="sweep")


def test_the_default_optimizer_is_coordinate_on_kbest_lists_and_cyclic_on_graphs():
    """``optimizer="auto"``: Moses's greedy coordinate ascent on k-best lists, cyclic coordinate ascent on
    lattices (one process and sharded alike), move for move."""
    lists = random_corpus(4, sentences=6)
    init = Weights({"f0": 0.1, "f1": 0.1, "f2": 0.1})
    default, coordinate = (Mert(optimizer=o, restarts=1, seed=1).fit(lists, init) for o in ("auto", "coordinate"))
    assert Mert().optimizer == "auto"
    assert dict(default.weights) == dict(coordinate.weights) and default.line_searches == coordinate.line_searches
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs = [
        random_hypergraph(
            150, lattice=True, num_features=4, vocabulary_size=10, seed=s, feature_space=space, vocabulary=vocabulary
        )
        for s in range(3)
    ]
    rng = np.random.default_rng(1)
    refs = [[" ".join(rng.choice(vocabulary.words(range(len(vocabulary))), size=6))] for _ in graphs]
    lattices = TuningSet(graphs, refs, BleuMetric(tokenize="none", smooth="plus1"))
    init = Weights({name: 0.2 for name in space.names})
    cyclic = Mert(optimizer="cyclic", n_jobs=1).fit(lattices, init)
    assert Mert(optimizer="coordinate", n_jobs=1).fit(lattices, init).line_searches != cyclic.line_searches
    for default in (Mert(n_jobs=1).fit(lattices, init), Mert().fit_shards(LocalShards(lattices, 2), init)):
        assert dict(default.weights) == dict(cyclic.weights) and default.line_searches == cyclic.line_searches


def surfaces(breakpoints, deltas, initial):
    deltas = np.asarray(deltas, dtype=float).reshape(len(breakpoints), -1)
    return ErrorSurfaces(
        np.asarray(initial, dtype=float), np.asarray(breakpoints, dtype=float), deltas, np.array([len(breakpoints) + 1])
    )


def first_column(stats):
    return stats[..., 0]


def test_line_search_conventions():
    # best interval bounded: midpoint
    r = line_search(surfaces([1.0, 3.0], [[1], [-1]], [0]), first_column)
    assert (r.gamma, r.score, r.interval) == (2.0, 1.0, (1.0, 3.0))
    # best interval unbounded on the right: half the neighbour's width past the breakpoint
    r = line_search(surfaces([1.0, 3.0], [[-1], [2]], [0]), first_column)
    assert r.gamma == pytest.approx(4.0) and r.score == 1.0
    # unbounded on the left, no bounded neighbour: 0.5 before the breakpoint
    r = line_search(surfaces([2.0], [[-1]], [0]), first_column)
    assert r.gamma == pytest.approx(1.5)
    # ties: the interval nearest to zero wins, so MERT does not move without an improvement
    r = line_search(surfaces([-3.0, -2.0, 1.0, 3.0], [[1], [-1], [1], [-1]], [0]), first_column)
    assert r.interval == (1.0, 3.0) and r.gamma == 2.0
    r = line_search(surfaces([-3.0, -1.0, 1.0, 3.0], [[1], [-1], [1], [-1]], [0]), first_column)
    assert r.interval == (-3.0, -1.0)  # equally near: the left one
    r = line_search(surfaces([-1.0, 1.0], [[-1], [1]], [0]), first_column)
    assert r.gamma == pytest.approx(-2.0) and r.interval == (-math.inf, -1.0)  # neighbour is 2 wide
    r = line_search(surfaces([-1.0, 2.0], [[0], [0]], [5]), first_column)
    assert r.gamma == pytest.approx(0.5) and r.score == 5  # everything ties: stay in the interval holding 0
    # bounds clip the intervals
    r = line_search(surfaces([1.0, 3.0], [[-1], [2]], [0]), first_column, low=-1.0, high=5.0)
    assert r.gamma == pytest.approx(4.0)
    r = line_search(surfaces([1.0, 3.0], [[-1], [2]], [0]), first_column, low=-1.0, high=3.5)
    assert r.gamma == pytest.approx(3.25)
    # lower is better (TER-like)
    r = line_search(surfaces([1.0, 3.0], [[1], [-1]], [0]), first_column, higher_is_better=False)
    assert r.score == 0.0 and r.interval[0] == -math.inf
    # plateau: a spike next to a cliff loses to a broad plateau
    spike = surfaces([1, 2, 3, 4, 5, 6], [[10], [-10], [6], [0], [0], [-6]], [0])
    assert line_search(spike, first_column).interval == (1.0, 2.0)
    assert line_search(spike, first_column, plateau="average", window=1).interval == (4.0, 5.0)
    assert line_search(spike, first_column, plateau="minimum", window=1).interval == (4.0, 5.0)


def test_mert_improves_and_is_deterministic():
    tuning_set = random_corpus(3, sentences=8)
    init = Weights({"f0": 0.1, "f1": 0.1, "f2": 0.1})
    results = {}
    for optimizer in ("coordinate", "cyclic", "powell", "random-directions"):
        a = Mert(optimizer=optimizer, restarts=3, random_directions=2, seed=5).fit(tuning_set, init)
        b = Mert(optimizer=optimizer, restarts=3, random_directions=2, seed=5).fit(tuning_set, init)
        assert dict(a.weights) == dict(b.weights)
        assert a.bleu_after >= a.bleu_before
        assert sum(abs(v) for v in a.weights.values()) == pytest.approx(1.0)
        results[optimizer] = a.bleu_after
    fixed = Mert(fixed=["f1"], normalize="none").fit(tuning_set, init)
    assert fixed.weights["f1"] == 0.1
    bounded = Mert(bounds={"f0": (-0.2, 0.3)}, positive=True, normalize="none", restarts=2, seed=1).fit(
        tuning_set, init
    )
    assert -0.2 <= bounded.weights["f0"] <= 0.3 and min(bounded.weights.values()) >= 0
    only = Mert(features=["f2"], normalize="none").fit(tuning_set, init)
    assert only.weights["f0"] == only.weights["f1"] == 0.1


def test_merge_kbest_deduplicates_per_sentence():
    a = from_kbest([("a b", {"x": 1}), ("c", {"x": 2})], sentence_id=0)
    b = from_kbest([("a b", {"x": 1}), ("a b", {"x": 3})], a.feature_space, a.vocabulary, sentence_id=0)
    c = from_kbest([("z", {"x": 1})], a.feature_space, a.vocabulary, sentence_id=1)
    merged = merge_kbest([a, c, b])
    assert [g.sentence_id for g in merged] == [0, 1]
    assert count_derivations(merged[0]) == 3
    assert sorted(d.text for d in A.kbest(merged[0], Weights({"x": 1}), 5)) == ["a b", "a b", "c"]


# ---------------------------------------------------------------------- reference data


def cdec_start_weights(tmp_path, extra: str = ""):
    """The start weights of cdec's lo_test (../shared/README.md) as a weights file."""
    weights = {
        "WordPenalty": 4.25,
        "LanguageModel": -1.1165,
        "PhraseModel_0": -0.96,
        "PhraseModel_1": -0.65,
        "PhraseModel_2": -0.77,
        "PassThrough": -10.0,
    }
    path = tmp_path / "w"
    path.write_text("".join(f"{name} {value:g}\n" for name, value in weights.items()) + extra)
    return path


def cli_json(capsys, *argv):
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("envelope", ["probing", "semiring"])
def test_cdec_line_search(shared, tmp_path, capsys, envelope):
    """cdec training/dpmert/lo_test.cc TestS1 (values in ../shared/README.md), by either envelope method."""
    forests = shared / "cdec" / "forests"
    w = cdec_start_weights(tmp_path)
    result = cli_json(
        capsys,
        "linesearch",
        str(forests / "training_dpmert_test_data_0.json.gz"),
        str(forests / "training_dpmert_test_data_1.json.gz"),
        "--refs",
        str(forests / "lo_test.ref."),
        "--weights",
        str(w),
        "--direction",
        "WordPenalty",
        "--metric",
        "ibm-bleu",
        "--envelope",
        envelope,
    )
    assert result["envelope_sizes"] == [8, 29]
    assert result["best_bleu"] == pytest.approx(0.48719698, rel=1e-5)
    moved = tmp_path / "moved"
    moved.write_text(w.read_text().replace("WordPenalty 4.25", f"WordPenalty {4.25 + result['best_step']}"))
    decoded = cli_json(capsys, "decode", str(forests / "training_dpmert_test_data_0.json.gz"), "-w", str(moved))
    assert decoded["graphs"][0]["derivations"][0]["text"] == "australia reopens embassy in manila"


def test_cdec_toy_envelopes(shared):
    from hypertune.formats import read_graphs

    hg = read_graphs(str(shared / "cdec" / "toy" / "test-ch-inside.json"))[0]
    result = envelope_inside(hg, Weights({"f1": 0.4, "f2": 1.0}).edge_scores(hg), Weights({"f1": 1}).edge_scores(hg))
    assert len(result) == 3
    np.testing.assert_allclose(result.left[1:], [-0.9, 1.171429], atol=1e-6)
    assert [" ".join(hg.derivation_words(result.derivation(i))) for i in range(3)] == [
        "Z A a B C c",
        "X A a B C c",
        "X A a b C c",
    ]
    zero = read_graphs(str(shared / "cdec" / "toy" / "test-zero-origin.json"))[0]
    direction = Weights({"Glue": 1}).edge_scores(zero)
    origin = envelope_inside(zero, np.zeros(zero.num_edges), direction)
    assert list(origin.left[1:]) == [0.0]


def test_kbest_mert_on_moses_data(shared, tmp_path, capsys):
    example = shared / "moses" / "mert-example"
    out = tmp_path / "weights"
    run = [
        "mert",
        str(example / "NBEST"),
        "--refs",
        str(example / "REF."),
        "--init",
        str(example / "init.opt"),
        "--restarts",
        "5",
        "--seed",
        "3",
    ]
    result = cli_json(capsys, *run, "--out", str(out), "--out-format", "moses")
    assert result["bleu_after"] > result["bleu_before"]
    assert out.read_text().startswith("d= ")
    again = cli_json(capsys, *run)
    assert again["weights"] == result["weights"]


def test_mert_on_extractor_and_zmert_data(shared, capsys):
    featstat = shared / "moses" / "featstat-10x100"
    result = cli_json(
        capsys,
        "mert",
        str(featstat / "FEATSTAT.txt"),
        str(featstat / "SCORESTAT.txt"),
        "--init",
        str(featstat / "INIT"),
        "--restarts",
        "3",
    )
    assert result["bleu_after"] >= result["bleu_before"] and result["sentences"] == 10
    zmert = shared / "zmert"
    result = cli_json(
        capsys,
        "mert",
        str(zmert / "cand_database.txt"),
        "--params",
        str(zmert / "params.txt"),
        "--refs",
        str(zmert / "ref."),
        "--init",
        str(zmert / "params.txt"),
        "--restarts",
        "3",
    )
    assert result["bleu_after"] > result["bleu_before"] and set(result["weights"]) == {
        "LM",
        "first model",
        "second model",
    }


def test_forest_mert_with_pruning(shared, tmp_path, capsys):
    forests = shared / "cdec" / "forests"
    w = cdec_start_weights(tmp_path, "Glue 0\n")
    inputs = [
        str(forests / "training_dpmert_test_data_0.json.gz"),
        str(forests / "training_dpmert_test_data_1.json.gz"),
    ]
    common = ["--refs", str(forests / "lo_test.ref."), "--init", str(w), "--metric", "ibm-bleu", "--seed", "2"]
    full = cli_json(capsys, "mert", *inputs, *common, "--optimizer", "cyclic", "--random-directions", "2")
    pruned = cli_json(
        capsys, "mert", *inputs, *common, "--optimizer", "cyclic", "--random-directions", "2", "--prune-density", "5"
    )
    assert full["bleu_after"] > full["bleu_before"] >= 0.3
    assert pruned["pruned_score_after"] > pruned["bleu_before"]  # better on the pruned graphs it searched ...
    # ... but worse on the whole forests, so the start weights, a candidate there too, are kept (L1-normalized)
    assert pruned["kept_start"] and pruned["score_after"] == pruned["score_before"]
    start = {name: float(value) for name, value in (line.split() for line in w.read_text().splitlines() if line)}
    total = sum(abs(v) for v in start.values())
    assert pruned["weights"] == pytest.approx({name: value / total for name, value in start.items()}, abs=1e-15)
    assert pruned["bleu_before"] == pytest.approx(full["bleu_before"])  # pruning keeps the model-best derivation


def test_lattice_mert_accumulates_envelope_derivations(shared, tmp_path, capsys):
    """Cherry & Foster (2012): derivations seen on any envelope join the next iteration's search spaces."""
    forests = shared / "cdec" / "forests"
    w = cdec_start_weights(tmp_path)
    inputs = [
        str(forests / "training_dpmert_test_data_0.json.gz"),
        str(forests / "training_dpmert_test_data_1.json.gz"),
    ]
    common = [
        "--refs",
        str(forests / "lo_test.ref."),
        "--metric",
        "ibm-bleu",
        "--optimizer",
        "cyclic",
        "--normalize",
        "none",
    ]
    nbest, tuned = tmp_path / "envelopes.nbest", tmp_path / "tuned"
    first = cli_json(
        capsys, "mert", *inputs, *common, "--init", str(w), "--envelope-nbest", str(nbest), "--out", str(tuned)
    )
    from hypertune.formats import read_graphs

    lists = read_graphs(str(nbest))
    assert [g.sentence_id for g in lists] == [0, 1] and all(g.num_edges > 2 for g in lists)
    second = cli_json(capsys, "mert", *inputs, str(nbest), *common, "--init", str(tuned))
    assert second["bleu_before"] == pytest.approx(first["bleu_after"])  # same model-best: the lists add no new scores
    assert second["bleu_after"] >= second["bleu_before"]


def test_union_of_graphs():
    from hypertune.generate import random_hypergraph, random_kbest
    from hypertune.hypergraph import union

    forest = random_hypergraph(200, num_features=3, seed=1)
    kbest = random_kbest(5, num_features=3, seed=2, feature_space=forest.feature_space, vocabulary=forest.vocabulary)
    joined = union([forest, kbest])
    w = Weights({"F0": 1.0, "F1": -0.5})
    assert count_derivations(joined) == count_derivations(forest) + 5
    assert A.viterbi(joined, w).score == max(A.viterbi(forest, w).score, A.viterbi(kbest, w).score)
    assert A.log_partition(joined, w) == pytest.approx(
        np.logaddexp(A.log_partition(forest, w), A.log_partition(kbest, w))
    )


def dense_search_best(tuning_set: TuningSet, samples: int, seed: int) -> float:
    """The best corpus metric over ``samples`` random weight vectors (Gaussian: every direction alike), each
    scored exactly on the k-best lists: what any optimizer, Moses's and Z-MERT's included, could find."""
    searcher = LineSearcher(tuning_set)
    rng = np.random.default_rng(seed)
    best = -math.inf
    for _ in range(samples // 2000):
        scores = searcher.features @ rng.standard_normal((len(tuning_set.feature_space), 2000))
        totals = np.zeros((scores.shape[1], searcher.stats.shape[1]))
        for lo, hi in zip(searcher.offsets[:-1], searcher.offsets[1:], strict=True):
            totals += searcher.stats[lo + np.argmax(scores[lo:hi], axis=0)]
        best = max(best, float(np.max(tuning_set.score(totals))))
    return best


@pytest.mark.parametrize("data", ["zmert", "moses"])
def test_kbest_mert_reaches_the_best_of_a_dense_random_search(shared, capsys, data):
    """Stands in for "at least the BLEU of Z-MERT / Moses mert with the same restarts" (neither tool can be
    run here): with 20 restarts (Z-MERT's default), MERT reaches the best of 40,000 random weight vectors
    on the Z-MERT example (3 features: that is the global optimum) and beats it on Moses's (15 features)."""
    from hypertune.cli import build_parser
    from hypertune.cli.tuning import load_tuning_set

    if data == "zmert":
        zmert = shared / "zmert"
        args = [str(zmert / "cand_database.txt"), "--params", str(zmert / "params.txt"), "--refs", str(zmert / "ref.")]
        args += ["--init", str(zmert / "params.txt")]
    else:
        example = shared / "moses" / "mert-example"
        args = [str(example / "NBEST"), "--refs", str(example / "REF."), "--init", str(example / "init.opt")]
    result = cli_json(capsys, "mert", *args, "--restarts", "20", "--seed", "1")
    tuning_set = load_tuning_set(build_parser().parse_args(["mert", *args]))
    assert result["bleu_after"] >= dense_search_best(tuning_set, 40_000, seed=0) - 1e-12


def test_pruned_mert_reports_the_written_weights_on_the_inputs(moses_pair, tmp_path, capsys):
    """With --prune-density the line searches run on pruned graphs, but the figures reported are those of the
    start and written weights on the whole graphs (decoded again, scored by sacrebleu: ``moses_pair``); the
    pruned figure is reported beside them."""
    from hypertune.formats import read_weights

    out, redecoded = tmp_path / "tuned", moses_pair["redecoded"]
    argv = ["mert", str(moses_pair["folder"]), "--refs", str(moses_pair["ref"]), "--init", str(moses_pair["init"])]
    assert main([*argv, "--prune-density", "5", "--out", str(out), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["bleu_after"] == pytest.approx(redecoded(read_weights([str(out)])), abs=1e-12)
    assert payload["bleu_before"] == pytest.approx(redecoded(read_weights([str(moses_pair["init"])])), abs=1e-12)
    assert payload["pruned_score_after"] != pytest.approx(payload["bleu_after"])


def test_the_sweep_split_over_threads_gives_the_arrays_of_one_call(monkeypatch):
    """Large k-best sets run MERT's sweep in one run of sentences per thread; the joined arrays are those of one
    kernel call over every sentence (unit directions, whose cached slope order is cut per run, and mixed ones)."""
    import hypertune.tuners.mert as mert_module

    rng = np.random.default_rng(3)
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs = [
        from_kbest(
            [(f"w{i % 4}", {"a": float(rng.integers(-3, 4)), "b": float(rng.normal())}) for i in range(size)],
            space,
            vocabulary,
            scores={"q": rng.random(size)},
            sentence_id=s,
        )  # fmt: skip
        for s, size in enumerate(rng.integers(1, 12, size=40))
    ]
    from hypertune.metrics import parse_metric

    tuning_set = TuningSet.from_corpus(graphs, None, parse_metric("scores.q"))
    single = LineSearcher(tuning_set, n_jobs=1)
    monkeypatch.setattr(mert_module, "_THREADED_HYPOTHESES", 1)
    threaded = LineSearcher(tuning_set, n_jobs=3)
    assert len(threaded._kbest_chunks) == 3 and len(single._kbest_chunks) == 1
    w0 = np.array([0.5, -1.0])
    for direction in (np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([0.3, -0.7])):
        one, many = single.surfaces(w0, direction), threaded.surfaces(w0, direction)
        for name in ("initial", "breakpoints", "deltas", "sizes", "firsts"):
            assert np.array_equal(getattr(one, name), getattr(many, name)), name
