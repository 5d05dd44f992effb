"""Online tuners: a structured loss × an online optimizer, over sentences one at a time (docs/tuners.md).

Per visited sentence, a :class:`StructuredLoss` asks the search space for a few derivations under the
current weights -- the model-best ``argmax s``, the hope ``argmax s + αB``, the cost-augmented fear
``argmax s − αB`` or the oracle ``argmax B`` (``s = w·h``, ``B`` the sentence gain, BLEU+1) -- and returns a
:class:`Step`: the loss's value and the direction ``d`` that decreases it (minus its subgradient).
An :class:`OnlineOptimizer` turns steps into weight updates. :class:`OnlineTrainer` visits the
sentences in a seeded random order for ``epochs`` passes, averages the weights over every step, and
returns the averaged weights of the epoch whose model-best translations score best (as batch MIRA).

Search spaces: k-best lists are searched exactly over their hypotheses (:class:`ListSpace`); lattices
and forests by the hope/fear search of :mod:`hypertune.tuners.hope_fear` (:class:`GraphSpace`; the
oracle is its search under the gain alone). Losses that need a whole candidate distribution
(softmax-margin and the batch losses of :mod:`hypertune.tuners.losses`) take lattices and forests as
their ``kbest`` best derivations, as the batch tuners do.

Sources: structured perceptron, Collins 2002 (averaged); the latent structural SVM loss of Yu & Joachims 2009
(oracle vs cost-augmented fear) by online SGD with L2, as cdec's ``latent_svm`` -- not Cherry & Foster 2012's
batch structured SVM (cutting planes, oracles re-selected between solves), a different optimizer of a similar
loss; ramp loss, Gimpel & Smith 2012 (their ramp 3: hope vs fear, cost α(1 − B); cdec's ``rampion``);
softmax-margin, Gimpel & Smith 2010; relevant-set cost-margin, Tillmann & Zhang (eq. 3, 4 and 7, its readings
in :mod:`hypertune.tuners.costmargin` and docs/tuners.md); PA-I, Crammer
et al. 2006; AROW, Crammer et al. 2009 in Chiang 2012's diagonal form; AdaGrad, Duchi et al. 2011; L1 by
FOBOS (Duchi & Singer 2009) or the cumulative penalty of Tsuruoka et al. 2009.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import scipy.sparse as sp

from hypertune import interrupts
from hypertune.choices import STRUCTURED_LOSSES
from hypertune.errors import UsageError
from hypertune.metrics.gains import gain_for, smoothed_gain
from hypertune.tuners.base import Checkpoint, Iteration, TuningResult, metric_label
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.costmargin import costmargin_choice
from hypertune.tuners.finishing import finish_weights
from hypertune.tuners.hope_fear import HopeFearDecoder
from hypertune.tuners.kbest_candidates import kbest_candidates
from hypertune.tuners.losses import Candidates, Loss, make_loss
from hypertune.tuners.mixing import Mixed, Mixing, mix
from hypertune.tuners.model_best import ModelBest
from hypertune.tuners.passive_aggressive import pa_step_size
from hypertune.tuners.pruning import prune_tuning_set
from hypertune.tuners.shards import LocalShards, Shard, Shards
from hypertune.tuners.train_options import OnlineOptions
from hypertune.weights import Weights


# ---------------------------------------------------------------------- derivations and search spaces
class Derivation(NamedTuple):
    """One derivation as the online losses see it: its sparse features and its sentence gain."""

    indices: np.ndarray
    values: np.ndarray
    gain: float

    def score(self, w: np.ndarray) -> float:
        return float(self.values @ w[self.indices]) if self.indices.size else 0.0

    def key(self) -> bytes:
        return self.indices.tobytes() + b"|" + self.values.tobytes()


def difference(a: Derivation, b: Derivation) -> tuple[np.ndarray, np.ndarray]:
    """``h(a) − h(b)`` as sorted feature indices and values."""
    idx = np.union1d(a.indices, b.indices)
    diff = np.zeros(idx.size)
    diff[np.searchsorted(idx, a.indices)] += a.values
    diff[np.searchsorted(idx, b.indices)] -= b.values
    return idx, diff


ORACLE = np.inf
"""The ``bleu_weight`` that asks a search space for the oracle: the best gain, ties to the best model score."""


class ListSpace:
    """Every sentence's candidates (k-best lists, or a lattice's or forest's k best) searched exactly."""

    def __init__(self, candidates: Candidates) -> None:
        self.candidates = candidates
        f = candidates.features.tocsr()
        self.indptr, self.indices, self.data = f.indptr, f.indices.astype(np.int64), f.data
        self.blocks = [f[lo:hi] for lo, hi in zip(candidates.offsets[:-1], candidates.offsets[1:], strict=True)]

    @property
    def sentences(self) -> int:
        return self.candidates.sentences

    def derivation(self, row: int) -> Derivation:
        lo, hi = self.indptr[row], self.indptr[row + 1]
        return Derivation(self.indices[lo:hi], self.data[lo:hi], float(self.candidates.gains[row]))

    def pick(self, sentence: int, w: np.ndarray, *bleu_weights: float) -> list[Derivation]:
        """For each ``a`` of ``bleu_weights``, ``argmax w·h + a·B`` (first on ties, as
        :func:`~hypertune.tuners.hope_fear.select_hope_fear`); for :data:`ORACLE`, the best gain, ties to the
        higher model score."""
        lo = self.candidates.offsets[sentence]
        scores = self.blocks[sentence] @ w
        gains = self.candidates.gains[lo : lo + scores.size]
        picked = []
        for a in bleu_weights:
            if a == ORACLE:
                best = np.flatnonzero(gains == gains.max())
                picked.append(self.derivation(lo + int(best[np.argmax(scores[best])])))
            else:
                picked.append(self.derivation(lo + int(np.argmax(scores + a * gains))))
        return picked

    def rows(self, sentence: int) -> tuple[sp.csr_matrix, np.ndarray]:
        lo = self.candidates.offsets[sentence]
        block = self.blocks[sentence]
        return block, self.candidates.gains[lo : lo + block.shape[0]]


