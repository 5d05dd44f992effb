"""Format benchmarks for ``hypertune bench`` and docs/performance.md: how fast each reader turns text into
graphs (MB of uncompressed text per second; the project's goal is 100 MB/s, issue "Load as fast as the C++
tools"), and loading a native cache of 1,000 copies of the shared Moses hypergraph."""

from __future__ import annotations

import gzip
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypertune.bench.core import Figure, make_bench_corpus, median_time
from hypertune.formats import cache, cdec_json, moses_hypergraph, nbest
from hypertune.formats.extractor import read_featstat
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary

GOAL_MB_PER_S = 100.0  # every text reader (issue "Load as fast as the C++ tools")

Reader = Callable[[str, FeatureSpace, Vocabulary], list[Hypergraph]]


def benchmark_formats(
    shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str] | None = None, repeat: int = 5
) -> list[Figure]:
    """Reader throughput on the shared data (and, with ``workdir``, on the ``make_bench.py`` n-best and
    hypergraph corpora), plus the cache figure. ``shared_dir`` is the ``shared`` folder; missing data
    leaves figures out."""
    data = Path(shared_dir) / "data"
    figures = []
    with tempfile.TemporaryDirectory() as scratch:
        texts = {  # name: (reader, compressed source); each is timed on its uncompressed text
            "Moses hypergraph, 5,342 edges (moses/hypergraphs/dense)": (
                moses_hypergraph.read,
                data / "moses" / "hypergraphs" / "dense" / "hg.gz",
            ),
            "cdec JSON forest, Urdu (cdec/forests/decoder_test_data_urdu)": (
                cdec_json.read,
                data / "cdec" / "forests" / "decoder_test_data_urdu.json.gz",
            ),
        }
        for name, (reader, source) in texts.items():
            if source.is_file():
                figures.append(_throughput(name, reader, [_plain(source, Path(scratch))], repeat))
        if workdir is not None and (Path(shared_dir) / "tools" / "make_bench.py").is_file():
            figures.extend(_corpus_figures(shared_dir, workdir, Path(scratch), repeat))
    figures.extend(_cache_figure(data, repeat))
    return figures


def _plain(source: Path, folder: Path) -> Path:
    """The uncompressed text of ``source`` in ``folder``."""
    plain = folder / source.name.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(source.read_bytes()))
    return plain


def _corpus_figures(
    shared_dir: str | os.PathLike[str], workdir: str | os.PathLike[str], scratch: Path, repeat: int
) -> list[Figure]:
    """The n-best list of ``make_bench.py nbest`` 1,000 x 100 as Moses n-best text, Z-MERT candidates and
    FEATSTAT + SCORESTAT, and the first graphs of ``make_bench.py hg`` 200."""
    corpus = make_bench_corpus(shared_dir, workdir, "nbest", 1000)
    text = _plain(corpus / "nbest.gz", scratch)
    zmert = _zmert_file(text, scratch)
    features, scores = _extractor_files(corpus / "nbest.gz", scratch)
    graphs = make_bench_corpus(shared_dir, workdir, "hg", 200)
    hypergraphs = [_plain(graphs / "hg" / f"{i}.gz", scratch) for i in range(_HYPERGRAPHS)]
    return [
        _throughput("Moses n-best list, make_bench nbest 1,000 x 100", nbest.read_moses, [text], repeat),
        _throughput("Z-MERT candidates of that n-best list", nbest.read_zmert, [zmert], repeat),
        _throughput(
            "Moses FEATSTAT + SCORESTAT of that n-best list",
            lambda path, space, vocabulary: read_featstat(path, space, vocabulary, str(scores)),
            [features, scores],
            repeat,
        ),
        _throughput(
            f"Moses hypergraphs, make_bench hg 200 (graphs 0-{_HYPERGRAPHS - 1})",
            lambda path, space, vocabulary: [
                g for hg in hypergraphs for g in moses_hypergraph.read(str(hg), space, vocabulary)
            ],
            hypergraphs,
            repeat,
        ),
    ]


_HYPERGRAPHS = 4  # of the 200 (5-6 MB of text each)


def _zmert_file(nbest_text: Path, folder: Path) -> Path:
    """Z-MERT candidates ``sid ||| words ||| v1 v2 ...`` of a Moses n-best list: its feature values without
    their labels (the lists of ``make_bench.py`` have labelled dense groups only)."""
    lines = []
    for line in nbest_text.read_text(encoding="utf-8").splitlines():
        sid, words, features = line.split("|||")[:3]
        values = " ".join(token for token in features.split() if not token.endswith("="))
        lines.append(f"{sid.strip()} ||| {words.strip()} ||| {values}\n")
    (folder / "zmert.txt").write_text("".join(lines), encoding="utf-8")
    return folder / "zmert.txt"


def _extractor_files(nbest_path: Path, folder: Path) -> tuple[Path, Path]:
    """A FEATSTAT and a SCORESTAT file of the n-best list's hypotheses, as Moses's extractor lays them out
    (the statistics are made-up integers: only the reading is timed)."""
    graphs = nbest.read_moses(str(nbest_path), space := FeatureSpace(), Vocabulary())
    names = " ".join(space.names)
    features, scores = [], []
    for g in graphs:
        rows = g.feature_matrix(len(space))[1:].toarray()
        sid, count = g.sentence_id, rows.shape[0]
        features.append(f"FEATURES_TXT_BEGIN_0 {sid} {count} {len(space)} {names}\n")
        features.extend(" ".join(f"{x:g}" for x in row) + "\n" for row in rows)
        features.append("FEATURES_TXT_END_0\n")
        scores.append(f"SCORES_TXT_BEGIN_0 {sid} {count} 9 BLEU\n")
        scores.extend(" ".join(str((k * 7 + e) % 23) for k in range(9)) + "\n" for e in range(count))
        scores.append("SCORES_TXT_END_0\n")
    (folder / "FEATSTAT").write_text("".join(features))
    (folder / "SCORESTAT").write_text("".join(scores))
    return folder / "FEATSTAT", folder / "SCORESTAT"


def _throughput(name: str, reader: Reader, paths: list[Path], repeat: int) -> Figure:
    """The median time of ``reader`` on ``paths[0]`` (it reads the others with it), in MB/s of them all."""
    size = sum(path.stat().st_size for path in paths)
    seconds = median_time(lambda: reader(str(paths[0]), FeatureSpace(), Vocabulary()), repeat)
    rate = size / seconds / 1e6
    detail = f"{size / 1e6:.1f} MB of text, {rate:.0f} MB/s (goal {GOAL_MB_PER_S:.0f} MB/s)"
    return Figure(f"read {name}", seconds, size / 1e6 / GOAL_MB_PER_S, detail)


def _cache_figure(data: Path, repeat: int, copies: int = 1000) -> list[Figure]:
    path = data / "moses" / "hypergraphs" / "dense" / "hg.gz"
    if not path.is_file():
        return []
    (hg,) = moses_hypergraph.read(str(path), FeatureSpace(), Vocabulary())
    with tempfile.TemporaryDirectory() as directory:
        target = os.path.join(directory, "corpus.htc")
        cache.write([hg] * copies, target)
        size = os.path.getsize(target)
        seconds = median_time(lambda: cache.read(target, FeatureSpace(), Vocabulary()), max(1, min(repeat, 3)))
    detail = f"{copies} x {hg.num_edges} edges, {size / 1e6:.0f} MB file"
    return [Figure(f"load native cache of {copies} Moses hypergraphs", seconds, 10.0, detail)]
