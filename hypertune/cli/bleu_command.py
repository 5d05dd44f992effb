"""``hypertune bleu``: corpus (or per-sentence) BLEU of a hypothesis file, as sacrebleu computes it."""

from __future__ import annotations

import argparse
from typing import Any

from hypertune.cli import COMMANDS
from hypertune.errors import InputError, UsageError

EXAMPLE = """example:
  hypertune bleu --hyp output.en --refs ref.0 ref.1 ref.2 ref.3
  hypertune bleu --hyp output.en --refs ref.0 --tokenize none --smooth none --json
  hypertune bleu --hyp output.en --refs ref.0 --sentence --smooth plus1

Defaults are sacrebleu's: --tokenize 13a, case kept, --smooth exp; the score is the one
'sacrebleu REF... -i HYP' prints for the same options. --sentence scores each line
separately (with effective order, as sacrebleu's sentence-level BLEU).
"""


def register(subparsers: Any) -> None:
    from hypertune.cli.common import add_output_options
    from hypertune.cli.options import add_strict_option

    parser = subparsers.add_parser(
        "bleu",
        help=COMMANDS["bleu"],
        description="Corpus BLEU with its sufficient statistics, or per-sentence BLEU.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--hyp", metavar="FILE", help="hypotheses, one per line ('-' = stdin)")
    source.add_argument(
        "--nbest",
        metavar="FILE",
        help="an n-best list: score each sentence's first hypothesis, or its best under --weights",
    )
    source.add_argument(
        "--graphs",
        nargs="+",
        metavar="PATH",
        help="lattices or hypergraphs (any format): score their Viterbi yields under --weights",
    )
    parser.add_argument(
        "--weights",
        "-w",
        action="append",
        metavar="W",
        help="weights for --graphs / --nbest in any weights format, Moses init.opt too (repeatable; later files "
        "override earlier ones)",
    )
    parser.add_argument(
        "--refs",
        required=True,
        nargs="+",
        metavar="REF",
        help="reference files, one sentence per line, or a prefix of REF.0 REF.1 ...",
    )
    add_bleu_metric_options(parser, effective_order_note=" (always on with --sentence)")
    parser.add_argument("--sentence", action="store_true", help="print one score per sentence")
    parser.add_argument(
        "--format", help="format of the --graphs (default: detected); see 'hypertune convert --help-formats'"
    )
    add_strict_option(parser)
    add_output_options(parser)
    parser.set_defaults(run=run)


def add_bleu_metric_options(parser: argparse.ArgumentParser, effective_order_note: str = "") -> None:
    """BLEU's options with sacrebleu's defaults (``bleu``, ``compare``): --tokenize, --lowercase, --smooth,
    --smooth-value, --max-order, --ref-length, --effective-order."""
    from hypertune.choices import DEFAULT_TOKENIZER, REF_LENGTHS, SMOOTHING, TOKENIZERS
    from hypertune.cli.options import finite_float, max_order

    parser.add_argument(
        "--tokenize",
        "-tok",
        default=DEFAULT_TOKENIZER,
        choices=TOKENIZERS,
        help="sacrebleu tokenizer (default: %(default)s, as sacrebleu)",
    )
    parser.add_argument("--lowercase", "-lc", action="store_true", help="lowercase before tokenizing")
    parser.add_argument(
        "--smooth",
        "-s",
        default="exp",
        choices=tuple(SMOOTHING),
        help="smoothing method (default: %(default)s, as sacrebleu); see docs/metrics.md",
    )
    parser.add_argument(
        "--smooth-value",
        type=finite_float,
        default=None,
        metavar="V",
        help="parameter of floor / add-k / moses / nakov smoothing (default: the method's own)",
    )
    parser.add_argument("--max-order", type=max_order, default=4, metavar="N", help="maximum n-gram order (default: 4)")
    parser.add_argument(
        "--ref-length",
        default="closest",
        choices=tuple(REF_LENGTHS),
        help="reference length strategy (default: %(default)s; ibm = cdec's IBM BLEU)",
    )
    parser.add_argument(
        "--effective-order",
        action="store_true",
        help=f"average only n-gram orders with hypothesis n-grams{effective_order_note}",
    )


