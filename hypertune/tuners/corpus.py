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
from hypertune.formats.kbest_batch import KbestBatch
from hypertune.hypergraph import Hypergraph
from hypertune.metrics import BleuMetric, InterpolatedMetric, Metric
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

    graphs: Sequence[Hypergraph]
    references: list[list[str]]
    metric: Metric
    sentence_ids: list[int] = field(default_factory=list)
    naming: SentenceIds | None = field(default=None, repr=False, compare=False)
    _prepared: BleuReferences | None = field(default=None, init=False, repr=False)
    _edge_stats: dict[int, np.ndarray] = field(default_factory=dict, init=False, repr=False)
    _prepared_components: dict[int, BleuReferences] = field(default_factory=dict, init=False, repr=False)
    _batch_rows: np.ndarray | None = field(default=None, init=False, repr=False)

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
        if self.metric.given_names:
            self._check_given_scores()
        if len(self.references) != len(self.graphs) and not self.precomputed and self.metric.needs_references:
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
        if isinstance(graphs, KbestBatch) and graphs.sentences_in_order():  # one list per sentence: as they are
            sentences: Sequence[Hypergraph] = graphs
            ids = list(graphs.sentence_ids)
        else:
            sentences, ids = assemble_sentences(graphs)
        unneeded = not metric.needs_references or has_statistics(sentences)
        if references is None or (not len(references) and unneeded):
            if naming is not None:
                check_sentence_ids(naming, ids, None, strict)
            return cls(sentences, [], metric, ids, naming)
        named = naming is not None and check_sentence_ids(naming, ids, references, strict)
        return cls(sentences, select_references(ids, references, report_unused=not named), metric, ids, naming)

    def _check_given_scores(self) -> None:
        """A metric that reads given scores needs k-best lists whose hypotheses carry every name it reads; a
        metric that also reads words needs the words (or precomputed statistics)."""
        metric = self.metric
        for s, hg in enumerate(self.graphs):
            sentence = f"sentence {self.sentence_ids[s]}"
            if not hg.is_kbest:
                raise InputError(f"--metric {metric.name} reads the scores each hypothesis of a k-best list carries "
                                 f"(JSONL \"scores\", --scores FILE); {sentence} is a lattice or forest")  # fmt: skip
            have = () if hg.edge_scores is None else hg.edge_scores.names
            missing = [n for n in metric.given_names if n not in have]
            if missing:
                carried = f"they carry {', '.join(have)}" if have else "they carry no scores"
                raise InputError(f"--metric {metric.name} needs the score {missing[0]!r} of every hypothesis, but the "
                                 f"hypotheses of {sentence} have none ({carried}; give scores with JSONL \"scores\" "
                                 "or --scores FILE)")  # fmt: skip
            if metric.needs_references and hg.metadata.get("text") is False and hg.edge_stats is None:
                raise InputError(f"--metric {metric.name} needs the hypotheses' words, but {sentence} comes from "
                                 "JSONL lines without \"hyp\"")  # fmt: skip

    # ------------------------------------------------------------------ shared spaces
    @property
    def feature_space(self) -> FeatureSpace:
        graphs = self.graphs
        return graphs.feature_space if isinstance(graphs, KbestBatch) else graphs[0].feature_space

    @property
    def vocabulary(self) -> Vocabulary:
        graphs = self.graphs
        return graphs.vocabulary if isinstance(graphs, KbestBatch) else graphs[0].vocabulary

    @property
    def batch(self) -> KbestBatch | None:
        """The sentences' k-best lists as one batch of arrays when they were read as one (issue 33), else
        ``None``: the graphs are then made only where an algorithm asks for one."""
        return self.graphs if isinstance(self.graphs, KbestBatch) else None

    @property
    def precomputed(self) -> bool:
        """True when every graph carries its hypotheses' statistics (Moses FEATSTAT/SCORESTAT input)."""
        return has_statistics(self.graphs)

    def __len__(self) -> int:
        return len(self.graphs)

    def subset(self, start: int, stop: int) -> TuningSet:
        """Sentences ``start:stop`` as a tuning set of their own (a shard): the same graphs, references, metric
        and sentence ids, so every per-sentence quantity (statistics, envelopes, expectations) is the one the
        whole set computes for them. Cached k-best statistics come along."""
        references = self.references[start:stop] if len(self.references) else []
        graphs = self.graphs.subset(start, stop) if isinstance(self.graphs, KbestBatch) else self.graphs[start:stop]
        part = TuningSet(graphs, references, self.metric, self.sentence_ids[start:stop])
        part._edge_stats.update({s - start: v for s, v in self._edge_stats.items() if start <= s < stop})
        if self._batch_rows is not None and isinstance(self.graphs, KbestBatch):
            lo, hi = int(self.graphs.list_offsets[start]), int(self.graphs.list_offsets[stop])
            part._batch_rows = self._batch_rows[lo:hi]
        return part

    def _ids_are_tokens(self, metric: Metric | None = None) -> bool:
        metric = self.metric if metric is None else metric
        return isinstance(metric, BleuMetric) and metric.tokenizer.name == "none" and not metric.tokenizer.lowercase

    # ------------------------------------------------------------------ statistics
    def yield_stats(self, sentence: int, yields: Sequence[np.ndarray | Sequence[int]]) -> np.ndarray:
        """Metric statistics (n, S) of hypotheses of ``sentence`` given as word-id sequences."""
        arrays = [np.asarray(y, dtype=np.int64) for y in yields]
        offsets = offsets_from_counts([a.size for a in arrays])
        tokens = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
        return self.batch_stats(tokens, offsets, np.full(len(arrays), sentence, dtype=np.int64))

    def batch_stats(
        self, tokens: np.ndarray, offsets: np.ndarray, sentences: np.ndarray, metric: Metric | None = None
    ) -> np.ndarray:
        """Statistics of many hypotheses at once: hypothesis ``i`` is ``tokens[offsets[i]:offsets[i+1]]``
        (word ids) of sentence ``sentences[i]``, by the tuning set's metric (or ``metric``, a component of it).
        The decoder's sentence markers are removed first (:func:`~hypertune.metrics.base.strip_sentence_markers`).
        One compiled call for BLEU."""
        metric = self.metric if metric is None else metric
        if metric.given_names:
            raise InputError(f"--metric {metric.name} reads the scores k-best hypotheses carry, and these "
                             "hypotheses come from a lattice or forest")  # fmt: skip
        if self.precomputed:
            raise InputError("this tuning set has precomputed statistics and no hypothesis strings")
        vocabulary = self.vocabulary
        tokens, offsets = strip_sentence_marker_ids(
            np.asarray(tokens), np.asarray(offsets), vocabulary.get(SENTENCE_START), vocabulary.get(SENTENCE_END)
        )
        n = sentences.size
        prepared = self._bleu_references(metric)
        if isinstance(metric, BleuMetric) and prepared is not None:
            if not self._ids_are_tokens(metric):
                mapped = self._word_by_word(metric, tokens)
                if mapped is not None:
                    tokens = mapped
                else:
                    texts = [self.text(tokens[offsets[i] : offsets[i + 1]]) for i in range(n)]
                    tokens, offsets = metric.flatten(texts)
            return metric.stats_batch(tokens, offsets, sentences, prepared)
        return self._text_stats(metric, tokens, offsets, sentences)

    def _word_by_word(self, metric: BleuMetric, tokens: np.ndarray) -> np.ndarray | None:
        """``metric``'s word ids of the vocabulary ids ``tokens`` when its tokenizer is ``none``, each distinct
        word put through the tokenizer once: what the hypotheses' texts give, since with ``none`` the text is
        only (lowercased and) split on whitespace, and lowercasing is word by word (``str.lower``'s one rule that
        looks at neighbours, the final sigma, stops at a space). None when a word is not exactly one token."""
        if metric.tokenizer.name != "none":
            return None
        unique, inverse = np.unique(tokens, return_inverse=True)
        table = np.empty(unique.size, dtype=np.int64)
        for k, word in enumerate(self.vocabulary.words(int(i) for i in unique)):
            ids = metric.ids(word)
            if ids.size != 1:
                return None
            table[k] = ids[0]
        return table[inverse.reshape(-1)]

    def _bleu_references(self, metric: Metric) -> BleuReferences | None:
        """The references prepared for ``metric`` when it is BLEU (the tuning set's own, or an interpolation's
        component, prepared on first use)."""
        if metric is self.metric:
            return self._prepared
        if not isinstance(metric, BleuMetric):
            return None
        prepared = self._prepared_components.get(id(metric))
        if prepared is None:
            if self._ids_are_tokens(metric):
                metric.vocabulary = self.vocabulary
            prepared = self._prepared_components[id(metric)] = metric.prepare(self.references)
        return prepared

    def _text_stats(self, metric: Metric, tokens: np.ndarray, offsets: np.ndarray, sentences: np.ndarray) -> np.ndarray:
        """``metric``'s statistics of hypotheses given as word ids, sentence by sentence through their text."""
        out = np.zeros((sentences.size, metric.stats_size))
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
        batch = self.batch
        if batch is not None and not self.metric.given_names and (batch.stats is not None or batch.words is not None):
            rows = self.batch_rows()  # the batch's rows, one copy made here, not cached
            lo, hi = int(batch.list_offsets[sentence]), int(batch.list_offsets[sentence + 1])
            return np.vstack([np.zeros((1, rows.shape[1])), rows[lo:hi]])
        hg = self.graphs[sentence]
        if hg.edge_stats is not None and not self.metric.given_names:
            stats = hg.edge_stats
        else:
            if not hg.is_kbest:
                raise InputError(f"sentence {sentence} is not a k-best list")
            stats = self.list_stats(sentence, hg)
        self._edge_stats[sentence] = stats
        return stats

    def batch_rows(self) -> np.ndarray:
        """A batch's statistics, one row per hypothesis of every list (:attr:`batch`): the precomputed ones,
        or those of the hypotheses' words computed once for all lists, as :meth:`list_stats` computes them
        list by list."""
        batch = self.batch
        assert batch is not None and not self.metric.given_names
        if batch.stats is not None:
            return batch.stats
        if self._batch_rows is None:
            assert batch.words is not None
            ids, offsets = batch.words
            sentences = np.repeat(np.arange(len(batch), dtype=np.int64), batch.counts())
            rows = self.batch_stats(np.asarray(ids, dtype=np.int64), offsets, sentences)
            self._batch_rows = np.asarray(rows, dtype=np.float64)  # as list_stats stacks them
        return self._batch_rows

    def list_stats(self, sentence: int, hg: Hypergraph) -> np.ndarray:
        """The statistics of every edge of the k-best list ``hg`` against ``sentence``'s references (row 0,
        the start axiom, zeros): every hypothesis's words (its target minus the start-node reference) in
        one batch."""
        if self.metric.given_names:
            rows = np.hstack([self._component_rows(m, sentence, hg) for m in _components(self.metric)])
        else:
            rows = self._word_rows(self.metric, sentence, hg)
        return np.vstack([np.zeros((1, self.stats_size)), rows])

    def _word_rows(self, metric: Metric, sentence: int, hg: Hypergraph) -> np.ndarray:
        """``metric``'s statistics of every hypothesis of the k-best list ``hg``, from its words (one batch)."""
        lengths = np.diff(hg.target_offsets)[1:]
        tokens = hg.target[hg.target_offsets[1] :]
        words = tokens >= 0
        counts = np.bincount(np.repeat(np.arange(lengths.size), lengths)[words], minlength=lengths.size)
        offsets = offsets_from_counts(counts)
        return self.batch_stats(tokens[words], offsets, np.full(lengths.size, sentence, dtype=np.int64), metric)

    def _component_rows(self, metric: Metric, sentence: int, hg: Hypergraph) -> np.ndarray:
        """One component's statistics of every hypothesis of a k-best list: from the given scores it reads, from
        the precomputed statistics (FEATSTAT/SCORESTAT, which must be this component's), or from the words."""
        if metric.given_names:
            assert hg.edge_scores is not None  # checked when the set was made
            return metric.stats_from_given(np.column_stack([hg.edge_scores.column(n)[1:] for n in metric.given_names]))
        if hg.edge_stats is not None:
            if hg.edge_stats.shape[1] != metric.stats_size:
                found, wanted = hg.edge_stats.shape[1], metric.stats_size
                raise InputError(f"the precomputed statistics of sentence {self.sentence_ids[sentence]} have {found} "
                                 f"columns, not the {wanted} of {metric.name}")  # fmt: skip
            return hg.edge_stats[1:]
        return self._word_rows(metric, sentence, hg)

    @property
    def stats_size(self) -> int:
        batch = self.batch
        if batch is not None and batch.stats is not None and not self.metric.given_names:
            return int(batch.stats.shape[1])
        first = self.graphs[0].edge_stats
        if self.precomputed and first is not None and not self.metric.given_names:
            return int(first.shape[1])
        return self.metric.stats_size

    @property
    def is_kbest(self) -> bool:
        """True when every sentence is a k-best list (start, goal, one edge per hypothesis)."""
        return self.batch is not None or all(g.is_kbest for g in self.graphs)

    def score(self, stats: np.ndarray) -> float | np.ndarray:
        """The metric of summed statistics (a vector), or of each row (a 2-D array)."""
        return self.metric.score(stats)


def has_statistics(graphs: Sequence[Hypergraph]) -> bool:
    """True when every graph carries its hypotheses' statistics (a batch: when it has them), without making a
    batch's graphs."""
    if isinstance(graphs, KbestBatch):
        return graphs.stats is not None
    return all(g.edge_stats is not None for g in graphs)


def _components(metric: Metric) -> list[Metric]:
    """An interpolation's metrics, in the order of its statistics; a metric of its own."""
    return list(metric.metrics) if isinstance(metric, InterpolatedMetric) else [metric]
