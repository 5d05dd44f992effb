"""The compiled FEATSTAT/SCORESTAT reader gives exactly the graphs (and errors) of the line-by-line reader it
replaced (``reference_extractor.py``): on the shared data, the fixtures, a generated corpus, hand-made
edge cases and errors, and corrupted files."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from support import reference_extractor as reference
from support.same_graphs import assert_same_readings
from support.strategies import format_corruptions as corruptions

from hypertune.errors import GraphError, InputError
from hypertune.formats import extractor
from hypertune.symbols import FeatureSpace, Vocabulary

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "extractor"


class InPieces:
    """The compiled reader reading its files in pieces of ``size`` bytes (grown to the end of a block)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def read(self, *args):
        return extractor.read(*args, piece=self.size)

    def read_featstat(self, *args):
        return extractor.read_featstat(*args, piece=self.size)

    def read_scorestat(self, *args):
        return extractor.read_scorestat(*args, piece=self.size)


def both(call, modules=(extractor, reference)):
    """(result or error text) of ``call(module, space, vocabulary)`` for the compiled reader and the
    reference, on fresh spaces."""
    out = []
    for module in modules:
        space, vocab = FeatureSpace(), Vocabulary()
        try:
            out.append((call(module, space, vocab), space, vocab))
        except InputError as error:
            out.append(str(error))
    return out


def check(call) -> None:
    """The compiled reader, reading each file whole and in pieces of 1 and 40 bytes, against the reference."""
    *readings, expected = both(call, (extractor, InPieces(1), InPieces(40), reference))
    for got in readings:
        if isinstance(expected, str):
            assert got == expected
        else:
            assert not isinstance(got, str), got
            assert_same_readings(got, expected)


def check_read(path) -> None:
    """``read`` (which pairs a FEATSTAT with its SCORESTAT by file name)."""
    check(lambda m, fs, v: m.read(str(path), fs, v))


def check_featstat(path, scorestat=None) -> None:
    check(lambda m, fs, v: m.read_featstat(str(path), fs, v, None if scorestat is None else str(scorestat)))


def check_scorestat(path) -> None:
    check(lambda m, fs, v: m.read_scorestat(str(path), fs, v))


def check_pair(directory: Path, featstat: str, scorestat: str) -> None:
    """A FEATSTAT/SCORESTAT pair written to ``directory``: read together, and each alone."""
    (directory / "FEATSTAT").write_text(featstat, encoding="utf-8", newline="")
    (directory / "SCORESTAT").write_text(scorestat, encoding="utf-8", newline="")
    check_read(directory / "FEATSTAT")
    check_featstat(directory / "FEATSTAT")
    check_scorestat(directory / "SCORESTAT")


def test_shared_featstat_and_scorestat(shared):
    directory = shared / "moses" / "featstat-10x100"
    check_read(directory / "FEATSTAT.txt")
    check_read(directory / "SCORESTAT.txt")
    check_featstat(directory / "FEATSTAT.txt")
    check_scorestat(directory / "SCORESTAT.txt")


def test_fixtures():
    check_read(FIXTURES / "FEATSTAT.txt")
    check_read(FIXTURES / "SCORESTAT.txt")
    check_featstat(FIXTURES / "FEATSTAT.txt")
    check_scorestat(FIXTURES / "SCORESTAT.txt")


def test_the_shared_data_read_as_worked_out_by_hand(shared):
    """Expected values from the file's text, not from either reader."""
    space, vocab = FeatureSpace(), Vocabulary()
    graphs = extractor.read(str(shared / "moses" / "featstat-10x100" / "FEATSTAT.txt"), space, vocab)
    assert len(graphs) == 10 and [g.sentence_id for g in graphs] == list(range(10))
    assert list(space)[7:9] == ["lm", "tm_0"] and list(space)[-1] == "w"
    first = graphs[0].edge_features(1)
    assert first["d_0"] == 0.0 and first["d_1"] == -3.30693 and first["lm"] == -47.2982 and first["w"] == -14.0
    assert graphs[0].edge_stats[1].tolist() == [6, 14, 1, 13, 0, 12, 0, 11, 18]
    assert graphs[0].metadata == {"stats_names": "BLEU"}


