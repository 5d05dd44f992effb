"""chrF and TER through sacrebleu's own sufficient statistics.

sacrebleu computes corpus chrF and TER from summed per-sentence statistics, so they fit the
additive interface unchanged:

* chrF (Popovic 2015; chrF++ with ``word_order=2``): for each character order then each word order,
  ``[hypothesis n-grams, reference n-grams, matches]``; the reference with the best sentence
  f-score is used. ``3 * (char_order + word_order)`` statistics.
* TER (Snover et al. 2006): ``[edits, average reference length]``; the score is their ratio and
  *lower is better* (``higher_is_better = False``).

Word-id hypotheses are turned back into text with the metric's vocabulary (words joined by
spaces), since both metrics work on strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hypertune.errors import InputError
from hypertune.metrics.base import Metric, Text, as_stats_array, check_same_length
from hypertune.metrics.edit_rates import edit_rate, edit_stats, words_of
from hypertune.symbols import Vocabulary


class SacrebleuMetric(Metric):
    """A sacrebleu metric object used through its statistics; scores are sacrebleu's / 100."""

    def __init__(self, metric: object, vocabulary: Vocabulary | None = None) -> None:
        self._metric = metric
        self.vocabulary = vocabulary if vocabulary is not None else Vocabulary()
        probe = metric._extract_corpus_statistics(["a"], [["a"]])  # type: ignore[attr-defined]
        self._size = len(probe[0])

    @property
    def stats_size(self) -> int:
        return self._size

    def text(self, text: Text) -> str:
        if isinstance(text, str):
            return text
        if isinstance(text, np.ndarray):
            return " ".join(self.vocabulary.words(text.tolist()))
        if isinstance(text, (list, tuple)):
            return " ".join(text)
        raise InputError(f"cannot use a {type(text).__name__} as a sentence")

    def stats_many(self, hypotheses: Sequence[Text], references: Sequence[Text]) -> np.ndarray:
        # sacrebleu's own per-segment path, with the reference side prepared once for all hypotheses
        metric: Any = self._metric
        refs = [metric._preprocess_segment(self.text(r)) for r in references]
        info = metric._extract_reference_info(refs)
        out = np.zeros((len(hypotheses), self._size))
        for i, hyp in enumerate(hypotheses):
            out[i] = metric._compute_segment_statistics(metric._preprocess_segment(self.text(hyp)), info)
        return out

    def corpus_stats(self, hypotheses: Sequence[Text], references: Sequence[Sequence[Text]]) -> np.ndarray:
        if len(hypotheses) != len(references):
            raise InputError(f"{len(hypotheses)} hypotheses but references for {len(references)} sentences")
        out = np.zeros((len(hypotheses), self._size))
        for i, (hyp, refs) in enumerate(zip(hypotheses, references, strict=True)):
            out[i] = self.stats_many([hyp], refs)[0]
        return out

    def score(self, stats: np.ndarray) -> float | np.ndarray:
        array = as_stats_array(stats, self._size)
        rows = np.atleast_2d(array)
        values = np.array(
            [self._metric._compute_score_from_stats(list(row)).score / 100.0 for row in rows]  # type: ignore[attr-defined]
        )
        return float(values[0]) if array.ndim == 1 else values


class ChrfMetric(SacrebleuMetric):
    """chrF / chrF++ (sacrebleu defaults: char_order 6, word_order 0, beta 2)."""

    name = "chrf"

    def __init__(
        self,
        char_order: int = 6,
        word_order: int = 0,
        beta: int = 2,
        lowercase: bool = False,
        whitespace: bool = False,
        eps_smoothing: bool = False,
        vocabulary: Vocabulary | None = None,
    ) -> None:
        from sacrebleu.metrics import CHRF

        super().__init__(
            CHRF(
                char_order=char_order,
                word_order=word_order,
                beta=beta,
                lowercase=lowercase,
                whitespace=whitespace,
                eps_smoothing=eps_smoothing,
            ),
            vocabulary,
        )


class TerMetric(SacrebleuMetric):
    """Translation edit rate (Snover et al. 2006), as sacrebleu's tercom reimplementation computes it. Lower
    is better.

    Strings are preprocessed by sacrebleu's own ``TER._preprocess_segment`` (its tercom tokenizer and these
    options); the edits are counted by a compiled copy of sacrebleu's ``lib_ter`` search on word ids
    (:func:`hypertune.metrics._edit_kernels.translation_edit_rate`), so the statistics are sacrebleu's to
    the last digit: ``[fewest edits over the references, average reference length]``."""

    name = "ter"
    higher_is_better = False

    def __init__(
        self,
        normalized: bool = False,
        no_punct: bool = False,
        asian_support: bool = False,
        case_sensitive: bool = False,
        vocabulary: Vocabulary | None = None,
    ) -> None:
        from sacrebleu.metrics import TER

        super().__init__(
            TER(normalized=normalized, no_punct=no_punct, asian_support=asian_support, case_sensitive=case_sensitive),
            vocabulary,
        )

    def words(self, text: Text) -> list[str]:
        """The words TER compares: sacrebleu's preprocessing of the text, split on whitespace."""
        return words_of(text, self.vocabulary, self._metric._preprocess_segment)  # type: ignore[attr-defined]

    def stats_many(self, hypotheses: Sequence[Text], references: Sequence[Text]) -> np.ndarray:
        refs = [self.words(r) for r in references]
        return edit_stats("ter", [self.words(h) for h in hypotheses], [refs])

    def corpus_stats(self, hypotheses: Sequence[Text], references: Sequence[Sequence[Text]]) -> np.ndarray:
        check_same_length(hypotheses, references)
        refs = [[self.words(r) for r in sentence] for sentence in references]
        groups = np.arange(len(hypotheses), dtype=np.int64)
        return edit_stats("ter", [self.words(h) for h in hypotheses], refs, groups)

    def score(self, stats: np.ndarray) -> float | np.ndarray:
        # sacrebleu's TERScore holds 100 * rate; hypertune's value has always been that / 100
        return 100 * edit_rate(stats) / 100.0
