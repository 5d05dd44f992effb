"""The input cache (``--cache DIR``): a second read of an unchanged input comes from the cache and equals
parsing it; a touched, truncated or replaced input, or a damaged entry, is read again, never served stale."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
from support.paths import FIXTURES, SHARED

from hypertune.cli import main
from hypertune.errors import HypertuneWarning
from hypertune.formats import read_graphs
from hypertune.formats.input_cache import ENVIRONMENT, InputCache
from hypertune.symbols import FeatureSpace, Vocabulary

NBEST = FIXTURES / "mert" / "nbest.txt"


class CountingReader:
    def __init__(self, path: str) -> None:
        self.path, self.calls = path, 0

    def __call__(self, space: FeatureSpace, vocabulary: Vocabulary):
        self.calls += 1
        return read_graphs(self.path, None, space, vocabulary)


def same(graphs, space, vocabulary, path) -> None:
    expected_space, expected_vocabulary = FeatureSpace(), Vocabulary()
    expected = read_graphs(str(path), None, expected_space, expected_vocabulary)
    assert list(space) == list(expected_space) and list(vocabulary) == list(expected_vocabulary)
    assert [g.sentence_id for g in graphs] == [g.sentence_id for g in expected]
    for a, b in zip(graphs, expected, strict=True):
        assert np.array_equal(a.target, b.target) and np.array_equal(a.head, b.head)
        assert np.array_equal(a.features.toarray()[:, : b.features.shape[1]], b.features.toarray())


def load(store: InputCache, path, reader):
    space, vocabulary = FeatureSpace(), Vocabulary()
    return store.load(str(path), [str(path)], "", reader, space, vocabulary), space, vocabulary


def test_an_unchanged_input_is_read_once(tmp_path):
    path = tmp_path / "list.nbest"
    shutil.copy(NBEST, path)
    store, reader = InputCache(str(tmp_path / "cache")), CountingReader(str(path))
    for _ in range(3):
        same(*load(store, path, reader), path)
    assert reader.calls == 1 and len(os.listdir(tmp_path / "cache")) == 1


@pytest.mark.parametrize("change", ["touch", "truncate", "replace"])
def test_a_changed_input_is_read_again(tmp_path, change):
    path = tmp_path / "list.nbest"
    shutil.copy(NBEST, path)
    store, reader = InputCache(str(tmp_path / "cache")), CountingReader(str(path))
    load(store, path, reader)
    lines = NBEST.read_text().splitlines(keepends=True)
    if change == "touch":
        info = os.stat(path)
        os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000_000))
    elif change == "truncate":
        with open(path, "r+") as handle:
            handle.truncate(sum(len(line) for line in lines[: len(lines) // 2]))
    else:
        other = tmp_path / "new"
        other.write_text("".join(lines[:3]))
        os.replace(other, path)
    graphs, space, vocabulary = load(store, path, reader)
    assert reader.calls == 2
    same(graphs, space, vocabulary, path)
    assert len(os.listdir(tmp_path / "cache")) == 1  # the stale entry is gone


def test_a_damaged_entry_is_rebuilt_not_used(tmp_path):
    path = tmp_path / "list.nbest"
    shutil.copy(NBEST, path)
    store, reader = InputCache(str(tmp_path / "cache")), CountingReader(str(path))
    load(store, path, reader)
    (entry,) = (tmp_path / "cache").iterdir()
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) // 2])
    with pytest.warns(HypertuneWarning, match="rebuilt"):
        graphs, space, vocabulary = load(store, path, reader)
    assert reader.calls == 2
    same(graphs, space, vocabulary, path)


def test_tuning_with_a_cache_gives_the_same_weights(tmp_path, capsys, monkeypatch):
    args = ["mert", str(NBEST), "--refs", str(FIXTURES / "mert" / "ref."), "--init", str(FIXTURES / "mert" /
            "init.weights"), "--restarts", "2", "--seed", "1", "--json"]  # fmt: skip

    def run(*extra):
        assert main([*args, *extra]) == 0
        result = json.loads(capsys.readouterr().out)
        return result["bleu_after"], result["weights"]

    plain = run()
    assert run("--cache", str(tmp_path / "c")) == plain
    assert run("--cache", str(tmp_path / "c")) == plain  # from the cache
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path / "env"))
    assert run() == plain and len(os.listdir(tmp_path / "env")) == 1


def test_mira_and_hope_fear_take_the_cache_too(tmp_path, capsys):
    """Every tuning command reads through ``--cache`` (mira and hope-fear have kbmira's own input options)."""
    refs, init = str(FIXTURES / "mert" / "ref."), str(FIXTURES / "mert" / "init.weights")
    for command in (["mira", str(NBEST), "--refs", refs, "--dense-init", init, "-J", "3"],
                    ["hope-fear", str(NBEST), "--refs", refs, "--weights", init]):  # fmt: skip
        folder = tmp_path / command[0]
        outputs = []
        for extra in ([], ["--cache", str(folder)], ["--cache", str(folder)]):
            assert main([*command, *extra, "--json"]) == 0
            out = json.loads(capsys.readouterr().out)
            out.pop("timing", None), out.pop("seconds", None)
            for entry in out.get("history", []):
                entry.pop("seconds")
            outputs.append(out)
        assert outputs[1] == outputs[0] and outputs[2] == outputs[0]
        assert len(os.listdir(folder)) == 1


def test_per_edge_annotations_come_back_exactly(tmp_path):
    """A cache keeps the extractor's SCORESTAT rows (``edge_stats``) and a Moses graph's source coverage, as
    arrays, for graphs that have them and not for those that do not: the reader's own values, bit for bit."""
    from hypertune.formats import cache

    featstat = SHARED / "moses" / "featstat-10x100" / "FEATSTAT.txt"
    forest = SHARED / "moses" / "hypergraphs" / "dense" / "hg.gz"
    if not (featstat.exists() and forest.exists()):
        pytest.skip("../shared/data is not here")
    space, vocabulary = FeatureSpace(), Vocabulary()
    lists = read_graphs(str(featstat), None, space, vocabulary)
    moses = read_graphs(str(forest), None, space, vocabulary)  # source coverage, no statistics
    plain = read_graphs(str(NBEST), None, space, vocabulary)  # neither
    assert lists[0].edge_stats is not None and moses[0].source_covered is not None
    graphs = [lists[0], plain[0], *moses, *lists[1:]]
    path = str(tmp_path / "mixed.htc")
    cache.write(graphs, path)
    back = cache.read(path, space, vocabulary)
    assert len(back) == len(graphs)
    for a, b in zip(back, graphs, strict=True):
        assert (a.edge_stats is None) == (b.edge_stats is None) and (a.source_covered is None) == (
            b.source_covered is None)  # fmt: skip
        for name in ("edge_stats", "source_covered"):
            want, got = getattr(b, name), getattr(a, name)
            if want is not None:
                assert got.dtype == want.dtype and np.array_equal(got, want)
        assert a.sentence_id == b.sentence_id
