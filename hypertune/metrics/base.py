"""The metric interface: additive sufficient statistics per hypothesis, scored after summing.

A metric maps one hypothesis and its references to a fixed-size float64 vector of *sufficient
statistics*; the statistics of a corpus are the sum of its sentences' vectors, and the metric value
is a function of that sum only. Corpus-level line search (MERT), pseudo-corpus ("background") BLEU
and expected statistics (minimum-risk training) all go through this one interface.

Inputs accepted for a hypothesis or a reference:

* ``str`` -- raw text, tokenized with the metric's tokenizer (sacrebleu's, default ``13a``);
* a list/tuple of ``str`` -- already tokenized words;
* a 1-D integer ``numpy`` array -- word ids in the metric's :class:`~hypertune.symbols.Vocabulary`
  (the fast path for hypotheses coming out of graphs).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from hypertune.arrays import offsets_from_counts
from hypertune.errors import InputError
from hypertune.symbols import Vocabulary

Text = str | Sequence[str] | np.ndarray
"""A hypothesis or a reference: raw string, token list, or array of word ids."""

#: The sentence markers decoders put around a derivation's yield (Moses hypergraphs, cdec/Moses lattices).
#: They are not words of the translation. The one rule, for every hypothesis any metric or gain sees (the
#: tuning set's statistics, hope/fear, the oracles, ``train``'s candidates, ``bleu --graphs``, ``decode
#: --out-format text``): **every** ``<s>`` and ``</s>`` is dropped, wherever it stands -- Moses's
#: ``IsBoundary`` in its forest search. A rule that kept a marker away from the ends could not be followed by
#: the searches that build a yield edge by edge (forest hope/fear, the n-gram split, the exact oracle), since
#: an edge cannot tell where in the sentence it ends up. ``decode`` and ``convert`` keep yields as they are.
SENTENCE_START, SENTENCE_END = "<s>", "</s>"
SENTENCE_MARKERS = (SENTENCE_START, SENTENCE_END)


def strip_sentence_markers(words: Sequence[str]) -> list[str]:
    """``words`` without any ``<s>`` or ``</s>`` (the rule above)."""
    return [w for w in words if w not in SENTENCE_MARKERS]


def sentence_marker_ids(vocabulary: Vocabulary) -> np.ndarray:
    """The word ids of ``<s>`` and ``</s>`` in ``vocabulary`` (those it has), for the searches that drop them
    from a graph's edges (the rule above)."""
    ids = [vocabulary.get(marker) for marker in SENTENCE_MARKERS]
    return np.asarray([i for i in ids if i is not None], dtype=np.int64)


