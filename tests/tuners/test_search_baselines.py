"""MERT's baselines without line searches, ``--optimizer random-search`` and ``--optimizer grid``: the grid's
choice against a brute-force evaluation of the same grid (numpy argmax of features · weights per sentence,
corpus BLEU by sacrebleu on the chosen text), random search's seeding and reported score against an
independent rescoring, sharding, the errors, and the command line on the fixture n-best list."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from support import plain_rescoring as plain
from support.paths import FIXTURES

from hypertune.cli import main
from hypertune.errors import UsageError
from hypertune.hypergraph import from_kbest
from hypertune.metrics import BleuMetric
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.mert import Mert
from hypertune.tuners.shards import LocalShards
from hypertune.weights import Weights

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REFS = str(FIXTURES / "mert" / "ref.")
INIT = str(FIXTURES / "mert" / "init.weights")
WORDS = ("a", "b", "c")
#: Dyadic start values and nonzero integer features: every model score is exact, whatever the summation order.
STARTS = (-1.0, -0.5, 0.0, 0.25, 0.5, 1.0)
FEATURE_VALUES = st.sampled_from((-3.0, -2.0, -1.0, 1.0, 2.0, 3.0))

Lists = list[list[tuple[str, dict[str, float]]]]


@st.composite
def kbest_corpora(draw: st.DrawFn) -> tuple[Lists, list[str], dict[str, float]]:
    """2 to 4 sentences of 2 to 4 hypotheses over ``width`` features f0, f1, ... (every one present), one
    reference each, and dyadic start weights."""
    width = draw(st.integers(1, 3))
    names = [f"f{k}" for k in range(width)]
    text = st.lists(st.sampled_from(WORDS), min_size=2, max_size=5).map(" ".join)
    hypothesis = st.tuples(text, st.fixed_dictionaries({n: FEATURE_VALUES for n in names}))
    lists = draw(st.lists(st.lists(hypothesis, min_size=2, max_size=4), min_size=2, max_size=4))
    refs = [draw(text) for _ in lists]
    start = {n: draw(st.sampled_from(STARTS)) for n in names}
    return lists, refs, start


def tuning_set(lists: Lists, refs: list[str]) -> TuningSet:
    space, vocabulary = FeatureSpace(), Vocabulary()
    # features by name: the grid's axes are the feature space's columns, numbered in order of appearance
    graphs = [from_kbest([(t, dict(sorted(f.items()))) for t, f in hyps], space, vocabulary) for hyps in lists]
    return TuningSet(graphs, [[r] for r in refs], BleuMetric(tokenize="none", max_order=2))


def sacrebleu_of(lists: Lists, refs: list[str], weights: dict[str, float]) -> sacrebleu.metrics.bleu.BLEUScore:
    """Each list's first highest features · weights (plain numpy), scored by sacrebleu (BLEU-2, tokenize none)."""
    names = sorted(weights)
    w = np.array([weights[n] for n in names])
    chosen = [hyps[int(np.argmax(np.array([[f[n] for n in names] for _, f in hyps]) @ w))][0] for hyps in lists]
    bleu = sacrebleu.metrics.BLEU(tokenize="none", smooth_method="none", max_ngram_order=2)
    return bleu.corpus_score(chosen, [refs])


@settings(max_examples=25)
@given(kbest_corpora(), st.sampled_from((3, 5)))
def test_grid_is_the_best_point_of_a_brute_force_grid(corpus, points):
    """The start point, then every point of the grid over [-1, 1] (no init.opt ranges) in itertools.product
    order over f0, f1, ...: the result is the first best of them."""
    lists, refs, start = corpus
    names = sorted(start)
    axis = np.linspace(-1.0, 1.0, points)  # dyadic for 3 and 5 points
    candidates = [start] + [dict(zip(names, p, strict=True)) for p in itertools.product(axis, repeat=len(names))]
    scored = [sacrebleu_of(lists, refs, c) for c in candidates]
    scores = [s.score / 100 for s in scored]
    stats = [(tuple(s.counts), tuple(s.totals), s.sys_len, s.ref_len) for s in scored]
    best = max(scores)
    near_best = {stats[i] for i, s in enumerate(scores) if s >= best - 1e-9}

    result = Mert(optimizer="grid", grid_points=points, normalize="none").fit(tuning_set(lists, refs), Weights(start))
    found = {n: result.weights[n] for n in names}
    chosen = candidates.index(found)  # a candidate, exactly
    assert stats[chosen] in near_best  # a best one ...
    assert stats.index(stats[chosen]) == chosen  # ... the first of those with its statistics (first on ties)
    if len(near_best) == 1:  # no near tie between different statistics: exactly the brute force's choice
        assert chosen == scores.index(best)
    assert result.score_after == pytest.approx(best, abs=1e-12)
    assert result.score_before == pytest.approx(scores[0], abs=1e-12)
    assert result.kept_start == (chosen == 0)
    assert result.line_searches == 0
    assert [entry.iteration for entry in result.history] == [1, *range(101, len(candidates), 100), len(candidates)]
    assert result.history[-1].score == result.score_after


