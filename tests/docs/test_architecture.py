"""Dependencies point one way (docs/architecture.md): the engine knows nothing of metrics, formats, tuners or
the command line; metrics and formats know nothing of tuners; nothing but the ``bench`` command imports the
benchmarks. Checked over every import in the source, function-level ones included, by reading the code."""

from __future__ import annotations

import ast
from pathlib import Path

from support.paths import REPO

PACKAGE = REPO / "hypertune"

#: Layers from the bottom; a module may import its own layer and the ones below, never one above.
LAYERS = [
    ("choices", ["hypertune.choices"]),
    ("engine", ["hypertune.errors", "hypertune.interrupts", "hypertune.process_environment",
                "hypertune.symbols", "hypertune.arrays",
                "hypertune.compiled", "hypertune.numba_cache", "hypertune.weights", "hypertune.hypergraph",
                "hypertune.semirings", "hypertune.algorithms", "hypertune.generate"]),
    ("metrics", ["hypertune.metrics"]),
    ("formats", ["hypertune.formats"]),
    ("mbr", ["hypertune.mbr"]),
    ("tuners", ["hypertune.tuners"]),
    ("distributed", ["hypertune.distributed"]),
    ("loop", ["hypertune.loop"]),
    ("cli", ["hypertune.cli", "hypertune.__main__"]),
    ("bench", ["hypertune.bench"]),
]  # fmt: skip


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> int | None:
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def imports(path: Path) -> list[tuple[int, str]]:
    """Every ``hypertune`` module ``path`` imports, anywhere in the file, with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] == "hypertune"]


def test_every_module_has_a_layer():
    assert all(layer_of(module_name(p)) is not None for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"
               or p.parent != PACKAGE)  # fmt: skip


def test_dependencies_point_one_way():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = module_name(path)
        rank = layer_of(source)
        if rank is None:
            continue
        for line, name in imports(path):
            target = layer_of(name)
            if target is None:  # "from hypertune import compiled" names a module one level down
                continue
            if target > rank and not (source == "hypertune.cli.bench_command" and LAYERS[target][0] == "bench"):
                wrong.append(f"{path.relative_to(REPO)}:{line}: {LAYERS[rank][0]} imports {name} ({LAYERS[target][0]})")
    assert not wrong, "\n".join(wrong)


def test_the_structure_knows_no_algorithm():
    """The ``hypergraph`` package is the bottom of the engine: semirings and algorithms are written over it."""
    paths = sorted((PACKAGE / "hypergraph").glob("*.py"))
    assert {p.name for p in paths} >= {"__init__.py", "structure.py", "building.py", "packing.py"}
    up = [f"{path.name}: {name}" for path in paths for _, name in imports(path)
          if name.startswith(("hypertune.algorithms", "hypertune.semirings"))]  # fmt: skip
    assert not up, up


def tuner_modules() -> set[str]:
    """The modules that define a tuner: every tuner class of the one registry (``hypertune.tuners.registry``)."""
    from hypertune.tuners.registry import TUNERS

    return {entry.tuner.partition(":")[0] for entry in TUNERS.values() if entry.tuner.startswith("hypertune.")}


def imported_module(name: str, modules: set[str]) -> str | None:
    """Which of ``modules`` the imported ``name`` comes from: ``hypertune.tuners.mira.pa_step_size`` and
    ``hypertune.tuners.mira`` from mira; a name ``hypertune.tuners`` loads on first use (``Mert``) from its module."""
    from hypertune import tuners

    first, _, _ = name.removeprefix("hypertune.tuners.").partition(".")
    if name.startswith("hypertune.tuners.") and first in tuners._EXPORTS:
        name = f"hypertune.tuners.{tuners._EXPORTS[first]}"
    return next((m for m in modules if name == m or name.startswith(m + ".")), None)


def test_tuners_import_no_other_tuner():
    """A module that defines a tuner imports no other such module: what tuners share lives in a module of its own
    (``shards``, ``model_best``, ``kbest_candidates``, ``passive_aggressive``, ...)."""
    modules = tuner_modules()
    assert {"hypertune.tuners.mert", "hypertune.tuners.mira", "hypertune.tuners.minrisk", "hypertune.tuners.train",
            "hypertune.tuners.online"} <= modules  # fmt: skip
    wrong = []
    for source in sorted(modules):
        path = REPO.joinpath(*source.split(".")).with_suffix(".py")
        for line, name in imports(path):
            target = imported_module(name, modules)
            if target is not None and target != source:
                wrong.append(f"{path.relative_to(REPO)}:{line}: {source} imports {name} (the tuner module {target})")
    assert not wrong, "\n".join(wrong)
