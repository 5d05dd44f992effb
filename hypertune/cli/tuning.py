"""Options and loading shared by the tuning commands (mert, linesearch, mira, hope-fear)."""

from __future__ import annotations

import argparse
import os

from hypertune.errors import UsageError
from hypertune.formats import FORMATS, read_graphs, read_references, read_weights
from hypertune.formats.extractor import read_featstat, sibling
from hypertune.formats.io import open_text, read_head
from hypertune.formats.nbest import feature_order, read_zmert
from hypertune.formats.weights import detect_weights_format, read_positional
from hypertune.hypergraph import union
from hypertune.metrics import REF_LENGTHS, SMOOTHING, TOKENIZERS, Metric, get_metric, parse_metric
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners.corpus import TuningSet, merge_kbest
from hypertune.tuners.mert import ENVELOPES
from hypertune.weights import Weights

BLEU_METRICS = ("bleu", "ibm-bleu", "bleu+1")


def add_input_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="n-best lists (several: merged per sentence), Z-MERT candidates, a FEATSTAT and "
        "SCORESTAT pair, lattices or hypergraphs (files or directories)",
    )
    parser.add_argument("--format", choices=sorted([*FORMATS, "zmert"]), help="input format (default: detected)")
    parser.add_argument(
        "--refs",
        "-r",
        nargs="+",
        metavar="REF",
        help="reference files, or a prefix of REF.0 REF.1 ... (not needed with SCORESTAT)",
    )
    parser.add_argument(
        "--refs-per-sentence",
        type=int,
        metavar="N",
        help="one interleaved reference file with N references per sentence",
    )
    parser.add_argument("--params", metavar="FILE", help="Z-MERT parameter file (feature names of candidates)")


def add_envelope_options(parser: argparse.ArgumentParser) -> None:
    """How lattices' and forests' envelopes are computed, and on how many threads."""
    parser.add_argument(
        "--envelope",
        choices=ENVELOPES,
        default="probing",
        help="lattices/hypergraphs: find the goal envelope by Viterbi probing (default; fast) or by the "
        "inside pass in the envelope semiring (the same envelopes)",
    )
    parser.add_argument("--jobs", "-j", type=int, default=None, help="threads for per-sentence envelopes")


def add_metric_options(parser: argparse.ArgumentParser) -> None:
    """The metric options of ``hypertune bleu``; for tuning the tokenizer defaults to ``none``, since
    decoder output and tuning references are tokenized already (as Moses, cdec and Z-MERT assume)."""
    parser.add_argument(
        "--metric",
        "-m",
        default="bleu",
        help="bleu (default), ibm-bleu (cdec), bleu+1, chrf, chrf++, ter, or an interpolation "
        "such as 'bleu:0.5,ter:-0.5'",
    )
    parser.add_argument("--tokenize", choices=TOKENIZERS, default="none", help="tokenizer (default: none)")
    parser.add_argument("--lowercase", "-lc", action="store_true", help="lowercase before scoring")
    parser.add_argument("--smooth", choices=SMOOTHING, default=None, help="BLEU smoothing (default: none)")
    parser.add_argument(
        "--ref-length",
        choices=REF_LENGTHS,
        default=None,
        help="BLEU reference length (default: closest; ibm-bleu: ibm)",
    )
    parser.add_argument("--max-order", type=int, default=4, help="BLEU n-gram order (default 4)")


def build_metric(args: argparse.Namespace, vocabulary: Vocabulary) -> Metric:
    spec = args.metric
    bleu_options: dict[str, object] = {
        "tokenize": args.tokenize,
        "lowercase": args.lowercase,
        "max_order": args.max_order,
        "vocabulary": vocabulary,
    }
    if args.smooth:
        bleu_options["smooth"] = args.smooth
    if args.ref_length:
        bleu_options["ref_length"] = args.ref_length
    if spec in BLEU_METRICS:
        return get_metric(spec, **bleu_options)
    if args.smooth or args.ref_length or args.max_order != 4:
        if not any(part.split(":")[0] in BLEU_METRICS for part in spec.split(",")):
            raise UsageError(f"--smooth, --ref-length and --max-order apply to BLEU, not to {spec}")
    return parse_metric(spec)


