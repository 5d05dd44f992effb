"""Background (pseudo-corpus) BLEU for online and hope/fear learning.

A sentence's BLEU on its own is mostly zero or noisy; instead it is scored *in the context* of a
decayed pseudo-corpus ``O`` of statistics of earlier sentences (Watanabe et al. 2007; Chiang et
al. 2008, section 5.1)::

    B(e) = scale * BLEU(O + stats(e))
    O    <- decay * (O + stats(e*))        after each sentence, e* its chosen (1-best or oracle)
    O_f  <- decay * (O_f + |f|)            the decayed source length

Two scalings are provided:

``chiang``
    ``scale = O_f + |f|`` -- the decayed source length plus this sentence's source length
    (Chiang et al. 2008: "multiplied by the (pseudo-)document's source length").
``moses``
    ``scale = reflen`` of ``O + stats(e)`` -- the pseudo-corpus reference length, as Moses's batch
    MIRA (``sentenceLevelBackgroundBleu`` in mert/BleuScorer.cpp, "as per Chiang et al 08").
``none``
    no scaling: plain BLEU of the pseudo-corpus plus the sentence.

The scaling puts sentences of different lengths on a comparable footing for the loss in MIRA's
margin constraints; it does not change which hypothesis of *one* sentence is best.
"""

from __future__ import annotations

import numpy as np

from hypertune.errors import UsageError
from hypertune.metrics.base import as_stats_array
from hypertune.metrics.bleu import bleu_score

SCALES = ("chiang", "moses", "none")


class BackgroundBleu:
    """Pseudo-corpus BLEU with a decayed background of statistics.

    ``initial`` is the starting value of every background statistic (Moses's kbmira starts the
    background at 1 so that the first scores are defined; use 0 for Chiang's empty start).
    """

    def __init__(
        self,
        max_order: int = 4,
        decay: float = 0.9,
        scale: str = "chiang",
        initial: float = 1.0,
        initial_source_length: float = 0.0,
    ) -> None:
        if scale not in SCALES:
            raise UsageError(f"unknown background BLEU scale {scale!r}; choose one of {', '.join(SCALES)}")
        if not 0.0 <= decay <= 1.0:
            raise UsageError(f"decay must be in [0, 1], got {decay}")
        self.max_order = max_order
        self.decay = float(decay)
        self.scale = scale
        self.background = np.full(2 * max_order + 1, float(initial))
        self.source_length = float(initial_source_length)

    @property
    def stats_size(self) -> int:
        return 2 * self.max_order + 1

    def score(self, stats: np.ndarray, source_length: float | None = None) -> float | np.ndarray:
        """``scale * BLEU(background + stats)`` of one statistics vector or of each row."""
        array = as_stats_array(stats, self.stats_size)
        total = array + self.background
        bleu = bleu_score(total, self.max_order)
        if self.scale == "chiang":
            if source_length is None:
                raise UsageError("Chiang's background BLEU scale needs the source sentence length")
            return bleu * (self.source_length + float(source_length))
        if self.scale == "moses":
            return bleu * total[..., 2 * self.max_order]
        return bleu

    def update(self, stats: np.ndarray, source_length: float = 0.0) -> None:
        """Add the chosen hypothesis's statistics and decay: ``O <- decay * (O + stats)``."""
        array = as_stats_array(stats, self.stats_size)
        if array.ndim != 1:
            raise UsageError("update takes one statistics vector")
        self.background = self.decay * (self.background + array)
        self.source_length = self.decay * (self.source_length + float(source_length))
