"""The compiled cdec JSON reader against an independent reader written from the format
(``support/reference_cdec_json.py``: Python's json module and the graph built in plain Python, no code
shared with the package): the same graphs on the shared data, the fixture, hand-made edge cases (each shape
the package once left to a second, Python parser among them), a generated corpus and corrupted files; the
same inputs refused; and the package's messages, for a few refused inputs, as written by hand here."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from support import reference_cdec_json as reference
from support.same_graphs import assert_same_readings
from support.strategies import format_corruptions as corruptions

from hypertune.errors import InputError
from hypertune.formats import cdec_json
from hypertune.symbols import FeatureSpace, Vocabulary

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats"


def both(path: str, spaces=None):
    """(graphs, feature space, vocabulary) or the error of the package's reader, and the same or None
    (refused) of the reference, on fresh spaces (or copies of ``spaces``)."""
    out = []
    for module in (cdec_json, reference):
        space, vocab = (
            (FeatureSpace(), Vocabulary()) if spaces is None else (FeatureSpace(spaces[0]), Vocabulary(spaces[1]))
        )
        try:
            out.append((module.read(path, space, vocab), space, vocab))
        except InputError as error:
            out.append(str(error))
        except reference.Refused:
            out.append(None)
    return out


def check_file(path: str, spaces=None) -> str | None:
    """Both readers read ``path`` alike, or both refuse it; returns the package's error when they refuse."""
    got, expected = both(path, spaces)
    if expected is None:
        assert isinstance(got, str), "the package reads what the reference refuses"
        return got
    assert not isinstance(got, str), got
    assert_same_readings(got, expected)
    return None


def check_text(tmp_path: Path, text: str, name: str = "graph.json") -> str | None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return check_file(str(path))


@pytest.mark.parametrize(
    "name",
    [
        "forests/decoder_test_data_urdu.json.gz",
        "forests/decoder_test_data_perro.json.gz",
        "forests/decoder_test_data_small.json.gz",
        "forests/training_dpmert_test_data_0.json.gz",
        "forests/training_dpmert_test_data_1.json.gz",
        "toy/hg_test.hg",
        "toy/hg_test.hg_balanced",
        "toy/hg_test.hg_int",
        "toy/hg_test.lattice",
        "toy/hg_test.tiny",
        "toy/hg_test.tiny_lattice",
        "toy/test-ch-inside.json",
        "toy/test-zero-origin.json",
    ],
)
def test_shared_cdec_files(shared, name):
    assert check_file(str(shared / "cdec" / name)) is None


def test_every_shared_cdec_json_file(shared):
    """Whatever cdec JSON the shared data holds (listed or not above), both readers agree."""
    files = [p for p in sorted((shared / "cdec").rglob("*")) if p.is_file() and cdec_json.sniff(_head(p))]
    assert len(files) >= 13
    for path in files:
        check_file(str(path))


def _head(path: Path) -> str:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data[:4096].decode("utf-8", "replace")


def test_fixture():
    assert check_file(str(FIXTURES / "toy.cdec.json")) is None


def test_spaces_that_already_hold_names():
    """Names the spaces hold already keep their columns; a graph is as wide as the space once it was read."""
    spaces = (["lm", "zzz", "glue"], ["cat", "dog"])
    assert check_file(str(FIXTURES / "toy.cdec.json"), spaces) is None


TOY = (FIXTURES / "toy.cdec.json").read_text(encoding="utf-8")
ONE = '{"rules":[1,"[X] ||| a ||| a b"],"features":["f"],"edges":[{"tail":[],"feats":[0,1.5],"rule":1}],"node":{"in_edges":[0],"cat":"X"}}'  # noqa: E501
LATTICE = (
    '{"rules":[1,"[X] ||| [X] a ||| [1] a"],"features":["f"],"edges":[],"node":{"in_edges":[]},'
    '"edges":[{"tail":[0],"feats":[0,-0.2],"rule":1},{"tail":[0],"feats":["g",2],"rule":1}],'
    '"node":{"in_edges":[0,1]},"edges":[{"tail":[1],"feats":[],"rule":1}],"node":{"in_edges":[2],"cat":"Goal"}}'
)

