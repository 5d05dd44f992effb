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


def chrf_f_scores(
    n_hyp: np.ndarray, n_ref: np.ndarray, n_match: np.ndarray, beta: int, eps_smoothing: bool
) -> np.ndarray:
    """sacrebleu's ``CHRF._compute_f_score`` (0-100; Popovic 2015, with sacrebleu's effective-order or chrF++.py's
    eps smoothing) of many statistics at once: the counts of hypothesis, reference and matches of every n-gram
    order on the last axis, any shape before it. The same operations in the same order as sacrebleu, so the
    values are sacrebleu's to the last bit; one array operation per order, no loop over rows."""
    eps, factor = 1e-16, beta**2
    orders = n_hyp.shape[-1]
    shape = np.broadcast_shapes(n_hyp.shape, n_ref.shape, n_match.shape)[:-1]
    score, avg_prec, avg_rec, effective = (np.zeros(shape) for _ in range(4))
    with np.errstate(divide="ignore", invalid="ignore"):
        for n in range(orders):
            hyp, ref, match = n_hyp[..., n], n_ref[..., n], n_match[..., n].astype(np.float64)
            prec = np.where(hyp > 0, match / hyp, eps)
            rec = np.where(ref > 0, match / ref, eps)
            denom = factor * prec + rec
            score += np.where(denom > 0, (1 + factor) * prec * rec / denom, eps)
            both = (hyp > 0) & (ref > 0)
            avg_prec += np.where(both, prec, 0.0)
            avg_rec += np.where(both, rec, 0.0)
            effective += both
        if eps_smoothing:
            return 100 * score / orders
        avg_prec = np.where(effective > 0, avg_prec / effective, 0.0)
        avg_rec = np.where(effective > 0, avg_rec / effective, 0.0)
        f = (1 + factor) * avg_prec * avg_rec
        f = f / ((factor * avg_prec) + avg_rec)
        return np.where(avg_prec + avg_rec != 0, 100 * f, 0.0)


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
        self.beta, self.eps_smoothing = beta, eps_smoothing

    def score(self, stats: np.ndarray) -> float | np.ndarray:
        """sacrebleu's chrF / 100 of each row of statistics (``[hyp, ref, match]`` per order), by
        :func:`chrf_f_scores`."""
        array = as_stats_array(stats, self._size)
        rows = np.atleast_2d(array).reshape(-1, self._size // 3, 3)
        values = chrf_f_scores(rows[..., 0], rows[..., 1], rows[..., 2], self.beta, self.eps_smoothing) / 100.0
        return float(values[0]) if array.ndim == 1 else values


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
        from hypertune.metrics.edit_rates import words_of  # the edit-rate kernels only where TER is used

        return words_of(text, self.vocabulary, self._metric._preprocess_segment)  # type: ignore[attr-defined]

    def stats_many(self, hypotheses: Sequence[Text], references: Sequence[Text]) -> np.ndarray:
        from hypertune.metrics.edit_rates import edit_stats

        refs = [self.words(r) for r in references]
        return edit_stats("ter", [self.words(h) for h in hypotheses], [refs])

    def corpus_stats(self, hypotheses: Sequence[Text], references: Sequence[Sequence[Text]]) -> np.ndarray:
        from hypertune.metrics.edit_rates import edit_stats

        check_same_length(hypotheses, references)
        refs = [[self.words(r) for r in sentence] for sentence in references]
        groups = np.arange(len(hypotheses), dtype=np.int64)
        return edit_stats("ter", [self.words(h) for h in hypotheses], refs, groups)

    def score(self, stats: np.ndarray) -> float | np.ndarray:
        # sacrebleu's TERScore holds 100 * rate; hypertune's value has always been that / 100
        from hypertune.metrics.edit_rates import edit_rate

        return 100 * edit_rate(stats) / 100.0
