"""hypertune's native corpus cache: a whole tuning set of graphs in one compressed file that loads far faster
than reparsing text.

The file is a zip archive (deflate level 1) of numpy arrays: the graphs' arrays concatenated (``int32`` ids,
``float64`` feature values, so values are exact), per-graph sizes, the shared feature names and vocabulary,
the per-edge annotations (``source_covered``, ``edge_stats``, ``edge_scores``: one row per edge, e.g. an
extractor's SCORESTAT; the score names in the JSON) as arrays too, and the node labels, metadata and
``sentence_id`` as JSON. A member ``hypertune-cache.json`` names the format version; versions 1 (annotations
inside metadata) and 2 (all annotations in the JSON, which made a FEATSTAT/SCORESTAT cache slower to load than
the text) are still read. Loading maps the cache's feature names and words into the caller's
:class:`FeatureSpace` and :class:`Vocabulary` (vectorised), so caches combine with other inputs.
"""

from __future__ import annotations

import io
import json
import os
import struct
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from hypertune.arrays import offsets_from_counts
from hypertune.errors import GraphError, InputError
from hypertune.formats.registry import GraphFormat, register
from hypertune.formats.sniffing import sniff_nothing as sniff
from hypertune.hypergraph import EDGE_ANNOTATIONS, EdgeScores, Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary

MAGIC_MEMBER = "hypertune-cache.json"
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
CHUNK_BYTES = 32 << 20  # arrays are stored in chunks that decompress in parallel


