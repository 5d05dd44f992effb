"""Small array helpers shared by the engine and the readers (numpy only).

The graphs keep variable-length lists (an edge's tails, a hypothesis's words) in the compressed-row layout
of sparse matrices: one flat array of items and an offsets array whose entries ``i`` and ``i + 1`` bound
row ``i`` (Saad, *Iterative Methods for Sparse Linear Systems*, 2nd ed., 2003, section 3.4, "CSR").
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


def offsets_from_counts(counts: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The offsets of rows of the given lengths: the exclusive prefix sum of ``counts`` with a leading 0.

    ``offsets_from_counts([2, 0, 3])`` is ``[0, 2, 2, 5]``: int64, one entry longer than ``counts``,
    ``offsets[i]:offsets[i + 1]`` the slice of row ``i`` and ``offsets[-1]`` the total."""
    counts_array: np.ndarray[Any, Any] = np.asarray(counts)
    offsets = np.zeros(counts_array.size + 1, dtype=np.int64)
    np.cumsum(counts_array.reshape(-1), out=offsets[1:])
    return offsets


def flat_ranges(offsets: np.ndarray, rows: np.ndarray) -> npt.NDArray[np.int64]:
    """The indices of the concatenated slices ``offsets[r]:offsets[r + 1]`` for ``r`` in ``rows`` (in that
    order): the items of the chosen rows of a compressed-row array, gathered in one step."""
    starts = offsets[rows]
    lengths = offsets[rows + 1] - starts
    if lengths.sum() == 0:
        return np.zeros(0, dtype=np.int64)
    shifts = np.repeat(starts - offsets_from_counts(lengths)[:-1], lengths)
    return np.arange(int(lengths.sum())) + shifts
