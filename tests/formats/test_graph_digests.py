"""Every reader's graphs by value against the readers of commit bd44928 (issue #29's regression check).

Each data file of ``fixtures/`` and ``../shared/data`` is read through :func:`hypertune.formats.read_graphs`
and each graph's by-value digest (:mod:`support.graph_digest`) compared with the one recorded from the
readers as they were before the issue's refactors (``support/graph_digests.json``); files that were refused
then (references, weights) must still be refused with the same error class. Files of ``../shared/data``
skip when it is absent.
"""

from __future__ import annotations

import json

import pytest
from support.graph_digest import RECORDED, file_entry
from support.paths import FIXTURES, SHARED

RECORD: dict[str, dict] = json.loads(RECORDED.read_text())


def path_of(name: str):
    root, _, relative = name.partition("/")
    return (FIXTURES if root == "fixtures" else SHARED) / relative


@pytest.mark.parametrize("name", sorted(RECORD))
def test_each_file_reads_as_the_recorded_graphs(name: str) -> None:
    if name.startswith("shared/") and not SHARED.is_dir():
        pytest.skip("../shared/data is absent")
    path = path_of(name)
    assert path.is_file(), f"{name} was recorded but is gone"
    assert file_entry(path) == RECORD[name]


def test_the_record_covers_both_roots() -> None:
    """The record was made with ``../shared/data`` present, so its graph files are checked where it is."""
    roots = {name.partition("/")[0] for name, entry in RECORD.items() if "graphs" in entry}
    assert roots == {"fixtures", "shared"}
    assert sum(len(entry.get("graphs", ())) for entry in RECORD.values()) > 300