EDGE_CASES = {
    "several objects": ONE + "\n" + TOY + "\n" + ONE,
    "objects on one line": ONE + ONE + "  " + ONE,
    "stray quote": LATTICE + '\n"\n',
    "stray quote, spaces": ONE + ' \u00a0" \u3000\n',
    "lattice start node": LATTICE,
    "unicode whitespace between objects": ONE + "\u2028\u00a0\t\x0c" + ONE,
    "json whitespace everywhere": ONE.replace(":", " :\r\n\t").replace(",", " ,\n "),
    "escapes": ONE.replace("a b", 'a\\/b \\"q\\" \\\\ \\u00e9t\\u00E9 \\ud83d\\ude00 x\\ty\\nz\\rw\\fv\\bu').replace(
        '"cat":"X"', '"cat":"\\u0058\\/"'
    ),
    "escaped feature names": ONE.replace('["f"]', '["f\\u00e9","f\\u00e9","\\"g\\""]').replace(
        '"feats":[0,1.5]', '"feats":[0,1.5,"f\\u00e9",2,1,3,2,4]'
    ),
    "unicode": ONE.replace("a b", "\u00e9t\u00e9 \u0645\u0627 \U0001f600 [X,\u0661]x").replace('"f"', '"\u0444"'),
    "unicode spaces in rules": ONE.replace("a b", "a\u00a0b\u3000c\u2009d\u200be"),
    "exponents and numbers": ONE.replace(
        '"feats":[0,1.5]',
        '"feats":[0,1e5,"a",-2.5E-3,"b",0,"c",-0,"d",-0.0,"e",1E+2,"f",123456789012345678,"g",0.1e1,'
        '"h",9007199254740993,"i",1.7976931348623157e307,"j",4.9e-324,"k",1e-400,"l",0.30000000000000004,'
        '"m",12345678901234567890123,"n",2.5e-30,"o",1e22,"p",1e23]',
    ),
    "feature listed twice on an edge": ONE.replace('"feats":[0,1.5]', '"feats":[0,1.5,"f",2,0,-3.5]'),
    "inline rule and no rule": TOY.replace('"rule":1}', '"rule":null}').replace(
        '"rule":2', '"rule":"[X] ||| x ||| y z"'
    ),
    "no rule key": ONE.replace(',"rule":1', ""),
    "keys in another order": ONE.replace(
        '{"tail":[],"feats":[0,1.5],"rule":1}', '{"rule":1,"spans":[1,2,{"x":[null,true]}],"feats":[0,1.5],"tail":[]}'
    ).replace('{"in_edges":[0],"cat":"X"}', '{"cat":"X","extra":{},"in_edges":[0]}'),
    "extra top-level keys": ONE.replace('"features"', '"x":[1,{"a":"b"}],"weights":{"f":1},"features"'),
    "rules and features twice": ONE.replace(
        '"features":["f"]', '"features":["zzz"],"rules":[1,"[X] ||| b ||| c",2,"[X] ||| d ||| e"],"features":["f"]'
    ),
    "empty rules and features": ONE.replace('[1,"[X] ||| a ||| a b"]', "[]").replace(',"rule":1', ""),
    "variables": TOY.replace("[1] [2]", "[1] [X,2] [02] [1]x x[1] [X,] [,1] [X]1] [1,1] [a]b,1] [X,Y,1] [S,X]"),
    "variables of two tails": TOY.replace("[1] [2]", "[2] [1] [S,2] [X,1] [1]"),
    "rule with four fields": ONE.replace("a b", "a b ||| f=1 ||| x"),
    "bars in a target": ONE.replace("a b", "a || b |||| c"),
    "no cat": ONE.replace(',"cat":"X"', ""),
    "cat not a string": ONE.replace('"cat":"X"', '"cat":7'),
    "empty cat": ONE.replace('"cat":"X"', '"cat":""'),
    "crlf": TOY.replace("\n", "\r\n"),
    "negative rule id": ONE.replace("[1,", "[-1,").replace('"rule":1', '"rule":-1'),
    "empty edges lists": ONE.replace('"edges":[{', '"edges":[],"edges":[],"edges":[{'),
    # the shapes a second, Python parser once read: escaped keys; objects where cdec writes lists; "rules"
    # or "features" after an "edges" or "node"; a key repeated in an edge or node; integers of more than
    # 18 digits (or 4300); [k] with other decimal digits; lone surrogates; deep nesting
    "escaped key": ONE.replace('"features"', '"feat\\u0075res"').replace('"tail"', '"t\\u0061il"'),
    "escaped node keys": ONE.replace('"in_edges"', '"in\\u005fedges"').replace('"cat"', '"\\u0063at"'),
    "rules after edges": ONE.replace('"rules":[1,"[X] ||| a ||| a b"],', "").replace(
        ',"node"', ',"rules":[1,"[X] ||| a ||| a b"],"node"'
    ),
    "rules replaced after edges": ONE.replace(',"node"', ',"rules":[1,"[X] ||| a ||| z"],"node"'),
    "features after edges": ONE.replace(',"node"', ',"features":["g"],"node"'),
    "features after a node": ONE.replace("}}", '},"features":["g"]}'),
    "rules after a node": LATTICE.replace(
        '"edges":[{"tail":[1]', '"rules":[1,"[X] ||| b ||| [1] b"],"edges":[{"tail":[1]'
    ),
    "tail twice": ONE.replace('"tail":[]', '"tail":[0],"tail":[]'),
    "feats twice": ONE.replace('"feats":[0,1.5]', '"feats":[0,1e-300,0,2.5],"feats":[0,1.5,"g",1.7e-310]'),
    "rule twice": ONE.replace('"rule":1', '"rule":7,"rule":1'),
    "cat twice": ONE.replace('"cat":"X"', '"cat":"Y","cat":"X"'),
    "in_edges twice": ONE.replace('"in_edges":[0]', '"in_edges":[5],"in_edges":[0]'),
    "in_edges of floats": LATTICE.replace('"in_edges":[0,1]', '"in_edges":[0.0,1e0]'),
    "in_edges of many digits": LATTICE.replace('"in_edges":[0,1]', '"in_edges":[1e-400,1.00000000000000000001]'),
    "in_edges false and true": LATTICE.replace('"in_edges":[0,1]', '"in_edges":[false,true]'),
    "in_edges of an empty object": LATTICE.replace('"in_edges":[]', '"in_edges":{}'),
    "empty objects for lists": ONE.replace('"tail":[]', '"tail":{}').replace(',"feats":[0,1.5]', ',"feats":{}'),
    "empty object for rules and features": ONE.replace('[1,"[X] ||| a ||| a b"]', "{}")
    .replace('["f"]', "{}")
    .replace(',"rule":1', "")
    .replace("[0,1.5]", '["f",1.5]'),
    "empty object for edges": LATTICE.replace('"edges":[],', '"edges":{},'),
    "long integer values": ONE.replace("1.5", "123456789012345678901234567890").replace(
        '"features"', '"x":' + "1" * 4300 + ',"features"'
    ),
    "largest value": ONE.replace("1.5", "1.7976931348623157e308"),
    "nearly overflowing integer": ONE.replace("1.5", str(2**1024 - 2**970 - 1)),
    "long rule ids": ONE.replace("[1,", "[123456789012345678901234,").replace(
        '"rule":1', '"rule":123456789012345678901234'
    ),
    "unicode digit variables": TOY.replace("[1] [2]", "[\u0661] [X,\u0b68] [\\u0661]"),
    "many-digit variables": TOY.replace("[1] [2]", "[000000000000000000000000001] [X,0002]"),
    "lone surrogates": ONE.replace("a b", "a\\ud800b \\udc00")
    .replace('["f"]', '["f\\udbff"]')
    .replace('"cat":"X"', '"cat":"\\ud800"'),
    "deep nesting": ONE.replace('"features"', '"x":' + "[" * 300 + "]" * 300 + ',"features"'),
    "deeper nesting": ONE.replace('"features"', '"x":' + '{"a":[' * 600 + "]}" * 600 + ',"features"'),
}


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_edge_cases(tmp_path, case):
    assert check_text(tmp_path, EDGE_CASES[case]) is None


