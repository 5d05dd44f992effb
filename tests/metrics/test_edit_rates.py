"""WER, PER, CDER against hand-worked values and plain-Python definitions; the compiled TER against
sacrebleu's own ``TER._compute_segment_statistics`` (random sentences with moved blocks, every option,
long sentences that reach tercom's caps, real Moses n-best lists)."""

from __future__ import annotations

import gzip
import heapq
from collections import Counter
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st

from hypertune.errors import InputError
from hypertune.metrics import CderMetric, PerMetric, TerMetric, WerMetric, get_metric, parse_metric
from hypertune.symbols import Vocabulary

# ---------------------------------------------------------------------- plain-Python definitions


def levenshtein_reference(hyp: list[str], ref: list[str]) -> int:
    """The textbook recursion (Levenshtein 1966), memoized."""

    @cache
    def d(i: int, j: int) -> int:
        if i == 0 or j == 0:
            return i + j
        return min(d(i - 1, j) + 1, d(i, j - 1) + 1, d(i - 1, j - 1) + (hyp[i - 1] != ref[j - 1]))

    return d(len(hyp), len(ref))


def per_reference(hyp: list[str], ref: list[str]) -> int:
    """Tillmann et al. 1997: bags of words; what is not matched is an error on the longer side."""
    return max(len(hyp), len(ref)) - sum((Counter(hyp) & Counter(ref)).values())


def cder_reference(hyp: list[str], ref: list[str]) -> int:
    """Leusch, Ueffing & Ney 2006, sec. 3, as a shortest path (Dijkstra) over the grid of positions
    ``(i, r)`` (hypothesis, reference) from ``(0, 0)`` to ``(|hyp|, |ref|)``: a match or substitution (0 or
    1) moves both, a deletion of a hypothesis word moves ``i``, an uncovered reference word moves ``r``, and
    a long jump goes to any other ``i`` at the same ``r``, each costing 1."""
    goal = (len(hyp), len(ref))
    best = {(0, 0): 0}
    heap = [(0, 0, 0)]
    while heap:
        cost, i, r = heapq.heappop(heap)
        if (i, r) == goal:
            return cost
        if cost > best[(i, r)]:
            continue
        moves = [(j, r, 1) for j in range(len(hyp) + 1) if j != i]
        if i < len(hyp):
            moves.append((i + 1, r, 1))
        if r < len(ref):
            moves.append((i, r + 1, 1))
        if i < len(hyp) and r < len(ref):
            moves.append((i + 1, r + 1, int(hyp[i] != ref[r])))
        for j, m, step in moves:
            if cost + step < best.get((j, m), 1 << 30):
                best[(j, m)] = cost + step
                heapq.heappush(heap, (cost + step, j, m))
    raise AssertionError("the goal is always reachable")


REFERENCES = {"wer": levenshtein_reference, "per": per_reference, "cder": cder_reference}


def expected_stats(kind: str, hyp: str, refs: list[str]) -> list[float]:
    """Fewest edits over the references, their mean length (whitespace words)."""
    edits = min(REFERENCES[kind](hyp.split(), r.split()) for r in refs)
    return [edits, sum(len(r.split()) for r in refs) / len(refs)]


# ---------------------------------------------------------------------- WER, PER, CDER


@pytest.mark.parametrize(
    ("kind", "hyp", "refs", "stats"),
    [
        ("wer", "a b c d", ["a x c d e"], [2, 5]),  # b -> x, insert e
        ("wer", "c d a b", ["a b c d"], [4, 4]),
        ("wer", "a b c", ["a b c d", "x"], [1, 2.5]),  # fewest edits, mean length
        ("per", "c b a a", ["a b c d"], [1, 4]),  # a b c shared; a/d one substitution
        ("per", "a a a", ["a"], [2, 1]),
        ("per", "c d a b", ["a b c d"], [0, 4]),
        # jump to "a b" (1), match it, jump back (1), match "c d", jump to the end (1)
        ("cder", "c d a b", ["a b c d"], [3, 4]),
        ("cder", "c d e f a b", ["a b c d e f"], [3, 6]),  # WER is 4
        ("cder", "a b", ["a b"], [0, 2]),
        ("cder", "a b", [""], [1, 0]),  # one long jump over the whole hypothesis
        ("cder", "", ["a b"], [2, 2]),
        ("wer", "a b", [""], [2, 0]),
        ("per", "", ["a b"], [2, 2]),
    ],
)
def test_hand_worked(kind: str, hyp: str, refs: list[str], stats: list[float]) -> None:
    metric = get_metric(kind)
    assert metric.stats(hyp, refs).tolist() == stats
    assert metric.stats(hyp, refs).tolist() == expected_stats(kind, hyp, refs)


