"""``hypertune mbr``: minimum Bayes risk decoding of k-best lists and samples (docs/mbr.md)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, NamedTuple

from hypertune.choices import GRAPH_FORMATS, MBR_METHODS, MBR_POSTERIORS
from hypertune.cli import COMMANDS
from hypertune.cli.common import add_output_options, emit
from hypertune.cli.options import finite_float, non_negative_float, positive_int

if TYPE_CHECKING:
    from collections.abc import Callable

    from hypertune.mbr.kbest import KbestLists

EXAMPLE = """example:
  hypertune mbr test.nbest --weights tuned.weights > test.mbr.txt            # BLEU+1 MBR, alpha = 1
  hypertune mbr samples.jsonl --uniform --metric chrf --exclude-self          # MBR over samples
  hypertune mbr samples.jsonl --uniform --utility comet > test.comet-mbr.txt  # a COMET matrix per sentence
  hypertune mbr dev.nbest -w tuned.weights --tune-scale --refs dev.ref --json
  hypertune mbr lattices/ -w tuned.weights --method lattice --refs dev.ref       # p, r estimated on dev
  hypertune mbr forests/ -w tuned.weights --method consensus --kbest 1000 --unique
"""

#: The posterior scales ``--tune-scale`` tries without ``--scales`` (a log grid around Moses's default 1).
DEFAULT_SCALES = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)


def scale_list(text: str) -> list[float]:
    """An argparse type: comma-separated finite numbers >= 0, at least one."""
    values = [non_negative_float(part.strip()) for part in text.split(",")]
    return sorted(set(values))


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "mbr",
        help=COMMANDS["mbr"],
        description="Minimum Bayes risk decoding: per sentence, in sentence-id order, the hypothesis with the highest "
        "expected utility, one line per sentence and nothing else; --json adds the expected utility of each choice and "
        "of the MAP hypothesis. --method kbest (Kumar & Byrne 2004): sum_e' p(e') u(e, e') under the posteriors p(e) ~ "
        "exp(alpha w.h(e)) of each k-best list (or uniform, for samples), u a sentence metric of e with e' as its "
        "reference (default BLEU+1; a lower-is-better metric such as TER is negated) or a given utility matrix; ties: "
        "the earlier hypothesis. --method lattice: Tromble et al.'s (2008) linear-BLEU MBR over every derivation of "
        "lattices and forests. --method consensus: DeNero et al.'s (2009) BLEU against the expected n-gram counts. "
        "See docs/mbr.md.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "inputs", nargs="+", metavar="INPUT", help="k-best lists, samples (JSONL, n-best); lattices, forests"
    )
    parser.add_argument("--weights", "-w", action="append", metavar="FILE", help="weights file (repeatable)")
    parser.add_argument("--format", choices=GRAPH_FORMATS, help="input format (default: detected)")
    parser.add_argument("--method", choices=MBR_METHODS, default="kbest", help="decision rule (default: %(default)s)")
    parser.add_argument(
        "--scale",
        type=non_negative_float,
        metavar="ALPHA",
        help="posterior scale alpha: p(e) ~ exp(alpha w.h(e)) (default: 1, as Moses -mbr-scale)",
    )
    parser.add_argument(
        "--metric",
        default="bleu+1",
        metavar="M",
        help="utility: a sentence metric of e against e' (bleu+1, chrf, ter, wer, ..., or an "
        "interpolation 'bleu:0.5,ter:-0.5'; every BLEU is BLEU+1 per sentence; default: %(default)s)",
    )
    parser.add_argument(
        "--utility",
        metavar="NAME",
        help="utility: the JSONL inputs' matrices \"utilities\": {NAME: [u(e, e'_0), ...]} instead of a metric",
    )
    parser.add_argument("--uniform", action="store_true", help="uniform posteriors (samples); no weights needed")
    parser.add_argument(
        "--exclude-self",
        action="store_true",
        help="leave e' = e out of the expectation (as comet-mbr; Moses -mbr: docs/mbr.md)",
    )
    parser.add_argument(
        "--support", type=positive_int, metavar="K", help="choose among the K most probable hypotheses only"
    )
    parser.add_argument(
        "--evidence",
        type=positive_int,
        metavar="K",
        help="expectations over the K most probable hypotheses only (posteriors renormalized)",
    )
    parser.add_argument(
        "--tune-scale",
        action="store_true",
        help="choose alpha on a dev set: corpus BLEU (sacrebleu's) of the MBR output for each "
        "of --scales against --refs; the best alpha decides (ties: the smaller)",
    )
    parser.add_argument(
        "--refs",
        nargs="+",
        metavar="REF",
        help="reference files (for --tune-scale; lattice: to estimate --linear-p and --linear-r)",
    )
    parser.add_argument("--scales", type=scale_list, metavar="A,B,...",
                        help="the alphas --tune-scale tries (default: " + ",".join(f"{a:g}" for a in DEFAULT_SCALES)
                        + ")")  # fmt: skip
    lattice = parser.add_argument_group("lattice MBR (--method lattice; Tromble et al. 2008)")
    lattice.add_argument(
        "--linear-p",
        type=finite_float,
        metavar="P",
        help="linear BLEU's unigram precision p (default: estimated on the model-best translations "
        "against --refs, else Moses's 0.8)",
    )
    lattice.add_argument(
        "--linear-r",
        type=finite_float,
        metavar="R",
        help="linear BLEU's precision ratio r (default: estimated, else Moses's 0.6)",
    )
    lattice.add_argument(
        "--posteriors",
        choices=MBR_POSTERIORS,
        default="exact",
        help="n-gram posteriors: exact (the probability that an n-gram occurs, as Tromble et al.) "
        "or expected-counts (the cheaper approximation); default: %(default)s",
    )
    consensus = parser.add_argument_group("consensus decoding (--method consensus; DeNero et al. 2009)")
    consensus.add_argument(
        "--kbest",
        type=positive_int,
        default=100,
        metavar="K",
        help="choose among the K best derivations (default: %(default)s)",
    )
    consensus.add_argument("--unique", action="store_true", help="the K best distinct strings")
    parser.add_argument("--out", "-o", metavar="FILE", help="write the translations to FILE (atomically)")
    parser.add_argument("--strict", action="store_true", help="weights naming no input feature are an error")
    add_output_options(parser)
    parser.set_defaults(run=run, outputs=("out",))


def _check_options(args: argparse.Namespace) -> None:
    from hypertune.errors import UsageError

    if args.tune_scale and not args.refs:
        raise UsageError("--tune-scale needs --refs (the dev set's references)")
    if args.refs and not args.tune_scale and args.method != "lattice":
        raise UsageError("--refs is for --tune-scale (and --method lattice)")
    if args.scales and not args.tune_scale:
        raise UsageError("--scales is for --tune-scale")
    if args.tune_scale and (args.uniform or args.scale is not None):
        raise UsageError("--tune-scale chooses the scale: give neither --scale nor --uniform")
    if args.uniform and args.scale is not None:
        raise UsageError("--scale has no effect with --uniform")
    if not args.weights and not args.uniform:
        raise UsageError("--weights is needed for the posteriors (or --uniform, for samples)")
    if args.utility is not None and args.metric != "bleu+1":
        raise UsageError("--utility and --metric name the utility twice: give one")
    _check_method_options(args)


def _check_method_options(args: argparse.Namespace) -> None:
    """Each method's own options, refused with the others."""
    from hypertune.errors import UsageError

    given = {
        "kbest": [name for name, on in (("--uniform", args.uniform), ("--exclude-self", args.exclude_self),
                  ("--support", args.support is not None), ("--evidence", args.evidence is not None),
                  ("--utility", args.utility is not None), ("--metric", args.metric != "bleu+1")) if on],
        "lattice": [name for name, on in (("--linear-p", args.linear_p is not None),
                    ("--linear-r", args.linear_r is not None), ("--posteriors", args.posteriors != "exact")) if on],
        "consensus": [name for name, on in (("--kbest", args.kbest != 100), ("--unique", args.unique)) if on],
    }  # fmt: skip
    for method, names in given.items():
        if names and method != args.method:
            raise UsageError(f"{', '.join(names)}: for --method {method}, not {args.method}")
    if (args.linear_p is None) != (args.linear_r is None):
        raise UsageError("--linear-p and --linear-r come together")


