"""``hypertune decode``: the best or k best derivations of dumped graphs under given weights."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hypertune.choices import GRAPH_FORMATS
from hypertune.cli import COMMANDS
from hypertune.cli.common import add_output_options, emit, progress
from hypertune.cli.options import add_strict_option, finite_float, non_negative_int, positive_int, seed
from hypertune.errors import InputError

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

    from hypertune.algorithms import entropy, feature_expectations, log_partition, sample, viterbi
    from hypertune.algorithms.kbest import kbest_list
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
            best: Any = sample(hg, sharp, args.sample, random_state=rng)
        elif args.kbest == 1 and not args.unique:
            best = [viterbi(hg, weights)]
        else:  # flat arrays; text and feature dictionaries only where an output needs them
            best = kbest_list(hg, weights, args.kbest, unique=args.unique, edges=False)
        row: dict[str, Any] = {"graph": i, "sentence": sid, "derivations": best}
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
        if args.out:
            continue
        ranked = not (args.kbest == 1 and not args.unique and not args.sample)
        for rank, (score, text, features) in enumerate(_described(best, args.features)):
            prefix = f"{sid}\t{rank + 1}" if ranked else f"{sid}"
            lines.append(f"{prefix}\t{score:.6g}\t{text}")
            if args.features:
                lines.append("\t\t" + " ".join(f"{k}={v:g}" for k, v in features.items()))
    if args.json or (args.out and args.out_format == "json"):
        for row in results:
            row["derivations"] = [
                {"score": score, "text": text, "features": features}
                for score, text, features in _described(row["derivations"])
            ]
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
    from hypertune.algorithms.kbest import KBestList
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

        text = "".join(" ".join(strip_sentence_markers(_first_words(found[i]))) + "\n" for _, i, _ in rows)
        write_atomically(args.out, text)
        return f"{len(rows)} translation(s), one per line,"
    if all(isinstance(found[i], KBestList) for _, i, _ in rows):
        write_atomically(args.out, _moses_lines([(sid, found[i]) for sid, i, _ in rows]))
        return f"{sum(len(row['derivations']) for row in results)} derivation(s) of {len(rows)} sentence(s)"
    lists = []
    for sid, i, _ in rows:
        hypotheses = [(d.words, d.features) for d in found[i]]
        totals = [d.score for d in found[i]]
        hg = graphs[i]
        lists.append(from_kbest(hypotheses, hg.feature_space, hg.vocabulary, {"totals": totals}, sentence_id=sid))
    write_moses(lists, args.out)
    return f"{sum(len(row['derivations']) for row in results)} derivation(s) of {len(lists)} sentence(s)"


def _described(best: Any, features: bool = True) -> list[tuple[float, str, dict[str, float]]]:
    """(score, text, features) of each derivation of a graph: a :class:`~hypertune.algorithms.kbest.KBestList`
    (feature dictionaries built only when ``features``) or a list of scored derivations."""
    from hypertune.algorithms.kbest import KBestList

    if isinstance(best, KBestList):
        texts = best.texts()
        scores = best.scores.tolist()
        return [(scores[i], texts[i], best.features(i) if features else {}) for i in range(len(best))]
    return [(d.score, d.text, d.features) for d in best]


def _first_words(best: Any) -> list[str]:
    from hypertune.algorithms.kbest import KBestList

    return best.word_list(0) if isinstance(best, KBestList) else best[0].words


def _table(texts: list[str]) -> tuple[Any, Any]:
    """Strings as one UTF-8 byte array and offsets (string ``i`` is ``bytes[offsets[i]:offsets[i + 1]]``)."""
    import numpy as np

    encoded = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def _checked(ids: Any, texts: list[str], check: Any, *what: str) -> None:
    """``check`` each of ``texts`` (the strings of the distinct ``ids``, ascending); when one fails, fail on
    the first in the order of ``ids``, as a writer going through them would."""
    import numpy as np

    try:
        for t in texts:
            check(t, *what)
    except InputError:
        distinct, first = np.unique(ids, return_index=True)
        for j in np.argsort(first, kind="stable").tolist():
            check(texts[j], *what)
        raise


def _number_table(values: Any) -> tuple[Any, Any]:
    """:func:`~hypertune.formats._common.format_number`'s text of each of ``values`` (float64) as a
    :func:`_table` (:func:`~hypertune.formats._common.format_number_lines`: all of them at once)."""
    import numpy as np

    from hypertune.formats._common import format_number_lines

    text = format_number_lines(values.tolist()).encode("ascii")
    buffer = np.frombuffer(text, dtype=np.uint8)
    ends = np.flatnonzero(buffer == 10)
    offsets = np.zeros(ends.size + 1, dtype=np.int64)
    offsets[1:] = ends - np.arange(ends.size)  # each text's end, the separators before it taken out
    return buffer[buffer != 10], offsets


def _moses_lines(lists: list[tuple[int, Any]]) -> bytes:
    """The lines :func:`~hypertune.formats.nbest.write_moses` writes for these k-best lists (sentence id and
    :class:`~hypertune.algorithms.kbest.KBestList`; the words and names checked as it checks them), assembled
    by a compiled kernel from the flat arrays and the text of each word, name and distinct number."""
    import numpy as np

    from hypertune.algorithms._kbest_kernels import moses_lines
    from hypertune.formats._common import check_word
    from hypertune.formats.nbest import _check_name

    def check(word: str, what: str) -> None:
        check_word(word, what)
        if word == "|||":
            raise InputError("cannot write the word '|||' in an n-best list")

    def index(ids: Any, size: int) -> tuple[Any, Any]:
        """The distinct ``ids`` (ascending) and each id's entry among them."""
        present = np.zeros(size, dtype=np.bool_)
        present[ids] = True
        used = np.flatnonzero(present)
        entry = np.zeros(size, dtype=np.int64)
        entry[used] = np.arange(used.size)
        return used, entry

    out = []
    for sid, best in lists:
        vocabulary, space = best.hg.vocabulary, best.hg.feature_space
        used_words, word_index = index(best.words, len(vocabulary))
        words = vocabulary.words(used_words.tolist())
        _checked(best.words, words, check, "an n-best list")
        used_columns, column_index = index(best.columns, len(space))
        names = space.symbols(used_columns.tolist())
        _checked(best.columns, names, _check_name)
        values = np.concatenate([best.values, best.scores])  # distinct doubles by their bits (0.0 is not -0.0)
        distinct, inverse = np.unique(values.view(np.int64), return_inverse=True)
        numbers = inverse.ravel().astype(np.int64, copy=False)
        out.append(
            moses_lines(
                np.frombuffer(f"{sid} ||| ".encode(), dtype=np.uint8), best.words, best.word_offsets, word_index,
                best.columns, best.feature_offsets, column_index, numbers, _table(words),
                _table([f"{name}= " for name in names]), _number_table(distinct.view(np.float64)),
            ).tobytes()
        )  # fmt: skip
    return b"".join(out)