def test_scores_and_registry() -> None:
    wer = WerMetric()
    assert not wer.higher_is_better and wer.stats_names == ("edits", "ref_len")
    stats = wer.corpus_stats(["a b c", "a b", "x"], [["a b c d"], [""], [""]])
    assert stats.tolist() == [[1, 4], [2, 0], [1, 0]]
    assert wer.score(stats).tolist() == [0.25, 1.0, 1.0]  # no reference words: 1 with edits
    assert wer.score(np.array([0.0, 0.0])) == 0.0
    assert wer.score(stats.sum(axis=0)) == 1.0
    assert isinstance(get_metric("per"), PerMetric) and isinstance(get_metric("cder"), CderMetric)
    both = parse_metric("bleu:1,wer:-1")
    assert both.stats_names[-2:] == ("wer.edits", "wer.ref_len")


def test_options_and_word_ids() -> None:
    assert WerMetric().stats("The cat", ["the cat"]).tolist() == [1, 2]  # case kept by default
    assert WerMetric(case_sensitive=False).stats("The cat", ["the cat"]).tolist() == [0, 2]
    assert WerMetric(normalized=True).stats("cat.", ["cat ."]).tolist() == [0, 2]
    assert WerMetric(no_punct=True).stats("cat , sat", ["cat sat"]).tolist() == [0, 2]
    vocab = Vocabulary()
    for kind in ("wer", "per", "cder", "ter"):
        metric = get_metric(kind, vocabulary=vocab)
        ids = vocab.indices("a dog ran in the park".split())
        refs = ["the dog ran in a park today"]
        assert metric.stats(ids, refs).tolist() == metric.stats("a dog ran in the park", refs).tolist()
        assert metric.stats(["a", "dog"], refs).tolist() == metric.stats("a dog", refs).tolist()
        with pytest.raises(InputError, match="no reference"):
            metric.stats("a dog", [])


sentences = st.lists(st.sampled_from("abcd"), max_size=7).map(" ".join)


@settings(max_examples=80, deadline=None)
@given(st.lists(sentences, min_size=1, max_size=4), st.lists(sentences, min_size=1, max_size=3))
def test_against_plain_definitions(hyps: list[str], refs: list[str]) -> None:
    """Each hypothesis of a k-best list (one compiled call), and the same as a corpus, equal the
    definitions; CDER is never above WER, PER never above WER."""
    for kind in ("wer", "per", "cder"):
        metric = get_metric(kind)
        expected = [expected_stats(kind, h, refs) for h in hyps]
        assert metric.stats_many(hyps, refs).tolist() == expected
        assert metric.corpus_stats(hyps, [refs] * len(hyps)).tolist() == expected
    wer, per, cder = (get_metric(k).stats_many(hyps, refs)[:, 0] for k in ("wer", "per", "cder"))
    assert (cder <= wer).all() and (per <= wer).all()


# ---------------------------------------------------------------------- TER against sacrebleu


def sacrebleu_stats(options: dict, hyps: list[str], refs: list[str]) -> list[list[float]]:
    ter = sacrebleu.metrics.TER(**options)
    info = ter._extract_reference_info(refs)
    return [list(ter._compute_segment_statistics(ter._preprocess_segment(h), info)) for h in hyps]


@st.composite
def moved(draw: st.DrawFn, words: tuple[str, ...]) -> tuple[str, list[str]]:
    """A reference (repeated words likely) and a hypothesis made from it by moving blocks, then a few
    substitutions, insertions and deletions; sometimes a second reference."""
    ref = draw(st.lists(st.sampled_from(words), max_size=16))
    hyp = list(ref)
    for _ in range(draw(st.integers(0, 3))):
        if len(hyp) >= 2:
            i = draw(st.integers(0, len(hyp) - 1))
            j = draw(st.integers(i + 1, min(len(hyp), i + 6)))
            block = hyp[i:j]
            del hyp[i:j]
            k = draw(st.integers(0, len(hyp)))
            hyp[k:k] = block
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(hyp)))
        op = draw(st.sampled_from(["sub", "ins", "del"]))
        if op == "ins" or at == len(hyp):
            hyp.insert(at, draw(st.sampled_from(words)))
        elif op == "sub":
            hyp[at] = draw(st.sampled_from(words))
        else:
            del hyp[at]
    refs = [" ".join(ref)]
    if draw(st.booleans()):
        refs.append(" ".join(draw(st.permutations(ref))))
    return " ".join(hyp), refs


OPTIONS = [
    {},
    {"case_sensitive": True},
    {"normalized": True, "no_punct": True},
    {"normalized": True, "asian_support": True, "case_sensitive": True},
]
WORDS = ("a", "b", "c", "A", "the", "cat.", "it's", "x,y", "猫", "。", "(d)")


@pytest.mark.parametrize("options", OPTIONS)
@settings(max_examples=60, deadline=None)
@given(st.lists(moved(WORDS), min_size=1, max_size=3))
def test_ter_equals_sacrebleu(options: dict, pairs: list[tuple[str, list[str]]]) -> None:
    metric = TerMetric(**options)
    for hyp, refs in pairs:
        expected = sacrebleu_stats(options, [hyp, hyp.upper(), ""], refs)
        assert metric.stats_many([hyp, hyp.upper(), ""], refs).tolist() == expected
    corpus = metric.corpus_stats([h for h, _ in pairs], [r for _, r in pairs])
    assert corpus.tolist() == [sacrebleu_stats(options, [h], r)[0] for h, r in pairs]


