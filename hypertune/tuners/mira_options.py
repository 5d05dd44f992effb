"""Batch MIRA's options (:class:`~hypertune.tuners.mira.Mira`); light, for the command line (see
:mod:`hypertune.tuners.options`). The defaults are Moses kbmira's (Cherry & Foster 2012)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypertune import choices
from hypertune.choices import HOPE_FEAR_SEARCHES, MIRA_MODES, HopeFearSearch
from hypertune.tuners.options import OptionError, TunerOptions, normalization, option


@dataclass(frozen=True)
class MiraOptions(TunerOptions):
    """Batch MIRA (Cherry & Foster 2012, Algorithm 1; Moses kbmira) on k-best lists, lattices and forests; over
    shards, by iterative parameter mixing (McDonald et al. 2010; Simianer et al. 2012)."""

    summary = "tune weights with batch MIRA (hope/fear; Moses kbmira)"

    C: float = option(0.01, "step cap C", flag="-C", aliases=("--cparam",), kind="positive")
    decay: float = option(0.999, "background decay", aliases=("-D",), kind="fraction")
    epochs: int = option(60, "epochs", aliases=("--iters", "-J"), kind="positive-count")
    model_bg: bool = option(False, "background absorbs the model-best, not the hope")
    safe_hope: bool = option(False, "bound the model score's influence on the hope")
    seed: int | None = option(0, "shuffling seed", aliases=("--random-seed", "-r"),
                              kind="seed")  # fmt: skip
    shuffle: bool = option(True, "visit the sentences in input order every epoch, not shuffled (kbmira's flag)",
                           negated="--no-shuffle")  # fmt: skip
    prune_density: float | None = option(
        50.0,
        "lattices and forests are searched pruned to this many edges per reference word (0 or None: unpruned)",
        kind="non-negative",
        shared="prune_density",
    )
    # the command offers --gain itself: its choices are read when the parser is built (a registered gain joins)
    gain: str = option("background", "sentence gain (a name of choices.GAINS)")
    background_init: float = option(1.0, "the background pseudo-corpus's initial statistics", kind="number",
                                    command_line=False)  # fmt: skip
    linear: Any = option(None, "the linear gain's LinearBleu (Tromble et al. 2008: its p and r)", command_line=False)
    search: HopeFearSearch = option("approximate", "how hope and fear are searched in lattices and forests",
                         choices=HOPE_FEAR_SEARCHES, command_line=False)  # fmt: skip
    accumulate: bool = option(False, "hypergraphs: reuse earlier hopes and fears")
    # the command offers it as --type nbest/hypergraph (kbmira's), unset for auto
    mode: str = option("auto", "what is searched: auto (from the inputs), nbest or hypergraph", choices=MIRA_MODES)
    select: int = option(
        0,
        "with shards (--cluster/--shards): mix only the K features of largest l2 norm across shards, the others 0 "
        "(Simianer et al. 2012; default 0: all)",
        kind="count",
        metavar="K",
    )
    normalize: str = normalization()

    def check(self) -> None:
        if self.gain not in choices.GAINS:  # read now: a gain registered after import is a choice too
            raise OptionError(f"{{gain}} must be one of {', '.join(choices.GAINS)}, got {self.gain!r}")
        if self.gain == "linear" and self.linear is None:
            raise OptionError("{gain} linear needs {linear}, a LinearBleu (its p and r)")
