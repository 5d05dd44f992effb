"""Oracles against enumeration: exact equals the best string by brute force; linear equals the best
derivation under linear BLEU; k-best oracles and the greedy corpus oracle against direct computation."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from support.paths import FIXTURES
from support.strategies import hypergraphs

from hypertune.algorithms import enumerate_derivations
from hypertune.cli import main
from hypertune.formats import read_graphs, read_references
from hypertune.formats import read_weights as read_weights_file
from hypertune.metrics import BleuMetric, LinearBleu, get_metric
from hypertune.metrics.bleu import bleu_plus_one, bleu_score
from hypertune.tuners import TuningSet
from hypertune.tuners.oracle import OracleSearch, greedy_corpus_oracle
from hypertune.weights import Weights

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REFS = str(FIXTURES / "mert" / "ref.")


def bleu_plus_one_set(graphs, references) -> TuningSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TuningSet.from_corpus(graphs, references, get_metric("bleu+1", tokenize="none"))


def brute_force(tuning_set: TuningSet, sentence: int, weights: Weights):
    """Every derivation's BLEU+1 (from its words), model score and string."""
    hg = tuning_set.graphs[sentence]
    rows = []
    for d in enumerate_derivations(hg):
        words = hg.derivation_yield(d)
        stats = tuning_set.yield_stats(sentence, [words])[0]
        rows.append((bleu_plus_one(stats, 4), float(weights.edge_scores(hg)[d.edges()].sum()), tuning_set.text(words)))
    return rows


@given(hypergraphs(max_nodes=6, max_derivations=400), st.sampled_from(["a b c", "a a b d", "c d a b c"]))
def test_exact_oracle_is_the_best_string_by_enumeration(hg, reference):
    tuning_set = bleu_plus_one_set([hg], [[reference]])
    weights = Weights({"f0": 0.3, "f1": -0.2, "f2": 0.1})
    found = OracleSearch(method="exact").run(tuning_set, weights).oracles[0]
    assert found.text == tie_ruled_best(brute_force(tuning_set, 0, weights))


def tie_ruled_best(rows) -> str:
    """The string the stated rule picks: best BLEU+1, then best model score, then the greatest string (scores
    equal to 1e-12, model scores to 1e-9)."""
    best = max(r[0] for r in rows)
    tied = [r for r in rows if r[0] >= best - 1e-12]
    model = max(r[1] for r in tied)
    return max(r[2] for r in tied if r[1] >= model - 1e-9)


@given(hypergraphs(max_nodes=6, max_derivations=400), st.sampled_from(["a b c", "a a b d", "c d a b c"]))
def test_linear_oracle_maximizes_linear_bleu_by_enumeration(hg, reference):
    assume(not hg.is_kbest)  # a graph shaped as a k-best list gets the metric's own oracle, whatever the method
    tuning_set = bleu_plus_one_set([hg], [[reference]])
    weights = Weights({"f0": 0.3})
    found = OracleSearch(method="linear", linear_p=0.6, linear_r=0.7).run(tuning_set, weights).oracles[0]
    linear = LinearBleu(0.6, 0.7)
    unclipped = TuningSet([hg], [[reference]], BleuMetric(tokenize="none", clip=False))
    gains = []
    for d in enumerate_derivations(hg):
        words = hg.derivation_yield(d)
        gains.append(float(linear.score(unclipped.yield_stats(0, [words])[0])))
    ours = float(linear.score(unclipped.yield_stats(0, [hg.vocabulary.indices(found.words)])[0]))
    assert ours == pytest.approx(max(gains), abs=1e-9)


def brute_kbest_oracles(weights: Weights):
    """Every list's oracle written out: best BLEU+1, then model score, then string; with its features, and
    the corpus BLEU of the oracles."""
    tuning_set = bleu_plus_one_set(read_graphs(NBEST), read_references(REFS))
    found, total = [], 0.0
    for s, hg in enumerate(tuning_set.graphs):
        stats = tuning_set.edge_stats(s)[1:]
        scores = [bleu_plus_one(row, 4) for row in stats]
        model = weights.edge_scores(hg)[1:]
        texts = [tuning_set.text([t for t in hg.edge_target(e) if t >= 0]) for e in range(1, hg.num_edges)]
        best = max(range(len(scores)), key=lambda i: (scores[i], model[i], texts[i]))
        names = hg.feature_space.names
        row = hg.feature_matrix().toarray()[best + 1]
        found.append((texts[best], scores[best], {names[i]: row[i] for i in np.flatnonzero(row)}))
        total = total + stats[best]
    return found, float(bleu_score(total))


