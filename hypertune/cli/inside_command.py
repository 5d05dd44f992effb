"""``hypertune inside``: the inside (and outside) value of every node in any semiring, and the worked
computation node by node (for teaching and debugging)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hypertune.cli import COMMANDS

EXAMPLE = """examples:
  hypertune inside fixtures/toy-forest.json --semiring counting
  hypertune inside fixtures/toy-forest.json --semiring real --weights fixtures/toy-forest.weights --trace --outside
  hypertune inside fixtures/toy-forest.json --semiring log --weights fixtures/toy-forest.weights --outside --json
  hypertune inside fixtures/toy-forest.json --semiring kbest:3 --weights fixtures/toy-forest.weights
  hypertune inside graph.json --semiring envelope --weights w --direction d.weights
  hypertune inside fixtures/toy-forest.json --semiring envelope --weights fixtures/toy-forest.weights --direction lm
  hypertune inside graph.json --semiring mymodule:MaxTimes --weights w

Semirings: boolean, counting, real (edge value exp(w·f)), log (w·f; log-add), tropical (w·f; max-plus, the
Viterbi score), kbest:K, expectation (<exp(w·f), exp(w·f)·f>), envelope (lines w·f + γ·d·f along --direction),
or a user semiring module:Class that defines edge_value(edge, score) (see docs/semirings.md). --trace prints
each node's computation: every hyperedge's value times its tails' inside values, and the running sum; with
--outside, then top-down, every use of a node as a tail: α(head) ⊗ edge ⊗ β(the other tails). --json gives
values as JSON numbers at full precision (k-best, expectation, envelope values as lists and objects).
"""

TRACE_LIMIT = 200
"""The most edges a graph may have for ``--trace`` (the table is for reading)."""


def register(subparsers: Any) -> None:
    from hypertune.cli.common import add_output_options
    from hypertune.cli.options import add_direction_option, add_one_graph_options

    parser = subparsers.add_parser(
        "inside",
        help=COMMANDS["inside"],
        description="The inside value of every node of a graph in a semiring (and with --outside the outside "
        "value), the goal's value last; --trace writes the computation out node by node.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_one_graph_options(parser)
    parser.add_argument("--semiring", "-s", required=True, metavar="NAME", help="see below")
    parser.add_argument("--weights", "-w", action="append", default=[], metavar="W", help="weights (default 0)")
    add_direction_option(parser)
    parser.add_argument(
        "--outside", action="store_true", help="also the outside values (commutative semirings; not kbest:K)"
    )
    parser.add_argument("--trace", action="store_true", help=f"the computation node by node (≤ {TRACE_LIMIT} edges)")
    add_output_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from hypertune.algorithms import inside, outside
    from hypertune.algorithms.semiring_values import json_value, named_semiring, show
    from hypertune.cli.common import emit
    from hypertune.cli.tuning import graph_weights, load_one_graph, read_direction
    from hypertune.errors import InputError, UsageError

    hg = load_one_graph(args)
    weights = graph_weights(args.weights, hg, args.strict)
    direction = read_direction(args.direction, hg.feature_space, args.strict) if args.direction else None
    if args.trace and hg.num_edges > TRACE_LIMIT:
        limit = f"--trace writes out every edge; this graph has {hg.num_edges} (at most {TRACE_LIMIT})"
        raise InputError(limit, args.path)
    try:
        named = named_semiring(args.semiring, hg, weights, direction, outside=args.outside)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.outside and not named.semiring.commutative:
        raise UsageError(_not_commutative(args.semiring, named.semiring))
    with _user_code(args.semiring):
        beta = inside(hg, named.semiring, named.values)
        alpha = outside(hg, named.semiring, named.values, beta) if args.outside else None
        trace = _trace(hg, named, beta, args.outside) if args.trace else None
    lines = [] if trace is None else _trace_lines(hg, trace, show)
    for v in range(hg.num_nodes):
        label = f"node {v}{' (goal)' if v == hg.goal else ''}"
        lines.append(
            f"{label}: inside {show(beta[v], hg)}" + (f", outside {show(alpha[v], hg)}" if alpha is not None else "")
        )
    payload = {
        "semiring": args.semiring,
        "goal": json_value(beta[hg.goal], hg),
        "inside": [json_value(beta[v], hg) for v in range(hg.num_nodes)],
        "outside": None if alpha is None else [json_value(alpha[v], hg) for v in range(hg.num_nodes)],
    }
    if trace is not None:
        payload["trace"] = _trace_json(hg, trace, json_value)
    emit(args, "\n".join(lines), payload)
    return 0


def _not_commutative(name: str, semiring: Any) -> str:
    """Why ``--outside`` refuses ``semiring``, in one line: outside puts the hole anywhere in a product."""
    if name.startswith("kbest:"):
        return (
            f"--outside needs a commutative ⊗; {name}'s values build each derivation's tree in tail order, "
            "which is not commutative"
        )
    return f"--outside needs a commutative semiring; {name} declares commutative = False"


@contextmanager
def _user_code(name: str) -> Iterator[None]:
    """An error raised in a user semiring's ``plus`` or ``times`` as one line naming it."""
    from hypertune.errors import UsageError

    try:
        yield
    except Exception as error:
        if ":" not in name or name.startswith("kbest:"):
            raise
        raise UsageError(f"the semiring {name} failed: {type(error).__name__}: {error}") from None


