"""Word error rates as sentence statistics: WER, PER and CDER (and the compiled TER's plumbing).

Each metric maps a hypothesis and its references to ``[edits, reference length]`` (additive; the score
of summed statistics is ``edits / reference length``, **lower is better**):

* ``wer`` -- word error rate: the Levenshtein (1966) distance of the word sequences (insertions,
  deletions, substitutions, cost 1 each).
* ``per`` -- position-independent error rate (Tillmann et al. 1997): the hypothesis and the reference
  compared as bags of words, ``max(|hyp|, |ref|) - matches``, each reference word matching at most one
  hypothesis word.
* ``cder`` -- CDER (Leusch, Ueffing & Ney 2006, "CDER: Efficient MT evaluation using block movements",
  EACL): edit distance where every reference word is covered exactly once and the hypothesis may be
  walked in any order, a long jump (to any hypothesis position, at a reference position) costing 1 --
  block movements at the price of one edit. Exact, quadratic time; never above WER.

Several references: **edits** are the fewest over the references and **reference length** their mean
length, the rule of tercom and sacrebleu's TER (Snover et al. 2006, sec. 2) and of cicada's CDER. A
sentence whose reference length is 0 scores 1 with edits, else 0 (sacrebleu's TER rule).

Words are whitespace-separated tokens by default (case kept). The options are TER's, with sacrebleu's
tercom tokenizer: ``normalized`` (tercom's punctuation tokenization), ``no_punct`` (drop punctuation),
``asian_support``, ``case_sensitive`` (default ``True`` here, ``False`` for TER). Word-id hypotheses are
turned into words with the metric's vocabulary. The edit counts are compiled
(:mod:`hypertune.metrics._edit_kernels`): one call per sentence's hypotheses, or per corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from typing import ClassVar

import numpy as np

from hypertune.arrays import offsets_from_counts
from hypertune.errors import InputError
from hypertune.metrics._edit_kernels import CDER, PER, TER, WER, edit_statistics
from hypertune.metrics.base import Metric, Text, as_stats_array, check_same_length
from hypertune.symbols import Vocabulary

__all__ = ["CderMetric", "EditRateMetric", "PerMetric", "WerMetric", "edit_rate", "edit_stats", "words_of"]

_KINDS = {"wer": WER, "per": PER, "cder": CDER, "ter": TER}


def words_of(text: Text, vocabulary: Vocabulary, preprocess: Callable[[str], str]) -> list[str]:
    """The words a metric compares: ``text`` (a string, a token list joined by spaces, or word ids through
    ``vocabulary``) with trailing whitespace stripped, ``preprocess``-ed, split on whitespace -- sacrebleu's
    TER preprocessing (``TER._preprocess_segment``) when ``preprocess`` is the tercom tokenizer."""
    if isinstance(text, str):
        line = text
    elif isinstance(text, np.ndarray):
        line = " ".join(vocabulary.words(text.tolist()))
    elif isinstance(text, (list, tuple)):
        line = " ".join(text)
    else:
        raise InputError(f"cannot use a {type(text).__name__} as a sentence")
    return preprocess(line.rstrip()).split()


def edit_stats(
    kind: str,
    hypotheses: Sequence[Sequence[str]],
    references: Sequence[Sequence[Sequence[str]]],
    groups: np.ndarray | None = None,
) -> np.ndarray:
    """``[edits, reference length]`` (rows as hypotheses) of tokenized ``hypotheses``; hypothesis ``h`` is
    scored against ``references[groups[h]]`` (a list of tokenized references; all against
    ``references[0]`` when ``groups`` is ``None``). ``kind``: ``wer``, ``per``, ``cder`` or ``ter``
    (tercom's TER as sacrebleu computes it). One compiled call; words are interned to ids first."""
    if groups is None:
        groups = np.zeros(len(hypotheses), dtype=np.int64)
    for i, refs in enumerate(references):
        if not refs:
            raise InputError(f"sentence {i + 1} has no reference")
    flat_refs = list(chain.from_iterable(references))
    hyp_words = list(chain.from_iterable(hypotheses))
    ref_words = list(chain.from_iterable(flat_refs))
    ids = {word: i for i, word in enumerate(dict.fromkeys(chain(hyp_words, ref_words)))}
    hyp_tokens = np.fromiter(map(ids.__getitem__, hyp_words), dtype=np.int64, count=len(hyp_words))
    ref_tokens = np.fromiter(map(ids.__getitem__, ref_words), dtype=np.int64, count=len(ref_words))
    return edit_statistics(
        _KINDS[kind],
        hyp_tokens,
        offsets_from_counts(list(map(len, hypotheses))),
        np.ascontiguousarray(groups, dtype=np.int64),
        ref_tokens,
        offsets_from_counts(list(map(len, flat_refs))),
        offsets_from_counts(list(map(len, references))),
        max(len(ids), 1),
    )


def edit_rate(stats: np.ndarray) -> float | np.ndarray:
    """``edits / reference length`` of one ``[edits, reference length]`` vector or of each row; with a
    reference length of 0, 1 when there are edits and 0 otherwise (sacrebleu's TER rule)."""
    array = as_stats_array(stats, 2)
    edits, length = array[..., 0], array[..., 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(length > 0, edits / np.where(length > 0, length, 1.0), np.where(edits > 0, 1.0, 0.0))
    return float(rate) if array.ndim == 1 else rate


class EditRateMetric(Metric):
    """An edit-count error rate with statistics ``[edits, reference length]`` (the module docstring)."""

    higher_is_better = False
    kind: ClassVar[str] = "wer"

    def __init__(
        self,
        normalized: bool = False,
        no_punct: bool = False,
        asian_support: bool = False,
        case_sensitive: bool = True,
        vocabulary: Vocabulary | None = None,
    ) -> None:
        from sacrebleu.tokenizers.tokenizer_ter import TercomTokenizer

        self.options = {
            "normalized": normalized,
            "no_punct": no_punct,
            "asian_support": asian_support,
            "case_sensitive": case_sensitive,
        }
        self.tokenizer: Callable[[str], str] = TercomTokenizer(**self.options)
        self.vocabulary = vocabulary if vocabulary is not None else Vocabulary()

    @property
    def stats_size(self) -> int:
        return 2

    @property
    def stats_names(self) -> tuple[str, ...]:
        return ("edits", "ref_len")

    def words(self, text: Text) -> list[str]:
        """The words of a hypothesis or reference as this metric compares them."""
        return words_of(text, self.vocabulary, self.tokenizer)

    def stats_many(self, hypotheses: Sequence[Text], references: Sequence[Text]) -> np.ndarray:
        refs = [self.words(r) for r in references]
        return edit_stats(self.kind, [self.words(h) for h in hypotheses], [refs])

    def corpus_stats(self, hypotheses: Sequence[Text], references: Sequence[Sequence[Text]]) -> np.ndarray:
        check_same_length(hypotheses, references)
        refs = [[self.words(r) for r in sentence] for sentence in references]
        groups = np.arange(len(hypotheses), dtype=np.int64)
        return edit_stats(self.kind, [self.words(h) for h in hypotheses], refs, groups)

    def score(self, stats: np.ndarray) -> float | np.ndarray:
        return edit_rate(stats)

    def __repr__(self) -> str:
        changed = ", ".join(f"{k}={v}" for k, v in self.options.items() if v != (k == "case_sensitive"))
        return f"{type(self).__name__}({changed})"


class WerMetric(EditRateMetric):
    """Word error rate: Levenshtein distance over words / reference length. Lower is better."""

    name = "wer"
    kind = "wer"


class PerMetric(EditRateMetric):
    """Position-independent error rate (Tillmann et al. 1997). Lower is better."""

    name = "per"
    kind = "per"


class CderMetric(EditRateMetric):
    """CDER (Leusch, Ueffing & Ney 2006): edit distance with block movements. Lower is better."""

    name = "cder"
    kind = "cder"
