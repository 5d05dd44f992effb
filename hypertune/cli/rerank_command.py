"""``hypertune rerank``: each sentence's best hypothesis under weights, as plain text or with its scores."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hypertune.choices import GRAPH_FORMATS
from hypertune.cli import COMMANDS
from hypertune.cli.common import add_output_options, emit

EXAMPLE = """example:
  hypertune rerank test.jsonl --weights tuned.weights > test.best.txt          # one translation per line
  hypertune rerank test.nbest --scores test.scores --weights tuned.weights --json
  hypertune rerank test.jsonl -w tuned.weights --out best.jsonl --out-format jsonl
"""

#: What ``--out-format`` writes: the translations, one line per sentence, or JSON lines with their scores.
OUT_FORMATS = ("text", "jsonl")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "rerank",
        help=COMMANDS["rerank"],
        description="Rerank k-best lists (or decode lattices and forests) with given weights: per sentence, in "
        "sentence-id order, the hypothesis with the highest model score (ties: the one earlier in the input), as "
        "plain text, one line per sentence and nothing else, so that the file can be scored as it is. With "
        "--json or --out-format jsonl: its sentence id, its index among the sentence's hypotheses, its model "
        "score and its given scores. The 1-best of 'hypertune decode'.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="JSONL, n-best lists, lattices or hypergraphs")
    parser.add_argument(
        "--weights", "-w", action="append", required=True, metavar="FILE", help="weights file (repeatable)"
    )
    parser.add_argument("--format", choices=GRAPH_FORMATS, help="input format (default: detected)")
    parser.add_argument("--scores", nargs="+", metavar="FILE", help="given scores of the hypotheses, as for tuning")
    parser.add_argument("--out", "-o", metavar="FILE", help="write the result to FILE (atomically)")
    parser.add_argument(
        "--out-format",
        choices=OUT_FORMATS,
        default="text",
        help="text: the translations, one line per sentence (default); jsonl: one JSON object per sentence",
    )
    parser.add_argument("--strict", action="store_true", help="weights naming no input feature are an error")
    add_output_options(parser)
    parser.set_defaults(run=run, outputs=("out",))


def run(args: argparse.Namespace) -> int:
    from hypertune.cli.tuning import load_graphs
    from hypertune.errors import UsageError
    from hypertune.formats import read_weights
    from hypertune.formats.io import write_atomically
    from hypertune.tuners.reranking import rerank
    from hypertune.weights import check_feature_names

    weights = read_weights(args.weights)
    graphs, _ = load_graphs(argparse.Namespace(inputs=args.inputs, scores=args.scores, format=args.format))
    if not graphs:
        raise UsageError("no inputs: the files hold no sentences")
    check_feature_names(weights, graphs[0].feature_space, " ".join(args.weights), args.strict, graphs=graphs,
                        params_option=False)  # fmt: skip
    choices = rerank(graphs, weights)
    _warn_on_gaps([c.sentence_id for c in choices])
    rows = [_row(c) for c in choices]
    if args.out_format == "jsonl":
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    else:
        text = "".join(c.text + "\n" for c in choices)
    if args.out:
        write_atomically(args.out, text)
        emit(args, f"wrote {len(choices)} sentence(s) to {args.out}", {"sentences": rows, "output": args.out})
    elif args.json:
        emit(args, "", {"sentences": rows})
    else:
        print(text, end="")
    return 0


def _row(choice: Any) -> dict[str, Any]:
    return {
        "id": choice.sentence_id,
        "index": choice.index,
        "model_score": choice.model_score,
        "scores": choice.scores,
        "hyp": choice.text,
    }


def _warn_on_gaps(ids: list[int]) -> None:
    """Plain text has one line per sentence present: say so when the ids are not 0, 1, 2, ... (a reference file
    scored against the output would be misaligned)."""
    from hypertune.errors import warn

    if ids and ids != list(range(len(ids))):
        missing = sorted(set(range(ids[-1] + 1)) - set(ids))
        shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
        warn(f"the inputs have no hypotheses for sentence id(s) {shown}: line k of the output is the k-th sentence "
             "present, not sentence id k")  # fmt: skip
