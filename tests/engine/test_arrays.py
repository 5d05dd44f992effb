"""The shared array idioms (``hypertune.arrays``), on hand-worked rows."""

from __future__ import annotations

import numpy as np

from hypertune.arrays import flat_ranges, offsets_from_counts


def test_offsets_from_counts():
    assert offsets_from_counts([2, 0, 3]).tolist() == [0, 2, 2, 5]
    assert offsets_from_counts([]).tolist() == [0]
    assert offsets_from_counts(np.array([True, False, True])).tolist() == [0, 1, 1, 2]
    for counts in ([4], np.array([1, 2], dtype=np.int32), np.array([1, 2], dtype=np.uint8), np.zeros(0, np.int64)):
        assert offsets_from_counts(counts).dtype == np.int64


def test_flat_ranges():
    offsets = np.array([0, 2, 2, 5])  # rows [0, 1], [], [2, 3, 4]
    assert flat_ranges(offsets, np.array([2, 0])).tolist() == [2, 3, 4, 0, 1]
    assert flat_ranges(offsets, np.array([1, 1, 0])).tolist() == [0, 1]
    assert flat_ranges(offsets, np.array([1])).tolist() == []
    assert flat_ranges(offsets, np.array([], dtype=np.int64)).tolist() == []