class GraphSpace:
    """Lattices and forests, searched by the hope/fear search (the gain of approximate statistics at the nodes;
    every returned derivation's gain is exact, from its words). ``gain``: a name of
    :data:`~hypertune.metrics.gains.GAINS` (the lists' gain, :func:`~hypertune.metrics.gains.smoothed_gain`)."""

    def __init__(self, tuning_set: TuningSet, order: int, gain: str = "bleu+1") -> None:
        self.decoder = HopeFearDecoder(tuning_set)
        self.gain = gain_for(tuning_set.metric, gain, order)

    @property
    def sentences(self) -> int:
        return len(self.decoder.tuning_set)

    def pick(self, sentence: int, w: np.ndarray, *bleu_weights: float) -> list[Derivation]:
        """As :meth:`ListSpace.pick`, by the hope/fear search; the oracle is the search under the gain alone."""
        decoder = self.decoder
        scores = decoder.edge_scores(sentence, w)
        found = [
            decoder.best_edges(sentence, scores, self.gain, 0.0, 1.0)
            if a == ORACLE
            else decoder.best_edges(sentence, scores, self.gain, 1.0, a)
            for a in bleu_weights
        ]
        stats = decoder.stats_of(sentence, [decoder.words(sentence, edges) for edges in found])
        gains = np.atleast_1d(self.gain.score(stats))
        return [
            Derivation(*decoder.derivation_features(sentence, edges), float(gain))
            for edges, gain in zip(found, gains, strict=True)
        ]


# ---------------------------------------------------------------------- losses
class Step(NamedTuple):
    """What one sentence asks of the optimizer: the loss's value and the descent direction ``diff`` (minus the
    loss's subgradient) on the features ``idx``. ``loss == 0`` means no update."""

    loss: float
    idx: np.ndarray
    diff: np.ndarray


NO_STEP = Step(0.0, np.zeros(0, dtype=np.int64), np.zeros(0))


class StructuredLoss:
    """A per-sentence loss under the current weights: :meth:`step` returns its value and descent direction."""

    name = ""
    needs_lists = False
    default_rate = 0.01
    default_l2 = 0.0

    def __init__(self, cost_scale: float = 1.0) -> None:
        self.cost_scale = cost_scale

    def start(self, space: ListSpace | GraphSpace, w: np.ndarray) -> None:
        """Called once before the first epoch, with the initial weights (per-sentence state starts here)."""

    def begin_epoch(self, space: ListSpace | GraphSpace, w: np.ndarray, epoch: int) -> None:
        """Called before every epoch (from 1) with the weights of the moment."""

    def step(self, space: ListSpace | GraphSpace, sentence: int, w: np.ndarray) -> Step:
        raise NotImplementedError


def _pair_step(target: Derivation, competitor: Derivation, loss: float, scale: float = 1.0) -> Step:
    """The step of a loss ``… + w·h(competitor) − w·h(target)``: direction ``scale·(h(target) − h(competitor))``."""
    if loss <= 0.0:
        return NO_STEP
    idx, diff = difference(target, competitor)
    if not np.any(diff):
        return NO_STEP
    return Step(loss, idx, scale * diff)


