"""Moses phrase-based search graphs (``moses -output-search-graph FILE``, and ``-osgx`` / the extended form
``-output-search-graph-extended FILE``), read as lattices: one graph per sentence id.

::

    0 hyp=0 stack=0 forward=1 fscore=-3
    0 hyp=1 stack=1 back=0 score=-1 transition=-1 forward=4 fscore=-2 covered=0-0 out=the
    0 hyp=4 stack=2 back=1 score=-2.2 transition=-1.2 forward=7 fscore=-0.8 covered=1-1 out=small
    0 hyp=2 stack=2 back=0 score=-2.5 transition=-2.5 recombined=4 forward=7 fscore=-0.8 covered=0-1 out=the small

The first field is the sentence id; hypothesis ids are per sentence. ``hyp=0`` is the start (Moses writes
``forward=`` and ``fscore=`` on it in older versions and in the extended form). Every other line is a
transition from hypothesis ``back`` to hypothesis ``hyp`` that covers the source span ``covered=a-b`` and
writes the phrase ``out=`` (the rest of the line; may be empty). A line with ``recombined=R`` describes a
hypothesis that lost recombination to ``R``: it becomes an arc from ``back`` into ``R`` (the loser is no node).
``stack`` is the number of source words covered; the hypotheses of the last stack are final and are joined
into one goal node by empty arcs. ``forward``/``fscore`` (Moses's best continuation) are checked, not kept.

Features. In the plain form the one number per arc is ``transition`` (the weighted model score of the step,
``score(hyp) - score(back)``): it becomes the feature ``Transition``, so the weight ``Transition = 1``
reproduces Moses's scores and its best path. The extended form adds the unweighted feature values of the
step, ``scores="core=(v0,v1,...) Sparse_name=v ..."`` (older Moses: ``"{core=(...) name=v, }"`` or
``"<<v0, v1, ...>>"``) and writes ``out="source phrase|target phrase"``. Moses prints the dense values by
position only; they are named ``core_0 .. core_{k-1}`` (``core`` if ``k = 1``, the canonical names of a
dense feature ``core``), or by ``dense_names`` given to :func:`read` (e.g. the canonical names in the
order of moses.ini's ``[feature]`` section, which is Moses's dense order). Sparse features keep their names.
In the extended form ``transition`` is checked but not a feature. Zero values are dropped.

Checks (each an :class:`InputError` naming the line): every field is ``name=value`` of a known name; numbers
are finite; ``back``, ``recombined`` and ``forward`` name hypotheses of the same sentence (``back`` a
surviving one); ``stack(hyp) = stack(back) + covered words``; ``score = score(back) + transition`` up to the printed
precision (:func:`half_unit`: half a unit in the last printed place of each of the three numbers, summed --
Moses prints them rounded to three decimals -- plus single-precision rounding, since Moses computes the
transition as a ``float`` difference; the start's score is not printed, so the first arc from it fixes it
within its own two numbers' precision); a hypothesis is described once; a sentence's lines are contiguous and
start with hyp=0.

Graph: nodes are the start, the surviving hypotheses ordered by (stack, id) and the goal (node labels are
the Moses ids, ``goal`` for the goal). ``sentence_id`` is the sentence id; ``source_covered`` gives per edge
the number of source words covered after it, as in Moses hypergraphs, so a converted graph keeps them;
``metadata["covered"]`` lists per edge the source span ``[a, b]`` of the arc (``None`` for the start axiom
and the goal arcs).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from hypertune.errors import GraphError, InputError
from hypertune.formats._common import component_names, parse_float, parse_int
from hypertune.formats.io import open_text
from hypertune.formats.registry import GraphFormat, register
from hypertune.formats.sniffing import sniff_moses_searchgraph as sniff
from hypertune.hypergraph import Hypergraph, HypergraphBuilder, trim, useful_edges
from hypertune.symbols import FeatureSpace, Vocabulary

TRANSITION = "Transition"
DENSE = "core"
START_FIELDS = frozenset({"hyp", "stack", "forward", "fscore"})
REQUIRED = ("hyp", "stack", "back", "score", "transition", "forward", "covered", "out")
ALLOWED = frozenset({*REQUIRED, "fscore", "recombined", "scores"})

_KEY = re.compile(r"([A-Za-z]+)=")
_COVERED = re.compile(r"^(\d+)-(\d+)$")
#: The relative rounding of a single-precision ``float`` (Moses's scores and their difference, the transition).
FLOAT32_ROUNDING = 2.0**-24


def half_unit(text: str) -> float:
    """Half a unit in the last place of a printed number: how far the value it was rounded from may lie
    (``-0.994`` -> 0.0005, ``12`` -> 0.5, ``1.5e-05`` -> 5e-07)."""
    mantissa, _, exponent = text.strip().lower().partition("e")
    _, point, decimals = mantissa.partition(".")
    return 0.5 * 10.0 ** ((int(exponent) if exponent else 0) - (len(decimals) if point else 0))


@dataclass
class _Line:
    number: int
    hyp: int
    stack: int
    back: int | None = None
    score: float = 0.0
    transition: float = 0.0
    score_slack: float = 0.0  # half a unit in the last printed place of score= and of transition=
    transition_slack: float = 0.0
    recombined: int | None = None
    forward: int | None = None
    covered: tuple[int, int] | None = None
    words: list[str] = field(default_factory=list)
    features: list[tuple[str, float]] = field(default_factory=list)


def _fields(text: str, path: str, number: int) -> tuple[int, dict[str, str]]:
    """The sentence id and the ``name=value`` fields of a line (``out=`` takes the rest of the line)."""
    first = text.split(None, 1)
    sid = parse_int(first[0], "the sentence id (first field)", path, number)
    i = len(text) - len(first[1]) if len(first) > 1 else len(text)
    fields: dict[str, str] = {}
    n = len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i >= n:
            return sid, fields
        match = _KEY.match(text, i)
        if match is None:
            raise InputError(f"expected a field name=value, got {text[i : i + 20]!r}", path, number)
        key = match.group(1)
        if key in fields:
            raise InputError(f"the field {key}= appears twice", path, number)
        i = match.end()
        if key == "out":
            fields[key] = text[i:].strip()
            return sid, fields
        if i < n and text[i] == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise InputError(f"the value of {key}= lacks its closing '\"'", path, number)
            fields[key] = text[i + 1 : end]
            i = end + 1
            if i < n and not text[i].isspace():
                raise InputError(f'expected a space after {key}="...", got {text[i : i + 10]!r}', path, number)
        else:
            end = i
            while end < n and not text[end].isspace():
                end += 1
            fields[key] = text[i:end]
            i = end


def _parse_scores(
    text: str, dense_names: Sequence[str] | None, path: str, number: int
) -> tuple[int, list[tuple[str, float]]]:
    """The dense count and the nonzero features of an extended ``scores="..."`` value."""
    body = text.strip()
    sparse_text = ""
    if body.startswith("<<"):
        if not body.endswith(">>"):
            raise InputError("expected scores=\"<<v0, v1, ...>>\" (the closing '>>')", path, number)
        dense_text = body[2:-2]
    else:
        if body.startswith("{"):
            if not body.endswith("}"):
                raise InputError("expected scores=\"{core=(...) ...}\" (the closing '}')", path, number)
            body = body[1:-1].strip()
        if not body.startswith("core=("):
            raise InputError(f'expected scores="core=(v0,v1,...) name=v ...", got {text[:30]!r}', path, number)
        close = body.find(")")
        if close < 0:
            raise InputError("expected the ')' closing core=(...)", path, number)
        dense_text = body[len("core=(") : close]
        sparse_text = body[close + 1 :]
    values = [v.strip() for v in dense_text.split(",")] if dense_text.strip() else []
    dense = [parse_float(v, f"dense score {k}", path, number) for k, v in enumerate(values)]
    if dense_names is not None:
        if len(dense_names) != len(dense):
            raise InputError(
                f"{len(dense)} dense scores but {len(dense_names)} dense feature names were given", path, number
            )
        names = list(dense_names)
    else:
        names = component_names(DENSE, len(dense))
    features = [(name, value) for name, value in zip(names, dense, strict=True) if value != 0.0]
    for token in sparse_text.replace(",", " ").split():
        name, eq, value = token.rpartition("=")
        if not eq or not name:
            raise InputError(f"expected a sparse score name=value, got {token!r}", path, number)
        number_value = parse_float(value, f"the sparse score {name}", path, number)
        if number_value != 0.0:
            features.append((name, number_value))
    return len(dense), features


class _Reader:
    def __init__(self, path: str, dense_names: Sequence[str] | None) -> None:
        self.path = path
        self.dense_names = dense_names
        self.extended: bool | None = None
        self.dense_count: int | None = None

    def fail(self, message: str, number: int) -> InputError:
        return InputError(message, self.path, number)

    def line(self, fields: dict[str, str], number: int) -> _Line:
        path = self.path
        if "hyp" not in fields or "stack" not in fields:
            raise self.fail("expected 'id hyp=N stack=N ...' (a search graph line)", number)
        hyp = parse_int(fields["hyp"], "hyp=", path, number)
        stack = parse_int(fields["stack"], "stack=", path, number)
        if hyp == 0:
            return self._start_line(fields, stack, number)
        unknown = sorted(set(fields) - ALLOWED)
        if unknown:
            raise self.fail(f"unknown field {unknown[0]}= (expected {', '.join(REQUIRED)}, ...)", number)
        missing = [key for key in REQUIRED if key not in fields]
        if missing:
            raise self.fail(f"hypothesis {hyp}: missing the field {missing[0]}=", number)
        extended = "scores" in fields
        if self.extended is None:
            self.extended = extended
        elif self.extended != extended:
            kind = "has" if extended else "lacks"
            raise self.fail(f"this line {kind} scores=, unlike the file's first transition line", number)
        line = _Line(
            number,
            hyp,
            stack,
            back=parse_int(fields["back"], "back=", path, number),
            score=parse_float(fields["score"], "score=", path, number),
            transition=parse_float(fields["transition"], "transition=", path, number),
            forward=parse_int(fields["forward"], "forward=", path, number, minimum=-1),
            score_slack=half_unit(fields["score"]),
            transition_slack=half_unit(fields["transition"]),
        )
        if "recombined" in fields:
            line.recombined = parse_int(fields["recombined"], "recombined=", path, number, minimum=1)
        if "fscore" in fields:
            parse_float(fields["fscore"], "fscore=", path, number)
        match = _COVERED.match(fields["covered"])
        if match is None or int(match.group(1)) > int(match.group(2)):
            raise self.fail(f"expected covered=START-END (source positions), got {fields['covered']!r}", number)
        line.covered = (int(match.group(1)), int(match.group(2)))
        self._read_output(line, fields, extended)
        return line

    def _start_line(self, fields: dict[str, str], stack: int, number: int) -> _Line:
        """The start hypothesis's line (``hyp=0``)."""
        unknown = sorted(set(fields) - START_FIELDS)
        if unknown:
            raise self.fail(f"hyp=0 is the start hypothesis: it has no {unknown[0]}= field", number)
        if stack != 0:
            raise self.fail(f"the start hypothesis hyp=0 must be in stack 0, got stack={stack}", number)
        line = _Line(number, 0, 0)
        if "forward" in fields:
            line.forward = parse_int(fields["forward"], "forward=", self.path, number, minimum=-1)
        if "fscore" in fields:
            parse_float(fields["fscore"], "fscore=", self.path, number)
        return line

    def _read_output(self, line: _Line, fields: dict[str, str], extended: bool) -> None:
        """A transition line's target words and features: ``out=`` and, in the extended format, ``scores=``."""
        number, path = line.number, self.path
        out = fields["out"]
        if extended:
            if len(out) < 2 or out[0] != '"' or out[-1] != '"' or "|" not in out[1:-1]:
                raise self.fail(f'expected out="source phrase|target phrase", got {out[:30]!r}', number)
            target = out[1:-1].rpartition("|")[2]
            count, line.features = _parse_scores(fields["scores"], self.dense_names, path, number)
            if self.dense_count is None:
                self.dense_count = count
            elif count != self.dense_count:
                raise self.fail(f"{count} dense scores, but earlier lines have {self.dense_count}", number)
        else:
            target = out
            if line.transition != 0.0:
                line.features = [(TRANSITION, line.transition)]
        line.words = target.split()

    def sentence(self, sid: int, lines: list[_Line], feature_space: FeatureSpace, vocabulary: Vocabulary) -> Hypergraph:
        first = lines[0].number
        survivors: dict[int, _Line] = {}
        losers: dict[int, _Line] = {}
        for line in lines:
            earlier = survivors.get(line.hyp) or losers.get(line.hyp)
            if earlier is not None:
                raise self.fail(
                    f"sentence {sid}: hypothesis {line.hyp} is described twice (first on line {earlier.number})",
                    line.number,
                )
            (losers if line.recombined is not None else survivors)[line.hyp] = line
        if 0 not in survivors:
            raise self.fail(f"sentence {sid} has no start hypothesis line '{sid} hyp=0 stack=0'", first)
        self.check_back_links(sid, lines, survivors, losers)
        final_stack = max(line.stack for line in survivors.values())
        self.check_forward_links(sid, lines, survivors, losers, final_stack)
        return self.graph(sid, lines, survivors, final_stack, feature_space, vocabulary)

    def check_back_links(self, sid: int, lines: list[_Line], survivors: dict, losers: dict) -> None:
        """``back`` names a surviving hypothesis one phrase earlier, ``score`` is its score plus
        ``transition``, and ``recombined`` names a survivor of the same stack."""
        start: tuple[float, float] | None = None  # the start's score implied by its first arc, and its slack
        for line in lines:
            if line.hyp == 0:
                continue
            assert line.back is not None and line.covered is not None
            back = survivors.get(line.back)
            if back is None:
                what = "a recombined hypothesis" if line.back in losers else "no hypothesis"
                raise self.fail(f"sentence {sid}: back={line.back} names {what} of this sentence", line.number)
            width = line.covered[1] - line.covered[0] + 1
            if line.stack != back.stack + width:
                raise self.fail(
                    f"stack={line.stack}, but back={line.back} is in stack {back.stack} and covered="
                    f"{line.covered[0]}-{line.covered[1]} adds {width} word(s)",
                    line.number,
                )
            implied = line.score - line.transition
            slack = line.score_slack + line.transition_slack
            if line.back == 0 and start is None:
                start = (implied, slack)
            reference = start if line.back == 0 and start is not None else (back.score, back.score_slack)
            expected, expected_slack = reference
            rounding = FLOAT32_ROUNDING * (abs(line.score) + abs(line.transition) + abs(expected))
            allowed = slack + expected_slack + rounding
            if not abs(implied - expected) <= allowed:
                raise self.fail(
                    f"score={line.score} is not the score of back={line.back} ({expected:g}) plus "
                    f"transition={line.transition}: off by {abs(implied - expected):.3g}, more than the printed "
                    f"precision allows ({allowed:.3g})",
                    line.number,
                )
            if line.recombined is not None:
                winner = survivors.get(line.recombined)
                if winner is None or winner.hyp == 0:
                    raise self.fail(
                        f"sentence {sid}: recombined={line.recombined} names no surviving hypothesis", line.number
                    )
                if winner.stack != line.stack:
                    raise self.fail(
                        f"recombined={line.recombined} is in stack {winner.stack}, this hypothesis in {line.stack}",
                        line.number,
                    )

    def check_forward_links(
        self, sid: int, lines: list[_Line], survivors: dict, losers: dict, final_stack: int
    ) -> None:
        """``forward`` is -1 exactly on final hypotheses and otherwise names an extension of this one."""
        for line in lines:
            if line.hyp == 0 or line.forward is None:
                continue
            stack = survivors[line.recombined].stack if line.recombined is not None else line.stack
            head = line.recombined if line.recombined is not None else line.hyp
            if (line.forward == -1) != (stack == final_stack):
                where = "a final" if stack == final_stack else "a non-final"
                raise self.fail(
                    f"forward={line.forward} on {where} hypothesis (final hypotheses, in stack {final_stack}, "
                    "have forward=-1)",
                    line.number,
                )
            if line.forward != -1:
                successor = survivors.get(line.forward) or losers.get(line.forward)
                if successor is None or successor.back != head:
                    raise self.fail(
                        f"sentence {sid}: forward={line.forward} names no hypothesis extending hypothesis {head}",
                        line.number,
                    )

    def graph(
        self,
        sid: int,
        lines: list[_Line],
        survivors: dict,
        final_stack: int,
        feature_space: FeatureSpace,
        vocabulary: Vocabulary,
    ) -> Hypergraph:
        """The lattice: start, survivors by (stack, id), goal; one arc per non-start line, into the
        hypothesis it recombined into, and an arc from every final survivor to the goal."""
        first = lines[0].number
        order = sorted(survivors.values(), key=lambda h: (h.stack, h.hyp))
        node = {h.hyp: v for v, h in enumerate(order)}
        goal = len(order)
        arcs = []
        for line in lines:
            if line.hyp != 0:
                head = line.recombined if line.recombined is not None else line.hyp
                arcs.append((node[head], line))
        arcs.sort(key=lambda arc: arc[0])
        builder = HypergraphBuilder(feature_space, vocabulary)
        builder.add_encoded_edge(0, (), (), ())
        covered: list[list[int] | None] = [None]
        source_covered = [0]
        for head, line in arcs:
            assert line.back is not None and line.covered is not None
            tokens = [-1, *(vocabulary.index(word) for word in line.words)]
            builder.add_encoded_edge(head, [node[line.back]], line.features, tokens)
            covered.append(list(line.covered))
            source_covered.append(line.stack)
        for h in order:
            if h.stack == final_stack:
                builder.add_encoded_edge(goal, [node[h.hyp]], (), [-1])
                covered.append(None)
                source_covered.append(final_stack)
        labels = [str(h.hyp) for h in order] + ["goal"]
        try:
            graph = builder.build_in_order(goal + 1, labels=labels, sentence_id=sid, source_covered=source_covered)
            keep_edges, keep_nodes = useful_edges(graph)
            if not keep_edges.all() or not keep_nodes.all():
                graph = trim(graph)
                covered = [c for c, keep in zip(covered, keep_edges, strict=True) if keep]
        except GraphError as error:
            raise self.fail(f"sentence {sid}: invalid search graph: {error}", first) from None
        graph.metadata["covered"] = covered
        return graph


