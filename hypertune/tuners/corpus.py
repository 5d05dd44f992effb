"""A tuning set: one search space per sentence, its references, and the metric's statistics of yields.

Every tuner works on this. Word ids in the graphs and in the metric agree when the metric's tokenizer
is ``none`` (the default for tuning: decoder output and tuning references are already tokenized, as
Moses, cdec and Z-MERT assume), so statistics come straight from id arrays; with another tokenizer
or lowercasing, yields are turned back into strings and tokenized like the references.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numba
import numpy as np
import scipy.sparse as sp

from hypertune.algorithms.kbest import LazyKBest
from hypertune.algorithms.prune import prune
from hypertune.algorithms.viterbi import viterbi_yields
from hypertune.errors import InputError, UsageError, warn
from hypertune.hypergraph import Hypergraph, PackedGraphs, from_kbest, union
from hypertune.metrics import BleuMetric, Metric
from hypertune.metrics.base import SENTENCE_END, SENTENCE_START, strip_sentence_marker_ids
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.weights import Weights

if TYPE_CHECKING:
    from hypertune.formats.registry import SentenceIds


@dataclass
class TuningSet:
    """Graphs (one per sentence, sharing a feature space and vocabulary), their references and a metric.

    ``references[s]`` are the references of ``graphs[s]``, whose sentence id (its line in the reference
    files) is ``sentence_ids[s]``. Build it with :meth:`from_corpus` to look references up by the ids
    the inputs carry; the plain constructor takes graphs and references already aligned. ``naming``, when
    known, says where the ids come from (file names, file contents, order: the commands' summaries).
    """

    graphs: list[Hypergraph]
    references: list[list[str]]
    metric: Metric
    sentence_ids: list[int] | None = None
    naming: SentenceIds | None = field(default=None, repr=False, compare=False)
    _prepared: object = field(default=None, init=False, repr=False)
    _edge_stats: dict[int, np.ndarray] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.graphs:
            raise InputError("the tuning set has no sentences")
        if self.sentence_ids is None:
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
        offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
        np.cumsum([a.size for a in arrays], out=offsets[1:])
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
        if isinstance(metric, BleuMetric):
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
        offsets = np.concatenate(([0], np.cumsum(counts)))
        rows = self.batch_stats(tokens[words], offsets, np.full(lengths.size, sentence, dtype=np.int64))
        return np.vstack([np.zeros((1, self.stats_size)), rows])

    @property
    def stats_size(self) -> int:
        if self.precomputed:
            return int(self.graphs[0].edge_stats.shape[1])
        return self.metric.stats_size

    @property
    def is_kbest(self) -> bool:
        """True when every sentence is a k-best list (start, goal, one edge per hypothesis)."""
        return all(g.is_kbest for g in self.graphs)

    def score(self, stats: np.ndarray) -> float | np.ndarray:
        """The metric of summed statistics (a vector), or of each row (a 2-D array)."""
        return self.metric.score(stats)


# ---------------------------------------------------------------------- shards
def shard_ranges(sentences: int | Sequence[int], count: int) -> list[tuple[int, int]]:
    """Sentences cut into ``count`` contiguous runs in order (fewer when there are fewer sentences), none
    empty. ``sentences``: a count (runs of sizes differing by at most one) or every sentence's cost, e.g. its
    edges (runs of about equal cost, as the line searcher's threads get them: envelope work grows with the
    edges). The one rule of how a tuning set is sharded, locally and on a cluster: shard ``k`` of ``count``
    is the same sentences wherever it is loaded."""
    if count < 1:
        raise UsageError(f"the number of shards must be at least 1, got {count}")
    costs = np.ones(sentences, dtype=np.float64) if isinstance(sentences, int) else np.asarray(sentences, float)
    n = costs.size
    count = max(1, min(count, n))
    if isinstance(sentences, int):
        bounds = [n * k // count for k in range(count + 1)]
    else:
        totals = np.concatenate(([0.0], np.cumsum(costs)))
        cuts = np.searchsorted(totals, totals[-1] * np.arange(1, count) / count)
        bounds = [0]
        for k, cut in enumerate(cuts, 1):  # at least one sentence per run, room left for the runs after
            bounds.append(int(min(max(cut, bounds[-1] + 1), n - (count - k))))
        bounds.append(n)
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def shard_costs(tuning_set: TuningSet) -> list[int]:
    """What :func:`shard_ranges` balances: every sentence's edges (a k-best list's hypotheses)."""
    return [g.num_edges for g in tuning_set.graphs]


@dataclass
class Shard:
    """One shard of a tuning set, where it lives (this process or a cluster worker): its sentences
    ``start:start + len(tuning_set)`` of the whole set, which shard it is, and ``state``, what the tuners
    prepare on it once and keep between calls (a line searcher, packed search spaces, a MIRA runner),
    keyed by the tuner's own names."""

    index: int
    count: int
    start: int
    tuning_set: TuningSet
    state: dict[str, Any] = field(default_factory=dict)


