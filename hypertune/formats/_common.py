"""Helpers shared by the format modules: a fast array builder for files already in topological order,
located number parsing, and the canonical naming of dense feature components.

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

import numpy as np
import scipy.sparse as sp

from hypertune.errors import GraphError, InputError
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary


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


class ArrayBuilder:
    """Accumulates edges grouped by head in node order (tails before heads) and builds a
    :class:`Hypergraph` from numpy arrays directly, keeping node and edge order as given."""

    def __init__(self, feature_space: FeatureSpace, vocabulary: Vocabulary) -> None:
        self.feature_space = feature_space
        self.vocabulary = vocabulary
        self.head: list[int] = []
        self.tails: list[int] = []
        self.arity: list[int] = []
        self.target: list[int] = []
        self.target_lengths: list[int] = []
        self.columns: list[int] = []
        self.values: list[float] = []
        self.feature_counts: list[int] = []

    @property
    def num_edges(self) -> int:
        return len(self.head)

    def add_edge(
        self, head: int, tails: Sequence[int], features: Iterable[tuple[str, float]], tokens: Sequence[int]
    ) -> None:
        """``tokens``: word ids (>= 0) and tail references ``-(i+1)`` already encoded."""
        self.head.append(head)
        self.tails.extend(tails)
        self.arity.append(len(tails))
        self.target.extend(tokens)
        self.target_lengths.append(len(tokens))
        index = self.feature_space.index
        count = 0
        for name, value in features:
            self.columns.append(index(name))
            self.values.append(value)
            count += 1
        self.feature_counts.append(count)

    def build(
        self,
        num_nodes: int,
        labels: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **annotations: Any,
    ) -> Hypergraph:
        """The graph; ``annotations`` as :class:`Hypergraph` takes them (per-edge ones in edge order)."""
        features = sp.csr_matrix(
            (
                np.asarray(self.values, dtype=np.float64),
                np.asarray(self.columns, dtype=np.int64),
                np.concatenate(([0], np.cumsum(self.feature_counts, dtype=np.int64))),
            ),
            shape=(len(self.head), len(self.feature_space)),
        )
        return Hypergraph(
            num_nodes,
            np.asarray(self.head, dtype=np.int64),
            np.concatenate(([0], np.cumsum(self.arity, dtype=np.int64))),
            np.asarray(self.tails, dtype=np.int64),
            features,
            np.concatenate(([0], np.cumsum(self.target_lengths, dtype=np.int64))),
            np.asarray(self.target, dtype=np.int64),
            self.feature_space,
            self.vocabulary,
            labels,
            dict(metadata or {}),
            **annotations,
        )


def build_located(builder: ArrayBuilder, num_nodes: int, path: str, **kwargs: Any) -> Hypergraph:
    """:meth:`ArrayBuilder.build`, turning structural errors into an :class:`InputError` on ``path``."""
    try:
        return builder.build(num_nodes, **kwargs)
    except GraphError as error:
        raise InputError(f"invalid graph: {error}", path) from None


def check_word(word: str, what: str) -> str:
    """Words written into a text format must be non-empty and free of whitespace."""
    if not word or any(c.isspace() for c in word):
        raise InputError(f"cannot write the word {word!r} in {what}: words must be non-empty without whitespace")
    return word
