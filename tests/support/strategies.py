"""Hypothesis strategies: small random acyclic hypergraphs and lattices (with shuffled node ids, so the
builder's topological sort is exercised too)."""

from __future__ import annotations

import re

from hypothesis import assume
from hypothesis import strategies as st

from hypertune.algorithms import count_derivations
from hypertune.hypergraph import Hypergraph, HypergraphBuilder
from hypertune.weights import Weights

FEATURES = ("f0", "f1", "f2")
WORDS = ("a", "b", "c", "d")
values = st.floats(-2.0, 2.0, allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def hypergraphs(
    draw: st.DrawFn, max_nodes: int = 6, max_arity: int = 2, lattice: bool = False, max_derivations: int = 3000
) -> Hypergraph:
    n = draw(st.integers(1 if not lattice else 2, max_nodes))
    permutation = draw(st.permutations(range(n)))
    builder = HypergraphBuilder()
    builder.add_nodes(n)
    if lattice:
        builder.add_edge(permutation[0], [], {}, [])
    for v in range(n):
        if lattice and v == 0:
            continue
        for _ in range(draw(st.integers(1, 3))):
            arity = 1 if lattice else draw(st.integers(0, min(max_arity, v)))
            tails = [draw(st.integers(0, v - 1)) for _ in range(arity)]
            features = draw(st.dictionaries(st.sampled_from(FEATURES), values, max_size=3))
            words = draw(st.lists(st.sampled_from(WORDS), max_size=2))
            target = [*words[:1], *range(arity), *words[1:]]
            builder.add_edge(permutation[v], [permutation[t] for t in tails], features, target)
    hg = builder.build(permutation[n - 1], trim_graph=True)
    assume(count_derivations(hg) <= max_derivations)
    return hg


weights = st.builds(lambda vs: Weights(dict(zip(FEATURES, vs, strict=True))), st.tuples(values, values, values))


@st.composite
def corruptions(draw: st.DrawFn, text: str, junk: list[str], token: str = r"\S+") -> str:
    """``text`` damaged once: truncated, a token (regex ``token``) or a spot replaced by junk, a line deleted,
    repeated or swapped with another — what parsers must reject with a located error (or read correctly)."""
    lines = text.split("\n")
    kind = draw(st.sampled_from(["truncate", "token", "delete-line", "repeat-line", "swap-lines", "insert"]))
    if kind == "truncate":
        return text[: draw(st.integers(0, max(0, len(text) - 1)))]
    if kind == "token":
        spans = [(m.start(), m.end()) for m in re.finditer(token, text)]
        i, j = draw(st.sampled_from(spans))
        return text[:i] + draw(st.sampled_from(junk)) + text[j:]
    if kind == "insert":
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.sampled_from(junk)) + text[at:]
    k = draw(st.integers(0, len(lines) - 1))
    if kind == "delete-line":
        return "\n".join(lines[:k] + lines[k + 1 :])
    if kind == "repeat-line":
        return "\n".join(lines[: k + 1] + lines[k:])
    m = draw(st.integers(0, len(lines) - 1))
    lines[k], lines[m] = lines[m], lines[k]
    return "\n".join(lines)


# Junk tokens and the token pattern the format fuzzers corrupt inputs with.
JUNK = [
    "",
    "x",
    "nan",
    "inf",
    "1e999",
    "-",
    "[99]",
    "[0]",
    "|||",
    "{",
    "}",
    "'",
    '"',
    ":",
    "=",
    "a=b",
    "0",
    "-1",
    "99999",
    "1.5",
    "(",
    ")",
    ",",
    "\\",
    "[X,3]",
    "###",
]


TOKEN = r"[^\s,()\[\]{}:'\"|=]+|\|\|\||[\[\]{}(),:'\"=]"


def format_corruptions(text: str) -> st.SearchStrategy[str]:
    return corruptions(text, JUNK, TOKEN)