FEATS = """FEATURES_TXT_BEGIN_0 0 3 4 d_0 d_1 lm_0 w_0
0 -1 -20.5 -2
-2 -1 -21 -2 WT_a=1 x=y=3
0.125 1e-3 -1E+2 .5 WT_b=-0 WT_a=2
FEATURES_TXT_END_0

FEATURES_TXT_BEGIN_0 1 2 4 d_0 d_1 lm_0 w_0
-1 0 -9 -1 new=0.1
\u00a0 9999999999999999999 1.0000000000000002 2e-30 -3 \u00e9t\u00e9=5
FEATURES_TXT_END_0
FEATURES_TXT_BEGIN_0 2 1 3 tm_0 tm_1 lm_0
1 2 3 WT_a=4
FEATURES_TXT_END_0
"""

SCORES = """SCORES_TXT_BEGIN_0 0 3 9 BLEU
2 2 1 1 0 0 0 0 2
1 2 0 1 0 0 0 0 2
3 3 2 2 1 1 0 0 3
SCORES_TXT_END_0
SCORES_TXT_BEGIN_0 2 1 9 BLEU
1 1 1 1 1 1 1 1 1
SCORES_TXT_END_0
SCORES_TXT_BEGIN_0 1 2 9 BLEU
0 1 0 0 0 0 0 0 4
5 5 4 4 3 3 2 2 5.5
SCORES_TXT_END_0
"""


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("", ""),
        # numbers only float() / int() read
        ("-20.5", "1_000.5"),
        ("-20.5", "\u0661\u0662"),
        ("-20.5", " -inf"),
        ("-20.5", "nan"),
        ("-20.5", "1e999"),
        ("-20.5", "x"),
        ("-20.5", "."),
        ("WT_a=1", "WT_a="),
        ("WT_a=1", "WT_a=nan"),
        ("WT_a=1", "WT_a=1e400"),
        ("WT_a=1", "=1"),
        ("WT_a=1", "WT_a"),
        ("WT_a=1", "a:b=1=2"),
        ("-2 WT_a=1", "WT_a=1 -2"),
        ("-2 WT_a=1", "-2=1"),
        ("0 -1 -20.5 -2", "0 -1 -20.5"),
        ("0 -1 -20.5 -2", "0 -1 -20.5 -2 5"),
        ("0 -1 -20.5 -2", "x -1 -20.5 -2="),
        # headers
        ("BEGIN_0 0 3 4", "BEGIN_0 +0 3 4"),
        ("BEGIN_0 0 3 4", "BEGIN_0 -0 3 4"),
        ("BEGIN_0 0 3 4", "BEGIN_0 -1 3 4"),
        ("BEGIN_0 0 3 4", "BEGIN_0 x 3 4"),
        ("BEGIN_0 0 3 4", "BEGIN_0 0_0 3 4"),
        ("BEGIN_0 0 3 4", "BEGIN_0 \u0660 3 4"),
        ("BEGIN_0 0 3 4", "BEGIN_0 123456789012345678901234567890 3 4"),
        ("BEGIN_0 0 3 4", "BEGIN_0 0 0 4"),
        ("BEGIN_0 0 3 4", "BEGIN_0 0 123456789012345678901234567890 4"),
        ("BEGIN_0 0 3 4", "BEGIN_0 0 3 5"),
        ("BEGIN_0 0 3 4", "BEGIN_0 0 3 -4"),
        ("BEGIN_0 0 3 4", "BEGIN_0 0 3 4.0"),
        ("BEGIN_0 0 3 4 d_0 d_1 lm_0 w_0", "BEGIN_0 0 3"),
        ("BEGIN_0 0 3 4 d_0 d_1 lm_0 w_0", "BEGIN_0"),
        ("FEATURES_TXT_BEGIN_0 0", "SCORES_TXT_BEGIN_0 0"),
        ("FEATURES_TXT_BEGIN_0 0", "FEATURES_TXT_BEGIN_ 0"),
        ("FEATURES_TXT_BEGIN_0 0", "FEATURES_TXT_BEGIN_x 0"),
        ("FEATURES_TXT_BEGIN_0 0", "FEATURES_TXT_BEGIN_\u0663 0"),
        ("FEATURES_TXT_BEGIN_0 0", "FEATURES_TXT_BEGIN_\u00e9 0"),
        ("FEATURES_TXT_BEGIN_0 0", "  FEATURES_TXT_BEGIN_007 0"),
        ("FEATURES_TXT_BEGIN_0 0", "FEATURES_TXT_BEGIN_0\u2003 0"),
        ("FEATURES_TXT_BEGIN_0 0 3 4 d_0 d_1 lm_0 w_0", "FEATURES_TXT_BEGIN_0 0 3 4 a_0 a_1 b_0 b_0"),
        ("FEATURES_TXT_BEGIN_0 2 1 3 tm_0 tm_1 lm_0", "FEATURES_TXT_BEGIN_0 2 1 3 tm_0 WT_a lm_1"),
        ("FEATURES_TXT_BEGIN_0 2 1 3 tm_0 tm_1 lm_0\n1 2 3", "FEATURES_TXT_BEGIN_0 2 1 0\n"),
        ("FEATURES_TXT_BEGIN_0 2 1 3 tm_0 tm_1 lm_0\n1 2 3 WT_a=4", "FEATURES_TXT_BEGIN_0 2 1 0\n"),
        ("0 -1 -20.5 -2\n", "junk here\n"),
        # counts and ends
        ("0.125 1e-3 -1E+2 .5 WT_b=-0 WT_a=2\n", ""),
        ("0.125 1e-3 -1E+2 .5 WT_b=-0 WT_a=2\n", "\n"),
        ("0.125 1e-3 -1E+2 .5 WT_b=-0 WT_a=2\n", "FEATURES_TXT_BEGIN_0 9 1 0\n"),
        ("0.125 1e-3 -1E+2 .5 WT_b=-0 WT_a=2\n", "SCORES_TXT_BEGIN_\u0662\n"),
        ("0.125 1e-3 -1E+2 .5 WT_b=-0 WT_a=2\n", "1 2 3 4 x_TXT_END_y=1\n"),
        ("FEATURES_TXT_END_0\n\nFEATURES_TXT_BEGIN_0 1", "\nFEATURES_TXT_BEGIN_0 1"),
        ("FEATURES_TXT_END_0\n\nFEATURES_TXT_BEGIN_0 1", "FEATURES_TXT_END_1\n\nFEATURES_TXT_BEGIN_0 1"),
        ("FEATURES_TXT_END_0\n\nFEATURES_TXT_BEGIN_0 1", "FEATURES_TXT_END_0 x\n\nFEATURES_TXT_BEGIN_0 1"),
        ("FEATURES_TXT_END_0\n\nFEATURES_TXT_BEGIN_0 1", "  FEATURES_TXT_END_0\t\nFEATURES_TXT_BEGIN_0 1"),
        ("FEATURES_TXT_END_0\n\nFEATURES_TXT_BEGIN_0 1", "1 2 3 4\nFEATURES_TXT_END_0\nFEATURES_TXT_BEGIN_0 1"),
        ("FEATURES_TXT_END_0\n\nFEATURES_TXT_BEGIN_0 1", "SCORES_TXT_END_0\nFEATURES_TXT_BEGIN_0 1"),
        ("FEATURES_TXT_BEGIN_0 1 2", "FEATURES_TXT_BEGIN_0 0 2"),
        ("FEATURES_TXT_BEGIN_0 1 2 4", "FEATURES_TXT_BEGIN_0 1 1 4"),
        ("FEATURES_TXT_BEGIN_0 2 1 3", "FEATURES_TXT_BEGIN_0 7 1 3"),
        ("FEATURES_TXT_END_0\n", "FEATURES_TXT_END_0"),
        ("1 2 3 WT_a=4\nFEATURES_TXT_END_0\n", "1 2 3 WT_a=4\n"),
        ("1 2 3 WT_a=4\nFEATURES_TXT_END_0\n", "1 2 3 WT_a=4"),
        ("1 2 3 WT_a=4\nFEATURES_TXT_END_0\n", ""),
        ("1 2 3 WT_a=4\nFEATURES_TXT_END_0\n", "1 2 3 WT_a=4\nFEATURES_TXT_END_0\njunk\n"),
        ("1 2 3 WT_a=4\nFEATURES_TXT_END_0\n", "1 2 3 WT_a=4\nFEATURES_TXT_END_0\nFEATURES_TXT_BEGIN_0 1 1 0\n"),
    ],
)
def test_featstat_edge_cases_and_errors(tmp_path, old, new):
    check_pair(tmp_path, FEATS.replace(old, new, 1), SCORES)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("", ""),
        ("2 2 1 1 0 0 0 0 2", "2 2 1 1 0 0 0 0"),
        ("2 2 1 1 0 0 0 0 2", "2 2 1 1 0 0 0 0 2 3"),
        ("2 2 1 1 0 0 0 0 2", "2 2 1 1 0 0 0 0 a=2"),
        ("2 2 1 1 0 0 0 0 2", "2 2 1 1 0 0 0 0 1e400"),
        ("2 2 1 1 0 0 0 0 2", "2 2 1 1 0 0 0 0 0x10"),
        ("2 2 1 1 0 0 0 0 2", "2 2 1 1 0 0 0 0 12345678901234567890.5"),
        ("BEGIN_0 0 3 9 BLEU", "BEGIN_0 0 3 9"),
        ("BEGIN_0 0 3 9 BLEU", "BEGIN_0 0 3 9 BLEU  and  more"),
        ("BEGIN_0 0 3 9 BLEU", "BEGIN_0 0 2 9 BLEU"),
        ("BEGIN_0 0 3 9 BLEU", "BEGIN_0 0 3 99999999999999999999999 BLEU"),
        ("BEGIN_0 0 3 9 BLEU", "BEGIN_0 0 99999999999999999999999 9 BLEU"),
        ("BEGIN_0 2 1 9 BLEU", "BEGIN_0 0 1 9 BLEU"),
        ("BEGIN_0 2 1 9 BLEU", "BEGIN_0 3 1 9 BLEU"),
        ("BEGIN_0 2 1 9 BLEU", "BEGIN_0 2 1 9 TER"),
        ("SCORES_TXT_BEGIN_0 2 1 9 BLEU\n1 1 1 1 1 1 1 1 1", "SCORES_TXT_BEGIN_0 2 1 2 X\n1 1"),
        ("SCORES_TXT_BEGIN_0 2 1 9 BLEU\n1 1 1 1 1 1 1 1 1", "SCORES_TXT_BEGIN_0 2 1 0 X\n"),
        ("SCORES_TXT_BEGIN_0 0 3 9 BLEU", "FEATURES_TXT_BEGIN_0 0 3 9 BLEU"),
        ("SCORES_TXT_END_0\n", "SCORES_TXT_END_00\n"),
        ("SCORES_TXT_END_0\n", ""),
    ],
)
def test_scorestat_edge_cases_and_errors(tmp_path, old, new):
    check_pair(tmp_path, FEATS, SCORES.replace(old, new, 1))


