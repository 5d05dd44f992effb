"""Options and loading shared by the tuning commands (mert, linesearch, mira, hope-fear)."""

from __future__ import annotations

import argparse
import copy
import functools
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from hypertune import interrupts
from hypertune.choices import BLEU_METRICS
from hypertune.cli.common import emit, percent, show_progress, write_or_print
from hypertune.errors import HypertuneError, InputError, UsageError
from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.formats.extractor import read_featstat, read_featstat_input, sibling
from hypertune.formats.input_cache import InputCache, Reader, cache_folder
from hypertune.formats.io import read_head, read_text, require_rereadable
from hypertune.formats.nbest import feature_order, read_nbest_input, read_zmert
from hypertune.formats.registry import SentenceIds, corpus_files, describe_sentence_ids
from hypertune.formats.weights import (
    check_round_trip,
    detect_weights_format,
    format_weights,
    parse_weights,
    read_positional,
    write_weights,
)
from hypertune.metrics import Metric, get_metric, parse_metric
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners.base import TuningResult, metric_label
from hypertune.tuners.base import metric_key as base_metric_key
from hypertune.tuners.corpus import TuningSet, has_statistics
from hypertune.tuners.shards import LocalShards, Shards, shard_costs, shard_ranges
from hypertune.weights import Weights, check_feature_names

if TYPE_CHECKING:
    from hypertune.distributed import DaskShards
    from hypertune.hypergraph import Hypergraph


def load_one_graph(args: argparse.Namespace) -> Hypergraph:
    """The graph ``--graph`` of the file (a usage error naming how many there are when out of range)."""
    graphs = read_graphs(args.path, args.format)
    if not 0 <= args.index < len(graphs):
        raise UsageError(f"--graph {args.index}: {args.path} has {len(graphs)} graph(s)")
    return graphs[args.index]


def graph_weights(paths: list[str], hg: Hypergraph, strict: bool = False) -> Weights:
    """Weights for one graph (all 0 without files), their names checked against its features like every
    command's (``check_feature_names``): a misspelt name warns instead of silently scoring 0."""
    if not paths:
        return Weights()
    weights = read_weights(paths)
    check_feature_names(weights, hg.feature_space, " ".join(paths), strict, graphs=[hg])
    return weights


def read_direction(values: list[str], space: FeatureSpace, strict: bool = False) -> Weights:
    """The direction of ``--direction`` (:func:`hypertune.cli.options.add_direction_option`), one rule for every
    command: each value is a weights file if one exists by that name, else a feature name (its unit vector),
    ``name=value,...`` pairs or comma-separated numbers in ``space``'s order; several values are summed. Names
    are checked like every weights file's (``check_feature_names``); a name given inline must be a feature of
    the inputs, and the zero vector is refused."""
    total = Weights()
    names = list(space.names)
    for text in values:
        if os.path.isfile(text) or text == "-":
            part = read_weights([text])
            check_feature_names(part, space, text, strict)  # a direction may name few features: no dense check
        else:
            part = _inline_direction(text, names)
        for name, value in part.items():
            total[name] = total.get(name, 0.0) + value
    if not any(total.values()):
        raise UsageError("--direction is the zero vector")
    return total


def _inline_direction(text: str, names: list[str]) -> Weights:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if len(parts) == 1 and "=" not in parts[0] and parts[0] in names:
        return Weights({parts[0]: 1.0})
    pairs = [p.partition("=") for p in parts]
    try:
        values = [float(value if eq else name) for name, eq, value in pairs]
    except ValueError:
        raise UsageError(
            f"--direction {text!r}: not a weights file, a feature name, name=value pairs or numbers"
        ) from None
    named = [bool(eq) for _, eq, _ in pairs]
    if parts and all(named):
        unknown = [name.strip() for name, _, _ in pairs if name.strip() not in names]
        if unknown:
            raise UsageError(f"--direction: no feature {unknown[0]!r} in the input")
        return Weights({name.strip(): value for (name, _, _), value in zip(pairs, values, strict=True)})
    if any(named):
        raise UsageError(f"--direction {text!r}: not a weights file, a feature name, name=value pairs or numbers")
    if len(values) != len(names):
        raise UsageError(f"--direction: {len(values)} numbers for {len(names)} features ({', '.join(names)})")
    return Weights(dict(zip(names, values, strict=True)))


def build_metric(args: argparse.Namespace, vocabulary: Vocabulary) -> Metric:
    """The metric of a command's options (``mira`` has no BLEU options but the tokenizer and case)."""
    spec = args.metric
    smooth, ref_length = getattr(args, "smooth", None), getattr(args, "ref_length", None)
    order = getattr(args, "max_order", 4)
    bleu_options: dict[str, object] = {
        "tokenize": args.tokenize,
        "lowercase": args.lowercase,
        "max_order": order,
        "vocabulary": vocabulary,
    }
    if smooth:
        bleu_options["smooth"] = smooth
    if ref_length:
        bleu_options["ref_length"] = ref_length
    if spec in BLEU_METRICS:
        return get_metric(spec, **bleu_options)
    if smooth or ref_length or order != 4:
        if not any(part.split(":")[0] in BLEU_METRICS for part in spec.split(",")):
            raise UsageError(f"--smooth, --ref-length and --max-order apply to BLEU, not to {spec}")
    return parse_metric(spec, bleu_options)  # an interpolation's BLEU takes the BLEU options too


