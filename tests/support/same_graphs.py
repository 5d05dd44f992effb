"""One check shared by the tests of the compiled readers: two readings of a file give the same graphs,
array for array (dtypes included), with the same feature names and vocabulary in the same order."""

from __future__ import annotations

import numpy as np


def assert_same_readings(got, expected) -> None:
    """``got`` and ``expected`` are ``(graphs, feature_space, vocabulary)``."""
    (graphs, space, vocab), (graphs_ref, space_ref, vocab_ref) = got, expected
    assert list(space) == list(space_ref) and list(vocab) == list(vocab_ref)
    assert len(graphs) == len(graphs_ref)
    for a, b in zip(graphs, graphs_ref, strict=True):
        assert a.num_nodes == b.num_nodes and a.metadata == b.metadata and a.node_labels == b.node_labels
        assert a.sentence_id == b.sentence_id and type(a.sentence_id) is type(b.sentence_id)
        for name in ("head", "tail_offsets", "tails", "target_offsets", "target", "node_offsets"):
            x, y = getattr(a, name), getattr(b, name)
            assert x.dtype == y.dtype and np.array_equal(x, y), name
        assert a.features.shape == b.features.shape
        for name in ("indptr", "indices", "data"):
            assert np.array_equal(getattr(a.features, name), getattr(b.features, name)), name
        assert np.array_equal(np.signbit(a.features.data), np.signbit(b.features.data))  # -0.0 is not 0.0
        for name in ("edge_stats", "source_covered"):
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None) == (y is None), name
            if x is not None:
                assert x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y), name
