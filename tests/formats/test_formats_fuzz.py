"""Fuzzing: every parser, fed corrupted versions of a valid file (truncated, bad numbers, wrong counts,
unknown tail ids, deleted or repeated lines), either reads it or raises a clean InputError that names
the file and the line. Any other exception is a bug."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.strategies import format_corruptions as corruptions

from hypertune.errors import InputError, UsageError
from hypertune.formats import (
    cdec_json,
    extractor,
    htk_slf,
    moses_hypergraph,
    nbest,
    openfst,
    plf,
    read_references,
    read_weights,
)
from hypertune.symbols import FeatureSpace, Vocabulary

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats"


def check(reader, name: str, corrupted: str, line_required: bool = True) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / Path(name).name
        path.write_text(corrupted, encoding="utf-8")
        try:
            reader(str(path))
        except InputError as error:
            assert error.path is not None and Path(error.path).name == path.name, error
            if line_required:
                assert error.line is not None and error.line >= 1, error
            assert error.reason and "Traceback" not in error.reason


def graphs(module_reader):
    return lambda path: module_reader(path, FeatureSpace(), Vocabulary())


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CASES = [
    ("toy.cdec.json", graphs(cdec_json.read)),
    ("toy.moses-hg", graphs(moses_hypergraph.read)),
    ("labels.nbest", graphs(nbest.read_moses)),
    ("legacy.nbest", graphs(nbest.read_moses)),
    ("joshua.nbest", graphs(nbest.read_moses)),
    ("zmert.cand", lambda p: nbest.read_zmert(p, FeatureSpace(), Vocabulary(), names=["a", "b", "c"])),
    ("lattice.plf", graphs(plf.read)),
    ("extractor/FEATSTAT.txt", graphs(extractor.read)),
    ("lattice.slf", graphs(htk_slf.read)),
    ("acceptor.fst", graphs(openfst.read)),
    ("transducer.fst", graphs(openfst.read)),
]


@pytest.mark.parametrize(("name", "reader"), CASES, ids=[c[0] for c in CASES])
def test_fuzz_graph_readers(name, reader):
    text = (FIXTURES / name).read_text(encoding="utf-8")

    @FUZZ
    @given(corruptions(text))
    def run(corrupted: str) -> None:
        check(reader, name, corrupted)

    run()


def test_fuzz_scorestat_pairing():
    text = (FIXTURES / "extractor" / "SCORESTAT.txt").read_text()

    @FUZZ
    @given(corruptions(text))
    def run(corrupted: str) -> None:
        with tempfile.TemporaryDirectory() as directory:
            shutil.copy(FIXTURES / "extractor" / "FEATSTAT.txt", Path(directory) / "FEATSTAT.txt")
            (Path(directory) / "SCORESTAT.txt").write_text(corrupted)
            try:
                extractor.read(str(Path(directory) / "FEATSTAT.txt"), FeatureSpace(), Vocabulary())
            except InputError as error:
                assert error.path is not None and error.line is not None, error

    run()


@pytest.mark.parametrize(
    "name", ["moses.ini", "kbmira.dense", "kbmira.sparse", "zmert.params", "joshua.config", "weights.json"]
)
def test_fuzz_weights(name):
    text = (FIXTURES / name).read_text()

    def reader(path: str) -> None:
        try:
            read_weights(path)
        except UsageError:
            pass  # the corruption left only numbers: positional weights need the feature order

    @FUZZ
    @given(corruptions(text))
    def run(corrupted: str) -> None:
        check(reader, name, corrupted, line_required=name not in ("weights.json", "zmert.params"))

    run()


def test_fuzz_references():
    text = (FIXTURES / "refs" / "interleaved").read_text()

    @FUZZ
    @given(corruptions(text))
    def run(corrupted: str) -> None:
        check(lambda p: read_references(p, per_sentence=2), "interleaved", corrupted, line_required=True)

    run()


def test_fuzz_cache_truncated_or_flipped(tmp_path):
    from hypertune.formats import cache, read_graphs

    graphs = read_graphs([str(FIXTURES / "toy.moses-hg"), str(FIXTURES / "toy.cdec.json")])
    good = tmp_path / "good.htc"
    cache.write(graphs, str(good))
    blob = good.read_bytes()

    @FUZZ
    @given(st.integers(0, len(blob) - 1), st.sampled_from(["truncate", "flip"]))
    def run(at: int, how: str) -> None:
        bad = tmp_path / "bad.htc"
        bad.write_bytes(blob[:at] if how == "truncate" else blob[:at] + bytes([blob[at] ^ 0xFF]) + blob[at + 1 :])
        try:
            cache.read(str(bad), FeatureSpace(), Vocabulary())
        except InputError as error:
            assert error.path == str(bad)

    run()