def load_graphs(args: argparse.Namespace) -> tuple[Sequence[Hypergraph], SentenceIds]:
    """Every graph of the inputs, as read, sharing a feature space and vocabulary, and where their sentence ids
    come from (:func:`~hypertune.formats.registry.describe_sentence_ids`); sentences are assembled
    (by id, accumulating repeated ids) by :meth:`TuningSet.from_corpus`. A FEATSTAT file is read with its
    SCORESTAT file: the one named like it, else the one given in the same position among the inputs."""
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs = []
    read_from: list[tuple[str, list]] = []  # each input and its graphs, for describe_sentence_ids
    fmt, params = getattr(args, "format", None), getattr(args, "params", None)
    inputs = list(dict.fromkeys(args.inputs))
    kinds = {p: _extractor_kind(p) for p in inputs}
    featstats = [p for p in inputs if kinds[p] == "FEATURES"]
    scorestats = [p for p in inputs if kinds[p] == "SCORES"]
    partner: dict[str, str | None] = {}
    for k, features in enumerate(featstats):
        named = sibling(features, "SCORES")  # FEATSTAT.3 -> SCORESTAT.3, if that file exists
        if not scorestats or named in scorestats:
            partner[features] = named
        else:
            partner[features] = scorestats[k] if len(scorestats) == len(featstats) else None
    paired = set(partner.values())
    folder = cache_folder(getattr(args, "cache", None))
    store = InputCache(folder) if folder else None
    if len(featstats) == len(inputs) - len(scorestats) == 1 and set(scorestats) <= paired and store is None:
        if not getattr(args, "scores", None):  # one FEATSTAT file: its lists as one batch (issue 33), no graph
            require_rereadable(featstats[0])
            return read_featstat_input(featstats[0], space, vocabulary, partner[featstats[0]])
    if len(inputs) == 1 and kinds[inputs[0]] is None and store is None and not getattr(args, "scores", None):
        batch = read_nbest_input(inputs[0], fmt, params, space, vocabulary)  # one n-best list: one batch
        if batch is not None:
            return batch
    for path in inputs:
        if not os.path.exists(path):
            raise InputError("no such file or directory", path)
        require_rereadable(path)
        if kinds[path] == "SCORES":
            if path not in paired:
                raise InputError("a SCORESTAT file needs its FEATSTAT file among the inputs", path)
            continue
        read = _reader(path, kinds[path], partner.get(path), fmt, params)
        if store is None:
            read_from.append((path, read(space, vocabulary)))
        else:
            sources = corpus_files(path) if os.path.isdir(path) else [path]
            sources += [p for p in (partner.get(path), params) if p]
            options = f"{kinds[path]}|{fmt}|{partner.get(path)}|{params}|ids from file names"
            read_from.append((path, store.load(path, sources, options, read, space, vocabulary)))
        graphs.extend(read_from[-1][1])
    if getattr(args, "scores", None):
        read_from = _with_score_files(args.scores, read_from)
        graphs = [g for _, read in read_from for g in read]
    return graphs, describe_sentence_ids(read_from)


def _with_score_files(paths: list[str], read_from: list[tuple[str, list]]) -> list[tuple[str, list]]:
    """``--scores``: each score file's rows given to the hypotheses of the input in its position, in the order
    they were read (:func:`~hypertune.formats.score_files.with_scores`)."""
    from hypertune.formats.score_files import read_score_file, with_scores

    if len(paths) != len(read_from):
        inputs = ", ".join(path for path, _ in read_from)
        raise UsageError(f"--scores takes one file per input: {len(paths)} score file(s) for {len(read_from)} "
                         f"input(s) ({inputs})")  # fmt: skip
    return [(path, with_scores(read, read_score_file(scores), scores))
            for (path, read), scores in zip(read_from, paths, strict=True)]  # fmt: skip


def _reader(path: str, kind: str | None, scorestat: str | None, fmt: str | None, params: str | None) -> Reader:
    """How input ``path`` is read into a feature space and vocabulary."""
    if kind == "FEATURES":
        return lambda space, vocabulary: read_featstat(path, space, vocabulary, scorestat)
    if fmt == "zmert" or (params and fmt is None and not os.path.isdir(path)):
        return lambda space, vocabulary: read_zmert(path, space, vocabulary, params=params)
    return lambda space, vocabulary: read_graphs(path, fmt, space, vocabulary)


def _extractor_kind(path: str) -> str | None:
    """``FEATURES`` or ``SCORES`` for a Moses extractor file, else ``None``."""
    if not os.path.isfile(path):
        return None
    head = read_head(path, 64).lstrip()
    return next((kind for kind in ("FEATURES", "SCORES") if head.startswith(f"{kind}_TXT_BEGIN")), None)