class _TargetedLoss(StructuredLoss):
    """A loss that moves towards a target: the oracle (``target="oracle"``) or the hope (``"hope"``)."""

    def __init__(self, cost_scale: float = 1.0, target: str = "oracle") -> None:
        super().__init__(cost_scale)
        self.target = target

    @property
    def target_weight(self) -> float:
        """The ``bleu_weight`` that picks the target: :data:`ORACLE`, or α for the hope ``argmax w·h + α·B``."""
        return ORACLE if self.target == "oracle" else self.cost_scale


class PerceptronLoss(_TargetedLoss):
    """The structured perceptron (Collins 2002): ``max_e w·h(e) − w·h(target)``, the target being the oracle
    (``target="oracle"``) or the hope (``"hope"``, ``argmax w·h + B``). An update whenever the model-best
    differs from the target in gain and outscores it (ties included)."""

    name = "perceptron"
    default_rate = 1.0

    def step(self, space: ListSpace | GraphSpace, sentence: int, w: np.ndarray) -> Step:
        target, best = space.pick(sentence, w, self.target_weight, 0.0)
        if not best.gain < target.gain:
            return NO_STEP
        margin = best.score(w) - target.score(w)
        if margin < 0.0:
            return NO_STEP
        return _pair_step(target, best, max(margin, np.finfo(float).tiny))


class LatentSvmLoss(_TargetedLoss):
    """The latent structured SVM as cdec's ``latent_svm``: the oracle against the cost-augmented fear
    ``argmax w·h − α·B``; hinge ``max(0, α(B(o) − B(f)) − w·(h(o) − h(f)))`` (cdec's ``--check_positive``),
    defaults α = 1, SGD with rate 0.01 and L2 λ = 0.02 (cdec's ``C`` = 0.01 in ``w ← (1 − 2ηC) w``). With
    ``target="hope"`` the target is the hope ``argmax w·h + α·B``: the hinge online MIRA steps on (Chiang 2012)."""

    name = "latent-svm"
    default_l2 = 0.02

    def step(self, space: ListSpace | GraphSpace, sentence: int, w: np.ndarray) -> Step:
        oracle, fear = space.pick(sentence, w, self.target_weight, -self.cost_scale)
        if not oracle.gain > fear.gain:
            return NO_STEP
        loss = self.cost_scale * (oracle.gain - fear.gain) - (oracle.score(w) - fear.score(w))
        return _pair_step(oracle, fear, loss)


class RampLoss(StructuredLoss):
    """Ramp loss 3 of Gimpel & Smith 2012 (cdec's ``rampion``): with cost ``α(1 − B)``,
    ``max_e [w·h(e) + cost(e)] − max_e [w·h(e) − cost(e)]``, i.e. the fear against the hope; defaults α = 10,
    rate 1e-4 and L2 λ = 1/N per step (rampion's ``C`` = 1 spread over the N sentences). By default the hope is
    searched again at every visit (stochastic subgradient descent on the ramp loss itself); with
    ``cccp_passes = T''`` the hopes of all sentences are fixed at the start of every round of T'' epochs, under
    the weights of that moment, and only the fear moves within a round: rampion's CCCP (its defaults: T'' = 5,
    10 rounds, sentences in corpus order)."""

    name = "ramp"
    default_rate = 1e-4

    def __init__(self, cost_scale: float = 10.0, cccp_passes: int = 0) -> None:
        super().__init__(cost_scale)
        self.cccp_passes = cccp_passes
        self.hopes: list[Derivation] = []

    def begin_epoch(self, space: ListSpace | GraphSpace, w: np.ndarray, epoch: int) -> None:
        if self.cccp_passes and (epoch - 1) % self.cccp_passes == 0:  # a new CCCP round: fix the hopes
            self.hopes = [space.pick(s, w, self.cost_scale)[0] for s in range(space.sentences)]

    def step(self, space: ListSpace | GraphSpace, sentence: int, w: np.ndarray) -> Step:
        if self.cccp_passes:
            hope, fear = self.hopes[sentence], space.pick(sentence, w, -self.cost_scale)[0]
        else:
            hope, fear = space.pick(sentence, w, self.cost_scale, -self.cost_scale)
        a = self.cost_scale
        loss = (fear.score(w) + a * (1.0 - fear.gain)) - (hope.score(w) - a * (1.0 - hope.gain))
        return _pair_step(hope, fear, loss)


class SoftmaxMarginLoss(StructuredLoss):
    """Softmax-margin (Gimpel & Smith 2010): ``−w·h(o) + log Σ_e exp(w·h(e) + α(B(o) − B(e)))`` over the
    sentence's candidates, o the oracle; its gradient is ``E_q[h] − h(o)``, q the cost-augmented softmax."""

    name = "softmax-margin"
    needs_lists = True

    def step(self, space: ListSpace | GraphSpace, sentence: int, w: np.ndarray) -> Step:
        assert isinstance(space, ListSpace)
        block, gains = space.rows(sentence)
        scores = block @ w
        best = np.flatnonzero(gains == gains.max())
        oracle = int(best[np.argmax(scores[best])])
        augmented = scores + self.cost_scale * (gains[oracle] - gains)
        top = augmented.max()
        q = np.exp(augmented - top)
        log_z = top + np.log(q.sum())
        q /= q.sum()
        loss = float(log_z - scores[oracle])
        direction = np.asarray(block[oracle].toarray()).ravel() - block.T @ q
        idx = np.flatnonzero(direction)
        return Step(max(loss, np.finfo(float).tiny), idx, direction[idx]) if idx.size else NO_STEP


