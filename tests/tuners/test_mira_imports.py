"""k-best MIRA imports no graph search: the lattice and forest searches (``hypertune.algorithms``), graph pruning
and the n-gram intersection of the exact hope/fear search are imported where a graph needs them, not by the
modules every ``mira`` run loads (about 9 ms of start-up, docs/performance.md)."""

from __future__ import annotations

import json
import subprocess
import sys

from support.paths import REPO

PROBE = """
import json, sys
import hypertune.tuners.hope_fear, hypertune.tuners.mira, hypertune.tuners.model_best
graph = ("hypertune.algorithms", "hypertune.tuners.ngram_edges", "hypertune.tuners.pruning")
print(json.dumps(sorted(m for m in sys.modules if m.startswith(graph))))
"""


def test_the_kbest_tuner_modules_import_no_graph_search():
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
