"""The options of Tillmann & Zhang's relevant-set tuner (:class:`~hypertune.tuners.relevant_set.RelevantSet`,
``hypertune relevant-set``); light, for the command line (see :mod:`hypertune.tuners.options`)."""

from __future__ import annotations

from dataclasses import dataclass

from hypertune.choices import GAIN_SMOOTHINGS
from hypertune.tuners.options import OptionError, TunerOptions, normalization, option
from hypertune.tuners.train_options import COSTMARGIN_READINGS

#: The relevant-set tuner's updates: Table III's perceptron, Table II's cost-margin SGD.
RELEVANT_SET_UPDATES = ("perceptron", "costmargin")
#: Where the truth comes from: the K best-gain candidates of the whole list (Table II's V_5, eq. 3's V_K) or
#: the best-gain member of the relevant set (Table III; section VI-B's seed variant of the cost-margin).
RELEVANT_SET_TRUTHS = ("oracle", "relevant")
#: What every training step starts from: {0.1}^M, {0}^M (section IV, binary features) or the --init weights.
RELEVANT_SET_STARTS = ("flat", "zero", "init")


@dataclass(frozen=True)
class RelevantSetOptions(TunerOptions):
    """Tillmann & Zhang's online relevant-set algorithm on k-best lists (lattices and forests: their k best
    derivations): two seed translations per sentence from flat weights {0.1}^M and a seeded perturbation of
    them, then L − 2 rounds of R seeded passes of online updates over the relevant sets, each round retrained
    from the start weights and followed by one decoding that adds every sentence's model-best to its relevant
    set; the round whose weights score best on the tuning set is kept. Updates: the perceptron of their
    Table III (default) or the cost-margin SGD of Table II / eq. 7."""

    summary = "Tillmann & Zhang's relevant-set tuner: Table III's perceptron or Table II's cost-margin SGD"

    update: str = option("perceptron", "perceptron (Table III, default) or costmargin (Table II, eq. 7)",
                         choices=RELEVANT_SET_UPDATES)  # fmt: skip
    reading: str = option(
        "eq7",
        "costmargin: eq7 (eq. 7's squared-hinge step, most violating alternative; default), table2 (Table II as "
        "printed: no hinge, least violating alternative) or hinge (plain hinge)",
        choices=COSTMARGIN_READINGS,
    )
    truth: str | None = option(
        None,
        "oracle (the --truths best-gain candidates of each list; costmargin's default) or relevant (the best "
        "gain in the relevant set; the perceptron's default)",
        choices=RELEVANT_SET_TRUTHS,
    )
    truths: int = option(5, "oracle truth: the K best-gain candidates form the truth set (Table II: 5)",
                         kind="positive-count", metavar="K")  # fmt: skip
    decodings: int = option(30, "L: decodings, the two seed ones included (at least 3)", kind="positive-count",
                            metavar="L")  # fmt: skip
    passes: int = option(40, "R: passes over the relevant sets per round", kind="positive-count", metavar="R")
    learning_rate: float | None = option(
        None, "η (default: perceptron 1e-5, Table III; costmargin 1e-4, Table II)", kind="positive", metavar="ETA"
    )
    start: str = option(
        "flat", "the weights every round starts from: flat {0.1}^M (default), zero, or the --init weights",
        choices=RELEVANT_SET_STARTS,
    )  # fmt: skip
    delta: float = option(0.01, "the second seed's weights are 0.1 + δ, δ uniform in [−D, D] per feature",
                          kind="non-negative", metavar="D")  # fmt: skip
    shuffle: bool = option(True, "visit sentences in corpus order, not shuffled", negated="--corpus-order")
    kbest: int = option(100, "lattices/forests: derivations each", kind="positive-count", metavar="K")
    smooth: str = option("plus1", "the sentence gain: BLEU+1 (default) or Moses's", flag="--gain-smooth",
                         dest="gain_smooth", choices=GAIN_SMOOTHINGS)  # fmt: skip
    normalize: str = normalization()
    seed: int = option(0, "random seed: the second seed's δ and the visiting order (default 0)", kind="seed")

    @property
    def chosen_truth(self) -> str:
        """``truth``, or the update's own: the perceptron's relevant set, the cost-margin's oracle."""
        if self.truth is not None:
            return self.truth
        return "relevant" if self.update == "perceptron" else "oracle"

    @property
    def rate(self) -> float:
        """η: ``learning_rate`` or the update's table's."""
        if self.learning_rate is not None:
            return self.learning_rate
        return 1e-5 if self.update == "perceptron" else 1e-4

    def check(self) -> None:
        if self.decodings < 3:
            raise OptionError(f"{{decodings}} must be at least 3 (two seed decodings, then a round), got "
                              f"{self.decodings}")  # fmt: skip
        if self.update == "perceptron" and self.reading != "eq7":
            raise OptionError("{reading} is for {update} costmargin")
        if self.truths != 5 and self.chosen_truth != "oracle":
            raise OptionError("{truths} is for {truth} oracle")