R = TypeVar("R")


class Shards(Protocol):
    """A sharded tuning set as a tuner sees it: the feature space, the metric, the sentence count, and
    ``map(function, *args)``, which calls ``function(shard, *args)`` on every :class:`Shard` and returns the
    results in shard order. Only ``args`` and the results travel between processes, so tuners written
    against this run unchanged in one process (:class:`LocalShards`) and on a Dask cluster
    (``hypertune.distributed``). ``function`` must be a module-level function (it is sent by name)."""

    feature_space: FeatureSpace
    metric: Metric
    sentences: int
    count: int

    def map(self, function: Callable[..., R], *args: Any) -> list[R]: ...

    def map_each(self, function: Callable[..., R], each: Sequence[Any], *args: Any) -> list[R]:
        """``function(shard, each[shard.index], *args)`` on every shard, results in shard order: ``each[k]``
        travels to shard ``k``'s worker only (a shard's own part of something corpus-sized)."""
        ...


class LocalShards:
    """:class:`Shards` in this process: ``tuning_set`` cut by :func:`shard_ranges` into ``count`` shards, mapped
    over in order. A tuner run on these gives the same results, bit for bit, as on a cluster with the same
    shards: both call the same shard functions and combine their results in the same order."""

    def __init__(self, tuning_set: TuningSet, count: int = 1) -> None:
        self.tuning_set = tuning_set
        self.feature_space = tuning_set.feature_space
        self.metric = tuning_set.metric
        self.sentences = len(tuning_set)
        ranges = shard_ranges(shard_costs(tuning_set), count)
        whole = len(ranges) == 1
        self.shards = [
            Shard(k, len(ranges), a, tuning_set if whole else tuning_set.subset(a, b))
            for k, (a, b) in enumerate(ranges)
        ]
        self.count = len(self.shards)

    def map(self, function: Callable[..., R], *args: Any) -> list[R]:
        return [function(shard, *args) for shard in self.shards]

    def map_each(self, function: Callable[..., R], each: Sequence[Any], *args: Any) -> list[R]:
        return [function(shard, each[shard.index], *args) for shard in self.shards]


def ordered_sum(values: Sequence[Any]) -> Any:
    """``values[0] + values[1] + ...`` left to right: how every sharded tuner adds its shards' parts, so that
    the same shards give the same floating-point sum in one process and on a cluster (one shard's value is
    returned as it is)."""
    total = values[0]
    for value in values[1:]:
        total = total + value
    return total


def mixed_columns(weights: np.ndarray, k: int) -> np.ndarray:
    """Which features iterative parameter mixing averages: all (``k = 0``), or the ``k`` with the largest l2
    norm over the shards' weight rows (Simianer et al. 2012's l1/l2 selection; ties: the lower column)."""
    keep = np.ones(weights.shape[1], dtype=bool)
    if k and k < weights.shape[1]:
        norms = np.sqrt((weights * weights).sum(axis=0))
        keep[:] = False
        keep[np.argsort(-norms, kind="stable")[:k]] = True
    return keep


