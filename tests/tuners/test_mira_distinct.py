"""Batch MIRA's preparation kernels against hand-worked values: the repeated rows of a sentence
(``_first_equal``: -0.0 and +0.0 equal, hashed the same without copying the statistics), the distinct values of
each column (``_distinct_values``), the model-best statistics one sentence at a time (``_kbest_model_stats``) and
the index arrays' type (``_index_array``)."""

from __future__ import annotations

import numpy as np
import pytest

from hypertune.tuners.mira import (
    KbestPack,
    KbestRows,
    ScoredRows,
    _bits,
    _distinct_values,
    _first_equal,
    _index_array,
    _kbest_model_stats,
)

EMPTY = np.zeros(0, np.int64)
# sentence 0: rows 0-3, sentence 1: rows 4-5; row 1 is row 0 with -0.0, row 3 row 0 again; row 5 is row 4
OFFSETS = np.array([0, 4, 6], dtype=np.int64)
STATS = np.array([[1.0, 0.0], [1.0, -0.0], [2.0, 0.0], [1.0, 0.0], [1.0, -0.0], [1.0, 0.0]])


def _search(data, stats, with_features, indptr=EMPTY, indices=EMPTY, bits=None):
    group = _index_array(stats.shape[0])
    bits = (_bits(stats), _bits(data)) if bits is None else bits
    keep = _first_equal(OFFSETS, indptr, indices, data, stats, *bits, with_features, group)
    return keep.tolist(), group.tolist()


def test_negative_zero_statistics_are_the_same_row():
    """Rows 0, 1, 3 are one row of sentence 0 (0.0 and -0.0 equal), row 2 another; rows 4 and 5 one row of
    sentence 1, a row of its own though equal to row 0 (rows repeat within a sentence only)."""
    assert _search(np.zeros(0), STATS, False) == ([0, 2, 4], [0, 0, 1, 0, 2, 2])
    zero_bits = (np.zeros((6, 2), np.uint64), np.zeros(0, np.uint64))  # every row's hash the same: compared
    assert _search(np.zeros(0), STATS, False, bits=zero_bits) == ([0, 2, 4], [0, 0, 1, 0, 2, 2])


def test_negative_zero_features_dense_and_sparse():
    """With features: row 3's second feature 1.0 makes it a row of its own; row 1's -0.0 feature equals row 0's
    0.0 (dense rows), as an explicit -0.0 or 0.0 entry equals no entry (CSR)."""
    dense = np.array([[0.5, 0.0], [0.5, -0.0], [0.5, 0.0], [0.5, 1.0], [-0.0, 2.0], [0.0, 2.0]])
    expected = ([0, 2, 3, 4], [0, 0, 1, 2, 3, 3])
    assert _search(dense.reshape(-1), STATS, True) == expected
    # CSR: row 0 stores (0: 0.5), row 1 (0: 0.5, 1: -0.0), row 2 (0: 0.5, 1: 0.0), row 3 (0: 0.5, 1: 1.0),
    # row 4 (0: -0.0, 1: 2.0), row 5 (1: 2.0)
    indptr = np.array([0, 1, 3, 5, 7, 9, 10], dtype=np.int64)
    indices = np.array([0, 0, 1, 0, 1, 0, 1, 0, 1, 1], dtype=np.int64)
    data = np.array([0.5, 0.5, -0.0, 0.5, 0.0, 0.5, 1.0, -0.0, 2.0, 2.0])
    assert _search(data, STATS, True, indptr, indices) == expected


def test_dense_pack_drops_repeated_rows_without_copying_when_none_repeat():
    dense = np.array([[0.5, 0.0], [0.5, -0.0], [0.5, 0.0], [0.5, 1.0], [-0.0, 2.0], [0.0, 2.0]])
    pack = KbestPack._from_dense(OFFSETS, dense, STATS)
    assert pack.offsets.tolist() == [0, 3, 4]
    np.testing.assert_array_equal(pack.dense, dense[[0, 2, 3, 4]])
    np.testing.assert_array_equal(pack.stats, STATS[[0, 2, 3, 4]])
    distinct = dense + np.arange(6)[:, None]  # no row repeats: the batch's own arrays
    pack = KbestPack._from_dense(OFFSETS, distinct, STATS)
    assert pack.dense is distinct and np.shares_memory(pack.stats, STATS)


