"""``scores.NAME``: a metric from scores the inputs give each hypothesis (COMET, BLEURT, MetricX, a QE model, an
LLM judge: computed beforehand, elsewhere, and carried by JSONL ``"scores"`` or ``--scores FILE``).

The corpus value is the mean over sentences of the chosen hypothesis's score ``NAME``, higher is better (give a
lower-is-better score a negative weight in an interpolation: ``scores.metricx:-1``). Its statistics are
additive like every metric's: ``(score, 1)`` per hypothesis, summed ``(Σ score, sentences)`` over a corpus, so
caches, accumulation across iterations and sharding need nothing new; a hypothesis's sentence value (the gain
hope/fear, MIRA, the losses and minimum risk see) is its score. This is the ``"<score> 1"`` statistics line
travatar's ``-eval zeroone -stat_in`` trick feeds a MERT (Fernandes et al. 2022, quality-aware decoding), as a
metric. Scores are used as they are, never rescaled.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hypertune.errors import UsageError
from hypertune.metrics.base import Metric, Text, as_stats_array

#: The prefix that names a given score as a metric: ``scores.comet``.
PREFIX = "scores."


class GivenScore(Metric):
    """The mean given score ``score_name`` of the chosen hypotheses (see the module docstring)."""

    needs_references = False
    display_scale = 1.0

    def __init__(self, score_name: str) -> None:
        if not score_name or any(c in score_name for c in ",:= \t"):
            raise UsageError(f"bad score name {score_name!r} in --metric {PREFIX}{score_name}: a name without "
                             "spaces, commas, colons or '='")  # fmt: skip
        self.score_name = score_name
        self.name = f"{PREFIX}{score_name}"
        self.given_names = (score_name,)

    @property
    def stats_size(self) -> int:
        return 2

    @property
    def stats_names(self) -> tuple[str, ...]:
        return ("sum", "count")

    def stats_many(self, hypotheses: Sequence[Text], references: Sequence[Text]) -> np.ndarray:
        raise UsageError(f"{self.name} is read from the scores the inputs give each hypothesis (JSONL \"scores\", "
                         "--scores FILE), not computed from text")  # fmt: skip

    def stats_from_given(self, given: np.ndarray) -> np.ndarray:
        values = np.asarray(given, dtype=np.float64).reshape(-1, 1)
        return np.column_stack([values[:, 0], np.ones(values.shape[0])])

    def score(self, stats: np.ndarray) -> float | np.ndarray:
        """``Σ score / count``; 0 where nothing was counted."""
        array = np.atleast_2d(as_stats_array(stats, 2))
        counts = array[:, 1]
        values = np.divide(array[:, 0], counts, out=np.zeros(counts.size), where=counts != 0)
        return float(values[0]) if np.ndim(stats) == 1 else values

    def __repr__(self) -> str:
        return f"GivenScore({self.score_name!r})"
