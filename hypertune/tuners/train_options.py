"""The options of the batch trainer (:class:`~hypertune.tuners.train.Trainer`, ``hypertune train``/``pro``) and
of the online trainer (:class:`~hypertune.tuners.online.OnlineTrainer`, ``hypertune train`` with a structured
loss or an online optimizer); light, for the command line (see :mod:`hypertune.tuners.options`).

The two share the fields of :class:`LossOptions` -- the loss, its regularizers, the k-best candidates and their
sentence gain, the finishing and the seed --, so one ``train`` command offers both: its flags are the union
(:func:`hypertune.cli.options.add_tuner_options` with ``merged``), and a flag of one trainer only is refused
when the other runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypertune.choices import (
    ACCEPTANCES,
    GAIN_SMOOTHINGS,
    L1_METHODS,
    LOSSES,
    ONLINE_OPTIMIZERS,
    ONLINE_TARGETS,
    STRUCTURED_LOSSES,
    TRAIN_OPTIMIZERS,
)
from hypertune.tuners.options import OptionError, TunerOptions, normalization, option

#: The readings of Tillmann & Zhang's cost-margin update (``tuners.costmargin``; the first the default).
COSTMARGIN_READINGS = ("eq7", "table2", "hinge")


@dataclass(frozen=True)
class LossOptions(TunerOptions):
    """What the batch and the online trainers share: a loss over every sentence's k-best candidates, each with
    its sentence gain (BLEU+1, Lin & Och 2004, or Moses's smoothings), regularized by L2 and L1."""

    loss: str = option("pro", "the loss", choices=LOSSES)
    l2: float | None = option(
        None, "L2 weight λ of λ‖w‖²/2 (default: the loss's, see docs/tuners.md)", kind="non-negative", metavar="L"
    )
    l1: float = option(0.0, "L1 weight λ of λ‖w‖₁, by OWL-QN", kind="non-negative", metavar="L")
    optimizer: str = option("auto", "the optimizer", choices=TRAIN_OPTIMIZERS)
    top_k: int = option(5, "pl: the top of each list scored", kind="positive-count", metavar="K")
    sample: int | None = option(30, "pl: candidates kept per list", kind="positive-count", metavar="M")
    kbest: int = option(100, "lattices/forests: derivations each", kind="positive-count", metavar="K")
    smooth: str = option("plus1", "the sentence gain: BLEU+1 (default) or Moses's", flag="--gain-smooth",
                         dest="gain_smooth", choices=GAIN_SMOOTHINGS)  # fmt: skip
    acceptance: str = option(
        "threshold",
        "pro/ranking: accept sampled pairs whose gains differ by > 0.05 (threshold, Moses; default) or by cdec's "
        "sigmoid rule",
        choices=ACCEPTANCES,
    )
    normalize: str = normalization()
    seed: int = option(0, "random seed (default 0)", kind="seed")

    def check(self) -> None:
        if self.loss == "pl" and self.sample is not None and self.sample < 2:
            raise OptionError(f"{{sample}} must be at least 2 for the pl loss, got {self.sample}")


@dataclass(frozen=True)
class TrainOptions(LossOptions):
    """A batch loss over k-best candidates -- PRO (Hopkins & May 2011), Plackett-Luce (Xia, Zhai & Wang 2019),
    pairwise hinge, MSE or softmax -- minimized by L-BFGS, or OWL-QN with L1 (Andrew & Gao 2007)."""

    summary = "tune with a loss over k-best candidates (PRO, Plackett-Luce, ranking, MSE, softmax) and L-BFGS"

    loss: str = option("pro", "a batch loss, minimized by L-BFGS (default pro)", choices=LOSSES)
    optimizer: str = option(
        "auto", "lbfgs, or owlqn for L1 (default auto: owlqn when L1 is set)", choices=TRAIN_OPTIMIZERS
    )
    interpolate: float = option(1.0, "β of β·w_new + (1 − β)·w_init, in (0, 1]", kind="number", metavar="B")
    iterations: int = option(200, "most L-BFGS iterations", kind="count", metavar="N")

    @property
    def chosen_optimizer(self) -> str:
        """``lbfgs`` or ``owlqn``: ``auto`` is OWL-QN when there is an L1 penalty."""
        if self.optimizer != "auto":
            return self.optimizer
        return "owlqn" if self.l1 > 0 else "lbfgs"

    def check(self) -> None:
        super().check()
        if self.optimizer == "lbfgs" and self.l1 > 0:
            raise OptionError("{l1} needs {optimizer} owlqn (L-BFGS cannot step across the kink of |w|)")
        if not 0 < self.interpolate <= 1:
            raise OptionError(f"{{interpolate}} must be in (0, 1], got {self.interpolate}")


@dataclass(frozen=True)
class OnlineOptions(LossOptions):
    """A structured loss -- perceptron (Collins 2002), latent SVM (Yu & Joachims 2009, as cdec's latent_svm), ramp
    (Gimpel & Smith 2012), softmax-margin (Gimpel & Smith 2010), cost-margin (Tillmann & Zhang, eq. 7) -- or a batch
    loss, followed sentence by sentence by an online optimizer: perceptron, PA-I (Crammer et al. 2006), AROW
    (Crammer et al. 2009), SGD or AdaGrad (Duchi et al. 2011)."""

    summary = "online tuning: a structured or batch loss followed sentence by sentence by an online optimizer"

    loss: str = option(
        "perceptron",
        "online: a structured loss, or a batch loss with an online optimizer",
        choices=STRUCTURED_LOSSES + LOSSES,
    )
    optimizer: str = option(
        "auto", "online: perceptron, pa, arow, sgd, adagrad (default auto: the loss's own)",
        choices=("auto", *ONLINE_OPTIMIZERS),
    )  # fmt: skip
    epochs: int = option(15, "passes over the sentences", kind="positive-count", metavar="N")
    learning_rate: float | None = option(
        None, "sgd/adagrad step size (default: the loss's)", kind="positive", metavar="ETA"
    )
    C: float = option(0.01, "pa: PA-I's largest step, as MIRA's", flag="-C", kind="positive", metavar="C")
    r: float = option(1.0, "arow: its regularizer r", flag="--arow-r", kind="positive", metavar="R")
    l1_method: str = option("fobos", "how sgd/adagrad apply the L1 penalty", choices=L1_METHODS)
    minibatch: int = option(1, "sentences per update", kind="positive-count", metavar="B")
    cost_scale: float | None = option(
        None, "α of the cost α·(1 − BLEU+1) (default: the loss's)", kind="number", metavar="A"
    )
    cccp_passes: int = option(
        0,
        "ramp: fix the hopes for rounds of T epochs, as rampion's CCCP (rampion: 5; default 0, every visit)",
        kind="count",
        metavar="T",
    )
    shuffle: bool = option(True, "visit sentences in corpus order, not shuffled", negated="--corpus-order")
    target: str = option("oracle", "perceptron/latent-svm: what to move towards", choices=ONLINE_TARGETS)
    reading: str = option(
        "eq7",
        "costmargin: eq7 (eq. 7's squared-hinge step against the most violating alternative; default), table2 "
        "(Table II as printed: no hinge, the least violating alternative) or hinge (plain hinge)",
        choices=COSTMARGIN_READINGS,
    )
    truths: int = option(5, "costmargin: the K best-gain candidates form the truth set (Table II: 5)",
                         kind="positive-count", metavar="K")  # fmt: skip
    average: bool | None = option(
        None, "keep the last weights, not their average (the default with L1)", negated="--no-average"
    )
    select: int = option(
        0,
        "with shards (--cluster/--shards; iterative parameter mixing): mix only the K features of largest l2 norm "
        "across shards, the others 0 (Simianer et al. 2012; default 0: all)",
        kind="count",
        metavar="K",
    )
    prune_density: float | None = option(
        50.0,
        "lattices and forests are searched pruned to this many edges per reference word (0 or None: unpruned)",
        kind="non-negative",
        shared="prune_density",
    )

    @property
    def chosen_optimizer(self) -> str:
        """The online optimizer: ``auto`` is the loss's own, perceptron for the perceptron and sgd for the others."""
        if self.optimizer != "auto":
            return self.optimizer
        return "perceptron" if self.loss == "perceptron" else "sgd"

    @property
    def averaged(self) -> bool:
        """Whether the weights are averaged over every update: by default, unless there is an L1 penalty (the
        average of weights that were nonzero at some step is nonzero: L1's zeros would be lost)."""
        return self.l1 == 0.0 if self.average is None else self.average

    def check(self) -> None:
        super().check()
        if self.loss in STRUCTURED_LOSSES:
            if self.target != "oracle" and self.loss not in ("perceptron", "latent-svm"):
                raise OptionError(f"{{target}} is for the perceptron and latent-svm losses, not {self.loss}")
            if self.cccp_passes and self.loss != "ramp":
                raise OptionError(f"{{cccp_passes}} is for the ramp loss, not {self.loss}")
            for name, unset_value in (("reading", "eq7"), ("truths", 5)):
                if getattr(self, name) != unset_value and self.loss != "costmargin":
                    raise OptionError(f"{{{name}}} is for the costmargin loss, not {self.loss}")
        else:
            unset = {"target": "oracle", "cccp_passes": 0, "cost_scale": None, "reading": "eq7", "truths": 5}
            given = [f"{{{name}}}" for name, value in unset.items() if getattr(self, name) != value]
            if given:
                raise OptionError(f"{', '.join(given)}: for the structured losses, not {self.loss}")
        chosen = self.chosen_optimizer
        if self.minibatch > 1 and chosen in ("pa", "arow"):
            raise OptionError(f"{{minibatch}} needs {{optimizer}} perceptron, sgd or adagrad ({chosen} steps one "
                              "example)")  # fmt: skip
        if self.l1 > 0 and chosen not in ("sgd", "adagrad"):
            raise OptionError("{l1} needs {optimizer} sgd or adagrad")
        if self.l2 is not None and self.l2 > 0 and chosen not in ("sgd", "adagrad"):
            raise OptionError("{l2} needs {optimizer} sgd or adagrad (perceptron, pa and arow have no L2 term)")
        if self.learning_rate is not None and chosen in ("pa", "arow"):
            raise OptionError(f"{{optimizer}} {chosen} chooses its own step size: {{learning_rate}} does not apply")
        if self.l1_method == "cumulative" and self.l1 > 0 and chosen != "sgd":
            raise OptionError("the cumulative L1 penalty (Tsuruoka et al. 2009) is for {optimizer} sgd")
