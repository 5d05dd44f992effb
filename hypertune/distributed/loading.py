"""Shard-local loading: each worker reads only the files of its own shard (issue 19).

An input that is a directory of one file per sentence (a Moses hgdir ``0.gz 1.gz ...``, or any directory of
per-sentence files that :func:`~hypertune.formats.registry.corpus_files` orders by sentence id, each the
sentence its name numbers: :func:`~hypertune.formats.registry.sentence_number`) is loaded in
two rounds, so that no worker reads the whole corpus and every shard still equals the shard the whole read
would have cut:

1. **Read.** The files are cut into ``count`` contiguous blocks of about equal bytes (``os.stat``, no
   reading); the worker of shard ``k`` parses block ``k`` into its own feature names and vocabulary and
   reports, per file, its sentence id and edges, and its names and words in first-appearance order.
2. **Settle.** The client joins the names (and words) in block order: first appearance over the blocks in
   order *is* first appearance over the whole corpus, so the joined feature space is the one a single
   process reading every file builds, id for id. It cuts the sentences by edges with the one rule
   (:func:`~hypertune.tuners.shards.shard_ranges` over the edges, as
   :class:`~hypertune.tuners.shards.LocalShards` cuts), and each shard's worker keeps the files of its final
   range, reading the few at the block boundaries it lacks, remaps their feature columns and word ids to
   the joined ones (:func:`remap`), and selects its reference lines by sentence id.

Files read more than once: only those between a block's and its shard's boundaries. What travels: the
file list (client to workers), every block's names and words and per-file edges (workers to client), the
joined names and words (client to every shard), then the usual weights and summaries.

When the read round shows that the directory is not one graph per file with increasing sentence ids (or
the input is not such a directory), the workers fall back to the whole read: every worker reads every input
and keeps its shard (:class:`~hypertune.distributed.shards.DaskShards` with the caller's loader).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from hypertune.errors import UsageError
from hypertune.formats.references import read_references
from hypertune.formats.registry import corpus_files, detect_format, get_format
from hypertune.hypergraph import Hypergraph
from hypertune.metrics import BleuMetric, Metric
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.sentence_ids import select_references

#: ``finish(tuning_set) -> tuning_set`` run on the worker once a shard is settled (e.g. pruning under the start
#: weights, which need the joined feature names); it must be picklable
Finish = Callable[[TuningSet], TuningSet]


@dataclass(frozen=True)
class SentenceFiles:
    """A directory input read shard by shard: its files in sentence order, their sizes, the graph format
    (``None``: detected per file), the reference files, and ``finish`` (optional, see :data:`Finish`)."""

    files: tuple[str, ...]
    sizes: tuple[int, ...]
    format: str | None
    references: tuple[str, ...]
    refs_per_sentence: int | None = None
    finish: Finish | None = None

    def blocks(self, count: int) -> list[tuple[int, int]]:
        """The read round's cut: contiguous runs of files of about equal bytes."""
        from hypertune.tuners.shards import shard_ranges

        return shard_ranges([max(size, 1) for size in self.sizes], count)


def sentence_files(
    inputs: Sequence[str],
    format: str | None,
    references: Sequence[str] | None,
    refs_per_sentence: int | None = None,
    finish: Finish | None = None,
) -> SentenceFiles | None:
    """The shard-local plan of a command's inputs, or ``None`` when they are not one directory of sentence files
    with references (then every worker reads every input: one big n-best file, a FEATSTAT pair, several
    inputs accumulated per sentence). Paths are made absolute (a worker's working directory may differ)."""
    if len(inputs) != 1 or not references or not os.path.isdir(inputs[0]):
        return None
    files = corpus_files(os.path.abspath(inputs[0]))
    if len(files) < 2:
        return None
    sizes = tuple(os.stat(f).st_size for f in files)
    refs = tuple(os.path.abspath(r) if r != "-" else r for r in references)
    return SentenceFiles(tuple(files), sizes, format, refs, refs_per_sentence, finish)


@dataclass(frozen=True)
class BlockRead:
    """What the read round reports for one block: per file its graphs' count, sentence id (``None`` when it has
    none, or more than one graph) and edges; the block's feature names and words in first-appearance order."""

    first: int
    graphs: tuple[int, ...]
    sentence_ids: tuple[int | None, ...]
    edges: tuple[int, ...]
    feature_names: tuple[str, ...]
    words: tuple[str, ...]


