"""The compiled n-best and Z-MERT readers give exactly the graphs (and errors) of the line-by-line readers
they replaced (``reference_nbest.py``): on the shared data, the fixtures, a generated corpus, and
corrupted files."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from support import reference_nbest as reference
from support.same_graphs import assert_same_readings
from support.strategies import format_corruptions as corruptions

from hypertune.errors import InputError
from hypertune.formats import nbest
from hypertune.symbols import FeatureSpace, Vocabulary

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats"


def both(path: str, zmert_names=None, zmert: bool = False):
    """(result or error text) of the compiled reader and of the reference, on fresh spaces."""
    out = []
    for module in (nbest, reference):
        space, vocab = FeatureSpace(), Vocabulary()
        try:
            if zmert:
                graphs = module.read_zmert(path, space, vocab, names=zmert_names)
            else:
                graphs = module.read_moses(path, space, vocab)
            out.append((graphs, space, vocab))
        except InputError as error:
            out.append(str(error))
    return out


def check_file(path: str, **kwargs) -> None:
    got, expected = both(path, **kwargs)
    if isinstance(expected, str):
        assert got == expected
    else:
        assert not isinstance(got, str), got
        assert_same_readings(got, expected)


@pytest.mark.parametrize("name", ["nbest-5iter/nbest.1.gz", "nbest-5iter/nbest.5.gz", "scorer-data/nbest.out.gz",
                                  "mert-example/NBEST"])  # fmt: skip
def test_shared_moses_lists(shared, name):
    check_file(str(shared / "moses" / name))


def test_shared_zmert_candidates(shared):
    check_file(str(shared / "zmert" / "cand_database.txt"), zmert=True)


@pytest.mark.parametrize("name", ["labels.nbest", "legacy.nbest", "joshua.nbest"])
def test_fixture_lists(name):
    check_file(str(FIXTURES / name))


def test_fixture_zmert():
    check_file(str(FIXTURES / "zmert.cand"), zmert=True, zmert_names=["a", "b", "c"])
    check_file(str(FIXTURES / "zmert.cand"), zmert=True)


TEXT = """0 ||| a b c ||| d= 0 -7.5 0 lm= -42.2 -1e3 w= -9 tm_pt_3=0.5 x=1=2 ||| -14.6 ||| extra field
0 ||| a  b ||| d= 1 2 3 lm= 4 5 w= 0 a:b=7 ||| 1e-3
0 ||| \u00e9t\u00e9 ||| d= 1 2 3 lm= 4 5 w= 6 new=1 ||| 2
1 ||| [1] x ||| lm: 1 2 w: 3 d= 0.000000 9999999999999999999 ||| -0

1 ||| ||| w= 1 ||| 0
"""


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("", ""),
        ("||| -14.6", "||| -14.6 7"),
        ("||| -14.6", "||| x"),
        ("||| -14.6", "||| nan"),
        ("d= 0 -7.5", "d= 0 nan"),
        ("d= 0 -7.5", "d= 0 x"),
        ("d= 0 -7.5", "7 d= 0"),
        ("lm= -42.2 -1e3", "lm= -42.2 -1e3 lm= 1"),
        ("lm= -42.2 -1e3", "lm="),
        ("w= -9 tm_pt_3=0.5", "w= -9 =0.5"),
        ("w= -9 tm_pt_3=0.5", "w= tm_pt_3=0.5"),
        ("tm_pt_3=0.5 x=1=2", "tm_pt_3=0.5 3"),
        ("0 ||| a  b", "x ||| a  b"),
        ("0 ||| a  b", "-1 ||| a  b"),
        ("1 ||| ||| w= 1 ||| 0", "0 ||| ||| w= 1 ||| 0"),
        ("1 ||| ||| w= 1 ||| 0", "1 ||| w= 1 ||| 0"),
        ("||| 1e-3", "||| 1e-3 |||"),
        ("a:b=7", "a: 7 a: 8"),
        ("d= 1 2 3 lm= 4 5 w= 6 new=1", "new=1 d= 1 2 3 lm= 4 5 w= 6"),
    ],
)
def test_edge_cases_and_errors(tmp_path, old, new):
    path = tmp_path / "list.nbest"
    path.write_text(TEXT.replace(old, new, 1), encoding="utf-8")
    check_file(str(path))


def test_blank_and_empty_files(tmp_path):
    for name, text in [("empty", ""), ("blank", "\n \n\n"), ("crlf", TEXT.replace("\n", "\r\n"))]:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8", newline="")
        check_file(str(path))


def test_generated_corpus(tmp_path):
    """A larger list with every kind of feature group, jittered values and repeated sentences."""
    rng = np.random.default_rng(3)
    lines = []
    for sid in range(40):
        for _ in range(int(rng.integers(1, 30))):
            words = " ".join(f"w{int(x)}" for x in rng.integers(0, 50, size=int(rng.integers(0, 12))))
            dense = " ".join(f"{v:.6f}" for v in rng.normal(size=7))
            keys = rng.integers(0, 30, size=int(rng.integers(0, 4)))
            sparse = " ".join(f"s{int(k)}={rng.normal():.4g}" for k in keys)
            lines.append(f"{sid} ||| {words} ||| Distortion0= {dense} LM0= {rng.normal():.17g} {sparse} ||| "
                         f"{rng.normal() * 1e-7:.6e}")  # fmt: skip
    path = tmp_path / "big.nbest.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    check_file(str(path))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(corruptions(TEXT))
def test_corrupted_lists_equal_the_reference(corrupted):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "list.nbest"
        path.write_text(corrupted, encoding="utf-8")
        check_file(str(path))


def test_feature_order_reads_the_first_line(tmp_path):
    path = tmp_path / "list.nbest"
    path.write_text(TEXT, encoding="utf-8")
    assert nbest.feature_order(str(path)) == ["d_0", "d_1", "d_2", "lm_0", "lm_1", "w"]


def test_more_distinct_strings_than_the_first_table_holds(tmp_path):
    """The compiled scan starts with room for 16,384 words and scans again with more when a file has more."""
    lines = [f"{i // 100} ||| {' '.join(f'w{i}_{k}' for k in range(100))} ||| f{i}= 1 ||| 0" for i in range(300)]
    path = tmp_path / "many.nbest"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    check_file(str(path))


def test_features_that_add_up_to_infinity(tmp_path):
    """A name repeated on a line adds up (as in the old reader); a sum that overflows is an error at that
    line (the old reader raised it without a line)."""
    path = tmp_path / "list.nbest"
    path.write_text("0 ||| a ||| w= 1 ||| 0\n0 ||| b ||| x=1e308 x=1e308 ||| 0\n", encoding="utf-8")
    with pytest.raises(InputError, match="feature values must be finite") as info:
        nbest.read_moses(str(path), FeatureSpace(), Vocabulary())
    assert info.value.line == 2
