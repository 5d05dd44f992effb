"""A k-best tuning set's BLEU statistics under ``--tokenize none --lowercase`` are taken from word ids, each
distinct word lowercased once (``TuningSet._word_by_word``): they must be those of each hypothesis's text,
lowercased and split whole. Expected values: n-gram counts by brute force on the texts."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np

from hypertune.formats import read_graphs
from hypertune.metrics import get_metric
from hypertune.tuners.corpus import TuningSet

# Greek capital sigma lowercases to the final form at a word's end only: word by word and whole text agree
HYPOTHESES = [
    ["The ΟΔΟΣ is Big", "the οδος is big", "ΣΑΣ ΣΑ Σ the", "THE the The tHe"],
    ["A b A", "a B c d", "Ǆ ǅ ǆ İ"],
]
REFERENCES = ["the οδος is big", "a b c d ǆ i̇"]


def brute_force(hypothesis: str, reference: str, order: int = 4) -> list[float]:
    """Clipped n-gram matches and totals per order, then the reference length (BLEU's layout)."""
    hyp, ref = hypothesis.lower().split(), reference.lower().split()
    row: list[float] = []
    for n in range(1, order + 1):
        h = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
        r = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
        row += [sum(min(c, r[g]) for g, c in h.items()), max(len(hyp) - n + 1, 0)]
    return [*row, len(ref)]


def write_nbest(path, hypotheses) -> None:
    lines = [f"{s} ||| {h} ||| f= {k} ||| 0" for s, hyps in enumerate(hypotheses) for k, h in enumerate(hyps)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def tuning_set(path, hypotheses) -> TuningSet:
    write_nbest(path, hypotheses)
    graphs = read_graphs(str(path), "moses-nbest")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return TuningSet.from_corpus(
            graphs, [[r] for r in REFERENCES], get_metric("bleu", tokenize="none", lowercase=True)
        )


def test_lowercased_statistics_from_word_ids_are_those_of_the_texts(tmp_path):
    ts = tuning_set(tmp_path / "nbest.txt", HYPOTHESES)
    expected = [brute_force(h, REFERENCES[s]) for s, hyps in enumerate(HYPOTHESES) for h in hyps]
    rows = np.vstack([ts.edge_stats(s)[1:] for s in range(len(HYPOTHESES))])
    assert np.array_equal(rows, np.asarray(expected, dtype=np.float64))


def test_a_word_that_is_not_one_token_goes_through_the_text(tmp_path):
    ts = tuning_set(tmp_path / "nbest.txt", HYPOTHESES)
    words = ["The\u00a0ΟΔΟΣ", "is", "big"]  # a no-break space inside a vocabulary word: two tokens in the text
    tokens = ts.vocabulary.indices(words)
    assert ts._word_by_word(ts.metric, tokens) is None
    stats = ts.batch_stats(tokens, np.asarray([0, 3]), np.asarray([0]))
    assert np.array_equal(stats[0], brute_force(" ".join(words), REFERENCES[0]))
