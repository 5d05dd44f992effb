"""OpenFst text (AT&T) format for acyclic acceptors and transducers, read and written.

::

    0 1 the the 0.5        <- source target input output [weight]   (a transducer)
    0 1 a 0.7              <- source target label [weight]          (an acceptor)
    1 2 cat 0.25
    2 0.1                  <- final state [final weight]

The first arc's source is the start state. Labels are symbols as ``fstprint`` writes them with symbol
tables; ``<eps>`` (and ``0`` when labels are numeric ids) is the empty word. The **output** label is the
target word (for an acceptor, the label). The arc weight (tropical or log: a cost, i.e. a negative log
probability) becomes the feature ``FstWeight``; the final weights too, on an edge from every final
state into one new goal node (so ``FstWeight = -1`` scores a path by its log probability). Input labels
of a transducer are checked but not kept (hypertune scores the output side). A file with 4-field arc lines is a
transducer if any arc line has 5 fields or the 4th field is not a number, otherwise an acceptor with
weights. Cycles are an error; states not on a start-final path are dropped.
The writer writes an acceptor (``source target word weight``) of a lattice whose only feature is
``FstWeight``. When every edge into the goal is an empty arc (as the reader makes them), their tails are
written as final states with those weights, so a read FST is written back as it was; otherwise the goal
is the final state. A lattice with other features (PLF costs, several features per arc) is first
collapsed under weights ``w`` by :func:`collapse`: each arc's one weight is the cost ``-(w . f)``, so the
FST read back scores every path under ``FstWeight = -1`` exactly as the lattice did under ``w``, and its
shortest path is the lattice's Viterbi path.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from hypertune.errors import GraphError, InputError
from hypertune.formats._common import check_word, format_number
from hypertune.formats.io import open_text, write_atomically
from hypertune.formats.registry import GraphFormat, register
from hypertune.formats.sniffing import is_number
from hypertune.formats.sniffing import sniff_openfst as sniff
from hypertune.hypergraph import Hypergraph, HypergraphBuilder
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.weights import Weights

FEATURE = "FstWeight"
EPSILON = "<eps>"


def _weight(text: str, path: str, number: int) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"expected a weight, got {text!r}", path, number) from None
    if math.isnan(value) or value == -math.inf:
        raise InputError(f"weight {text!r} is not a usable cost", path, number)
    return value


def _rows(path: str) -> list[tuple[int, list[str]]]:
    """The non-empty lines' fields, with their line numbers."""
    rows = []
    with open_text(path) as handle:
        try:
            for number, raw in enumerate(handle, 1):
                fields = raw.split()
                if fields:
                    rows.append((number, fields))
        except (UnicodeDecodeError, EOFError, OSError) as error:
            raise InputError(f"cannot read the file ({error})", path) from None
    return rows


def _arc_output(fields: list[str], transducer: bool, numeric: bool, path: str, number: int) -> tuple[list[str], float]:
    """An arc line's output words (none for epsilon) and its weight."""
    if transducer:
        if len(fields) < 4:
            raise InputError("a transducer arc needs 'source target input output [weight]'", path, number)
        label_out = fields[3]
        weight = _weight(fields[4], path, number) if len(fields) == 5 else 0.0
    else:
        label_out = fields[2]
        weight = _weight(fields[3], path, number) if len(fields) == 4 else 0.0
    empty = label_out == EPSILON or (numeric and label_out == "0")
    return [] if empty else [label_out], weight


def _layout(rows: list[tuple[int, list[str]]]) -> tuple[bool, bool]:
    """Whether the arcs are a transducer's (input and output labels) and whether their labels are numbers."""
    transducer = any(len(f) == 5 for _, f in rows) or any(len(f) == 4 and not is_number(f[3]) for _, f in rows)
    numeric = all(f[2].isdigit() for _, f in rows if len(f) >= 3)
    return transducer, numeric


def _arcs_and_finals(
    rows: list[tuple[int, list[str]]],
    state: Callable[[str, int], int],
    transducer: bool,
    numeric: bool,
    path: str,
) -> tuple[list[tuple[int, int, int, list[str], float]], list[tuple[int, float]]]:
    """The arcs (line, source, target, output words, weight; none of weight infinity) and the final states
    (state, weight) of the rows, states numbered by ``state``."""
    arcs = []
    finals = []
    for number, fields in rows:
        if len(fields) <= 2:
            finals.append((state(fields[0], number), _weight(fields[1], path, number) if len(fields) == 2 else 0.0))
            continue
        if len(fields) > (5 if transducer else 4):
            raise InputError(f"expected at most {5 if transducer else 4} fields, got {len(fields)}", path, number)
        source, target = state(fields[0], number), state(fields[1], number)
        words, weight = _arc_output(fields, transducer, numeric, path, number)
        if weight == math.inf:
            continue  # a zero-probability arc
        arcs.append((number, source, target, words, weight))
    return arcs, finals