def test_blocks_with_different_columns_and_metrics(tmp_path):
    scores = SCORES.replace("SCORES_TXT_BEGIN_0 2 1 9 BLEU\n1 1 1 1 1 1 1 1 1", "SCORES_TXT_BEGIN_0 2 1 2 TER x\n1 2")
    check_pair(tmp_path, FEATS, scores)
    scores = SCORES.replace("SCORES_TXT_BEGIN_0 2 1 9 BLEU\n1 1 1 1 1 1 1 1 1", "SCORES_TXT_BEGIN_0 2 1 0 X\n  ")
    check_pair(tmp_path, FEATS, scores.replace("  ", "", 1))


def test_a_sentence_id_beyond_int64(tmp_path):
    big = 123456789012345678901234567890
    feats = FEATS.replace("FEATURES_TXT_BEGIN_0 1 2", f"FEATURES_TXT_BEGIN_0 {big} 2")
    check_pair(tmp_path, feats, SCORES.replace("SCORES_TXT_BEGIN_0 1 2", f"SCORES_TXT_BEGIN_0 {big} 2"))
    graphs = extractor.read(str(tmp_path / "FEATSTAT"), FeatureSpace(), Vocabulary())
    assert graphs[1].sentence_id == big


@pytest.mark.parametrize(
    ("feats", "scores"),
    [
        ("", ""),
        ("\n \n\n", SCORES),
        (FEATS, ""),
        (FEATS.replace("\n", "\r\n"), SCORES.replace("\n", "\r")),
        (FEATS.rstrip("\n"), SCORES.rstrip("\n")),
        ("\n\n" + FEATS + "\n\n", "\n" + SCORES),
        (FEATS.replace(" ", "\t\u3000 "), SCORES.replace(" ", "\x1f")),
        ("FEATURES_TXT_BEGIN_0 0 1 0\n", "SCORES_TXT_BEGIN_0 0 1 0 X\n"),
        ("FEATURES_TXT_BEGIN_0 0 1 0", "SCORES_TXT_BEGIN_0 0 1 0 X"),
        ("FEATURES_TXT_BEGIN_0 0 1 0\n\nFEATURES_TXT_END_0\n", "SCORES_TXT_BEGIN_0 0 1 1 X\n1"),
        ("FEATURES_TXT_BEGIN_0 0 1 0\na=1\nFEATURES_TXT_END_0", "SCORES_TXT_BEGIN_0 0 1 0 X\n\nSCORES_TXT_END_0"),
        ("FEATURES_TXT_BEGIN_0 0 1 0\na=1\nFEATURES_TXT_END_0", "SCORES_TXT_BEGIN_0 0 1 0 X\n \nSCORES_TXT_END_0"),
        ("FEATURES_TXT_BEGIN_\u0661 0 1 1 a\n1\nFEATURES_TXT_END_\u0661\n", "SCORES_TXT_BEGIN_\u0661 0 1 1 X\n1\n"),
    ],
)
def test_whole_file_edge_cases(tmp_path, feats, scores):
    check_pair(tmp_path, feats, scores)


