"""The compiled Moses hypergraph parser gives exactly the graphs (and errors) of a plain line-by-line
reading of the format, written here independently of the library as the reference."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from support.paths import SHARED

from hypertune.errors import InputError
from hypertune.formats import moses_hypergraph
from hypertune.formats._common import from_moses_hypergraph_name
from hypertune.symbols import FeatureSpace, Vocabulary


def reference_parse(text: str, path: str):
    """``(num_vertices, edges, feature names, words)`` by the format's definition, one line at a time;
    ``edges`` = (head, tails, target tokens, [(name, value)], covered) with tokens as in the library (word
    ids, ``-(i + 1)`` for the i-th tail). Errors are (message fragment, line)."""
    lines = text.split("\n")
    body = [(i + 1, line.strip()) for i, line in enumerate(lines) if line.strip() and not line.strip().startswith("#")]
    position = 0

    def take():
        nonlocal position
        if position == len(body):
            raise InputError("the file ends early", path, len(lines))
        position += 1
        return body[position - 1]

    number, header = take()
    num_vertices, num_edges = (int(x) for x in header.split())
    names: list[str] = []
    words: list[str] = []
    edges = []
    for vertex in range(num_vertices):
        number, count = take()
        for _ in range(int(count)):
            number, line = take()
            target, features, covered = line.split("|||")
            tails, tokens = [], []
            for word in target.split():
                if word[0] == "[" and word[-1] == "]" and word[1:-1].isascii() and word[1:-1].isdigit():
                    if int(word[1:-1]) >= vertex:
                        raise InputError("unknown tail id", path, number)
                    tails.append(int(word[1:-1]))
                    tokens.append(-len(tails))
                else:
                    if word not in words:
                        words.append(word)
                    tokens.append(words.index(word))
            values: dict[int, float] = {}  # a name given twice on one edge: its values add up
            for item in features.split():
                name, _, value = item.rpartition("=")
                x = float(value)
                if x != 0.0:
                    canonical = from_moses_hypergraph_name(name)
                    if canonical not in names:
                        names.append(canonical)
                    column = names.index(canonical)
                    values[column] = values.get(column, 0.0) + x
            edges.append((vertex, tails, tokens, sorted(values.items()), int(covered)))
    assert len(edges) == num_edges and position == len(body)
    return num_vertices, edges, names, words


def assert_equals_reference(text: str, path: str = "t") -> None:
    fs, vocab = FeatureSpace(), Vocabulary()
    graph = moses_hypergraph.parse(text.encode(), path, fs, vocab)
    num_vertices, edges, names, words = reference_parse(text, path)
    assert list(fs) == names and list(vocab) == words
    assert graph.num_nodes == num_vertices and graph.num_edges == len(edges)
    for e, (head, tails, tokens, pairs, covered) in enumerate(edges):
        assert graph.head[e] == head
        assert graph.edge_tails(e).tolist() == tails
        assert graph.edge_target(e).tolist() == tokens
        row = graph.features[e]
        assert sorted(zip(row.indices.tolist(), row.data.tolist(), strict=True)) == pairs
        assert graph.source_covered[e] == covered


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_shared_graphs_equal_reference(shared, kind):
    import gzip

    path = shared / "moses" / "hypergraphs" / kind / "hg.gz"
    assert_equals_reference(gzip.decompress(path.read_bytes()).decode(), str(path))
    (hg,) = moses_hypergraph.read(str(path), FeatureSpace(), Vocabulary())
    assert hg.num_edges > 1000


TEXT = """# target ||| features ||| source-covered
4 6
# node 0
1
<s> |||  ||| 0
# node 1
2
[0] a = b  ||| x=1=2 TM0_1=0.5 TM0_1=1e-3 LM0=0.000000 A_0=2 ||| 1
[0] 0 1 ||| A_1=-0.25 w=+.5 weird\u00e9=1.0000000000000001 big=123456789012345678901 e=2.5E-3 ||| 2
   # an indented comment between edges
