"""MERT's options (:class:`~hypertune.tuners.mert.Mert`); light, for the command line (see
:mod:`hypertune.tuners.options`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hypertune.choices import ENVELOPES, MERT_OPTIMIZERS, PLATEAUS, Envelope, MertOptimizer, Plateau
from hypertune.tuners.options import OptionError, TunerOptions, feature_bounds, fixed_features, normalization, option

#: The optimizers that score weight vectors without line searches: the baselines rerankers run (docs/mert.md).
SEARCH_OPTIMIZERS = ("random-search", "grid")


@dataclass(frozen=True)
class MertOptions(TunerOptions):
    """Minimum error rate training with exact line searches (Och 2003; Macherey et al. 2008)."""

    summary = "minimum error rate training (exact line search on k-best lists, lattices, forests)"

    optimizer: MertOptimizer = option(
        "auto",
        "line searches over directions, or random-search or grid without (default auto: coordinate on k-best "
        "lists, as Moses's mert; cyclic on lattices and forests, where a line search decodes every graph)",
        choices=MERT_OPTIMIZERS,
    )
    restarts: int = option(0, "random restarts besides the start point", kind="count")
    samples: int = option(
        100, "random-search: weight vectors drawn besides the start point (default 100)", kind="positive-count",
        metavar="N",
    )  # fmt: skip
    grid_points: int = option(
        51, "grid: points per free feature, both ends included (default 51)", kind="positive-count", metavar="N"
    )
    random_directions: int = option(0, "random directions per round (Cer et al. 2008)", kind="count", metavar="K")
    seed: int | None = option(0, "random seed (default 0)", kind="seed")
    fixed: tuple[str, ...] = fixed_features()
    features: tuple[str, ...] | None = option(
        None,
        "optimize only these features (comma-separated, repeatable)",
        flag="--optimize",
        parse="names",
        metavar="NAMES",
    )
    bounds: Mapping[str, tuple[float, float]] | None = feature_bounds()
    positive: bool = option(False, "keep optimized weights >= 0")
    restart_box: tuple[Mapping[str, float], Mapping[str, float]] | None = option(
        None,
        "the box random restarts are drawn from: (minimum, maximum) by feature (Moses init.opt)",
        command_line=False,
    )
    normalize: str = normalization()
    plateau: Plateau = option("none", "score intervals over a window of neighbours (Cer et al. 2008)", choices=PLATEAUS)
    window: int = option(1, "plateau window on each side (default 1)", kind="count")
    max_iterations: int = option(100, "most rounds of line searches per start point", kind="positive-count",
                                 command_line=False)  # fmt: skip
    tolerance: float = option(1e-7, "stop a start point when a round gains less than this", kind="non-negative",
                              command_line=False)  # fmt: skip
    n_jobs: int | None = option(None, "threads for per-sentence envelopes (0: all cores)", kind="count",
                                shared="jobs")  # fmt: skip
    collect_envelopes: bool = option(
        False, "keep every derivation on an envelope (Cherry & Foster 2012)", command_line=False
    )
    envelope: Envelope = option("probing", "how lattices' and forests' envelopes are found", choices=ENVELOPES,
                           shared="envelope")  # fmt: skip

    def check(self) -> None:
        if self.optimizer in SEARCH_OPTIMIZERS:
            line_search_only = {"restarts": self.restarts, "random_directions": self.random_directions}
            more = "{samples}" if self.optimizer == "random-search" else "{grid_points}"
            for name, value in line_search_only.items():
                if value:
                    raise OptionError(
                        f"{{{name}}} is for the line-search optimizers; {{optimizer}} {self.optimizer} scores its "
                        f"own weight vectors, without line searches (more of them: {more})"
                    )
            if self.plateau != "none":
                raise OptionError(f"{{plateau}} is for line searches; {{optimizer}} {self.optimizer} has none")
        if self.grid_points < 2:
            raise OptionError(f"{{grid_points}} must be at least 2 (both ends of each axis), got {self.grid_points}")
        box = self.restart_box
        if box is not None and self.restarts:
            inverted = [f"{n} ({box[0][n]:g} > {hi:g})" for n, hi in box[1].items() if n in box[0] and box[0][n] > hi]
            if inverted:
                raise OptionError(
                    f"the restart box's minimum lies above its maximum (init.opt's second and third lines) for "
                    f"{len(inverted)} feature(s): {', '.join(inverted[:5])}{' ...' if len(inverted) > 5 else ''}"
                )
