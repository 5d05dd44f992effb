"""Command-line options shared by the tuning commands (inputs, metric, weight constraints, envelopes, cluster).

Only argparse and :mod:`hypertune.choices` are imported here, so that ``hypertune COMMAND --help`` starts
without numpy, scipy or numba; loading what the options name is :mod:`hypertune.cli.tuning`'s job.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from hypertune.choices import CACHE_ENVIRONMENT, ENVELOPES, GRAPH_FORMATS, METRICS, REF_LENGTHS, SMOOTHING, TOKENIZERS
from hypertune.errors import UsageError

# ---------------------------------------------------------------------- option value types
# argparse types, one per kind of value, so that a bad value is argparse's one-line usage error (exit 2) before
# any work, with the same words on every command; a command's own checks are for options that depend on each other.

#: The largest seed: numpy's, Python's and the decoders' generators all take 32-bit seeds.
MAX_SEED = 2**32 - 1
#: The largest count an option takes (counts end up in 64-bit integer arrays).
MAX_COUNT = 2**63 - 1


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def seed(text: str) -> int:
    """A random seed: an integer from 0 to 2**32 - 1."""
    value = _integer(text)
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"a seed is an integer from 0 to {MAX_SEED}, got {text!r}")
    return value


T = TypeVar("T", int, float)


def _within(value: T, text: str, minimum: float, maximum: float) -> T:
    """``value`` (parsed from ``text``) if it lies from ``minimum`` to ``maximum``, else argparse's error."""
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum:g}, got {text!r}")
    if value > maximum:
        raise argparse.ArgumentTypeError(f"must be at most {maximum:g}, got {text!r}")
    return value


def integer(minimum: int = 0, maximum: int = MAX_COUNT) -> Callable[[str], int]:
    """An argparse type: an integer from ``minimum`` to ``maximum``."""

    def parse(text: str) -> int:
        return _within(_integer(text), text, minimum, maximum)

    parse.__name__ = "integer"
    return parse


#: The most threads an option asks for.
MAX_THREADS = 4096
#: The largest BLEU n-gram order.
MAX_ORDER = 100

positive_int = integer(1)
non_negative_int = integer(0)
max_order = integer(1, MAX_ORDER)


def number(minimum: float = -math.inf, maximum: float = math.inf, above: float | None = None) -> Callable[[str], float]:
    """An argparse type: a finite number from ``minimum`` to ``maximum`` (or, with ``above``, greater than it)."""

    def parse(text: str) -> float:
        value = _float(text)
        if above is not None and not value > above:
            raise argparse.ArgumentTypeError(f"must be greater than {above:g}, got {text!r}")
        return _within(value, text, minimum, maximum)

    parse.__name__ = "number"
    return parse


finite_float = number()
positive_float = number(above=0.0)
non_negative_float = number(minimum=0.0)


def add_input_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="n-best lists (several: merged per sentence), Z-MERT candidates, a FEATSTAT and "
        "SCORESTAT pair, lattices or hypergraphs (files or directories)",
    )
    add_graph_format_option(parser)
    parser.add_argument(
        "--refs",
        "-r",
        nargs="+",
        metavar="REF",
        help="reference files, or a prefix of REF.0 REF.1 ... (not needed with SCORESTAT, nor for --metric "
        "scores.NAME)",
    )
    parser.add_argument(
        "--scores",
        nargs="+",
        metavar="FILE",
        help="given scores of the hypotheses (COMET, QE, ...), one file per n-best/Z-MERT/FEATSTAT input in its "
        "order: a line per hypothesis of name=value pairs; read by --metric scores.NAME",
    )
    parser.add_argument(
        "--refs-per-sentence",
        type=positive_int,
        metavar="N",
        help="one interleaved reference file with N references per sentence",
    )
    parser.add_argument("--params", metavar="FILE", help="Z-MERT parameter file (feature names of candidates)")
    add_cache_option(parser)
    add_strict_option(parser)


