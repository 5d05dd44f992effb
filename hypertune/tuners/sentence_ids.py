"""Sentence ids: graphs read from any number of inputs grouped into sentences by id (accumulation of repeated
ids: k-best lists merged without duplicates, as Moses's extractor does), references looked up by id, and the ids
per-sentence files take from their names checked for clashes and gaps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from hypertune.arrays import offsets_from_counts
from hypertune.errors import InputError, warn
from hypertune.hypergraph import EdgeScores, Hypergraph, union

if TYPE_CHECKING:
    from hypertune.formats.registry import SentenceIds


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
    names = _common_score_names(lists)
    for hg in lists:
        stats = hg.edge_stats
        scores = None if names is None else _score_columns(hg, names)
        for e in range(1, hg.num_edges):
            start, stop = hg.features.indptr[e], hg.features.indptr[e + 1]
            key = (
                tuple(hg.edge_target(e)),
                tuple(hg.features.indices[start:stop]),
                tuple(hg.features.data[start:stop]),
                None if stats is None else tuple(stats[e]),
                None if scores is None else tuple(scores[e]),
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
        stats = np.vstack([np.asarray(first.edge_stats)[:1]] + [np.asarray(hg.edge_stats)[e : e + 1] for hg, e in rows])
    edge_scores = None
    if names is not None:
        zero = np.zeros((1, len(names)))
        edge_scores = EdgeScores(names, np.vstack([zero] + [_score_columns(hg, names)[e : e + 1] for hg, e in rows]))
    edges = len(rows) + 1
    return Hypergraph(
        num_nodes=2,
        head=np.array([0] + [1] * len(rows)),
        tail_offsets=np.concatenate(([0], np.arange(edges))),
        tails=np.zeros(len(rows), dtype=np.int64),
        features=features,
        target_offsets=offsets_from_counts(lengths),
        target=np.concatenate(targets),
        feature_space=space,
        vocabulary=first.vocabulary,
        node_labels=first.node_labels,
        metadata=metadata,
        sentence_id=first.sentence_id,
        edge_stats=stats,
        edge_scores=edge_scores,
    )


def _common_score_names(lists: Sequence[Hypergraph]) -> tuple[str, ...] | None:
    """The given-score names every list's hypotheses carry (in the first list's order), ``None`` if a list has
    none: what a merged list keeps."""
    if any(hg.edge_scores is None for hg in lists):
        return None
    found = [hg.edge_scores.names for hg in lists if hg.edge_scores is not None]
    return tuple(n for n in found[0] if all(n in other for other in found[1:]))


def _score_columns(hg: Hypergraph, names: tuple[str, ...]) -> np.ndarray:
    assert hg.edge_scores is not None
    return np.column_stack([hg.edge_scores.column(n) for n in names]) if names else np.zeros((hg.num_edges, 0))