def load_tuning_set(args: argparse.Namespace, metric: Metric | None = None) -> TuningSet:
    """The tuning set of the command's inputs and references: sentences matched to reference lines by id
    (:meth:`TuningSet.from_corpus`), the same for every tuning command."""
    graphs, naming = load_graphs(args)
    if not graphs:
        raise UsageError("no inputs: give n-best lists, FEATSTAT files, lattices or hypergraphs")
    precomputed = has_statistics(graphs)
    metric = build_metric(args, graphs[0].vocabulary) if metric is None else metric
    if args.refs:
        references = read_references(args.refs, getattr(args, "refs_per_sentence", None))
    elif precomputed or not metric.needs_references:
        references = None
    else:
        raise UsageError(f"--refs is required: --metric {metric_label(metric)} compares the hypotheses with "
                         "references (only SCORESTAT input and scores.NAME metrics need none)")  # fmt: skip
    return TuningSet.from_corpus(graphs, references, metric, naming, getattr(args, "strict", False))


class HasFeatures(Protocol):
    """What start weights are checked against: a tuning set, a cluster's shards, or graphs' feature space (with
    ``graphs``, if it has them, for the messages)."""

    @property
    def feature_space(self) -> FeatureSpace: ...


def load_weights(
    paths: list[str], tuning_set: HasFeatures, args: argparse.Namespace | None = None
) -> tuple[Weights, tuple[dict[str, float], dict[str, float]] | None]:
    """Weights from every format (later files override earlier ones), each file read once (pipes work);
    Moses ``init.opt`` (positional, three lines) also gives the restart box. Positional files take the
    feature order of the first input (its n-best header or FEATSTAT header), else the tuning set's.
    The names are checked against the tuning set (``check_feature_names``; ``--strict``)."""
    weights = Weights()
    box = None
    for path in paths:
        text = read_text(path, "weights file")
        if detect_weights_format(text) == "positional":
            start, low, high = read_positional(path, _positional_order(args, tuning_set), text)
            weights.update(start)
            if low is not None and high is not None:
                box = (low, high)
        else:
            weights.update(parse_weights(text, path))
    graphs = getattr(tuning_set, "graphs", None)  # shards on a cluster: their names only
    strict = bool(getattr(args, "strict", False))
    check_feature_names(weights, tuning_set.feature_space, " ".join(paths), strict, graphs=graphs,
                        params_option=hasattr(args, "params"))  # fmt: skip
    if args is not None and getattr(args, "out", None) and getattr(args, "out_format", None):
        _check_out_format(weights, tuning_set.feature_space, args.out_format)
    return weights, box


def _check_out_format(start: Weights, space: FeatureSpace, out_format: str) -> None:
    """Refuse, before any work, an ``--out-format`` that cannot hold every name the tuned weights may have
    (the inputs' features and the start weights': a Z-MERT name with a blank in ``cdec`` lines, say), so that a
    run never ends with weights it cannot write."""
    names = Weights(dict.fromkeys(space.names, 0.0))
    names.update(start)
    check_round_trip(names, format_weights(names, out_format), out_format)


def _positional_order(args: argparse.Namespace | None, tuning_set: HasFeatures) -> list[str]:
    if args is not None:
        first = args.inputs[0]
        if (
            os.path.isfile(first)
            and read_head(first, 4096).split("|||")[0].strip().isdigit()
            or (os.path.isfile(first) and read_head(first, 64).lstrip().startswith("FEATURES_TXT_BEGIN"))
        ):
            return feature_order(first)
    return list(tuning_set.feature_space.names)


def report_tuning(
    args: argparse.Namespace,
    tuning_set: TuningSet | Shards,
    result: TuningResult,
    details: str,
    heldout: dict[str, Any] | None = None,
) -> int:
    """The one ending of every tuning command: write the weights (``--out``, ``--out-format``; printed on
    stdout instead if the write fails), draw the history (``--plot``), then print the result -- one summary
    line with the metric before and after on the 0-100 scale (given scores as they are) and the tuner's
    ``details``, the held-out report (:func:`heldout_report`), then the weights unless they were written -- or
    under ``--json`` the result's :meth:`~hypertune.tuners.base.TuningResult.to_json` plus the sentence count,
    the output path and ``heldout``."""
    if args.out:
        write_tuned(args, result.weights)
    scale = tuning_set.metric.display_scale
    before, after = percent(result.score_before, scale=scale), percent(result.score_after, scale=scale)
    if getattr(args, "plot", None):
        from hypertune.cli.plots import plot_history

        plot_history(result, args.plot, f"{args.command}: {result.metric} {before} → {after}")
    sentences = len(tuning_set) if isinstance(tuning_set, TuningSet) else tuning_set.sentences
    payload = {**result.to_json(), "sentences": sentences, "output": args.out}
    kept = "; kept the start weights: nothing found scored better" if result.kept_start else ""
    summary = [
        f"{metric_name(result.metric, scale)} before {before} after {after} "
        f"({sentences} sentences, {details}, {result.seconds:.2f} s{kept})"
    ]
    if heldout is not None:
        payload["heldout"] = heldout
        summary += heldout_lines(heldout)
    naming = getattr(tuning_set, "naming", None)  # where the sentence ids come from (file names, ...)
    if naming is not None:
        payload["sentence_ids"] = naming.origin
        summary += [naming.note] if naming.note else []
    summary.append(f"weights written to {args.out}" if args.out else format_weights(result.weights, args.out_format))
    emit(args, "\n".join(line.rstrip() for line in summary), payload)
    return 0


