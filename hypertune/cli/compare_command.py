"""``hypertune compare``: systems' corpus scores with bootstrap confidence intervals, and the significance of each
system's difference from the first (approximate randomization, paired bootstrap), over one or several optimizer
runs per system (MultEval's report). The statistics: :mod:`hypertune.metrics.significance`."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any

from hypertune.cli import COMMANDS
from hypertune.errors import InputError, UsageError

EXAMPLE = """example:
  hypertune compare baseline.en tuned.en --refs ref.0 ref.1
  hypertune compare base.run1 base.run2 base.run3 new.run1 new.run2 new.run3 --runs 3 --refs ref.
  hypertune compare base.jsonl tuned.jsonl --metric scores.comet --json
  hypertune compare baseline.en tuned.en --refs ref.0 --metric ter --trials 100000 --seed 7

A SYSTEM is a text file (line i: the translation of sentence i) or the JSONL that 'hypertune rerank
--out-format jsonl' writes (an object per sentence with its "id", "hyp" and "scores"). The first system
is the baseline. p_AR: approximate randomization (Riezler & Maxwell 2005); p_boot: the fraction of the
bootstrap resamples in which the system does not beat the baseline (Koehn 2004); with --runs, MultEval's
report (Clark et al. 2011). The BLEU options are 'hypertune bleu's, with sacrebleu's defaults. See
docs/experiments.md.
"""

#: The most bootstrap resamples (every system's resampled scores are kept for the percentiles).
MAX_SAMPLES = 10_000_000


def register(subparsers: Any) -> None:
    from hypertune.choices import METRICS
    from hypertune.cli.bleu_command import add_bleu_metric_options
    from hypertune.cli.common import add_output_options
    from hypertune.cli.options import integer, positive_int, seed

    parser = subparsers.add_parser(
        "compare",
        help=COMMANDS["compare"],
        description="Each system's corpus metric with a bootstrap confidence interval, and the p-values of its "
        "difference from the first system's by approximate randomization and paired bootstrap resampling.",
        epilog=EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "systems",
        nargs="+",
        metavar="SYSTEM",
        help="each system's output: text, one translation per line, or rerank's JSONL; the first is the baseline",
    )
    parser.add_argument(
        "--refs",
        "-r",
        nargs="+",
        metavar="REF",
        help="reference files, one sentence per line, or a prefix of REF.0 REF.1 ... (not needed for scores.NAME)",
    )
    names = ", ".join(name for name in METRICS if name != "linear-bleu")  # linear BLEU needs estimates of its own
    parser.add_argument(
        "--metric",
        "-m",
        default="bleu",
        help=f"one of {names} (default: bleu, with the BLEU options below); scores.NAME, the mean of the score NAME "
        "of each sentence of rerank's JSONL (no --refs needed); or an interpolation such as 'bleu:0.5,ter:-0.5'",
    )
    add_bleu_metric_options(parser)
    parser.add_argument(
        "--runs",
        type=positive_int,
        default=1,
        metavar="K",
        help="optimizer runs per system: consecutive groups of K files form a system (default: 1)",
    )
    parser.add_argument(
        "--bootstrap",
        type=integer(1, MAX_SAMPLES),
        default=1000,
        metavar="B",
        help="bootstrap resamples of the sentences, for the intervals and p_boot (default: %(default)s)",
    )
    parser.add_argument(
        "--trials",
        type=positive_int,
        default=10000,
        metavar="N",
        help="approximate randomization trials (default: %(default)s)",
    )
    parser.add_argument(
        "--confidence",
        type=_confidence,
        default=0.95,
        metavar="C",
        help="confidence level of the intervals, between 0 and 1 (default: %(default)s)",
    )
    parser.add_argument("--seed", type=seed, default=0, help="random seed of the resamples and trials (default: 0)")
    add_output_options(parser)
    parser.set_defaults(run=run)


def _confidence(text: str) -> float:
    """An argparse type: a number strictly between 0 and 1."""
    from hypertune.cli.options import finite_float

    value = finite_float(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 1, got {text!r}")
    return value


@dataclass
class _System:
    """One file's sentences: how many, their texts (``None``: JSONL without "hyp") and given scores by name."""

    path: str
    sentences: int
    texts: list[str] | None
    given: dict[str, Any]
    jsonl: bool = False


def _read_system(path: str) -> _System:
    """A text file (a translation per line) or JSONL with one hypothesis per sentence id, ids 0..n-1 in any order
    (what ``rerank --out-format jsonl`` writes: each sentence's ``hyp`` and ``scores``)."""
    from hypertune.formats.io import read_bytes
    from hypertune.formats.references import not_references_reason, text_lines
    from hypertune.formats.sniffing import sniff_jsonl

    data = read_bytes(path, "system file")
    text = data.decode("utf-8")
    if path.endswith((".jsonl", ".jsonl.gz")) or sniff_jsonl(text[:4096]):
        return _read_jsonl(path, data)
    reason = not_references_reason(text)
    if reason is not None:
        raise InputError(f"this looks like {reason}, not a system's output (one translation per line, or "
                         "rerank's JSONL)", path)  # fmt: skip
    lines = text_lines(text)
    return _System(path, len(lines), lines, {})


