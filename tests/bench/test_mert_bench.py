"""The MERT benchmark's line-search row searches what cdec's lo_test searches (its figures: ../shared/README.md)."""

from __future__ import annotations

import pytest

from hypertune.bench.mert import _cdec_line_search


def test_cdec_line_search_row_is_cdecs_search(shared):
    figure = _cdec_line_search(shared / "cdec" / "forests", repeat=2)
    assert "37 envelope segments" in figure.detail  # 8 + 29 lines, as lo_test's envelopes
    bleu = float(figure.detail.split("BLEU ")[1].split()[0])
    assert bleu == pytest.approx(0.48719698, rel=1e-5)
    assert figure.seconds > 0