class Fitted(NamedTuple):
    """A tuning command's finished run, before it is reported: what was tuned on (the tuning set, or the
    cluster's shards), the tuner's result, the summary's details, and what to do after the report (write a
    side file). Every tuning command's ``fit(args)`` returns one; ``run`` is :func:`run_tuning`, and the tuning
    loop calls ``fit`` itself (no output captured, nothing parsed back)."""

    described: TuningSet | Shards
    result: TuningResult
    details: str
    after: Callable[[], None] | None = None


def run_tuning(args: argparse.Namespace) -> int:
    """The one runner of every tuning command: the command's ``fit(args)`` (tuning input, tuner, fit), then
    :func:`report_tuning` and the run's ``after``; with ``--runs R`` above 1, :func:`tuning_runs`."""
    check_heldout_options(args)
    if getattr(args, "runs", 1) > 1:
        return tuning_runs(args)
    fitted = args.fit(args)
    if isinstance(fitted, int):  # a command's mode that reports itself (minrisk --evaluate)
        return fitted
    heldout = heldout_report(args, fitted.described, fitted.result) if getattr(args, "heldout", None) else None
    code = report_tuning(args, fitted.described, fitted.result, fitted.details, heldout)
    if fitted.after is not None:
        fitted.after()
    return code


# ---------------------------------------------------------------------- --runs: several seeds in this process
class FinishedRun(NamedTuple):
    """One run of ``--runs``, as reported: its seed, result, summary details, held-out report and weights file."""

    seed: int
    result: TuningResult
    details: str
    heldout: dict[str, Any] | None
    path: str | None


def check_runs(args: argparse.Namespace) -> list[int]:
    """The seeds of ``--runs R`` (S..S+R-1 of ``--seed S``), or a usage error: a command whose tuner draws nothing
    at random (``runs_refused``, :func:`hypertune.cli.options.add_runs_option`) or takes no seed, seeds past the
    largest."""
    from hypertune.cli.options import MAX_SEED

    refused = getattr(args, "runs_refused", None)
    if refused:
        raise UsageError(f"--runs {args.runs}: {refused}; every run would be the same")
    seed = getattr(args, "seed", None)
    if seed is None:
        raise UsageError(f"--runs {args.runs}: {args.command} takes no --seed; every run would be the same")
    if seed + args.runs - 1 > MAX_SEED:
        raise UsageError(f"--runs {args.runs} --seed {seed}: the last seed would pass the largest, {MAX_SEED}")
    return [seed + r for r in range(args.runs)]


def tuning_runs(args: argparse.Namespace) -> int:
    """``--runs R``: the command's run made R times in this process, one after another, with the seeds S..S+R-1
    of ``--seed S``, each exactly the run ``--seed S+i`` makes alone, reading the inputs itself (one reading
    shared by deep copies measured no faster: an n-best list parses about as fast as its graphs copy); with
    ``--cluster local:N`` one cluster serves them all (:func:`hypertune.loop.runs.shared_cluster`). Each
    finished run's weights are written at once to ``OUT.run-SEED`` (an interrupted run is kept as one run is,
    :func:`interruptible`) and, on a terminal, said in a line on stderr; then :func:`report_runs`. The best dev
    run's ``after`` (MERT's ``--envelope-nbest``) runs at the end. Runs that all end with the same weights are a
    warning: the result did not depend on the seed."""
    from hypertune.errors import warn
    from hypertune.metrics import best_index

    seeds = check_runs(args)
    finished: list[FinishedRun] = []
    best_after: Callable[[], None] | None = None
    described: TuningSet | Shards | None = None
    with _runs_cluster(args) as address, _each_warning_once():
        for number, seed in enumerate(seeds, 1):
            run = copy.copy(args)
            run.seed = seed
            if address:
                run.cluster = address
            try:
                fitted = args.fit(run)
            except interrupts.Interrupted as stop:
                raise stop.explained(stop.message + _finished_note(finished)) from None
            if isinstance(fitted, int):  # a mode that tunes nothing (minrisk --evaluate, refused above)
                raise UsageError(f"--runs {args.runs}: this {args.command} tunes nothing")
            path = _write_run(args, seed, fitted.result.weights)
            heldout = heldout_report(run, fitted.described, fitted.result) if getattr(args, "heldout", None) else None
            finished.append(FinishedRun(seed, fitted.result, fitted.details, heldout, path))
            scores = [r.result.score_after for r in finished]
            if best_index(scores, fitted.result.higher_is_better) == len(finished) - 1:  # the first of equal ones
                best_after, described = fitted.after, fitted.described
            if show_progress(args):
                _say_run(fitted.described, finished[-1], number, len(seeds))
    if all(dict(r.result.weights) == dict(finished[0].result.weights) for r in finished):
        warn(f"the {len(finished)} runs ended with the same weights: the {args.command} tuning did not depend on the "
             f"seed (nothing it drew at random changed its result)")  # fmt: skip
    assert described is not None
    code = report_runs(args, described, finished)
    if best_after is not None:
        best_after()
    return code


@contextmanager
def _each_warning_once() -> Iterator[None]:
    """Warnings shown once for the runs of the ``with`` block: the inputs' warnings are the same in every run."""
    shown: set[tuple[type, str]] = set()
    original = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *where: Any, **more: Any) -> None:
        if (category, str(message)) not in shown:
            shown.add((category, str(message)))
            original(message, category, *where, **more)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = original


