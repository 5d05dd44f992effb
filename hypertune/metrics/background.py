"""Background (pseudo-corpus) BLEU for online and hope/fear learning.

A sentence's BLEU on its own is mostly zero or noisy; instead it is scored *in the context* of a
decayed pseudo-corpus ``O`` of statistics of earlier sentences (Watanabe et al. 2007; Chiang et
al. 2008, section 5.1; Moses kbmira's ``sentenceLevelBackgroundBleu``)::

    B(e) = scale * BLEU(O + stats(e))

After each sentence the statistics of its chosen hypothesis ``e*`` (1-best, hope or oracle) enter
``O``, and the decayed source length ``O_f`` follows the same rule (``update``):

``chiang``
    ``O <- decay * (O + stats(e*))``, ``O_f <- decay * (O_f + |f|)`` (Chiang et al. 2008, section 5.1,
    decay 0.9).
``kbmira``
    ``O <- decay * O + stats(e*)``, ``O_f <- decay * O_f + |f|`` (Moses ``mert/kbmira.cpp``:
    ``bg[k] *= decay; bg[k] += stats[k]``; decay 0.999).

Scalings (``scale``):

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

One state, one compiled scoring kernel, :func:`background_bleu` (kbmira's operations), called from
Python by :meth:`BackgroundBleu.score` and from the numba hope/fear searches of
:mod:`hypertune.tuners.hope_fear`.
"""

from __future__ import annotations

import numba
import numpy as np

import hypertune.numba_cache  # noqa: F401  # first: the kernels' cache stamps cover the whole package
from hypertune.errors import UsageError
from hypertune.metrics.base import as_stats_array

SCALES = ("chiang", "moses", "none")
UPDATES = ("chiang", "kbmira")
SCALE_CHIANG, SCALE_MOSES, SCALE_NONE = 0, 1, 2
"""Scale codes of :func:`background_bleu`."""
SCALE_CODES = {"chiang": SCALE_CHIANG, "moses": SCALE_MOSES, "none": SCALE_NONE}

_jit = numba.njit(cache=True, nogil=True)


@numba.njit(cache=True, nogil=True, inline="always")  # inlined in the searches' loops: a call cost ~6 %
def background_bleu(
    stats: np.ndarray, background: np.ndarray, order: int, scale: int, length: float
) -> float:  # pragma: no cover - compiled
    """``scale * BLEU(O + s)`` of one statistics row ``s`` (``O = background``) in kbmira's operations
    (``sentenceLevelBackgroundBleu``): ``exp(sum_n (log m_n - log c_n) / N + min(0, 1 - r/c))``, 0 when a
    pseudo-count ``m_n + O`` or ``c_n + O`` is not positive. ``scale``: :data:`SCALE_MOSES` multiplies by
    ``reflen(O + s)``, :data:`SCALE_CHIANG` by ``length`` (``O_f + |f|``), :data:`SCALE_NONE` by nothing."""
    log_bleu = 0.0
    for n in range(order):
        m = stats[2 * n] + background[2 * n]
        c = stats[2 * n + 1] + background[2 * n + 1]
        if m <= 0.0 or c <= 0.0:
            return 0.0
        log_bleu += np.log(m) - np.log(c)
    hyp = stats[1] + background[1]
    ref = stats[2 * order] + background[2 * order]
    log_bleu /= order
    if hyp < ref:
        log_bleu += 1.0 - ref / hyp
    value = np.exp(log_bleu)
    if scale == SCALE_MOSES:
        value *= ref
    elif scale == SCALE_CHIANG:
        value *= length
    return value


@_jit
def background_bleu_rows(
    rows: np.ndarray, background: np.ndarray, order: int, scale: int, length: float
) -> np.ndarray:  # pragma: no cover - compiled
    """:func:`background_bleu` of every row of a 2-D array."""
    out = np.empty(rows.shape[0])
    for i in range(rows.shape[0]):
        out[i] = background_bleu(rows[i], background, order, scale, length)
    return out


