"""Readers and writers of decoder search spaces and weights; one module per format, one sniffing registry."""

from hypertune.formats import hypertune_json  # noqa: F401  (registers the format)
from hypertune.formats.registry import FORMATS, GraphFormat, detect_format, read_graphs, register, write_graphs
from hypertune.formats.weights import read_weights, write_weights

__all__ = [
    "FORMATS",
    "GraphFormat",
    "detect_format",
    "read_graphs",
    "read_weights",
    "register",
    "write_graphs",
    "write_weights",
]