@contextmanager
def _runs_cluster(args: argparse.Namespace) -> Iterator[str | None]:
    """The scheduler the runs share with ``--cluster`` (``local:N`` started once), ``None`` without one."""
    if not getattr(args, "cluster", None):
        yield None
        return
    from hypertune.loop.runs import shared_cluster

    with shared_cluster(args.cluster) as address:
        yield address


def _write_run(args: argparse.Namespace, seed: int, weights: Weights) -> str | None:
    """A finished run's weights in ``OUT.run-SEED`` (``--out-format``); ``None`` without ``--out`` (or ``-``)."""
    if not args.out or args.out == "-":
        return None
    path = f"{args.out}.run-{seed}"
    text = format_weights(weights, args.out_format)
    write_or_print(text, path, "weights", lambda: write_weights(weights, path, args.out_format))
    return path


def _finished_note(finished: list[FinishedRun]) -> str:
    """What an interrupt's line adds about the runs finished before it: their seeds and files."""
    if not finished:
        return ""
    seeds = f"seed{'s' if len(finished) > 1 else ''} {', '.join(str(r.seed) for r in finished)}"
    written = [r.path for r in finished if r.path]
    return f"; finished before it: {seeds} ({', '.join(written) if written else 'not written: no --out'})"


def _say_run(described: TuningSet | Shards, run: FinishedRun, number: int, total: int) -> None:
    """A finished run's line on stderr (a terminal's progress)."""
    scale, result = described.metric.display_scale, run.result
    line = (f"run {number}/{total}, seed {run.seed}: {metric_name(result.metric, scale)} before "
            f"{percent(result.score_before, scale=scale)} after {percent(result.score_after, scale=scale)} "
            f"({run.details}, {result.seconds:.2f} s)")  # fmt: skip
    if run.heldout is not None:
        line += "; held-out " + ", ".join(
            f"{metric_name(name, heldout_scale(name))} {percent(row['after'], scale=heldout_scale(name))}"
            for name, row in run.heldout["metrics"].items()
        )
    sys.stderr.write(f"\r\x1b[K{line}\n")
    sys.stderr.flush()


def spread_line(label: str, values: dict[str, float], shown: Callable[[float], str]) -> str:
    """The spread of a metric over runs (:func:`hypertune.loop.stability.spread`) in one line, each value ``shown``
    on the summary's scale (``tune --runs`` and every tuning command's ``--runs``)."""
    return (f"{label} over {values['runs']} runs: mean {shown(values['mean'])}, sd {shown(values['sd'])}, "
            f"min {shown(values['min'])}, max {shown(values['max'])}")  # fmt: skip


def report_runs(args: argparse.Namespace, described: TuningSet | Shards, runs: list[FinishedRun]) -> int:
    """The ending of ``--runs``: the best dev run's weights (:func:`hypertune.metrics.best_index` in the metric's
    direction, the earliest of equal ones) written to ``--out`` as one run's are, its history drawn (``--plot``),
    then the summary -- the spread (mean, sample sd as MultEval's, minimum, maximum;
    :func:`hypertune.loop.stability.spread`) of the dev metric and of each held-out metric after tuning, the best
    run, where the weights went -- or under ``--json``: ``runs`` (each run's seed, scores, weights, file and
    held-out report), ``dev_score``, ``heldout_spread``, ``best_seed`` and the chosen ``weights``."""
    from hypertune.loop.stability import spread
    from hypertune.metrics import best_index

    first = runs[0].result
    higher = first.higher_is_better
    best = runs[best_index([r.result.score_after for r in runs], higher)]
    result, scale = best.result, described.metric.display_scale
    label = metric_name(first.metric, scale)
    if args.out:
        write_tuned(args, result.weights)
    before, after = percent(result.score_before, scale=scale), percent(result.score_after, scale=scale)
    if getattr(args, "plot", None):
        from hypertune.cli.plots import plot_history

        title = f"{args.command}: {result.metric} {before} → {after} (seed {best.seed}, the best of {len(runs)} runs)"
        plot_history(result, args.plot, title)
    sentences = len(described) if isinstance(described, TuningSet) else described.sentences
    dev = spread([r.result.score_after for r in runs])
    payload: dict[str, Any] = {"runs": [_run_json(r) for r in runs], "dev_score": dev}
    lower = "" if higher else "; lower is better"
    dev_line = spread_line(f"dev {label}", dev, functools.partial(percent, scale=scale))
    summary = [f"{dev_line} ({sentences} sentences, seeds {runs[0].seed}-{runs[-1].seed}{lower})"]
    if best.heldout is not None:
        payload["heldout_spread"] = {}
        for name, row in best.heldout["metrics"].items():
            values = payload["heldout_spread"][name] = spread([r.heldout["metrics"][name]["after"] for r in runs
                                                               if r.heldout is not None])  # fmt: skip
            shown = heldout_scale(name)
            line = spread_line(f"held-out {metric_name(name, shown)}", values, functools.partial(percent, scale=shown))
            summary.append(
                f"{line} ({best.heldout['sentences']} sentences, before {percent(row['before'], scale=shown)}"
                + (")" if row["higher_is_better"] else "; lower is better)")
            )
    kept = "; kept the start weights: nothing found scored better" if result.kept_start else ""
    summary.append(f"best dev run: seed {best.seed}, {label} before {before} after {after} ({best.details}, "
                   f"{result.seconds:.2f} s{kept})")  # fmt: skip
    payload.update(best_seed=best.seed, weights=dict(result.weights), metric=first.metric, higher_is_better=higher,
                   output=args.out, sentences=sentences)  # fmt: skip
    naming = getattr(described, "naming", None)
    if naming is not None:
        payload["sentence_ids"] = naming.origin
        summary += [naming.note] if naming.note else []
    files = [r.path for r in runs if r.path]
    every = f"; every run's to {files[0]} ... {files[-1]}" if files else ""
    chosen = f"weights of the best dev run (seed {best.seed})"
    summary.append(f"{chosen} written to {args.out}{every}" if args.out else
                   f"{chosen}:\n{format_weights(result.weights, args.out_format)}")  # fmt: skip
    emit(args, "\n".join(line.rstrip() for line in summary), payload)
    return 0