ERROR_CASES = [
    "",
    "   \n\n",
    "[]",
    "x" + ONE,
    ONE + "x",
    ONE + '"x',
    '"' + ONE,
    ONE + '\n" "',
    "{}",
    '{"rules":[]}',
    ONE[:-1],
    ONE[:40],
    ONE.replace(":", "", 1),
    ONE.replace(",", ",,", 1),
    ONE.replace("[1,", "[1,,"),
    ONE.replace("1.5", "1.5.5"),
    ONE.replace("1.5", "01"),
    ONE.replace("1.5", "1."),
    ONE.replace("1.5", "-"),
    ONE.replace("1.5", ".5"),
    ONE.replace("1.5", "+1"),
    ONE.replace("1.5", "1e"),
    ONE.replace("1.5", "nul"),
    ONE.replace("1.5", "NaN"),
    ONE.replace("1.5", "-Infinity"),
    ONE.replace("1.5", "Infinity"),
    ONE.replace("1.5", "1e400"),
    ONE.replace("1.5", "-1e999"),
    ONE.replace("1.5", "true"),
    ONE.replace("1.5", '"1.5"'),
    ONE.replace("1.5", "[1.5]"),
    ONE.replace("1.5", '{"a":1}'),
    ONE.replace("1.5", "1.5,2"),
    ONE.replace("a b", "a\tb"),
    ONE.replace("a b", "a\\xb"),
    ONE.replace("a b", "a\\u12xb"),
    ONE.replace("a b", "a\\"),
    ONE.replace("a b", "a ||| b"),
    ONE.replace("a b", "[2]"),
    ONE.replace("a b", "[0]"),
    ONE.replace("a b", "[X,99999]"),
    ONE.replace('"rules":[1,', '"rules":[1.0,'),
    ONE.replace('"rules":[1,', '"rules":[true,'),
    ONE.replace('"rules":[1,', '"rules":["1",'),
    ONE.replace('"rules":[1,"[X] ||| a ||| a b"]', '"rules":[1,"[X] ||| a ||| a b",2]'),
    ONE.replace('"rules":[1,"[X] ||| a ||| a b"]', '"rules":[1,"[X] ||| a ||| a b",2,"bad",3,7]'),
    ONE.replace('"rules":[1,"[X] ||| a ||| a b"]', '"rules":{"1":"x"}'),
    ONE.replace('"features":["f"]', '"features":"f"'),
    ONE.replace('"features":["f"]', '"features":["f",1]'),
    ONE.replace('"features":["f"]', '"features":[]'),
    ONE.replace(',"features":["f"]', ""),
    ONE.replace('"feats":[0,1.5]', '"feats":[1,1.5]'),
    ONE.replace('"feats":[0,1.5]', '"feats":[-1,1.5]'),
    ONE.replace('"feats":[0,1.5]', '"feats":[0]'),
    ONE.replace('"feats":[0,1.5]', '"feats":{"f":1}'),
    ONE.replace('"feats":[0,1.5]', '"feats":[0.5,1.5]'),
    ONE.replace('"feats":[0,1.5]', '"feats":[null,1.5]'),
    ONE.replace('"feats":[0,1.5]', '"feats":[[0],1.5]'),
    ONE.replace('"feats":[0,1.5]', '"feats":[0,1.5,"g",1e308,"g",1e308]'),
    ONE.replace('"tail":[]', '"tail":[0]'),
    ONE.replace('"tail":[]', '"tail":[-1]'),
    ONE.replace('"tail":[]', '"tail":0'),
    ONE.replace('"tail":[]', '"tail":[0,"x"]'),
    ONE.replace('"tail":[]', '"tail":[5,true]'),
    ONE.replace('"tail":[]', '"tail":[5],"feats":[0]'),
    ONE.replace('"rule":1', '"rule":2'),
    ONE.replace('"rule":1', '"rule":1.0'),
    ONE.replace('"rule":1', '"rule":true'),
    ONE.replace('"rule":1', '"rule":[1]'),
    ONE.replace('"rule":1', '"rule":"no fields"'),
    ONE.replace('"rule":1', '"rule":"[X] ||| a ||| [3]"'),
    ONE.replace('"in_edges":[0]', '"in_edges":[1]'),
    ONE.replace('"in_edges":[0]', '"in_edges":[]'),
    ONE.replace('"in_edges":[0]', '"in_edges":[0,1]'),
    ONE.replace(',"node":{"in_edges":[0],"cat":"X"}', ""),
    ONE.replace('"node":{', '"node":[{').replace("}}", "}]}"),
    ONE.replace('"edges":[{', '"edges":[7,{'),
    ONE.replace('"edges":[{', '"edges":[{"tail":"x"},{'),
    ONE.replace('"edges":[{', '"edges":[{"tail":[],"rule":1},{')
    .replace('"in_edges":[0]', '"in_edges":[0,1]')
    .replace('"rule":1}]', '"rule":9}]'),
    ONE.replace(',"node"', ',"edges":[{"tail":[]}],"node"'),
    ONE.replace('"node":{"in_edges":[0],"cat":"X"}', '"node":{"in_edges":[5]},"node":{}'),
    ONE + "\n" + ONE.replace('"tail":[]', '"tail":[3]'),
    ONE + "\n\n" + ONE.replace('"tail":[]', '"tail":[3]').replace("1.5", "1.5x"),
    ONE.replace('"tail":[]', '"tail":[3]').replace("1.5", "1.5x"),
    ONE.replace('"tail":[]', '"tail":[3]') + "\n" + ONE[:30],
    ONE.replace('"feats":[0,1.5]', '"feats":[0,1e308,0,1e308]') + "\n" + ONE.replace("1.5", "1.5x"),
]