class Decided(NamedTuple):
    """One decision of the whole corpus: the chosen translations (sentence order), the JSON rows, the summary."""

    texts: list[str]
    rows: list[dict[str, Any]]
    summary: dict[str, Any]


def run(args: argparse.Namespace) -> int:
    from types import SimpleNamespace

    from hypertune.cli.tuning import load_graphs, load_weights
    from hypertune.errors import UsageError
    from hypertune.tuners.sentence_ids import assemble_sentences

    _check_options(args)
    graphs, _ = load_graphs(argparse.Namespace(inputs=args.inputs, format=args.format))
    if not graphs:
        raise UsageError("no inputs: the files hold no sentences")
    weights = None
    if args.weights and not args.uniform:  # every weights format, positional ones in the first input's order
        weights, _ = load_weights(args.weights, SimpleNamespace(feature_space=graphs[0].feature_space, graphs=graphs),
                                  args)  # fmt: skip
    sentences, ids = assemble_sentences(graphs)
    references = None
    if args.refs:
        from hypertune.formats import read_references
        from hypertune.tuners.sentence_ids import select_references

        references = select_references(ids, read_references(args.refs))
    if args.method == "kbest":
        decide = _kbest_rule(args, sentences, ids, weights)
    else:
        decide = _graph_rule(args, sentences, ids, weights, references)
    scale = 1.0 if args.scale is None else args.scale
    curve: list[dict[str, float]] = []
    if args.tune_scale:
        assert references is not None  # _check_options
        scale, curve = _tune_scale(args.scales or DEFAULT_SCALES, decide, references)
    _report(args, decide(scale), curve)
    return 0


