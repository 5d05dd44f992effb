"""The JSONL k-best reader and writer (docs/formats.md, "JSONL"): the compiled reader equals a line-by-line
reading with Python's json module (tests/support/reference_jsonl.py) on generated files, graph for graph
and error line for error line; each bad input has its message; convert round-trips n-best lists through
JSONL; the native cache keeps what JSONL gives."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import reference_jsonl as reference
from support.same_graphs import assert_same_readings
from support.strategies import format_corruptions

from hypertune.cli import main
from hypertune.errors import InputError
from hypertune.formats import FORMATS, detect_format, jsonl, read_graphs, write_graphs
from hypertune.generate import random_hypergraph
from hypertune.hypergraph import from_kbest
from hypertune.symbols import FeatureSpace, Vocabulary

ROOT = Path(__file__).resolve().parents[2]
NBEST = ROOT / "fixtures" / "mert" / "nbest.txt"


def read_both(path: str):
    """(graphs, space, vocabulary) or the InputError, of the compiled reader and of the reference."""
    out = []
    for module in (jsonl, reference):
        space, vocab = FeatureSpace(), Vocabulary()
        try:
            out.append((module.read(path, space, vocab), space, vocab))
        except InputError as error:
            out.append(error)
    return out


def assert_same(got, expected) -> None:
    assert_same_readings(got, expected)
    for a, b in zip(got[0], expected[0], strict=True):
        assert a.edge_scores == b.edge_scores


# ---------------------------------------------------------------------- generated files

WORDS = ["the", "house", "ü", "a|b", "[1]", 'x"y', "x\\y", "日本", "\u2028"[:0] + "ok"]
NAMES = ["lm", "tm", "qe", "é", "a b", 'q"t', "\\n"]
NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(-(10**20), 10**20),
    st.sampled_from([-0.0, 0, 1e-300, 1.5e308, 5e-324, 0.1, 123456789012345678]),
)


def number_text(value, draw) -> str:
    if isinstance(value, float) and draw(st.booleans()):
        return f"{value:.17e}"  # another spelling of the same double
    return json.dumps(value)


@st.composite
def jsonl_files(draw):
    """(text, bad): a JSONL file, and whether a mutation made one line bad."""
    has_hyp, has_total = draw(st.booleans()), draw(st.booleans())
    score_names = draw(st.lists(st.sampled_from(["comet", "kiwi", "é"]), unique=True, max_size=2))
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        members = [("id", json.dumps(draw(st.integers(0, 4))))]
        if has_hyp:
            words = draw(st.lists(st.sampled_from(WORDS), max_size=4))
            sep = draw(st.sampled_from([" ", "  ", "\t", "\u3000"]))
            members.append(("hyp", json.dumps(sep.join(words), ensure_ascii=draw(st.booleans()))))
        features = draw(st.dictionaries(st.sampled_from(NAMES), NUMBERS, max_size=4))
        if features or draw(st.booleans()):
            inner = ", ".join(
                f"{json.dumps(k, ensure_ascii=draw(st.booleans()))}: {number_text(v, draw)}"
                for k, v in features.items()
            )
            members.append(("features", "{" + inner + "}"))
        if score_names:
            inner = ", ".join(f"{json.dumps(n)}: {number_text(draw(NUMBERS), draw)}" for n in score_names)
            members.append(("scores", "{" + inner + "}"))
        if has_total:
            members.append(("total", number_text(draw(NUMBERS), draw)))
        if draw(st.booleans()):
            members.append(("extra", json.dumps(draw(st.sampled_from([None, [1, {"a": "b"}], "s", 1.5, True])))))
        members = draw(st.permutations(members))
        space = draw(st.sampled_from(["", " ", "\t"]))
        lines.append("{" + f",{space}".join(f'"{k}":{space}{v}' for k, v in members) + "}")
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["", "  ", "\t"])))
    bad = draw(st.integers(0, 3)) == 0
    if bad:
        at = draw(st.integers(0, len(lines) - 1))
        mutation = draw(
            st.sampled_from(
                [
                    lambda line: line[:-1],
                    lambda line: line.replace('"id"', '"id": -1, "x"', 1),
                    lambda line: line.replace('"id"', '"id": 1, "id"', 1),
                    lambda line: line.replace('"features":', '"features": {"nan": NaN}, "f":', 1),
                    lambda line: (
                        line.replace('"features": {', '"features": {"lm": 1, "lm": 2, ', 1)
                        .replace('"features":{', '"features":{"lm": 1, "lm": 2, ', 1)
                        .replace('"features":\t{', '"features":\t{"lm": 1, "lm": 2, ', 1)
                    ),
                    lambda line: line.replace('"scores": {"', '"scores": {"x', 1).replace(
                        '"scores":{"', '"scores":{"x', 1
                    ),
                    lambda line: line.replace('"hyp"', '"hypothesis"', 1),
                    lambda line: line + " 1",
                    lambda line: "[" + line + "]",
                ]
            )
        )
        lines[at] = mutation(lines[at]) if lines[at].strip() else "{"
    return "\n".join(lines) + draw(st.sampled_from(["", "\n"])), bad


@settings(max_examples=40)
@given(jsonl_files())
def test_the_reader_equals_the_json_module_reading(case):
    text, _ = case
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "in.jsonl")
        Path(path).write_text(text, encoding="utf-8")
        got, expected = read_both(path)
    if isinstance(expected, InputError):
        assert isinstance(got, InputError), f"reference: {expected}"
        assert got.line == expected.line, (str(got), str(expected))
    else:
        assert not isinstance(got, InputError), str(got)
        assert_same(got, expected)


SAMPLE = (
    '{"id": 0, "hyp": "the house", "features": {"logprob": -3.2, "qe": 0.81}, "scores": {"comet": 0.853}}\n'
    '{"id": 1, "hyp": "a cat", "features": {"qe": 1e-3}, "scores": {"comet": -0.5}, "total": 2}\n'
    '{"scores": {"comet": 1}, "features": {"logprob": 4, "lm": -0.25}, "id": 0, "hyp": "das Haus", "total": 1}\n'
)


@settings(max_examples=60)
@given(format_corruptions(SAMPLE))
def test_corrupted_files_fail_where_the_reference_fails(corrupted):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "in.jsonl")
        Path(path).write_text(corrupted, encoding="utf-8")
        got, expected = read_both(path)
    if isinstance(expected, InputError):
        assert isinstance(got, InputError) and got.line is not None and "\n" not in str(got), f"reference: {expected}"
        assert expected.line in (None, got.line), (str(got), str(expected))
    else:
        assert_same(got, expected)


def test_non_adjacent_ids_group_in_order_of_first_appearance(tmp_path):
    path = tmp_path / "in.jsonl"
    rows = [(7, "a", 0.1), (2, "b", 0.2), (7, "c", 0.3), (2, "d", 0.4), (5, "e", 0.5)]
    path.write_text("".join(json.dumps({"id": i, "hyp": h, "scores": {"comet": s}}) + "\n" for i, h, s in rows))
    graphs = jsonl.read(str(path), FeatureSpace(), Vocabulary())
    assert [g.sentence_id for g in graphs] == [7, 2, 5]
    assert [[g.target_text(e) for e in range(1, g.num_edges)] for g in graphs] == [
        ["[1] a", "[1] c"],
        ["[1] b", "[1] d"],
        ["[1] e"],
    ]
    assert [g.edge_scores.column("comet").tolist() for g in graphs] == [[0, 0.1, 0.3], [0, 0.2, 0.4], [0, 0.5]]


def test_a_file_without_text_says_so(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": 0, "features": {"qe": 0.5}, "scores": {"comet": 0.8}}\n{"id": 0, "scores": {"comet": 1}}\n')
    (graph,) = jsonl.read(str(path), FeatureSpace(), Vocabulary())
    assert graph.metadata == {"text": False}
    assert graph.num_edges == 3 and graph.target.tolist() == [-1, -1]
    out = tmp_path / "out.jsonl"
    jsonl.write([graph], str(out))
    assert [json.loads(line) for line in out.read_text().splitlines()] == [
        {"id": 0, "features": {"qe": 0.5}, "scores": {"comet": 0.8}},
        {"id": 0, "features": {}, "scores": {"comet": 1.0}},
    ]


# ---------------------------------------------------------------------- bad input, message by message

BAD = [
    ('{"id": 0, "hyp": "a"\n', 1, "invalid JSON: Expecting ',' delimiter (column 21)"),
    ('{"id": 0}\n{"id": 1 "hyp": "a"}\n', 2, "invalid JSON: Expecting ',' delimiter (column 10)"),
    ('{"id": 0} {"id": 1}\n', 1, "invalid JSON: Extra data (column 11)"),
    ("[1, 2]\n", 1, 'expected a JSON object per line ({"id": ..., "hyp": ..., ...}), got [1, 2]'),
    ('{"hyp": "a"}\n', 1, 'no "id" (the sentence id, a non-negative integer)'),
    ('{"id": -1}\n', 1, '"id" must be a non-negative integer below 10**18, got -1'),
    ('{"id": "3"}\n', 1, '"id" must be a non-negative integer below 10**18, got "3"'),
    ('{"id": 1.0}\n', 1, '"id" must be a non-negative integer below 10**18, got 1.0'),
    ('{"id": 1, "id": 2}\n', 1, 'key "id" given twice'),
    ('{"id": 1, "hyp": ["a"]}\n', 1, '"hyp" must be a string, got ["a"]'),
    ('{"id": 1, "features": [1]}\n', 1, '"features" must be an object of name: number, got [1]'),
    ('{"id": 1, "scores": 0.5}\n', 1, '"scores" must be an object of name: number, got 0.5'),
    ('{"id": 1, "features": {"": 1}}\n', 1, "empty feature name"),
    ('{"id": 1, "features": {"lm": 1, "tm": 2, "lm": 3}}\n', 1, "feature 'lm' given twice"),
    ('{"id": 1, "scores": {"comet": 1, "comet": 1}}\n', 1, "score 'comet' given twice"),
    ('{"id": 1, "features": {"lm": NaN}}\n', 1, "feature 'lm': values must be finite, got NaN"),
    ('{"id": 1, "features": {"lm": -Infinity}}\n', 1, "feature 'lm': values must be finite, got -Infinity"),
    ('{"id": 1, "features": {"lm": 1e999}}\n', 1, "feature 'lm': values must be finite, got 1e999"),
    ('{"id": 1, "features": {"lm": "1"}}\n', 1, "feature 'lm': expected a number, got \"1\""),
    ('{"id": 1, "scores": {"comet": Infinity}}\n', 1, "score 'comet': values must be finite, got Infinity"),
    ('{"id": 1, "scores": {"comet": null}}\n', 1, "score 'comet': expected a number, got null"),
    ('{"id": 1, "total": true}\n', 1, '"total" must be a finite number, got true'),
    (
        '{"id": 0, "scores": {"comet": 1, "kiwi": 2}}\n\n{"id": 0, "scores": {"kiwi": 1}}\n',
        3,
        "score 'comet' is missing (other hypotheses have it)",
    ),
    ('{"id": 0, "scores": {"comet": 1}}\n{"id": 0}\n', 2, "score 'comet' is missing (other hypotheses have it)"),
    ('{"id": 0, "scores": {"comet": 1}}\n{"id": 0, "scores": {"comet": 1, "kiwi": 3}}\n', 1, "score 'kiwi' is missing"),
    ('{"id": 0, "hyp": "a"}\n{"id": 0}\n', 2, 'no "hyp" (line 1 has one: give it on every line or on none)'),
    ('\n{"id": 0}\n{"id": 0, "hyp": "a"}\n', 3, '"hyp" given, but line 2 has none (give it on every line or on none)'),
    ("\n \n", 2, 'no hypotheses in the file (expected JSON lines {"id": 0, "hyp": ...})'),
]


@pytest.mark.parametrize(("text", "line", "message"), BAD)
def test_bad_input_is_one_line_naming_file_and_line(tmp_path, text, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        jsonl.read(str(path), FeatureSpace(), Vocabulary())
    assert str(caught.value).startswith(f"{path}:{line}: {message}")
    assert "\n" not in str(caught.value)


def test_a_failed_file_adds_nothing_to_the_spaces(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": 0, "hyp": "a b", "features": {"lm": 1}}\n{"id": 1, "features": {"x": NaN}}\n')
    space, vocab = FeatureSpace(), Vocabulary()
    with pytest.raises(InputError):
        jsonl.read(str(path), space, vocab)
    assert len(space) == 0 and len(vocab) == 0


# ---------------------------------------------------------------------- sniffing, writing, round trips


def test_sniffed_as_jsonl_whatever_the_key_order_and_no_fixture_is(tmp_path):
    for i, first in enumerate(
        [
            '{"id": 0, "hyp": "a"}',
            '{"features": {"lm": 1}, "id": 3}',
            '{"scores": {"comet": 0.5}, "id": 0}',
            '{"id": 0, "hyp": "' + "word " * 2000 + '"}',
        ]
    ):
        path = tmp_path / f"x{i}"
        path.write_text(first + "\n")
        assert detect_format(str(path)).name == "jsonl"
    for root, _, files in os.walk(ROOT / "fixtures"):
        for name in files:
            assert not jsonl.sniff(Path(root, name).read_text(errors="replace")[:4096]), name
    assert list(FORMATS).index("jsonl") < list(FORMATS).index("cdec-json")


def test_written_features_scores_and_totals_read_back_exactly(tmp_path):
    space, vocab = FeatureSpace(), Vocabulary()
    values = [0.1, -1 / 3, 1e-310, 2.5e300, -0.0]
    graph = from_kbest(
        [("the house", {"lm": v, "tm": 1.0}) for v in values],
        space,
        vocab,
        {"totals": [1 / 7] * 5},
        sentence_id=4,
        scores={"comet": [v / 3 for v in values], "kiwi": values},
    )
    for name in ("out.jsonl", "out.jsonl.gz"):
        path = tmp_path / name
        jsonl.write([graph], str(path))
        if name.endswith(".gz"):
            assert gzip.decompress(path.read_bytes()).startswith(b'{"id": 4, "hyp": "the house"')
        space2, vocab2 = FeatureSpace(), Vocabulary()
        back = read_graphs(str(path), None, space2, vocab2)
        assert_same((back, space2, vocab2), ([graph], space, vocab))
        assert back[0].edge_scores == graph.edge_scores


def test_forests_and_lattices_are_refused_by_the_writer(tmp_path):
    forest = random_hypergraph(50, seed=1)
    with pytest.raises(InputError, match="only k-best lists .* can be written as JSONL; extract k-best lists first"):
        jsonl.write([forest], str(tmp_path / "x.jsonl"))


def convert(*args: str) -> None:
    assert main(["convert", *args]) == 0


def nbest_round_trip(source: Path, tmp_path: Path) -> None:
    convert(str(source), str(tmp_path / "a.jsonl.gz"), "--to", "jsonl")
    assert detect_format(str(tmp_path / "a.jsonl.gz")).name == "jsonl"
    convert(str(tmp_path / "a.jsonl.gz"), str(tmp_path / "b.nbest"), "--to", "moses-nbest")
    readings = []
    for path in (source, tmp_path / "b.nbest"):
        space, vocab = FeatureSpace(), Vocabulary()
        readings.append((read_graphs(str(path), "moses-nbest", space, vocab), space, vocab))
    assert_same(*readings)


def test_convert_nbest_to_jsonl_and_back_gives_the_same_graphs(tmp_path, capsys):
    nbest_round_trip(NBEST, tmp_path)


def test_convert_round_trip_on_the_shared_moses_nbest(shared, tmp_path, capsys):
    nbest_round_trip(shared / "moses" / "nbest-5iter" / "nbest.1.gz", tmp_path)


def test_the_native_cache_keeps_what_jsonl_gives(tmp_path):
    path = tmp_path / "in.jsonl"
    lines = [
        {"id": 1, "hyp": "a b", "features": {"lm": -1.5}, "scores": {"comet": 0.25, "kiwi": 1}},
        {"id": 0, "hyp": "c", "features": {"qe": 2}, "scores": {"kiwi": 3, "comet": 0.5}},
        {"id": 1, "hyp": "", "scores": {"comet": 0.75, "kiwi": -1}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    space, vocab = FeatureSpace(), Vocabulary()
    graphs = read_graphs(str(path), None, space, vocab)
    write_graphs(graphs, str(tmp_path / "c.htc"), "hypertune-cache")
    space2, vocab2 = FeatureSpace(), Vocabulary()
    cached = read_graphs(str(tmp_path / "c.htc"), None, space2, vocab2)
    assert_same((cached, space2, vocab2), (graphs, space, vocab))
    assert np.array_equal(cached[0].edge_scores.column("kiwi"), [0, 1, -1])
    path.write_text('{"id": 3, "scores": {"comet": 0.5}, "total": -2}\n')  # no text: the metadata says so
    graphs = read_graphs(str(path), None, FeatureSpace(), Vocabulary())
    write_graphs(graphs, str(tmp_path / "d.htc"), "hypertune-cache")
    (cached,) = read_graphs(str(tmp_path / "d.htc"))
    assert cached.metadata == {"text": False, "totals": [-2.0]} and cached.edge_scores == graphs[0].edge_scores


def test_tables_and_arrays_that_fill_up_make_the_scan_run_again(tmp_path):
    """More names than the first tables hold, more words than the first word array holds (words split at
    U+3000, which the bound on words does not count), and 20,000 distinct words: the same as the reference."""
    path = tmp_path / "big.jsonl"
    scores = {f"s{k}": k / 3 for k in range(20)}
    lines = [
        {"id": 0, "hyp": "\u3000".join(f"u{k}" for k in range(60)), "features": {f"f{k}": k for k in range(300)}},
        {"id": 1, "hyp": " ".join(f"v{k}" for k in range(20000)), "features": {"f7": 1}},
    ]
    path.write_text("".join(json.dumps(line | {"scores": scores}, ensure_ascii=False) + "\n" for line in lines))
    got, expected = read_both(str(path))
    assert_same(got, expected)
    assert len(got[1]) == 300 and len(got[2]) == 20060 and got[0][0].edge_scores.names[-1] == "s19"
    compact = json.dumps(lines[0] | {"scores": scores}, ensure_ascii=False, separators=(",", ":"))
    path.write_text(compact + "\n")  # one byte below 33: the first word array holds 2 words
    got, expected = read_both(str(path))
    assert_same(got, expected)
    assert got[0][0].num_edges == 2 and got[0][0].target.size == 61