def test_features_that_add_up_to_infinity(tmp_path):
    """A name twice on a line adds up; a sum that overflows was a GraphError without a line in the old
    reader ('edge 1: feature values must be finite ...'); it is now an InputError at the hypothesis's line."""
    path = tmp_path / "FEATSTAT"
    path.write_text("FEATURES_TXT_BEGIN_0 0 1 0\na=1 a=2 b=1e308 b=1e308\nFEATURES_TXT_END_0\n", encoding="utf-8")
    with pytest.raises(GraphError, match="feature values must be finite"):
        reference.read_featstat(str(path), FeatureSpace(), Vocabulary())
    with pytest.raises(InputError, match="feature values must be finite") as info:
        extractor.read_featstat(str(path), FeatureSpace(), Vocabulary())
    assert info.value.path == str(path) and info.value.line == 2
    path.write_text("FEATURES_TXT_BEGIN_0 0 1 0\na=1 a=2 b=1e308 b=-1e308\nFEATURES_TXT_END_0\n", encoding="utf-8")
    check_featstat(path)


def test_missing_scorestat_rows_of_the_pairing(tmp_path):
    """Errors the pairing finds after both files were read: rows missing, rows to spare, the order of
    blocks not the same in both files."""
    missing = "SCORES_TXT_BEGIN_0 2 1 9 BLEU\n1 1 1 1 1 1 1 1 1\nSCORES_TXT_END_0\n"
    check_pair(tmp_path, FEATS, SCORES.replace(missing, ""))
    extra = "SCORES_TXT_BEGIN_0 9 1 1 X\n1\nSCORES_TXT_END_0\nSCORES_TXT_BEGIN_0 4 1 1 X\n1\nSCORES_TXT_END_0\n"
    check_pair(tmp_path, FEATS, SCORES + extra)
    check_featstat(tmp_path / "FEATSTAT", tmp_path / "SCORESTAT")