def _kbest_rule(args: argparse.Namespace, sentences: list, ids: list[int], weights: Any) -> Callable[[float], Decided]:
    """k-best MBR as a function of the scale."""
    from hypertune.mbr.kbest import MbrOptions, chosen, kbest_lists, mbr_decide

    lists = kbest_lists(sentences, weights)
    utility, utility_name = _utility(args, ids, lists)
    texts = lists.texts()

    def decide(scale: float) -> Decided:
        options = MbrOptions(scale=scale, uniform=args.uniform, exclude_self=args.exclude_self,
                             support=args.support, evidence=args.evidence)  # fmt: skip
        decision = mbr_decide(lists, utility, options)
        picked = chosen(lists, decision.choice).tolist()
        maps = chosen(lists, decision.map_index).tolist()
        rows = [
            {"id": sid, "index": c - start, "hyp": texts[c], "expected_utility": float(decision.expected[c]),
             "map_index": m - start, "map_hyp": texts[m], "map_expected_utility": float(decision.expected[m])}
            for sid, c, m, start in zip(ids, picked, maps, lists.offsets[:-1].tolist(), strict=True)
        ]  # fmt: skip
        summary = {"utility": utility_name, "scale": None if args.uniform else scale, "uniform": args.uniform,
                   "exclude_self": args.exclude_self, "support": args.support, "evidence": args.evidence}  # fmt: skip
        return Decided([texts[c] for c in picked], rows, summary)

    return decide


def _graph_rule(
    args: argparse.Namespace, sentences: list, ids: list[int], weights: Any, references: list | None
) -> Callable[[float], Decided]:
    """Lattice MBR or consensus decoding as a function of the scale (lattices, forests, k-best lists)."""
    from hypertune.mbr.consensus import consensus_corpus
    from hypertune.mbr.lattice import lattice_mbr_corpus

    def decide(scale: float) -> Decided:
        summary: dict[str, Any] = {"scale": scale}
        if args.method == "lattice":
            result = lattice_mbr_corpus(sentences, weights, references=references, scale=scale, p=args.linear_p,
                                        r=args.linear_r, posteriors=args.posteriors)  # fmt: skip
            choices: list[Any] = result.choices
            values = [(c.gain, c.map_gain) for c in choices]
            summary |= {"utility": "linear-bleu", "posteriors": args.posteriors, "p": result.p, "r": result.r,
                        "theta": result.theta.tolist(), "parameters": result.source}  # fmt: skip
        else:
            choices = consensus_corpus(sentences, weights, scale=scale, kbest=args.kbest, unique=args.unique)
            values = [(c.score, c.map_score) for c in choices]
            summary |= {"utility": "consensus-bleu", "kbest": args.kbest, "unique": args.unique}
        rows = [
            {"id": sid, "hyp": c.text, "expected_utility": float(value), "map_hyp": c.map_text,
             "map_expected_utility": float(map_value)}
            for sid, c, (value, map_value) in zip(ids, choices, values, strict=True)
        ]  # fmt: skip
        if args.method == "consensus":
            for row, c in zip(rows, choices, strict=True):
                row["rank"] = c.rank
        return Decided([c.text for c in choices], rows, summary)

    return decide


