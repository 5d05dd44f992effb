"""Linear interpolation of metrics (survey eq. 78): ``score = sum_i w_i * score_i(stats_i)``.

The statistics are the concatenation of the component metrics' statistics, so they stay additive
and the interpolation is applied to *corpus-level* scores of each component. Weights are used as
given: give an error metric such as TER a negative weight (``bleu:0.5,ter:-0.5`` is cdec's
``COMB`` "BLEU minus TER" over two).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hypertune.arrays import offsets_from_counts
from hypertune.errors import UsageError
from hypertune.metrics.base import Metric, Text, as_stats_array


class InterpolatedMetric(Metric):
    """A weighted sum of metrics over concatenated statistics."""

    name = "interpolated"

    def __init__(self, metrics: Sequence[Metric], weights: Sequence[float]) -> None:
        if not metrics or len(metrics) != len(weights):
            raise UsageError(f"need one weight per metric, got {len(metrics)} metrics and {len(weights)} weights")
        self.metrics = list(metrics)
        self.weights = np.asarray(weights, dtype=np.float64)
        sizes = [m.stats_size for m in self.metrics]
        self.bounds = offsets_from_counts(sizes)

    @property
    def stats_size(self) -> int:
        return int(self.bounds[-1])

    @property
    def given_names(self) -> tuple[str, ...]:  # type: ignore[override]
        """Every component's given scores, each name once."""
        return tuple(dict.fromkeys(n for m in self.metrics for n in m.given_names))

    @property
    def needs_references(self) -> bool:  # type: ignore[override]
        return any(m.needs_references for m in self.metrics)

    @property
    def display_scale(self) -> float:  # type: ignore[override]
        """0-100 when every component is shown so; as it is when one is a given score."""
        return 100.0 if all(m.display_scale == 100.0 for m in self.metrics) else 1.0

    def sentence_values(self, stats: np.ndarray) -> np.ndarray:
        """``Σ w_i v_i``: the components' sentence values, weighted like their corpus scores."""
        array = np.atleast_2d(as_stats_array(stats, self.stats_size))
        spans = zip(self.metrics, self.weights, self.bounds[:-1], self.bounds[1:], strict=True)
        return np.asarray(sum(w * m.sentence_values(array[:, lo:hi]) for m, w, lo, hi in spans), dtype=np.float64)

    @property
    def stats_names(self) -> tuple[str, ...]:
        return tuple(f"{m.name}.{n}" for m in self.metrics for n in m.stats_names)

    def stats_many(self, hypotheses: Sequence[Text], references: Sequence[Text]) -> np.ndarray:
        return np.concatenate([m.stats_many(hypotheses, references) for m in self.metrics], axis=-1)

    def corpus_stats(self, hypotheses: Sequence[Text], references: Sequence[Sequence[Text]]) -> np.ndarray:
        return np.concatenate([m.corpus_stats(hypotheses, references) for m in self.metrics], axis=-1)

    def components(self, stats: np.ndarray) -> list[float | np.ndarray]:
        """Each component metric's score."""
        array = as_stats_array(stats, self.stats_size)
        spans = zip(self.metrics, self.bounds[:-1], self.bounds[1:], strict=True)
        return [m.score(array[..., lo:hi]) for m, lo, hi in spans]

    def score(self, stats: np.ndarray) -> float | np.ndarray:
        total = sum(w * s for w, s in zip(self.weights, self.components(stats), strict=True))
        return float(total) if np.ndim(total) == 0 else np.asarray(total)

    def __repr__(self) -> str:
        inner = ", ".join(f"{w:g}*{m!r}" for m, w in zip(self.metrics, self.weights, strict=True))
        return f"InterpolatedMetric({inner})"
