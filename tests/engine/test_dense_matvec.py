"""The column-at-a-time product MERT's k-best line searches take w · h with (#33): the CSR product's bits."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from hypertune.compiled import csr_matvec, dense_matvec


@pytest.mark.parametrize("seed", range(4))
def test_dense_matvec_adds_each_row_in_column_order_from_zero(seed: int) -> None:
    """Rows with left-out entries, -0.0, magnitudes from 1e-12 to 1e12 (where the order of the sums shows):
    every result is the plain left-to-right sum written out here, and the CSR product's, bit for bit."""
    rng = np.random.default_rng(seed)
    rows, width = int(rng.integers(1, 60)), int(rng.integers(1, 16))
    values = rng.normal(size=(rows, width)) * 10.0 ** rng.integers(-12, 13, (rows, width))
    values[rng.random((rows, width)) < 0.3] = 0.0
    values[rng.random((rows, width)) < 0.05] = -0.0
    vector = rng.normal(size=width) * 10.0 ** rng.integers(-6, 7, width)
    vector[rng.random(width) < 0.2] = 0.0
    expected = np.empty(rows)
    for i in range(rows):
        total = 0.0
        for j in range(width):
            if values[i, j] != 0.0:  # what a CSR row stores
                total += float(values[i, j]) * float(vector[j])
        expected[i] = total
    csr = sp.csr_matrix(values)
    got = dense_matvec(np.asfortranarray(values), vector)
    assert got.tobytes() == expected.tobytes()
    assert csr_matvec(csr.indptr, csr.indices, csr.data, vector).tobytes() == expected.tobytes()
    assert (csr @ vector).tobytes() == expected.tobytes()  # what the model-best rows were scored with before
