"""Pictures of what the tuners do (``--plot FILE``), with matplotlib (the ``plot`` extra).

* :func:`plot_history`: every tuning command's learning curve, from :attr:`TuningResult.history` (the
  metric per iteration, epoch or start point, and the objective where entries carry one), so a tuner
  added later gets it for free through :func:`~hypertune.cli.tuning.report_tuning`.
* :func:`plot_line_search`: one line search (survey Fig. 5 and 7): a few sentences' upper envelopes
  along the direction, and the corpus error surface with the chosen step.
* :func:`plot_oracles`: model-best against oracle sentence scores.

Files are written atomically (a temporary file in the same folder, then renamed); the format follows
the extension (``.png``, ``.svg``, ``.pdf``).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np

from hypertune.errors import UsageError
from hypertune.formats.io import default_file_mode


def require_matplotlib() -> Any:
    """matplotlib, or a usage error that says how to install it."""
    try:
        import matplotlib
    except ImportError:
        raise UsageError("--plot needs matplotlib: pip install 'hypertune[plot]'") from None
    return matplotlib


def _pyplot() -> Any:
    matplotlib = require_matplotlib()
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text: searchable, and smaller
    import matplotlib.pyplot as plt

    return plt


def _save(figure: Any, path: str) -> None:
    """Write the figure atomically in the format of ``path``'s extension."""
    folder = os.path.dirname(os.path.abspath(path))
    suffix = os.path.splitext(path)[1] or ".png"
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".plot-", suffix=suffix)
    os.close(handle)
    try:
        figure.savefig(temporary, dpi=110, bbox_inches="tight")
        os.chmod(temporary, default_file_mode())
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
        _pyplot().close(figure)


def plot_history(result: Any, path: str, title: str) -> None:
    """The metric (0-100) of every history entry, and the objective on a second axis where entries have
    one (minimum risk)."""
    plt = _pyplot()
    entries = [entry.to_json() for entry in result.history]
    figure, axis = plt.subplots(figsize=(6.4, 3.6))
    steps = [e["iteration"] for e in entries]
    axis.plot(steps, [100 * e["score"] for e in entries], marker="o", markersize=3, color="tab:blue")
    axis.set_xlabel("iteration")
    axis.set_ylabel(result.metric)
    axis.axhline(100 * result.score_before, color="grey", linestyle=":", linewidth=1, label="before")
    axis.axhline(100 * result.score_after, color="tab:blue", linestyle="--", linewidth=1, label="kept")
    if entries and "objective" in entries[0]:
        other = axis.twinx()
        other.plot(steps, [e["objective"] for e in entries], color="tab:orange", linewidth=1)
        other.set_ylabel("objective", color="tab:orange")
    axis.legend(loc="lower right", fontsize=8)
    axis.set_title(title, fontsize=10)
    _save(figure, path)


def plot_line_search(
    envelopes: list[tuple[int, Any]], surface: tuple[np.ndarray, np.ndarray], result: Any, path: str, metric: str
) -> None:
    """Left: each listed sentence's upper envelope (lines ``intercept + γ·slope`` from their left
    breakpoints). Right: the corpus metric of every interval between breakpoints, the chosen interval
    shaded. ``surface``: the interval edges (finite breakpoints) and the metric left of, between and right
    of them."""
    plt = _pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    points, scores = surface
    low, high = _window(points, result.interval)
    xs = np.linspace(low, high, 400)
    for k, (sentence, envelope) in enumerate(envelopes):
        colour = f"C{k % 10}"
        bounds = np.append(envelope.left[1:], np.inf)
        for i in range(len(envelope)):
            inside = (xs >= envelope.left[i]) & (xs <= bounds[i])
            left.plot(xs[inside], envelope.intercept[i] + envelope.slope[i] * xs[inside], color=colour, linewidth=1.2)
        corners = envelope.left[1:][(envelope.left[1:] >= low) & (envelope.left[1:] <= high)]
        left.plot(corners, np.interp(corners, xs, _upper(envelope, xs)), "o", color=colour, markersize=3)
        left.plot([], [], color=colour, label=f"sentence {sentence}: {len(envelope)} lines")
    left.set_xlabel("step γ")
    left.set_ylabel("model score of the 1-best")
    left.set_title("upper envelopes", fontsize=10)
    left.legend(fontsize=7, loc="best")
    edges = np.concatenate(([low], points[(points > low) & (points < high)], [high]))
    values = scores[np.searchsorted(points, (edges[:-1] + edges[1:]) / 2)]
    right.step(edges, 100 * np.append(values, values[-1]), where="post", color="tab:blue")
    right.axvspan(max(result.interval[0], low), min(result.interval[1], high), color="tab:green", alpha=0.2)
    right.axvline(result.gamma, color="tab:green", linewidth=1, label=f"best step {result.gamma:.4g}")
    right.axvline(0.0, color="grey", linestyle=":", linewidth=1, label="start")
    right.set_xlabel("step γ")
    right.set_ylabel(metric)
    right.set_title("corpus error surface", fontsize=10)
    right.legend(fontsize=7, loc="best")
    _save(figure, path)


def _upper(envelope: Any, xs: np.ndarray) -> np.ndarray:
    """The envelope's value at every ``xs``: the top of its lines."""
    return np.max(envelope.intercept[:, None] + envelope.slope[:, None] * xs[None, :], axis=0)


def _window(points: np.ndarray, interval: tuple[float, float]) -> tuple[float, float]:
    """A γ range that shows the start, the chosen interval and the breakpoints around them."""
    finite = points[np.isfinite(points)]
    inner = [0.0, *(x for x in interval if np.isfinite(x))]
    lo, hi = min(inner), max(inner)
    if finite.size:
        lo, hi = min(lo, np.quantile(finite, 0.05)), max(hi, np.quantile(finite, 0.95))
    span = max(hi - lo, 1e-3)
    return lo - 0.1 * span, hi + 0.1 * span


def plot_oracles(model: np.ndarray, oracle: np.ndarray, path: str, metric: str) -> None:
    """Every sentence's model-best score against its oracle score (0-100), with the diagonal."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(4.6, 4.6))
    axis.scatter(100 * model, 100 * oracle, s=10, alpha=0.7)
    top = 100 * max(float(np.max(oracle, initial=0.0)), float(np.max(model, initial=0.0)), 0.01)
    axis.plot([0, top], [0, top], color="grey", linestyle=":", linewidth=1)
    axis.set_xlabel(f"model-best {metric}")
    axis.set_ylabel(f"oracle {metric}")
    axis.set_title(f"{model.size} sentences: mean {100 * model.mean():.1f} → {100 * oracle.mean():.1f}", fontsize=10)
    _save(figure, path)
