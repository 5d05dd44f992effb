"""A tuning set: one search space per sentence, its references, and the metric's statistics of yields.

Every tuner works on this. Word ids in the graphs and in the metric agree when the metric's tokenizer
is ``none`` (the default for tuning: decoder output and tuning references are already tokenized, as
Moses, cdec and Z-MERT assume), so statistics come straight from id arrays; with another tokenizer
or lowercasing, yields are turned back into strings and tokenized like the references.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from hypertune.arrays import offsets_from_counts
from hypertune.errors import InputError
from hypertune.hypergraph import Hypergraph
from hypertune.metrics import BleuMetric, Metric
from hypertune.metrics.base import SENTENCE_END, SENTENCE_START, strip_sentence_marker_ids
from hypertune.metrics.bleu import BleuReferences
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners.sentence_ids import assemble_sentences, check_sentence_ids, select_references

if TYPE_CHECKING:
    from hypertune.formats.registry import SentenceIds


@dataclass
class TuningSet:
    """Graphs (one per sentence, sharing a feature space and vocabulary), their references and a metric.

    ``references[s]`` are the references of ``graphs[s]``, whose sentence id (its line in the reference
    files) is ``sentence_ids[s]`` (none given: the graphs' positions). Build it with :meth:`from_corpus` to
    look references up by the ids the inputs carry; the plain constructor takes graphs and references already
    aligned. ``naming``, when known, says where the ids come from (file names, file contents, order: the
    commands' summaries).
    """

    graphs: list[Hypergraph]
    references: list[list[str]]
    metric: Metric
    sentence_ids: list[int] = field(default_factory=list)
    naming: SentenceIds | None = field(default=None, repr=False, compare=False)
    _prepared: BleuReferences | None = field(default=None, init=False, repr=False)
    _edge_stats: dict[int, np.ndarray] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.graphs:
            raise InputError("the tuning set has no sentences")
        if not self.sentence_ids:  # none given (an empty list or None)
            ids = [g.sentence_id for g in self.graphs]
            if any(i is not None and i != s for s, i in enumerate(ids)):
                shown = ", ".join(str(i) for i in ids[:5])
                raise InputError(
                    f"the graphs carry sentence ids ({shown}, ...) that are not their positions; build the tuning "
                    "set with TuningSet.from_corpus(graphs, references, metric) to look references up by id"
                )
            self.sentence_ids = list(range(len(self.graphs)))
        elif len(self.sentence_ids) != len(self.graphs):
            raise InputError(f"{len(self.graphs)} sentences but {len(self.sentence_ids)} sentence ids")
        if len(self.references) != len(self.graphs) and not self.precomputed:
            raise InputError(f"{len(self.graphs)} sentences but references for {len(self.references)}")
        if isinstance(self.metric, BleuMetric) and not self.precomputed:
            if self._ids_are_tokens():
                self.metric.vocabulary = self.vocabulary
            self._prepared = self.metric.prepare(self.references)

    @classmethod
    def from_corpus(
        cls,
        graphs: Sequence[Hypergraph],
        references: Sequence[list[str]] | None,
        metric: Metric,
        naming: SentenceIds | None = None,
        strict: bool = False,
    ) -> TuningSet:
        """The tuning set of ``graphs`` (as read, from any number of inputs) against the reference corpus
        ``references`` (line ``i`` = sentence id ``i``; ``None`` for precomputed statistics).

        Graphs are grouped into sentences by :func:`assemble_sentences`; each sentence's references are
        looked up by its id, as Moses's extractor does. An id past the end of the references is an
        error naming it and the reference files; unused reference lines are normal (Moses ships more
        lines than it uses) but are reported once as a warning. With ``naming`` (where the ids come from,
        :func:`~hypertune.formats.registry.describe_sentence_ids`), files numbered by their names that clash
        or leave reference lines without a file are named (:func:`check_sentence_ids`; ``strict``: an error)."""
        sentences, ids = assemble_sentences(graphs)
        if references is None or (not len(references) and all(g.edge_stats is not None for g in sentences)):
            if naming is not None:
                check_sentence_ids(naming, ids, None, strict)
            return cls(sentences, [], metric, ids, naming)
        named = naming is not None and check_sentence_ids(naming, ids, references, strict)
        return cls(sentences, select_references(ids, references, report_unused=not named), metric, ids, naming)

    # ------------------------------------------------------------------ shared spaces
    @property
    def feature_space(self) -> FeatureSpace:
        return self.graphs[0].feature_space

    @property
    def vocabulary(self) -> Vocabulary:
        return self.graphs[0].vocabulary

    @property
    def precomputed(self) -> bool:
        """True when every graph carries its hypotheses' statistics (Moses FEATSTAT/SCORESTAT input)."""
        return all(g.edge_stats is not None for g in self.graphs)

    def __len__(self) -> int:
        return len(self.graphs)

    def subset(self, start: int, stop: int) -> TuningSet:
        """Sentences ``start:stop`` as a tuning set of their own (a shard): the same graphs, references, metric
        and sentence ids, so every per-sentence quantity (statistics, envelopes, expectations) is the one the
        whole set computes for them. Cached k-best statistics come along."""
        references = self.references[start:stop] if len(self.references) else []
        part = TuningSet(self.graphs[start:stop], references, self.metric, self.sentence_ids[start:stop])
        part._edge_stats.update({s - start: v for s, v in self._edge_stats.items() if start <= s < stop})
        return part

    def _ids_are_tokens(self) -> bool:
        metric = self.metric
        return isinstance(metric, BleuMetric) and metric.tokenizer.name == "none" and not metric.tokenizer.lowercase

    # ------------------------------------------------------------------ statistics
    def yield_stats(self, sentence: int, yields: Sequence[np.ndarray | Sequence[int]]) -> np.ndarray:
        """Metric statistics (n, S) of hypotheses of ``sentence`` given as word-id sequences."""
        arrays = [np.asarray(y, dtype=np.int64) for y in yields]
        offsets = offsets_from_counts([a.size for a in arrays])
        tokens = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
        return self.batch_stats(tokens, offsets, np.full(len(arrays), sentence, dtype=np.int64))

    def batch_stats(self, tokens: np.ndarray, offsets: np.ndarray, sentences: np.ndarray) -> np.ndarray:
        """Statistics of many hypotheses at once: hypothesis ``i`` is ``tokens[offsets[i]:offsets[i+1]]``
        (word ids) of sentence ``sentences[i]``. The decoder's sentence markers are removed first
        (:func:`~hypertune.metrics.base.strip_sentence_markers`). One compiled call for BLEU."""
        if self.precomputed:
            raise InputError("this tuning set has precomputed statistics and no hypothesis strings")
        vocabulary = self.vocabulary
        tokens, offsets = strip_sentence_marker_ids(
            np.asarray(tokens), np.asarray(offsets), vocabulary.get(SENTENCE_START), vocabulary.get(SENTENCE_END)
        )
        metric = self.metric
        n = sentences.size
        if isinstance(metric, BleuMetric) and self._prepared is not None:  # prepared unless precomputed
            if not self._ids_are_tokens():
                tokens, offsets = metric.flatten([self.text(tokens[offsets[i] : offsets[i + 1]]) for i in range(n)])
            return metric.stats_batch(tokens, offsets, sentences, self._prepared)
        out = np.zeros((n, metric.stats_size))
        for sentence in np.unique(sentences):
            rows = np.flatnonzero(sentences == sentence)
            texts = [self.text(tokens[offsets[i] : offsets[i + 1]]) for i in rows]
            out[rows] = metric.stats_many(texts, self.references[int(sentence)])
        return out

    def text(self, ids: np.ndarray | Sequence[int]) -> str:
        return " ".join(self.vocabulary.words(int(i) for i in ids))

    def edge_stats(self, sentence: int) -> np.ndarray:
        """For a k-best list (degenerate lattice): the statistics of every edge's hypothesis, row ``e`` for
        edge ``e`` (row 0, the start axiom, is zeros). Cached."""
        cached = self._edge_stats.get(sentence)
        if cached is not None:
            return cached
        hg = self.graphs[sentence]
        if hg.edge_stats is not None:
            stats = hg.edge_stats
        else:
            if not hg.is_kbest:
                raise InputError(f"sentence {sentence} is not a k-best list")
            stats = self.list_stats(sentence, hg)
        self._edge_stats[sentence] = stats
        return stats

    def list_stats(self, sentence: int, hg: Hypergraph) -> np.ndarray:
        """The statistics of every edge of the k-best list ``hg`` against ``sentence``'s references (row 0,
        the start axiom, zeros): every hypothesis's words (its target minus the start-node reference) in
        one batch."""
        lengths = np.diff(hg.target_offsets)[1:]
        tokens = hg.target[hg.target_offsets[1] :]
        words = tokens >= 0
        counts = np.bincount(np.repeat(np.arange(lengths.size), lengths)[words], minlength=lengths.size)
        offsets = offsets_from_counts(counts)
        rows = self.batch_stats(tokens[words], offsets, np.full(lengths.size, sentence, dtype=np.int64))
        return np.vstack([np.zeros((1, self.stats_size)), rows])

    @property
    def stats_size(self) -> int:
        first = self.graphs[0].edge_stats
        if self.precomputed and first is not None:
            return int(first.shape[1])
        return self.metric.stats_size

    @property
    def is_kbest(self) -> bool:
        """True when every sentence is a k-best list (start, goal, one edge per hypothesis)."""
        return all(g.is_kbest for g in self.graphs)

    def score(self, stats: np.ndarray) -> float | np.ndarray:
        """The metric of summed statistics (a vector), or of each row (a 2-D array)."""
        return self.metric.score(stats)