def _encode(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return {"__ndarray__": obj.tolist(), "dtype": str(obj.dtype), "shape": list(obj.shape)}
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    raise TypeError(f"cannot store {type(obj).__name__} in graph metadata")


def _decode(obj: dict) -> Any:
    if "__ndarray__" in obj:
        return np.asarray(obj["__ndarray__"], dtype=obj["dtype"]).reshape(obj["shape"])
    return obj


def write(graphs: Sequence[Hypergraph], path: str) -> None:
    """Write ``graphs`` (which must share one feature space and vocabulary) as one cache file, atomically."""
    if not graphs:
        raise InputError("no graphs to cache", path)
    space, vocab = graphs[0].feature_space, graphs[0].vocabulary
    if any(g.feature_space is not space or g.vocabulary is not vocab for g in graphs):
        raise InputError("the graphs of one cache must share a feature space and a vocabulary", path)
    arrays: dict[str, np.ndarray] = {
        "num_nodes": np.asarray([g.num_nodes for g in graphs], dtype=np.int64),
        "num_edges": np.asarray([g.num_edges for g in graphs], dtype=np.int64),
        "head": np.concatenate([g.head for g in graphs]).astype(np.int32),
        "arity": np.concatenate([np.diff(g.tail_offsets) for g in graphs]).astype(np.int32),
        "tails": np.concatenate([g.tails for g in graphs]).astype(np.int32),
        "target_lengths": np.concatenate([np.diff(g.target_offsets) for g in graphs]).astype(np.int32),
        "target": np.concatenate([g.target for g in graphs]).astype(np.int32),
        "feature_counts": np.concatenate([np.diff(g.features.indptr) for g in graphs]).astype(np.int32),
        "columns": np.concatenate([g.features.indices for g in graphs]).astype(np.int32),
        "values": np.concatenate([g.features.data for g in graphs]).astype(np.float64),
    }
    extra: dict[str, Any] = {
        "format": "hypertune-cache",
        "version": VERSION,
        "features": list(space.names),
        "vocabulary": list(vocab.names),
        "labels": [g.node_labels for g in graphs],
        "metadata": [g.metadata for g in graphs],
        "annotations": [g.annotations() for g in graphs],
    }
    for name in EDGE_ANNOTATIONS:  # one row per edge: arrays, not JSON, when every graph's rows are alike
        present = [getattr(g, name) for g in graphs if getattr(g, name) is not None]
        if name == "edge_scores" and present:
            names = {part.names for part in present}
            if len(names) != 1:
                raise InputError("the graphs of one cache must give their hypotheses the same score names", path)
            extra["score_names"] = list(present[0].names)
            present = [part.values for part in present]
        if present and len({(a.dtype, a.shape[1:]) for a in present}) == 1:
            arrays[f"has_{name}"] = np.asarray([getattr(g, name) is not None for g in graphs], dtype=np.int8)
            arrays[name] = np.concatenate(present)
            for found in extra["annotations"]:
                found.pop(name, None)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".hypertune-", dir=directory)
    os.close(fd)
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            archive.writestr(MAGIC_MEMBER, json.dumps(extra, default=_encode, ensure_ascii=False))
            for name, array in arrays.items():
                chunks = max(1, -(-array.nbytes // CHUNK_BYTES))
                for k, part in enumerate(np.array_split(array, chunks)):
                    buffer = io.BytesIO()
                    np.save(buffer, part, allow_pickle=False)
                    archive.writestr(f"{name}.{k}.npy", buffer.getvalue())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    try:
        with zipfile.ZipFile(path) as archive:
            extra = json.loads(archive.read(MAGIC_MEMBER), object_hook=_decode)
            members = [name for name in archive.namelist() if name.endswith(".npy")]
        arrays = _load_members(path, members)
    except (
        zipfile.BadZipFile,
        KeyError,
        ValueError,
        OSError,
        EOFError,
        zlib.error,
        struct.error,
        NotImplementedError,
    ) as error:
        raise InputError(f"not a readable hypertune cache ({error})", path) from None
    if extra.get("format") != "hypertune-cache" or extra.get("version") not in READABLE_VERSIONS:
        raise InputError(f"unsupported cache version {extra.get('version')!r} (this hypertune reads {VERSION})", path)
    try:
        return _graphs(arrays, extra, feature_space, vocabulary)
    except (KeyError, IndexError, ValueError, TypeError, GraphError) as error:
        raise InputError(f"corrupt cache: {error}", path) from None


def _load_members(path: str, members: list[str]) -> dict[str, np.ndarray]:
    """The arrays of the archive, chunks decompressed in parallel (zlib releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    local = threading.local()

    def load(name: str) -> np.ndarray:
        archive = getattr(local, "archive", None)
        if archive is None:
            archive = local.archive = zipfile.ZipFile(path)
        return np.load(io.BytesIO(archive.read(name)), allow_pickle=False)

    workers = max(1, min(len(members), os.cpu_count() or 1))
    with ThreadPoolExecutor(workers) as pool:
        loaded = list(pool.map(load, members))
    parts: dict[str, list[tuple[int, np.ndarray]]] = {}
    for name, array in zip(members, loaded, strict=True):
        base, k, _ = name.rsplit(".", 2)
        parts.setdefault(base, []).append((int(k), array))
    return {base: np.concatenate([a for _, a in sorted(chunks, key=lambda c: c[0])]) for base, chunks in parts.items()}


def _graphs(arrays: dict, extra: dict, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    column_map = feature_space.indices(extra["features"]) if extra["features"] else np.zeros(0, np.int64)
    word_map = vocabulary.indices(extra["vocabulary"]) if extra["vocabulary"] else np.zeros(0, np.int64)
    num_nodes, num_edges = arrays["num_nodes"], arrays["num_edges"]
    edge_offsets = offsets_from_counts(num_edges)
    tail_counts = np.add.reduceat(arrays["arity"], edge_offsets[:-1]) if num_edges.size else num_edges
    target_counts = np.add.reduceat(arrays["target_lengths"], edge_offsets[:-1])
    feature_counts = np.add.reduceat(arrays["feature_counts"], edge_offsets[:-1])
    tail_offsets_all = offsets_from_counts(tail_counts)
    target_offsets_all = offsets_from_counts(target_counts)
    feature_offsets_all = offsets_from_counts(feature_counts)
    target = arrays["target"].astype(np.int64)
    words = target >= 0
    target[words] = word_map[target[words]]
    columns = column_map[arrays["columns"]].astype(np.int32)
    values = arrays["values"]
    width = len(feature_space)
    graphs = []
    labels, metadata = extra["labels"], extra["metadata"]
    annotations = extra.get("annotations") or [_version_1_annotations(m) for m in metadata]
    for name in EDGE_ANNOTATIONS:
        if name in arrays:
            _edge_rows(annotations, name, arrays[name], arrays[f"has_{name}"].astype(bool), num_edges)
    if "edge_scores" in arrays:
        for found in annotations:
            if "edge_scores" in found:
                found["edge_scores"] = EdgeScores(extra["score_names"], found["edge_scores"])
    for g in range(num_nodes.size):
        e0, e1 = edge_offsets[g], edge_offsets[g + 1]
        f0, f1 = feature_offsets_all[g], feature_offsets_all[g + 1]
        indptr = offsets_from_counts(arrays["feature_counts"][e0:e1])
        features = sp.csr_matrix(
            (values[f0:f1].copy(), columns[f0:f1].copy(), indptr.astype(np.int32)), shape=(int(e1 - e0), width)
        )
        graphs.append(
            Hypergraph(
                num_nodes=int(num_nodes[g]),
                head=arrays["head"][e0:e1],
                tail_offsets=offsets_from_counts(arrays["arity"][e0:e1]),
                tails=arrays["tails"][tail_offsets_all[g] : tail_offsets_all[g + 1]],
                features=features,
                target_offsets=offsets_from_counts(arrays["target_lengths"][e0:e1]),
                target=target[target_offsets_all[g] : target_offsets_all[g + 1]],
                feature_space=feature_space,
                vocabulary=vocabulary,
                node_labels=labels[g],
                metadata=metadata[g],
                **annotations[g],
            )
        )
    return graphs


def _edge_rows(annotations: list[dict], name: str, rows: np.ndarray, present: np.ndarray, edges: np.ndarray) -> None:
    """Give each graph that had the per-edge annotation ``name`` its rows of the concatenated ``rows``."""
    counts = np.where(present, edges, 0)
    if counts.sum() != rows.shape[0] or present.size != len(annotations):
        raise ValueError(f"{name}: {rows.shape[0]} rows for {int(counts.sum())} edges")
    bounds = offsets_from_counts(counts)
    for g in np.flatnonzero(present):
        annotations[g][name] = rows[bounds[g] : bounds[g + 1]]


def _version_1_annotations(metadata: dict) -> dict:
    """Version 1 kept the annotations in metadata (``id`` was the sentence id)."""
    found = {"sentence_id": metadata.pop("id", None)}
    for name in ("source_covered", "edge_stats"):
        if name in metadata:
            found[name] = metadata.pop(name)
    return found


def sniff_bytes(head: bytes) -> bool:
    return head.startswith(b"PK\x03\x04") and MAGIC_MEMBER.encode() in head


FORMAT = register(
    GraphFormat("hypertune-cache", "hypertune's native corpus cache (binary)", sniff, read, write, sniff_bytes)
)