@pytest.mark.parametrize("index", range(len(ERROR_CASES)))
def test_errors(tmp_path, index):
    error = check_text(tmp_path, ERROR_CASES[index])
    if error is not None:
        assert "graph.json:" in error


MESSAGES = [  # (text, line, message), written from the format, not from the reader's table
    ("", 1, "no graph in the file (expected a cdec JSON object)"),
    ("\n\n", 3, "no graph in the file (expected a cdec JSON object)"),
    (ONE + "\n[1]", 2, "expected a JSON object ('{'), got '[1]'"),
    (
        ONE + "\n" + ONE.replace('"in_edges":[0]', '"in_edges":[1]'),
        2,
        "graph 1: node 0: in_edges [1] do not match the 1 edges listed before it (expected [0])",
    ),
    (
        ONE.replace('"in_edges":[0]', '"in_edges":{"a":1}'),
        1,
        "graph 0: node 0: in_edges [('a', 1)] do not match the 1 edges listed before it (expected [0])",
    ),
    (
        ONE.replace('"tail":[]', '"tail":[123456789012345678901]'),
        1,
        "graph 0: edge 0 (node 0): unknown tail id 123456789012345678901 (tails must be earlier nodes 0..-1)",
    ),
    (
        ONE.replace('"feats":[0,1.5]', '"feats":[7,1.5]'),
        1,
        'graph 0: edge 0 (node 0): feature id 7 is not in the "features" list (1 names)',
    ),
    (
        ONE.replace('"feats":[0,1.5]', '"feats":{"a":1,"b":2}'),
        1,
        "graph 0: edge 0 (node 0): expected a feature id or name, got ('a', 1)",
    ),
    (ONE.replace("1.5", '"x"'), 1, "graph 0: edge 0 (node 0) feature f: expected a number, got 'x'"),
    (ONE.replace("1.5", "1e309"), 1, "graph 0: edge 0 (node 0) feature f: feature values must be finite"),
    (ONE.replace("1.5", "1" + "0" * 309), 1, "graph 0: edge 0 (node 0) feature f: feature values must be finite"),
    (
        ONE.replace("a b", "[" + "9" * 30 + "]"),
        1,
        "graph 0: edge 0 (node 0): target refers to tail [" + "9" * 30 + "] of an edge with 0 tails",
    ),
    (ONE.replace("a b", "[\u0663]"), 1, "graph 0: edge 0 (node 0): target refers to tail [3] of an edge with 0 tails"),
    (
        ONE.replace('"rules":[1,"[X] ||| a ||| a b"]', '"rules":[12345678901234567890,"x"]'),
        1,
        "graph 0: rule 12345678901234567890: expected a rule '[LHS] ||| source ||| target [||| features]', got 'x'",
    ),
    (
        ONE.replace('"rules":[1,"[X] ||| a ||| a b"]', '"rules":{"1":"x","2":"y"}'),
        1,
        'graph 0: "rules" item 0: expected an integer id and a rule string',
    ),
    (
        ONE.replace('"edges":[{', '"edges":{"a":[{').replace("1}]", "1}]}"),
        1,
        "graph 0: edge 0 (node 0): expected an object",
    ),
    (
        ONE + "\n" + ONE.replace('"features"', '"x":' + "1" * 4301 + ',"features"'),
        2,
        "graph 1: an integer of more than 4300 digits (more than json's int() reads)",
    ),
    (ONE + '\n{"rules":\n[1,,2]}', 3, "invalid JSON: Expecting value (column 4)"),
]


