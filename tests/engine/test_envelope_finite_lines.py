"""An envelope of edge lines that are not finite is refused with the edge named (two infinite lines meet at a
NaN breakpoint, which the kernels' merge cannot place: before, the process crashed)."""

from __future__ import annotations

import numpy as np
import pytest

from hypertune.algorithms.envelope import envelope_by_probing, envelope_inside, packed_envelopes
from hypertune.errors import GraphError
from hypertune.hypergraph import HypergraphBuilder, PackedGraphs


def _graph():
    builder = HypergraphBuilder()
    builder.add_nodes(3)
    builder.add_edge(0, [], {}, ["a"])
    builder.add_edge(1, [0], {}, [0, "b"])
    builder.add_edge(1, [0], {}, [0, "c"])
    builder.add_edge(2, [1], {}, [0, "d"])
    return builder.build(2)


@pytest.mark.parametrize(
    ("intercepts", "slopes", "message"),
    [
        ([0.0, np.inf, np.inf, 0.0], [0.0, -1.0, 1.0, 0.0], "edge 1's line has intercept inf"),
        ([0.0, 1.0, 2.0, 0.0], [0.0, -1.0, np.nan, 0.0], "edge 2's line has slope nan"),
    ],
)
def test_lines_that_are_not_finite_are_refused(intercepts, slopes, message) -> None:
    hg = _graph()
    b, m = np.array(intercepts), np.array(slopes)
    for search in (envelope_inside, envelope_by_probing):
        with pytest.raises(GraphError, match=message):
            search(hg, b, m)
    with pytest.raises(GraphError, match=message):
        packed_envelopes(PackedGraphs.pack([hg], features=False), b, m)
