"""Batch MIRA: the compiled k-best epochs against a plain reference implementation of Cherry & Foster's
Algorithm 1 (kbmira conventions), forest mode against k-best mode, averaging, pruning, CLI, shared data."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.plain_rescoring import corpus_bleu, model_best
from support.strategies import hypergraphs, weights

from hypertune.algorithms import enumerate_derivations
from hypertune.algorithms.prune import max_marginals, prune
from hypertune.cli import hope_fear_command, mira_command
from hypertune.generate import random_kbest
from hypertune.hypergraph import from_kbest
from hypertune.metrics import BleuMetric
from hypertune.metrics.background import SCALE_MOSES, background_bleu_distinct, background_bleu_rows
from hypertune.metrics.gains import Gain
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners import mira as mira_module
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.hope_fear import HopeFearDecoder
from hypertune.tuners.mira import _apply_update, _averaged, _bits, _first_equal, _index_array, batch_mira
from hypertune.tuners.sentence_ids import merge_kbest
from hypertune.weights import Weights


def _corpus(seed: int, sentences: int = 8, size: int = 12) -> tuple[TuningSet, Weights]:
    rng = np.random.default_rng(seed)
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs = [
        random_kbest(size, num_features=5, vocabulary_size=8, seed=rng, feature_space=space, vocabulary=vocabulary)
        for _ in range(sentences)
    ]
    refs = [[" ".join(f"w{i}" for i in rng.integers(0, 8, size=6))] for _ in range(sentences)]
    init = Weights({f"F{i}": float(rng.normal()) for i in range(5)})
    return TuningSet(graphs, refs, BleuMetric(tokenize="none")), init


def _reference_mira(tuning_set, init, C=0.01, decay=0.999, epochs=5, seed=0, model_bg=False):
    """Algorithm 1 written plainly (dense numpy, Python loops), kbmira's conventions."""
    space = tuning_set.feature_space
    w = init.vector(space)
    history = [w.copy()]
    bg = np.ones(tuning_set.stats_size)
    rng = np.random.default_rng(seed)
    feats = [g.feature_matrix(len(space))[1:].toarray() for g in tuning_set.graphs]
    stats = [tuning_set.edge_stats(s)[1:] for s in range(len(tuning_set))]
    # the k-best pack keeps the first of identical (features, stats) rows
    for s in range(len(feats)):
        _, first = np.unique(np.hstack([feats[s], stats[s]]), axis=0, return_index=True)
        keep = np.sort(first)
        feats[s], stats[s] = feats[s][keep], stats[s][keep]
    gain = Gain("background", decay=decay)
    best, best_bleu = None, -np.inf
    for _ in range(epochs):
        for s in rng.permutation(len(feats)):
            gain.background = bg
            scores = feats[s] @ w
            gains = np.asarray(gain.score(stats[s]))
            hope, fear, model = np.argmax(scores + gains), np.argmax(scores - gains), np.argmax(scores)
            if hope == fear or not gains[hope] > gains[fear]:
                continue
            diff = feats[s][hope] - feats[s][fear]
            loss = gains[hope] - gains[fear] - diff @ w
            if loss > 0 and diff @ diff > 0:
                w = w + min(C, loss / (diff @ diff)) * diff
                history.append(w.copy())
            bg = decay * bg + stats[s][model if model_bg else hope]
        avg = np.mean(history, axis=0)
        total = sum(stats[s][np.argmax(feats[s] @ avg)] for s in range(len(feats)))
        bleu = tuning_set.score(total)
        if bleu > best_bleu:
            best, best_bleu = avg, bleu
    return best, best_bleu


@pytest.mark.parametrize("seed", [0, 2, 10])  # seed 0: BLEU 0 throughout, the start weights kept
@pytest.mark.parametrize("model_bg", [False, True])
def test_kbest_mira_matches_reference(seed, model_bg):
    tuning_set, init = _corpus(seed)
    result = batch_mira(tuning_set, init, epochs=5, seed=seed, model_bg=model_bg, C=0.05, normalize="none")
    expected, bleu = _reference_mira(tuning_set, init, C=0.05, epochs=5, seed=seed, model_bg=model_bg)
    start = init.vector(tuning_set.feature_space)
    graphs = tuning_set.graphs
    start_bleu = tuning_set.score(sum(tuning_set.edge_stats(s)[1:][np.argmax(g.feature_matrix(start.size)[1:] @ start)]
                                      for s, g in enumerate(graphs)))  # fmt: skip
    kept = not bleu > start_bleu  # the start weights are a candidate (hypertune.tuners.finishing)
    if kept:
        expected, bleu = start, start_bleu
    assert result.kept_start == kept
    got = Weights(result.weights).vector(tuning_set.feature_space)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    assert result.bleu_after == pytest.approx(bleu)