def test_kbest_oracle_and_tie_rules():
    tuning_set = bleu_plus_one_set(read_graphs(NBEST), read_references(REFS))
    weights = Weights({"lm": 0.1, "tm_0": 0.2})
    result = OracleSearch(method="kbest").run(tuning_set, weights)
    expected, bleu = brute_kbest_oracles(weights)
    for oracle, (text, score, _) in zip(result.oracles, expected, strict=True):
        assert oracle.text == text
        assert oracle.score == pytest.approx(score, abs=1e-12)
    assert result.bleu == pytest.approx(bleu)


@given(st.integers(0, 10**6), st.booleans())
def test_greedy_corpus_oracle_ends_where_no_single_switch_helps(seed, best_switch):
    rng = np.random.default_rng(seed)
    sentences, per = 6, 4
    rows = np.zeros((sentences * per, 9))
    counts = rng.integers(3, 12, size=(sentences * per, 1)).astype(float)
    for n in range(4):
        rows[:, 2 * n + 1] = np.maximum(counts[:, 0] - n, 1)
        rows[:, 2 * n] = np.floor(rng.uniform(0.1, 1.0, size=sentences * per) * rows[:, 2 * n + 1])
    rows[:, 8] = rng.integers(4, 12, size=sentences * per)
    owner = np.repeat(np.arange(sentences), per)
    starts = np.arange(0, sentences * per + 1, per)
    start = starts[:-1].copy()
    chosen = greedy_corpus_oracle(rows, owner, starts, start, np.arange(sentences), 4, best_switch)
    total = rows[chosen].sum(axis=0)
    final = float(bleu_score(total))
    assert final >= float(bleu_score(rows[start].sum(axis=0))) - 1e-12
    for r in range(rows.shape[0]):
        s = owner[r]
        assert float(bleu_score(total - rows[chosen[s]] + rows[r])) <= final + 1e-9


def test_cdec_forest_oracles_against_enumeration(shared):
    """cdec's forest 0 (7,633 derivations) with each reference file alone: exact equals the enumerated best
    BLEU+1; linear (p = 0.8, r = 0.6) and partial are held at the hits and gaps docs/oracle.md reports."""
    forests = shared / "cdec" / "forests"
    graphs = read_graphs(str(forests / "training_dpmert_test_data_0.json.gz"))
    figures = []
    for k in range(4):
        references = read_references([str(forests / f"lo_test.ref.{k}")])
        tuning_set = bleu_plus_one_set(graphs, references)
        rows = brute_force(tuning_set, 0, Weights())
        exact = OracleSearch(method="exact").run(tuning_set).oracles[0]
        linear = OracleSearch(method="linear", linear_p=0.8, linear_r=0.6).run(tuning_set).oracles[0].score
        partial = OracleSearch(method="partial").run(tuning_set).oracles[0].score
        assert exact.text == tie_ruled_best(rows)
        figures.append((round(exact.score, 4), round(linear, 4), round(partial, 4)))
    assert figures == [(1.0, 1.0, 1.0), (0.4041, 0.4041, 0.4041), (1.0, 1.0, 1.0), (0.5548, 0.5548, 0.5548)]


def test_corpus_oracle_is_at_least_its_start(shared):
    forests = shared / "cdec" / "forests"
    graphs = read_graphs([str(forests / f"training_dpmert_test_data_{i}.json.gz") for i in (0, 1)])
    tuning_set = bleu_plus_one_set(graphs, read_references([str(forests / f"lo_test.ref.{i}") for i in range(4)]))
    partial = OracleSearch(method="partial").run(tuning_set)
    corpus = OracleSearch(method="corpus").run(tuning_set)
    assert corpus.bleu >= partial.bleu


