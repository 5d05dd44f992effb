"""Readers and writers of decoder search spaces and weights; one module per format, one sniffing registry.

Registration order is sniffing order: the most specific sniffers come first.
"""

from hypertune.formats import (  # noqa: F401
    cache,
    cdec_json,
    extractor,
    htk_slf,
    hypertune_json,  # registers the format
    jsonl,  # sniffed before cdec_json (whose sniffer takes any object whose first key is "features")
    moses_hypergraph,
    moses_searchgraph,  # its sniffer only takes lines 'id hyp=N stack=N': no clash with other formats
    nbest,
    openfst,
    plf,
)
from hypertune.formats.references import read_references
from hypertune.formats.registry import FORMATS, GraphFormat, detect_format, read_graphs, register, write_graphs
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