def add_heldout_options(parser: argparse.ArgumentParser) -> None:
    """``--heldout``: every tuning command reports every metric held-out data supports, before and after."""
    group = parser.add_argument_group("held-out report")
    group.add_argument(
        "--heldout",
        nargs="+",
        metavar="INPUT",
        help="after tuning, rerank these inputs with the start and the tuned weights and report every metric they "
        'support: each given score (JSONL "scores", --heldout-scores), and BLEU, chrF and TER with --heldout-refs',
    )
    group.add_argument("--heldout-refs", nargs="+", metavar="REF", help="the held-out set's references (or a prefix)")
    group.add_argument("--heldout-scores", nargs="+", metavar="FILE", help="given scores of --heldout, as --scores")


def add_cache_option(parser: argparse.ArgumentParser) -> None:
    """``--cache DIR``: the native input cache (docs/cli.md)."""
    parser.add_argument(
        "--cache",
        metavar="DIR",
        help=f"keep parsed inputs in DIR and read them from there while the files are unchanged (default: "
        f"${CACHE_ENVIRONMENT} if set, else no cache)",
    )


def add_graph_format_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=GRAPH_FORMATS,
        help="input format (default: detected from each file's beginning)",
    )


def add_one_graph_options(parser: argparse.ArgumentParser) -> None:
    """A file of graphs and which one (``inside``, ``draw``), and ``--strict`` for its weights' names."""
    parser.add_argument("path", metavar="GRAPH", help="a file of one or more graphs (see --graph)")
    add_graph_format_option(parser)
    add_strict_option(parser)
    parser.add_argument(
        "--graph",
        dest="index",
        type=non_negative_int,
        default=0,
        metavar="I",
        help="which graph of the file (default 0)",
    )


def add_prune_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--prune-density`` (kbmira's ``--hg-prune``): how much of each hypergraph the hope/fear search sees."""
    parser.add_argument(
        "--prune-density",
        "--hg-prune",
        type=non_negative_float,
        default=50.0,
        metavar="N",
        help="keep N edges per reference word in hypergraphs; 0 = no pruning (default 50)",
    )


def add_direction_option(parser: argparse.ArgumentParser, required: bool = False) -> None:
    """``--direction``, the one meaning of a search direction d (``linesearch``; ``inside --semiring envelope``):
    a feature name (its unit vector), ``name=value,...`` pairs, comma-separated numbers in the inputs' feature
    order, or a weights file; repeatable, later values adding to earlier ones
    (:func:`hypertune.cli.tuning.read_direction`)."""
    parser.add_argument(
        "--direction",
        "-d",
        action="append",
        required=required,
        default=None if required else [],
        metavar="D",
        help="a feature name (its unit vector), name=value,... pairs, comma-separated numbers in the order of the "
        "input's features, or a weights file; repeatable (summed)",
    )


def add_strict_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strict",
        action="store_true",
        help="make weights that name features the inputs do not have an error, not a warning",
    )


def add_envelope_options(parser: argparse.ArgumentParser) -> None:
    """How lattices' and forests' envelopes are computed, and on how many threads."""
    parser.add_argument(
        "--envelope",
        choices=ENVELOPES,
        default="probing",
        help="lattices/hypergraphs: find the goal envelope by Viterbi probing (default; fast) or by the "
        "inside pass in the envelope semiring (the same envelopes)",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=integer(0, MAX_THREADS),
        default=None,
        help="threads for per-sentence envelopes (0: all cores)",
    )


def add_weight_constraint_options(parser: argparse.ArgumentParser) -> None:
    """``--fix`` and ``--bounds``, as MERT and minimum-risk training take them."""
    parser.add_argument(
        "--fix",
        action="append",
        default=[],
        metavar="NAMES",
        help="features kept at their start values (comma-separated, repeatable)",
    )
    parser.add_argument(
        "--bounds",
        action="append",
        default=[],
        metavar="NAME=LOW:HIGH",
        help="bounds of a feature's weight, e.g. WordPenalty=-1:1 (repeatable)",
    )