def _lines(path: str) -> Iterator[tuple[int, str]]:
    with open_text(path) as handle:
        try:
            yield from enumerate(handle, 1)
        except (UnicodeDecodeError, EOFError, OSError) as error:
            raise InputError(f"cannot read the file ({error})", path) from None


def read(
    path: str, feature_space: FeatureSpace, vocabulary: Vocabulary, dense_names: Sequence[str] | None = None
) -> list[Hypergraph]:
    """One lattice per sentence id, in file order. ``dense_names``: names of the extended form's dense
    scores in Moses's order (default ``core_0 .. core_{k-1}``)."""
    reader = _Reader(path, dense_names)
    graphs: list[Hypergraph] = []
    done: set[int] = set()
    current: int | None = None
    lines: list[_Line] = []
    number = 0
    for number, raw in _lines(path):
        text = raw.rstrip("\r\n")
        if not text.strip():
            continue
        sid, fields = _fields(text, path, number)
        if sid != current:
            if current is not None:
                graphs.append(reader.sentence(current, lines, feature_space, vocabulary))
                done.add(current)
            if sid in done:
                raise InputError(f"sentence {sid} appears again after other sentences", path, number)
            current, lines = sid, []
        lines.append(reader.line(fields, number))
    if current is None:
        raise InputError("no search graph lines in the file (expected 'id hyp=0 stack=0 ...')", path, max(number, 1))
    graphs.append(reader.sentence(current, lines, feature_space, vocabulary))
    return graphs


FORMAT = register(
    GraphFormat(
        "moses-searchgraph",
        "Moses phrase-based search graphs (-output-search-graph, -osgx), one lattice per sentence",
        sniff,
        read,
    )
)