def far_moves(seed: int, vocabulary: int, length: int) -> tuple[str, list[str]]:
    """A long reference over a few words and a hypothesis with four 6-word blocks moved anywhere and four
    words replaced."""
    rng = np.random.default_rng(seed)
    ref = [f"w{i}" for i in rng.integers(0, vocabulary, size=length)]
    hyp = list(ref)
    for _ in range(4):
        i = int(rng.integers(0, length - 8))
        block = hyp[i : i + 6]
        del hyp[i : i + 6]
        k = int(rng.integers(0, len(hyp)))
        hyp[k:k] = block
    for i in rng.integers(0, length, size=4):
        hyp[i] = "x"
    return " ".join(hyp), [" ".join(ref)]


def test_ter_at_tercom_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Long sentences: the search stopped by MAX_SHIFT_CANDIDATES in the first pass and after shifts (a shift
    that would save edits left undone; checked through sacrebleu's own ``_shift``); matches farther apart
    than MAX_SHIFT_DIST, off the diagonal by more than BEAM_WIDTH (sacrebleu's beam gives 67 and 90 edits
    where a beam of 24 gives 70, 26 gives 65 and 30 gives 82); very unequal lengths (a widened beam)."""
    from sacrebleu.metrics import lib_ter

    passes: list[list[tuple[int, int]]] = []
    shift = lib_ter._shift

    def spy(*args):  # type: ignore[no-untyped-def]
        result = shift(*args)
        passes[-1].append((result[0], result[2]))
        return result

    metric = TerMetric()  # before the spy: its constructor asks sacrebleu for the statistics of "a"
    monkeypatch.setattr(lib_ter, "_shift", spy)
    rng = np.random.default_rng(7)
    cases = [far_moves(5, 5, 45), far_moves(8, 6, 50), far_moves(4, 12, 60)]
    for before, matched, after in ((52, 40, 10), (55, 35, 20)):
        far = [f"r{i}" for i in range(matched)]
        cases.append((" ".join(["x"] * before + far), [" ".join(far + ["y"] * after)]))
    ref = rng.choice(["a", "b", "c"], size=40)
    cases.append((" ".join(np.concatenate([ref[20:], ref[:20]])), [" ".join(ref)]))
    cases.append(("a", [" ".join(rng.choice(["a", "b"], size=70))]))
    cases.append((" ".join(rng.choice(["a", "b"], size=70)), ["b a"]))
    for hyp, refs in cases:
        passes.append([])
        assert metric.stats(hyp, refs).tolist() == sacrebleu_stats({}, [hyp], refs)[0]
    assert [metric.stats(hyp, refs)[0] for hyp, refs in cases[3:5]] == [67, 90]
    capped = [p for p in passes if p[-1][1] >= lib_ter._MAX_SHIFT_CANDIDATES]
    assert any(len(p) == 1 for p in capped) and any(len(p) > 1 and p[-1][0] > 1 for p in capped)


def test_ter_hand_worked() -> None:
    ter = TerMetric()
    assert ter.stats("d e f a b c", ["a b c d e f"]).tolist() == [1, 6]  # one shift of "a b c"
    assert ter.stats("A b", [""]).tolist() == [2, 0]
    assert ter.stats("", ["a b", "c"]).tolist() == [1, 1.5]
    assert ter.score(np.array([[1.0, 6.0], [2.0, 0.0]])).tolist() == [100 * (1 / 6) / 100, 1.0]


def _nbest(path: Path) -> tuple[list[int], list[str]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        fields = [line.split("|||") for line in lines]
    return [int(f[0]) for f in fields], [f[1] for f in fields]


def test_ter_on_moses_nbest_lists(shared: Path) -> None:
    """Every hypothesis of two real Moses n-best lists (one with three references): statistics equal to
    sacrebleu's; the corpus TER of the first hypotheses is sacrebleu's corpus TER."""
    example = shared / "moses" / "mert-example"
    streams = [(example / f"REF.{k}").read_text(encoding="utf-8").splitlines() for k in range(3)]
    iteration = shared / "moses" / "nbest-5iter"
    cases = [
        (*_nbest(example / "NBEST"), [list(refs) for refs in zip(*streams, strict=True)]),
        (*_nbest(iteration / "nbest.1.gz"), [[r] for r in (iteration / "reference").read_text().splitlines()]),
    ]
    metric = TerMetric()
    for ids, hyps, refs in cases:
        keep = [i for i, s in enumerate(ids) if s < 3]  # three sentences of each list, all their hypotheses
        for sentence in sorted({ids[i] for i in keep}):
            mine = [hyps[i] for i in keep if ids[i] == sentence]
            assert metric.stats_many(mine, refs[sentence]).tolist() == sacrebleu_stats({}, mine, refs[sentence])
        firsts = [hyps[ids.index(s)] for s in sorted(set(ids))]
        score = metric.score(metric.corpus_stats(firsts, refs[: len(firsts)]).sum(axis=0))
        reference_streams = [list(stream) for stream in zip(*refs[: len(firsts)], strict=True)]
        assert score == sacrebleu.metrics.TER().corpus_score(firsts, reference_streams).score / 100
