"""FEATSTAT/SCORESTAT files read in pieces (issue 33): the text is never whole in memory, each piece ends with
a block, and what is read (arrays, graphs, errors with their lines) is what the files say, worked out by hand
below, wherever the reads of a given size happen to stop: inside a list, on a line's end, at a block's end."""

from __future__ import annotations

import gzip

import pytest

from hypertune.errors import InputError
from hypertune.formats.extractor import _pieces, read_featstat, read_featstat_batch, read_scorestat
from hypertune.formats.kbest_batch import KbestBatch
from hypertune.symbols import FeatureSpace, Vocabulary

# bytes 0-69: sentence 4; 69-132: sentence 5; 132-133: a blank line; 133-204: sentence 6 (lines 9-13)
FEATS = (
    "FEATURES_TXT_BEGIN_0 4 2 2 lm_0 w_0\n-1.5 -3\n-2 -4\nFEATURES_TXT_END_0\n"
    "FEATURES_TXT_BEGIN_0 5 1 2 lm_0 w_0\n0.25 -1\nFEATURES_TXT_END_0\n"
    "\n"
    "FEATURES_TXT_BEGIN_0 6 3 2 lm_0 w_0\n7 8\n-7 -8\n1e2 0\nFEATURES_TXT_END_0\n"
)
DENSE = [[-1.5, -3], [-2, -4], [0.25, -1], [7, 8], [-7, -8], [100, 0]]
# the statistics in another order of sentences than the features (paired by sentence id)
SCORES = (
    "SCORES_TXT_BEGIN_0 6 3 2 X\n1 2\n3 4\n5 6\nSCORES_TXT_END_0\n"
    "SCORES_TXT_BEGIN_0 4 2 2 X\n7 8\n9 10\nSCORES_TXT_END_0\n"
    "SCORES_TXT_BEGIN_0 5 1 2 X\n11 12\nSCORES_TXT_END_0\n"
)
STATS = [[7, 8], [9, 10], [11, 12], [1, 2], [3, 4], [5, 6]]  # sentences 4, 5, 6 as the features have them

# read sizes: the first read stops inside sentence 4's list (byte 40), on a line's end (50), at its block's end (69)
SIZES = (40, 50, 69)


def write(tmp_path, feats: str = FEATS, scores: str | None = SCORES) -> tuple[str, str | None]:
    (tmp_path / "FEATSTAT").write_bytes(feats.encode())
    if scores is not None:
        (tmp_path / "SCORESTAT").write_bytes(scores.encode())
    return str(tmp_path / "FEATSTAT"), None if scores is None else str(tmp_path / "SCORESTAT")


@pytest.mark.parametrize(
    ("size", "cuts"),
    [
        (40, [69, 132, 204]),  # 40 bytes: no block ends, 120: sentence 4 does; then 91 bytes from 69, ...
        (50, [132, 204]),  # 50 bytes end on a line; 150 bytes hold sentences 4 and 5
        (69, [69, 132, 204]),  # the first read is sentence 4 exactly
        (1, [69, 132, 204]),
        (10_000, [204]),
    ],
)
def test_pieces_are_whole_blocks(tmp_path, size, cuts) -> None:
    path, _ = write(tmp_path)
    pieces = [bytes(piece) for piece, _, _ in _pieces(path, "FEATURES", size)]
    ends = [sum(len(p) for p in pieces[: k + 1]) for k in range(len(pieces))]
    assert ends == cuts
    assert b"".join(pieces) == FEATS.encode()


def test_a_piece_holds_about_its_size_and_one_block(tmp_path) -> None:
    """200 blocks of 69 bytes read 100 bytes at a time: no piece beyond the 100 bytes and the block they end in."""
    block = "FEATURES_TXT_BEGIN_0 {} 2 2 lm_0 w_0\n-1.5 -3\n-2 -4\nFEATURES_TXT_END_0\n"
    path = tmp_path / "FEATSTAT"
    path.write_text("".join(block.format(s % 10) for s in range(200)))
    pieces = [len(piece) for piece, _, _ in _pieces(str(path), "FEATURES", 100)]
    assert max(pieces) <= 100 + 69 and sum(pieces) == 200 * 69


