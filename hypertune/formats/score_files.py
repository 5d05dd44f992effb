"""Score files (``--scores FILE``): the given scores of the hypotheses of k-best inputs that have no place
for them (Moses n-best lists, Z-MERT candidates, Moses FEATSTAT files).

One line per hypothesis, in the input's order (graph after graph as read, hypothesis after hypothesis),
of whitespace-separated ``name=value`` pairs, e.g. ``comet=0.853 kiwi=0.79``: every line has the same names
(in any order), each once; values are finite numbers (read exactly as ``float()`` reads them). The names
become the columns of the graphs' :class:`~hypertune.hypergraph.EdgeScores` in order of first appearance,
which the ``scores.NAME`` metric reads. A line lacking a name that others have, a name twice on a line, a
value that is not a finite number, a token that is not ``name=value``, an empty file and a line count other
than the hypotheses' are errors naming the file (and the line).

Parsing is one compiled pass over the file's bytes (:mod:`hypertune.formats._scan`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numba
import numpy as np

from hypertune.arrays import offsets_from_counts
from hypertune.compiled import uncounted_jit
from hypertune.errors import InputError
from hypertune.formats._scan import (
    TABLE_FULL,
    fail,
    flagged_floats,
    intern,
    located,
    new_error,
    new_string_table,
    next_token,
    parse_decimal,
    read_bytes,
    run_scan,
    scan_error,
    string_at,
    text_bounds,
)
from hypertune.formats.jsonl import kbest_rows
from hypertune.hypergraph import EdgeScores, Hypergraph

_inline = numba.njit(cache=True, nogil=True, inline="always")

_NOT_PAIR, _TWICE = 1, 2  # error codes of the scan
_MESSAGES = {
    _NOT_PAIR: "expected 'name=value' pairs, got {token!r}",
    _TWICE: "score {token!r} given twice on one line",
}


class _Scanned(NamedTuple):
    """What the pass fills: per line its start and pair count; per pair its name's table id and value;
    ``flagged`` (pair, start, end) of the values left to ``float()``; ``seen`` per name the last line
    that had it; ``sizes`` = lines, pairs, flagged."""

    line_starts: np.ndarray
    counts: np.ndarray
    names: np.ndarray
    values: np.ndarray
    flagged: np.ndarray
    seen: np.ndarray
    sizes: np.ndarray
    error: np.ndarray


@uncounted_jit
def _scan(buf, out, names):  # pragma: no cover - compiled
    """Every line's ``name=value`` tokens (the name before the last ``=``). Stops at the first error."""
    n = buf.size
    sizes = out.sizes
    pos = 0
    line_number = 0
    p = 0
    while pos < n:
        line = pos
        end = line
        while end < n and buf[end] != 10:
            end += 1
        pos = end + 1
        out.line_starts[line_number] = line
        count = 0
        j = line
        while True:
            s, e = next_token(buf, j, end, False)
            if s == end:
                break
            j = e
            q = e - 1
            while q >= s and buf[q] != 61:
                q -= 1
            if q <= s or q == e - 1:
                return fail(out.error, _NOT_PAIR, s, e)
            k = intern(names, buf, s, q)
            if k < 0:
                return TABLE_FULL
            if out.seen[k] == line_number:
                return fail(out.error, _TWICE, s, q)
            out.seen[k] = line_number
            exact, value = parse_decimal(buf, q + 1, e)
            out.names[p] = k
            out.values[p] = value
            if not exact:
                f = sizes[2]
                out.flagged[f, 0], out.flagged[f, 1], out.flagged[f, 2] = p, q + 1, e
                sizes[2] = f + 1
            p += 1
            count += 1
        out.counts[line_number] = count
        line_number += 1
        sizes[0], sizes[1] = line_number, p
    return 0