def write_tuned(args: argparse.Namespace, weights: Weights) -> None:
    """The tuned weights to ``--out`` in ``--out-format``; printed on stdout if the write fails, as JSON if the format
    cannot hold their names."""
    text = format_weights(weights, args.out_format)
    try:
        write_or_print(text, args.out, "weights", lambda: write_weights(weights, args.out, args.out_format))
    except UsageError as error:  # names the format cannot hold: the weights, losslessly, on stdout
        sys.stdout.write(format_weights(weights, "json"))
        sys.stdout.flush()
        raise InputError(f"{error}; the weights are printed on stdout as JSON instead", args.out) from None


def _run_json(run: FinishedRun) -> dict[str, Any]:
    out = {"seed": run.seed, "score_before": run.result.score_before, "score_after": run.result.score_after,
           "weights": dict(run.result.weights), "weights_path": run.path}  # fmt: skip
    if run.heldout is not None:
        out["heldout"] = run.heldout
    return out


def check_heldout_options(args: argparse.Namespace) -> None:
    """``--heldout-refs`` and ``--heldout-scores`` belong to ``--heldout``."""
    if not getattr(args, "heldout", None):
        for name in ("heldout_refs", "heldout_scores"):
            if getattr(args, name, None):
                raise UsageError(f"--{name.replace('_', '-')} describes the --heldout inputs: give --heldout too")


def heldout_report(args: argparse.Namespace, described: TuningSet | Shards, result: TuningResult) -> dict[str, Any]:
    """``--heldout``: the held-out inputs reranked with the start weights (``--init``) and the tuned ones, every
    metric they support before and after (:func:`~hypertune.tuners.reranking.before_and_after`)."""
    from hypertune.tuners.reranking import before_and_after, heldout_metrics

    held = argparse.Namespace(inputs=args.heldout, scores=getattr(args, "heldout_scores", None),
                              format=getattr(args, "format", None), cache=getattr(args, "cache", None))  # fmt: skip
    graphs, _ = load_graphs(held)
    if not graphs:
        raise UsageError("--heldout: the inputs hold no sentences")
    refs = getattr(args, "heldout_refs", None)
    references = read_references(refs) if refs else None
    options = {"tokenize": getattr(args, "tokenize", "none"), "lowercase": getattr(args, "lowercase", False)}
    metrics = heldout_metrics(graphs, references is not None, **options)
    if not metrics:
        raise UsageError("--heldout: the inputs carry no scores and no --heldout-refs were given: nothing to report")
    with warnings.catch_warnings():  # the start weights were checked when the tuning began
        warnings.simplefilter("ignore")
        start, _ = load_weights(getattr(args, "init", None) or [], described, args)
    return before_and_after(graphs, references, start, result.weights, metrics)


def heldout_lines(heldout: dict[str, Any]) -> list[str]:
    """The held-out report as summary lines: one metric a line, before and after (0-100, given scores as they
    are), marked where lower is better."""
    lines = [f"held-out ({heldout['sentences']} sentences):"]
    for name, row in heldout["metrics"].items():
        scale = heldout_scale(name)
        lower = " (lower is better)" if not row["higher_is_better"] else ""
        shown = f"{percent(row['before'], scale=scale)} -> {percent(row['after'], scale=scale)}"
        lines.append(f"  {metric_name(name, scale)} {shown}{lower}")
    return lines


def metric_name(name: str, scale: float) -> str:
    """A metric's name as the summaries show it: upper case on the 0-100 scale (BLEU, TER), given scores as named."""
    return name.upper() if scale == 100.0 else name


def heldout_scale(name: str) -> float:
    """The display scale of a held-out metric, by its name (as :attr:`~hypertune.metrics.Metric.display_scale`):
    given scores (``scores.NAME``) as they are, the others 0-100."""
    from hypertune.metrics.given_scores import PREFIX

    return 1.0 if name.startswith(PREFIX) else 100.0


