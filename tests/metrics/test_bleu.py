"""BLEU statistics and scores: reference values (Moses, cdec, sacrebleu) and properties."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st

from hypertune.errors import InputError, UsageError
from hypertune.metrics import (
    BleuMetric,
    bleu_score,
    bleu_stats_batch,
    build_references,
    get_metric,
    reference_bleu_stats,
    transpose_references,
)
from hypertune.symbols import Vocabulary

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def shared(*parts: str) -> Path:
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return path


# ------------------------------------------------------------------------------------------------
# Moses scorer test values (mert/BleuScorerTest.cpp): m1 c1 m2 c2 m3 c3 m4 c4 reflen
MOSES_STATS = np.array([6, 6, 4, 5, 2, 4, 1, 3, 7], dtype=float)


@pytest.mark.parametrize(
    ("smooth", "value", "expected"),
    [
        ("none", None, 0.5115),
        ("moses", None, 0.5985),  # BLEU+1, Moses variant (+1 on every order)
        ("moses", 0.5, 0.5624),
        ("nakov", None, 0.5067),  # brevity-penalty smoothing (+1 to the reference length too)
    ],
)
def test_moses_reference_values(smooth: str, value: float | None, expected: float) -> None:
    # Moses checks these with IsAlmostEqual (|difference| < 1e-4); 0.5985 is really 0.598553.
    metric = BleuMetric(smooth=smooth, smooth_value=value)
    assert metric.score(MOSES_STATS) == pytest.approx(expected, abs=1e-4)


def test_moses_clipped_counts_example() -> None:
    # Koehn (2010) example used by Moses's BleuScorerTest: clipped counts against four references.
    refs = [
        "israeli officials are responsible for airport security",
        "israel is in charge of the security at this airport",
        "the security work for this airport is the responsibility of the israel government",
        "israli side was in charge of the security of this airport",
    ]
    stats = BleuMetric(tokenize="none").stats("israeli officials responsibility of airport safety", refs)
    assert stats[:8].tolist() == [5, 6, 2, 5, 0, 4, 0, 3]


def test_lin_och_plus1() -> None:
    # +1 to matches and counts of orders above one only; brevity penalty unsmoothed
    expected = np.exp(np.mean(np.log([6 / 6, 5 / 6, 3 / 5, 2 / 4])) + (1 - 7 / 6))
    assert BleuMetric(smooth="plus1").score(MOSES_STATS) == pytest.approx(expected, rel=1e-12)


# ------------------------------------------------------------------------------------------------
# cdec IBM BLEU (mteval/scorer_test.cc TestBLEUScorer)
def test_cdec_ibm_bleu_fixture() -> None:
    path = shared("cdec", "bleu", "scorer_test_fixture.tsv")
    rows = dict(line.rstrip("\n").split("\t", 1) for line in path.read_text(encoding="utf-8").splitlines())
    refs0 = [rows[f"refs0[{i}]"] for i in range(4)]
    refs1 = [rows[f"refs1[{i}]"] for i in range(4)]
    metric = get_metric("ibm-bleu", tokenize="none")
    s1 = metric.stats(rows["hyp1"], refs0)
    s2 = metric.stats(rows["hyp2"], refs1)
    # cdec computes in single precision: compare to the printed digits
    assert metric.score(s1) == pytest.approx(0.23185077, abs=2e-8)
    assert metric.score(s2) == pytest.approx(0.38101241, abs=2e-8)
    assert metric.score(s1 + s2) == pytest.approx(0.348854, abs=1e-6)
    parts = metric.breakdown(s1 + s2)
    assert f"{100 * parts['score']:.2f}" == "34.89"
    assert "|".join(f"{100 * p:.1f}" for p in parts["precisions"]) == "81.5|50.8|29.5|18.6"
    assert f"{parts['bp']:.3f}" == "0.898"


def test_ibm_scoring_rules() -> None:
    # zero matches count 0.01; orders without hypothesis n-grams are left out of the average
    stats = np.array([2, 2, 0, 1, 0, 0, 0, 0, 2], dtype=float)
    expected = np.exp((np.log(2 / 2) + np.log(0.01 / 1)) / 2)
    assert get_metric("ibm-bleu").score(stats) == pytest.approx(expected, rel=1e-12)
    assert get_metric("ibm-bleu").score(np.zeros(9)) == 0.0


def test_ibm_tie_keeps_earlier_reference() -> None:
    hyp = "a b c d e"
    long_first = ["a b c d e f", "a b c d"]
    short_first = ["a b c d", "a b c d e f"]
    ibm = BleuMetric(ref_length="ibm", tokenize="none")
    closest = BleuMetric(ref_length="closest", tokenize="none")
    assert ibm.stats(hyp, long_first)[-1] == 6
    assert ibm.stats(hyp, short_first)[-1] == 4
    assert closest.stats(hyp, long_first)[-1] == 4
    assert closest.stats(hyp, short_first)[-1] == 4


def test_reference_length_strategies() -> None:
    refs = ["a b c", "a b c d e f g", "a b c d e"]
    hyp = "a b c d e f"
    assert BleuMetric(tokenize="none", ref_length="closest").stats(hyp, refs)[-1] == 5  # tie 5/7 -> 5
    assert BleuMetric(tokenize="none", ref_length="shortest").stats(hyp, refs)[-1] == 3
    assert BleuMetric(tokenize="none", ref_length="average").stats(hyp, refs)[-1] == pytest.approx(5.0)
    assert BleuMetric(tokenize="none", ref_length="ibm").stats(hyp, refs)[-1] == 7  # first of the tie


# ------------------------------------------------------------------------------------------------
# sacrebleu equality
WORDS = [
    "the",
    "The",
    "cat",
    "sat",
    "on",
    "mat",
    "a",
    "dog",
    "Dog,",
    "ran.",
    "(it)",
    "don't",
    "x-y",
    "3.5",
    "&amp;",
    '"hi"',
    "big",
    "red",
    "BIG",
    "end.",
]


def random_corpus(seed: int, n: int, n_refs: int) -> tuple[list[str], list[list[str]]]:
    rng = np.random.default_rng(seed)

    def sentence() -> str:
        length = int(rng.integers(0, 18))
        return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), size=length))

    hyps = [sentence() for _ in range(n)]
    streams = [[sentence() for _ in range(n)] for _ in range(n_refs)]
    return hyps, streams


@pytest.mark.parametrize("n_refs", [1, 2, 3, 4])
@pytest.mark.parametrize("tokenize", ["none", "13a"])
@pytest.mark.parametrize("lowercase", [False, True])
def test_equals_sacrebleu_random(n_refs: int, tokenize: str, lowercase: bool) -> None:
    hyps, streams = random_corpus(seed=100 * n_refs + len(tokenize) + lowercase, n=60, n_refs=n_refs)
    for smooth in ("exp", "none", "floor", "add-k"):
        metric = BleuMetric(tokenize=tokenize, lowercase=lowercase, smooth=smooth)
        stats = metric.corpus_stats(hyps, transpose_references(streams))
        expected = sacrebleu.corpus_bleu(hyps, streams, tokenize=tokenize, lowercase=lowercase, smooth_method=smooth)
        total = stats.sum(axis=0)
        assert 100 * metric.score(total) == pytest.approx(expected.score, abs=1e-9)
        if smooth == "add-k":
            continue  # sacrebleu adds k to its reported counts in place
        assert total[0::2][:4].tolist() == expected.counts
        assert total[1::2][:4].tolist() == expected.totals
        assert total[-1] == expected.ref_len and total[1] == expected.sys_len


def test_equals_sacrebleu_sentence_level_smoothing() -> None:
    hyps, streams = random_corpus(seed=7, n=80, n_refs=2)
    per_sentence = transpose_references(streams)
    for smooth, value in [
        ("exp", None),
        ("floor", None),
        ("floor", 0.3),
        ("add-k", None),
        ("add-k", 2.0),
        ("none", None),
    ]:
        for effective in (True, False):
            metric = BleuMetric(smooth=smooth, smooth_value=value, effective_order=effective)
            stats = metric.corpus_stats(hyps, per_sentence)
            ours = 100 * metric.score(stats)
            for i, (hyp, refs) in enumerate(zip(hyps, per_sentence, strict=True)):
                expected = sacrebleu.sentence_bleu(
                    hyp, refs, smooth_method=smooth, smooth_value=value, use_effective_order=effective
                ).score
                assert ours[i] == pytest.approx(expected, abs=1e-9), (smooth, value, effective, hyp, refs)


def real_references() -> list[list[str]]:
    return [shared("zmert", f"ref.{i}").read_text(encoding="utf-8").splitlines() for i in range(4)]


@pytest.mark.parametrize("tokenize", ["none", "13a", "intl", "char"])
@pytest.mark.parametrize("lowercase", [False, True])
def test_equals_sacrebleu_real_data(tokenize: str, lowercase: bool) -> None:
    refs = real_references()
    for hyp_index in range(4):
        hyps = refs[hyp_index]
        for n_refs in (1, 2, 3):
            streams = [refs[j] for j in range(4) if j != hyp_index][:n_refs]
            metric = BleuMetric(tokenize=tokenize, lowercase=lowercase, smooth="exp")
            ours = 100 * metric.corpus_score(hyps, transpose_references(streams))
            expected = sacrebleu.corpus_bleu(hyps, streams, tokenize=tokenize, lowercase=lowercase).score
            assert ours == pytest.approx(expected, abs=1e-9)


def test_equals_sacrebleu_moses_example() -> None:
    folder = shared("moses", "mert-example")
    refs = [(folder / f"REF.{i}").read_text(encoding="utf-8").splitlines() for i in range(3)]
    nbest = shared("moses", "mert-example", "NBEST").read_text(encoding="utf-8").splitlines()
    hyps_by_sentence: dict[int, list[str]] = {}
    for line in nbest:
        fields = line.split("|||")
        hyps_by_sentence.setdefault(int(fields[0]), []).append(fields[1].strip())
    metric = BleuMetric(tokenize="none")
    for sid, hyps in hyps_by_sentence.items():
        stats = metric.stats_many(hyps, [r[sid] for r in refs])
        for hyp, row in zip(hyps, stats, strict=True):
            streams = [[r[sid]] for r in refs]
            expected = sacrebleu.corpus_bleu([hyp], streams, tokenize="none", smooth_method="none")
            assert row[0::2][:4].tolist() == expected.counts and row[-1] == expected.ref_len


# ------------------------------------------------------------------------------------------------
# fast kernels against the textbook implementation
token_lists = st.lists(st.integers(0, 6), min_size=0, max_size=14)


@settings(max_examples=300, deadline=None)
@given(
    hyp=token_lists,
    refs=st.lists(token_lists, min_size=1, max_size=4),
    order=st.integers(1, 5),
    ref_length=st.sampled_from(["closest", "shortest", "average", "ibm"]),
    clip=st.booleans(),
)
def test_kernel_equals_reference_implementation(hyp, refs, order, ref_length, clip) -> None:
    metric = BleuMetric(max_order=order, ref_length=ref_length, clip=clip)
    ours = metric.stats(np.array(hyp, dtype=np.int64), [np.array(r, dtype=np.int64) for r in refs])
    expected = reference_bleu_stats(hyp, refs, order, ref_length, clip)
    np.testing.assert_array_equal(ours, expected)


@settings(max_examples=100, deadline=None)
@given(
    corpus=st.lists(st.tuples(token_lists, st.lists(token_lists, min_size=1, max_size=4)), min_size=1, max_size=8),
    cut=st.integers(0, 8),
)
def test_concatenated_corpus_stats_are_sums(corpus, cut) -> None:
    metric = BleuMetric()
    hyps = [np.array(h, dtype=np.int64) for h, _ in corpus]
    refs = [[np.array(r, dtype=np.int64) for r in rs] for _, rs in corpus]
    cut = min(cut, len(corpus))
    whole = metric.corpus_stats(hyps, refs).sum(axis=0)
    parts = np.zeros_like(whole)
    if cut:
        parts += metric.corpus_stats(hyps[:cut], refs[:cut]).sum(axis=0)
    if cut < len(corpus):
        parts += metric.corpus_stats(hyps[cut:], refs[cut:]).sum(axis=0)
    np.testing.assert_array_equal(whole, parts)


@settings(max_examples=100, deadline=None)
@given(
    hyp=token_lists,
    refs=st.lists(token_lists, min_size=1, max_size=4),
    data=st.data(),
    ref_length=st.sampled_from(["closest", "shortest", "average"]),
)
def test_reference_order_invariance(hyp, refs, data, ref_length) -> None:
    permuted = data.draw(st.permutations(refs))
    metric = BleuMetric(ref_length=ref_length, smooth="plus1")
    a = metric.stats(np.array(hyp, dtype=np.int64), [np.array(r, dtype=np.int64) for r in refs])
    b = metric.stats(np.array(hyp, dtype=np.int64), [np.array(r, dtype=np.int64) for r in permuted])
    np.testing.assert_array_equal(a, b)
    assert metric.score(a) == metric.score(b)


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.lists(st.integers(0, 9), min_size=9, max_size=9), min_size=1, max_size=12),
    smooth=st.sampled_from(["none", "exp", "floor", "add-k", "plus1", "moses", "nakov"]),
    effective=st.booleans(),
)
def test_vectorized_score_equals_scalar(rows, smooth, effective) -> None:
    stats = np.array(rows, dtype=float)
    stats[:, 0:8:2] = np.minimum(stats[:, 0:8:2], stats[:, 1:8:2])  # consistent: matches <= counts
    metric = BleuMetric(smooth=smooth, effective_order=effective)
    vector = metric.score(stats)
    assert vector.shape == (len(rows),)
    for row, value in zip(stats, vector, strict=True):
        scalar = metric.score(row)
        assert isinstance(scalar, float)
        assert scalar == value or (np.isnan(scalar) and np.isnan(value))
        assert 0.0 <= scalar <= 1.0


def test_batch_over_many_sentences_matches_one_by_one(monkeypatch) -> None:
    monkeypatch.setattr("hypertune.metrics.bleu._PARALLEL_THRESHOLD", 4096)  # the parallel path, on a small batch
    rng = np.random.default_rng(3)
    refs = [[rng.integers(0, 30, size=rng.integers(0, 20)) for _ in range(rng.integers(1, 5))] for _ in range(50)]
    lengths = rng.integers(0, 25, size=6000)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    tokens = rng.integers(0, 35, size=offsets[-1])
    sentence = rng.integers(0, 50, size=6000)
    prepared = build_references(refs)
    stats = bleu_stats_batch(tokens, offsets, sentence, prepared)  # parallel path (n >= 4096)
    for h in range(0, 6000, 97):
        expected = reference_bleu_stats(tokens[offsets[h] : offsets[h + 1]], refs[sentence[h]])
        np.testing.assert_array_equal(stats[h], expected)
    serial = bleu_stats_batch(tokens[: offsets[100]], offsets[:101], sentence[:100], prepared)
    np.testing.assert_array_equal(serial, stats[:100])


def test_large_word_ids_are_exact() -> None:
    big = np.array([2**40, 2**40 + 1, 7, 2**62], dtype=np.int64)
    refs = [big, big[::-1].copy()]
    hyp = np.array([2**40, 2**40 + 1, 7, 2**62, 2**40], dtype=np.int64)
    metric = BleuMetric()
    np.testing.assert_array_equal(metric.stats(hyp, refs), reference_bleu_stats(hyp, refs))


def test_long_high_order_falls_back_to_exact_path() -> None:
    # 400 distinct reference words and order 8: 401**8 > 2**63, so the packed keys cannot be exact.
    rng = np.random.default_rng(0)
    ref = rng.permutation(400).astype(np.int64)
    hyp = np.concatenate((ref[:50], rng.integers(0, 400, size=30), ref[100:160]))
    prepared = build_references([[ref]], max_order=8)
    assert 0 in prepared.inexact
    stats = BleuMetric(max_order=8).stats(hyp, [ref])
    np.testing.assert_array_equal(stats, reference_bleu_stats(hyp, [ref], 8))


def test_strings_and_ids_share_the_vocabulary() -> None:
    vocab = Vocabulary()
    metric = BleuMetric(tokenize="none", vocabulary=vocab)
    refs = ["the cat sat on the mat"]
    as_text = metric.stats("the cat sat on a mat", refs)
    as_ids = metric.stats(vocab.indices("the cat sat on a mat".split()), refs)
    as_tokens = metric.stats(["the", "cat", "sat", "on", "a", "mat"], refs)
    np.testing.assert_array_equal(as_text, as_ids)
    np.testing.assert_array_equal(as_text, as_tokens)
    id_list = [int(i) for i in vocab.indices("the cat sat on a mat".split())]
    np.testing.assert_array_equal(as_text, metric.stats(id_list, refs))
    with pytest.raises(InputError):
        metric.stats(["the", 3], refs)
    with pytest.raises(InputError):
        metric.stats(np.array([-1, 2]), refs)


def test_edge_cases() -> None:
    metric = BleuMetric(tokenize="none")
    empty = metric.stats("", ["a b c"])
    assert empty.tolist() == [0, 0, 0, 0, 0, 0, 0, 0, 3]
    assert metric.score(empty) == 0.0
    assert metric.stats("a b", [""]).tolist() == [0, 2, 0, 1, 0, 0, 0, 0, 0]
    perfect = metric.stats("a b c d e", ["a b c d e"])
    assert metric.score(perfect) == 1.0
    assert metric.stats_many([], ["a"]).shape == (0, 9)
    assert bleu_score(np.zeros((0, 9))).shape == (0,)


def test_errors() -> None:
    with pytest.raises(UsageError):
        BleuMetric(smooth="nope")
    with pytest.raises(UsageError):
        BleuMetric(ref_length="longest")
    with pytest.raises(UsageError):
        BleuMetric(ref_length="ibm", smooth="plus1")
    with pytest.raises(UsageError):
        BleuMetric(tokenize="no-such-tokenizer")
    with pytest.raises(InputError):
        BleuMetric().score(np.zeros(5))
    with pytest.raises(InputError):
        BleuMetric().corpus_stats(["a"], [])
    with pytest.raises(InputError):
        BleuMetric().stats(np.array([0.5, 1.5]), ["a"])


def test_default_tokenizer_is_sacrebleus() -> None:
    from hypertune.metrics import DEFAULT_TOKENIZER, Tokenizer

    assert DEFAULT_TOKENIZER == sacrebleu.BLEU.TOKENIZER_DEFAULT == "13a"
    assert BleuMetric().tokenizer.name == "13a" and BleuMetric().tokenizer.lowercase is False
    assert Tokenizer()("Hello, world!") == ["Hello", ",", "world", "!"]
    assert Tokenizer("none", lowercase=True)("Hello, World!") == ["hello,", "world!"]