def read(path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
    rows = _rows(path)
    if not rows:
        raise InputError("an empty FST (expected 'source target label [weight]' lines)", path, 1)
    transducer, numeric = _layout(rows)
    states: dict[str, int] = {}
    builder = HypergraphBuilder(feature_space, vocabulary)

    def state(name: str, number: int) -> int:
        if not name.isdigit():
            raise InputError(f"expected a state number, got {name!r}", path, number)
        if name not in states:
            states[name] = builder.add_node(name)
        return states[name]

    arcs, finals = _arcs_and_finals(rows, state, transducer, numeric, path)
    if not arcs:
        raise InputError("the FST has no arcs", path, rows[-1][0])
    if not finals:
        raise InputError("the FST has no final state (a line 'state [weight]')", path, rows[-1][0])
    start = states[rows[0][1][0]] if len(rows[0][1]) > 2 else arcs[0][1]
    builder.add_edge(start, (), None, [])
    for number, source, target, words, weight in arcs:
        if target == start:
            raise InputError(f"an arc enters the start state {rows[0][1][0]} (the FST has a cycle)", path, number)
        builder.add_edge(target, [source], {FEATURE: weight} if weight else None, [0, *words])
    goal = builder.add_node("</final>")
    for final, weight in finals:
        if weight != math.inf:
            builder.add_edge(goal, [final], {FEATURE: weight} if weight else None, [0])
    try:
        return [builder.build(goal, trim_graph=True)]
    except GraphError as error:
        raise InputError(f"invalid FST: {error}", path, rows[-1][0]) from None


def collapse(hg: Hypergraph, weights: Weights) -> Hypergraph:
    """``hg`` with each edge's features replaced by the one feature ``FstWeight = -(w . f)``: the cost that
    an OpenFst arc carries (tropical weights are costs, lower is better)."""
    costs = -weights.edge_scores(hg)
    edges = np.flatnonzero(costs)
    column = np.full(edges.size, hg.feature_space.index(FEATURE))
    matrix = sp.csr_matrix((costs[edges], (edges, column)), shape=(hg.num_edges, len(hg.feature_space)))
    return hg.with_features(matrix)


def _one_weight(hg: Hypergraph, e: int) -> dict[str, float]:
    """The features of edge ``e``, checked to be at most the one ``FstWeight`` an arc can carry."""
    features = hg.edge_features(e)
    other = sorted(n for n, v in features.items() if n != FEATURE and v != 0)
    if other:
        raise InputError(
            f"edge {e} has the feature(s) {', '.join(other[:4])}, but an OpenFst arc carries one weight "
            f"({FEATURE}): collapse the features into one cost -(w.f) with weights "
            "(hypertune convert --collapse-weights FILE)"
        )
    return features


def fst_to_text(hg: Hypergraph) -> str:
    """One lattice as an OpenFst text acceptor (see the module docstring)."""
    if not hg.is_lattice:
        raise InputError("only lattices can be written as an FST")
    if any(_one_weight(hg, 0).values()):
        raise InputError("the start axiom (edge 0) carries a weight, which an FST has no place for")
    lines = []
    goal_edges = list(hg.in_edges(hg.goal))
    finals_from_tails = all(hg.edge_target(e).tolist() == [-1] for e in goal_edges)
    finals = []
    for e in range(1, hg.num_edges):
        features = _one_weight(hg, e)
        target = hg.edge_target(e)
        words = [hg.vocabulary.word(int(t)) for t in target if t >= 0]
        if len(words) > 1 or (len(target) and target[0] != -1):
            raise InputError(f"edge {e}: an FST arc carries at most one word after its tail")
        label = check_word(words[0], "an FST") if words else EPSILON
        weight = format_number(features.get(FEATURE, 0.0))
        if finals_from_tails and int(hg.head[e]) == hg.goal:
            finals.append(f"{int(hg.edge_tails(e)[0])}" + ("" if weight == "0" else f" {weight}"))
            continue
        lines.append(f"{int(hg.edge_tails(e)[0])} {int(hg.head[e])} {label} {weight}")
    lines.extend(finals if finals_from_tails else [str(hg.goal)])
    return "\n".join(lines) + "\n"


def write(graphs: Sequence[Hypergraph], path: str) -> None:
    if len(graphs) != 1:
        raise InputError(f"an FST text file holds one lattice, not {len(graphs)}", path)
    write_atomically(path, fst_to_text(graphs[0]))


FORMAT = register(GraphFormat("openfst", "OpenFst text (AT&T) acceptors and transducers", sniff, read, write))
