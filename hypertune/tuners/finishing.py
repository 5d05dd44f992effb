"""How every tuner finishes the weights it returns: one rule for MERT, MIRA, minimum risk, PRO and ``train``
(batch and online), for the result and for every ``checkpoint`` alike (docs/cli.md, "The weights a tuning
command writes").

A tuner searches a vector over the inputs' feature space, starting from the start (``--init``) weights.
:func:`finish_weights` turns a vector into the weights written:

1. every feature of the inputs with its tuned value, zeros included, so that the names written never
   depend on the values and a dense format (``moses``, ``kbmira-dense``, ``zmert``) lists every feature;
2. every other feature the start weights name, with its start value: the inputs lack it but the decoder
   still uses it (:func:`hypertune.weights.check_feature_names` warns about such names);
3. with ``normalize="l1"`` (every tuner's default) all of them divided by their L1 norm, as Moses does for
   MERT (:func:`normalize_l1`): one positive factor, so no model-best derivation changes and every tuner's
   weights have the same scale (``tune --epsilon`` means the same for all); ``"none"`` writes them as found.

The start weights are a candidate (:func:`keeps_start`): when nothing a tuner found scores better on the
tuning set than the start weights -- by :func:`hypertune.metrics.better`, so with TER lower is better --,
it returns the start weights, finished by the same rule, with ``score_after == score_before`` and
``kept_start`` set (unless they break the tuner's own bounds; :class:`~hypertune.tuners.base.TuningResult`).
Online and batch learners optimize a surrogate (a loss, expected BLEU), and a step of it can lower BLEU:
Moses's kbmira keeps its best epoch but never the start (Cherry & Foster 2012), PRO's last L-BFGS iterate is
what it is (Hopkins & May 2011).
"""

from __future__ import annotations

import math

import numpy as np

from hypertune.choices import NORMALIZATIONS
from hypertune.errors import UsageError
from hypertune.metrics import better
from hypertune.symbols import FeatureSpace
from hypertune.weights import Weights


def normalize_l1(weights: Weights) -> Weights:
    """``weights`` divided by one factor, their L1 norm (unchanged when all are zero). Every weight is
    scaled, including those of features the tuning set lacks, so the model's relative scale is kept."""
    total = math.fsum(abs(v) for v in weights.values())  # exact, whatever the order
    return Weights({k: v / total for k, v in weights.items()}, weights.scale) if total > 0 else weights.copy()


def check_normalize(normalize: str) -> None:
    """A :class:`~hypertune.errors.UsageError` unless ``normalize`` is a choice of
    :data:`~hypertune.choices.NORMALIZATIONS`."""
    if normalize not in NORMALIZATIONS:
        raise UsageError(f"normalize must be one of {', '.join(NORMALIZATIONS)}, got {normalize!r}")


def finish_weights(start: Weights, space: FeatureSpace, vector: np.ndarray, normalize: str = "l1") -> Weights:
    """The weights a tuner writes for ``vector`` (over ``space``'s first ``len(vector)`` columns), started from
    ``start``: every feature of ``space`` with its value in ``vector``, then the start weights' other features
    with their start values, all divided by their L1 norm when ``normalize == "l1"`` (the module's rule)."""
    check_normalize(normalize)
    weights = Weights(start.items())  # the start's names in its order (its scale is in ``vector`` already)
    weights.update(Weights.from_vector(space, vector))  # then the inputs' new features, in column order
    return normalize_l1(weights) if normalize == "l1" else weights


def keeps_start(score_before: float, score_after: float, higher_is_better: bool = True, feasible: bool = True) -> bool:
    """Whether a tuner returns its start weights: when what it found (``score_after``, on the tuning set) is not
    :func:`~hypertune.metrics.better` than the start weights' ``score_before`` (the module's rule). Start
    weights outside the tuner's own bounds (MERT's and minimum risk's ``bounds``, MERT's ``positive``) are
    no candidate (``feasible=False``): the tuner then returns what it found, which respects the bounds."""
    return feasible and not better(score_after, score_before, higher_is_better)
