"""Today's Moses extractor FEATSTAT/SCORESTAT reader as it was before the compiled scan (hypertune
2026-11-23, formats/extractor.py): the pre-compiled, line-by-line reader, kept as the reference the compiled
reader must equal graph for graph and error for error."""

from __future__ import annotations

import os
import re

import numpy as np

from hypertune.errors import InputError
from hypertune.formats._common import collapse_single_components, parse_float, parse_int
from hypertune.formats.io import open_text
from hypertune.hypergraph import Hypergraph, from_kbest
from hypertune.symbols import FeatureSpace, Vocabulary

_BEGIN = re.compile(r"^(FEATURES|SCORES)_TXT_BEGIN_(\d+)$")


def _blocks(path: str, kind: str):
    """Yields (sid, names_or_metric, rows, header_line) for every block of a FEATSTAT/SCORESTAT file."""
    with open_text(path) as handle:
        try:
            lines = handle.read().split("\n")
        except (UnicodeDecodeError, EOFError, OSError) as error:
            raise InputError(f"cannot read the file ({error})", path) from None
    i, n = 0, len(lines)
    while i < n:
        text = lines[i].strip()
        i += 1
        if not text:
            continue
        fields = text.split()
        match = _BEGIN.match(fields[0])
        if not match or match.group(1) != kind:
            raise InputError(f"expected '{kind}_TXT_BEGIN_0 <sid> <n> <dims> ...', got {text[:40]!r}", path, i)
        header = i
        if len(fields) < 4:
            raise InputError(f"expected '{fields[0]} <sid> <n> <dims> ...'", path, i)
        sid = parse_int(fields[1], "the sentence id", path, i)
        count = parse_int(fields[2], "the number of hypotheses", path, i, minimum=1)
        dims = parse_int(fields[3], "the number of columns", path, i)
        extra = fields[4:]
        if kind == "FEATURES" and len(extra) != dims:
            raise InputError(f"the header announces {dims} features but names {len(extra)}", path, i)
        rows = []
        for _ in range(count):
            if i >= n or not lines[i].strip() or _BEGIN.match(lines[i].split()[0]) or "_TXT_END_" in lines[i]:
                raise InputError(f"sentence {sid}: expected {count} hypotheses, got {len(rows)}", path, i + 1)
            tokens = lines[i].split()
            i += 1
            dense = [t for t in tokens[:dims]]
            if len(dense) != dims or any("=" in t for t in dense):
                raise InputError(f"sentence {sid}: expected {dims} numbers, got {len(tokens)} fields", path, i)
            values = [parse_float(t, f"column {k}", path, i) for k, t in enumerate(dense)]
            sparse = []
            for token in tokens[dims:]:
                name, equals, value = token.rpartition("=")
                if kind == "SCORES" or not equals or not name:
                    raise InputError(f"sentence {sid}: expected {dims} numbers, got {len(tokens)} fields", path, i)
                sparse.append((name, parse_float(value, name, path, i)))
            rows.append((values, sparse))
        end = lines[i].strip() if i < n else ""
        if end != f"{kind}_TXT_END_{match.group(2)}":
            raise InputError(
                f"sentence {sid}: expected {kind}_TXT_END_{match.group(2)} after {count} hypotheses", path, i + 1
            )
        i += 1
        yield sid, extra, rows, header


def read_featstat(
    path: str, feature_space: FeatureSpace, vocabulary: Vocabulary, scorestat: str | None = None
) -> list[Hypergraph]:
    stats = {}
    if scorestat is not None:
        for sid, metric, rows, header in _blocks(scorestat, "SCORES"):
            if sid in stats:
                raise InputError(f"sentence {sid} appears twice", scorestat, header)
            stats[sid] = (" ".join(metric), np.asarray([r for r, _ in rows], dtype=np.float64), header)
    graphs = []
    seen = set()
    for sid, names, rows, header in _blocks(path, "FEATURES"):
        if sid in seen:
            raise InputError(f"sentence {sid} appears twice", path, header)
        seen.add(sid)
        canonical = collapse_single_components(names)
        hyps = [([], list(zip(canonical, dense, strict=True)) + sparse) for dense, sparse in rows]
        metadata, edge_stats = {}, None
        if scorestat is not None:
            if sid not in stats:
                raise InputError(f"sentence {sid} has no statistics in {scorestat}", path, header)
            metric, matrix, _ = stats.pop(sid)
            if matrix.shape[0] != len(rows):
                raise InputError(
                    f"sentence {sid}: {len(rows)} hypotheses but {matrix.shape[0]} rows of statistics in {scorestat}",
                    path,
                    header,
                )
            edge_stats = np.vstack([np.zeros((1, matrix.shape[1])), matrix])
            metadata["stats_names"] = metric
        graphs.append(from_kbest(hyps, feature_space, vocabulary, metadata, sentence_id=sid, edge_stats=edge_stats))
    if stats:
        sid = min(stats)
        raise InputError(f"sentence {sid} has statistics but no features in {path}", scorestat, stats[sid][2])
    if not graphs:
        raise InputError("no FEATURES_TXT_BEGIN_0 block in the file", path, 1)
    return graphs


def read_scorestat(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    """SCORESTAT alone: k-best lattices without features, with ``edge_stats``."""
    graphs = []
    for sid, metric, rows, _ in _blocks(path, "SCORES"):
        matrix = np.asarray([r for r, _ in rows], dtype=np.float64)
        graphs.append(
            from_kbest(
                [([], None)] * len(rows),
                feature_space,
                vocabulary,
                {"stats_names": " ".join(metric)},
                sentence_id=sid,
                edge_stats=np.vstack([np.zeros((1, matrix.shape[1])), matrix]),
            )
        )
    if not graphs:
        raise InputError("no SCORES_TXT_BEGIN_0 block in the file", path, 1)
    return graphs


def sibling(path: str, kind: str) -> str | None:
    """The SCORESTAT next to a FEATSTAT (kind='SCORES') or the reverse, if it exists."""
    directory, name = os.path.split(path)
    pairs = [("FEATSTAT", "SCORESTAT"), ("features", "scores"), ("FEATURES", "SCORES")]
    for feat, score in pairs:
        old, new = (feat, score) if kind == "SCORES" else (score, feat)
        if old in name:
            candidate = os.path.join(directory, name.replace(old, new))
            if os.path.isfile(candidate):
                return candidate
    return None


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    from hypertune.formats.io import read_head

    if read_head(path, 64).lstrip().startswith("SCORES_TXT_BEGIN"):
        features = sibling(path, "FEATURES")
        if features is None:
            return read_scorestat(path, feature_space, vocabulary)
        return read_featstat(features, feature_space, vocabulary, path)
    return read_featstat(path, feature_space, vocabulary, sibling(path, "SCORES"))