def test_cli_json_and_out(tmp_path, capsys):
    out = tmp_path / "oracles.txt"
    assert main(["oracle", NBEST, "--refs", REFS, "--method", "kbest", "--out", str(out), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    expected, bleu = brute_kbest_oracles(Weights())
    assert payload["oracle_bleu"] == pytest.approx(bleu)
    assert [e["text"] for e in payload["sentences"]] == [text for text, _, _ in expected]
    assert [e["score"] for e in payload["sentences"]] == pytest.approx([score for _, score, _ in expected])
    assert out.read_text().splitlines() == [text for text, _, _ in expected]


def test_exact_refuses_graphs_above_the_limit(shared, capsys):
    """A metric the branch and bound has no bound for (BLEU with sacrebleu's exp smoothing) is enumerated, up
    to --max-strings (the branch and bound's own limit: tests/tuners/test_oracle_exact.py)."""
    forest = shared / "cdec" / "forests" / "training_dpmert_test_data_1.json.gz"
    refs = shared / "cdec" / "forests" / "lo_test.ref.0"
    code = main(
        ["oracle", str(forest), "--refs", str(refs), "--method", "exact", "--smooth", "exp", "--max-strings", "1000"]
    )
    assert code == 1  # the search's limit, not a bad command line
    assert "more than 1000 distinct strings" in capsys.readouterr().err


@given(hypergraphs(max_nodes=6, max_derivations=400), st.sampled_from(["a b c", "a a b d", "c d a b c"]))
def test_partial_with_one_state_is_the_hope_search_without_the_model(hg, reference):
    from hypertune.metrics.gains import Gain
    from hypertune.tuners.hope_fear import HopeFearDecoder

    tuning_set = bleu_plus_one_set([hg], [[reference]])
    found = OracleSearch(method="partial", beam=1).run(tuning_set).oracles[0]
    decoder = HopeFearDecoder(tuning_set)
    edges = decoder.best_edges(0, decoder.edge_scores(0, np.zeros(3)), Gain("bleu+1"), 0.0, 1.0)
    assert found.text == tuning_set.text(decoder.words(0, edges))


@given(hypergraphs(max_nodes=6, max_derivations=400), st.sampled_from(["a b c", "a a b d"]), st.integers(2, 6))
def test_partial_with_a_beam_returns_a_derivation_of_the_graph(hg, reference, beam):
    tuning_set = bleu_plus_one_set([hg], [[reference]])
    found = OracleSearch(method="partial", beam=beam).run(tuning_set).oracles[0]
    strings = {tuning_set.text(hg.derivation_yield(d)) for d in enumerate_derivations(hg)}
    assert found.text in strings
    stats = tuning_set.yield_stats(0, [hg.vocabulary.indices(found.words)])[0]
    assert found.score == pytest.approx(bleu_plus_one(stats, 4), abs=1e-12)


def test_approximate_oracles_quality_on_random_forests_is_held():
    """docs/oracle.md's table: on 100 seeded random forests, how often each approximation finds the exact
    BLEU+1 oracle (enumerated) and its mean gap to it."""
    from hypertune.bench.oracle import oracle_quality

    figures = oracle_quality(100, seed=0)
    rounded = {name: (round(f["hits"], 2), round(100 * f["gap"], 1)) for name, f in figures.items()}
    assert rounded == {"linear": (0.45, 7.7), "partial": (0.36, 10.2), "partial, beam 4": (0.7, 2.0)}


def test_cli_writes_an_nbest_list_that_reads_back(tmp_path):
    out = tmp_path / "oracles.nbest"
    weights = str(FIXTURES / "mert" / "init.weights")
    assert (
        main(["oracle", NBEST, "--refs", REFS, "--method", "kbest", "--weights", weights, "--out", str(out), "--nbest"])
        == 0
    )
    expected, _ = brute_kbest_oracles(read_weights_file(weights))
    written = read_graphs(str(out))
    assert [g.sentence_id for g in written] == list(range(5))
    for graph, (text, _, features) in zip(written, expected, strict=True):
        assert " ".join(graph.vocabulary.words([t for t in graph.edge_target(1) if t >= 0])) == text
        names = graph.feature_space.names
        row = graph.feature_matrix().toarray()[1]
        assert {names[i]: row[i] for i in np.flatnonzero(row)} == pytest.approx(features)
