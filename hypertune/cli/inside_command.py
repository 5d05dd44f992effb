"""``hypertune inside``: the inside (and outside) value of every node in any semiring, and the worked
computation node by node (for teaching and debugging)."""

from __future__ import annotations

import argparse
from typing import Any

from hypertune.cli import COMMANDS

EXAMPLE = """examples:
  hypertune inside fixtures/toy-forest.json --semiring counting
  hypertune inside fixtures/toy-forest.json --semiring real --weights fixtures/toy-forest.weights --trace
  hypertune inside fixtures/toy-forest.json --semiring log --weights fixtures/toy-forest.weights --outside --json
  hypertune inside fixtures/toy-forest.json --semiring kbest:3 --weights fixtures/toy-forest.weights
  hypertune inside graph.json --semiring envelope --weights w --direction d.weights
  hypertune inside fixtures/toy-forest.json --semiring envelope --weights fixtures/toy-forest.weights --direction lm
  hypertune inside graph.json --semiring mymodule:MaxTimes --weights w

Semirings: boolean, counting, real (edge value exp(w·f)), log (w·f; log-add), tropical (w·f; max-plus, the
Viterbi score), kbest:K, expectation (<exp(w·f), exp(w·f)·f>), envelope (lines w·f + γ·d·f along --direction),
or a user semiring module:Class (see docs/semirings.md). --trace prints each node's computation: every
hyperedge's value times its tails' inside values, and the running sum.
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
    parser.add_argument("--outside", action="store_true", help="also the outside values (commutative semirings)")
    parser.add_argument("--trace", action="store_true", help=f"the computation node by node (≤ {TRACE_LIMIT} edges)")
    add_output_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from hypertune.algorithms import inside, outside
    from hypertune.algorithms.semiring_values import named_semiring, show
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
        named = named_semiring(args.semiring, hg, weights, direction)
    except ValueError as error:
        raise UsageError(str(error)) from None
    beta = inside(hg, named.semiring, named.values)
    alpha = None
    if args.outside:
        if not named.semiring.commutative:
            raise UsageError(f"--outside needs a commutative semiring; {args.semiring} is not")
        alpha = outside(hg, named.semiring, named.values, beta)
    lines = []
    if args.trace:
        lines += _trace_lines(hg, named, show)
    for v in range(hg.num_nodes):
        label = f"node {v}{' (goal)' if v == hg.goal else ''}"
        lines.append(
            f"{label}: inside {show(beta[v], hg)}" + (f", outside {show(alpha[v], hg)}" if alpha is not None else "")
        )
    payload = {
        "semiring": args.semiring,
        "goal": show(beta[hg.goal], hg),
        "inside": [show(beta[v], hg) for v in range(hg.num_nodes)],
        "outside": None if alpha is None else [show(alpha[v], hg) for v in range(hg.num_nodes)],
    }
    emit(args, "\n".join(lines), payload)
    return 0


def _trace_lines(hg: Any, named: Any, show: Any) -> list[str]:
    """``node v: k_e ⊗ β(t) ... = product; running sum`` for every edge, nodes bottom-up."""
    from hypertune.algorithms.semiring_values import inside_trace

    lines = []
    for v, steps in enumerate(inside_trace(hg, named.semiring, named.values)):
        lines.append(f"node {v}{' (goal)' if v == hg.goal else ''}:")
        for step in steps:
            words = " ".join(hg.vocabulary.word(int(t)) if t >= 0 else f"[{-t}]" for t in hg.edge_target(step.edge))
            factors = " ⊗ ".join([f"k{step.edge}={show(step.edge_value, hg)}"] + [
                f"β({u})={show(x, hg)}" for u, x in zip(step.tails, step.tail_values, strict=True)
            ])  # fmt: skip
            lines.append(f"  edge {step.edge} '{words}': {factors} = {show(step.product, hg)};"
                         f" sum so far {show(step.running, hg)}")  # fmt: skip
    return lines