@dataclass(frozen=True)
class _Trace:
    inside: list[Any]
    outside: list[Any] | None


def _trace(hg: Any, named: Any, beta: Any, with_outside: bool) -> _Trace:
    from hypertune.algorithms.semiring_values import inside_trace, outside_trace

    steps = inside_trace(hg, named.semiring, named.values)
    if not with_outside:
        return _Trace(steps, None)
    values = [s[-1].running if s else named.semiring.zero for s in steps]  # the trace's own inside values
    return _Trace(steps, outside_trace(hg, named.semiring, named.values, values))


def _node_label(hg: Any, v: int) -> str:
    return f"node {v}{' (goal)' if v == hg.goal else ''}"


def _target(hg: Any, e: int) -> str:
    return " ".join(hg.vocabulary.word(int(t)) if t >= 0 else f"[{-t}]" for t in hg.edge_target(e))


def _trace_lines(hg: Any, trace: _Trace, show: Any) -> list[str]:
    """``node v: k_e ⊗ β(t) ... = product; running sum`` for every edge, nodes bottom-up; then, with the
    outside pass, ``α(head) ⊗ k_e ⊗ β(other tails) = product; running sum`` for every use of a node as a
    tail, nodes top-down."""

    def brief(x: Any) -> str:
        return show(x, hg, expectation=False)

    lines = []
    for v, steps in enumerate(trace.inside):
        lines.append(f"{_node_label(hg, v)}:")
        for step in steps:
            factors = " ⊗ ".join([f"k{step.edge}={brief(step.edge_value)}"] + [
                f"β({u})={brief(x)}" for u, x in zip(step.tails, step.tail_values, strict=True)
            ])  # fmt: skip
            lines.append(f"  edge {step.edge} '{_target(hg, step.edge)}': {factors} = {brief(step.product)};"
                         f" sum so far {brief(step.running)}")  # fmt: skip
    if trace.outside is None:
        return lines
    lines.append("outside, top-down: α(goal) = one; for every other node u,")
    lines.append("α(u) = ⊕, over the edges e that have u as a tail, of α(head of e) ⊗ k_e ⊗ β(e's other tails)")
    for v in reversed(range(hg.num_nodes)):
        steps = trace.outside[v]
        if not steps:
            lines.append(
                f"{_node_label(hg, v)}: " + ("α = one" if v == hg.goal else "no edge has it as a tail; α = zero")
            )
            continue
        lines.append(f"{_node_label(hg, v)}:")
        for o in steps:
            factors = " ⊗ ".join([f"α({o.head})={brief(o.head_value)}", f"k{o.edge}={brief(o.edge_value)}"] + [
                f"β({w})={brief(x)}" for w, x in zip(o.others, o.other_values, strict=True)
            ])  # fmt: skip
            lines.append(f"  edge {o.edge} '{_target(hg, o.edge)}' (as tail [{o.position + 1}]): {factors} ="
                         f" {brief(o.product)}; sum so far {brief(o.running)}")  # fmt: skip
    return lines


def _trace_json(hg: Any, trace: _Trace, value: Any) -> dict[str, Any]:
    """The trace as data: per node its steps with every factor, product and running sum (full precision)."""
    inside = [
        {"node": v, "edges": [
            {"edge": s.edge, "target": _target(hg, s.edge), "value": value(s.edge_value, hg),
             "tails": [{"node": u, "inside": value(x, hg)} for u, x in zip(s.tails, s.tail_values, strict=True)],
             "product": value(s.product, hg), "sum": value(s.running, hg)}
            for s in steps
        ]}
        for v, steps in enumerate(trace.inside)
    ]  # fmt: skip
    if trace.outside is None:
        return {"inside": inside, "outside": None}
    outside = [
        {"node": v, "edges": [
            {"edge": o.edge, "target": _target(hg, o.edge), "tail": o.position + 1, "head": o.head,
             "head_outside": value(o.head_value, hg), "value": value(o.edge_value, hg),
             "other_tails": [{"node": w, "inside": value(x, hg)}
                             for w, x in zip(o.others, o.other_values, strict=True)],
             "product": value(o.product, hg), "sum": value(o.running, hg)}
            for o in trace.outside[v]
        ]}
        for v in reversed(range(hg.num_nodes))
    ]  # fmt: skip
    return {"inside": inside, "outside": outside}
