"""An independent reading of JSONL k-best files (docs/formats.md, "JSONL") with Python's json module, line
by line: the reference the compiled reader (hypertune/formats/jsonl.py) must equal graph for graph, and
error line for error line (the messages are checked by hand-written tests)."""

from __future__ import annotations

import json
import math
from typing import Any

from hypertune.errors import InputError
from hypertune.formats.io import read_text
from hypertune.hypergraph import Hypergraph, from_kbest
from hypertune.symbols import FeatureSpace, Vocabulary

READ = ("id", "hyp", "features", "scores", "total")


class Pairs(list):
    """A JSON object as its members in order (a repeated key stays repeated)."""


def _number(value: Any) -> float | None:
    """The value as a finite float, None when it is not a finite number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _named(value: Any, what: str, path: str, line: int) -> dict[str, float]:
    if not isinstance(value, Pairs):
        raise InputError(f'"{what}s" must be an object of name: number', path, line)
    out: dict[str, float] = {}
    for name, number in value:
        if name == "":
            raise InputError(f"empty {what} name", path, line)
        if name in out:
            raise InputError(f"{what} {name!r} given twice", path, line)
        converted = _number(number)
        if converted is None:
            raise InputError(f"{what} {name!r}: not a finite number", path, line)
        out[name] = converted
    return out


def _entry(obj: Pairs, path: str, number: int) -> dict[str, Any]:
    """One line's object as the reader takes it: the keys read, in order."""
    entry: dict[str, Any] = {"line": number, "features": {}, "scores": {}}
    given: set[str] = set()
    for key, value in obj:
        if key not in READ:
            continue
        if key in given:
            raise InputError(f'key "{key}" given twice', path, number)
        given.add(key)
        if key == "id":
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 10**18:
                raise InputError('"id" must be a non-negative integer below 10**18', path, number)
            entry["id"] = value
        elif key == "hyp":
            if not isinstance(value, str):
                raise InputError('"hyp" must be a string', path, number)
            entry["hyp"] = value.split()
        elif key == "total":
            total = _number(value)
            if total is None:
                raise InputError('"total" must be a finite number', path, number)
            entry["total"] = total
        else:
            entry[key] = _named(value, key[:-1], path, number)
    if "id" not in entry:
        raise InputError('no "id"', path, number)
    return entry


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    entries = []
    for number, line in enumerate(read_text(path).split("\n"), 1):
        if not line.strip(" \t\r\n"):
            continue
        try:
            obj = json.loads(line, object_pairs_hook=Pairs)
        except json.JSONDecodeError as error:
            raise InputError(f"invalid JSON: {error.msg} (column {error.colno})", path, number) from None
        if not isinstance(obj, Pairs):
            raise InputError("expected a JSON object per line", path, number)
        entry = _entry(obj, path, number)
        entries.append(entry)
    if not entries:
        raise InputError("no hypotheses in the file", path)
    for key in ("hyp", "total"):
        if any((key in e) != (key in entries[0]) for e in entries):
            bad = next(e for e in entries if (key in e) != (key in entries[0]))
            raise InputError(f'"{key}" on some lines only', path, bad["line"])
    names: list[str] = []
    for entry in entries:
        names.extend(n for n in entry["scores"] if n not in names)
    for entry in entries:
        if len(entry["scores"]) != len(names):
            raise InputError("a score is missing", path, entry["line"])
    return _graphs(entries, feature_space, vocabulary)


def _graphs(entries: list[dict[str, Any]], feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    """One k-best list per id, in order of first appearance, hypotheses in file order."""
    names: list[str] = []
    for entry in entries:
        names.extend(n for n in entry["scores"] if n not in names)
    for entry in entries:  # words and feature names in file order
        for word in entry.get("hyp", ()):
            vocabulary.index(word)
        for name in entry["features"]:
            feature_space.index(name)
    groups: dict[int, list[dict[str, Any]]] = {}
    for entry in entries:
        groups.setdefault(entry["id"], []).append(entry)
    graphs = []
    for sid, group in groups.items():
        metadata: dict[str, Any] = {} if "hyp" in entries[0] else {"text": False}
        if "total" in entries[0]:
            metadata["totals"] = [e["total"] for e in group]
        graphs.append(
            from_kbest(
                [(e.get("hyp", []), e["features"]) for e in group],
                feature_space,
                vocabulary,
                metadata,
                sentence_id=sid,
                scores={n: [e["scores"][n] for e in group] for n in names} if names else None,
            )
        )
    return graphs