@pytest.mark.parametrize(("text", "line", "message"), MESSAGES)
def test_messages(tmp_path, text, line, message):
    """The package's message and line for refused inputs (the reference only refuses them)."""
    path = tmp_path / "graph.json"
    path.write_text(text, encoding="utf-8")
    assert check_file(str(path)) == f"{path}:{line}: {message}"


def test_not_utf8_and_missing_files(tmp_path):
    path = tmp_path / "bad.json"
    path.write_bytes(ONE.encode().replace(b"a b", b"a \xff b"))
    with pytest.raises(InputError, match="not UTF-8"):
        cdec_json.read(str(path), FeatureSpace(), Vocabulary())
    with pytest.raises(InputError, match="no such"):
        cdec_json.read(str(tmp_path / "missing.json"), FeatureSpace(), Vocabulary())


def test_generated_corpus(tmp_path):
    """A larger corpus: many graphs with inline and listed rules, named and numbered features, escapes."""
    rng = np.random.default_rng(5)
    objects = []
    for _ in range(30):
        rules = [x for r in range(1, 40) for x in (r, f"[X] ||| s{r} ||| w{r % 17} [1] v\\/{r % 5} [2]")]
        names = [f"F{k}" for k in range(int(rng.integers(0, 12)))]
        parts = [f'"rules":{json.dumps(rules)}', f'"features":{json.dumps(names)}']
        edge = 0
        for v in range(int(rng.integers(1, 40))):
            edges = []
            for _ in range(int(rng.integers(0 if v == 0 else 1, 4))):
                tails = [int(t) for t in rng.integers(0, v, size=2)] if v >= 1 else []
                feats = []
                for k in rng.integers(0, 30, size=int(rng.integers(0, 6))):
                    key = int(k) if names and k < len(names) else f"s{int(k)}"
                    feats += [key, round(float(rng.normal()), int(rng.integers(1, 18)))]
                rule = int(rng.integers(1, 40)) if len(tails) == 2 else f"[X] ||| x ||| y{edge} \\u00e9"
                edges.append({"tail": tails, "spans": [0, 1, -1, -1], "feats": feats, "rule": rule})
            parts.append('"edges":' + json.dumps(edges))
            parts.append('"node":' + json.dumps({"in_edges": list(range(edge, edge + len(edges))), "cat": "X"}))
            edge += len(edges)
        objects.append("{" + ",".join(parts) + "}")
    path = tmp_path / "corpus.json.gz"
    path.write_bytes(gzip.compress(("\n".join(objects) + "\n").encode()))
    assert check_file(str(path)) is None


