"""Today's n-best readers as they were before the compiled scan (hypertune 2026-11-22, formats/nbest.py),
kept as the reference the compiled readers must equal graph for graph and error for error."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from hypertune.errors import GraphError, InputError
from hypertune.formats._common import component_names
from hypertune.formats.io import open_text
from hypertune.hypergraph import Hypergraph, from_kbest
from hypertune.symbols import FeatureSpace, Vocabulary

# a token ending in '=' is a label whatever its name holds, as Moses's mert/Data.cpp reads it (since 2026-11-27:
# phrase-pair features such as PP_:~x= name phrases with ':' and '='); a legacy 'name:' label is a plain word
_LABEL = re.compile(r"^(?:\S+=|[^\s=:]+:)$")


def _lines(path: str):
    with open_text(path) as handle:
        try:
            yield from enumerate(handle, 1)
        except (UnicodeDecodeError, EOFError, OSError) as error:
            raise InputError(f"cannot read the file ({error})", path) from None


def parse_features(field: str, path: str | None, line: int | None) -> list[tuple[str, float]]:
    """The features of one n-best entry (see the module docstring), canonically named, in order."""
    out: list[tuple[str, float]] = []
    label: str | None = None
    values: list[float] = []
    seen: set[str] = set()

    def flush() -> None:
        if label is None:
            return
        if not values:
            raise InputError(f"feature label {label!r} has no values", path, line)
        out.extend(zip(component_names(label, len(values)), values, strict=True))

    for token in field.split():
        if _LABEL.match(token):
            flush()
            label, values = token[:-1], []
            if label in seen:
                raise InputError(f"feature label {label!r} appears twice", path, line)
            seen.add(label)
            continue
        if "=" in token:
            name, _, text = token.rpartition("=")
            if not name:
                raise InputError(f"expected a feature 'name=value', got {token!r}", path, line)
            flush()
            label, values = None, []
            out.append((name, _number(text, name, path, line)))
            continue
        if label is None:
            raise InputError(f"the value {token!r} has no feature label (expected 'Name= v1 v2 ...')", path, line)
        values.append(_number(token, label, path, line))
    flush()
    return out


def _number(text: str, name: str, path: str | None, line: int | None) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"feature {name!r}: expected a number, got {text!r}", path, line) from None
    if not math.isfinite(value):
        raise InputError(f"feature {name!r}: values must be finite, got {text!r}", path, line)
    return value


def _sentences(path: str, parse_entry, min_fields: int):
    """Group lines by sentence id: yields (sid, [(words, features, extra)]) in file order."""
    current: str | None = None
    entries: list[Any] = []
    done: set[str] = set()
    number = 1
    for number, raw in _lines(path):
        if not raw.strip():
            continue
        fields = raw.rstrip("\r\n").split("|||")
        if len(fields) < min_fields:
            raise InputError(
                f"expected at least {min_fields} fields separated by '|||', got {len(fields)}", path, number
            )
        sid = fields[0].strip()
        if not sid.isdigit():
            raise InputError(f"expected a sentence id (a non-negative integer), got {sid!r}", path, number)
        sid = str(int(sid))  # a number: "00" is sentence 0 (the compiled reader compares values)
        if sid != current:
            if current is not None:
                yield current, entries
                done.add(current)
            if sid in done:
                raise InputError(f"sentence {sid} appears again after other sentences", path, number)
            current, entries = sid, []
        entries.append(parse_entry(fields, path, number))
    if current is not None:
        yield current, entries
    else:
        raise InputError("no hypotheses in the file (expected 'id ||| hypothesis ||| ...' lines)", path, number)


def _moses_entry(fields: list[str], path: str, number: int):
    features = parse_features(fields[2], path, number)
    total = fields[3].strip().split()
    if len(total) != 1:
        raise InputError(f"expected the total score in field 4, got {fields[3].strip()!r}", path, number)
    return fields[1].split(), features, _number(total[0], "total", path, number)


def _build(sid: str, entries, feature_space, vocabulary, path: str) -> Hypergraph:
    try:
        return from_kbest(
            [(words, features) for words, features, _ in entries],
            feature_space,
            vocabulary,
            metadata={"totals": [total for _, _, total in entries]},
            sentence_id=int(sid),
        )
    except GraphError as error:
        raise InputError(f"sentence {sid}: {error}", path) from None


def read_moses(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    graphs = [
        _build(sid, entries, feature_space, vocabulary, path) for sid, entries in _sentences(path, _moses_entry, 4)
    ]
    if not graphs:
        raise InputError("no hypotheses in the n-best list", path)
    return graphs


def read_zmert(
    path: str,
    feature_space: FeatureSpace,
    vocabulary: Vocabulary,
    names: Sequence[str] | None = None,
    params: str | None = None,
) -> list[Hypergraph]:
    """Z-MERT candidates; feature names from ``names``, a parameter file ``params``, or ``F0, F1, ...``."""
    if names is None and params is not None:
        from hypertune.formats.weights import read_zmert_params

        names = [p.name for p in read_zmert_params(params)]

    def entry(fields: list[str], where: str, number: int):
        if len(fields) != 3:
            raise InputError(f"expected 'i ||| candidate ||| v1 v2 ...' (3 fields), got {len(fields)}", where, number)
        values = [_number(v, "candidate feature", where, number) for v in fields[2].split()]
        nonlocal names
        if names is None:
            names = [f"F{i}" for i in range(len(values))]
        if len(values) != len(names):
            raise InputError(
                f"expected {len(names)} feature values ({', '.join(names)}), got {len(values)}", where, number
            )
        return fields[1].split(), list(zip(names, values, strict=True)), 0.0

    graphs = [_build(sid, entries, feature_space, vocabulary, path) for sid, entries in _sentences(path, entry, 3)]
    if not graphs:
        raise InputError("no candidates in the file", path)
    for hg in graphs:
        hg.metadata.pop("totals", None)
    return graphs