def load_graphs(args: argparse.Namespace) -> list:
    """The inputs as one list of graphs sharing a feature space and vocabulary; k-best lists from several
    files are merged per sentence id (outer MERT/MIRA iterations)."""
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs = []
    inputs = list(args.inputs)
    done: set[str] = set()
    for path in inputs:
        if path in done:
            continue
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such file or directory")
        head = "" if os.path.isdir(path) else read_head(path, 64).lstrip()
        if args.format == "zmert" or (args.params and args.format is None and not os.path.isdir(path)):
            graphs.extend(read_zmert(path, space, vocabulary, params=args.params))
        elif head.startswith(("FEATURES_TXT_BEGIN", "SCORES_TXT_BEGIN")):
            kind = "SCORES" if head.startswith("FEATURES") else "FEATURES"
            partner = sibling(path, kind)
            partner = (
                partner
                if partner in inputs
                else next(
                    (
                        p
                        for p in inputs
                        if p != path
                        and os.path.isfile(p)
                        and read_head(p, 64)
                        .lstrip()
                        .startswith("SCORES_TXT_BEGIN" if kind == "SCORES" else "FEATURES_TXT_BEGIN")
                    ),
                    partner,
                )
            )
            features, scores = (path, partner) if kind == "SCORES" else (partner, path)
            if features is None:
                raise UsageError(f"{path}: a SCORESTAT file needs its FEATSTAT file")
            graphs.extend(read_featstat(features, space, vocabulary, scores))
            done.update(p for p in (features, scores) if p)
        else:
            graphs.extend(read_graphs(path, args.format, space, vocabulary))
        done.add(path)
    return attach_kbest(merge_kbest(graphs))


def attach_kbest(graphs: list) -> list:
    """Inputs that mix lattices/hypergraphs with k-best lists (e.g. a previous iteration's
    ``--envelope-nbest``): each k-best list joins, by :func:`~hypertune.hypergraph.union`, the graph with its
    sentence id (``metadata["id"]``, else the graph's position)."""
    lists = [g for g in graphs if g.is_kbest]
    forests = [g for g in graphs if not g.is_kbest]
    if not lists or not forests:
        return graphs
    by_id = {str(g.metadata.get("id", i)): i for i, g in enumerate(forests)}
    extra: dict[int, list] = {}
    for kbest in lists:
        sid = str(kbest.metadata.get("id"))
        if sid not in by_id:
            raise UsageError(f"an n-best list has sentence id {sid}, but no lattice or hypergraph has that id")
        extra.setdefault(by_id[sid], []).append(kbest)
    return [union([g, *extra[i]]) if i in extra else g for i, g in enumerate(forests)]


def load_tuning_set(args: argparse.Namespace) -> TuningSet:
    graphs = load_graphs(args)
    precomputed = all("edge_stats" in g.metadata for g in graphs)
    if args.refs:
        references = read_references(args.refs, args.refs_per_sentence)
        if len(references) < len(graphs):
            raise UsageError(f"{len(graphs)} sentences but references for only {len(references)}")
        if len(references) > len(graphs):
            references = references[: len(graphs)]  # Moses's scorer data ships more references than it uses
    elif precomputed:
        references = []
    else:
        raise UsageError("--refs is required (only SCORESTAT input carries its own statistics)")
    return TuningSet(graphs, references, build_metric(args, graphs[0].vocabulary))


def load_weights(
    paths: list[str], tuning_set: TuningSet, args: argparse.Namespace | None = None
) -> tuple[Weights, tuple[dict[str, float], dict[str, float]] | None]:
    """Weights from every format (later files override earlier ones); Moses ``init.opt`` (positional,
    three lines) also gives the restart box. Positional files take the feature order of the first input
    (its n-best header or FEATSTAT header), else the tuning set's."""
    weights = Weights()
    box = None
    for path in paths:
        with open_text(path) as handle:
            text = handle.read()
        if detect_weights_format(text) == "positional":
            start, low, high = read_positional(path, _positional_order(args, tuning_set), text)
            weights.update(start)
            if low is not None and high is not None:
                box = (low, high)
        else:
            weights.update(read_weights(path))
    return weights, box


def _positional_order(args: argparse.Namespace | None, tuning_set: TuningSet) -> list[str]:
    if args is not None:
        first = args.inputs[0]
        if (
            os.path.isfile(first)
            and read_head(first, 4096).split("|||")[0].strip().isdigit()
            or (os.path.isfile(first) and read_head(first, 64).lstrip().startswith("FEATURES_TXT_BEGIN"))
        ):
            return feature_order(first)
    return list(tuning_set.feature_space.names)


def metric_key(metric: Metric) -> str:
    """The JSON key stem of a metric's scores: ``bleu`` for every BLEU variant, else the metric's name."""
    from hypertune.metrics import BleuMetric

    return "bleu" if isinstance(metric, BleuMetric) else getattr(metric, "name", "metric").replace("+", "p")