def test_more_distinct_strings_than_the_first_tables_hold(tmp_path):
    """The compiled scan starts with room for some thousands of words and scans again with more."""
    rules = [x for r in range(1, 3000) for x in (r, "[X] ||| a ||| " + " ".join(f"w{r}_{k}" for k in range(5)))]
    edges = [{"tail": [], "feats": [f"f{r}", 1], "rule": r} for r in range(1, 3000)]
    text = json.dumps({"rules": rules, "edges": edges})[:-1] + ',"node":{"in_edges":' + json.dumps(list(range(2999)))
    assert check_text(tmp_path, text + "}}") is None


def test_more_target_words_than_the_first_room_holds(tmp_path):
    """One long rule that every edge uses: the target outgrows its first room and the scan runs again."""
    rules = [1, "[X] ||| a ||| " + " ".join(f"w{k}" for k in range(50))]
    edges = [{"tail": [], "feats": [], "rule": 1}] * 2000
    text = json.dumps({"rules": rules, "edges": edges})[:-1] + ',"node":{"in_edges":' + json.dumps(list(range(2000)))
    assert check_text(tmp_path, text + "}}") is None


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(corruptions(TOY + "\n" + LATTICE + "\n"))
def test_corrupted_files_equal_the_reference(corrupted):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "graph.json"
        path.write_text(corrupted, encoding="utf-8")
        check_file(str(path))