def names_option(values: list[str]) -> list[str]:
    """Feature names of a repeatable comma-separated option (``--fix a,b --fix c``)."""
    return [name for value in values for name in value.split(",") if name]


def parse_bounds(values: list[str]) -> dict[str, tuple[float, float]]:
    """``NAME=LOW:HIGH`` values (either side may be empty: unbounded)."""
    bounds = {}
    for value in values:
        name, _, span = value.partition("=")
        low, _, high = span.partition(":")
        try:
            bounds[name] = (float(low) if low else -math.inf, float(high) if high else math.inf)
        except ValueError:
            raise UsageError(f"--bounds {value!r}: expected NAME=LOW:HIGH") from None
        if not name:
            raise UsageError(f"--bounds {value!r}: expected NAME=LOW:HIGH")
    return bounds


def metric_help(default: str) -> str:
    """The help of every ``--metric``."""
    return (f"one of {', '.join(METRICS)} (default {default}; ibm-bleu is cdec's); scores.NAME, the mean of a score "
            "the inputs give each hypothesis (JSONL \"scores\", --scores); or an interpolation such as "
            "'bleu:0.5,ter:-0.5' or 'scores.comet:0.7,bleu:0.3'")  # fmt: skip


def add_metric_options(parser: argparse.ArgumentParser, default: str = "bleu") -> None:
    """The metric options of ``hypertune bleu``; for tuning the tokenizer defaults to ``none``, since
    decoder output and tuning references are tokenized already (as Moses, cdec and Z-MERT assume)."""
    parser.add_argument(
        "--metric",
        "-m",
        default=default,
        help=metric_help(default),
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
    parser.add_argument("--max-order", type=max_order, default=4, help="BLEU n-gram order (default 4)")


def add_cluster_options(parser: argparse.ArgumentParser, shards_change_results: bool = True) -> None:
    """``--cluster`` (run on Dask; docs/distributed.md) and ``--shards``. ``shards_change_results``: whether the
    number of shards changes the result (gradient sums, MIRA's mixing), so that ``--shards N`` in one process
    reproduces a cluster run of N shards; for MERT it does not."""
    parser.add_argument(
        "--cluster",
        metavar="SPEC",
        help="run sharded on Dask: local[:N] (N one-thread worker processes on this machine) or tcp://HOST:PORT "
        "(a running scheduler); inputs and references must be files every worker can read (the dist extra)",
    )
    extra = (
        "; the result depends on it: --shards N without --cluster reproduces a cluster run bit for bit"
        if shards_change_results
        else "; the result does not depend on it"
    )
    parser.add_argument(
        "--shards",
        type=positive_int,
        metavar="N",
        help=f"cut the tuning set into N shards (default: one per worker){extra}",
    )


def add_plot_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--plot", metavar="FILE", help=f"draw {what} to FILE (.png/.svg/.pdf; needs matplotlib)")


def add_runs_option(parser: argparse.ArgumentParser, refused: str | None = None) -> None:
    """``--runs R``: R tunings with seeds S..S+R-1 in this process (:func:`hypertune.cli.tuning.tuning_runs`; Clark et
    al. 2011). ``refused``: why R > 1 is a usage error for this command (its tuner draws nothing at random)."""
    help = (
        "tune R times with the seeds S..S+R-1 of --seed S: the spread of the metric over the runs, the best dev "
        "run's weights to --out and every run's to OUT.run-SEED (default 1)"
    )
    parser.add_argument("--runs", type=positive_int, default=1, metavar="R",
                        help=help if refused is None else f"1 only: {refused}")  # fmt: skip
    parser.set_defaults(runs_refused=refused)


# ---------------------------------------------------------------------- a tuner's options, generated
#: The argparse type of each kind of option value (:data:`hypertune.tuners.options.KINDS`).
KIND_TYPES = {
    "int": integer(-MAX_COUNT),
    "count": non_negative_int,
    "positive-count": positive_int,
    "seed": seed,
    "number": finite_float,
    "non-negative": non_negative_float,
    "positive": positive_float,
    "fraction": number(0.0, 1.0),
}


def add_tuner_options(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    options: type,
    skip: tuple[str, ...] = (),
    merged: tuple[type, ...] = (),
) -> None:
    """The command-line flags of a tuner's options class (:mod:`hypertune.tuners.options`): one per field
    offered on the command line and not set by a shared option, with the field's flag, help, choices and
    kind; the destination is the field's name (or its declared ``dest``). ``skip``: fields the command offers
    its own way. ``merged``: the options classes of other tuners the same flags run (``train``: the online
    trainer's beside the batch trainer's): a field they have too is offered once, with this class's flag and
    default, the choices of all and each different help line."""
    import dataclasses

    from hypertune.tuners.options import flag_of

    alike: dict[str, list] = {}
    for other in merged:
        for g in dataclasses.fields(other):
            alike.setdefault(g.name, []).append(g.metadata)
    for f in dataclasses.fields(options):
        meta = f.metadata
        if not meta.get("command_line", True) or meta.get("shared") or f.name in skip:
            continue
        flags = [flag_of(f), *meta.get("aliases", ())]
        others = alike.get(f.name, [])
        text = "; ".join(dict.fromkeys([meta["help"], *(m["help"] for m in others)]))
        spec: dict = {"dest": meta.get("dest") or f.name, "help": _help(text, f.default, meta)}
        if meta.get("metavar"):
            spec["metavar"] = meta["metavar"]
        if meta.get("parse"):
            spec.update(action="append", default=[])
        elif meta.get("negated"):  # a True-by-default boolean (or a None-by-default one) the flag sets False
            flags = [meta["negated"]]
            spec.update(action="store_false", default=f.default)
            spec.pop("metavar", None)
        elif f.type in ("bool", bool) or isinstance(f.default, bool) and meta.get("kind") is None:
            spec.update(action="store_true", default=f.default)
            spec.pop("metavar", None)
        else:
            spec["default"] = f.default
            if meta.get("choices") is not None:
                merged_choices = [c for m in others for c in m.get("choices") or ()]
                spec["choices"] = tuple(dict.fromkeys([*meta["choices"], *merged_choices]))
            if meta.get("kind") is not None:
                spec["type"] = KIND_TYPES[meta["kind"]]
        parser.add_argument(*flags, **spec)


def _help(text: str, default: object, meta: Mapping[str, Any]) -> str:
    """The help line, with the default appended when the line does not already say it."""
    if (
        "default" in text
        or default is None
        or default is False
        or default == ()
        or meta.get("negated")
        or meta.get("parse")
    ):
        return text
    return f"{text} (default {default:g})" if isinstance(default, float) else f"{text} (default {default})"


def option_flags(options: type) -> dict[str, str]:
    """Each option field's flag on the command line (for errors worded in flags)."""
    import dataclasses

    from hypertune.tuners.options import flag_of

    out = {}
    for f in dataclasses.fields(options):
        meta = f.metadata
        shared = meta.get("shared")
        out[f.name] = "--" + shared.replace("_", "-") if shared else (meta.get("negated") or flag_of(f))
    return out


def tuner_options(args: argparse.Namespace, options: type, **given: object):
    """The tuner's options object made from the parsed command line: every field whose flag (or shared option)
    the command offers, parsed values of ``names`` and ``bounds`` fields decoded, and ``given`` (what the
    command computed: a restart box). A refusal of the options class is a usage error worded in flags."""
    import dataclasses

    from hypertune.tuners.options import OptionError

    values: dict = {}
    for f in dataclasses.fields(options):
        dest = f.metadata.get("shared") or f.metadata.get("dest") or f.name
        if f.name in given or not hasattr(args, dest):
            continue
        value = getattr(args, dest)
        parse = f.metadata.get("parse")
        if parse == "names":
            names = names_option(value or [])
            value = tuple(names) if names or f.default is not None else None
        elif parse == "bounds":
            value = parse_bounds(value or []) or None
        values[f.name] = value
    values.update(given)
    try:
        return options(**values)
    except OptionError as error:
        raise UsageError(error.worded(option_flags(options))) from None