class CostMarginLoss(StructuredLoss):
    """Tillmann & Zhang's relevant-set cost-margin loss (*An Online Relevant Set Algorithm for Statistical Machine
    Translation*, eq. 3, 4 and 7) online: per sentence a relevant set V of derivations kept across epochs (each
    visit adds the current model-best) and a truth set V_K, the ``truths`` K best-gain candidates of a k-best
    list (ties to the earlier candidate; lattices and forests: the oracle search's one); the alternatives are
    V − V_K. Each truth z_k is paired with an alternative and the step is the mean over the truths of
    ``c_k·(h(z_k) − h(z̃_k))``, by ``reading`` (:mod:`hypertune.tuners.costmargin`, cost ``α(B(z) − B(z'))``):
    ``eq7`` (default) eq. 7's ``c = Δ·(1 − m)₊`` against the alternative of largest ``Δ·(1 − m)₊²``;
    ``table2`` Table II as printed, the best truth only (ties to the higher model score), ``c = Δ`` against
    the alternative of smallest ``Δ·(1 − m)``; ``hinge`` ``c = Δ`` against the alternative of largest
    ``Δ·(1 − m)₊``."""

    name = "costmargin"

    def __init__(self, cost_scale: float = 1.0, reading: str = "eq7", truths: int = 5) -> None:
        super().__init__(cost_scale)
        self.reading, self.truths = reading, truths

    def start(self, space: ListSpace | GraphSpace, w: np.ndarray) -> None:
        self.relevant: list[dict[bytes, Derivation]] = [{} for _ in range(space.sentences)]

    def _truth_set(self, space: ListSpace | GraphSpace, sentence: int, w: np.ndarray) -> list[Derivation]:
        if isinstance(space, GraphSpace):
            return space.pick(sentence, w, ORACLE)
        gains = space.rows(sentence)[1]
        order = np.argsort(-gains, kind="stable")[: self.truths]
        lo = space.candidates.offsets[sentence]
        return [space.derivation(lo + int(row)) for row in order]

    def step(self, space: ListSpace | GraphSpace, sentence: int, w: np.ndarray) -> Step:
        best = space.pick(sentence, w, 0.0)[0]
        relevant = self.relevant[sentence]
        relevant.setdefault(best.key(), best)
        truths = self._truth_set(space, sentence, w)
        keys = {t.key() for t in truths}  # the alternatives are V − V_K (eq. 3), in every reading
        alternatives = [e for key, e in relevant.items() if key not in keys]
        if not alternatives:
            return NO_STEP
        truth_gains = np.array([t.gain for t in truths])
        truth_scores = np.array([t.score(w) for t in truths])
        if self.reading == "table2":  # Table II: s = argmax Bl over V_5, ties to the higher score: that one only
            top = np.flatnonzero(truth_gains == truth_gains.max())
            s = int(top[np.argmax(truth_scores[top])])
            truths, truth_gains, truth_scores = [truths[s]], truth_gains[[s]], truth_scores[[s]]
        alt_gains = np.array([e.gain for e in alternatives])
        alt_scores = np.array([e.score(w) for e in alternatives])
        cost = self.cost_scale * (truth_gains[:, None] - alt_gains[None, :])
        choice = costmargin_choice(self.reading, cost, truth_scores[:, None] - alt_scores[None, :])
        picked = [alternatives[int(pick)] for pick in choice.alternative]
        pairs = [difference(truth, e) for truth, e in zip(truths, picked, strict=True)]
        scale = choice.coefficient / len(truths)
        features = np.concatenate([idx for idx, _ in pairs])
        idx, inverse = np.unique(features, return_inverse=True)
        values = np.concatenate([c * d for c, (_, d) in zip(scale, pairs, strict=True)])
        diff = np.bincount(inverse, weights=values, minlength=idx.size)
        moving = diff != 0.0
        if not np.any(moving):
            return NO_STEP
        value = float(np.mean(choice.value))
        return Step(value if value > 0.0 else np.finfo(float).tiny, idx[moving], diff[moving])


