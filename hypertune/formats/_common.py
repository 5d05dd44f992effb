"""Helpers shared by the format modules: building a graph with errors located in the input file, located
number parsing, and the canonical naming of dense feature components.

Canonical feature names (see docs/formats.md): a dense feature with one component keeps its plain name
(``LM0``, ``lm``, ``w``); a dense feature with ``k > 1`` components is named ``Name_0 .. Name_{k-1}``
(0-based, as Moses's n-best lists and extractor files do). Moses hypergraphs number components from 1
(``TranslationModel0_1=``); their readers and writers convert.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from hypertune.errors import GraphError, InputError
from hypertune.hypergraph import Hypergraph, HypergraphBuilder


def parse_float(text: str, what: str, path: str | None, line: int | None) -> float:
    """``float(text)`` that must be finite, or an :class:`InputError` naming ``what`` was expected."""
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"expected a number for {what}, got {text!r}", path, line) from None
    if not math.isfinite(value):
        raise InputError(f"{what} must be finite, got {text!r}", path, line)
    return value


def parse_int(text: str, what: str, path: str | None, line: int | None, minimum: int = 0) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"expected an integer for {what}, got {text!r}", path, line) from None
    if value < minimum:
        raise InputError(f"{what} must be at least {minimum}, got {value}", path, line)
    return value


def format_number(value: float) -> str:
    """The shortest text that reads back as exactly ``value`` (``2`` rather than ``2.0``)."""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def format_number_lines(values: Iterable[float]) -> str:
    """:func:`format_number` of each value, each followed by a newline, made at once (one join, one replace:
    ``repr`` never ends a number's text in ``.0`` but where :func:`format_number` cuts it)."""
    text = "\n".join(map(float.__repr__, map(float, values)))
    return (text + "\n").replace(".0\n", "\n") if text else ""


def component_names(name: str, count: int) -> list[str]:
    """Canonical names of a dense feature's ``count`` components: ``[name]`` or ``name_0 .. name_{k-1}``."""
    return [name] if count == 1 else [f"{name}_{i}" for i in range(count)]


_ONE_BASED = re.compile(r"^([^_\s]+)_([1-9][0-9]*)$")
_ZERO_BASED = re.compile(r"^([^_\s]+)_(0|[1-9][0-9]*)$")


def from_moses_hypergraph_name(name: str) -> str:
    """Moses hypergraph ``Name_k`` (1-based dense component, ``Name`` without underscore) -> ``Name_{k-1}``."""
    match = _ONE_BASED.match(name)
    if match is None:
        return name
    return f"{match.group(1)}_{int(match.group(2)) - 1}"


def to_moses_hypergraph_name(name: str) -> str:
    """The inverse of :func:`from_moses_hypergraph_name`."""
    match = _ZERO_BASED.match(name)
    if match is None:
        return name
    return f"{match.group(1)}_{int(match.group(2)) + 1}"


def collapse_single_components(names: Sequence[str]) -> list[str]:
    """Moses extractor names every dense component ``Name_i`` even when ``Name`` has one component;
    canonically a one-component feature keeps its plain name (``lm_0`` alone -> ``lm``)."""
    counts: dict[str, int] = {}
    for name in names:
        match = _ZERO_BASED.match(name)
        if match:
            counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    out = []
    for name in names:
        match = _ZERO_BASED.match(name)
        if match and match.group(2) == "0" and counts[match.group(1)] == 1:
            out.append(match.group(1))
        else:
            out.append(name)
    return out


def build_located(builder: HypergraphBuilder, num_nodes: int, path: str, **kwargs: Any) -> Hypergraph:
    """:meth:`HypergraphBuilder.build_in_order`, turning structural errors into an :class:`InputError` on
    ``path``."""
    try:
        return builder.build_in_order(num_nodes, **kwargs)
    except GraphError as error:
        raise InputError(f"invalid graph: {error}", path) from None


def check_word(word: str, what: str) -> str:
    """Words written into a text format must be non-empty and free of whitespace."""
    if not word or any(c.isspace() for c in word):
        raise InputError(f"cannot write the word {word!r} in {what}: words must be non-empty without whitespace")
    return word
