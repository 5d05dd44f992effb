"""Weights files, read with format detection and written in whatever format the decoder reads.

Read (several files may be given; later ones override earlier ones):

* ``name value`` lines: cdec, Joshua, kbmira ``--sparse-init``. A Joshua config file (``key = value``
  settings mixed with ``name value`` weight lines) reads its weight lines only.
* Moses ``Name= v1 v2 ...`` lines (moses.ini ``[weight]`` sections, kbmira ``--dense-init``), old
  moses.ini ``[weight-X]`` sections (one value a line; ``[weight-l]`` is ``lm``, ``[weight-t]`` is
  ``tm``). The values of all lines labelled ``Name=`` in a file are the components of feature ``Name``
  in order: one component keeps the plain name, ``k > 1`` components are ``Name_0 .. Name_{k-1}``
  (canonical names, see :mod:`hypertune.formats._common`). So kbmira's one-component-per-line dense file
  and moses.ini's one-line form give the same names, and match Moses hypergraphs' 1-based ``Name_1=``.
* JSON objects ``{"name": value}`` (or ``{"weights": {...}}``).
* Z-MERT parameter files (``name ||| value Opt min max ...``; names may contain spaces).
* Positional files: kbmira's legacy single line of numbers and Moses ``mert``'s ``init.opt`` (three lines:
  start, minimum, maximum; the start line is the weights). Both need the feature order (from the n-best
  list or FEATSTAT header): pass ``feature_names``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from hypertune.choices import WEIGHTS_FORMATS
from hypertune.errors import InputError, UsageError, warn
from hypertune.formats._common import component_names, format_number
from hypertune.formats.io import read_text, write_atomically
from hypertune.weights import Weights, visible

WeightsFormat = Literal["cdec", "moses", "moses-ini", "kbmira-dense", "json", "zmert"]
_OLD_SECTIONS = {"l": "lm", "t": "tm"}
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^[+-]?(inf|nan)$", re.IGNORECASE)
_CONFIG = re.compile(r"^\s*[\w.-]+\s*=\s*(\S*)")


def read_weights(paths: str | Iterable[str], feature_names: Sequence[str] | None = None) -> Weights:
    """Read and merge weights files (later files override earlier ones); see the module docstring."""
    weights = Weights()
    for path in [paths] if isinstance(paths, str) else paths:
        weights.update(read_weights_file(path, feature_names))
    return weights


def _read_text(path: str) -> str:
    """The text of a weights file, read once (pipes and process substitution work)."""
    return read_text(path, "weights file")


def detect_weights_format(text: str) -> str:
    """``json``, ``zmert``, ``moses-ini``, ``positional``, ``joshua-config`` or ``lines``."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return "json"
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    if lines and all("|||" in line for line in lines if not line.startswith("normalization")):
        return "zmert"
    if any(line.startswith("[") and line.endswith("]") for line in lines):
        return "moses-ini"
    if lines and all(all(_NUMBER.match(f) for f in line.split()) for line in lines):
        return "positional"
    for line in lines:
        if _is_name_value(line.split()):
            continue  # a weight whatever its name holds ('PP_a=b~~c 0.5': a phrase-pair feature's name)
        match = _CONFIG.match(line)
        if match and match.group(1) and not _NUMBER.match(match.group(1)):
            return "joshua-config"
    return "lines"


def _is_name_value(fields: list[str]) -> bool:
    """``name value``: two fields, a number after a name that is not a ``Name=`` label."""
    return len(fields) == 2 and not fields[0].endswith("=") and bool(_NUMBER.match(fields[1]))


def read_weights_file(path: str, feature_names: Sequence[str] | None = None) -> dict[str, float]:
    return parse_weights(_read_text(path), path, feature_names)


def parse_weights(text: str, path: str, feature_names: Sequence[str] | None = None) -> dict[str, float]:
    """The weights in ``text`` (the contents of ``path``), whatever their format."""
    kind = detect_weights_format(text)
    if kind == "json":
        return _read_json(text, path)
    if kind == "zmert":
        first = next(line for line in text.splitlines() if line.strip())
        if first.count("|||") >= 2:
            raise InputError("this looks like an n-best list, not a weights file", path, 1)
        return {p.name: p.value for p in read_zmert_params(path, text)}
    if kind == "positional":
        return read_positional(path, feature_names, text)[0]
    if kind == "moses-ini":
        return _read_moses_ini(text, path)
    return _read_lines(text, path, config=kind == "joshua-config")