@pytest.mark.parametrize("size", SIZES)
def test_a_dense_file_in_pieces_is_one_batch_of_its_numbers(tmp_path, size) -> None:
    feats, scores = write(tmp_path)
    batch = read_featstat_batch(feats, FeatureSpace(), Vocabulary(), scores, piece=size)
    assert isinstance(batch, KbestBatch)
    assert batch.list_offsets.tolist() == [0, 2, 3, 6]
    assert batch.sentence_ids == [4, 5, 6]
    assert batch.dense is not None and batch.dense.tolist() == DENSE
    assert batch.stats is not None and batch.stats.tolist() == STATS
    assert list(batch.feature_space.names) == ["lm", "w"]
    assert batch.metadata == [{"stats_names": "X"}] * 3


@pytest.mark.parametrize("size", SIZES)
def test_statistics_in_the_features_order_and_alone(tmp_path, size) -> None:
    in_order = SCORES[SCORES.index("SCORES_TXT_BEGIN_0 4") :] + SCORES[: SCORES.index("SCORES_TXT_BEGIN_0 4")]
    feats, scores = write(tmp_path, scores=in_order)
    batch = read_featstat_batch(feats, FeatureSpace(), Vocabulary(), scores, piece=size)
    assert isinstance(batch, KbestBatch) and batch.stats is not None and batch.stats.tolist() == STATS
    graphs = read_scorestat(str(scores), FeatureSpace(), Vocabulary(), piece=size)
    assert [g.sentence_id for g in graphs] == [4, 5, 6]
    assert [g.edge_stats[1:].tolist() for g in graphs] == [STATS[:2], STATS[2:3], STATS[3:]]


@pytest.mark.parametrize("size", SIZES)
def test_line_ends_and_compression_in_pieces(tmp_path, size) -> None:
    (tmp_path / "FEATSTAT.gz").write_bytes(gzip.compress(FEATS.replace("\n", "\r\n").encode()))
    (tmp_path / "SCORESTAT").write_bytes(SCORES.replace("\n", "\r").encode())
    batch = read_featstat_batch(
        str(tmp_path / "FEATSTAT.gz"), FeatureSpace(), Vocabulary(), str(tmp_path / "SCORESTAT"), piece=size
    )
    assert isinstance(batch, KbestBatch) and batch.dense is not None and batch.stats is not None
    assert batch.dense.tolist() == DENSE and batch.stats.tolist() == STATS


@pytest.mark.parametrize("size", SIZES)
def test_a_sparse_feature_in_a_later_piece(tmp_path, size) -> None:
    """Sentence 6 (the last piece) has a sparse feature: the file is read as graphs, the features of the
    earlier, dense sentences in the columns their names have."""
    feats, scores = write(tmp_path, FEATS.replace("7 8\n", "7 8 x=1.5\n"))
    read = read_featstat_batch(feats, FeatureSpace(), Vocabulary(), scores, piece=size)
    assert not isinstance(read, KbestBatch)
    space = FeatureSpace()
    graphs = read_featstat(feats, space, Vocabulary(), scores, piece=size)
    assert list(space.names) == ["lm", "w", "x"]
    assert [g.features.shape[1] for g in graphs] == [2, 2, 3]  # the space's size once each list was read
    assert graphs[0].edge_features(2) == {"lm": -2.0, "w": -4.0}
    assert graphs[2].edge_features(1) == {"lm": 7.0, "w": 8.0, "x": 1.5}
    assert graphs[2].edge_features(2) == {"lm": -7.0, "w": -8.0}
    assert graphs[2].edge_stats[1:].tolist() == STATS[3:]


@pytest.mark.parametrize("size", SIZES)
def test_other_names_in_a_later_piece(tmp_path, size) -> None:
    feats, _ = write(
        tmp_path, FEATS.replace("FEATURES_TXT_BEGIN_0 6 3 2 lm_0 w_0", "FEATURES_TXT_BEGIN_0 6 3 2 tm_0 w_0")
    )
    space = FeatureSpace()
    graphs = read_featstat(feats, space, Vocabulary(), piece=size)
    assert list(space.names) == ["lm", "w", "tm"]
    assert graphs[1].edge_features(1) == {"lm": 0.25, "w": -1.0}
    assert graphs[2].edge_features(3) == {"tm": 100.0, "w": 0.0}


def error(call) -> tuple[str | None, int | None, str]:
    with pytest.raises(InputError) as info:
        call()
    return info.value.path, info.value.line, info.value.reason