@settings(max_examples=20)
@given(kbest_corpora(), st.integers(0, 2**32 - 1))
def test_random_search_is_seeded_and_reports_its_weights_score(corpus, seed):
    lists, refs, start = corpus
    tuning = tuning_set(lists, refs)
    # as found (not L1-normalized: dividing the dyadic start weights rounds, which may break exact ties)
    result = Mert(optimizer="random-search", samples=30, seed=seed, normalize="none").fit(tuning, Weights(start))
    again = Mert(optimizer="random-search", samples=30, seed=seed, normalize="none").fit(tuning, Weights(start))
    assert dict(result.weights) == dict(again.weights)
    written = dict(result.weights)
    assert result.score_after == pytest.approx(sacrebleu_of(lists, refs, written).score / 100, abs=1e-12)
    assert result.score_before == pytest.approx(sacrebleu_of(lists, refs, start).score / 100, abs=1e-12)
    assert result.score_after >= result.score_before
    assert result.kept_start or all(-1.0 <= v <= 1.0 for v in written.values())  # drawn from [-1, 1]


def fixture_set() -> TuningSet:
    from hypertune.formats import read_graphs, read_references

    return TuningSet.from_corpus(read_graphs(NBEST), read_references(REFS), BleuMetric(tokenize="none"))


def test_random_search_draws_within_the_box_and_bounds_from_one_stream():
    """Unnormalized results lie within init.opt's box and the bounds; a run's draws are the first of a run
    with more (its history's best-so-far is a prefix)."""
    from hypertune.formats import read_weights

    tuning, init = fixture_set(), read_weights(INIT)
    box = ({"LM0": 0.0, "TM0_0": -0.5}, {"LM0": 0.5, "TM0_0": 0.5})
    for seed in range(5):
        result = Mert(
            optimizer="random-search", samples=50, seed=seed, restart_box=box, bounds={"TM0_1": (-0.25, 0.0)},
            positive=True, normalize="none",
        ).fit(tuning, init)  # fmt: skip
        w = result.weights
        assert 0.0 <= w["LM0"] <= 0.5 and 0.0 <= w["TM0_0"] <= 0.5 and w["TM0_1"] == 0.0  # (positive: >= 0)
        assert 0.0 <= w["WordPenalty0"] <= 1.0  # [-1, 1] where init.opt says nothing, and positive
    short = Mert(optimizer="random-search", samples=100, seed=3).fit(tuning, init)
    long = Mert(optimizer="random-search", samples=250, seed=3).fit(tuning, init)
    assert [e.iteration for e in long.history] == [1, 101, 201, 251]
    assert [e.score for e in long.history[:2]] == [e.score for e in short.history]


@pytest.mark.parametrize("optimizer", ["random-search", "grid"])
def test_sharded_search_is_the_whole_sets_bit_for_bit(optimizer):
    from hypertune.formats import read_weights

    tuning, init = fixture_set(), read_weights(INIT)
    tuner = Mert(optimizer=optimizer, samples=120, grid_points=7, fixed=["TM0_1"], seed=4, normalize="none")
    whole = tuner.fit(tuning, init)
    for count in (2, 3):
        sharded = tuner.fit_shards(LocalShards(tuning, count), init)
        assert dict(sharded.weights) == dict(whole.weights)
        assert [e.score for e in sharded.history] == [e.score for e in whole.history]
        assert sharded.score_after == whole.score_after


def test_errors():
    from hypertune.formats import read_weights

    tuning, init = fixture_set(), read_weights(INIT)
    with pytest.raises(UsageError, match=r"at most 3 free features, these inputs have 4 \(LM0, TM0_0, TM0_1, Word"):
        Mert(optimizer="grid").fit(tuning, init)
    with pytest.raises(UsageError, match=r"a grid of 200 x 200 x 200 = 8,000,000 points is more than 1,000,000"):
        Mert(optimizer="grid", grid_points=200, fixed=["LM0"]).fit(tuning, init)
    with pytest.raises(UsageError, match="restarts is for the line-search optimizers; optimizer grid"):
        Mert(optimizer="grid", restarts=2)
    with pytest.raises(UsageError, match="random_directions is for the line-search optimizers"):
        Mert(optimizer="random-search", random_directions=2)
    with pytest.raises(UsageError, match="grid_points must be at least 2"):
        Mert(optimizer="grid", grid_points=1)
    with pytest.raises(UsageError, match="no grid point fits the restart box and the bounds"):
        Mert(optimizer="grid", fixed=["LM0"], bounds={"TM0_0": (2.0, 3.0)}).fit(tuning, init)


@pytest.mark.parametrize(
    ("optimizer", "extra"),
    [
        ("random-search", ["--samples", "40", "--seed", "7"]),
        ("grid", ["--fix", "WordPenalty0", "--grid-points", "9", "--normalize", "none"]),
    ],
)
def test_cli_score_after_is_the_written_weights_score(optimizer, extra, tmp_path, capsys):
    """``hypertune mert --optimizer ...`` on the fixture: the written weights' model-best translations (a
    plain reader, sacrebleu) score what the JSON reports."""
    out = tmp_path / "tuned"
    argv = ["mert", NBEST, "--refs", REFS, "--init", INIT, "--optimizer", optimizer, *extra]
    assert main([*argv, "--out", str(out), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    lists, streams = plain.read_nbest(NBEST), plain.reference_streams(REFS)
    written = plain.read_weights(out)
    assert payload["score_after"] == pytest.approx(plain.corpus_bleu(plain.model_best(lists, written), streams))
    start = plain.read_weights(INIT)
    assert payload["score_before"] == pytest.approx(plain.corpus_bleu(plain.model_best(lists, start), streams))
    assert payload["line_searches"] == 0 and payload["score_after"] >= payload["score_before"]
    if optimizer == "grid" and not payload["kept_start"]:  # grid points over [-1, 1], the fixed feature kept
        assert written["WordPenalty0"] == start["WordPenalty0"]
        assert all(written[n] in np.linspace(-1, 1, 9) for n in ("LM0", "TM0_0", "TM0_1"))
