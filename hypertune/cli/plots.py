"""Pictures of what the tuners do (``--plot FILE``), with matplotlib (the ``plot`` extra).

* :func:`pyplot` and :func:`save_figure`: matplotlib set up once for every picture hypertune draws. SVG
  text stays text, ``svg.hashsalt`` is fixed (:data:`SVG_HASHSALT`) and no date goes into SVG or PDF
  metadata, so the same picture gives the same bytes and committed pictures stay stable; files are written
  atomically (a temporary file in the same folder, then renamed) in the format of their extension (``.png``,
  ``.svg``, ``.pdf``).
* :func:`plot_history`: every tuning command's learning curve, from :attr:`TuningResult.history`, its x-axis
  named after what the entries count (:func:`history_axes`: MERT's start points, L-BFGS iterations,
  epochs), so a tuner added later gets it for free through :func:`~hypertune.cli.tuning.report_tuning`.
* :func:`plot_line_search`: one line search as the survey draws it (Neubig & Watanabe 2016, Fig. 5-6): one
  sentence's candidate lines ``a + γ·b`` (eq. 40), their upper envelope (eq. 41) and its breakpoints, above
  the corpus metric of every interval of γ, in the range :func:`default_range` picks around the chosen step.
* :func:`plot_oracles`: model-best against oracle sentence scores.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from hypertune.errors import UsageError
from hypertune.formats.io import default_file_mode

#: The fixed salt of matplotlib's SVG ids (``rcParams["svg.hashsalt"]``): the same picture, the same bytes.
SVG_HASHSALT = "hypertune"

#: Per extension, the ``savefig`` metadata that keeps dates (and so changing bytes) out of the file.
_STABLE_METADATA: dict[str, dict[str, Any]] = {".svg": {"Date": None}, ".pdf": {"CreationDate": None}}


def require_matplotlib() -> Any:
    """matplotlib, or a usage error that says how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'hypertune[plot]'") from None
    return matplotlib


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, set up for deterministic pictures (SVG text as text, a fixed
    :data:`SVG_HASHSALT`); every picture hypertune draws starts here and ends with :func:`save_figure`."""
    matplotlib = require_matplotlib()
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text: searchable, and smaller
    matplotlib.rcParams["svg.hashsalt"] = SVG_HASHSALT
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure: Any, path: str, dpi: int = 110) -> None:
    """Write ``figure`` atomically in the format of ``path``'s extension (PNG when it has none), without dates
    in the metadata, then close it: the same figure always gives the same file."""
    folder = os.path.dirname(os.path.abspath(path))
    suffix = os.path.splitext(path)[1].lower() or ".png"
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".plot-", suffix=suffix)
    os.close(handle)
    plt = pyplot()
    try:
        metadata = _STABLE_METADATA.get(suffix)
        figure.savefig(temporary, dpi=dpi, bbox_inches="tight", **({"metadata": metadata} if metadata else {}))
        os.chmod(temporary, default_file_mode())
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
        plt.close(figure)


# ---------------------------------------------------------------------- tuning histories


@dataclass(frozen=True)
class HistoryAxes:
    """How a history is drawn: what its x-axis counts, whether consecutive entries belong to one run (joined
    by lines) or are separate runs (points only), and the entry field drawn beside the metric (``None``: only
    the metric), with its axis label; ``field_first``: that field is the main (left) axis, the metric the
    second one (``train``, whose picture is its loss)."""

    x_label: str
    joined: bool = True
    field: str | None = None
    field_label: str = ""
    field_first: bool = False
    metric_label: str = "{metric} of the model-best translations"
    drawstyle: str = "default"


#: What each minimum-risk objective is, for the label of its axis (``MinRiskIteration.value``, in its own sign).
RISK_OBJECTIVE_MEANINGS = {
    "xbleu": "expected corpus BLEU, maximized",
    "risk": "mean expected 1 − BLEU+1, minimized",
    "linear-bleu": "mean expected linear-BLEU gain, maximized",
}


def history_axes(result: Any) -> HistoryAxes:
    """The axes of ``result``'s history, by what its entries are: MERT's start points (the given start, then
    each random restart: separate runs, not joined), its ``random-search``/``grid`` weight vectors scored, an
    L-BFGS iteration of minimum risk (with the tuned objective) or of a batch loss (the loss first), an epoch
    of MIRA or of an online trainer (with its mean loss), a decoding of the relevant-set tuner."""
    from hypertune.tuners.mert import MertIteration
    from hypertune.tuners.minrisk import MinRiskIteration
    from hypertune.tuners.mira import EpochSummary
    from hypertune.tuners.online import OnlineEpoch
    from hypertune.tuners.relevant_set import RelevantSetIteration
    from hypertune.tuners.train import TrainIteration

    first = result.history[0] if result.history else None
    loss = getattr(result, "loss", "") or "the"
    if isinstance(first, MertIteration):
        if getattr(result, "restart_scores", None):
            return HistoryAxes(
                "start point (1: the given start weights; 2 on: random restarts)",
                joined=False,
                metric_label="{metric} where the start point's line searches ended",
            )
        return HistoryAxes("weight vectors scored", metric_label="best {metric} so far", drawstyle="steps-post")
    if isinstance(first, MinRiskIteration):
        objective = getattr(result, "objective", "")
        meaning = RISK_OBJECTIVE_MEANINGS.get(objective, "the tuned objective")
        return HistoryAxes("L-BFGS iteration (over every annealing stage)", field="value",
                           field_label=f"objective {objective}: {meaning}")  # fmt: skip
    if isinstance(first, TrainIteration):
        return HistoryAxes("L-BFGS iteration", field="loss", field_label=f"{loss} loss (L2 included)", field_first=True)
    if isinstance(first, OnlineEpoch):
        return HistoryAxes(
            "epoch", field="average_loss", field_label=f"mean {loss} loss per sentence", field_first=True
        )
    if isinstance(first, EpochSummary):
        return HistoryAxes("epoch", metric_label="{metric} of the averaged weights' model-best translations")
    if isinstance(first, RelevantSetIteration):
        return HistoryAxes("decoding ℓ (1, 2: the seed weights)")
    return HistoryAxes("iteration")


def plot_history(result: Any, path: str, title: str) -> None:
    """The metric (0-100) of every history entry against what the entries count (:func:`history_axes`), the
    metric before tuning and the kept one as horizontal lines, and the tuner's own figure (loss, objective)
    on a second, labelled axis where it has one; minimum risk's annealing stages are marked with their T."""
    plt = pyplot()
    from matplotlib.ticker import MaxNLocator

    axes = history_axes(result)
    entries = list(result.history)
    steps = np.array([e.iteration for e in entries], dtype=np.float64)
    figure, axis = plt.subplots(figsize=(6.4, 3.6))
    other: Any = axis.twinx() if axes.field else None
    metric_axis, field_axis = (other, axis) if axes.field_first else (axis, other)
    style: dict[str, Any] = {"marker": "o", "markersize": 3 if axes.joined else 5}
    if not axes.joined:  # separate runs: points only
        style["linestyle"] = "none"
    style["drawstyle"] = axes.drawstyle
    metric_axis.plot(steps, [100 * e.score for e in entries], color="tab:blue", gid="metric",
                     label=axes.metric_label.format(metric=result.metric), **style)  # fmt: skip
    metric_axis.axhline(100 * result.score_before, color="grey", linestyle=":", linewidth=1, label="before tuning")
    metric_axis.axhline(100 * result.score_after, color="tab:blue", linestyle="--", linewidth=1, label="kept")
    metric_axis.set_ylabel(result.metric, color="tab:blue")
    if field_axis is not None and axes.field:
        field_axis.plot(steps, [getattr(e, axes.field) for e in entries], color="tab:orange", linewidth=1.2,
                        gid=axes.field, label=axes.field_label, **style)  # fmt: skip
        field_axis.set_ylabel(axes.field_label, color="tab:orange")
    _mark_temperatures(axis, entries)
    axis.set_xlabel(axes.x_label)
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    handles = [h for a in (axis, other) if a is not None for h in a.get_legend_handles_labels()[0]]
    axis.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, fontsize=7, frameon=False)
    axis.set_title(title, fontsize=10)
    save_figure(figure, path)