class BatchLossAdapter(StructuredLoss):
    """A batch loss of :mod:`hypertune.tuners.losses` (PRO, PL, ranking, MSE, softmax) one sentence at a time:
    each sentence's share of the loss is prepared once (seeded) and its gradient followed online."""

    needs_lists = True

    def __init__(self, loss: str, top_k: int, sample: int | None, acceptance: str, seed: int | list[int]) -> None:
        super().__init__()
        self.name, self.options, self.seed = loss, (top_k, sample, acceptance), seed
        self.default_l2 = 0.0

    def start(self, space: ListSpace | GraphSpace, w: np.ndarray) -> None:
        assert isinstance(space, ListSpace)
        rng = np.random.default_rng(self.seed)
        self.parts: list[Loss | None] = []
        for s in range(space.sentences):
            block, gains = space.rows(s)
            part = make_loss(self.name, *self.options)
            candidates = Candidates(block, np.array([0, block.shape[0]]), gains, _lengths(space, s))
            try:
                part.prepare(candidates, w[: block.shape[1]], rng)
            except UsageError:  # e.g. no PRO pair in this list: the sentence teaches nothing
                self.parts.append(None)
            else:
                self.parts.append(part)

    def step(self, space: ListSpace | GraphSpace, sentence: int, w: np.ndarray) -> Step:
        part = self.parts[sentence]
        if part is None:
            return NO_STEP
        value, gradient = part.value_and_gradient(w)
        idx = np.flatnonzero(gradient)
        return Step(max(float(value), np.finfo(float).tiny), idx, -gradient[idx]) if idx.size else NO_STEP


def _lengths(space: ListSpace, sentence: int) -> np.ndarray | None:
    lengths = space.candidates.lengths
    if lengths is None:
        return None
    lo, hi = space.candidates.offsets[sentence], space.candidates.offsets[sentence + 1]
    return lengths[lo:hi]


def make_structured_loss(
    name: str,
    cost_scale: float | None = None,
    target: str = "oracle",
    cccp_passes: int = 0,
    reading: str = "eq7",
    truths: int = 5,
) -> StructuredLoss:
    """The structured loss called ``name`` (:data:`STRUCTURED_LOSSES`), with its default α unless given;
    ``target`` for perceptron and latent-svm, ``cccp_passes`` for ramp, ``reading`` and ``truths`` for costmargin
    (which options fit which loss is :class:`~hypertune.tuners.train_options.OnlineOptions`' check)."""
    classes = {
        "perceptron": PerceptronLoss,
        "latent-svm": LatentSvmLoss,
        "ramp": RampLoss,
        "softmax-margin": SoftmaxMarginLoss,
        "costmargin": CostMarginLoss,
    }
    if name not in classes:
        raise UsageError(f"unknown structured loss {name!r}; choose one of {', '.join(STRUCTURED_LOSSES)}")
    options: dict[str, object] = {} if cost_scale is None else {"cost_scale": cost_scale}
    if name in ("perceptron", "latent-svm"):
        options["target"] = target
    if name == "ramp":
        options["cccp_passes"] = cccp_passes
    if name == "costmargin":
        options["reading"], options["truths"] = reading, truths
    return classes[name](**options)