def mixture(rows: Sequence[np.ndarray], keep: np.ndarray) -> np.ndarray:
    """Iterative parameter mixing's average (McDonald et al. 2010): the mean of the shards' weight vectors,
    summed in shard order, and 0 for the features outside ``keep`` (:func:`mixed_columns`)."""
    return np.where(keep, ordered_sum(list(rows)) / len(rows), 0.0)


def mixed_epoch(
    parts: Sequence[tuple[np.ndarray, np.ndarray, int, Any]], select: int
) -> tuple[np.ndarray, np.ndarray, int, Any]:
    """One epoch of iterative parameter mixing from each shard's ``(weights, averaged weights, updates, loss)``,
    in shard order: the mixed weights the next epoch starts from, the mixed averaged weights (what the epoch
    is scored by), and the updates and losses summed; ``select``: :func:`mixed_columns`'s ``k``."""
    weights = np.vstack([p[0] for p in parts])
    keep = mixed_columns(weights, select)
    return (
        mixture(weights, keep),
        mixture([p[1] for p in parts], keep),
        sum(p[2] for p in parts),
        ordered_sum([p[3] for p in parts]),
    )


def select_references(
    ids: Sequence[int], references: Sequence[list[str]], report_unused: bool = True
) -> list[list[str]]:
    """The references of sentences ``ids``: line ``i`` of the reference files belongs to sentence id ``i``
    (as Moses's extractor has it). An id past the end is an error naming it and the reference files;
    lines no sentence uses are normal (Moses ships more than it uses) but are reported once as a warning
    (unless ``report_unused`` is false: :func:`check_sentence_ids` named them with their files)."""
    source = getattr(references, "describe", lambda: "the references")()
    past = [i for i in ids if i >= len(references)]
    if past and not len(references):
        raise InputError(f"{source}: no reference lines (the file is empty), but there are {len(ids)} sentences")
    if past:
        raise InputError(
            f"sentence id {past[0]} has no reference: {source} has {len(references)} lines (ids 0 to "
            f"{len(references) - 1}); {len(past)} sentence(s) past the end"
        )
    unused = len(references) - len(set(ids))
    if unused and report_unused:
        warn(
            f"{unused} of the {len(references)} reference lines in {source} match no sentence "
            f"(sentences: {_ranges(ids)})"
        )
    return [references[i] for i in ids]


def check_sentence_ids(
    naming: SentenceIds, ids: Sequence[int], references: Sequence[list[str]] | None, strict: bool = False
) -> bool:
    """Check the ids that per-sentence files take from their names (``naming``) against the tuning set's ids
    ``ids`` and the reference lines: two files of one folder with the same number (a clash: their graphs
    would be joined as one sentence), and reference lines no file covers (a gap: a file missing or misnamed)
    are each one warning naming the files, or an :class:`InputError` with ``strict``; a number past the
    references' end is always an error naming its file. Returns whether ids came from file names (then the
    gap warning replaces :func:`select_references`' unused-lines warning)."""
    if not naming.named or (references is not None and not len(references)):  # empty: select_references says so
        return False
    source = getattr(references, "describe", lambda: "the references")()
    problems = [
        f"{_files(files)} in one folder all number sentence {number} by their names; their graphs are joined as "
        "one sentence"
        for number, files in naming.clashes()
    ]
    if references is not None:
        past = [(file, number) for file, number in naming.named if number >= len(references)]
        if past:
            file, number = past[0]
            raise InputError(
                f"sentence id {number}, from the file name {file}, has no reference: {source} has "
                f"{len(references)} lines (ids 0 to {len(references) - 1}); {len(past)} file(s) past the end"
            )
    present = set(ids)
    top = len(references) if references is not None else max(number for _, number in naming.named) + 1
    missing = [i for i in range(top) if i not in present]
    if missing:
        numbered = sorted({number: file for file, number in reversed(naming.named)}.items())
        lines = f"{len(missing)} of the {top} reference lines" if references is not None else "sentence ids"
        problems.append(
            f"{lines} have no file (sentences {_ranges(missing)}): the numbers in the file names jump "
            f"{_jumps(missing, numbered)}"
        )
    for problem in problems:
        if strict:
            raise InputError(f"{problem} (--strict)")
        warn(f"{problem} (--strict: an error)")
    return True


