"""Expected tuning scores computed without hypertune: a plain reader of Moses n-best lists and weight
files, the model-best hypothesis of each list under a weight dict, and corpus BLEU by sacrebleu.

Tests of the tuners compare what a tuner reports (BLEU before and after) with what its start and written
weights give here, so the expectation does not come from the code under test.
"""

from __future__ import annotations

from pathlib import Path

import sacrebleu

Hypothesis = tuple[str, dict[str, float]]


def dense_features(field: str) -> dict[str, float]:
    """``LM0= -9.1 TM0= -2.3 -3.0`` -> ``{LM0: -9.1, TM0_0: -2.3, TM0_1: -3.0}`` (Moses: a label with one
    value names it, with several each is ``label_i``)."""
    out: dict[str, float] = {}
    label, values = "", []
    for token in [*field.split(), "end="]:
        if token.endswith("="):
            if values:
                names = [label] if len(values) == 1 else [f"{label}_{i}" for i in range(len(values))]
                out.update(zip(names, values, strict=True))
            label, values = token[:-1], []
        else:
            values.append(float(token))
    return out


def read_nbest(path: str | Path) -> list[list[Hypothesis]]:
    """A Moses n-best file (``id ||| words ||| features ||| score``), as one list per sentence in id order."""
    lists: dict[int, list[Hypothesis]] = {}
    for line in Path(path).read_text().splitlines():
        sid, words, features, *_ = (part.strip() for part in line.split("|||"))
        lists.setdefault(int(sid), []).append((words, dense_features(features)))
    return [lists[s] for s in sorted(lists)]


def read_weights(path: str | Path) -> dict[str, float]:
    """A weight file in Moses' dense form (``TM0= 0.2 0.2``) or one ``name value`` per line."""
    text = Path(path).read_text()
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if all(line.split()[0].endswith("=") for line in lines):
        return dense_features(" ".join(lines))
    return {line.split()[0]: float(line.split()[1]) for line in lines}


def model_score(hypothesis: Hypothesis, weights: dict[str, float]) -> float:
    """The dot product of the hypothesis' features with ``weights``."""
    return sum(weights.get(name, 0.0) * value for name, value in hypothesis[1].items())


def model_best(lists: list[list[Hypothesis]], weights: dict[str, float]) -> list[str]:
    """Each list's highest-scoring words under ``weights`` (the first of ties)."""
    return [max(hypotheses, key=lambda h: model_score(h, weights))[0] for hypotheses in lists]


def corpus_bleu(hypotheses: list[str], references: list[list[str]], max_order: int = 4) -> float:
    """sacrebleu's corpus BLEU (0-1) of whitespace-tokenized text, unsmoothed: hypertune's defaults.
    ``references``: one stream per reference set, each with a line per sentence."""
    bleu = sacrebleu.metrics.BLEU(tokenize="none", smooth_method="none", max_ngram_order=max_order)
    return bleu.corpus_score(hypotheses, references).score / 100


def reference_streams(prefix: str | Path) -> list[list[str]]:
    """The reference files ``prefix0``, ``prefix1``, ... as streams."""
    streams = []
    while Path(f"{prefix}{len(streams)}").is_file():
        streams.append(Path(f"{prefix}{len(streams)}").read_text().splitlines())
    return streams