def _hypotheses(args: argparse.Namespace) -> tuple[list[str], str, list[int] | None, Any]:
    """The hypothesis strings, from a text file, the first (or model-best) entries of an n-best list, or the
    Viterbi yields of graphs under --weights; with their sentence ids (``None`` for a text file, whose
    lines must match the references' one for one) and where the ids come from (``SentenceIds``; ``None`` for a
    text file). Graph yields lose the decoder's sentence markers."""
    from hypertune.formats.io import read_text
    from hypertune.formats.references import text_lines

    if args.hyp is not None:
        if args.weights:
            raise UsageError("--weights goes with --nbest or --graphs, not --hyp")
        return text_lines(read_text(args.hyp, "hypothesis file")), f"the hypothesis file {args.hyp}", None, None
    from types import SimpleNamespace

    from hypertune.algorithms import viterbi
    from hypertune.cli.tuning import load_weights
    from hypertune.formats.registry import read_inputs
    from hypertune.metrics.base import strip_sentence_markers
    from hypertune.tuners.sentence_ids import assemble_sentences

    if args.graphs is not None and not args.weights:
        raise UsageError("--graphs needs --weights")
    read, naming = read_inputs([args.nbest], "moses-nbest") if args.nbest else read_inputs(args.graphs, args.format)
    graphs, ids = assemble_sentences(read)
    if args.weights:  # read as every tuning command reads its start weights (init.opt's order: the n-best list's)
        args.inputs = [args.nbest] if args.nbest else list(args.graphs)
        corpus = SimpleNamespace(feature_space=graphs[0].feature_space, graphs=graphs)
        weights, _ = load_weights(args.weights, corpus, args)
        words = [viterbi(hg, weights).words for hg in graphs]
    else:  # an n-best list's first entry is the decoder's 1-best
        words = [hg.vocabulary.words(int(t) for t in hg.edge_target(1) if t >= 0) for hg in graphs]
    texts = [" ".join(strip_sentence_markers(w)) for w in words]
    return texts, args.nbest or " ".join(args.graphs), ids, naming


def run(args: argparse.Namespace) -> int:
    from hypertune.cli.common import emit
    from hypertune.formats.references import References, read_reference_text, reference_files, text_lines
    from hypertune.metrics.bleu import BleuMetric, format_bleu
    from hypertune.tuners.sentence_ids import check_sentence_ids, select_references

    hypotheses, source, ids, naming = _hypotheses(args)
    files = reference_files(args.refs)  # files, or a prefix of REF.0 REF.1 ... as every tuning command takes
    references = [text_lines(read_reference_text(path)) for path in files]
    for path, lines in zip(files, references, strict=True):
        if ids is None and len(lines) != len(hypotheses):
            raise InputError(f"{len(lines)} lines, but {source} has {len(hypotheses)} sentences", path=path)
        if len(lines) != len(references[0]):
            raise InputError(f"{len(lines)} lines, but {files[0]} has {len(references[0])}", path=path)
    metric = BleuMetric(
        max_order=args.max_order,
        ref_length=args.ref_length,
        smooth=args.smooth,
        smooth_value=args.smooth_value,
        effective_order=args.effective_order or args.sentence,
        tokenize=args.tokenize,
        lowercase=args.lowercase,
    )
    per_sentence: list[list[str]] = References((list(refs) for refs in zip(*references, strict=True)), files)
    if ids is not None:  # graphs and n-best lists: each sentence's references by its id
        named = check_sentence_ids(naming, ids, per_sentence, args.strict)  # per-sentence files' names
        per_sentence = select_references(ids, per_sentence, report_unused=not named)
    where = {"sentence_ids": naming.origin} if naming is not None else {}  # file names, file contents, ...
    note = f"\n{naming.note}" if naming is not None and naming.note else ""
    stats = metric.corpus_stats(hypotheses, per_sentence)
    options = {
        "nrefs": len(files),
        "case": "lc" if args.lowercase else "mixed",
        "tok": args.tokenize,
        "smooth": args.smooth,
        "smooth_value": args.smooth_value,
        "max_order": args.max_order,
        "ref_length": args.ref_length,
        "effective_order": bool(args.effective_order or args.sentence),
    }
    if args.sentence:
        rows = [_payload(metric, row) for row in stats]
        summary = "\n".join(format_bleu(metric.breakdown(row)) for row in stats)
        emit(args, summary + note, {"metric": "BLEU", "options": options, **where, "sentences": rows})
        return 0
    total = stats.sum(axis=0)
    payload = {"metric": "BLEU", "options": options, **where, **_payload(metric, total)}
    emit(args, format_bleu(metric.breakdown(total)) + note, payload)
    return 0


def _payload(metric: Any, stats: Any) -> dict[str, Any]:
    parts = metric.breakdown(stats)
    return {
        "score": 100 * parts["score"],
        "bleu": parts["score"],
        "precisions": [100 * p for p in parts["precisions"]],
        "bp": parts["bp"],
        "ratio": parts["ratio"],
        "hyp_len": parts["hyp_len"],
        "ref_len": parts["ref_len"],
        "stats": dict(zip(metric.stats_names, (float(x) for x in stats), strict=True)),
    }