def strip_sentence_marker_ids(
    tokens: np.ndarray, offsets: np.ndarray, start: int | None, end: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`strip_sentence_markers` for many sequences of word ids at once: sequence ``i`` is
    ``tokens[offsets[i]:offsets[i+1]]``; ``start`` and ``end`` are the ids of ``<s>`` and ``</s>`` (``None``
    where the vocabulary has no such word). Other tokens, negative ones (a graph's tail references) included,
    are kept. Vectorised; returns the input arrays when nothing is dropped."""
    markers = [i for i in (start, end) if i is not None]
    if tokens.size == 0 or not markers:
        return tokens, offsets
    keep = ~np.isin(tokens, markers)
    if keep.all():
        return tokens, offsets
    kept_before = offsets_from_counts(keep)
    return tokens[keep], kept_before[offsets].astype(offsets.dtype)


def as_stats_array(stats: object, size: int) -> np.ndarray:
    """``stats`` as a float64 array whose last axis has ``size`` entries (1-D or 2-D)."""
    array = np.asarray(stats, dtype=np.float64)
    if array.ndim not in (1, 2) or array.shape[-1] != size:
        raise InputError(f"expected statistics with {size} columns, got an array of shape {array.shape}")
    return array


def better(new: float, old: float, higher_is_better: bool = True, tolerance: float = 0.0) -> bool:
    """Whether metric value ``new`` is better than ``old`` by more than ``tolerance``: larger when
    ``higher_is_better``, smaller otherwise (TER). The one rule by which every best epoch, iteration, restart
    or run is chosen; a NaN is never better."""
    return new > old + tolerance if higher_is_better else new < old - tolerance


def worst(higher_is_better: bool = True) -> float:
    """A value every metric value is :func:`better` than: the start of a search for the best."""
    return -np.inf if higher_is_better else np.inf


def best_index(values: Sequence[float], higher_is_better: bool = True) -> int:
    """Where the best of ``values`` is by :func:`better` (the first of equal ones; 0 when empty)."""
    best = 0
    for i in range(1, len(values)):
        if better(values[i], values[best], higher_is_better):
            best = i
    return best


class Metric(ABC):
    """Base class of every metric with additive sufficient statistics."""

    name: str = "metric"
    higher_is_better: bool = True
    #: The given scores (named numbers an input brings for each hypothesis, ``Hypergraph.edge_scores``) the
    #: statistics are read from; empty for a metric computed from the words (``scores.NAME``: ``(NAME,)``).
    given_names: tuple[str, ...] = ()
    #: Whether the statistics need references (not for given scores).
    needs_references: bool = True
    #: How a human summary shows a value: x100 (0-100, as sacrebleu prints BLEU, chrF and TER), or 1: as it is
    #: (given scores are never rescaled). JSON always holds the value itself.
    display_scale: float = 100.0

    def better(self, new: float, old: float, tolerance: float = 0.0) -> bool:
        """Whether ``new`` is a better value of this metric than ``old`` (:func:`better`)."""
        return better(new, old, self.higher_is_better, tolerance)

    @property
    @abstractmethod
    def stats_size(self) -> int:
        """Number of sufficient statistics per hypothesis."""

    @property
    def stats_names(self) -> tuple[str, ...]:
        """A label for each column of the statistics."""
        return tuple(f"s{i}" for i in range(self.stats_size))

    @abstractmethod
    def stats_many(self, hypotheses: Sequence[Text], references: Sequence[Text]) -> np.ndarray:
        """Statistics of many hypotheses of one sentence (e.g. a k-best list) against the same
        references: an array of shape ``(len(hypotheses), stats_size)``."""

    def stats(self, hypothesis: Text, references: Sequence[Text]) -> np.ndarray:
        """Statistics of one hypothesis: a vector of ``stats_size`` floats."""
        return self.stats_many([hypothesis], references)[0]

    def corpus_stats(self, hypotheses: Sequence[Text], references: Sequence[Sequence[Text]]) -> np.ndarray:
        """Statistics of one hypothesis per sentence, shape ``(n_sentences, stats_size)``.

        ``references[i]`` holds the references of sentence ``i``.
        """
        check_same_length(hypotheses, references)
        out = np.zeros((len(hypotheses), self.stats_size))
        for i, (hyp, refs) in enumerate(zip(hypotheses, references, strict=True)):
            out[i] = self.stats(hyp, refs)
        return out

    @abstractmethod
    def score(self, stats: np.ndarray) -> float | np.ndarray:
        """The metric value of one statistics vector (a float) or of each row of a 2-D array."""

    def sentence_values(self, stats: np.ndarray) -> np.ndarray:
        """The metric of each row of statistics as a sentence on its own: how hope/fear, MIRA, the losses, the
        online tuners, minimum risk and the oracles score one hypothesis when the metric's statistics are not
        BLEU's (BLEU's sentence gains: :mod:`hypertune.metrics.gains`). The metric's score of the row, by default;
        a float64 array of one value per row."""
        return np.atleast_1d(np.asarray(self.score(np.atleast_2d(stats)), dtype=np.float64))

    def stats_from_given(self, given: np.ndarray) -> np.ndarray:
        """The statistics of hypotheses from their given scores, one row of ``given`` per hypothesis and one column
        per name of :attr:`given_names`. Only metrics that read given scores have them."""
        raise InputError(f"the metric {self.name} is computed from the words, not from given scores")

    def sentence_score(self, hypothesis: Text, references: Sequence[Text]) -> float:
        """The metric of one hypothesis on its own (use a smoothed metric for sentence BLEU)."""
        return float(self.score(self.stats(hypothesis, references)))

    def corpus_score(self, hypotheses: Sequence[Text], references: Sequence[Sequence[Text]]) -> float:
        """The metric of a corpus: the score of the summed sentence statistics."""
        return float(self.score(self.corpus_stats(hypotheses, references).sum(axis=0)))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def check_same_length(hypotheses: Sequence[object], references: Sequence[object]) -> None:
    if len(hypotheses) != len(references):
        raise InputError(f"{len(hypotheses)} hypotheses but references for {len(references)} sentences")


def transpose_references(reference_streams: Sequence[Sequence[Text]]) -> list[list[Text]]:
    """sacrebleu's layout (one list per reference *file*) to one list of references per sentence.

    ``None`` entries (a sentence with fewer references) are dropped, as sacrebleu does.
    """
    lengths = {len(stream) for stream in reference_streams}
    if len(lengths) > 1:
        raise InputError(f"reference streams have different lengths: {sorted(lengths)}")
    return [[r for r in refs if r is not None] for refs in zip(*reference_streams, strict=True)]
