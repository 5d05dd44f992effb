"""Evaluation metrics as additive sufficient statistics (see docs/metrics.md).

Every metric maps a hypothesis and its references to a float64 vector of statistics
(:meth:`Metric.stats`, :meth:`Metric.stats_many`, :meth:`Metric.corpus_stats`); statistics add over
a corpus and :meth:`Metric.score` turns one vector, or each row of a 2-D array, into the value.

>>> bleu = get_metric("bleu", tokenize="none")
>>> stats = bleu.corpus_stats(["the cat sat on the mat"], [["the cat sat on the mat"]])
>>> round(bleu.score(stats.sum(axis=0)), 6)
1.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hypertune.choices import BLEU_METRICS
from hypertune.errors import UsageError
from hypertune.metrics.background import BackgroundBleu, background_bleu
from hypertune.metrics.base import Metric, Text, best_index, better, transpose_references, worst
from hypertune.metrics.bleu import (
    REF_LENGTHS,
    SMOOTHING,
    BleuMetric,
    BleuReferences,
    bleu_score,
    bleu_stats_batch,
    build_references,
    format_bleu,
    reference_bleu_stats,
)
from hypertune.metrics.gains import Gain, sentence_gains
from hypertune.metrics.given_scores import PREFIX as GIVEN_PREFIX
from hypertune.metrics.given_scores import GivenScore
from hypertune.metrics.interpolated import InterpolatedMetric
from hypertune.metrics.linear_bleu import LinearBleu, estimate_precisions, linear_bleu_weights
from hypertune.metrics.sacrebleu_metrics import ChrfMetric, TerMetric
from hypertune.metrics.tokenize import DEFAULT_TOKENIZER, TOKENIZERS, Tokenizer

if TYPE_CHECKING:
    from hypertune.metrics.edit_rates import CderMetric, EditRateMetric, PerMetric, WerMetric

_EDIT_RATES = ("CderMetric", "EditRateMetric", "PerMetric", "WerMetric")


def __getattr__(name: str) -> Any:
    """The edit-rate metrics, imported with their compiled kernels when first asked for (a BLEU command never is)."""
    if name in _EDIT_RATES:
        from hypertune.metrics import edit_rates

        return getattr(edit_rates, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EDIT_RATES])


__all__ = [
    "DEFAULT_TOKENIZER",
    "METRICS",
    "REF_LENGTHS",
    "SMOOTHING",
    "TOKENIZERS",
    "BackgroundBleu",
    "BleuMetric",
    "BleuReferences",
    "CderMetric",
    "ChrfMetric",
    "EditRateMetric",
    "Gain",
    "GivenScore",
    "InterpolatedMetric",
    "LinearBleu",
    "Metric",
    "PerMetric",
    "TerMetric",
    "Text",
    "Tokenizer",
    "WerMetric",
    "background_bleu",
    "best_index",
    "better",
    "bleu_score",
    "bleu_stats_batch",
    "build_references",
    "estimate_precisions",
    "format_bleu",
    "get_metric",
    "linear_bleu_weights",
    "parse_metric",
    "reference_bleu_stats",
    "sentence_gains",
    "transpose_references",
    "worst",
]


def _linear_bleu(p: float | None = None, r: float | None = None, scale: float = 1.0, **bleu_options: Any) -> LinearBleu:
    """Tromble et al.'s linear BLEU needs its n-gram precision ``p`` and ratio ``r``; a name alone cannot give
    them, so asking for it by name without them says where it is offered with them estimated."""
    if p is None or r is None:
        raise UsageError(
            "metric 'linear-bleu' needs Tromble's p and r, which a metric name cannot carry: tune BLEU itself "
            "(--metric bleu), or use 'minrisk --objective linear-bleu' or 'oracle --method linear', which "
            "estimate them (or take --linear-p/--linear-r)"
        )
    return LinearBleu(p, r, scale, BleuMetric(**bleu_options))


METRICS: dict[str, Callable[..., Metric]] = {
    "bleu": BleuMetric,
    "ibm-bleu": lambda **o: BleuMetric(**{"ref_length": "ibm", **o}),
    "bleu+1": lambda **o: BleuMetric(**{"smooth": "plus1", **o}),
    "linear-bleu": _linear_bleu,
    "chrf": ChrfMetric,
    "chrf++": lambda **o: ChrfMetric(**{"word_order": 2, **o}),
    "ter": TerMetric,
    "wer": lambda **o: __getattr__("WerMetric")(**o),
    "per": lambda **o: __getattr__("PerMetric")(**o),
    "cder": lambda **o: __getattr__("CderMetric")(**o),
}
"""Metric names for :func:`get_metric` and their constructors."""


def get_metric(name: str, **options: Any) -> Metric:
    """A metric by name (see :data:`METRICS`), with constructor options, e.g.
    ``get_metric("bleu", smooth="plus1", tokenize="none")``; ``scores.NAME`` is the mean of the given score
    ``NAME`` (:class:`GivenScore`; the options are the words' and do not apply)."""
    if name.startswith(GIVEN_PREFIX):
        return GivenScore(name[len(GIVEN_PREFIX) :])
    try:
        factory = METRICS[name.lower()]
    except KeyError:
        raise UsageError(f"unknown metric {name!r}; choose one of {', '.join(METRICS)}") from None
    try:
        return factory(**options)
    except TypeError as error:
        raise UsageError(f"bad options for metric {name!r}: {error}") from None


def parse_metric(spec: str, bleu_options: dict[str, Any] | None = None, **options: Any) -> Metric:
    """``"bleu"`` or an interpolation ``"bleu:0.5,ter:-0.5"`` (survey eq. 78).

    ``options`` go to every component; ``bleu_options`` to the BLEU ones (``bleu``, ``ibm-bleu``, ``bleu+1``) too.
    """
    parts = [p.strip() for p in spec.split(",") if p.strip()]

    def get(name: str) -> Metric:
        extra = bleu_options if bleu_options and name.lower() in BLEU_METRICS else {}
        return get_metric(name, **options, **extra)

    if len(parts) == 1 and ":" not in parts[0]:
        return get(parts[0])
    metrics, weights = [], []
    for part in parts:
        name, sep, weight = part.partition(":")
        try:
            weights.append(float(weight) if sep else 1.0)
        except ValueError:
            raise UsageError(f"bad weight {weight!r} in metric specification {spec!r}") from None
        metrics.append(get(name))
    return InterpolatedMetric(metrics, weights)