def _files(files: Sequence[str]) -> str:
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return f"files {shown}"


def _jumps(missing: Sequence[int], numbered: Sequence[tuple[int, str]]) -> str:
    """``from d/0.gz to d/2.gz, from d/4.gz to the end`` for the runs of ``missing`` ids (the first three)."""
    runs: list[tuple[int, int]] = []
    for i in missing:
        if runs and runs[-1][1] == i - 1:
            runs[-1] = (runs[-1][0], i)
        else:
            runs.append((i, i))
    parts = []
    for first, last in runs[:3]:
        before = next((file for number, file in reversed(numbered) if number < first), "the start")
        after = next((file for number, file in numbered if number > last), "the end")
        parts.append(f"from {before} to {after}")
    return ", ".join(parts) + (", ..." if len(runs) > 3 else "")


def _ranges(ids: Sequence[int]) -> str:
    """``0-3, 7, 9-10`` for sorted distinct ids."""
    values = sorted(set(ids))
    parts, start = [], None
    for k, v in enumerate(values):
        if start is None:
            start = v
        if k + 1 == len(values) or values[k + 1] != v + 1:
            parts.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ", ".join(parts[:6]) + (", ..." if len(parts) > 6 else "")


def sentence_numbers(graphs: Sequence[Hypergraph]) -> list[int]:
    """Each graph's sentence: its id (``Hypergraph.sentence_id``), else its position among the graphs without
    one, in input order. The numbering of :func:`assemble_sentences` and of ``decode``'s output."""
    out, position = [], 0
    for hg in graphs:
        if hg.sentence_id is None:
            out.append(position)
            position += 1
        else:
            out.append(int(hg.sentence_id))
    return out


def assemble_sentences(graphs: Sequence[Hypergraph]) -> tuple[list[Hypergraph], list[int]]:
    """Group graphs read from any number of inputs into sentences, ordered by sentence id.

    A graph with an explicit id (``Hypergraph.sentence_id``: n-best and Z-MERT ids, FEATSTAT ``sid``,
    Moses search graph ids, integer SLF ``UTTERANCE``, and the number in a per-sentence file's name:
    :func:`~hypertune.formats.registry.named_by_file`) belongs to that sentence; every other graph is numbered
    by its position among those without one, in input order (:func:`sentence_numbers`: the graphs of one file
    holding several, single-graph files whose names carry no number). Graphs of the same sentence are joined
    (accumulation): k-best lists are merged with duplicates removed (:func:`merge_kbest`), and lattices or
    forests are joined with each other and with the merged list by :func:`~hypertune.hypergraph.union`."""
    groups: dict[int, list[Hypergraph]] = {}
    numbered, named = set(), set()  # sentences with a lattice/forest numbered by position, or by its own id
    for hg, sid in zip(graphs, sentence_numbers(graphs), strict=True):
        if hg.sentence_id is None:
            numbered.add(sid)
        elif not hg.is_kbest:
            named.add(sid)
        groups.setdefault(sid, []).append(hg)
    mixed = sorted(numbered & named)
    if mixed:  # e.g. a cdec forest (sentence 0 by position) beside a Moses hgdir (0.gz): joined, but say so
        shown = ", ".join(map(str, mixed[:5])) + (" ..." if len(mixed) > 5 else "")
        warn(
            f"sentence(s) {shown} join a graph numbered by its position with one that names its own sentence id; "
            "give graphs of one kind, or check that they are the same sentences"
        )
    ids = sorted(groups)
    lists_only = [sid for sid in ids if all(g.is_kbest for g in groups[sid])]
    if lists_only and len(lists_only) < len(ids):  # accumulation adds n-best lists to graphs, not sentences
        shown = ", ".join(map(str, lists_only[:5])) + (" ..." if len(lists_only) > 5 else "")
        warn(f"sentence(s) {shown} have only n-best lists while the others have lattices or hypergraphs")
    sentences = []
    for sid in ids:
        group = groups[sid]
        lists = [g for g in group if g.is_kbest]
        others = [g for g in group if not g.is_kbest]
        merged = [lists[0] if len(lists) == 1 else _merge_one(lists)] if lists else []
        parts = others + merged
        sentences.append(parts[0] if len(parts) == 1 else union(parts, sentence_id=sid))
    return sentences, ids


