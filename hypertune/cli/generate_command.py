"""``hypertune generate``: seeded synthetic forests, lattices, k-best lists and reranking sets."""

from __future__ import annotations

import argparse

from hypertune.cli import COMMANDS
from hypertune.cli.common import add_output_options, emit
from hypertune.cli.options import integer, non_negative_int, positive_int, seed
from hypertune.errors import UsageError

EXAMPLE = """example:
  hypertune generate forest.json --edges 100000 --features 20 --seed 7
  hypertune generate lattices.json --lattice --edges 500 --graphs 10
  hypertune generate dev.jsonl --reranking --sentences 2000 --candidates 256 --features 8 --seed 1 \\
      --refs-out dev.ref                                # JSONL with a "comet" score per hypothesis
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "generate",
        help=COMMANDS["generate"],
        description="Write random graphs shaped like real decoder output (hypertune "
        "JSON lines), or with --reranking a reranking set (JSONL k-best lists with QE-like features and a "
        "COMET-like score per hypothesis, correlated as real ones are: docs/formats.md). The same seed "
        "gives the same file.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("output", metavar="OUT", help="output file")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--lattice", action="store_true", help="phrase-based lattices instead of forests")
    kind.add_argument("--kbest", type=positive_int, metavar="N", help="k-best lists of N hypotheses instead of forests")
    kind.add_argument(
        "--reranking",
        action="store_true",
        help="a reranking set in JSONL (.gz: compressed): --sentences lists of --candidates hypotheses",
    )
    parser.add_argument("--edges", type=integer(4), default=1000, help="edges per graph, about (default 1000)")
    parser.add_argument("--arity", type=positive_int, default=2, help="maximum arity of forest edges (default 2)")
    parser.add_argument(
        "--features",
        type=non_negative_int,
        help="dense features F0.. (default 10); with --reranking logprob, length, qe, ... (default 8)",
    )
    parser.add_argument("--graphs", type=positive_int, default=1, help="number of graphs (default 1)")
    parser.add_argument("--seed", type=seed, default=0, help="random seed (default 0)")
    rerank = parser.add_argument_group("reranking sets (--reranking)")
    rerank.add_argument("--sentences", type=positive_int, default=100, help="sentences (default 100)")
    rerank.add_argument("--candidates", type=positive_int, default=100, help="hypotheses per sentence (default 100)")
    rerank.add_argument("--score-name", default="comet", metavar="NAME", help="the given score's name (default comet)")
    rerank.add_argument("--refs-out", metavar="FILE", help="also write the references (one line per sentence)")
    add_output_options(parser)
    parser.set_defaults(run=run, outputs=("output", "refs_out"))


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from hypertune.formats import write_graphs
    from hypertune.generate import random_hypergraph, random_kbest
    from hypertune.symbols import FeatureSpace, Vocabulary

    if args.reranking:
        return _reranking(args)
    if args.refs_out:
        raise UsageError("--refs-out goes with --reranking")
    features = 10 if args.features is None else args.features
    rng = np.random.default_rng(args.seed)
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs = []
    for _ in range(args.graphs):
        if args.kbest:
            graphs.append(
                random_kbest(args.kbest, num_features=features, seed=rng, feature_space=space, vocabulary=vocabulary)
            )
        else:
            graphs.append(
                random_hypergraph(
                    args.edges,
                    max_arity=args.arity,
                    num_features=features,
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


def _reranking(args: argparse.Namespace) -> int:
    """``--reranking``: a seeded synthetic reranking set in JSONL, and its references with ``--refs-out``."""
    from hypertune.formats.jsonl import write, write_text
    from hypertune.generate import random_reranking_set

    if not args.score_name or any(c.isspace() for c in args.score_name):
        raise UsageError(f"--score-name must be a name without spaces, got {args.score_name!r}")
    graphs, references = random_reranking_set(
        args.sentences,
        args.candidates,
        num_features=8 if args.features is None else args.features,
        score_name=args.score_name,
        seed=args.seed,
    )
    write(graphs, args.output)
    if args.refs_out:
        write_text(args.refs_out, "".join(line + "\n" for line in references))
    hypotheses = args.sentences * args.candidates
    emit(
        args,
        f"wrote {args.sentences} sentences x {args.candidates} candidates ({hypotheses} hypotheses) to {args.output}"
        + (f", references to {args.refs_out}" if args.refs_out else ""),
        {"output": args.output, "sentences": args.sentences, "hypotheses": hypotheses, "refs": args.refs_out},
    )
    return 0