# ---------------------------------------------------------------------- optimizers
@dataclass
class OnlineOptimizer:
    """An online update rule over dense weights ``w`` (modified in place). ``learning_rate`` η, ``l2`` λ₂ (the
    gradient ``λ₂·w`` is added at every step), ``l1`` λ₁ by ``l1_method``, ``C`` and ``r`` for PA and AROW."""

    name: str
    learning_rate: float = 1.0
    l2: float = 0.0
    l1: float = 0.0
    l1_method: str = "fobos"
    C: float = 0.01
    r: float = 1.0
    delta: float = 1e-8

    def start(self, width: int) -> None:
        self.sigma = np.ones(width)  # AROW's diagonal confidence
        self.squares = np.zeros(width)  # AdaGrad's sum of squared gradients
        self.penalty = 0.0  # cumulative L1: the total penalty every weight could have received
        self.received = np.zeros(width)  # cumulative L1: the penalty each weight did receive

    def apply(self, w: np.ndarray, step: Step) -> bool:
        """Update ``w`` by one (minibatch) step; returns whether the weights moved."""
        idx, diff = step.idx, step.diff
        moved = step.loss > 0.0 and idx.size > 0
        if self.name == "perceptron":
            if moved:
                w[idx] += self.learning_rate * diff
        elif self.name == "pa":
            norm = float(diff @ diff)
            if moved and norm > 0.0:
                w[idx] += pa_step_size(step.loss, norm, self.C) * diff
        elif self.name == "arow":
            moved = moved and self._arow(w, step)
        else:
            if self.l2 > 0.0:
                w *= 1.0 - self.learning_rate * self.l2
            if moved:
                if self.name == "adagrad":
                    self.squares[idx] += diff * diff
                    w[idx] += self.learning_rate * diff / (self.delta + np.sqrt(self.squares[idx]))
                else:
                    w[idx] += self.learning_rate * diff
            if self.l1 > 0.0:
                self._l1(w, idx)
        return moved

    def _arow(self, w: np.ndarray, step: Step) -> bool:
        """AROW (Crammer et al. 2009) with a diagonal Σ, the form Chiang 2012 uses for MT:
        ``β = 1/(dᵀΣd + r)``, ``w += loss·β·Σd``, ``Σ −= β(Σd)²``."""
        idx, diff = step.idx, step.diff
        sigma_d = self.sigma[idx] * diff
        confidence = float(diff @ sigma_d)
        beta = 1.0 / (confidence + self.r)
        w[idx] += step.loss * beta * sigma_d
        self.sigma[idx] -= beta * sigma_d * sigma_d
        return True

    def _l1(self, w: np.ndarray, touched: np.ndarray) -> None:
        if self.l1_method == "fobos":  # Duchi & Singer 2009: soft-threshold after the gradient step
            rate = self.learning_rate * self.l1
            shrink: float | np.ndarray
            if self.name == "adagrad":  # per coordinate, at AdaGrad's rate; features never seen are left alone
                seen = self.squares > 0.0
                shrink = np.where(seen, rate / (self.delta + np.sqrt(self.squares)), 0.0)
            else:
                shrink = rate
            w[:] = np.sign(w) * np.maximum(0.0, np.abs(w) - shrink)
            return
        # Tsuruoka et al. 2009, figure 2: each touched weight is clipped towards 0 by the penalty it is owed
        self.penalty += self.learning_rate * self.l1
        z = w[touched]
        owed_down = self.penalty + self.received[touched]  # for a positive weight (received is <= 0 there)
        owed_up = self.penalty - self.received[touched]
        new = np.where(z > 0.0, np.maximum(0.0, z - owed_down), np.where(z < 0.0, np.minimum(0.0, z + owed_up), z))
        self.received[touched] += new - z
        w[touched] = new


def combine(steps: list[Step], width: int, mean: bool) -> Step:
    """A minibatch's steps as one: the directions summed (``mean``: averaged), the losses summed."""
    moving = [s for s in steps if s.loss > 0.0 and s.idx.size]
    if not moving:
        return NO_STEP
    if len(moving) == 1 and not mean:
        return moving[0]
    total = np.zeros(width)
    for s in moving:
        np.add.at(total, s.idx, s.diff)
    if mean:
        total /= len(steps)
    idx = np.flatnonzero(total)
    return Step(sum(s.loss for s in moving), idx, total[idx])


# ---------------------------------------------------------------------- the tuner
@dataclass(frozen=True)
class OnlineEpoch(Iteration):
    """One epoch: the metric of the averaged weights' model-best translations, updates and mean loss."""

    updates: int = 0
    average_loss: float = 0.0


@dataclass
class OnlineResult(TuningResult):
    """:class:`TuningResult` plus the loss, the optimizer, the best epoch and the share of nonzero weights."""

    loss: str = ""
    optimizer: str = ""
    best_epoch: int = 0
    nonzero: int = 0
    features: int = 0