def _read_json(text: str, path: str) -> dict[str, float]:
    try:
        obj = json.loads(text, object_pairs_hook=lambda pairs: _unique_keys(pairs, path))
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


def _unique_keys(pairs: list[tuple[str, object]], path: str) -> dict[str, object]:
    """A JSON object's keys, each once: a weight given twice is an error, not the last one silently."""
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise InputError(f"weight {visible(key)} is given twice in one JSON object (remove one of them)", path)
        out[key] = value
    return out


def _numbers(values: list[str], name: str, path: str, number: int) -> list[float]:
    try:
        out = [float(v) for v in values]
    except ValueError:
        raise InputError(f"expected numbers after {name!r}, got {' '.join(values)!r}", path, number) from None
    if not all(math.isfinite(v) for v in out):
        raise InputError(f"weight {name!r} must be finite", path, number)
    return out


class _Collector:
    """Plain ``name value`` weights plus ``Name=`` component lists, named canonically at the end. A name
    given twice (two ``name value`` lines, or a line naming a component a ``Name=`` line also gives) is an
    error naming both lines; repeated ``Name=`` lines are the components of one feature (kbmira)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.plain: dict[str, tuple[float, int]] = {}  # name -> (value, line)
        self.dense: dict[str, list[float]] = {}
        self.dense_lines: dict[str, list[tuple[int, int]]] = {}  # name -> (line, number of values) per line
        self.order: list[tuple[str, str]] = []

    def add_plain(self, name: str, value: float, line: int) -> None:
        if name in self.plain:
            first = self.plain[name][1]
            raise InputError(
                f"weight {visible(name)} is given twice, on lines {first} and {line} (remove one of them)",
                self.path,
                line,
            )
        self.plain[name] = (value, line)
        self.order.append(("plain", name))

    def add_dense(self, name: str, values: list[float], line: int) -> None:
        if name not in self.dense:
            self.dense[name] = []
            self.dense_lines[name] = []
            self.order.append(("dense", name))
        self.dense[name].extend(values)
        self.dense_lines[name].append((line, len(values)))

    def _component_line(self, name: str, component: int) -> int:
        done = 0
        for line, count in self.dense_lines[name]:
            done += count
            if component < done:
                return line
        raise AssertionError("a component past the feature's values")  # pragma: no cover

    def result(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for kind, name in self.order:
            if kind == "plain":
                out[name] = self.plain[name][0]
                continue
            values = self.dense[name]
            for component, canonical in enumerate(component_names(name, len(values))):
                if canonical in self.plain:
                    lines = sorted((self.plain[canonical][1], self._component_line(name, component)))
                    raise InputError(
                        f"weight {visible(canonical)} is given twice, on lines {lines[0]} and {lines[1]} (as "
                        f"'{canonical} value' and as a component of '{name}='; remove one of them)",
                        self.path,
                        lines[1],
                    )
                out[canonical] = values[component]
        return out


def _read_lines(text: str, path: str, config: bool = False) -> dict[str, float]:
    collector = _Collector(path)
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if config and not _is_name_value(line.split()):
            continue  # a Joshua setting, not a weight
        _line(collector, line, raw, path, number)
    return collector.result()


def _line(collector: _Collector, line: str, raw: str, path: str, number: int) -> None:
    fields = line.split()
    name, values = fields[0], fields[1:]
    if name.endswith("="):
        name = name[:-1]
        if not name or not values:
            raise InputError(f"expected 'Name= v1 v2 ...', got {raw.strip()!r}", path, number)
        collector.add_dense(name, _numbers(values, name, path, number), number)
        return
    if "=" in name and len(fields) == 1:
        name, value = name.rsplit("=", 1)
        values = [value]
    if not name or len(values) != 1:
        raise InputError(f"expected 'name value' or 'Name= v1 v2 ...', got {raw.strip()!r}", path, number)
    collector.add_plain(name, _numbers(values, name, path, number)[0], number)


def _moses_ini_lines(lines: list[str]) -> Iterator[tuple[int, str, str]]:
    """The non-empty lines of a moses.ini inside a section: ``(index, line without comment, section)``. The one
    walk over the sections, for the weights' reader and rewriter and the ``[feature]`` names."""
    section = None
    for index, raw in enumerate(lines):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section is not None:
            yield index, line, section


