"""k-best lists: Moses n-best lists (also Joshua's) and Z-MERT candidate files. Each sentence becomes the
degenerate lattice of :func:`hypertune.hypergraph.from_kbest` (hypothesis ``i`` of the sentence is edge
``i + 1``, in file order) whose ``sentence_id`` is the list's id, with the decoder's total scores in
``metadata["totals"]`` (written back by :func:`write_moses`).

Moses / Joshua: ``id ||| hypothesis ||| features ||| total [||| more fields]``. The features field mixes

* labelled dense groups ``Name= v1 v2 ...``: one value keeps the name ``Name``, ``k > 1`` values are
  ``Name_0 .. Name_{k-1}`` (canonical names, as Moses's mert names them);
* the legacy labels ``d: v1 v2 ... lm: v1 v2 tm: ... w: v`` (same naming: ``d_0 .. d_6``, ``lm_0``,
  ``lm_1``, ``w``) -- never silently zero;
* sparse / Joshua features ``name=value`` (one token; the name is kept as written, e.g. ``tm_pt_3``).

A group label must be followed by at least one number; a number without a label, an unparsable value
and a repeated label are errors naming the line. Lines of one sentence must be contiguous.

Z-MERT: ``i ||| candidate ||| v1 v2 ...`` with unnamed dense features; the names come from a Z-MERT
parameter file (:func:`read_zmert`, ``names=`` or ``params=``) and default to ``F0, F1, ...``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from hypertune.errors import GraphError, InputError
from hypertune.formats._common import check_word, component_names, format_number
from hypertune.formats.io import open_text, write_atomically
from hypertune.formats.registry import GraphFormat, register
from hypertune.hypergraph import Hypergraph, from_kbest
from hypertune.symbols import FeatureSpace, Vocabulary

_LABEL = re.compile(r"^[^\s=:]+[=:]$")


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


def kbest_entries(hg: Hypergraph) -> list[tuple[list[str], dict[str, float]]]:
    """The hypotheses of a k-best lattice (or of any lattice's start-goal edges) as (words, features)."""
    out = []
    for e in range(hg.num_edges):
        tails = hg.edge_tails(e)
        if len(tails) == 0:
            continue
        if len(tails) != 1 or tails[0] != 0 or hg.head[e] != hg.goal:
            raise InputError(
                "only k-best lists (one edge per hypothesis from the start node to the goal) can be written "
                "as an n-best list; decode the graph with --kbest first"
            )
        words = [hg.vocabulary.word(int(t)) for t in hg.edge_target(e) if t >= 0]
        out.append((words, hg.edge_features(e)))
    return out


def write_moses(graphs: Sequence[Hypergraph], path: str) -> None:
    """Moses n-best lines ``sid ||| words ||| name= value ... ||| total`` (total = the stored total, else 0).
    Each feature is written as its own one-value group, which reads back under the same name."""
    lines = []
    for i, hg in enumerate(graphs):
        sid = i if hg.sentence_id is None else hg.sentence_id
        totals = hg.metadata.get("totals")
        for k, (words, features) in enumerate(kbest_entries(hg)):
            for w in words:
                check_word(w, "an n-best list")
                if w == "|||":
                    raise InputError("cannot write the word '|||' in an n-best list")
            feats = " ".join(f"{_check_name(n)}= {format_number(v)}" for n, v in features.items())
            total = totals[k] if totals is not None and len(totals) > k else 0.0
            lines.append(f"{sid} ||| {' '.join(words)} ||| {feats} ||| {format_number(total)}\n")
    write_atomically(path, "".join(lines))


def _check_name(name: str) -> str:
    if not name or any(c.isspace() or c in "=:|" for c in name):
        raise InputError(f"cannot write the feature name {name!r} in an n-best list")
    return name


def feature_order(path: str) -> list[str]:
    """The dense feature order that positional weights (``init.opt``, kbmira's legacy dense line) follow:
    the names of a FEATSTAT header, or the labelled groups (``Name= v ...``, ``name: v ...``) of an
    n-best list's first line, canonically named; ``name=value`` tokens are sparse and not counted."""
    from hypertune.formats._common import collapse_single_components
    from hypertune.formats.io import read_head

    head = read_head(path, 1 << 16)
    first = next((line for line in head.split("\n") if line.strip()), "")
    fields = first.split()
    if fields and fields[0].startswith("FEATURES_TXT_BEGIN_"):
        return collapse_single_components(fields[4:])
    parts = first.split("|||")
    if len(parts) < 4:
        raise InputError("expected an n-best list or a FEATSTAT file to take the feature order from", path, 1)
    dense = [token for token in parts[2].split() if _LABEL.match(token) or "=" not in token]
    return [name for name, _ in parse_features(" ".join(dense), path, 1)]


# ---------------------------------------------------------------------- Z-MERT


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


# ---------------------------------------------------------------------- sniffing


def _first_lines(head: str, count: int = 3) -> list[str]:
    lines = [line for line in head.split("\n") if line.strip()]
    return lines[:-1][:count] if len(lines) > 1 else lines[:count]


def sniff_moses(head: str) -> bool:
    lines = _first_lines(head)
    if not lines:
        return False
    for line in lines:
        fields = line.split("|||")
        if len(fields) < 4 or not fields[0].strip().isdigit():
            return False
        tokens = fields[2].split()
        if tokens and not ("=" in tokens[0] or tokens[0].endswith(":")):
            return False
    return True


def sniff_zmert(head: str) -> bool:
    lines = _first_lines(head)
    if not lines:
        return False
    for line in lines:
        fields = line.split("|||")
        if len(fields) != 3 or not fields[0].strip().isdigit():
            return False
        try:
            [float(v) for v in fields[2].split()]
        except ValueError:
            return False
    return True


MOSES = register(
    GraphFormat(
        "moses-nbest",
        "Moses / Joshua n-best lists (one k-best lattice per sentence)",
        sniff_moses,
        read_moses,
        write_moses,
    )
)
ZMERT = register(GraphFormat("zmert", "Z-MERT candidate files (unnamed dense features)", sniff_zmert, read_zmert))