1
[1] c [] [x] [-1] ||| y=3 ||| 1
2
[2] [1] d\u00a0x ||| a=b=3 z=1.5 ||| 3
[1]\u2003[2] ||| z=-2. q=1_5 r=0.1e1 ||| 3
"""


def test_edge_cases_equal_reference():
    """Unicode spaces split tokens as ``str.split()`` does; values outside the exact fast path (exponents,
    many digits, ``1_5``) equal ``float()``; ``[]``, ``[x]`` and ``[-1]`` are words, not tails."""
    text = TEXT
    assert_equals_reference(text)
    fs, vocab = FeatureSpace(), Vocabulary()
    graph = moses_hypergraph.parse(text.encode(), "t", fs, vocab)
    values = dict(zip(fs, graph.features.sum(axis=0).A1.tolist(), strict=True))
    assert values["big"] == 123456789012345678901.0 and values["e"] == 0.0025 and values["q"] == 15.0
    assert values["weird\u00e9"] == 1.0000000000000001 and values["r"] == 1.0


def test_crlf_and_compressed_files_read_alike(tmp_path):
    import bz2
    import gzip

    text = TEXT
    plain = moses_hypergraph.parse(text.encode(), "t", FeatureSpace(), Vocabulary())
    for name, data in [
        ("crlf", text.replace("\n", "\r\n").encode()),
        ("cr", text.replace("\n", "\r").encode()),
        ("gz", gzip.compress(text.encode())),
        ("bz2", bz2.compress(text.encode())),
    ]:
        path = tmp_path / name
        path.write_bytes(data)
        (graph,) = moses_hypergraph.read(str(path), FeatureSpace(), Vocabulary())
        assert graph.target.tolist() == plain.target.tolist() and graph.num_edges == plain.num_edges, name
        assert np.array_equal(graph.features.toarray(), plain.features.toarray()), name


@pytest.mark.parametrize(
    ("old", "new", "message", "line"),
    [
        ("||| 3\n[1]", "|||3\n[1]", None, None),  # a separator glued to the count is still a separator
        ("d\u00a0x |||", "d\u00a0x ||| a=1 |||", "expected an edge 'target", 14),
        ("z=1.5", "z=nan", "must be finite", 14),
        ("z=1.5", "z=1e40", None, None),
        ("z=1.5", "z=1e400000", "must be finite", 14),
        ("z=1.5", "z=", "bad number in feature 'z='", 14),
        ("z=1.5", "=1.5", "expected a feature 'name=value', got '=1.5'", 14),
        ("z=1.5", "z1.5", "expected a feature 'name=value', got 'z1.5'", 14),
        ("||| 2\n", "||| 2 5\n", "expected a source-covered count, got '2 5'", 9),
        ("||| 2\n", "||| \u0663\n", "expected a source-covered count", 9),
        ("||| 2\n", "||| -2\n", "expected a source-covered count", 9),
        ("||| 2\n", "||| \n", "expected a source-covered count, got ''", 9),
        ("[2] [1] d", "[3] d", "vertex 3: unknown tail id [3]", 14),
        ("[2] [1] d", "[1234567890123456789012] d", "unknown tail id", 14),
        ("[1] c", "[\u0661] c", "must use ASCII digits", 12),  # the old parser read it as tail 1
        ("4 6", "4 7", "announces 7 edges but the file has 6", 15),
        ("4 6", "5 6", "the file ends early", 16),
        ("4 6", "4 5", "vertex 3: 2 more edges exceed the 5 edges", 13),
        ("4 6", "4", "expected '<vertices> <edges>', got '4'", 2),
        ("4 6", "4 x", "(two integers)", 2),
        ("4 6", "0 6", "at least one vertex and one edge", 2),
        ("1\n[1] c", "x\n[1] c", "vertex 2: expected its number of edges, got 'x'", 11),
        ("1\n[1] c", "0\n[1] c", "vertex 2: expected at least one edge, got 0", 11),
        ("y=3 ||| 1", "y=3 ||| 1 ||| 2", "expected an edge", 12),
        ("y=3 ||| 1\n2\n[2] [1]", "y=x ||| 1\n2\n[3] [1]", "bad number in feature 'y=x'", 12),  # the first error
        ("r=0.1e1 ||| 3\n", "r=0.1e1 ||| 3\n7\n", "unexpected text after the last vertex", 16),
        ("r=0.1e1 ||| 3\n", "r=0.1e1 ||| 3\n# a comment and a blank line\n\n", None, None),
    ],
)
def test_every_error_is_located(old, new, message, line):
    text = TEXT.replace(old, new, 1)
    if message is None:
        assert_equals_reference(text)
        return
    fs, vocab = FeatureSpace(), Vocabulary()
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")) as info:
        moses_hypergraph.parse(text.encode(), "t", fs, vocab)
    assert info.value.path == "t" and info.value.line == line, str(info.value)
    assert len(fs) == 0 and len(vocab) == 0  # nothing interned from a bad file


def test_a_huge_announced_size_is_an_error_not_an_allocation(tmp_path):
    with pytest.raises(InputError, match="ends early"):
        moses_hypergraph.parse(b"99999999999 99999999999\n1\n<s> |||  ||| 0\n", "t", FeatureSpace(), Vocabulary())


def test_exact_numbers_agree_with_float():
    """The compiled fast path converts every value exactly as ``float()``: random decimals of up to 17
    significant digits and exponents, against Python's own conversion."""
    rng = np.random.default_rng(5)
    items = []
    for i in range(3000):
        digits = "".join(rng.choice(list("0123456789"), size=int(rng.integers(1, 18))))
        point = int(rng.integers(0, len(digits) + 1))
        text = digits[:point] + "." + digits[point:] if rng.random() < 0.8 else digits
        if rng.random() < 0.3:
            text += f"e{int(rng.integers(-30, 30))}"
        if rng.random() < 0.5:
            text = "-" + text
        items.append((f"f{i}", text))
    line = " ".join(f"{name}={value}" for name, value in items)
    graph = moses_hypergraph.parse(f"1 1\n1\nw ||| {line} ||| 1\n".encode(), "t", fs := FeatureSpace(), Vocabulary())
    got = dict(zip((fs.names[c] for c in graph.features.indices), graph.features.data.tolist(), strict=True))
    for name, text in items:
        expected = float(text)
        if expected != 0.0 and math.isfinite(expected):
            assert got[name] == expected, (text, got[name])