def _moses_ini_weight_lines(lines: list[str]) -> Iterator[tuple[int, str, str, str | None]]:
    """The weight lines of a moses.ini: ``(index, line without comment, section, old feature name)``, the
    last ``None`` in ``[weight]`` and the feature's name in an old ``[weight-X]`` section."""
    for index, line, section in _moses_ini_lines(lines):
        if section == "weight":
            yield index, line, section, None
        elif section.startswith("weight-") and section != "weight-file":
            key = section[len("weight-") :]
            yield index, line, section, _OLD_SECTIONS.get(key, key)


def _read_moses_ini(text: str, path: str, weight_file: bool = True) -> dict[str, float]:
    """The weights of a moses.ini: ``[weight]`` lines, old ``[weight-X]`` sections and, with ``weight_file``,
    the ``name value`` lines of the file its ``[weight-file]`` section names (Moses's sparse weights, as
    ``mert-moses.pl`` writes them; the text's values win for the same names, as in Moses)."""
    collector = _Collector(path)
    lines = text.splitlines()
    for index, line, section, old_name in _moses_ini_weight_lines(lines):
        if old_name is None:
            _line(collector, line, lines[index], path, index + 1)
        else:
            collector.add_dense(old_name, _numbers(line.split(), section, path, index + 1), index + 1)
    weights = collector.result()
    files = [(index, line) for index, line, section in _moses_ini_lines(lines) if section == "weight-file"]
    if weight_file and files:
        if len(files) > 1:
            raise InputError("[weight-file] names one file; this is a second", path, files[1][0] + 1)
        index, name = files[0]
        sparse = read_sparse_weight_file(_weight_file_path(name, path, index + 1))
        weights = {**weights, **{name: value for name, value in sparse.items() if name not in weights}}
    return weights


def _weight_file_path(name: str, ini: str, number: int) -> str:
    """The file a ``[weight-file]`` line names: as given (Moses opens it from its working directory), else
    beside the moses.ini when it is relative and there."""
    if os.path.isfile(name):
        return name
    beside = os.path.join(os.path.dirname(ini), name)
    if not os.path.isabs(name) and os.path.isfile(beside):
        return beside
    raise InputError(f"[weight-file] names {name!r}, which is not a file (nor beside the moses.ini)", ini, number)