def merge_kbest(graphs: Sequence[Hypergraph]) -> list[Hypergraph]:
    """k-best lists of the same sentences from several outer iterations, merged per sentence id
    (``sentence_id``, in order of first appearance) with duplicate hypotheses (same words, same
    features, same precomputed statistics) removed. Graphs that are not k-best lists pass through."""
    groups: dict[object, list[Hypergraph]] = {}
    order: list[object] = []
    for position, hg in enumerate(graphs):
        key = hg.sentence_id if hg.is_kbest and hg.sentence_id is not None else ("#", position)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(hg)
    return [groups[key][0] if len(groups[key]) == 1 else _merge_one(groups[key]) for key in order]


def _merge_one(lists: list[Hypergraph]) -> Hypergraph:
    first = lists[0]
    seen: set[tuple] = set()
    rows = []  # (graph, edge)
    for hg in lists:
        stats = hg.edge_stats
        for e in range(1, hg.num_edges):
            start, stop = hg.features.indptr[e], hg.features.indptr[e + 1]
            key = (
                tuple(hg.edge_target(e)),
                tuple(hg.features.indices[start:stop]),
                tuple(hg.features.data[start:stop]),
                None if stats is None else tuple(stats[e]),
            )
            if key not in seen:
                seen.add(key)
                rows.append((hg, e))
    space = first.feature_space
    features = sp.vstack(
        [first.feature_matrix(len(space))[:1]] + [hg.feature_matrix(len(space))[e : e + 1] for hg, e in rows],
        format="csr",
    )
    targets = [first.edge_target(0)] + [hg.edge_target(e) for hg, e in rows]
    lengths = np.array([t.size for t in targets])
    metadata = dict(first.metadata)
    metadata.pop("totals", None)  # the decoder's scores of the first list's hypotheses only
    stats = None
    if all(hg.edge_stats is not None for hg in lists):
        stats = np.vstack([first.edge_stats[:1]] + [hg.edge_stats[e : e + 1] for hg, e in rows])
    edges = len(rows) + 1
    return Hypergraph(
        2,
        np.array([0] + [1] * len(rows)),
        np.concatenate(([0], np.arange(edges))),
        np.zeros(len(rows), dtype=np.int64),
        features,
        np.concatenate(([0], np.cumsum(lengths))),
        np.concatenate(targets),
        space,
        first.vocabulary,
        first.node_labels,
        metadata,
        sentence_id=first.sentence_id,
        edge_stats=stats,
    )