def _utility(args: argparse.Namespace, ids: list[int], lists: KbestLists) -> tuple[Any, str]:
    """The utility (a metric, or the given matrices flat) and its name for the report."""
    from hypertune.errors import UsageError
    from hypertune.metrics import GivenScore, LinearBleu, parse_metric

    if args.utility is not None:
        return _given_matrices(args, ids, lists), args.utility
    metric = parse_metric(args.metric)
    if isinstance(metric, GivenScore | LinearBleu) or metric.given_names:
        raise UsageError(f"--metric {args.metric}: a pair utility compares two hypotheses' words; for given "
                         "utilities use --utility NAME")  # fmt: skip
    return metric, (args.metric if metric.higher_is_better else f"-{args.metric}")


def _given_matrices(args: argparse.Namespace, ids: list[int], lists: KbestLists) -> Any:
    """Every sentence's ``k x k`` matrix of ``--utility``, row-major, concatenated in sentence order."""
    import os

    import numpy as np

    from hypertune.errors import InputError, UsageError
    from hypertune.formats.jsonl import utility_matrices
    from hypertune.formats.registry import detect_format

    matrices: dict[int, Any] = {}
    for path in dict.fromkeys(args.inputs):
        if os.path.isdir(path) or (args.format or detect_format(path).name) != "jsonl":
            raise UsageError(f"--utility reads JSONL inputs, and {path} is not one")
        for sid, matrix in utility_matrices(path, args.utility).items():
            if sid in matrices:
                raise InputError(f"sentence {sid} is in several inputs: --utility needs each sentence's hypotheses "
                                 "in one file (the matrix's columns are its lines)", path)  # fmt: skip
            matrices[sid] = matrix
    sizes = lists.sizes.tolist()
    for sid, k in zip(ids, sizes, strict=True):
        if matrices[sid].shape != (k, k):  # pragma: no cover - one file per id keeps the list as read
            raise InputError(f"sentence {sid}: a {matrices[sid].shape} utility matrix for {k} hypotheses")
    return np.concatenate([matrices[sid].reshape(-1) for sid in ids])


def _tune_scale(
    scales: Any, decide: Callable[[float], Decided], references: list[list[str]]
) -> tuple[float, list[dict[str, float]]]:
    """Corpus BLEU (sacrebleu's defaults) of the decisions at each scale; the best scale (ties: the smaller)."""
    from hypertune.metrics import BleuMetric

    bleu = BleuMetric(smooth="exp")
    curve = []
    best: tuple[float, float] | None = None
    for scale in sorted(scales):
        score = bleu.corpus_score(decide(scale).texts, references)
        curve.append({"scale": scale, "bleu": score})
        if best is None or score > best[1]:
            best = (scale, score)
    assert best is not None
    return best[0], curve


def _report(args: argparse.Namespace, decided: Decided, curve: list[dict[str, float]]) -> None:
    import sys

    from hypertune.formats.io import write_atomically

    rows = decided.rows
    n = max(len(rows), 1)
    summary: dict[str, Any] = {
        "method": args.method, **decided.summary, "sentences": len(rows),
        "changed": sum(r["hyp"] != r["map_hyp"] for r in rows),
        "mean_expected_utility": sum(r["expected_utility"] for r in rows) / n,
        "mean_map_expected_utility": sum(r["map_expected_utility"] for r in rows) / n,
    }  # fmt: skip
    payload: dict[str, Any] = {"sentences": rows, "summary": summary}
    if curve:
        payload["scale_curve"] = curve
    lines = _summary_lines(summary, curve)
    text = "".join(t + "\n" for t in decided.texts)
    if args.out:
        write_atomically(args.out, text)
        emit(args, "\n".join([f"wrote {len(rows)} sentence(s) to {args.out}", *lines]), {**payload, "output": args.out})
    elif args.json:
        emit(args, "", payload)
    else:
        sys.stdout.write(text)
        if curve and not args.quiet:
            sys.stderr.write("\n".join(lines) + "\n")


def _summary_lines(summary: dict[str, Any], curve: list[dict[str, float]]) -> list[str]:
    lines = [
        f"MBR ({summary['method']}, {summary['utility']}): {summary['changed']} of {summary['sentences']} choice(s) "
        f"differ from the MAP hypothesis; mean expected utility {summary['mean_expected_utility']:.4f} (MAP: "
        f"{summary['mean_map_expected_utility']:.4f})"
    ]
    if curve:
        lines.append("scale  BLEU")
        lines += [f"{point['scale']:<6g} {100 * point['bleu']:.2f}" for point in curve]
        lines.append(f"chosen scale: {summary['scale']:g}")
    return lines
