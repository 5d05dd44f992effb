"""``hypertune decode``: the best or k best derivations of dumped graphs under given weights."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hypertune.choices import GRAPH_FORMATS
from hypertune.cli import COMMANDS
from hypertune.cli.common import add_output_options, emit, progress
from hypertune.cli.options import add_strict_option, finite_float, non_negative_int, positive_int, seed

EXAMPLE = """example:
  hypertune decode fixtures/toy-forest.json --weights fixtures/toy-forest.weights
  hypertune decode graphs/ --weights dense --weights sparse --kbest 10 --unique --json
  hypertune decode fixtures/toy-forest.json -w fixtures/toy-forest.weights --sample 5 --seed 1 --expectations
  hypertune decode hgdir/ -w weights --kbest 100 --out nbest.txt            # a Moses n-best list (a decoder
  hypertune decode hgdir/ -w weights --out best.txt --out-format text       # in a tuning loop), or 1-best text
"""

#: What ``--out`` writes: a Moses n-best list (sentence ids, feature names, scores) that every tuning
#: command reads back, the translations one line per sentence (``hypertune bleu --hyp``), or the JSON.
OUT_FORMATS = ("moses-nbest", "text", "json")


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
    parser.add_argument("--format", choices=GRAPH_FORMATS, help="input format (default: detected)")
    add_strict_option(parser)
    parser.add_argument(
        "--kbest", "-k", type=positive_int, default=1, metavar="K", help="number of derivations (default 1)"
    )
    parser.add_argument("--unique", action="store_true", help="skip derivations whose string was already printed")
    parser.add_argument("--features", action="store_true", help="also print feature vectors in the summary")
    parser.add_argument(
        "--sample",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="instead: draw N derivations from p(d) = exp(scale * w.f(d)) / Z",
    )
    parser.add_argument("--seed", type=seed, default=0, help="random seed for --sample (default 0)")
    parser.add_argument("--scale", type=finite_float, default=1.0, help="sharpness of p(d) for --sample/--expectations")
    parser.add_argument(
        "--expectations",
        action="store_true",
        help="also report log Z, the entropy of p(d) and the expected feature values",
    )
    parser.add_argument(
        "--out",
        "-o",
        metavar="FILE",
        help="write the derivations to FILE (atomically) instead of printing them; the summary says what was "
        "written. With this, hypertune is a decoder for 'hypertune tune' (docs/tuning-loop.md)",
    )
    parser.add_argument(
        "--out-format",
        choices=OUT_FORMATS,
        default="moses-nbest",
        help="moses-nbest: 'id ||| words ||| Name= v ... ||| score' lines, the k best of each graph (default); "
        "text: each sentence's first derivation without <s> and </s>, one line per sentence in sentence-id order; "
        "json: as --json",
    )
    add_output_options(parser)
    parser.set_defaults(run=run, outputs=("out",))


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from hypertune.algorithms import entropy, feature_expectations, kbest, log_partition, sample, viterbi
    from hypertune.formats import read_graphs, read_weights
    from hypertune.weights import Weights, check_feature_names

    weights = read_weights(args.weights)
    graphs = read_graphs(args.paths, args.format)
    check_feature_names(weights, graphs[0].feature_space, " ".join(args.weights), args.strict, graphs=graphs,
                        params_option=False)  # fmt: skip
    results = []
    found = []  # each graph's derivations, for --out
    lines = []
    sharp = Weights(weights, scale=args.scale)
    rng = np.random.default_rng(args.seed)
    from hypertune.tuners.sentence_ids import sentence_numbers

    sids = sentence_numbers(graphs)  # output in sentence-id order (per-sentence files: by their names' numbers)
    ordered = [(i, graphs[i], sids[i]) for i in sorted(range(len(graphs)), key=sids.__getitem__)]
    for i, hg, sid in progress(args, ordered, len(graphs), "decoding"):
        if args.sample:
            best = sample(hg, sharp, args.sample, random_state=rng)
        elif args.kbest == 1 and not args.unique:
            best = [viterbi(hg, weights)]
        else:
            best = kbest(hg, weights, args.kbest, unique=args.unique)
        row: dict[str, Any] = {
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
                expected_features={names[c]: float(expected[c]) for c in np.flatnonzero(expected).tolist()},
            )
            lines.append(
                f"{sid}\tlog Z {row['log_z']:.6g}\tentropy {row['entropy']:.6g} nats\t"
                + " ".join(f"E[{k}]={v:.4g}" for k, v in row["expected_features"].items())
            )
        results.append(row)
        found.append(best)
        for rank, d in enumerate(best):
            prefix = f"{sid}" if args.kbest == 1 and not args.unique and not args.sample else f"{sid}\t{rank + 1}"
            lines.append(f"{prefix}\t{d.score:.6g}\t{d.text}")
            if args.features:
                lines.append("\t\t" + " ".join(f"{k}={v:g}" for k, v in d.features.items()))
    if args.out:
        written = _write_out(args, [hg for _, hg, _ in ordered], results, found)
        emit(args, f"wrote {written} to {args.out}", {"graphs": len(results), "output": args.out})
        return 0
    emit(args, "\n".join(lines), {"graphs": results})
    return 0


def _write_out(args: argparse.Namespace, graphs: list, results: list[dict], found: list[list]) -> str:
    """Write ``--out`` in ``--out-format`` (atomically) and say what was written. An n-best list keeps each
    graph's sentence id and the derivations' feature names, so a tuner reads it back as the same sentences;
    its score field is the model score under the weights, so the first line of each sentence is the 1-best."""
    from hypertune.formats.io import write_atomically
    from hypertune.formats.nbest import write_moses
    from hypertune.hypergraph import from_kbest

    if args.out_format == "json":
        from hypertune.cli.common import _finite, _json_default

        text = json.dumps(_finite({"graphs": results}), ensure_ascii=False, default=_json_default, allow_nan=False)
        write_atomically(args.out, text + "\n")
        return f"{len(results)} graph(s) as JSON"
    rows = sorted(zip((row["sentence"] for row in results), range(len(results)), results, strict=True))
    if args.out_format == "text":  # translations, as the metrics see them: without the decoder's <s> and </s>
        from hypertune.metrics.base import strip_sentence_markers

        text = "".join(" ".join(strip_sentence_markers(found[i][0].words)) + "\n" for _, i, _ in rows)
        write_atomically(args.out, text)
        return f"{len(rows)} translation(s), one per line,"
    lists = []
    for sid, i, _ in rows:
        hypotheses = [(d.words, d.features) for d in found[i]]
        totals = [d.score for d in found[i]]
        hg = graphs[i]
        lists.append(from_kbest(hypotheses, hg.feature_space, hg.vocabulary, {"totals": totals}, sentence_id=sid))
    write_moses(lists, args.out)
    return f"{sum(len(row['derivations']) for row in results)} derivation(s) of {len(lists)} sentence(s)"