def test_errors_in_order_of_the_file(tmp_path):
    """Of several problems the one a line-by-line reading meets first is reported: a block-level check
    (repeated sentence) before a bad number of a later block, a bad value before a bad field on its line."""
    feats = FEATS.replace("FEATURES_TXT_BEGIN_0 1 2", "FEATURES_TXT_BEGIN_0 0 2").replace("-3 ", "x ")
    check_pair(tmp_path, feats, SCORES)
    check_pair(tmp_path, FEATS.replace("-2 WT_a=1 x=y=3", "nan WT_a=1 =3"), SCORES)
    check_pair(tmp_path, FEATS.replace("-2 WT_a=1 x=y=3", "nan WT_a=1 3"), SCORES)
    check_pair(tmp_path, FEATS.replace("0 -1 -20.5 -2", "nan -1 -20.5 -2=1"), SCORES)
    check_pair(tmp_path, FEATS.replace("-1 0 -9 -1 new=0.1", "-1 0 -9 nan new=0.1\nFEATURES_TXT_END_0"), SCORES)


def generated(rng, sentences: int, hypotheses: int, names: int) -> tuple[str, str]:
    """A FEATSTAT/SCORESTAT pair as Moses's extractor writes it: 14 dense columns with values of every kind
    (integers, six-digit decimals, zeros, a few exponents and values with more digits than the exact
    path takes), a few sparse features drawn from ``names``."""
    dense = "d_0 d_1 d_2 d_3 d_4 d_5 d_6 lm_0 tm_0 tm_1 tm_2 tm_3 tm_4 w_0"
    feats, scores = [], []
    for sid in rng.permutation(sentences):
        count = int(rng.integers(1, hypotheses + 1))
        feats.append(f"FEATURES_TXT_BEGIN_0 {sid} {count} 14 {dense}")
        scores.append(f"SCORES_TXT_BEGIN_0 {sid} {count} 9 BLEU")
        for _ in range(count):
            values = rng.normal(scale=30, size=14)
            text = [f"{v:.6g}" for v in values]
            text[2] = "0"
            text[13] = str(int(values[13]))
            if rng.random() < 0.1:
                text[5] = f"{values[5]:.17g}"
            if rng.random() < 0.1:
                text[6] = f"{values[6] * 1e-30:.4e}"
            sparse = [f"s{int(k)}_x={rng.normal():.4g}" for k in rng.integers(0, names, size=int(rng.integers(0, 4)))]
            feats.append(" ".join(text + sparse) + " ")
            matches = rng.integers(0, 20, size=4)
            stats = [f"{int(m)} {int(m) + int(rng.integers(0, 5))}" for m in matches]
            scores.append(" ".join(stats) + f" {int(rng.integers(10, 40))} ")
        feats.append("FEATURES_TXT_END_0")
        scores.append("SCORES_TXT_END_0")
    return "\n".join(feats) + "\n", "\n".join(scores) + "\n"