@pytest.mark.parametrize("size", (1, *SIZES))
def test_errors_name_the_file_and_line_of_the_whole_file(tmp_path, size) -> None:
    space, vocab = FeatureSpace(), Vocabulary()
    feats, scores = write(tmp_path, FEATS.replace("-7 -8", "-7 x"))
    assert error(lambda: read_featstat(feats, space, vocab, scores, piece=size)) == (
        feats,
        11,
        "expected a number for column 1, got 'x'",
    )
    feats, _ = write(tmp_path, FEATS[: -len("FEATURES_TXT_END_0\n")])  # the last block has no end
    assert error(lambda: read_featstat(feats, space, vocab, piece=size)) == (
        feats,
        13,
        "sentence 6: expected FEATURES_TXT_END_0 after 3 hypotheses",
    )
    feats, _ = write(tmp_path, FEATS.replace("BEGIN_0 6 3", "BEGIN_0 4 3"))
    assert error(lambda: read_featstat(feats, space, vocab, piece=size)) == (feats, 9, "sentence 4 appears twice")
    feats, scores = write(tmp_path, scores=SCORES.replace("BEGIN_0 6 3 2", "BEGIN_0 9 3 2"))
    assert error(lambda: read_featstat(feats, space, vocab, scores, piece=size)) == (
        feats,
        9,
        f"sentence 6 has no statistics in {scores}",
    )
    feats, scores = write(tmp_path, scores=SCORES + "SCORES_TXT_BEGIN_0 9 1 2 X\n1 1\nSCORES_TXT_END_0\n")
    assert error(lambda: read_featstat(feats, space, vocab, scores, piece=size)) == (
        scores,
        13,
        f"sentence 9 has statistics but no features in {feats}",
    )
    feats, _ = write(tmp_path, FEATS.replace("7 8\n", "7 8 a=1e308 a=1e308\n"))
    assert error(lambda: read_featstat(feats, space, vocab, piece=size))[:2] == (feats, 10)


@pytest.mark.parametrize("size", SIZES)
def test_a_later_byte_that_is_not_utf8_comes_first(tmp_path, size) -> None:
    """As when the whole file is read first: the bad byte of sentence 6 (byte 166) is the error, not the bad
    number of sentence 4 (line 2), which a piece before it holds."""
    (tmp_path / "FEATSTAT").write_bytes(FEATS.replace("-1.5", "y").encode().replace(b"7 8", b"\xff 8"))
    path = str(tmp_path / "FEATSTAT")
    assert error(lambda: read_featstat(path, FeatureSpace(), Vocabulary(), piece=size)) == (
        path,
        None,
        "not UTF-8 text (invalid start byte at byte 166); expected a FEATSTAT file",
    )


@pytest.mark.parametrize("size", (1, 40, 60, 10_000))
def test_blocks_ending_in_a_lone_carriage_return(tmp_path, size) -> None:
    # read_bytes takes a lone '\r' for a line end: sentence 4's END line ends in one, sentence 5's lines mix both
    text = (
        "FEATURES_TXT_BEGIN_0 4 2 2 lm_0 w_0\n-1.5 -3\n-2 -4\nFEATURES_TXT_END_0\r"
        "FEATURES_TXT_BEGIN_0 5 1 2 lm_0 w_0\r0.25 -1\nFEATURES_TXT_END_0\n"
    )
    path, _ = write(tmp_path, text, None)
    graphs = read_featstat(path, FeatureSpace(), Vocabulary(), piece=size)
    assert [g.sentence_id for g in graphs] == [4, 5]
    assert [g.features.toarray()[1:].tolist() for g in graphs] == [[[-1.5, -3], [-2, -4]], [[0.25, -1]]]


def test_a_file_of_carriage_returns_is_still_read_in_pieces(tmp_path) -> None:
    path, _ = write(tmp_path, FEATS.replace("\n", "\r"), None)
    pieces = [bytes(piece) for piece, _, _ in _pieces(path, "FEATURES", 40)]
    assert len(pieces) == 3  # one piece per block (the blank line rides with sentence 6), not the whole file at once
    assert b"".join(pieces) == FEATS.encode()


def test_a_piece_of_no_bytes_is_refused(tmp_path) -> None:
    path, _ = write(tmp_path)
    with pytest.raises(ValueError, match="a piece must be at least 1 byte, got 0"):
        list(_pieces(path, "FEATURES", 0))
