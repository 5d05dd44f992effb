"""``hypertune COMMAND --help`` loads nothing heavy (issue: start-up under 0.2 s), and the names the command
line offers (:mod:`hypertune.choices`) are exactly the ones the library implements."""

from __future__ import annotations

import json
import subprocess
import sys

from support.paths import REPO

from hypertune import choices

#: What ``--help`` must not import: the numeric stack and every library layer above ``choices``/``errors``.
HEAVY = ("numpy", "scipy", "numba", "sacrebleu", "networkx", "matplotlib", "dask", "distributed")
LIBRARY = ("algorithms", "semirings", "hypergraph", "compiled", "metrics", "formats", "tuners", "loop", "distributed")
#: The light modules of those layers that ``--help`` reads: the tuner registry and the tuners' options classes
#: (standard library, ``choices`` and ``errors`` only), from which the tuning commands' flags are generated.
LIGHT = ("hypertune.tuners", "hypertune.tuners.options", "hypertune.tuners.registry")

PROBE = """
import contextlib, io, json, sys
from hypertune.cli import COMMANDS, main
heavy, library, light = {heavy!r}, {library!r}, {light!r}
found = {{}}
for argv in [["--version"], ["--help"]] + [[name.replace("_", "-"), "--help"] for name in COMMANDS]:
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit:
            pass
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in heavy
                    or (m.startswith("hypertune.") and m.split(".")[1] in library
                        and m not in light and not m.endswith("_options")))
    if loaded:
        found[" ".join(argv)] = loaded[:5]
        break
print(json.dumps(found))
"""


def test_help_and_version_import_nothing_heavy():
    """Each command's ``--help`` in turn, in one fresh interpreter: the first one that loads numpy, scipy,
    numba or a library module (which would cost 0.5-1 s of start-up) is reported with what it loaded."""
    code = PROBE.format(heavy=HEAVY, library=LIBRARY, light=LIGHT)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == {}


def test_graph_format_names_are_the_registry():
    from hypertune.formats import FORMATS

    assert sorted(FORMATS) == sorted(choices.GRAPH_FORMATS)


def test_metric_names_are_the_metrics():
    from hypertune.metrics import METRICS, REF_LENGTHS, SMOOTHING

    assert tuple(METRICS) == choices.METRICS
    assert tuple(REF_LENGTHS) == choices.REF_LENGTHS
    assert tuple(SMOOTHING) == choices.SMOOTHING


def test_cache_environment_is_the_one_read():
    env = {choices.CACHE_ENVIRONMENT: "/some/folder"}
    code = "from hypertune.formats.input_cache import cache_folder; print(cache_folder(None))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "/some/folder"