@pytest.mark.parametrize("seed", [0, 3])
def test_hypergraph_mode_equals_kbest_mode_on_kbest_lists(seed):
    tuning_set, init = _corpus(seed)
    a = batch_mira(tuning_set, init, epochs=4, seed=seed, mode="nbest")
    b = batch_mira(tuning_set, init, epochs=4, seed=seed, mode="hypergraph")
    space = tuning_set.feature_space
    np.testing.assert_allclose(Weights(a.weights).vector(space), Weights(b.weights).vector(space), rtol=1e-9)
    assert a.bleu_after == pytest.approx(b.bleu_after)


def test_mira_is_seeded_and_improves_training_bleu():
    """On twenty k-best lists drawn here (kept as plain word lists and feature dicts), MIRA's reported BLEU
    before and after are sacrebleu's of the lists rescored under the start and the returned weights, and
    the returned weights score higher (0.0 -> 0.106 by that rescoring)."""
    rng = np.random.default_rng(1)
    lists = [
        [
            (
                " ".join(f"w{i}" for i in rng.integers(0, 4, size=int(rng.integers(3, 9)))),
                {f"F{i}": float(v) for i, v in enumerate(rng.standard_normal(5))},
            )
            for _ in range(12)
        ]
        for _ in range(20)
    ]
    references = [" ".join(f"w{i}" for i in rng.integers(0, 4, size=6)) for _ in range(20)]
    start = {f"F{i}": float(rng.normal()) for i in range(5)}
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs = [from_kbest(hypotheses, space, vocabulary) for hypotheses in lists]
    tuning_set = TuningSet(graphs, [[r] for r in references], BleuMetric(tokenize="none"))

    a = batch_mira(tuning_set, Weights(start), epochs=10, seed=7)
    b = batch_mira(tuning_set, Weights(start), epochs=10, seed=7)
    assert dict(a.weights) == dict(b.weights)
    before = corpus_bleu(model_best(lists, start), [references])
    after = corpus_bleu(model_best(lists, dict(a.weights)), [references])
    assert a.bleu_before == pytest.approx(before, abs=1e-12) and a.bleu_after == pytest.approx(after, abs=1e-12)
    assert after > before + 0.05 and not a.kept_start
    assert len(a.epochs) == 10 and 1 <= a.best_epoch <= 10


def test_averaging_counts_initial_weights_once():
    w = np.array([1.0, 2.0, 0.0])
    totals, last, state = w.copy(), np.zeros(3), np.zeros(1)
    seen = [w.copy()]
    for idx, diff in (([0], [1.0]), ([2], [3.0]), ([0, 1], [-1.0, 0.5])):
        _apply_update(np.asarray(idx), np.asarray(diff), 0.5, w, totals, last, state)
        seen.append(w.copy())
    np.testing.assert_allclose(_averaged(w, totals, last, state), np.mean(seen, axis=0))


@pytest.mark.parametrize("seed", [0, 4])
def test_first_equal_matches_dense_unique(seed):
    """The hashed duplicate search of the k-best pack against np.unique on dense rows (explicit zeros ignored)."""
    rng = np.random.default_rng(seed)
    offsets = np.asarray([0, 30, 30, 75, 120], dtype=np.int64)
    dense = rng.integers(-1, 2, size=(120, 4)).astype(np.float64)
    stats = rng.integers(0, 2, size=(120, 3)).astype(np.float64)
    mask = rng.random(dense.shape) < 0.8  # stored entries, some of them explicit zeros
    indptr = np.concatenate(([0], np.cumsum(mask.sum(axis=1)))).astype(np.int64)
    indices = np.nonzero(mask)[1].astype(np.int64)
    data = dense[mask]
    dense[~mask] = 0.0
    for with_features in (True, False):
        group = _index_array(120)
        keep = _first_equal(offsets, indptr, indices, data, stats, _bits(stats), _bits(data), with_features, group)
        first = keep[group]
        for lo, hi in zip(offsets[:-1], offsets[1:], strict=True):
            rows = np.hstack([dense[lo:hi], stats[lo:hi]]) if with_features else stats[lo:hi]
            if hi == lo:
                continue
            _, firsts, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
            np.testing.assert_array_equal(first[lo:hi], lo + firsts[inverse.ravel()])


