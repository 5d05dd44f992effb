"""``hypertune decode``: the best or k best derivations of dumped graphs under given weights."""

from __future__ import annotations

import argparse

import numpy as np

from hypertune.algorithms import entropy, feature_expectations, kbest, log_partition, sample, viterbi
from hypertune.cli import COMMANDS
from hypertune.cli.common import add_output_options, emit, progress
from hypertune.cli.tuning import add_strict_option
from hypertune.errors import UsageError
from hypertune.formats import FORMATS, read_graphs, read_weights
from hypertune.weights import Weights, check_feature_names

EXAMPLE = """example:
  hypertune decode fixtures/toy-forest.json --weights fixtures/toy-forest.weights
  hypertune decode graphs/ --weights dense --weights sparse --kbest 10 --unique --json
  hypertune decode fixtures/toy-forest.json -w fixtures/toy-forest.weights --sample 5 --seed 1 --expectations
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "decode",
        help=COMMANDS["decode"],
        description="Rescore dumped search spaces: print the model-best (or k best) "
        "derivation of every graph with its score and features.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="graph files or directories of per-sentence files")
    parser.add_argument(
        "--weights",
        "-w",
        action="append",
        required=True,
        metavar="FILE",
        help="weights file (repeatable; later files override earlier ones)",
    )
    parser.add_argument("--format", choices=sorted(FORMATS), help="input format (default: detected)")
    add_strict_option(parser)
    parser.add_argument("--kbest", "-k", type=int, default=1, metavar="K", help="number of derivations (default 1)")
    parser.add_argument("--unique", action="store_true", help="skip derivations whose string was already printed")
    parser.add_argument("--features", action="store_true", help="also print feature vectors in the summary")
    parser.add_argument(
        "--sample",
        type=int,
        default=0,
        metavar="N",
        help="instead: draw N derivations from p(d) = exp(scale * w.f(d)) / Z",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed for --sample (default 0)")
    parser.add_argument("--scale", type=float, default=1.0, help="sharpness of p(d) for --sample/--expectations")
    parser.add_argument(
        "--expectations",
        action="store_true",
        help="also report log Z, the entropy of p(d) and the expected feature values",
    )
    add_output_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.kbest < 1:
        raise UsageError("--kbest must be at least 1")
    weights = read_weights(args.weights)
    graphs = read_graphs(args.paths, args.format)
    check_feature_names(weights, graphs[0].feature_space, " ".join(args.weights), args.strict)
    results = []
    lines = []
    if args.sample < 0:
        raise UsageError("--sample must be positive")
    sharp = Weights(weights, scale=args.scale)
    rng = np.random.default_rng(args.seed)
    for i, hg in enumerate(progress(args, graphs, len(graphs), "decoding")):
        if args.sample:
            best = sample(hg, sharp, args.sample, random_state=rng)
        elif args.kbest == 1 and not args.unique:
            best = [viterbi(hg, weights)]
        else:
            best = kbest(hg, weights, args.kbest, unique=args.unique)
        sid = i if hg.sentence_id is None else hg.sentence_id
        row = {
            "graph": i,
            "sentence": sid,
            "derivations": [{"score": d.score, "text": d.text, "features": d.features} for d in best],
        }
        if args.expectations:
            names = hg.feature_space.names
            expected = feature_expectations(hg, sharp)
            row.update(
                log_z=log_partition(hg, sharp),
                entropy=entropy(hg, sharp),
                expected_features={names[c]: float(expected[c]) for c in np.flatnonzero(expected)},
            )
            lines.append(
                f"{sid}\tlog Z {row['log_z']:.6g}\tentropy {row['entropy']:.6g} nats\t"
                + " ".join(f"E[{k}]={v:.4g}" for k, v in row["expected_features"].items())
            )
        results.append(row)
        for rank, d in enumerate(best):
            prefix = f"{sid}" if args.kbest == 1 and not args.unique and not args.sample else f"{sid}\t{rank + 1}"
            lines.append(f"{prefix}\t{d.score:.6g}\t{d.text}")
            if args.features:
                lines.append("\t\t" + " ".join(f"{k}={v:g}" for k, v in d.features.items()))
    emit(args, "\n".join(lines), {"graphs": results})
    return 0
