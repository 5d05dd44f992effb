"""The FEATSTAT/SCORESTAT reader's two shortcuts (issue 33): a line of plain numbers read in one pass that writes
only its values (``extractor._plain_row``), and the file's values in an array of small pages once it is large
(``extractor._small_pages``). Expected values come from the text itself: ``float()`` of each token, and the
line-by-line reference reader (``support/reference_extractor.py``) for whole readings and errors."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from support import reference_extractor as reference
from support.same_graphs import assert_same_readings

from hypertune.errors import InputError
from hypertune.formats import extractor
from hypertune.formats.kbest_batch import KbestBatch
from hypertune.symbols import FeatureSpace, Vocabulary

# lines the one-pass path reads (plain numbers: [-]digits[.digits], at most 15 digits, spaces between) and
# lines it leaves to the token-by-token path: each must give float() of its tokens all the same
PLAIN = ["0 -0 1.5", "-7.85766 0 -102.42", "  3   4.  -.5  ", "123456789012345 -0.00000000000001 9"]
OTHERS = [
    "+1 2 3",  # a plus sign
    "1e2 2 3",  # an exponent
    "1234567890123456 2 3",  # 16 digits: float() rounds it
    "0.1234567890123456 2 3",
    "1\t2 3",  # a tab
    "1 2\u00a03",  # a Unicode space
    "1 2 3\x0b",  # a vertical tab at the end
]


def block(sid: int, lines: list[str], names: str = "a_0 a_1 b_0") -> str:
    return f"FEATURES_TXT_BEGIN_0 {sid} {len(lines)} 3 {names}\n" + "\n".join(lines) + "\nFEATURES_TXT_END_0\n"


def scores(sid: int, rows: int) -> str:
    return (
        f"SCORES_TXT_BEGIN_0 {sid} {rows} 2 X\n"
        + "".join(f"{r} {rows - r}\n" for r in range(rows))
        + "SCORES_TXT_END_0\n"
    )


def as_floats(lines: list[str]) -> np.ndarray:
    return np.array([[float(t) for t in line.split()] for line in lines])


@pytest.mark.parametrize("piece", [1, 60, 1 << 20])
def test_plain_and_other_lines_give_float_of_their_text(tmp_path, piece) -> None:
    """Bit for bit, the sign of a zero included, whichever path reads a line and wherever a piece ends."""
    lines = PLAIN + OTHERS + PLAIN[::-1]
    (tmp_path / "F").write_text(block(3, lines[:7]) + block(8, lines[7:]), encoding="utf-8")
    (tmp_path / "S").write_text(scores(8, len(lines) - 7) + scores(3, 7), encoding="utf-8")
    batch = extractor.read_featstat_batch(
        str(tmp_path / "F"), FeatureSpace(), Vocabulary(), str(tmp_path / "S"), piece=piece
    )
    assert isinstance(batch, KbestBatch) and batch.dense is not None and batch.stats is not None
    expected = as_floats(lines)
    assert batch.dense.view(np.int64).tolist() == expected.view(np.int64).tolist()
    assert np.signbit(batch.dense[0]).tolist() == [False, True, False]
    assert batch.stats.tolist() == [[r, 7 - r] for r in range(7)] + [[r, 8 - r] for r in range(8)]


@pytest.mark.parametrize("piece", [1, 1 << 20])
def test_sparse_features_after_plain_lines_in_one_block(tmp_path, piece) -> None:
    """Plain lines and lines with sparse features in one block and in one piece: each value in its column
    (a plain line writes no column codes; a dense value's column is its place in its line)."""
    lines = ["1 2 3", "4 5 6 x=7", "-8 9.5 10", "11 12 13 y=14 x=15", "16 17 18"]
    text = block(0, lines) + block(1, ["1 1 1 y=2"], "c_0 b_0 d_0") + block(2, ["0 -1 2"])
    (tmp_path / "F").write_text(text, encoding="utf-8")
    space = FeatureSpace()
    graphs = extractor.read_featstat(str(tmp_path / "F"), space, Vocabulary(), piece=piece)
    assert list(space) == ["a_0", "a_1", "b", "x", "y", "c", "d"]
    rows = [g.feature_matrix().toarray()[1:] for g in graphs]  # row 0: the start axiom
    assert rows[0][:, :5].tolist() == [[1, 2, 3, 0, 0], [4, 5, 6, 7, 0], [-8, 9.5, 10, 0, 0], [11, 12, 13, 15, 14],
                                       [16, 17, 18, 0, 0]]  # fmt: skip
    assert rows[1][0, [5, 2, 6, 4]].tolist() == [1, 1, 1, 2] and rows[1][0, [0, 1, 3]].tolist() == [0, 0, 0]
    assert rows[2][0, :3].tolist() == [0, -1, 2]
    check_with_reference(tmp_path / "F", piece)


def check_with_reference(path, piece: int) -> None:
    """The reading (or its error) equals the reference reader's."""
    got, expected = [], []
    for out, read in ((got, lambda *a: extractor.read_featstat(*a, piece=piece)), (expected, reference.read_featstat)):
        space, vocab = FeatureSpace(), Vocabulary()
        try:
            out.append((read(str(path), space, vocab), space, vocab))
        except InputError as error:
            out.append(str(error))
    if isinstance(expected[0], str):
        assert got[0] == expected[0]
    else:
        assert not isinstance(got[0], str), got[0]
        assert_same_readings(got[0], expected[0])


@pytest.mark.parametrize(
    "bad",
    [
        "1 2",  # too few numbers
        "1 2 3 4",  # one too many
        "1 2 3 x",
        "1 2 x=",
        "-",
        "1 2 --3",
        "1..5 2 3",
        "1 2 3x",
        "",
        "FEATURES_TXT_END_0",
        "1 2 FEATURES_TXT_END_0",
    ],
)
def test_lines_that_are_not_plain_fail_as_before(tmp_path, bad) -> None:
    """A line the one-pass path refuses is read token by token, which gives the reference's error (or value)."""
    (tmp_path / "F").write_text(block(0, ["1 2 3", bad, "4 5 6"]), encoding="utf-8")
    for piece in (1, 1 << 20):
        check_with_reference(tmp_path / "F", piece)


def test_a_last_line_without_a_line_end(tmp_path) -> None:
    (tmp_path / "F").write_text(block(0, ["1 2 3", "4 5 6"]).rstrip("\n"), encoding="utf-8")
    check_with_reference(tmp_path / "F", 1 << 20)
    (tmp_path / "F").write_text(
        block(0, ["1 2 3", "4 5 6"]).removesuffix("FEATURES_TXT_END_0\n").rstrip(), encoding="utf-8"
    )
    check_with_reference(tmp_path / "F", 1 << 20)


def test_values_in_small_pages(tmp_path, monkeypatch) -> None:
    """With every array mapped (the threshold lowered to 64 bytes), growing included (pieces of 100 bytes,
    a gzip file whose size says nothing), the values are those of the text."""
    monkeypatch.setattr(extractor, "_MAPPED", 64)
    rng = np.random.default_rng(3)
    values = np.round(rng.normal(0, 50, (400, 3)), 4)
    text = "".join(block(s, [" ".join(map(str, row)) for row in values[20 * s : 20 * s + 20]]) for s in range(20))
    (tmp_path / "F.gz").write_bytes(gzip.compress(text.encode()))
    (tmp_path / "F").write_text(text, encoding="utf-8")
    for name in ("F", "F.gz"):
        batch = extractor.read_featstat_batch(str(tmp_path / name), FeatureSpace(), Vocabulary(), piece=100)
        assert isinstance(batch, KbestBatch) and batch.dense is not None
        assert batch.dense.tolist() == as_floats([" ".join(map(str, row)) for row in values]).tolist()
    assert extractor._small_pages(7, np.float64).base is None  # 56 bytes: numpy's own
    mapped = extractor._small_pages(16, np.int64)  # 128 bytes: a view of its mapping
    assert mapped.base is not None and mapped.dtype == np.int64 and mapped.size == 16