def test_distinct_values_of_each_column_hand_worked():
    """Sentence 0 (rows 0-2) and 1 (rows 3-4): per column, the values ascending; equal values once (-0.0 ==
    0.0, the first row's kept), NaN last and each its own value."""
    nan = np.nan
    group_stats = np.array(
        [
            [2.0, -0.0, nan],
            [1.0, 0.0, 5.0],
            [2.0, 3.0, nan],
            [7.0, 1.0, 1.0],
            [7.0, 1.0, 0.5],
        ]
    )
    value_ids = _index_array(group_stats.size, group_stats.shape)
    values, columns, offsets = _distinct_values(group_stats, np.array([0, 3, 5], dtype=np.int64), value_ids)
    # sentence 0: column 0 -> 1 (v0), 2 (v1); column 1 -> -0.0 (v2, row 0's), 3 (v3); column 2 -> 5 (v4),
    # nan (v5, row 0), nan (v6, row 2); sentence 1: 7 (v7); 1 (v8); 0.5 (v9), 1 (v10)
    np.testing.assert_array_equal(values, [1.0, 2.0, -0.0, 3.0, 5.0, nan, nan, 7.0, 1.0, 0.5, 1.0])
    assert np.signbit(values[2])
    assert columns.tolist() == [0, 0, 1, 1, 2, 2, 2, 0, 1, 2, 2]
    assert offsets.tolist() == [0, 7, 11]
    assert value_ids.tolist() == [[1, 2, 5], [0, 2, 4], [1, 3, 6], [7, 8, 10], [7, 8, 9]]


@pytest.mark.parametrize("dense_rows", [True, False])
def test_model_stats_sum_each_sentences_first_highest(dense_rows):
    """w = (1, 1): sentence 0 scores 1, 2, 2 (the first 2, row 1, is its model-best), sentence 1 is empty,
    sentence 2 scores 0, -1 (row 3): statistics rows 1 + 3."""
    features = np.array([[1.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 0.0], [-1.0, 0.0]])
    stats = np.array([[0.0, 0.0], [1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [4.0, 40.0]])
    offsets = np.array([0, 3, 3, 5], dtype=np.int64)
    if dense_rows:
        rows = KbestRows(offsets, EMPTY, EMPTY, np.zeros(0), features.reshape(-1), stats)
    else:
        indptr = np.array([0, 1, 2, 3, 3, 4], dtype=np.int64)
        indices = np.array([0, 1, 0, 0], dtype=np.int64)
        rows = KbestRows(offsets, indptr, indices, np.array([1.0, 2.0, 2.0, -1.0]), np.zeros(0), stats)
    assert _kbest_model_stats(rows, np.ones(2), ScoredRows.none()).tolist() == [4.0, 40.0]
    if dense_rows:  # the scores kept for the next evaluation: a second one the same
        scored = ScoredRows.start(rows).evaluating(np.ones(2))
        assert _kbest_model_stats(rows, np.ones(2), scored).tolist() == [4.0, 40.0]
        assert scored.generation.tolist() == [0, 0, 0]
        assert _kbest_model_stats(rows, np.ones(2), scored.evaluating(np.ones(2))).tolist() == [4.0, 40.0]


def test_index_arrays_are_int32_while_the_indices_fit():
    assert _index_array(10).dtype == np.int32 and _index_array(10).shape == (10,)
    assert _index_array(6, (2, 3)).shape == (2, 3)
    assert _index_array(2**31 - 1, 0).dtype == np.int32
    assert _index_array(2**31 + 1, 0).dtype == np.int64