@numba.njit(cache=True, nogil=True)
def model_best_rows(scores: np.ndarray, offsets: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """The model-best hypothesis of every k-best list: for sentence ``s``, the row of the first highest
    score among ``scores[offsets[s]:offsets[s + 1]]`` (ties go to the earlier hypothesis, as in Moses;
    -1 for an empty list). The one copy of the rule, used by MERT, MIRA and hope/fear search."""
    out = np.full(offsets.size - 1, -1, dtype=np.int64)
    for s in range(offsets.size - 1):
        lo, hi = offsets[s], offsets[s + 1]
        if hi > lo:
            best = lo
            for r in range(lo + 1, hi):
                if scores[r] > scores[best]:
                    best = r
            out[s] = best
    return out


class ModelBest:
    """The metric statistics of every sentence's model-best translation, for any weights: k-best lists take
    their first highest-scoring hypothesis (:func:`model_best_rows`), lattices and forests their Viterbi
    derivation (first best in-edge on ties), all in compiled passes over arrays packed once."""

    def __init__(self, tuning_set: TuningSet) -> None:
        self.tuning_set = tuning_set
        width = len(tuning_set.feature_space)
        self.width = width
        self.lists = [s for s, g in enumerate(tuning_set.graphs) if g.is_kbest]
        self.others = [s for s, g in enumerate(tuning_set.graphs) if not g.is_kbest]
        if self.lists:
            graphs = [tuning_set.graphs[s] for s in self.lists]
            self.list_features = sp.vstack([g.feature_matrix(width)[1:] for g in graphs], format="csr")
            self.list_offsets = np.concatenate(([0], np.cumsum([g.num_edges - 1 for g in graphs]))).astype(np.int64)
            self.list_stats = np.vstack([tuning_set.edge_stats(s)[1:] for s in self.lists])
        if self.others:
            self.packed = PackedGraphs.pack([tuning_set.graphs[s] for s in self.others])
            self.graph_features = self.packed.features.tocsr()

    def stats(self, w: np.ndarray) -> np.ndarray:
        """One row of statistics per sentence, in tuning-set order."""
        out = np.zeros((len(self.tuning_set), self.tuning_set.stats_size))
        if self.lists:
            rows = model_best_rows(np.ascontiguousarray(self.list_features @ w), self.list_offsets)
            out[self.lists] = self.list_stats[rows]
        if self.others:
            words, offsets = viterbi_yields(self.packed, self.graph_features @ w)
            sentences = np.asarray(self.others, dtype=np.int64)
            out[self.others] = self.tuning_set.batch_stats(words, offsets, sentences)
        return out

    def score(self, w: np.ndarray) -> float:
        """The corpus metric of the model-best translations under ``w``: what decoding the inputs with ``w``
        and scoring the output gives."""
        return float(self.tuning_set.score(self.stats(w).sum(axis=0)))


def as_kbest_lists(tuning_set: TuningSet, w: np.ndarray, k: int) -> tuple[list[Hypergraph], list[np.ndarray]]:
    """Every sentence as a k-best list with its edges' statistics: k-best lists as they are, lattices and
    forests as the list of their ``k`` best derivations under ``w`` (derivations, not distinct strings:
    with every derivation the list is the graph's distribution exactly)."""
    graphs, stats = [], []
    for s, hg in enumerate(tuning_set.graphs):
        if hg.is_kbest:
            graphs.append(hg)
            stats.append(tuning_set.edge_stats(s))
            continue
        search = LazyKBest(hg, hg.feature_matrix(w.size) @ w)
        names = hg.feature_space.names
        hypotheses = []
        for _, d in search.best(k):
            v = hg.derivation_features(d)
            hypotheses.append((hg.derivation_words(d), {names[i]: float(v[i]) for i in np.flatnonzero(v)}))
        listed = from_kbest(hypotheses, hg.feature_space, hg.vocabulary, sentence_id=hg.sentence_id)
        graphs.append(listed)
        stats.append(tuning_set.list_stats(s, listed))
    return graphs, stats


def prune_tuning_set(tuning_set: TuningSet, weights: Weights, density: float) -> TuningSet:
    """Prune every graph to ``density x reference length`` edges by max-marginal rank under ``weights``
    (Cherry & Foster 2012; Moses ``--hg-prune``, applied once with the initial weights). Reference length:
    the shortest reference, in words."""
    if density <= 0:
        raise UsageError(f"the pruning density must be positive, got {density}")
    graphs = []
    for s, hg in enumerate(tuning_set.graphs):
        if hg.is_kbest:
            graphs.append(hg)
            continue
        ref_len = min((len(r.split()) for r in tuning_set.references[s]), default=1)
        limit = max(1, int(density * max(ref_len, 1)))
        pruned, _ = prune(hg, weights.edge_scores(hg), limit)  # per-edge annotations follow the kept edges
        graphs.append(pruned)
    return TuningSet(graphs, tuning_set.references, tuning_set.metric, tuning_set.sentence_ids)
