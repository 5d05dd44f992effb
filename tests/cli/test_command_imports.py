"""What a whole k-best tuning command imports (#33: small whole commands): ``minrisk`` and ``pro`` on an n-best
list with ``--tokenize none`` load neither sacrebleu (its ``none`` tokenizer is the line as given), nor the
edit-rate metrics and their kernels, nor graph pruning (lattices and forests only), nor start numba's threads.
Counted in ``sys.modules`` of a fresh interpreter, not timed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from support.paths import REPO

NOT_IMPORTED = (
    "sacrebleu",
    "hypertune.metrics.edit_rates",
    "hypertune.metrics._edit_kernels",
    "hypertune.tuners.pruning",
    # numba's threading layers, loaded when its threads start: BLEU's statistics of a few thousand hypotheses
    # are computed in one thread (``metrics.bleu._PARALLEL_THRESHOLD``)
    "numba.np.ufunc.omppool",
    "numba.np.ufunc.tbbpool",
    "numba.np.ufunc.workqueue",
)

PROBE = """
import contextlib, io, json, sys
from hypertune.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    main([{command!r}, 'fixtures/mert/nbest.txt', '--refs', 'fixtures/mert/ref.',
          '--init', 'fixtures/mert/init.weights', '--tokenize', 'none', '--lowercase', '--quiet'])
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'sacrebleu' or m in {names!r})))
"""


@pytest.mark.parametrize("command", ["minrisk", "pro"])
def test_kbest_tuning_imports_only_what_it_uses(command):
    code = PROBE.format(command=command, names=NOT_IMPORTED)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) == []


def test_the_probe_sees_what_a_command_imports():
    """The same probe with the 13a tokenizer and TER finds sacrebleu and the edit-rate kernels."""
    code = PROBE.format(command="minrisk", names=NOT_IMPORTED).replace("'none'", "'13a'")
    code = code.replace("'--quiet'", "'--quiet', '--metric', 'bleu:0.5,ter:-0.5'")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    found = json.loads(out.stdout.splitlines()[-1])
    assert "sacrebleu" in found and "hypertune.metrics._edit_kernels" in found