def fit_tuner(
    args: argparse.Namespace,
    entry: str,
    *,
    progress: Callable[[Any], None] | None = None,
    details: Callable[[TuningResult], str] | None = None,
    **given: Any,
) -> Fitted:
    """Tuning input -> tuner -> fit, for a tuner of the registry (:mod:`hypertune.tuners.registry`): the inputs
    (sharded with ``--cluster``/``--shards``), the ``--init`` weights, the tuner made from its options class's
    flags (:func:`hypertune.cli.options.tuner_options`; ``given``: fields the command computed) with
    ``progress``, and its ``fit`` run :func:`interruptible`. ``details``: the summary's details (default: the
    history's length)."""
    from hypertune.cli.options import tuner_options
    from hypertune.tuners.registry import TUNERS

    chosen = TUNERS[entry]
    with tuning_input(args, getattr(args, "init", None)) as (described, data, start):
        options = tuner_options(args, chosen.options_class(), **given)
        with interruptible(args, described) as best:
            result = chosen.tuner_class()(options, progress=progress, checkpoint=best).fit(data, start)
        said = details(result) if details else f"{len(result.history)} iterations"
        if isinstance(data, LocalShards):  # --shards in this process
            said += f", {data.count} shards"
        return Fitted(described, result, said)


class BestSoFar:
    """A tuner's ``checkpoint`` (:data:`~hypertune.tuners.base.Checkpoint`): the last weights it reported -- the
    best so far -- and their metric; ``None`` until it reports any."""

    def __init__(self) -> None:
        self.weights: Weights | None = None
        self.score: float | None = None

    def __call__(self, weights: Weights, score: float) -> None:
        self.weights, self.score = weights.copy(), float(score)


@contextmanager
def interruptible(
    args: argparse.Namespace,
    described: TuningSet | Shards | None = None,
    where: str = "",
    best: BestSoFar | None = None,
) -> Iterator[BestSoFar]:
    """A tuner's run, for the ``with`` block; yields the tuner's ``checkpoint``. SIGINT and SIGTERM are held
    until the tuner's next safe point (:func:`hypertune.interrupts.deferred`), where the run stops: the best
    weights so far are saved (:func:`save_interrupted`) and the :class:`~hypertune.interrupts.Interrupted`
    raised names them in the one line the command line prints (exit 130 or 143). ``described``: the tuning set
    or shards, whose metric names the score; ``where``: what the score was measured on, when that is not the
    inputs as given (``" on the graphs pruned to 50 edges/word"``); ``best``: the checkpoint, when the tuner was
    made before the block (a new one otherwise)."""
    best = BestSoFar() if best is None else best
    try:
        with interrupts.deferred():
            yield best
    except (KeyboardInterrupt, SystemError) as error:
        stop = interrupts.as_interrupt(error)
        if stop is None:
            raise
        label = metric_label(described.metric) if described is not None else "score"
        raise stop.explained(save_interrupted(args, best, stop, label, where)) from None


def save_interrupted(
    args: argparse.Namespace, best: BestSoFar, stop: interrupts.Interrupted, label: str, where: str = ""
) -> str:
    """Keep the best weights of an interrupted run: written beside the output, ``OUT.interrupted`` in
    ``--out-format``; without ``--out`` (or if that write fails) printed on stdout in that format (under
    ``--json``: one JSON object, ``interrupted``, the score and the weights). Returns the one-line message.
    Nothing is kept when the tuner found nothing better than the start, or when the caller keeps the run's
    work itself (``args.save_interrupted`` false: the tuning loop)."""
    head = f"interrupted ({stop.name})"
    if not getattr(args, "save_interrupted", True):
        return head
    if best.weights is None:
        return f"{head} before the tuner found weights better than the start; nothing written"
    weights, fmt = best.weights, getattr(args, "out_format", None) or "cdec"
    score = f"{label} {percent(best.score or 0.0)}{where}"
    out = getattr(args, "out", None)
    failed = ""
    if out and out != "-":
        path = f"{out}.interrupted"
        try:
            write_weights(weights, path, fmt)
            return f"{head}; the best weights so far ({score}) written to {path}"
        except (OSError, HypertuneError) as error:
            failed = f" (cannot write {path}: {getattr(error, 'strerror', None) or error})"
    if getattr(args, "json", False):
        key = base_metric_key(label)
        emit(args, "", {"interrupted": stop.name, f"{key}_best": best.score, "metric": label,
                        "weights": dict(weights), "output": None})  # fmt: skip
    else:
        text = format_weights(weights, fmt)
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()
    return f"{head}; the best weights so far ({score}) printed on stdout{failed}"


def metric_key(metric: Metric) -> str:
    """The JSON key stem of a metric's scores (one rule for every command, :mod:`hypertune.tuners.base`)."""
    return base_metric_key(metric_label(metric))


# ---------------------------------------------------------------------- --cluster and --shards
def _progress_line(message: str) -> None:
    sys.stderr.write(f"\r\x1b[K{message[1:]}" if message.startswith("\r") else f"{message}\n")
    sys.stderr.flush()


@contextmanager
def open_shards(
    args: argparse.Namespace, prune_density: float = 0.0, metric: Metric | None = None
) -> Iterator[DaskShards | None]:
    """:func:`cluster_shards` with ``--cluster``, ``None`` without it (nothing imports Dask then)."""
    if not getattr(args, "cluster", None):
        yield None
        return
    with cluster_shards(args, prune_density, metric) as shards:
        yield shards


