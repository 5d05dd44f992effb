"""Readers and writers of decoder search spaces and weights; one module per format, one sniffing registry.

The registry (:data:`~hypertune.formats.registry.FORMATS`) knows the built-in formats by name and in sniffing
order (the most specific sniffers first) and imports a format's module when the format is first looked up; so
do the modules' names here (``hypertune.formats.plf``), so that a command that reads one format does not
import every reader and its compiled kernels.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from hypertune.formats.references import read_references
from hypertune.formats.registry import BUILTIN, FORMATS, GraphFormat, detect_format, read_graphs, register, write_graphs
from hypertune.formats.weights import read_weights, write_weights

__all__ = [
    "FORMATS",
    "GraphFormat",
    "detect_format",
    "read_graphs",
    "read_references",
    "read_weights",
    "register",
    "write_graphs",
    "write_weights",
]

#: The format modules, imported on first use (:func:`__getattr__`).
_READERS = frozenset(BUILTIN.values())


def __getattr__(name: str) -> ModuleType:
    """A format module (``hypertune.formats.cdec_json``, ...), imported when first asked for."""
    if name in _READERS:
        return importlib.import_module(f"hypertune.formats.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _READERS)
