"""``hypertune generate``: seeded synthetic forests, lattices and k-best lists."""

from __future__ import annotations

import argparse

from hypertune.cli import COMMANDS
from hypertune.cli.common import add_output_options, emit
from hypertune.cli.options import integer, non_negative_int, positive_int, seed

EXAMPLE = """example:
  hypertune generate forest.json --edges 100000 --features 20 --seed 7
  hypertune generate lattices.json --lattice --edges 500 --graphs 10
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "generate",
        help=COMMANDS["generate"],
        description="Write random graphs shaped like real decoder output (hypertune "
        "JSON lines). The same seed gives the same file.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("output", metavar="OUT", help="output file")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--lattice", action="store_true", help="phrase-based lattices instead of forests")
    kind.add_argument("--kbest", type=positive_int, metavar="N", help="k-best lists of N hypotheses instead of forests")
    parser.add_argument("--edges", type=integer(4), default=1000, help="edges per graph, about (default 1000)")
    parser.add_argument("--arity", type=positive_int, default=2, help="maximum arity of forest edges (default 2)")
    parser.add_argument("--features", type=non_negative_int, default=10, help="dense features F0.. (default 10)")
    parser.add_argument("--graphs", type=positive_int, default=1, help="number of graphs (default 1)")
    parser.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    add_output_options(parser)
    parser.set_defaults(run=run, outputs=("output",))


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from hypertune.formats import write_graphs
    from hypertune.generate import random_hypergraph, random_kbest
    from hypertune.symbols import FeatureSpace, Vocabulary

    rng = np.random.default_rng(args.seed)
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs = []
    for _ in range(args.graphs):
        if args.kbest:
            graphs.append(
                random_kbest(
                    args.kbest, num_features=args.features, seed=rng, feature_space=space, vocabulary=vocabulary
                )
            )
        else:
            graphs.append(
                random_hypergraph(
                    args.edges,
                    max_arity=args.arity,
                    num_features=args.features,
                    lattice=args.lattice,
                    seed=rng,
                    feature_space=space,
                    vocabulary=vocabulary,
                )
            )
    write_graphs(graphs, args.output, "hypertune")
    edges = sum(g.num_edges for g in graphs)
    emit(
        args,
        f"wrote {len(graphs)} graph(s), {edges} edges, to {args.output}",
        {"output": args.output, "graphs": len(graphs), "edges": edges},
    )
    return 0