def test_cached_background_gains_equal_the_gain():
    """Logs taken once per distinct value give the gains of the background BLEU kernel bit for bit,
    non-positive pseudo-counts included."""
    tuning_set, _ = _corpus(2, sentences=6)
    runner = mira_module._KbestRunner(tuning_set, HopeFearDecoder(tuning_set))
    distinct = runner.distinct
    groups = distinct.group_stats.shape[0]
    for background in (np.full(9, 1.0), np.linspace(-0.5, 3.0, 9), np.zeros(9)):
        gain = Gain("background")
        gain.background = background
        out = np.empty(groups)
        logs, nonpositive = np.empty(distinct.values.size), np.empty(distinct.values.size, dtype=bool)
        for s in range(len(tuning_set)):
            background_bleu_distinct(s, distinct, background, 4, logs, nonpositive, out)
        np.testing.assert_array_equal(out, gain.score(distinct.group_stats))
        np.testing.assert_array_equal(out[distinct.group], gain.score(runner.rows.stats))
        kernel = background_bleu_rows(distinct.group_stats, background, 4, SCALE_MOSES, 0.0)
        np.testing.assert_array_equal(out, kernel)


@pytest.mark.parametrize("seed", [0, 1])
def test_sparse_and_dense_kbest_scoring_agree(seed, monkeypatch):
    tuning_set, init = _corpus(seed)
    dense = batch_mira(tuning_set, init, epochs=5, seed=seed, safe_hope=True)
    monkeypatch.setattr(mira_module, "_DENSE_LIMIT", 0)
    sparse = batch_mira(tuning_set, init, epochs=5, seed=seed, safe_hope=True)
    assert dict(dense.weights) == dict(sparse.weights) and dense.best_epoch == sparse.best_epoch
    assert [e.bleu for e in dense.epochs] == [e.bleu for e in sparse.epochs]


@settings(max_examples=40)
@given(hypergraphs(max_nodes=6), weights, st.integers(1, 6))
def test_prune_max_marginals_and_kept_best(hg, w, keep):
    scores = w.edge_scores(hg)
    derivations = enumerate_derivations(hg)
    totals = [scores[d.edges()].sum() for d in derivations]
    expected = np.full(hg.num_edges, -np.inf)
    for d, total in zip(derivations, totals, strict=True):
        for e in set(d.edges()):
            expected[e] = max(expected[e], total)
    np.testing.assert_allclose(max_marginals(hg, scores), expected)
    pruned, kept = prune(hg, scores, keep)
    best = max(totals)
    assert max(w.edge_scores(pruned)[d.edges()].sum() for d in enumerate_derivations(pruned)) == pytest.approx(best)
    assert np.all(expected[kept] >= np.sort(expected)[::-1][min(keep, hg.num_edges) - 1] - 1e-12)


def _run(command, argv):
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    command.register(sub)
    args = parser.parse_args(argv)
    return args.run(args)


