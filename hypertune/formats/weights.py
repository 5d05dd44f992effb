"""Weights files: ``name value`` lines (cdec, Joshua, kbmira sparse), ``Name= v1 v2 ...`` lines (Moses),
and JSON objects. Several files may be given; later ones override earlier ones.

A Moses line with several values names the components ``Name_0``, ``Name_1``, ... (as Moses's n-best
lists do); a single value keeps the plain name.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Literal

from hypertune.errors import InputError, UsageError
from hypertune.formats.io import open_text, write_atomically
from hypertune.weights import Weights

WeightsFormat = Literal["cdec", "moses", "json"]


def read_weights(paths: str | Iterable[str]) -> Weights:
    """Read and merge weights files (later files override earlier ones)."""
    weights = Weights()
    for path in [paths] if isinstance(paths, str) else paths:
        with open_text(path) as handle:
            text = handle.read()
        if text.lstrip().startswith("{"):
            weights.update(_read_json(text, path))
        else:
            weights.update(_read_lines(text, path))
    return weights


def _read_json(text: str, path: str) -> dict[str, float]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"invalid JSON ({error.msg})", path, error.lineno) from None
    if isinstance(obj, dict) and isinstance(obj.get("weights"), dict):
        obj = obj["weights"]
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object of name: value pairs", path)
    out = {}
    for name, value in obj.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise InputError(f"weight {name!r} must be a finite number, not {value!r}", path)
        out[name] = float(value)
    return out


def _read_lines(text: str, path: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        name = fields[0]
        values = fields[1:]
        if name.endswith("="):
            name = name[:-1]
        elif "=" in name and len(fields) == 1:
            name, values = name.split("=", 1)[0], [name.split("=", 1)[1]]
        if not name or not values:
            raise InputError(f"expected 'name value' or 'Name= v1 v2 ...', got {raw.strip()!r}", path, number)
        try:
            numbers = [float(v) for v in values]
        except ValueError:
            raise InputError(f"expected numbers after {name!r}, got {' '.join(values)!r}", path, number) from None
        if not all(math.isfinite(v) for v in numbers):
            raise InputError(f"weight {name!r} must be finite", path, number)
        if len(numbers) == 1:
            out[name] = numbers[0]
        else:
            out.update({f"{name}_{i}": v for i, v in enumerate(numbers)})
    return out


def write_weights(weights: Weights, path: str, format: WeightsFormat = "cdec") -> None:
    """Write weights atomically as ``name value`` lines (cdec), ``name= value`` lines (Moses) or JSON."""
    if format == "json":
        text = json.dumps(dict(weights), indent=2) + "\n"
    elif format in ("cdec", "moses"):
        separator = "= " if format == "moses" else " "
        text = "".join(f"{name}{separator}{value!r}\n" for name, value in weights.items())
    else:
        raise UsageError(f"unknown weights format {format!r} (cdec, moses, json)")
    write_atomically(path, text)
