"""The vectorized Moses hypergraph parser gives exactly the graphs (and errors) of the line-by-line parser."""

from __future__ import annotations

import numpy as np
import pytest

from hypertune.errors import InputError
from hypertune.formats import moses_hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary


def reference(lines, path):
    fs, vocab = FeatureSpace(), Vocabulary()
    return moses_hypergraph._parse_lines_checked(lines, path, fs, vocab), fs, vocab


def fast(lines, path):
    fs, vocab = FeatureSpace(), Vocabulary()
    return moses_hypergraph._parse_fast(lines, path, fs, vocab), fs, vocab


def assert_same(a, b):
    (ga, fa, va), (gb, fb, vb) = a, b
    assert list(fa) == list(fb) and list(va) == list(vb)
    assert ga.num_nodes == gb.num_nodes
    for name in ("head", "tail_offsets", "tails", "target_offsets", "target", "node_offsets"):
        x, y = getattr(ga, name), getattr(gb, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    for name in ("indptr", "indices", "data"):
        x, y = getattr(ga.features, name), getattr(gb.features, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert ga.features.shape == gb.features.shape
    assert ga.metadata == gb.metadata and ga.node_labels == gb.node_labels


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_shared_graphs_equal_reference(shared, kind):
    path = str(shared / "moses" / "hypergraphs" / kind / "hg.gz")
    lines = moses_hypergraph._read_fast(path).split("\n")
    got = fast(lines, path)
    assert got[0] is not None, "the fast parser should accept the shared graph"
    assert_same(got, reference(lines, path))
    (hg,) = moses_hypergraph.read(path, FeatureSpace(), Vocabulary())
    assert hg.num_edges == got[0].num_edges


TEXT = """# target ||| features ||| source-covered
4 6
# node 0
1
<s> |||  ||| 0
# node 1
2
[0] a = b  ||| x=1=2 TM0_1=0.5 TM0_1=1e-3 LM0=0.000000 A_0=2 ||| 1
[0] 0 1 ||| A_1=-0.25 w=+.5 weird\u00e9=1.0000000000000001 ||| 2
1
[1] c ||| y=3 ||| 1
2
[2] [1] d ||| a=b=3 z=1.5 ||| 3
[1] [2] ||| z=-2. ||| 3
"""


def test_edge_cases_equal_reference():
    lines = TEXT.split("\n")
    got = fast(lines, "t")
    assert got[0] is not None
    assert_same(got, reference(lines, "t"))


@pytest.mark.parametrize(
    "old,new",
    [
        ("||| 3\n", "|||3\n"),  # glued separator
        ("d |||", "d\u00a0x |||"),  # non-ASCII whitespace
        ("z=1.5", "z=nan"),
        ("z=1.5", "z="),
        ("z=1.5", "=1.5"),
        ("z=1.5", "z1.5"),
        ("||| 2\n", "||| 2 5\n"),
        ("||| 2\n", "||| \u0663\n"),
        ("[2] [1] d", "[3] d"),
        ("[1] c", "[\u0661] c"),
        ("4 6", "4 7"),
        ("4 6", "5 6"),
        ("2\n[2]", "x\n[2]"),
        ("y=3 ||| 1", "y=3 ||| 1 ||| 2"),
        ("y=3 ||| 1", "y=3 \x00 ||| 1"),
    ],
)
def test_malformed_falls_back_to_the_same_result(old, new):
    lines = TEXT.replace(old, new, 1).split("\n")
    try:
        expected = reference(lines, "t")
    except (InputError, ValueError) as error:
        with pytest.raises(type(error)) as info:
            moses_hypergraph.parse_lines(lines, "t", FeatureSpace(), Vocabulary())
        assert str(info.value) == str(error)
    else:
        fs, vocab = FeatureSpace(), Vocabulary()
        assert_same((moses_hypergraph.parse_lines(lines, "t", fs, vocab), fs, vocab), expected)


def test_crlf_and_plain_files_read_like_open_text(tmp_path):
    path = tmp_path / "hg"
    path.write_bytes(TEXT.replace("\n", "\r\n").encode())
    fs, vocab = FeatureSpace(), Vocabulary()
    (hg,) = moses_hypergraph.read(str(path), fs, vocab)
    assert_same((hg, fs, vocab), reference(TEXT.split("\n"), "t"))
