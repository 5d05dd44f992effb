"""The tuner interface: what every tuner takes and what it returns.

A tuner is configured by keyword-only constructor arguments and run by ``fit(tuning_set, init)``, which
returns a :class:`TuningResult` and leaves no run state on the tuner (scikit-learn's estimator contract,
without the mutation): the same tuner may fit several tuning sets, also at once.

Every tuner's result has the same names, which every command prints and serializes the same way:
``weights``, ``score_before``, ``score_after`` (the tuned metric -- BLEU unless another was chosen, see
``metric`` and ``higher_is_better`` -- as a fraction, 0-1), ``history`` (one :class:`Iteration` per
iteration or epoch, with what the tuner adds; its metric is ``score``), ``seconds``, ``seed`` and
``kept_start``. Every tuner finishes its weights by one rule and returns the start weights when it found
nothing better (:mod:`hypertune.tuners.finishing`). The best
epoch, iteration or restart is chosen by :func:`hypertune.metrics.better`. ``bleu_before``, ``bleu_after``
and an iteration's ``bleu`` are deprecated read-only aliases of the ``score`` names, kept for one release.
A tuner's own extras (MERT's line searches, MIRA's best epoch)
are fields of its result's subclass and appear in :meth:`TuningResult.to_json` after the common ones.

Long runs report as they go through two optional constructor arguments, plain callables that keep the
tuner free of any caller's state: ``progress`` (a line of text, or the iteration's entry) and
``checkpoint`` (:data:`Checkpoint`): ``checkpoint(weights, score)`` is called whenever the weights the tuner
would return if it stopped now change -- what it found, once that scores better than the start weights (and
the start weights again should an optimizer's later iterate fall back), in the form the result writes them
(:func:`~hypertune.tuners.finishing.finish_weights`) -- with their metric on the tuner's own search spaces
(0-1); never while nothing beat the start. Tuners call :func:`hypertune.interrupts.check` at safe points
between compiled kernel calls (after a line search, a sentence, an epoch, an objective evaluation), so that
a signal the caller defers (:func:`hypertune.interrupts.deferred`; the command line does) stops the run
there, the last checkpoint being the best weights found. Neither travels to a cluster's workers (tuners
send a copy of their options without them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol

from hypertune.metrics import BleuMetric, Metric
from hypertune.weights import Weights

if TYPE_CHECKING:
    from hypertune.tuners.corpus import TuningSet


#: ``checkpoint(weights, score)``: the weights a tuner would return if it stopped now, and their metric (0-1).
Checkpoint = Callable[[Weights, float], None]


@dataclass(frozen=True)
class Iteration:
    """One entry of a tuner's history: the metric after the iteration (0-1) and how long it took.
    Tuners subclass it to add their own figures (MIRA: updates and loss of an epoch)."""

    iteration: int
    score: float
    seconds: float

    @property
    def bleu(self) -> float:
        """Deprecated alias of :attr:`score` (the tuned metric, whatever it is), kept for one release."""
        return self.score

    def to_json(self) -> dict[str, Any]:
        """The entry's fields, with the deprecated key ``bleu`` (= ``score``) after ``score`` for one release."""
        out: dict[str, Any] = {}
        for name, value in asdict(self).items():
            out[name] = value
            if name == "score":
                out["bleu"] = value
        return out


class _Scored(Protocol):
    @property
    def score_before(self) -> float: ...
    @property
    def score_after(self) -> float: ...


class BleuAliases:
    """The deprecated names ``bleu_before`` and ``bleu_after`` of a result's ``score_before`` and ``score_after``
    (the tuned metric, whatever it is), kept for one release: every tuner's result and the tuning loop's (as
    fields or properties)."""

    @property
    def bleu_before(self: _Scored) -> float:
        """Deprecated alias of :attr:`score_before`, kept for one release."""
        return self.score_before

    @property
    def bleu_after(self: _Scored) -> float:
        """Deprecated alias of :attr:`score_after`, kept for one release."""
        return self.score_after


@dataclass
class TuningResult(BleuAliases):
    """What every tuner returns (see the module docstring)."""

    weights: Weights
    score_before: float
    score_after: float
    history: list[Iteration] = field(default_factory=list)
    seconds: float = 0.0
    seed: int | None = None
    metric: str = "BLEU"
    #: Whether a larger value of ``metric`` is better (``False`` for TER).
    higher_is_better: bool = field(default=True, kw_only=True)
    #: Where the tuner worked on pruned graphs (``--prune-density``): the written weights' metric there; the
    #: ``score_*`` figures are always on the inputs as given. ``None`` when nothing was pruned.
    pruned_score_after: float | None = field(default=None, kw_only=True)
    #: Whether nothing the tuner found scored better on the tuning set than the start weights, so that it
    #: returned them (finished as every result's weights; :mod:`hypertune.tuners.finishing`).
    kept_start: bool = field(default=False, kw_only=True)

    @property
    def metric_key(self) -> str:
        """The JSON key stem of the metric (:func:`metric_key`)."""
        return metric_key(self.metric)

    def to_json(self) -> dict[str, Any]:
        """The result as one JSON object: the common names first, then the tuner's own fields. The keys named
        after the metric (``bleu_before``, ``ter_after``, ...) are deprecated, kept for one release beside
        ``score_before`` and ``score_after``."""
        key = self.metric_key
        out: dict[str, Any] = {
            f"{key}_before": self.score_before,
            f"{key}_after": self.score_after,
            "metric": self.metric,
            "weights": dict(self.weights),
            "history": [entry.to_json() for entry in self.history],
            "seconds": self.seconds,
            "seed": self.seed,
            "score_before": self.score_before,
            "score_after": self.score_after,
            "higher_is_better": self.higher_is_better,
            "kept_start": self.kept_start,
        }
        if self.pruned_score_after is not None:
            out["pruned_score_after"] = self.pruned_score_after
        common = {f.name for f in fields(TuningResult)}
        for extra in fields(self):
            if extra.name not in common and extra.metadata.get("json", True):
                out[extra.name] = getattr(self, extra.name)
        return out


def metric_label(metric: Metric) -> str:
    """How results name a metric: ``BLEU`` for every BLEU variant, else the metric's own name."""
    return "BLEU" if isinstance(metric, BleuMetric) else str(getattr(metric, "name", "metric"))


def metric_key(label: str) -> str:
    """The JSON key stem of a metric label: ``bleu`` for every BLEU variant, else the name (``chrf++`` ->
    ``chrfpp``), as in ``bleu_before`` or ``ter_before``."""
    return label.lower().replace("+", "p")


class Tuner(Protocol):
    """Options in the constructor, one ``fit`` that returns a :class:`TuningResult` and keeps no state."""

    def fit(self, tuning_set: TuningSet, init: Weights) -> TuningResult: ...