def read_files(plan: SentenceFiles, indices: Sequence[int]) -> dict[int, list[Hypergraph]]:
    """Files ``indices`` of the plan, parsed into one fresh feature space and vocabulary."""
    space, vocabulary = FeatureSpace(), Vocabulary()
    out = {}
    for i in indices:
        path = plan.files[i]
        fmt = get_format(plan.format) if plan.format else detect_format(path)
        out[i] = fmt.read_file(path, space, vocabulary)  # numbered by its name, as read_graphs numbers it
    return out


def describe_block(first: int, graphs: dict[int, list[Hypergraph]]) -> BlockRead:
    order = sorted(graphs)
    space = next((g[0].feature_space for g in graphs.values() if g), FeatureSpace())
    vocabulary = next((g[0].vocabulary for g in graphs.values() if g), Vocabulary())
    return BlockRead(
        first,
        tuple(len(graphs[i]) for i in order),
        tuple(graphs[i][0].sentence_id if len(graphs[i]) == 1 else None for i in order),
        tuple(sum(g.num_edges for g in graphs[i]) for i in order),
        tuple(space.names),
        tuple(vocabulary.names),
    )


def joined(blocks: Sequence[BlockRead]) -> tuple[list[str], list[str], list[int], list[int]] | None:
    """The blocks' names and words joined in block order, every file's sentence id and edges; ``None`` when a
    file is not one graph with a sentence id or the ids do not increase file by file (then the whole read)."""
    names: dict[str, None] = {}
    words: dict[str, None] = {}
    ids: list[int] = []
    edges: list[int] = []
    for block in sorted(blocks, key=lambda b: b.first):
        if any(count != 1 for count in block.graphs) or any(sid is None for sid in block.sentence_ids):
            return None
        names.update(dict.fromkeys(block.feature_names))
        words.update(dict.fromkeys(block.words))
        ids.extend(int(sid) for sid in block.sentence_ids)  # type: ignore[arg-type]
        edges.extend(block.edges)
    if any(b <= a for a, b in zip(ids, ids[1:], strict=False)):
        return None
    return list(names), list(words), ids, edges


def remap(hg: Hypergraph, space: FeatureSpace, vocabulary: Vocabulary) -> Hypergraph:
    """``hg`` (read into its own names and words) in ``space`` and ``vocabulary``, which hold all of them: the
    feature columns and target word ids mapped, everything else shared (``hg`` is not to be used after). The
    graph constructor sorts every row's columns, as a graph read straight into ``space`` has them."""
    column_map = np.array([space.get(n) for n in hg.feature_space.names], dtype=np.int64)
    word_map = np.array([vocabulary.get(w) for w in hg.vocabulary.names], dtype=np.int64)
    f = hg.features
    features = sp.csr_matrix(
        (f.data, column_map[f.indices] if f.indices.size else f.indices.copy(), f.indptr),
        shape=(f.shape[0], len(space)),
    )
    target = hg.target.copy()
    words = target >= 0
    target[words] = word_map[target[words]]
    return dataclasses.replace(
        hg, features=features, target=target, feature_space=space, vocabulary=vocabulary, metadata=dict(hg.metadata)
    )


def settle(
    plan: SentenceFiles,
    held: dict[int, list[Hypergraph]],
    start: int,
    stop: int,
    names: Sequence[str],
    words: Sequence[str],
    ids: Sequence[int],
    metric: Metric,
) -> tuple[TuningSet, int]:
    """Sentences ``start:stop`` as a tuning set in the joined names and words: the files this worker read in the
    read round (``held``), the others read now; references selected by sentence id (the reference files
    are read whole: they are text, one line per sentence). ``metric`` is this shard's copy. Returns the tuning set
    and the number of reference lines (the client reports lines no sentence uses)."""
    missing = [i for i in range(start, stop) if i not in held]
    found = {**{i: held.pop(i) for i in range(start, stop) if i in held}, **read_files(plan, missing)}
    space, vocabulary = FeatureSpace(names), Vocabulary(words)
    graphs = [remap(found.pop(i)[0], space, vocabulary) for i in range(start, stop)]  # each read copy dropped
    if isinstance(metric, BleuMetric):  # as the command line builds it: over the graphs' vocabulary
        metric.vocabulary = vocabulary
    references = read_references(list(plan.references), plan.refs_per_sentence)
    with warnings.catch_warnings():  # lines of other shards' sentences are unused here; the client checks
        warnings.simplefilter("ignore")
        selected = select_references(list(ids[start:stop]), references)
    tuning_set = TuningSet(graphs, selected, metric, list(ids[start:stop]))
    return (plan.finish(tuning_set) if plan.finish is not None else tuning_set), len(references)


def check_count(files: int, count: int) -> None:
    if count > files:
        raise UsageError(f"--shards {count}: the tuning set has only {files} sentences")