class OnlineTrainer:
    """An online tuner: ``loss`` (:data:`STRUCTURED_LOSSES`, or a batch loss of :data:`LOSSES` followed
    sentence by sentence) × ``optimizer`` (:data:`ONLINE_OPTIMIZERS`; ``"auto"``: the loss's own). The options are
    an :class:`~hypertune.tuners.train_options.OnlineOptions` (or its fields as keyword arguments): ``epochs``
    passes in a seeded order (``shuffle=False``: corpus order), ``minibatch`` sentences per update
    (perceptron, sgd and adagrad), weights averaged over every update (``average``; by default unless ``l1`` is
    set, since averaging undoes L1's zeros) and the best epoch's kept.
    ``learning_rate``, ``l2``: ``None`` for the loss's defaults (docs/tuners.md). ``kbest``: derivations per
    lattice/forest for the losses that need lists. ``prune_density``: lattices and forests are searched pruned to
    this many edges per reference word (max-marginal rank under the initial weights), as batch MIRA's
    (``None``: unpruned). ``normalize``: ``l1`` (default) or ``none``, how the weights are finished
    (:func:`~hypertune.tuners.finishing.finish_weights`; when no epoch beats the start weights, they are the
    result: ``kept_start``, ``best_epoch`` 0). ``select``: over shards, mix only the
    ``select`` features of largest l2 norm across shards (0: all; see :meth:`fit_mixed`). ``progress``: called
    after every epoch; ``checkpoint``: with the best epoch's weights (as written) and BLEU whenever they change
    (:data:`~hypertune.tuners.base.Checkpoint`); a deferred signal stops the run between updates or epochs."""

    def __init__(
        self,
        options: OnlineOptions | None = None,
        *,
        progress: Callable[[OnlineEpoch], None] | None = None,
        checkpoint: Checkpoint | None = None,
        **fields: Any,
    ) -> None:
        self.options = OnlineOptions.make(options, fields)
        self.progress = progress
        self.checkpoint = checkpoint

    # ------------------------------------------------------------------ fit
    def fit(self, tuning_set: TuningSet | Shards, init: Weights) -> OnlineResult:
        """Train from ``init``: sentence by sentence in a seeded order, ``epochs`` times. The run is written
        once, as :meth:`fit_mixed` over shards; a tuning set is one shard, whose mixture is its own weights."""
        if isinstance(tuning_set, TuningSet):
            tuning_set = LocalShards(tuning_set, 1)  # one shard: mixing is the plain online run
        return self.fit_mixed(tuning_set, init)

    def _result(
        self, init: Weights, space: Any, metric: Any, run: Mixed, loss_name: str, started: float
    ) -> OnlineResult:
        """The best epoch's weights finished over ``init`` (:func:`~hypertune.tuners.finishing.finish_weights`) and
        scored as written, or the start weights when they score no worse (:meth:`Mixed.keep_start`), and the
        run's summary."""
        width = len(space)
        weights = self._written(init, space, run.best)
        score_after = run.score(weights.vector(space, width))
        kept = run.keep_start(run.score_before, score_after, metric.higher_is_better)
        if kept:
            score_after = run.score_before
            weights = self._written(init, space, run.start)
        return OnlineResult(
            weights=weights,
            score_before=run.score_before,
            score_after=score_after,
            history=run.history,
            seconds=time.perf_counter() - started,
            seed=self.options.seed,
            metric=metric_label(metric),
            higher_is_better=metric.higher_is_better,
            loss=loss_name,
            optimizer=self.options.chosen_optimizer,
            best_epoch=run.best_epoch,
            nonzero=int(np.count_nonzero(run.best)),
            features=width,
            kept_start=kept,
        )

    def _written(self, init: Weights, space: Any, w: np.ndarray) -> Weights:
        """Weights ``w`` as the result writes them (:func:`~hypertune.tuners.finishing.finish_weights`)."""
        return finish_weights(init, space, w, self.options.normalize)

    def fit_mixed(self, shards: Shards, init: Weights) -> OnlineResult:
        """The online tuner by iterative parameter mixing (McDonald et al. 2010), the loop of
        :func:`~hypertune.tuners.mixing.mix` (batch MIRA's too): every epoch, each shard runs one epoch of the loss and
        optimizer over its own sentences (its own seeded order ``[seed, shard]``, its optimizer's state --
        AdaGrad's sums, AROW's confidences, the cumulative L1 penalty -- and its running average, kept on the
        shard) from the mixed weights; the mixed weights become the mean of the shards' weights in shard
        order. A shard carries the whole weight vector, so a feature it never sees gets no update there
        ("missing feature = 0" for the updates). With ``select = k`` only the ``k`` features of largest l2 norm
        across the shards' weights are mixed, the others set to 0 (Simianer et al. 2012). The epoch's
        evaluated weights are the mixture, selected the same way, of the shards' averaged (or, without
        averaging, last) weights; the best epoch's are returned. The same seed and number of shards give the
        same weights, in one process (:class:`~hypertune.tuners.shards.LocalShards`) or on a cluster; one
        shard gives :meth:`fit`'s run on the whole set, bit for bit."""
        started = time.perf_counter()
        options = self.options
        space = shards.feature_space
        start = init.vector(space, len(space)).astype(np.float64)

        def entry(epoch: int, score: float, seconds: float, updates: int, loss: float) -> OnlineEpoch:
            return OnlineEpoch(epoch, score, seconds, updates, loss / max(shards.sentences, 1))

        checkpoint = self.checkpoint

        def told(w: np.ndarray, score: float) -> None:  # the checkpoint hears of the weights as written
            if checkpoint is not None:
                checkpoint(self._written(init, space, w), score)

        mixing = Mixing(online_shard_prepare, online_shard_epoch, online_shard_stats, (options, start), entry,
                        options.epochs, options.select)  # fmt: skip
        run = mix(shards, mixing, start, self.progress, None if checkpoint is None else told)
        return self._result(init, space, shards.metric, run, run.prepared[0], started)


# ---------------------------------------------------------------------- a run's pieces, from its options
def online_loss(options: OnlineOptions, seed: int | list[int]) -> StructuredLoss:
    """The run's loss: the structured loss, or the batch loss one sentence at a time (its sampling seeded by
    ``seed``, the shard's)."""
    if options.loss in STRUCTURED_LOSSES:
        return make_structured_loss(
            options.loss, options.cost_scale, options.target, options.cccp_passes, options.reading, options.truths
        )
    return BatchLossAdapter(options.loss, options.top_k, options.sample, options.acceptance, seed)


