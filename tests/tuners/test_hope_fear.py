"""Hope/fear search: k-best exact, forests approximate (figures held), exact linear-BLEU mode, toy forest."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies import hypergraphs, weights

from hypertune.algorithms import enumerate_derivations
from hypertune.formats import read_graphs, read_weights
from hypertune.generate import random_hypergraph
from hypertune.hypergraph import from_kbest
from hypertune.metrics import BleuMetric, LinearBleu
from hypertune.metrics.gains import Gain
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.hope_fear import HopeFearDecoder, kbest_hope_fear
from hypertune.tuners.search_quality import approximation_quality

WORDS = ("a", "b", "c", "d")


def _brute(decoder, tuning_set, s, w, gain):
    hg = tuning_set.graphs[s]
    derivations = enumerate_derivations(hg)
    width = len(tuning_set.feature_space)
    scores = np.asarray([hg.derivation_features(d)[:width] @ w[: hg.features.shape[1]] for d in derivations])
    yields = [decoder.words(s, np.asarray(d.edges())) for d in derivations]
    gains = np.asarray(gain.score(tuning_set.yield_stats(s, yields)))
    return scores, gains


def test_moses_toy_forest(shared):
    folder = shared / "moses" / "toy-forest"
    graphs = read_graphs([str(folder / "0")])
    tuning_set = TuningSet(graphs, [[(folder / "ref").read_text().strip()]], BleuMetric(tokenize="none"))
    w = read_weights([str(folder / "dense.weights")]).vector(tuning_set.feature_space)
    gain = Gain("background", initial=0.1)
    result = HopeFearDecoder(tuning_set).hope_fear(0, w, gain)
    hg = graphs[0]
    assert " ".join(hg.derivation_words(result.model.derivation)) == "<s> a b j k </s>"
    assert hg.edge_features(result.model.derivation.edge) == {}
    model_features = dict(zip(result.model.feature_indices.tolist(), result.model.feature_values.tolist(), strict=True))
    space = tuning_set.feature_space
    assert model_features == {space.get("foo"): 3.0, space.get("bar"): 4.0}
    assert " ".join(hg.derivation_words(result.hope.derivation)) == "<s> a b c d h k </s>"
    assert result.hope.stats.tolist() == [6, 6, 5, 5, 4, 4, 3, 3, 6]


@given(st.lists(st.tuples(st.lists(st.sampled_from(WORDS), max_size=5), weights), min_size=1, max_size=12), weights)
def test_kbest_equals_enumeration(hyps, w):
    hg = from_kbest([(words, dict(ws)) for words, ws in hyps])
    tuning_set = TuningSet([hg], [["a b c d a"]], BleuMetric(tokenize="none"))
    decoder = HopeFearDecoder(tuning_set)
    vector = w.vector(tuning_set.feature_space)
    gain = Gain("background")
    result = decoder.hope_fear(0, vector, gain)
    scores, gains = _brute(decoder, tuning_set, 0, vector, gain)
    assert result.hope.model_score + result.hope.gain == pytest.approx(np.max(scores + gains))
    assert result.fear.model_score - result.fear.gain == pytest.approx(np.max(scores - gains))
    assert result.model.model_score == pytest.approx(np.max(scores))


@given(st.lists(st.floats(-3, 3), min_size=1, max_size=20), st.data())
def test_kbest_hope_fear_indices(scores, data):
    gains = data.draw(st.lists(st.floats(0, 3), min_size=len(scores), max_size=len(scores)))
    s, g = np.asarray(scores), np.asarray(gains)
    hope, fear, model = kbest_hope_fear(s, g)
    assert (hope, fear, model) == (int(np.argmax(s + g)), int(np.argmax(s - g)), int(np.argmax(s)))
    safe, _, _ = kbest_hope_fear(s, g, safe_hope=True)
    assert 0 <= safe < len(scores)


@settings(max_examples=40)
@given(hypergraphs(max_nodes=6), weights, st.integers(1, 4), st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))
def test_exact_linear_mode_equals_enumeration(hg, w, order, ref):
    metric = BleuMetric(max_order=order, tokenize="none", clip=False)
    tuning_set = TuningSet([hg], [[" ".join(ref)]], metric)
    linear = LinearBleu(0.6, 0.7, 1.0, metric)
    gain = Gain("linear", order, linear=linear)
    decoder = HopeFearDecoder(tuning_set, search="exact")
    vector = w.vector(tuning_set.feature_space)
    result = decoder.hope_fear(0, vector, gain)
    scores, gains = _brute(decoder, tuning_set, 0, vector, gain)
    assert result.hope.model_score + result.hope.gain == pytest.approx(np.max(scores + gains), abs=1e-9)
    assert result.fear.model_score - result.fear.gain == pytest.approx(np.max(scores - gains), abs=1e-9)
    assert result.model.model_score == pytest.approx(np.max(scores), abs=1e-9)


@settings(max_examples=40)
@given(hypergraphs(max_nodes=6), weights)
def test_approximate_search_returns_consistent_derivations(hg, w):
    tuning_set = TuningSet([hg], [["a b c d"]], BleuMetric(tokenize="none"))
    decoder = HopeFearDecoder(tuning_set)
    vector = w.vector(tuning_set.feature_space)
    gain = Gain("background")
    result = decoder.hope_fear(0, vector, gain)
    scores, gains = _brute(decoder, tuning_set, 0, vector, gain)
    for h in (result.hope, result.fear, result.model):
        words = hg.derivation_yield(h.derivation)
        assert words == h.words.tolist()
        assert np.array_equal(h.stats, tuning_set.yield_stats(0, [words])[0])
        assert h.model_score == pytest.approx(hg.derivation_features(h.derivation)[: vector.size] @ vector)
        assert h.gain == pytest.approx(gain.score(h.stats))
    assert result.model.model_score == pytest.approx(np.max(scores))
    assert result.hope.model_score + result.hope.gain <= np.max(scores + gains) + 1e-9


@pytest.mark.parametrize(
    ("lattice", "hope", "fear", "hope_gap", "fear_gap"),
    [(False, 0.40, 0.65, 0.9, 0.1), (True, 0.50, 0.40, 0.6, 0.2)],
)
def test_approximate_search_quality_holds(lattice, hope, fear, hope_gap, fear_gap):
    """The figures of docs/mira.md (100 seeded random graphs; measured 0.46/0.72 and 0.59/0.47)."""
    figures = approximation_quality(100, seed=0, lattice=lattice)
    assert figures.hope_exact >= hope and figures.fear_exact >= fear
    assert figures.hope_gap <= hope_gap and figures.fear_gap <= fear_gap


def test_lattice_search_is_exact_on_kbest_shaped_forests():
    """A forest whose goal edges each cover a whole hypothesis (no context needed) is searched exactly."""
    rng = np.random.default_rng(3)
    space, vocabulary = FeatureSpace(), Vocabulary()
    for _ in range(20):
        hg = random_hypergraph(
            12,
            lattice=True,
            num_features=3,
            vocabulary_size=4,
            fan_in=2,
            seed=rng,
            feature_space=space,
            vocabulary=vocabulary,
        )
        tuning_set = TuningSet([hg], [["w0 w1 w2 w3"]], BleuMetric(tokenize="none"))
        decoder = HopeFearDecoder(tuning_set)
        vector = rng.normal(size=len(space))
        gain = Gain("background")
        result = decoder.hope_fear(0, vector, gain)
        scores, _ = _brute(decoder, tuning_set, 0, vector, gain)
        assert result.model.model_score == pytest.approx(np.max(scores))


@given(
    st.lists(st.lists(st.integers(1, 6), min_size=0, max_size=9), min_size=1, max_size=4),
    st.integers(1, 4),
)
def test_ngram_keys_are_exact(sequences, order):
    """Two n-grams (of any orders) share a key exactly when they are the same words: checked against the
    n-grams themselves, enumerated by hand."""
    from hypertune.tuners.hope_fear import _ngram_keys

    tokens = np.asarray([w for seq in sequences for w in seq], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum([len(seq) for seq in sequences]))).astype(np.int64)
    keys, owner = _ngram_keys(tokens, offsets, order, 7)
    grams = [
        (s, tuple(seq[p - n + 1 : p + 1]))
        for s, seq in enumerate(sequences)
        for p in range(len(seq))
        for n in range(1, order + 1)
        if p - n + 1 >= 0
    ]
    assert [int(o) for o in owner] == [s for s, _ in grams]
    by_key: dict[int, set] = {}
    for key, (_, gram) in zip(keys, grams, strict=True):
        by_key.setdefault(int(key), set()).add(gram)
    assert all(len(same) == 1 for same in by_key.values())
    assert len(by_key) == len({gram for _, gram in grams})
