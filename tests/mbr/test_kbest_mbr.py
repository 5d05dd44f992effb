"""k-best MBR (issue #34) against brute force: every pair's utility by sacrebleu's own sentence scores on the texts
(BLEU+1 as sacrebleu's add-k smoothing with k = 1, chrF, TER) or a Levenshtein distance (WER), the posteriors and
pruning written out here, and hand-worked 3-hypothesis examples for the posteriors' scale, exclude-self,
support/evidence and ties."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st

from hypertune.arrays import offsets_from_counts
from hypertune.errors import UsageError
from hypertune.mbr import KbestLists, MbrOptions, mbr_decide, posteriors
from hypertune.metrics import get_metric
from hypertune.symbols import Vocabulary

WORDS = ["a", "b", "c", "d", "e", "b,", "(c"]


def make_lists(sentences: list[list[list[str]]], scores: list[float] | None = None) -> KbestLists:
    vocabulary = Vocabulary()
    hyps = [h for sentence in sentences for h in sentence]
    tokens = [vocabulary.indices(h) for h in hyps]
    flat = np.concatenate(tokens) if any(len(t) for t in tokens) else np.zeros(0, np.int64)
    return KbestLists(
        offsets=offsets_from_counts([len(s) for s in sentences]),
        tokens=np.asarray(flat, dtype=np.int64),
        token_offsets=offsets_from_counts([len(t) for t in tokens]),
        scores=np.zeros(len(hyps)) if scores is None else np.asarray(scores, dtype=np.float64),
        vocabulary=vocabulary,
    )


def pair_utility(metric: str, hyp: str, ref: str) -> float:
    """u(e, e') by sacrebleu itself: BLEU+1 (add-k, k = 1, unigrams unsmoothed), chrF, minus TER."""
    if metric == "bleu+1":
        return sacrebleu.sentence_bleu(hyp, [ref], smooth_method="add-k", smooth_value=1, tokenize="none").score / 100
    if metric.startswith("chrf"):
        return sacrebleu.sentence_chrf(hyp, [ref], word_order=2 if metric == "chrf++" else 0).score / 100
    if metric == "wer":
        return -levenshtein(hyp.split(), ref.split()) / len(ref.split())
    return -sacrebleu.sentence_ter(hyp, [ref]).score / 100


def levenshtein(a: list[str], b: list[str]) -> int:
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def brute_force(texts: list[str], scores: list[float], metric: str, options: MbrOptions) -> list[float]:
    """Expected utility of each candidate (None outside the support), written out from the definition."""
    k = len(texts)
    if options.uniform:
        p = [1.0 / k] * k
    else:
        top = max(options.scale * s for s in scores)
        w = [math.exp(options.scale * s - top) for s in scores]
        p = [x / sum(w) for x in w]
    ranked = sorted(range(k), key=lambda i: (-p[i], i))
    support = set(ranked[: options.support or k])
    evidence = ranked[: options.evidence or k]
    mass = sum(p[j] for j in evidence)
    out = []
    for i in range(k):
        if i not in support:
            out.append(None)
            continue
        terms = [p[j] / mass * pair_utility(metric, texts[i], texts[j]) for j in evidence
                 if not (options.exclude_self and j == i)]  # fmt: skip
        out.append(sum(terms))
    return out


sentence_words = st.lists(st.sampled_from(WORDS), min_size=0, max_size=7)


@settings(max_examples=25, deadline=None)
@given(
    metric=st.sampled_from(["bleu+1", "chrf", "chrf++", "ter", "wer"]),
    hyps=st.lists(sentence_words, min_size=1, max_size=5),
    raw_scores=st.lists(st.floats(-3, 3), min_size=5, max_size=5),
    scale=st.sampled_from([0.0, 0.5, 1.0, 3.0]),
    uniform=st.booleans(),
    exclude_self=st.booleans(),
    support=st.sampled_from([None, 1, 2, 4]),
    evidence=st.sampled_from([None, 1, 3]),
)
def test_kbest_mbr_equals_brute_force(metric, hyps, raw_scores, scale, uniform, exclude_self, support, evidence):
    if metric != "bleu+1":  # the error rates of an empty reference are their own business
        hyps = [h or ["a"] for h in hyps]
    scores = raw_scores[: len(hyps)]
    options = MbrOptions(scale=scale, uniform=uniform, exclude_self=exclude_self, support=support, evidence=evidence)
    lists = make_lists([hyps], scores)
    decision = mbr_decide(lists, get_metric(metric), options)
    texts = [" ".join(h) for h in hyps]
    expected = brute_force(texts, scores, metric, options)
    for got, want in zip(decision.expected.tolist(), expected, strict=True):
        if want is None:
            assert math.isnan(got)
        else:
            assert got == pytest.approx(want, abs=1e-9)
    values = [(-1e300 if v is None else v) for v in expected]
    best = max(values)
    choice = int(decision.choice[0])
    assert values[choice] == pytest.approx(best, abs=1e-9)
    clear = [i for i, v in enumerate(values) if v > best - 1e-9]
    assert choice == clear[0]  # ties (within rounding): the earlier hypothesis


def test_several_lists_in_one_call_are_each_their_own_decision():
    sentences = [[["a", "b", "c"], ["a", "b", "d"], ["e"]], [["d"]], [["a", "b"], ["c", "d"], ["a", "b"], ["c"]]]
    lists = make_lists(sentences)
    decision = mbr_decide(lists, get_metric("bleu+1"), MbrOptions(uniform=True))
    for s, hyps in enumerate(sentences):
        texts = [" ".join(h) for h in hyps]
        want = brute_force(texts, [0.0] * len(hyps), "bleu+1", MbrOptions(uniform=True))
        got = decision.expected[lists.offsets[s] : lists.offsets[s + 1]]
        assert got == pytest.approx(want, abs=1e-12)
    assert decision.choice.tolist() == [0, 0, 0]
    # every BLEU scores a sentence by BLEU+1 (Metric.sentence_values)
    assert mbr_decide(lists, get_metric("bleu"), MbrOptions(uniform=True)).expected == pytest.approx(decision.expected)


# ---------------------------------------------------------------------- hand-worked examples

#: U[i][j] = u(e_i, e_j): e_0 is close to both others, which disagree with each other.
CONSENSUS = [[1.0, 0.9, 0.9], [0.9, 1.0, 0.0], [0.9, 0.0, 1.0]]
#: Model scores whose posteriors at alpha = 1 are 1/6, 1/3, 1/2 (alpha = 2: 1/14, 4/14, 9/14).
SCORES = [0.0, math.log(2.0), math.log(3.0)]


def three(scores=SCORES) -> KbestLists:
    return make_lists([[["x"], ["y"], ["z"]]], scores)


def flat(matrix) -> np.ndarray:
    return np.asarray(matrix, dtype=np.float64).reshape(-1)


def test_posteriors_follow_the_scale():
    offsets = np.array([0, 3])
    assert posteriors(np.array(SCORES), offsets, 1.0) == pytest.approx([1 / 6, 1 / 3, 1 / 2])
    assert posteriors(np.array(SCORES), offsets, 2.0) == pytest.approx([1 / 14, 4 / 14, 9 / 14])
    assert posteriors(np.array(SCORES), offsets, 0.0) == pytest.approx([1 / 3] * 3)
    assert posteriors(np.array(SCORES), offsets, uniform=True) == pytest.approx([1 / 3] * 3)
    # log-sum-exp: scores far from 0 do not overflow
    assert posteriors(np.array([1000.0, 1000.0 + math.log(3.0)]), np.array([0, 2])) == pytest.approx([0.25, 0.75])


def test_the_consensus_hypothesis_beats_the_map_one():
    # E = U p with p = (1/6, 1/3, 1/2): 1/6 + 0.3 + 0.45, 0.15 + 1/3, 0.15 + 1/2
    decision = mbr_decide(three(), flat(CONSENSUS))
    assert decision.expected == pytest.approx([11 / 12, 0.15 + 1 / 3, 0.65])
    assert decision.choice.tolist() == [0]
    assert decision.map_index.tolist() == [2]
    # alpha = 2: p = (1/14, 4/14, 9/14): 1/14 + 3.6/14 + 8.1/14, 0.9/14 + 4/14, 0.9/14 + 9/14
    decision = mbr_decide(three(), flat(CONSENSUS), MbrOptions(scale=2.0))
    assert decision.expected == pytest.approx([12.7 / 14, 4.9 / 14, 9.9 / 14])
    assert decision.choice.tolist() == [0]


def test_exclude_self_leaves_the_diagonal_out():
    # p = (1/6, 1/3, 1/2): 0.3 + 0.45, 0.15, 0.15
    decision = mbr_decide(three(), flat(CONSENSUS), MbrOptions(exclude_self=True))
    assert decision.expected == pytest.approx([0.75, 0.15, 0.15])
    # a matrix whose diagonal alone decides: with it e_0 wins, without it e_1 (tied with e_2: the earlier)
    selfish = [[5.0, 0.0, 0.0], [0.0, 1.0, 1.0], [0.0, 1.0, 1.0]]
    assert mbr_decide(three(), flat(selfish), MbrOptions(uniform=True)).choice.tolist() == [0]
    assert mbr_decide(three(), flat(selfish), MbrOptions(uniform=True, exclude_self=True)).choice.tolist() == [1]


def test_support_and_evidence_prune_by_posterior():
    # support 1: only the MAP hypothesis (e_2) is a candidate
    decision = mbr_decide(three(), flat(CONSENSUS), MbrOptions(support=1))
    assert decision.choice.tolist() == [2]
    assert np.isnan(decision.expected[:2]).all()
    # evidence 1: the expectation is u(e, e_2) alone
    decision = mbr_decide(three(), flat(CONSENSUS), MbrOptions(evidence=1))
    assert decision.expected == pytest.approx([0.9, 0.0, 1.0])
    assert decision.choice.tolist() == [2]
    # evidence 2: e_1 and e_2, renormalized to 0.4 and 0.6
    decision = mbr_decide(three(), flat(CONSENSUS), MbrOptions(evidence=2))
    assert decision.expected == pytest.approx([0.9, 0.4, 0.6])
    assert decision.choice.tolist() == [0]


def test_uniform_with_a_given_matrix_chooses_the_largest_row_sum():
    matrices = [
        [[1.0, 0.2, 0.3], [0.5, 1.0, 0.9], [0.4, 0.6, 1.0]],  # row sums 1.5, 2.4, 2.0
        [[0.0, 0.25, 0.5, 0.25], [0.5, 0.0, 0.25, 0.25], [0.25, 0.25, 0.5, 0.0], [0.5, 0.5, 0.0, 0.0]],  # all 1
        [[0.1]],
    ]
    lists = make_lists([[["x"]] * 3, [["y"]] * 4, [["z"]]])
    utilities = np.concatenate([flat(m) for m in matrices])
    decision = mbr_decide(lists, utilities, MbrOptions(uniform=True))
    assert decision.choice.tolist() == [1, 0, 0]  # the second: four equal row sums, the earlier
    assert decision.expected[:3] == pytest.approx([0.5, 0.8, 2.0 / 3])


def test_ties_go_to_the_earlier_hypothesis_with_a_metric():
    lists = make_lists([[["a", "b"], ["a", "b"], ["a", "b"]]], [0.0, 0.0, 0.0])
    assert mbr_decide(lists, get_metric("bleu+1")).choice.tolist() == [0]
    assert mbr_decide(lists, get_metric("ter")).choice.tolist() == [0]


def test_bad_options_are_usage_errors():
    with pytest.raises(UsageError):
        MbrOptions(support=0)
    with pytest.raises(UsageError):
        MbrOptions(scale=-1.0)
    with pytest.raises(UsageError, match="overflows"):
        mbr_decide(three([1e308, 0.0, -1e308]), flat(CONSENSUS), MbrOptions(scale=10.0))