def read_score_file(path: str) -> EdgeScores:
    """The scores of a score file (module docstring), one row per line, one column per name in order of
    first appearance; an :class:`InputError` naming the file and line for bad input."""
    data = read_bytes(path, "score file")
    buf = np.frombuffer(data, dtype=np.uint8)
    lines, tokens = (int(x) for x in text_bounds(buf))

    def arrays(room: Sequence[int]) -> _Scanned:
        return _Scanned(
            line_starts=np.empty(lines, np.int64),
            counts=np.zeros(lines, np.int64),
            names=np.empty(tokens, np.int64),
            values=np.empty(tokens, np.float64),
            flagged=np.empty((tokens, 3), np.int64),
            seen=np.full(room[0], -1, np.int64),
            sizes=np.zeros(3, np.int64),
            error=new_error(),
        )

    out, (names,), code = run_scan(lambda out, *tables: _scan(buf, out, *tables), arrays, (new_string_table,), (64, 64))
    problems: list[tuple[int, InputError]] = []
    if code:
        problems.append((int(out.error[1]), scan_error(data, out.error, _MESSAGES, path)))
    pair, starts, ends = out.flagged[: out.sizes[2]].T
    values, bad = flagged_floats(data, starts, ends)
    out.values[pair] = values
    if bad is not None:
        name = string_at(data, names, int(out.names[pair[bad.row]]))
        problem = "expected a number" if bad.refused else "values must be finite"
        start = int(starts[bad.row])
        problems.append((start, located(data, start, f"score {name!r}: {problem}, got {bad.text!r}", path)))
    if problems:
        raise min(problems, key=lambda found: found[0])[1]
    count, pairs, width = int(out.sizes[0]), int(out.sizes[1]), int(names.used[0])
    filled = np.flatnonzero(out.counts[:count])
    count = int(filled[-1]) + 1 if filled.size else 0  # blank lines at the end are no lines
    if width == 0:
        raise InputError("no scores in the file (expected one line of 'name=value' pairs per hypothesis)", path)
    counts = out.counts[:count]
    short = np.flatnonzero(counts != width)
    if short.size:
        row = int(short[0])
        lo = int(offsets_from_counts(counts)[row])
        missing = np.setdiff1d(np.arange(width), out.names[lo : lo + int(counts[row])])
        name = string_at(data, names, int(missing[0]))
        raise located(data, int(out.line_starts[row]), f"score {name!r} is missing (other lines have it)", path)
    table = np.empty((count, width), np.float64)
    table[np.repeat(np.arange(count), width), out.names[:pairs]] = out.values[:pairs]
    return EdgeScores([string_at(data, names, k) for k in range(width)], table)


def with_scores(graphs: Sequence[Hypergraph], scores: EdgeScores, path: str) -> list[Hypergraph]:
    """``graphs`` (k-best lists as read, before any merging by sentence id) with the rows of ``scores``
    (read from ``path``) as their edge scores: row after row to hypothesis after hypothesis, graph after
    graph; axiom edges get zeros. An :class:`InputError` when the counts differ or a graph is not a k-best
    list or already has scores."""
    rows = [kbest_rows(hg, "take scores from a score file (--scores)") for hg in graphs]
    for hg in graphs:
        if hg.edge_scores is not None:
            raise InputError(
                f"the inputs already have scores ({', '.join(hg.edge_scores.names)}); --scores is for inputs "
                "without them",
                path,
            )
    hypotheses = sum(len(r) for r in rows)
    if hypotheses != len(scores):
        raise InputError(
            f"{len(scores)} lines of scores for {hypotheses} hypotheses in the inputs (one line per hypothesis, "
            "in the inputs' order)",
            path,
        )
    out = []
    first = 0
    for hg, edges in zip(graphs, rows, strict=True):
        values = np.zeros((hg.num_edges, len(scores.names)), np.float64)
        values[edges] = scores.values[first : first + len(edges)]
        first += len(edges)
        out.append(hg.annotated(edge_scores=EdgeScores(scores.names, values)))
    return out


__all__ = ["read_score_file", "with_scores"]