def test_cli_featstat_kbmira_style(shared, tmp_path, capsys):
    folder = shared / "moses" / "featstat-10x100"
    out = tmp_path / "w"
    argv = ["mira", "-F", str(folder / "FEATSTAT.txt"), "-S", str(folder / "SCORESTAT.txt"), "-d", str(folder / "INIT")]
    assert _run(mira_command, [*argv, "-r", "1", "-o", str(out), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert {"bleu_before", "bleu_after", "weights", "timing"} <= set(payload)
    assert payload["bleu_after"] > payload["bleu_before"]
    assert out.read_text().count("\n") == 14


def test_cli_accumulates_nbest_iterations(shared, capsys):
    folder = shared / "moses" / "nbest-5iter"
    init = shared / "moses" / "featstat-10x100" / "INIT"
    files = [str(folder / f"nbest.{i}.gz") for i in range(1, 6)]
    argv = ["mira", *files, "--refs", str(folder / "reference"), "--init", str(init), "--json", "--epochs", "20"]
    assert _run(mira_command, argv) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["sentences"] == 10 and payload["mode"] == "nbest"
    assert payload["bleu_after"] > payload["bleu_before"]


def test_merge_kbest_deduplicates_in_pack(shared):
    from hypertune.formats import read_graphs

    folder = shared / "moses" / "nbest-5iter"
    graphs = read_graphs([str(folder / "nbest.1.gz"), str(folder / "nbest.1.gz")])
    merged = merge_kbest(graphs)
    first = graphs[0]
    unique = {
        (tuple(first.edge_target(e)), tuple(sorted(first.edge_features(e).items()))) for e in range(1, first.num_edges)
    }
    assert len(merged) == 10 and merged[0].num_edges == len(unique) + 1


def test_cli_hypergraph_and_hope_fear(shared, capsys):
    folder = shared / "moses" / "toy-forest"
    argv = ["hope-fear", str(folder / "0"), "--refs", str(folder / "ref"), "--weights", str(folder / "dense.weights")]
    assert _run(hope_fear_command, [*argv, "--background", "0.1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["sentences"][0]
    assert row["hope"]["text"] == "a b c d h k" and row["model"]["text"] == "a b j k"
    argv = ["mira", str(folder / "0"), "--refs", str(folder / "ref"), "--init", str(folder / "dense.weights")]
    assert _run(mira_command, [*argv, "--epochs", "3", "--json", "--safe-hope", "--accumulate"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["mode"] == "hypergraph" and payload["bleu_after"] >= payload["bleu_before"]


@pytest.mark.slow
def test_moses_hypergraph_hope_is_the_reference(shared):
    """With the model-best translation as reference, hope = model-best (BLEU 1), before and after pruning."""
    from hypertune.algorithms import viterbi
    from hypertune.formats import read_graphs, read_weights
    from hypertune.tuners.hope_fear import HopeFearDecoder
    from hypertune.tuners.pruning import prune_tuning_set

    folder = shared / "moses" / "hypergraphs" / "sparse"
    graphs = read_graphs([str(folder / "hg.gz")])
    weights = read_weights([str(folder / "dense.weights"), str(folder / "sparse.weights")])
    reference = " ".join(w for w in viterbi(graphs[0], weights).words if w not in ("<s>", "</s>"))
    tuning_set = TuningSet(graphs, [[reference]], BleuMetric(tokenize="none"))
    for data in (tuning_set, prune_tuning_set(tuning_set, weights, 50)):
        result = HopeFearDecoder(data).hope_fear(0, weights.vector(data.feature_space), Gain())
        assert data.metric.score(result.hope.stats) == pytest.approx(1.0)
        assert result.model.words.tolist() == result.hope.words.tolist()
        assert result.fear.gain < result.hope.gain
    mira = batch_mira(tuning_set, weights, epochs=2, seed=1)
    assert mira.bleu_before == pytest.approx(1.0) and mira.mode == "hypergraph"


def test_duplicate_rows_found_exactly_even_when_hashes_collide():
    """``_first_equal`` against a brute-force dictionary of row contents, with real hashes and with every
    hash made equal (all rows collide: only the exact comparison can tell them apart)."""
    import scipy.sparse as sp

    from hypertune.tuners.mira import _bits, _first_equal, _index_array

    rng = np.random.default_rng(4)
    offsets = np.array([0, 30, 31, 80], dtype=np.int64)
    stats = rng.integers(0, 2, size=(80, 3)).astype(np.float64)
    dense = rng.integers(0, 2, size=(80, 2)).astype(np.float64) * rng.choice([-1.0, 0.5], size=(80, 2))
    features = sp.csr_matrix(dense)
    features.sort_indices()
    expected = np.arange(80)
    for lo, hi in zip(offsets[:-1], offsets[1:], strict=True):
        seen: dict[tuple, int] = {}
        for r in range(lo, hi):
            expected[r] = seen.setdefault((tuple(stats[r]), tuple(dense[r])), r)
    assert 20 < np.count_nonzero(expected != np.arange(80)) < 70  # duplicates and distinct rows both
    args = (offsets, features.indptr.astype(np.int64), features.indices.astype(np.int64), features.data, stats)
    colliding = (np.zeros_like(_bits(stats)), np.zeros_like(_bits(features.data)))
    for bits in ((_bits(stats), _bits(features.data)), colliding):
        group = _index_array(80)
        keep = _first_equal(*args, *bits, True, group)
        assert np.array_equal(keep[group], expected)


def test_dense_init_one_weight_per_line_reads_as_the_line_it_stands_for(shared, tmp_path, capsys):
    """kbmira still takes a legacy dense file written one weight per line: so does hypertune, with a warning,
    and the run equals the one from the same numbers on one line."""
    folder = shared / "moses" / "featstat-10x100"
    line = (folder / "INIT").read_text().splitlines()[0]
    one_line, column = tmp_path / "line", tmp_path / "column"
    one_line.write_text(line + "\n")
    column.write_text("\n".join(line.split()) + "\n")
    runs = []
    for init in (one_line, column):
        args = ["mira", "-F", str(folder / "FEATSTAT.txt"), "-S", str(folder / "SCORESTAT.txt"), "--dense-init",
                str(init), "-J", "3", "--json"]  # fmt: skip
        from hypertune.cli import main

        assert main(args) == 0
        captured = capsys.readouterr()
        runs.append(json.loads(captured.out)["weights"])
        assert ("legacy dense format" in captured.err) == (init == column)
    assert runs[0] == runs[1]


def test_hypergraph_mira_reports_the_written_weights_on_unpruned_graphs(moses_pair, tmp_path, capsys):
    """Epochs are scored on graphs pruned to --prune-density, but ``bleu_after`` is what the written weights
    give when the inputs are decoded again (whole graphs, scored by sacrebleu: ``moses_pair``)."""
    from hypertune.formats import read_weights

    out, redecoded = tmp_path / "tuned", moses_pair["redecoded"]
    argv = ["mira", str(moses_pair["folder"]), "--refs", str(moses_pair["ref"]), "--init", str(moses_pair["init"])]
    for shards in ([], ["--shards", "2"]):  # one process, and parameter mixing over two shards
        assert _run(mira_command, [*argv, *shards, "--out", str(out), "--epochs", "4", "--seed", "3", "--json"]) == 0
        payload = json.loads(capsys.readouterr().out)
        assert payload["bleu_after"] == pytest.approx(redecoded(read_weights([str(out)])), abs=1e-12)
        assert payload["bleu_before"] == pytest.approx(redecoded(read_weights([str(moses_pair["init"])])), abs=1e-12)
        assert payload["pruned_score_after"] is not None
        if not shards:  # the case this test is about: pruning changed the figure
            assert payload["pruned_score_after"] != pytest.approx(payload["bleu_after"])


def test_options_refuse_in_parameter_names_and_the_command_in_flags(capsys):
    """MiraOptions' checks worded in parameter names; the command's in its flags (expected strings by hand)."""
    from support.paths import FIXTURES

    from hypertune.cli import main
    from hypertune.tuners.mira import Mira
    from hypertune.tuners.mira_options import MiraOptions
    from hypertune.tuners.options import OptionError

    refused = {
        (("gain", "linear"),): "gain linear needs linear, a LinearBleu (its p and r)",
        (("gain", "bleu"),): "gain must be one of background, bleu+1, linear, moses, nakov, got 'bleu'",
        (("C", 0.0),): "C must be greater than 0, got 0.0",
        (("decay", 1.5),): "decay must be at most 1, got 1.5",
        (("epochs", 0),): "epochs must be at least 1, got 0",
        (("mode", "lattice"),): "mode must be one of auto, nbest, hypergraph, got 'lattice'",
    }
    for fields, message in refused.items():
        with pytest.raises(OptionError) as error:
            Mira(**dict(fields))
        assert str(error.value) == message
    assert Mira(MiraOptions(epochs=3), seed=2).options == MiraOptions(epochs=3, seed=2)
    tuning = [str(FIXTURES / "mert" / "nbest.txt"), "--refs", str(FIXTURES / "mert" / "ref."), "--init",
              str(FIXTURES / "mert" / "init.weights"), "--epochs", "1"]  # fmt: skip
    assert main(["mira", *tuning, "--select", "2"]) == 2
    assert capsys.readouterr().err.strip() == (
        "hypertune mira: error: --select chooses the features mixed over shards: give --cluster or --shards"
    )
    with pytest.raises(SystemExit):
        main(["mira", *tuning, "-C", "0"])
    assert capsys.readouterr().err.strip().endswith("error: argument -C/--cparam: must be greater than 0, got '0'")