@_jit
def background_bleu_distinct(s, distinct, background, order, logs, nonpositive, out):  # pragma: no cover - compiled
    """:func:`background_bleu` (Moses scale; the same operations in the same order, so bit for bit) of the
    distinct statistics rows of sentence ``s``, taking every ``log(m_n + O_n)`` and ``log(c_n + O_n)`` once per
    distinct value of a column. ``distinct`` is a named tuple of arrays (batch MIRA's ``DistinctStats``): the
    rows ``group_stats[group_offsets[s]:group_offsets[s + 1]]``, their columns' distinct values
    ``values[value_offsets[s]:value_offsets[s + 1]]`` with their columns ``value_columns``, and ``value_ids[u,
    j]``, the value of row ``u``'s column ``j``. ``logs``/``nonpositive`` are scratch (one entry per value);
    row ``u``'s gain goes to ``out[u]``."""
    group_values, value_ids, values, value_columns = (
        distinct.group_stats,
        distinct.value_ids,
        distinct.values,
        distinct.value_columns,
    )
    u_lo, u_hi = distinct.group_offsets[s], distinct.group_offsets[s + 1]
    v_lo, v_hi = distinct.value_offsets[s], distinct.value_offsets[s + 1]
    for v in range(v_lo, v_hi):
        x = values[v] + background[value_columns[v]]
        nonpositive[v] = x <= 0.0
        logs[v] = 0.0 if nonpositive[v] else np.log(x)
    for u in range(u_lo, u_hi):
        log_bleu = 0.0
        positive = True
        for n in range(order):
            a = value_ids[u, 2 * n]
            b = value_ids[u, 2 * n + 1]
            if nonpositive[a] or nonpositive[b]:
                positive = False
                break
            log_bleu += logs[a] - logs[b]
        if not positive:
            out[u] = 0.0
            continue
        hyp = group_values[u, 1] + background[1]
        ref = group_values[u, 2 * order] + background[2 * order]
        log_bleu /= order
        if hyp < ref:
            log_bleu += 1.0 - ref / hyp
        out[u] = np.exp(log_bleu) * ref


class BackgroundBleu:
    """Pseudo-corpus BLEU with a decayed background of statistics (see the module docstring).

    ``initial`` is the starting value of every background statistic (Moses's kbmira starts the
    background at 1 so that the first scores are defined; use 0 for Chiang's empty start).
    ``update`` is the rule that adds a chosen hypothesis: ``chiang`` or ``kbmira``.
    """

    def __init__(
        self,
        max_order: int = 4,
        decay: float = 0.9,
        scale: str = "chiang",
        initial: float = 1.0,
        initial_source_length: float = 0.0,
        update: str = "chiang",
    ) -> None:
        if scale not in SCALES:
            raise UsageError(f"unknown background BLEU scale {scale!r}; choose one of {', '.join(SCALES)}")
        if update not in UPDATES:
            raise UsageError(f"unknown background update {update!r}; choose one of {', '.join(UPDATES)}")
        if not 0.0 <= decay <= 1.0:
            raise UsageError(f"decay must be in [0, 1], got {decay}")
        self.max_order = max_order
        self.decay = float(decay)
        self.scale = scale
        self.scale_code = SCALE_CODES[scale]
        self.update_rule = update
        self._background = np.full(2 * max_order + 1, float(initial))
        self.source_length = float(initial_source_length)

    @property
    def stats_size(self) -> int:
        return 2 * self.max_order + 1

    @property
    def background(self) -> np.ndarray:
        """The pseudo-corpus statistics ``O`` (updated in place; compiled callers may update it too)."""
        return self._background

    @background.setter
    def background(self, value: np.ndarray) -> None:
        array = as_stats_array(value, self.stats_size)
        if array.ndim != 1:
            raise UsageError("the background is one statistics vector")
        self._background = np.array(array, dtype=np.float64)

    def copy(self) -> BackgroundBleu:
        other = BackgroundBleu.__new__(BackgroundBleu)
        other.__dict__.update(self.__dict__)
        other._background = self._background.copy()
        return other

    def _length(self, source_length: float | None) -> float:
        """The Chiang scale ``O_f + |f|`` (0 for the other scales, which ignore it)."""
        if self.scale != "chiang":
            return 0.0
        if source_length is None:
            raise UsageError("Chiang's background BLEU scale needs the source sentence length")
        return self.source_length + float(source_length)

    def score(self, stats: np.ndarray, source_length: float | None = None) -> float | np.ndarray:
        """``scale * BLEU(background + stats)`` of one statistics vector or of each row, through the
        compiled kernel :func:`background_bleu` (the one hope/fear search and batch MIRA use)."""
        array = as_stats_array(stats, self.stats_size)
        length = self._length(source_length)
        rows = np.atleast_2d(array)
        out = background_bleu_rows(rows, self._background, self.max_order, self.scale_code, length)
        return float(out[0]) if array.ndim == 1 else out

    def update(self, stats: np.ndarray, source_length: float = 0.0) -> None:
        """Add the chosen hypothesis's statistics by the ``update`` rule (in place)."""
        array = as_stats_array(stats, self.stats_size)
        if array.ndim != 1:
            raise UsageError("update takes one statistics vector")
        if self.update_rule == "chiang":
            self._background += array
            self._background *= self.decay
            self.source_length = self.decay * (self.source_length + float(source_length))
        else:
            self._background *= self.decay
            self._background += array
            self.source_length = self.decay * self.source_length + float(source_length)