def test_generated_corpus(tmp_path):
    feats, scores = generated(np.random.default_rng(5), 60, 40, 50)
    (tmp_path / "features.gz").write_bytes(gzip.compress(feats.encode()))
    (tmp_path / "scores.gz").write_bytes(gzip.compress(scores.encode()))
    check_read(tmp_path / "features.gz")
    check_featstat(tmp_path / "features.gz")
    check_scorestat(tmp_path / "scores.gz")


def test_more_distinct_sparse_names_than_the_first_table_holds(tmp_path):
    """The compiled scan starts with room for 256 sparse names (and 64 header texts) and scans again with
    more when a file has more."""
    lines = []
    for sid in range(100):
        lines.append(f"FEATURES_TXT_BEGIN_0 {sid} 3 {sid % 3} {' '.join(f'h{sid}_{k}' for k in range(sid % 3))}")
        lines += [" ".join(["1"] * (sid % 3) + [f"n{sid}_{r}_{k}=1" for k in range(5)]) for r in range(3)]
        lines.append("FEATURES_TXT_END_0")
    path = tmp_path / "many"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    check_featstat(path)
    space = FeatureSpace()
    extractor.read_featstat(str(path), space, Vocabulary())
    assert len(space) == 100 * 3 * 5 + sum(sid % 3 for sid in range(100))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(corruptions(FEATS))
def test_corrupted_featstat_equals_the_reference(corrupted):
    with tempfile.TemporaryDirectory() as directory:
        check_pair(Path(directory), corrupted, SCORES)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(corruptions(SCORES))
def test_corrupted_scorestat_equals_the_reference(corrupted):
    with tempfile.TemporaryDirectory() as directory:
        check_pair(Path(directory), FEATS, corrupted)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(corruptions((FIXTURES / "FEATSTAT.txt").read_text(encoding="utf-8")))
def test_corrupted_fixture_equals_the_reference(corrupted):
    with tempfile.TemporaryDirectory() as directory:
        check_pair(Path(directory), corrupted, (FIXTURES / "SCORESTAT.txt").read_text(encoding="utf-8"))