def _read_jsonl(path: str, data: bytes) -> _System:
    import numpy as np

    from hypertune.formats import jsonl
    from hypertune.metrics.base import strip_sentence_markers
    from hypertune.symbols import FeatureSpace, Vocabulary

    graphs = jsonl.parse(data, path, FeatureSpace(), Vocabulary())
    ids = np.asarray([g.sentence_id for g in graphs], dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    graphs = [graphs[i] for i in order]
    missing = np.setdiff1d(np.arange(len(graphs)), ids)
    if missing.size:
        raise InputError(f"the sentence ids are not 0 to {len(graphs) - 1}: no sentence {int(missing[0])} (line i "
                         "of the references is sentence i)", path)  # fmt: skip
    for g in graphs:
        if g.num_edges != 2:  # a k-best list of one hypothesis: the start axiom and one edge
            raise InputError(f"sentence {g.sentence_id} has {g.num_edges - 1} hypotheses; compare takes one per "
                             "sentence (what 'rerank --out-format jsonl' writes)", path)  # fmt: skip
    names = graphs[0].edge_scores.names if graphs[0].edge_scores is not None else ()
    given = {name: np.asarray([g.edge_scores.column(name)[1] for g in graphs]) for name in names}  # type: ignore[union-attr]  # every line has the same names
    if graphs[0].metadata.get(jsonl.TEXT) is False:
        return _System(path, len(graphs), None, given, jsonl=True)
    texts = [" ".join(strip_sentence_markers(g.vocabulary.words(int(t) for t in g.edge_target(1) if t >= 0)))
             for g in graphs]  # fmt: skip
    return _System(path, len(graphs), texts, given, jsonl=True)


def _bleu_options(args: argparse.Namespace) -> dict[str, Any]:
    """The BLEU options for the BLEU metrics of ``--metric``: ``bleu+1`` and ``ibm-bleu`` (and an interpolation
    naming one) keep their own smoothing and reference length unless ``--smooth``/``--ref-length`` say otherwise."""
    from hypertune.choices import BLEU_METRICS

    names = {part.split(":")[0].strip().lower() for part in args.metric.split(",")} & set(BLEU_METRICS)
    options: dict[str, Any] = {
        "tokenize": args.tokenize,
        "lowercase": args.lowercase,
        "max_order": args.max_order,
        "smooth_value": args.smooth_value,
        "effective_order": args.effective_order,
    }
    variants = bool(names & {"bleu+1", "ibm-bleu"})
    if args.smooth != "exp" or not variants:
        options["smooth"] = args.smooth
    if args.ref_length != "closest" or not variants:
        options["ref_length"] = args.ref_length
    return options


def _statistics(metric: Any, system: _System, references: Any, spec: str, prepared: dict[int, Any]) -> Any:
    """The metric's statistics of each sentence of ``system``, ``(n, d)``: an interpolation's components each
    from its source (given scores, or the texts against the references; a BLEU's references prepared once, in
    ``prepared``)."""
    import numpy as np

    from hypertune.metrics import BleuMetric, InterpolatedMetric

    parts = metric.metrics if isinstance(metric, InterpolatedMetric) else [metric]
    columns = []
    for part in parts:
        if part.given_names:
            absent = [name for name in part.given_names if name not in system.given]
            if absent:
                have = f"has the scores {', '.join(system.given)}" if system.given else "has no scores"
                kind = "JSONL file" if system.jsonl else "plain text file"
                raise InputError(f"--metric {spec} needs the score {absent[0]!r} of each sentence, but this {kind} "
                                 f"{have} (JSONL \"scores\", as 'rerank --out-format jsonl' writes)",
                                 system.path)  # fmt: skip
            columns.append(part.stats_from_given(np.column_stack([system.given[n] for n in part.given_names])))
        else:
            if system.texts is None:
                raise InputError(f"--metric {spec} needs each sentence's words, but the JSONL lines have no \"hyp\"",
                                 system.path)  # fmt: skip
            if isinstance(part, BleuMetric) and id(part) not in prepared:
                prepared[id(part)] = part.prepare(references)
            columns.append(part.corpus_stats(system.texts, prepared.get(id(part), references)))
    return np.hstack(columns)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from hypertune.cli.common import emit, show_progress
    from hypertune.formats.references import References, read_reference_text, reference_files, text_lines
    from hypertune.metrics import parse_metric
    from hypertune.metrics.significance import compare_systems

    files, k = list(args.systems), args.runs
    if len(files) % k:
        raise UsageError(f"{len(files)} system files do not form groups of --runs {k}")
    metric = parse_metric(args.metric, _bleu_options(args))
    if metric.needs_references and not args.refs:
        raise UsageError(f"--metric {args.metric} needs --refs")
    systems = [_read_system(path) for path in files]
    n = systems[0].sentences
    for system in systems[1:]:
        if system.sentences != n:
            raise InputError(f"{system.sentences} sentences, but {files[0]} has {n}", path=system.path)
    reference_paths = reference_files(args.refs) if args.refs else []
    lines = [text_lines(read_reference_text(path)) for path in reference_paths]
    for path, ref in zip(reference_paths, lines, strict=True):
        if len(ref) != n:
            raise InputError(f"{len(ref)} lines, but {files[0]} has {n} sentences", path=path)
    references: list[list[str]] = (
        References((list(r) for r in zip(*lines, strict=True)), reference_paths) if lines else [[] for _ in range(n)]
    )
    if n == 0:
        raise InputError("no sentences to compare", path=files[0])
    prepared: dict[int, Any] = {}
    stats = np.stack([_statistics(metric, system, references, args.metric, prepared) for system in systems])
    grouped = stats.reshape(len(files) // k, k, n, stats.shape[2])
    tell = _progress if show_progress(args) else None
    reports = compare_systems(
        metric.score, list(grouped), metric.higher_is_better, args.bootstrap, args.trials, args.confidence, args.seed,
        progress=tell,
    )  # fmt: skip
    if tell:
        sys.stderr.write("\r" + " " * 79 + "\r")
    names = [files[i : i + k] for i in range(0, len(files), k)]
    scale = metric.display_scale
    payload = {
        "metric": args.metric,
        "options": _options(args, metric, len(reference_paths)),
        "sentences": n,
        "runs": k,
        "seed": args.seed,
        "systems": [_system_payload(group, report, scale, k) for group, report in zip(names, reports, strict=True)],
    }
    emit(args, _table(args, names, reports, scale, n), payload)
    return 0


def _progress(message: str) -> None:
    sys.stderr.write(f"\r{f'compare: {message}':<79}")
    sys.stderr.flush()


def _p_value(p: float) -> str:
    """Four decimals; a p below 0.0001 (approximate randomization's floor is 1/(N + 1)) in scientific notation."""
    return f"{p:.4f}" if p == 0 or p >= 0.0001 else f"{p:.1e}"


def _options(args: argparse.Namespace, metric: Any, nrefs: int) -> dict[str, Any]:
    from hypertune.metrics import BleuMetric, InterpolatedMetric

    options: dict[str, Any] = {
        "nrefs": nrefs,
        "bootstrap": args.bootstrap,
        "trials": args.trials,
        "confidence": args.confidence,
    }
    parts = metric.metrics if isinstance(metric, InterpolatedMetric) else [metric]
    bleu = next((m for m in parts if isinstance(m, BleuMetric)), None)
    if bleu is not None:  # as 'bleu --json' says them
        options.update({
            "case": "lc" if args.lowercase else "mixed",
            "tok": args.tokenize,
            "smooth": bleu.smooth,
            "smooth_value": args.smooth_value,
            "max_order": args.max_order,
            "ref_length": bleu.ref_length,
            "effective_order": bool(args.effective_order),
        })  # fmt: skip
    return options


def _system_payload(files: list[str], report: Any, scale: float, runs: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "files": files,
        "score": scale * report.score,
        "ci_low": scale * report.ci_low,
        "ci_high": scale * report.ci_high,
        "p_ar": report.p_ar,
        "p_boot": report.p_boot,
    }
    if runs > 1:
        row["sd"] = scale * report.sd
        row["run_scores"] = [scale * s for s in report.run_scores]
    return row


def _table(args: argparse.Namespace, names: list[list[str]], reports: list[Any], scale: float, n: int) -> str:
    from hypertune.cli.common import percent

    runs = len(names[0])
    level = f"{100 * args.confidence:g}%"
    spread = f", {runs} runs per system (mean ± sd)" if runs > 1 else ""
    tests = f"p_AR (approximate randomization, {args.trials} trials), p_boot (paired bootstrap)"
    head = (f"{args.metric}, {n} sentences{spread}; {level} bootstrap interval of {args.bootstrap} resamples; "
            f"against the first system: {tests}; seed {args.seed}")  # fmt: skip
    rows = [["system", "score", f"{level} CI", "p_AR", "p_boot"]]
    for files, report in zip(names, reports, strict=True):
        name = files[0] if runs == 1 else f"{files[0]} (+{runs - 1})"
        score = percent(report.score, scale=scale)
        if runs > 1:
            score += f" ± {percent(report.sd, scale=scale)}"
        interval = f"[{percent(report.ci_low, scale=scale)}, {percent(report.ci_high, scale=scale)}]"
        if report.p_ar is None:
            rows.append([name, score, interval, "baseline", ""])
        else:
            rows.append([name, score, interval, _p_value(report.p_ar), _p_value(report.p_boot)])
    widths = [max(len(row[c]) for row in rows) for c in range(5)]
    body = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    return "\n".join([head, *body])