def test_more_distinct_words_than_the_first_table_holds():
    words = " ".join(f"w{k}" for k in range(10_000))
    names = " ".join(f"f{k}=1" for k in range(5_000))
    assert_equals_reference(f"2 2\n1\n<s> |||  ||| 0\n1\n[0] {words} ||| {names} ||| 1\n")


def moses_chain(vertices: int) -> str:
    """A Moses hypergraph: a chain of ``vertices`` nodes, two edges into each after the first."""
    lines = ["# target ||| features ||| source-covered", f"{vertices} {2 * vertices - 1}", "1", "<s> |||  ||| 0"]
    for v in range(1, vertices):
        lines += ["2", f"[{v - 1}] a b ||| lm=-1.5 tm=0.25 ||| 1", f"[{v - 1}] c ||| lm=-2.0 w=-1 ||| 1"]
    return "\n".join(lines) + "\n"


def python_events_of_read(path: str) -> int:
    """How many Python line and call events reading ``path`` runs (after one read that compiles)."""
    moses_hypergraph.read(path, FeatureSpace(), Vocabulary())
    events = 0

    def trace(frame, event, arg):
        nonlocal events
        events += 1
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        moses_hypergraph.read(path, FeatureSpace(), Vocabulary())
    finally:
        sys.settrace(previous)
    return events


def test_moses_hypergraph_lines_are_parsed_by_compiled_code(tmp_path):
    """What makes the dense hypergraph (5,342 edges) parse in well under a second: the per-line work is
    compiled, so the interpreted work of a read does not grow with the file (counted, not timed)."""
    paths = []
    for vertices in (20, 2000):
        paths.append(tmp_path / f"chain{vertices}")
        paths[-1].write_text(moses_chain(vertices))
    short, long = (python_events_of_read(str(path)) for path in paths)
    assert short == long
    dense = SHARED / "moses" / "hypergraphs" / "dense" / "hg.gz"
    if dense.is_file():
        assert python_events_of_read(str(dense)) < 5342  # fewer than one per edge
