"""Losses over k-best candidate sets: PRO, Plackett-Luce, pairwise hinge, MSE and softmax (see
docs/tuners.md).

A loss sees :class:`Candidates` -- every sentence's hypotheses (feature rows, ``offsets`` per sentence)
with a sentence gain each -- and returns its value and gradient with respect to the weights
(:meth:`Loss.value_and_gradient`). Anything random (PRO's pairs, PL's resampling, PL's tie order) is drawn
once by :meth:`Loss.prepare` from a seeded generator, so a loss is a fixed smooth (or piecewise smooth)
function during optimization. The optimizer (:mod:`hypertune.tuners.train`) adds the L2 term.

Sources: PRO, Hopkins & May 2011 (sampling Γ = 5000, threshold α = 0.05, keep Ξ = 50; logistic loss, both
orientations, no bias, as Moses's ``pro``); the Plackett-Luce loss of Xia, Zhai & Wang 2019 (eq. 1-4: the
top-k likelihood, their PL(k), with the resampling of their section 3); pairwise hinge, the ranking SVM of
Joachims 2002 on PRO's pairs; MSE, regression of the model score on the gain within each list;
softmax/CLL over the oracle set (survey eq. 38).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from hypertune.choices import ACCEPTANCES, LOSSES
from hypertune.errors import UsageError


@dataclass(frozen=True)
class Candidates:
    """Every sentence's k-best hypotheses: feature rows ``features`` (H, F), sentence ``s`` owning rows
    ``offsets[s]:offsets[s+1]``, and one sentence gain per row (BLEU+1 or another smoothed BLEU)."""

    features: sp.csr_matrix
    offsets: np.ndarray
    gains: np.ndarray
    lengths: np.ndarray | None = None  # hypothesis lengths in words (cdec's PRO sampler uses them)

    @property
    def sentences(self) -> int:
        return int(self.offsets.size - 1)

    def owner(self) -> np.ndarray:
        return np.repeat(np.arange(self.sentences), np.diff(self.offsets))


class Loss:
    """A loss over candidate sets: ``prepare`` once (seeded), then ``value_and_gradient(w)`` many times."""

    name = ""
    default_l2 = 0.1

    def prepare(self, candidates: Candidates, w: np.ndarray, rng: np.random.Generator) -> None:
        self.candidates = candidates

    def value_and_gradient(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        raise NotImplementedError


# ---------------------------------------------------------------------- pairwise: PRO and hinge


def sample_pairs(
    candidates: Candidates,
    rng: np.random.Generator,
    samples: int = 5000,
    threshold: float = 0.05,
    keep: int = 50,
    acceptance: str = "threshold",
) -> tuple[np.ndarray, np.ndarray]:
    """PRO's pairs, per sentence, the ``keep`` accepted pairs with the largest gain difference.

    ``threshold`` (Hopkins & May 2011, section 3.1; Moses ``pro``): ``samples`` pairs drawn uniformly
    with replacement, accepted when their gains differ by more than ``threshold``.
    ``sigmoid`` (cdec's ``mr_pro_map``): ``samples`` pairs of distinct hypotheses whose lengths differ by
    at most two standard deviations of the list's length differences (a variation on Nakov et al. 2012;
    needs ``candidates.lengths``), those with a gain difference, each accepted with probability
    ``σ(d̄ + |Δg|)``, ``d̄`` the mean difference of the drawn pairs.

    Returns the rows of the better and the worse hypothesis of every pair."""
    if acceptance not in ACCEPTANCES:
        raise UsageError(f"unknown PRO acceptance {acceptance!r}; choose one of {', '.join(ACCEPTANCES)}")
    lengths = candidates.lengths
    if acceptance == "sigmoid" and lengths is None:
        raise UsageError("cdec's sigmoid acceptance needs the hypotheses' lengths")
    better, worse = [], []
    sizes = np.diff(candidates.offsets)
    for s in np.flatnonzero(sizes > 1):
        first, size = candidates.offsets[s], sizes[s]
        if acceptance == "threshold":
            i = rng.integers(0, size, samples) + first
            j = rng.integers(0, size, samples) + first
            difference = candidates.gains[i] - candidates.gains[j]
            chosen = np.flatnonzero(np.abs(difference) > threshold)
        else:
            assert lengths is not None  # checked above for sigmoid acceptance
            i, j = _cdec_draws(lengths[first : first + size], samples, rng)
            i, j = i + first, j + first
            difference = candidates.gains[i] - candidates.gains[j]
            drawn = np.flatnonzero(difference != 0)
            if not drawn.size:
                continue
            magnitude = np.abs(difference[drawn])
            chosen = drawn[rng.random(drawn.size) < _sigmoid(magnitude.mean() + magnitude)]
        if chosen.size > keep:
            order = np.argsort(-np.abs(difference[chosen]), kind="stable")
            chosen = chosen[order[:keep]]
        up = difference[chosen] > 0
        better.append(np.where(up, i[chosen], j[chosen]))
        worse.append(np.where(up, j[chosen], i[chosen]))
    if not better:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(better), np.concatenate(worse)


def _cdec_draws(lengths: np.ndarray, samples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``samples`` pairs of distinct list positions whose length difference is within two standard
    deviations, the deviation being the root mean square length difference of 5000 distinct pairs, at least 2
    (cdec's ``LengthDifferenceStdDev``). Pairs are drawn in order and rejected ones redrawn, as cdec does."""
    a, b = _distinct_pairs(lengths.size, 5000, rng)
    spread = max(float(np.sqrt(np.mean((lengths[a] - lengths[b]) ** 2.0))), 2.0)
    kept_i, kept_j, have = [], [], 0
    while have < samples:
        i, j = _distinct_pairs(lengths.size, samples - have, rng)
        near = np.abs(lengths[i] - lengths[j]) / spread <= 2.0
        kept_i.append(i[near])
        kept_j.append(j[near])
        have += int(near.sum())
    return np.concatenate(kept_i), np.concatenate(kept_j)