@contextmanager
def cluster_shards(
    args: argparse.Namespace, prune_density: float = 0.0, metric: Metric | None = None
) -> Iterator[DaskShards]:
    """The command's tuning set sharded on the cluster of ``--cluster`` for the ``with`` block: every worker
    loads its shard from the files and keeps it -- from its own files when the input is one directory of
    sentence files (:mod:`hypertune.distributed.loading`), else by reading every input and keeping its
    sentences (:func:`load_shard`) -- pruned under ``--init`` when ``prune_density`` is set (``metric``: the
    command's own, else the metric options')."""
    from hypertune.distributed import DaskShards, open_cluster, parse_cluster

    spec = parse_cluster(args.cluster)
    if args.shards is not None and args.shards < 1:
        raise UsageError(f"--shards must be at least 1, got {args.shards}")
    from hypertune.distributed.loading import sentence_files

    say = _progress_line if show_progress(args) else None
    sent = _worker_args(args)
    loader = functools.partial(load_shard, sent, prune_density, metric)
    metric = build_metric(args, Vocabulary()) if metric is None else metric
    finish = functools.partial(prune_shard, sent, prune_density) if prune_density else None
    files = None
    if not getattr(args, "params", None):  # a directory of sentence files: each worker reads its own
        files = sentence_files(sent.inputs, getattr(args, "format", None), getattr(sent, "refs", None),
                               getattr(args, "refs_per_sentence", None), finish)  # fmt: skip
    with open_cluster(spec, say) as client, DaskShards(client, loader, metric, args.shards, say, files) as shards:
        yield shards


def prune_shard(args: argparse.Namespace, prune_density: float, tuning_set: TuningSet) -> TuningSet:
    """On a worker: a shard loaded from its own files, pruned under ``--init`` (read against the shard's feature
    names, which are the whole corpus's)."""
    from hypertune.tuners.pruning import prune_tuning_set  # graph pruning: only lattices and forests import it

    init, _ = load_weights(args.init, tuning_set, args)
    return prune_tuning_set(tuning_set, init, prune_density)


def local_shards(args: argparse.Namespace, tuning_set: TuningSet) -> LocalShards | None:
    """``--shards N`` without ``--cluster``: the tuning set cut into N shards in this process, which reproduces a
    cluster run of N shards; ``None`` when not given."""
    count = getattr(args, "shards", None)
    if count is None:
        return None
    if count < 1:
        raise UsageError(f"--shards must be at least 1, got {count}")
    return LocalShards(tuning_set, count)


@contextmanager
def tuning_input(
    args: argparse.Namespace, weights: list[str] | None
) -> Iterator[tuple[TuningSet | DaskShards, TuningSet | Shards, Weights]]:
    """What a command that fits sentence by sentence runs on, for the ``with`` block: ``(described, data,
    start)``. With ``--cluster`` both are the cluster's shards (:func:`open_shards`); otherwise the tuning set
    read here, and ``data`` is it cut into ``--shards`` in this process when asked (:func:`local_shards`).
    ``start``: the weights of the files ``weights`` (none: all 0), their names checked against the inputs."""
    with open_shards(args) as shards:
        if shards is not None:
            yield shards, shards, load_weights(weights, shards, args)[0] if weights else Weights()
            return
        tuning_set = load_tuning_set(args)
        start = load_weights(weights, tuning_set, args)[0] if weights else Weights()
        yield tuning_set, local_shards(args, tuning_set) or tuning_set, start


def load_shard(
    args: argparse.Namespace, prune_density: float, metric: Metric | None, index: int, count: int
) -> tuple[TuningSet, int]:
    """On a worker: shard ``index`` of ``count`` of the command's tuning set, and its first sentence. The
    inputs are read as the command reads them (:func:`load_tuning_set`; ``--cache`` helps: each worker reads
    the parsed corpus from it), so every worker has the client's feature ids, then cut by
    :func:`~hypertune.tuners.shards.shard_ranges` into runs of about equal edges. Only shard 0 reports the
    inputs' warnings."""
    with warnings.catch_warnings():
        if index:
            warnings.simplefilter("ignore")
        whole = load_tuning_set(args, metric)
        ranges = shard_ranges(shard_costs(whole), count)
        if index >= len(ranges):
            raise UsageError(f"--shards {count}: the tuning set has only {len(whole)} sentences")
        start, stop = ranges[index]
        part = whole if len(ranges) == 1 else whole.subset(start, stop)
        if prune_density:
            from hypertune.tuners.pruning import prune_tuning_set

            init, _ = load_weights(args.init, whole, args)
            part = prune_tuning_set(part, init, prune_density)
    return part, start


def _worker_args(args: argparse.Namespace) -> argparse.Namespace:
    """The command's arguments as workers need them: file paths made absolute (a worker's working directory
    may differ), the command's function left out."""
    out = copy.copy(args)
    for name in ("run",):
        if hasattr(out, name):
            delattr(out, name)

    def absolute(path: str | None) -> str | None:
        return os.path.abspath(path) if path and path != "-" else path

    out.inputs = [absolute(p) for p in args.inputs]
    for name in ("refs", "scores"):
        if getattr(args, name, None):
            setattr(out, name, [absolute(p) for p in getattr(args, name)])
    for name in ("params", "cache"):
        if getattr(args, name, None):
            setattr(out, name, absolute(getattr(args, name)))
    if getattr(args, "init", None):
        out.init = [absolute(p) for p in args.init]
    return out