def read_sparse_weight_file(path: str) -> dict[str, float]:
    """A Moses sparse weight file (a moses.ini's ``[weight-file]``, as ``mert-moses.pl`` writes it): one ``name
    value`` a line, the name kept as written (phrase-pair features' names hold any punctuation), ``#`` lines
    skipped, as Moses's ``FVector::load`` reads it. In the moses.ini the ``[weight]`` section's values win over
    the file's for the same name (Moses loads the file first and the section's sparse weights over it)."""
    weights: dict[str, float] = {}
    for number, raw in enumerate(_read_text(path).splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 2:
            raise InputError(f"expected 'name value', got {line!r}", path, number)
        weights[fields[0]] = _numbers(fields[1:], fields[0], path, number)[0]
    return weights


@dataclass(frozen=True)
class ZmertParam:
    name: str
    value: float
    optimize: bool
    minimum: float
    maximum: float
    random_min: float | None = None
    random_max: float | None = None


def read_zmert_params(path: str, text: str | None = None) -> list[ZmertParam]:
    """The parameters of a Z-MERT parameter file, in order (their order names the candidates' features)."""
    text = _read_text(path) if text is None else text
    params = []
    lines: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("normalization"):
            continue
        if "|||" not in line:
            raise InputError(f"expected 'name ||| value Opt|Fix min max ...', got {line!r}", path, number)
        name, rest = (part.strip() for part in line.split("|||", 1))
        fields = rest.split()
        if not name or len(fields) < 4 or fields[1] not in ("Opt", "Fix"):
            raise InputError(
                f"expected 'name ||| value Opt|Fix min max [rand-min rand-max]', got {line!r}", path, number
            )
        value = _numbers([fields[0]], name, path, number)[0]
        try:
            bounds = [float(f) for f in fields[2:]]
        except ValueError:
            raise InputError(f"bad bounds for {name!r}: {' '.join(fields[2:])!r}", path, number) from None
        if name in lines:
            raise InputError(
                f"parameter {visible(name)} is given twice, on lines {lines[name]} and {number} (remove one of them)",
                path,
                number,
            )
        lines[name] = number
        extra = bounds[2:4] + [None, None]
        params.append(ZmertParam(name, value, fields[1] == "Opt", bounds[0], bounds[1], extra[0], extra[1]))
    if not params:
        raise InputError("no parameters in the Z-MERT parameter file", path)
    return params


def read_positional(
    path: str, feature_names: Sequence[str] | None, text: str | None = None
) -> tuple[dict[str, float], dict[str, float] | None, dict[str, float] | None]:
    """A kbmira legacy dense line (start only; also written one weight per line, with a warning) or Moses
    ``init.opt`` (start, min, max), named by ``feature_names`` in order. Returns ``(start, minimum,
    maximum)`` (the last two ``None`` for one line)."""
    text = _read_text(path) if text is None else text
    rows = [(n, line.split()) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if feature_names is None:
        raise UsageError(
            f"{path}: positional weights (a line of numbers / init.opt) need the feature order; give the n-best "
            "list or FEATSTAT file they belong to"
        )
    if len(feature_names) > 1 and len(rows) == len(feature_names) and all(len(f) == 1 for _, f in rows):
        warn(f"{path}: one weight per line is kbmira's legacy dense format; write 'name value' lines instead")
        rows = [(rows[0][0], [f[0] for _, f in rows])]  # a column of weights, read as the one line it stands for
    if len(rows) not in (1, 3):
        raise InputError(f"expected one line of weights or three (start, min, max), got {len(rows)} lines", path)
    vectors = []
    for number, fields in rows:
        if len(fields) != len(feature_names):
            raise InputError(
                f"expected {len(feature_names)} numbers (one per feature: {' '.join(feature_names[:6])} ...), "
                f"got {len(fields)}",
                path,
                number,
            )
        try:
            values = [float(f) for f in fields]
        except ValueError:
            raise InputError(f"expected numbers, got {' '.join(fields)!r}", path, number) from None
        vectors.append(dict(zip(feature_names, values, strict=True)))
    start = vectors[0]
    bad = [k for k, v in start.items() if not math.isfinite(v)]
    if bad:
        raise InputError(f"start weight {bad[0]!r} must be finite", path, rows[0][0])
    if len(vectors) == 1:
        return start, None, None
    return start, vectors[1], vectors[2]


def read_mert_init(path: str, feature_names: Sequence[str]) -> tuple[Weights, dict[str, float], dict[str, float]]:
    """Moses ``mert`` ``init.opt``: start weights and the minimum and maximum of each (may be infinite)."""
    start, low, high = read_positional(path, feature_names)
    if low is None or high is None:
        raise InputError("expected three lines (start, minimum, maximum)", path)
    return Weights(start), low, high


def _dense_groups(weights: Mapping[str, float]) -> list[tuple[str, list[str], list[float]]]:
    """Group canonical names back into Moses features: ``X_0 .. X_{k-1}`` in order -> ``X`` with k values.
    Returns ``(label, names, values)``: ``names`` are the weights' own names, which a ``label= values``
    line reads back as (:func:`~hypertune.formats._common.component_names`)."""
    items = list(weights.items())
    groups: list[tuple[str, list[str], list[float]]] = []
    i = 0
    while i < len(items):
        name, value = items[i]
        match = re.match(r"^(.+)_0$", name)
        if match:
            prefix = match.group(1)
            values = [value]
            while i + len(values) < len(items) and items[i + len(values)][0] == f"{prefix}_{len(values)}":
                values.append(items[i + len(values)][1])
            if len(values) > 1:
                groups.append((prefix, [f"{prefix}_{k}" for k in range(len(values))], values))
                i += len(values)
                continue
        groups.append((name, [name], [value]))
        i += 1
    return groups


def _labelled_lines(weights: Mapping[str, float], per_component: bool = False, taken: Iterable[str] = ()) -> list[str]:
    """``Name= v1 v2 ...`` lines (``per_component``: one ``Name= v`` line a component, kbmira's dense format)
    that read back as ``weights``. Every line labelled ``Name=`` in a file is a component of the one feature
    ``Name``, so a label may serve one group only: a group whose label is already used (a plain ``w`` beside
    ``w_0 w_1``; a label in ``taken``, e.g. a moses.ini's own) is written as ``name value`` lines instead."""
    used = set(taken)
    lines: list[str] = []
    for label, names, values in _dense_groups(weights):
        if label in used:
            lines.extend(f"{name} {format_number(v)}\n" for name, v in zip(names, values, strict=True))
            continue
        used.add(label)
        if per_component:
            lines.extend(f"{label}= {format_number(v)}\n" for v in values)
        else:
            lines.append(f"{label}= {' '.join(format_number(v) for v in values)}\n")
    return lines


def format_weights(weights: Mapping[str, float], format: str = "cdec") -> str:
    """The text :func:`write_weights` writes, which reads back (:func:`parse_weights`) as exactly ``weights``,
    names and values, unless a name cannot be written in ``format`` at all (a blank or ``#`` in a line
    format, say; JSON holds every name): :func:`write_weights` refuses that, a printed summary shows it."""
    if format == "json":
        text = json.dumps(dict(weights), indent=2) + "\n"
    elif format == "cdec":
        text = "".join(f"{name} {format_number(value)}\n" for name, value in weights.items())
    elif format in ("moses", "moses-ini"):
        text = ("[weight]\n" if format == "moses-ini" else "") + "".join(_labelled_lines(weights))
    elif format == "kbmira-dense":
        text = "".join(_labelled_lines(weights, per_component=True))
    elif format == "zmert":
        body = "".join(f"{name}\t|||\t{format_number(v)}\tOpt\t-Inf\t+Inf\t-1\t+1\n" for name, v in weights.items())
        text = body + "normalization = none\n"
    else:
        raise UsageError(f"unknown weights format {format!r} ({', '.join(WEIGHTS_FORMATS)})")
    return text


def check_round_trip(weights: Mapping[str, float], text: str, format: str) -> None:
    """A :class:`UsageError` naming the weights unless ``text`` (``format_weights(weights, format)``) reads
    back as ``weights``: a weights file that the next step misreads is worse than none."""
    if not len(weights):
        return
    reason = ""
    try:
        back = parse_weights(text, f"the {format} weights")
    except (InputError, UsageError) as error:
        back, reason = {}, f": {error}"
    wrong = [name for name, value in weights.items() if back.get(name) != value]
    extra = [name for name in back if name not in weights]
    if not wrong and not extra:
        return
    shown = ", ".join(visible(name) for name in (wrong or extra)[:5]) + (" ..." if len(wrong or extra) > 5 else "")
    raise UsageError(
        f"the weights cannot be written in the {format} format so that they read back the same ({shown}){reason}; "
        "write them as json, which holds any name"
    )


def write_weights(weights: Mapping[str, float], path: str, format: WeightsFormat | str = "cdec") -> None:
    """Write weights atomically: ``cdec`` (``name value``), ``moses`` (``Name= v1 v2 ...``, components
    grouped), ``moses-ini`` (the same under ``[weight]``), ``kbmira-dense`` (``Name= value`` per component),
    ``json`` or ``zmert`` (a parameter file). Every format reads back as the same names and values
    (:func:`format_weights`), or nothing is written and this is a :class:`UsageError` naming the weights
    the format cannot hold (:func:`check_round_trip`)."""
    text = format_weights(weights, format)
    check_round_trip(weights, text, format)
    write_atomically(path, text)


# ---------------------------------------------------------------------- decoder configs with new weights

#: The kinds of decoder configuration :func:`rewrite_weights` can put new weights into.
CONFIG_KINDS = ("moses-ini", "joshua-config", "lines", "json")


def rewrite_weights(text: str, weights: Mapping[str, float], path: str) -> tuple[str, dict[str, float]]:
    """``text`` (the contents of ``path``: a Moses ``moses.ini``, a Joshua config, a cdec or Joshua weights
    file, or a JSON weights object) with the value of every weight it names replaced by ``weights``'s, and
    the weights it does not name (a tuning loop feeds the decoder this way: the user's own configuration,
    only the numbers changed, so that every other setting, comment and order stays as the user wrote it).

    Names are those :func:`parse_weights` reads from the same text, so ``parse_weights(new)`` gives the
    new values: in moses.ini both ``Name= v1 v2 ...`` lines of ``[weight]`` and the old one-value-a-line
    ``[weight-X]`` sections are rewritten (components numbered across all lines of a name, as read).
    Weights the file does not name are returned, not added: the caller appends them (:func:`add_weights`)
    or writes them to a separate file (Moses ``[weight-file]``)."""
    kind = detect_weights_format(text)
    if kind == "moses-ini":
        return _rewrite_moses_ini(text, weights, path)
    if kind in ("lines", "joshua-config"):
        return _rewrite_lines(text, weights, path, config=kind == "joshua-config")
    if kind == "json":
        named = _read_json(text, path)
        return json.dumps({k: weights.get(k, v) for k, v in named.items()}, indent=2) + "\n", _rest(weights, named)
    raise InputError(
        f"cannot put weights into a {kind} file; give a moses.ini, a Joshua config or a weights file", path
    )


def add_weights(text: str, weights: Mapping[str, float], path: str, weight_file: str | None = None) -> str:
    """``text`` (as for :func:`rewrite_weights`) with ``weights`` (names it does not have) added: ``name
    value`` lines at the end of a weights file or Joshua config, lines of the ``[weight]`` section of a
    moses.ini (created after the last section if missing), or a JSON object's new keys. With
    ``weight_file``, a moses.ini instead names that file in its ``[weight-file]`` section (Moses's sparse
    weights, written there by the caller) and ``weights`` are not added to the text."""
    kind = detect_weights_format(text)
    body = text if text.endswith("\n") or not text else text + "\n"
    if kind == "json":
        merged = {**_read_json(text, path), **dict(weights)}
        return json.dumps(merged, indent=2) + "\n"
    if kind != "moses-ini":
        return body + "".join(f"{name} {format_number(value)}\n" for name, value in weights.items())
    lines = body.splitlines(keepends=True)
    if weight_file is not None:
        lines = _without_section(lines, "weight-file")
        return (
            "".join(lines) + ("" if not lines or lines[-1].strip() == "" else "\n") + f"[weight-file]\n{weight_file}\n"
        )
    if not weights:
        return body
    labels = set()  # the file's own Name= labels: a group added under one of them would merge with its values
    for _, content, _, old_name in _moses_ini_weight_lines(lines):
        first = content.split()[0]
        labels.add(old_name if old_name is not None else first[:-1] if first.endswith("=") else "")
    added = _labelled_lines(weights, taken=labels)
    end = _section_end(lines, "weight")
    if end is None:
        return body + ("" if not lines or lines[-1].strip() == "" else "\n") + "[weight]\n" + "".join(added)
    return "".join(lines[:end] + added + lines[end:])


def _rest(weights: Mapping[str, float], named: Iterable[str]) -> dict[str, float]:
    known = set(named)
    return {name: value for name, value in weights.items() if name not in known}


def _split_comment(raw: str) -> tuple[str, str, str]:
    """(indentation, content, comment with the spaces before it, newline kept) of one line."""
    body, hash_, comment = raw.partition("#")
    content = body.strip()
    indent = body[: len(body) - len(body.lstrip())]
    tail = body[len(body.rstrip()) :] + hash_ + comment if hash_ else ""
    return indent, content, tail.rstrip("\n")


def _rewrite_lines(text: str, weights: Mapping[str, float], path: str, config: bool) -> tuple[str, dict[str, float]]:
    named = _read_lines(text, path, config)  # the names as read, and the file's errors said as the reader says them
    out = []
    dense: dict[str, list[tuple[int, int]]] = {}  # Name= lines: (line index, number of values)
    lines = text.splitlines(keepends=True)
    for index, raw in enumerate(lines):
        content = _split_comment(raw)[1]
        out.append(raw)
        if not content or (config and (_CONFIG.match(content) or len(content.split()) != 2)):
            continue
        _rewrite_weight_line(out, index, dense, weights)
    _rewrite_components(out, dense, set(), weights)
    return "".join(out), _rest(weights, named)


def _rewrite_weight_line(
    out: list[str], index: int, dense: dict[str, list[tuple[int, int]]], weights: Mapping[str, float]
) -> None:
    """One ``name value``, ``name=value`` or ``Name= v1 v2 ...`` line: a single weight is given its new value
    in place (spacing and comment kept); a dense feature's line is noted in ``dense`` for
    :func:`_rewrite_components`."""
    raw = out[index]
    indent, content, tail = _split_comment(raw)
    newline = "\n" if raw.endswith("\n") else ""
    fields = content.split()
    if fields[0].endswith("="):
        dense.setdefault(fields[0][:-1], []).append((index, len(fields) - 1))
        return
    name, separator = (fields[0].rsplit("=", 1)[0], "=") if len(fields) == 1 else (fields[0], " ")
    if name in weights:
        out[index] = f"{indent}{name}{separator}{format_number(weights[name])}{tail}{newline}"


def _rewrite_components(
    out: list[str], places: dict[str, list[tuple[int, int]]], bare: set[int], weights: Mapping[str, float]
) -> None:
    """Give every line of a dense feature its new values. ``places[name]``: (line index, number of values)
    of each line of the feature in file order; the components are numbered across them as the reader
    numbers them, and a component without a new weight keeps its text. Lines in ``bare`` (old moses.ini
    ``[weight-X]`` sections) are values only, the others ``Name= v1 v2 ...``."""
    for name, lines in places.items():
        names = component_names(name, sum(count for _, count in lines))
        done = 0
        for index, count in lines:
            raw = out[index]
            indent, content, tail = _split_comment(raw)
            newline = "\n" if raw.endswith("\n") else ""
            old = content.split()[-count:]
            values = " ".join(
                format_number(weights[n]) if n in weights else v
                for n, v in zip(names[done : done + count], old, strict=True)
            )
            done += count
            out[index] = f"{indent}{values if index in bare else f'{name}= {values}'}{tail}{newline}"


def _rewrite_moses_ini(text: str, weights: Mapping[str, float], path: str) -> tuple[str, dict[str, float]]:
    # errors as the reader reports them; the names it gives in the text (a [weight-file]'s weights are the
    # caller's to write again: rest)
    named = _read_moses_ini(text, path, weight_file=False)
    lines = text.splitlines(keepends=True)
    out = list(lines)
    dense: dict[str, list[tuple[int, int]]] = {}
    old: dict[str, list[tuple[int, int]]] = {}  # [weight-X] sections: one or more values a line
    for index, content, _, old_name in _moses_ini_weight_lines(lines):
        if old_name is None:
            _rewrite_weight_line(out, index, dense, weights)
        else:
            old.setdefault(old_name, []).append((index, len(content.split())))
    # the reader gathers a name's components from [weight] lines and [weight-X] sections alike, in file order
    merged: dict[str, list[tuple[int, int]]] = {}
    for name in dict.fromkeys([*dense, *old]):
        merged[name] = sorted(dense.get(name, []) + old.get(name, []))
    _rewrite_components(out, merged, {index for places in old.values() for index, _ in places}, weights)
    return "".join(out), _rest(weights, named)


def _section_end(lines: list[str], name: str) -> int | None:
    """The index after the last non-blank line of section ``[name]``, or ``None`` without one."""
    section, end = None, None
    for index, raw in enumerate(lines):
        content = raw.split("#", 1)[0].strip()
        if content.startswith("[") and content.endswith("]"):
            section = content[1:-1].strip()
            if section == name:
                end = index + 1
            continue
        if section == name and content:
            end = index + 1
    return end


def _without_section(lines: list[str], name: str) -> list[str]:
    out, section = [], None
    for raw in lines:
        content = raw.split("#", 1)[0].strip()
        if content.startswith("[") and content.endswith("]"):
            section = content[1:-1].strip()
        if section != name:
            out.append(raw)
    return out


def moses_dense_names(text: str, path: str) -> list[str]:
    """The canonical names of a moses.ini's dense feature values in Moses's order: the ``[feature]`` lines in
    order (a line's ``name=``, else its type and a count of the unnamed ones of that type, ``Distortion0``, as
    Moses's ``FeatureFunction::ParseLine`` names them), each with as many components as its ``[weight]`` line has
    values (``num-features=`` without one; sparse features have none): ``TranslationModel0_0 .. _3``, ``LM0``."""
    weights = parse_weights(text, path)
    components: dict[str, int] = {}
    for key in weights:
        stem, _, index = key.rpartition("_")
        if stem and index.isdigit():
            components[stem] = components.get(stem, 0) + 1
    names: list[str] = []
    unnamed: dict[str, int] = {}
    for position, line, section in _moses_ini_lines(text.splitlines()):
        if section != "feature":
            continue
        number = position + 1
        stub, *arguments = line.split()
        options = dict(argument.partition("=")[::2] for argument in arguments)
        name = options.get("name")
        if name is None:
            name = f"{stub}{unnamed.get(stub, 0)}"
            unnamed[stub] = unnamed.get(stub, 0) + 1
        if name in weights:
            count = 1
        elif name in components:
            count = components[name]
        else:
            declared = options.get("num-features", "0")
            if not declared.isdigit():
                raise InputError(f"expected num-features=N, got {declared!r}", path, number)
            count = int(declared)
        names.extend(component_names(name, count) if count else [])
    return names
