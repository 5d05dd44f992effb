"""How each built-in format recognises a file from its beginning: the sniffers, apart from the readers.

:func:`~hypertune.formats.registry.detect_format` tries the formats in sniffing order; a built-in format's
sniffer lives here, so that trying it imports only this module, not the format's reader with its compiled
kernels (a Moses n-best list is sniffed after eight other formats). Each format module registers the same
function. ``head`` is the file's first few kilobytes as text (:func:`~hypertune.formats.io.read_head`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

#: The first line of a Moses hypergraph file (kbmira's ``--type hypergraph`` input).
MOSES_HYPERGRAPH_HEADER = "# target ||| features ||| source-covered"

_CDEC_JSON = re.compile(r'^\{\s*"(rules|features|edges)"\s*:')
_JSONL_KEY = re.compile(r'"(id|hyp|features|scores|edges|rules|node|format|nodes)"\s*:')
_SEARCHGRAPH = re.compile(r"^\s*\d+\s+hyp=\d+\s+stack=\d+(\s|$)")
_PLF = re.compile(r"\(\s*\(\s*\(\s*['\"]")


def is_number(text: str) -> bool:
    """Whether ``float`` reads ``text``."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def sniff_nothing(head: str) -> bool:
    """A binary format's text sniffer: it recognises its files by their bytes only."""
    return False


def sniff_jsonl(head: str) -> bool:
    """A first line that is a JSON object with an integer ``"id"`` and one of ``"hyp"``, ``"features"``,
    ``"scores"`` (and none of the keys of cdec's or hypertune's JSON graphs); a first line longer than the
    head is judged by its keys."""
    first = next((line for line in head.split("\n") if line.strip()), "").strip()
    if not first.startswith("{"):
        return False
    complete = "\n" in head[head.find(first) :] or len(head) < 4096
    if complete:
        try:
            obj = json.loads(first)
        except (json.JSONDecodeError, RecursionError):
            return False
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), int) or isinstance(obj.get("id"), bool):
            return False
        keys = set(obj)
    else:
        keys = set(_JSONL_KEY.findall(first))
        if not re.search(r'"id"\s*:\s*\d', first):
            return False
    return bool(keys & {"hyp", "features", "scores"}) and not keys & {"edges", "rules", "node", "format", "nodes"}


def sniff_cdec_json(head: str) -> bool:
    match = _CDEC_JSON.match(head.lstrip())
    if match is None:
        return False
    return match.group(1) != "edges" or ('"tail"' in head and '"head"' not in head)


def sniff_extractor(head: str) -> bool:
    return head.lstrip().startswith(("FEATURES_TXT_BEGIN_", "SCORES_TXT_BEGIN_"))


def sniff_htk_slf(head: str) -> bool:
    lines = [line.strip() for line in head.split("\n") if line.strip() and not line.startswith("#")][:12]
    return bool(lines) and (
        lines[0].startswith(("VERSION=", "UTTERANCE="))
        or any(line.startswith("N=") and " L=" in line for line in lines)
    )


def sniff_hypertune_json(head: str) -> bool:
    stripped = head.lstrip("[ \t\r\n")
    return stripped.startswith("{") and '"edges"' in head and '"format": "hypertune"' in head.replace('":"', '": "')


def sniff_moses_hypergraph(head: str) -> bool:
    lines = [line.strip() for line in head.split("\n")[:6]]
    if not lines or not lines[0].startswith("#"):
        return False
    if lines[0].replace(" ", "") == MOSES_HYPERGRAPH_HEADER.replace(" ", ""):
        return True
    body = [line for line in lines if line and not line.startswith("#")]
    return len(body) >= 2 and len(body[0].split()) == 2 and all(f.isdigit() for f in body[0].split())


def sniff_moses_searchgraph(head: str) -> bool:
    for line in head.split("\n"):
        if line.strip():
            return _SEARCHGRAPH.match(line) is not None
    return False


def _first_rows(head: str, count: int = 3) -> list[list[str]]:
    """The ``|||`` fields of the head's first ``count`` non-empty lines (its last line left out when there are
    others: it may be cut)."""
    lines = [line for line in head.split("\n") if line.strip()]
    return [line.split("|||") for line in (lines[:-1][:count] if len(lines) > 1 else lines[:count])]


def _moses_nbest_row(fields: list[str]) -> bool:
    tokens = fields[2].split() if len(fields) >= 4 else []
    named = not tokens or "=" in tokens[0] or tokens[0].endswith(":")
    return len(fields) >= 4 and fields[0].strip().isdigit() and named


def _zmert_row(fields: list[str]) -> bool:
    return len(fields) == 3 and fields[0].strip().isdigit() and all(is_number(v) for v in fields[2].split())


def sniff_moses_nbest(head: str) -> bool:
    rows = _first_rows(head)
    return bool(rows) and all(_moses_nbest_row(fields) for fields in rows)


def sniff_zmert(head: str) -> bool:
    rows = _first_rows(head)
    return bool(rows) and all(_zmert_row(fields) for fields in rows)


def sniff_openfst(head: str) -> bool:
    lines = [line.split() for line in head.split("\n")[:-1] if line.strip()][:10]
    if not lines:
        return False
    for fields in lines:
        if not 1 <= len(fields) <= 5 or not fields[0].isdigit():
            return False
        if len(fields) >= 3 and not fields[1].isdigit():
            return False
        if len(fields) == 2 and not is_number(fields[1]):
            return False
    return any(len(f) >= 3 for f in lines)


def sniff_plf(head: str) -> bool:
    stripped = head.lstrip()
    return stripped.startswith("((") and _PLF.match(stripped) is not None


#: Each built-in format's text sniffer, by format name (the registry's :data:`~hypertune.formats.registry.BUILTIN`).
SNIFFERS: dict[str, Callable[[str], bool]] = {
    "hypertune-cache": sniff_nothing,
    "jsonl": sniff_jsonl,
    "cdec-json": sniff_cdec_json,
    "moses-extractor": sniff_extractor,
    "htk-slf": sniff_htk_slf,
    "hypertune": sniff_hypertune_json,
    "moses-hypergraph": sniff_moses_hypergraph,
    "moses-searchgraph": sniff_moses_searchgraph,
    "moses-nbest": sniff_moses_nbest,
    "zmert": sniff_zmert,
    "openfst": sniff_openfst,
    "plf": sniff_plf,
}