def search_space(
    options: OnlineOptions, tuning_set: TuningSet, start: np.ndarray, loss: StructuredLoss
) -> ListSpace | GraphSpace:
    """The search space the loss runs on: exact lists for k-best input or list losses, else the graphs (pruned
    to ``options.prune_density`` edges per reference word under ``start``, as batch MIRA's)."""
    if tuning_set.is_kbest or loss.needs_lists:
        return ListSpace(kbest_candidates(tuning_set, start, options.kbest, options.smooth, loss.name))
    metric = tuning_set.metric
    order = getattr(getattr(metric, "bleu", metric), "max_order", 4)
    if options.prune_density:  # the search space batch MIRA searches (kbmira's --hg-prune)
        start_weights = Weights.from_vector(tuning_set.feature_space, start)
        tuning_set = prune_tuning_set(tuning_set, start_weights, options.prune_density)
    return GraphSpace(tuning_set, order, smoothed_gain(options.smooth))


def online_optimizer(options: OnlineOptions, loss: StructuredLoss, sentences: int) -> OnlineOptimizer:
    """The run's optimizer, with the loss's own learning rate and L2 unless the options set them."""
    chosen = options.chosen_optimizer
    rate = options.learning_rate
    if rate is None:  # the loss's own rate for SGD; AdaGrad adapts its rate and starts from 0.1
        rate = {"perceptron": 1.0, "adagrad": 0.1}.get(chosen, loss.default_rate)
    l2 = loss.default_l2 if options.l2 is None else options.l2
    if options.l2 is None and options.loss == "ramp":
        l2 = 1.0 / max(sentences, 1)
    return OnlineOptimizer(chosen, rate, l2, float(options.l1), options.l1_method, options.C, options.r)


# ---------------------------------------------------------------------- the online tuners' shard functions
class _OnlineShard:
    """A shard's online run between epochs: its loss and search space, optimizer state, weights, running sum
    of the weights after every step, and order generator (seeded ``[seed, shard]``; one shard: ``seed``, as
    the whole-set run)."""

    def __init__(self, shard: Shard, options: OnlineOptions, w: np.ndarray) -> None:
        seed = options.seed if shard.count == 1 else [options.seed, shard.index]
        self.options = options
        start = w.copy()
        self.loss = online_loss(options, seed)  # a batch loss's own sampling draws from the shard's seed
        self.space = search_space(options, shard.tuning_set, start, self.loss)
        self.loss.start(self.space, start)
        self.optimizer = online_optimizer(options, self.loss, self.space.sentences)
        self.optimizer.start(w.size)
        self.model_best = ModelBest(shard.tuning_set)
        self.rng = np.random.default_rng(seed)
        self.w = w.copy()
        self.total, self.count = w.copy(), 1.0
        self.mean = options.chosen_optimizer in ("sgd", "adagrad")

    def epoch(self, mixed: np.ndarray, epoch: int) -> tuple[np.ndarray, np.ndarray, int, float]:
        options, space, loss, w = self.options, self.space, self.loss, self.w
        w[:] = mixed
        order = self.rng.permutation(space.sentences) if options.shuffle else np.arange(space.sentences)
        loss.begin_epoch(space, w, epoch)
        updates, losses = 0, 0.0
        for first in range(0, order.size, options.minibatch):
            interrupts.check()  # a safe point between updates (in this process; a worker has no signals to defer)
            steps = [loss.step(space, int(s), w) for s in order[first : first + options.minibatch]]
            losses += sum(s.loss for s in steps if s.idx.size)
            if self.optimizer.apply(w, combine(steps, w.size, self.mean)):
                updates += 1
            self.total += w
            self.count += 1.0
        current = self.total / self.count if options.averaged else w.copy()
        return w.copy(), current, updates, losses


def online_shard_prepare(shard: Shard, key: str, options: OnlineOptions, w: np.ndarray) -> str:
    """Set up the shard's online run from the start weights ``w``; returns the loss's name."""
    state = shard.state[key] = _OnlineShard(shard, options, w)
    return state.loss.name


def online_shard_epoch(
    shard: Shard, key: str, mixed: np.ndarray, epoch: int
) -> tuple[np.ndarray, np.ndarray, int, float]:
    """One epoch of the shard from the mixed weights: its weights, its averaged weights, updates, summed loss."""
    return shard.state[key].epoch(mixed, epoch)


def online_shard_stats(shard: Shard, key: str, w: np.ndarray) -> np.ndarray:
    """The shard's summed statistics of its model-best translations under ``w``."""
    return shard.state[key].model_best.stats(w).sum(axis=0)