def _mark_temperatures(axis: Any, entries: list[Any]) -> None:
    """Minimum risk with entropy (``L − T·H``) or annealing: a dotted line where each T starts, labelled."""
    temperatures = [getattr(e, "temperature", 0.0) for e in entries]
    if not any(temperatures):
        return
    starts = [k for k, t in enumerate(temperatures) if k == 0 or t != temperatures[k - 1]]
    for number, k in enumerate(starts):
        x = entries[k].iteration
        label = "entropy weight T of L − T·H: a stage starts" if number == 0 else None
        axis.axvline(x, color="tab:purple", linestyle=":", linewidth=1, label=label)
        axis.annotate(f"T={temperatures[k]:g}", (x, 0.02), xycoords=("data", "axes fraction"), fontsize=7,
                      color="tab:purple", rotation=90, va="bottom", ha="right",
                      bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none"})  # fmt: skip


# ---------------------------------------------------------------------- one line search


@dataclass(frozen=True)
class SentenceLines:
    """One sentence's lines along ``w + γ·d`` (survey eq. 40: intercept ``a = w·h``, slope ``b = d·h``):
    the candidate lines drawn (``intercepts``, ``slopes``: every hypothesis of a k-best list, every derivation
    of a small lattice or forest, else the derivations on the envelope, as ``candidates`` says) and its upper
    envelope (eq. 41): each line's left breakpoint (``-inf`` first), intercept, slope and translation."""

    sentence: int
    intercepts: np.ndarray
    slopes: np.ndarray
    candidates: str
    left: np.ndarray
    envelope_intercepts: np.ndarray
    envelope_slopes: np.ndarray
    translations: list[str]


def default_range(
    breakpoints: np.ndarray, gamma: float, interval: tuple[float, float], around: int = 3, reach: float = 4.0
) -> tuple[float, float]:
    """The γ range a line-search picture shows unless ``--range`` says otherwise: the chosen ``interval`` (an
    unbounded side cut where the line search puts it, as wide again as the step is from the finite end), up
    to ``around`` more distinct ``breakpoints`` on each side within ``reach`` interval widths of it, and γ = 0
    (the start) where it is no farther from them than ``reach`` times their span; 10% wider on each side.
    Far-away breakpoints (a forest's lie at ±10⁶) stay out of sight."""
    a, b = interval
    if math.isfinite(a) and math.isfinite(b):
        width = b - a
    elif math.isfinite(a) or math.isfinite(b):
        end = a if math.isfinite(a) else b
        width = 2 * abs(gamma - end) or 1.0
        a, b = (a, a + width) if math.isfinite(a) else (b - width, b)
    else:
        width, a, b = 1.0, gamma - 0.5, gamma + 0.5
    width = width or max(1.0, abs(gamma))
    outer_low, outer_high = a - reach * width, b + reach * width
    points = np.unique(breakpoints[np.isfinite(breakpoints)])
    left = points[(points < a) & (points >= outer_low)][-around:]
    right = points[(points > b) & (points <= outer_high)][:around]
    near = np.concatenate(([a, b, gamma], left, right))
    low, high = float(near.min()), float(near.max())
    if max(low, -high, 0.0) <= reach * (high - low):  # the start is near enough to be seen with them
        low, high = min(low, 0.0), max(high, 0.0)
    return low - 0.1 * (high - low), high + 0.1 * (high - low)


def plot_line_search(
    lines: SentenceLines,
    surface: tuple[np.ndarray, np.ndarray],
    result: Any,
    path: str,
    metric: str,
    scale: float = 100.0,
    window: tuple[float, float] | None = None,
) -> None:
    """Above: ``lines``' candidate lines (thin, numbered when few), its upper envelope (thick, one colour per
    translation, named in the legend) and breakpoints (dots). Below, on its own axis: the corpus ``metric``
    (times ``scale``) of every interval between the corpus breakpoints, the chosen interval shaded and the
    chosen step and the start marked. ``surface``: the distinct finite breakpoints and the metric left of,
    between and right of them. ``window``: the γ range (default :func:`default_range`)."""
    plt = pyplot()
    from matplotlib.collections import LineCollection

    points, scores = surface
    low, high = window if window is not None else default_range(points, result.gamma, result.interval)
    figure, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7.2, 6.4), height_ratios=(3, 2))
    ends = np.array([low, high])
    segments = np.stack(
        [np.column_stack((ends, a + b * ends)) for a, b in zip(lines.intercepts, lines.slopes, strict=True)]
    )
    count = len(lines.intercepts)
    top.add_collection(LineCollection(list(segments), colors="0.6", linewidths=0.8, gid="candidates",
                                      label=f"candidate lines a + γ·b ({count} {lines.candidates})"))  # fmt: skip
    bounds = np.append(lines.left[1:], np.inf)
    shown = np.flatnonzero((bounds > low) & (lines.left < high))
    values = []
    for colour, i in enumerate(shown):
        xs = np.array([max(lines.left[i], low), min(bounds[i], high)])
        ys = lines.envelope_intercepts[i] + lines.envelope_slopes[i] * xs
        values.extend(ys)
        text = lines.translations[i]
        label = f"1-best: {text if len(text) <= 60 else text[:59] + '…'}" if colour < 10 else None
        top.plot(
            xs, ys, color=f"C{colour % 10}", linewidth=2.6, solid_capstyle="butt", gid=f"envelope-{i}", label=label
        )
    corners = lines.left[1:][(lines.left[1:] > low) & (lines.left[1:] < high)]
    at = np.searchsorted(lines.left, corners, side="right") - 1
    heights = lines.envelope_intercepts[at] + lines.envelope_slopes[at] * corners
    top.plot(corners, heights, "o", color="black", markersize=4, gid="breakpoints", label="breakpoints of the envelope")
    for x in corners:
        bottom.axvline(x, color="0.75", linestyle=":", linewidth=0.8)
    top_value, bottom_value = max(values), min(values)
    height = (top_value - bottom_value) or max(1.0, abs(top_value))
    floor, ceiling = bottom_value - 0.5 * height, top_value + 0.15 * height
    top.set_ylim(floor, ceiling)
    if count <= 12:  # few lines: number them, as the survey's c1..c4, at the side where they lie farthest apart
        gaps = [float(np.min(np.diff(np.sort(lines.intercepts + lines.slopes * x)), initial=np.inf)) for x in ends]
        side = int(np.argmax(gaps))
        x, shift, align = ends[side], (3, -3)[side], ("left", "right")[side]  # inside the axes
        for k, (a, b) in enumerate(zip(lines.intercepts, lines.slopes, strict=True)):
            if floor <= a + b * x <= ceiling:
                top.annotate(f"c{k + 1}", (x, a + b * x), fontsize=7, color="0.35", xytext=(shift, 0), ha=align,
                             textcoords="offset points", va="center", annotation_clip=False)  # fmt: skip
    top.set_ylabel("model score (w + γ·d)·h")
    top.set_title(f"sentence {lines.sentence}, {count} {lines.candidates}: their lines and upper envelope",
                  fontsize=9)  # fmt: skip
    top.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))

    edges = np.concatenate(([low], points[(points > low) & (points < high)], [high]))
    steps = scores[np.searchsorted(points, (edges[:-1] + edges[1:]) / 2)]
    bottom.step(edges, scale * np.append(steps, steps[-1]), where="post", color="tab:blue", gid="surface",
                label=f"corpus {metric}")  # fmt: skip
    a, b = result.interval
    span = f"[{a:.4g}, {b:.4g})"
    for axis in (top, bottom):
        first = axis is bottom
        axis.axvspan(max(a, low), min(b, high), color="tab:green", alpha=0.15,
                     label=f"chosen interval {span}" if first else None)  # fmt: skip
        axis.axvline(result.gamma, color="tab:green", linewidth=1.2,
                     label=f"chosen step γ = {result.gamma:.4g}" if first else None)  # fmt: skip
        if low <= 0.0 <= high:
            axis.axvline(0.0, color="grey", linestyle="--", linewidth=1, label="start γ = 0" if first else None)
    bottom.set_xlim(low, high)
    bottom.set_xlabel("γ: step along the direction d (the weights are w + γ·d)")
    bottom.set_ylabel(f"corpus {metric}")
    bottom.set_title(f"corpus {metric} on each interval between breakpoints ({result.breakpoints} in all)", fontsize=9)
    bottom.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save_figure(figure, path)


# ---------------------------------------------------------------------- oracles


def plot_oracles(model: np.ndarray, oracle: np.ndarray, path: str, metric: str) -> None:
    """Every sentence's model-best score against its oracle score (0-100), with the diagonal."""
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(4.6, 4.6))
    axis.scatter(100 * model, 100 * oracle, s=10, alpha=0.7)
    top = 100 * max(float(np.max(oracle, initial=0.0)), float(np.max(model, initial=0.0)), 0.01)
    axis.plot([0, top], [0, top], color="grey", linestyle=":", linewidth=1)
    axis.set_xlabel(f"model-best {metric}")
    axis.set_ylabel(f"oracle {metric}")
    axis.set_title(f"{model.size} sentences: mean {100 * model.mean():.1f} → {100 * oracle.mean():.1f}", fontsize=10)
    save_figure(figure, path)