def _distinct_pairs(size: int, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``count`` uniformly drawn pairs ``(i, j)``, ``i ≠ j``, of positions ``0..size-1`` (``size > 1``)."""
    i = rng.integers(0, size, count)
    j = (i + rng.integers(1, size, count)) % size  # uniform over the other positions
    return i, j


class _Pairwise(Loss):
    """A loss on feature differences ``Δ = h(better) − h(worse)`` of PRO's sampled pairs."""

    def __init__(
        self, samples: int = 5000, threshold: float = 0.05, keep: int = 50, acceptance: str = "threshold"
    ) -> None:
        if samples < 1 or keep < 1 or threshold < 0:
            raise UsageError("PRO's sampling needs samples >= 1, keep >= 1 and a threshold >= 0")
        if acceptance not in ACCEPTANCES:
            raise UsageError(f"unknown PRO acceptance {acceptance!r}; choose one of {', '.join(ACCEPTANCES)}")
        self.samples, self.threshold, self.keep, self.acceptance = samples, threshold, keep, acceptance

    def prepare(self, candidates: Candidates, w: np.ndarray, rng: np.random.Generator) -> None:
        super().prepare(candidates, w, rng)
        better, worse = sample_pairs(candidates, rng, self.samples, self.threshold, self.keep, self.acceptance)
        if not better.size:
            raise UsageError("no pair of hypotheses was accepted (none differs enough in gain): nothing to learn")
        self.pairs = (better, worse)
        self.differences = (candidates.features[better] - candidates.features[worse]).tocsr()


class ProLoss(_Pairwise):
    """PRO: logistic loss on both orientations of every pair, no bias: ``2 Σ log(1 + exp(−w·Δ))``
    (Moses's ``pro`` feeds the classifier ``(Δ, +1)`` and ``(−Δ, −1)``, which cost the same)."""

    name = "pro"

    def value_and_gradient(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        margin = self.differences @ w
        value = 2.0 * float(np.logaddexp(0.0, -margin).sum())
        weight = -2.0 * _sigmoid(-margin)  # d/dm of 2 log(1 + exp(-m))
        return value, self.differences.T @ weight


class HingeLoss(_Pairwise):
    """Pairwise ranking hinge on PRO's pairs: ``Σ max(0, 1 − w·Δ)`` (a subgradient at the kink)."""

    name = "ranking"

    def value_and_gradient(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        margin = self.differences @ w
        active = margin < 1.0
        return float((1.0 - margin[active]).sum()), -(self.differences.T @ active.astype(np.float64))


# ---------------------------------------------------------------------- listwise: Plackett-Luce
@dataclass
class _Lists:
    """Each sentence's kept candidates best-first by gain, as a padded (S, m) index matrix and its mask."""

    rows: np.ndarray
    mask: np.ndarray = field(repr=False)


class PlackettLuceLoss(Loss):
    """Plackett-Luce (Xia, Zhai & Wang 2019, eq. 1-4): the negative top-k Plackett-Luce log-likelihood of each
    list's ranking by gain, ``−Σᵢ Σ_{j≤k} [s_{π(j)} − log Σ_{t≥j} exp(s_{π(t)})]``, ``s = w·h``. Ties in gain are
    ordered at random (seeded). With ``sample = m`` a list keeps its m/3 best and m/3 worst by gain and
    draws the rest without replacement from ``p(e) ∝ exp(w·h(e))`` under the initial weights."""

    name = "pl"
    default_l2 = 1.0

    def __init__(self, top_k: int = 5, sample: int | None = 30) -> None:
        if top_k < 1 or (sample is not None and sample < 2):
            raise UsageError("--top-k must be at least 1 and --sample at least 2")
        self.top_k, self.sample = top_k, sample
        self.name = f"pl({top_k})"

    def prepare(self, candidates: Candidates, w: np.ndarray, rng: np.random.Generator) -> None:
        super().prepare(candidates, w, rng)
        scores = candidates.features @ w
        lists = []
        for s in range(candidates.sentences):
            rows = np.arange(candidates.offsets[s], candidates.offsets[s + 1])
            rows = rows[np.lexsort((rng.random(rows.size), -candidates.gains[rows]))]  # by gain, ties at random
            if self.sample is not None and rows.size > self.sample:
                rows = _resample(rows, scores, self.sample, rng)
            lists.append(rows)
        width = max(r.size for r in lists)
        index = np.zeros((len(lists), width), dtype=np.int64)
        mask = np.zeros((len(lists), width), dtype=bool)
        for s, rows in enumerate(lists):
            index[s, : rows.size], mask[s, : rows.size] = rows, True
        self.lists = _Lists(index, mask)

    def value_and_gradient(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        index, mask = self.lists.rows, self.lists.mask
        scores = np.where(mask, (self.candidates.features @ w)[index], -np.inf)
        # suffix log-sum-exp: log Σ_{t ≥ j} exp(s_t), for every position j
        suffix = np.logaddexp.accumulate(scores[:, ::-1], axis=1)[:, ::-1]
        k = min(self.top_k, index.shape[1])
        ranked = mask[:, :k]
        weights = np.zeros(index.shape)
        with np.errstate(invalid="ignore"):  # padding: -inf - -inf, masked out
            value = -float(np.sum(np.where(ranked, scores[:, :k] - suffix[:, :k], 0.0)))
            # d/ds_t of Σ_{j≤k} log Σ_{t'≥j} exp(s_t'): Σ_{j ≤ min(t, k)} exp(s_t − suffix_j)
            for j in range(k):
                share = np.exp(scores[:, j:] - suffix[:, j : j + 1])
                weights[:, j:] += np.where(ranked[:, j : j + 1] & mask[:, j:], share, 0.0)
        weights[:, :k] -= ranked
        per_row = np.bincount(index[mask], weights[mask], minlength=self.candidates.features.shape[0])
        return value, self.candidates.features.T @ per_row


def _resample(rows: np.ndarray, scores: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """Of ``rows`` (best-first), the m/3 best, the m/3 worst and the rest drawn without replacement in
    proportion to ``exp(score)``, kept best-first."""
    third = m // 3
    head, tail, middle = rows[:third], rows[rows.size - third :], rows[third : rows.size - third]
    need = m - 2 * third
    s = scores[middle]
    p = np.exp(s - s.max())
    drawn = rng.choice(middle.size, size=min(need, middle.size), replace=False, p=p / p.sum())
    return np.concatenate((head, middle[np.sort(drawn)], tail))


# ---------------------------------------------------------------------- regression and softmax
class MseLoss(Loss):
    """Regression of the model score on the gain within each list: ``Σ_s Σ_i (w·h̃_i − g̃_i)²`` with features
    and gains centred per sentence (a list's scores matter only relative to each other; up to a factor this
    is the regression on all pairwise differences, cf. Bazrafshan et al. 2012, who regress PRO's pairs)."""

    name = "mse"

    def prepare(self, candidates: Candidates, w: np.ndarray, rng: np.random.Generator) -> None:
        super().prepare(candidates, w, rng)
        owner = candidates.owner()
        sizes = np.diff(candidates.offsets).astype(np.float64)
        averaging = sp.csr_matrix(
            (np.ones(owner.size) / sizes[owner], (owner, np.arange(owner.size))),
            shape=(candidates.sentences, owner.size),
        )
        self.centred = sp.csr_matrix(candidates.features - sp.csr_matrix(averaging @ candidates.features)[owner])
        gains = candidates.gains
        self.targets = gains - (np.bincount(owner, gains, minlength=candidates.sentences) / sizes)[owner]

    def value_and_gradient(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        residual = self.centred @ w - self.targets
        return float(residual @ residual), 2.0 * (self.centred.T @ residual)


class SoftmaxLoss(Loss):
    """Softmax / conditional log-likelihood of each list's oracle set (the hypotheses with the top gain):
    ``−Σ_s log Σ_{e ∈ O_s} p(e)``, ``p(e) ∝ exp(w·h(e))`` over the list (survey eq. 38)."""

    name = "softmax"

    def prepare(self, candidates: Candidates, w: np.ndarray, rng: np.random.Generator) -> None:
        super().prepare(candidates, w, rng)
        owner = candidates.owner()
        best = np.full(candidates.sentences, -np.inf)
        np.maximum.at(best, owner, candidates.gains)
        self.owner = owner
        self.oracle = candidates.gains >= best[owner] - 1e-12

    def value_and_gradient(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        scores = self.candidates.features @ w
        starts = self.candidates.offsets[:-1]
        everything = _segment_logsumexp(scores, starts, self.owner)
        oracle = _segment_logsumexp(np.where(self.oracle, scores, -np.inf), starts, self.owner)
        value = float(np.sum(everything - oracle))
        p_all = np.exp(scores - everything[self.owner])
        p_oracle = np.where(self.oracle, np.exp(scores - oracle[self.owner]), 0.0)
        return value, self.candidates.features.T @ (p_all - p_oracle)


def _segment_logsumexp(values: np.ndarray, starts: np.ndarray, owner: np.ndarray) -> np.ndarray:
    top = np.maximum.reduceat(values, starts)
    safe = np.where(np.isfinite(top), top, 0.0)
    return safe + np.log(np.add.reduceat(np.exp(values - safe[owner]), starts))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


def make_loss(name: str, top_k: int = 5, sample: int | None = 30, acceptance: str = "threshold") -> Loss:
    """The loss called ``name`` (:data:`LOSSES`); ``acceptance``: how PRO and ranking accept sampled pairs."""
    if name == "pro":
        return ProLoss(acceptance=acceptance)
    if name == "ranking":
        return HingeLoss(acceptance=acceptance)
    if name == "pl":
        return PlackettLuceLoss(top_k, sample)
    if name == "mse":
        return MseLoss()
    if name == "softmax":
        return SoftmaxLoss()
    raise UsageError(f"unknown loss {name!r}; choose one of {', '.join(LOSSES)}")
