"""k-best MIRA's epoch scores the previous epoch's weights in its own pass (``_kbest_epoch`` with ``evaluate``;
``mix`` with ``epoch_scoring``), and hope, fear and model-best are chosen in one pass (``select_hope_fear``).
Expected values from plain-Python brute forces: each score summed in column order, the first highest winning (a
comparison with a NaN false, as in Moses's ``>``), Moses's safe hope searching again with the model score scaled;
the mixing loop against the same toy shards run without fusion, and by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hypertune import interrupts
from hypertune.metrics.gains import PLUS_ONE, GainRule
from hypertune.tuners.base import Iteration
from hypertune.tuners.hope_fear import BLEU_RATIO, select_hope_fear
from hypertune.tuners.mira import AveragedWeights, KbestRows, _distinct_stats, _kbest_epoch
from hypertune.tuners.mixing import Mixing, mix
from hypertune.tuners.shards import Shard

EMPTY = np.zeros(0, np.int64)


def _first_highest(values: list[float]) -> int:
    best = 0
    for i in range(1, len(values)):
        if values[i] > values[best]:
            best = i
    return best


def _hope_fear_by_hand(scores: list[float], gains: list[float], safe_hope: bool) -> tuple[int, int, int]:
    hope = _first_highest([x + g for x, g in zip(scores, gains, strict=True)])
    if safe_hope and abs(scores[hope]) > 1e-8 and abs(gains[hope] * BLEU_RATIO) / abs(scores[hope]) < 1.0:
        scale = abs(gains[hope] * BLEU_RATIO) / abs(scores[hope])
        hope = _first_highest([scale * x + g for x, g in zip(scores, gains, strict=True)])
    fear = _first_highest([x - g for x, g in zip(scores, gains, strict=True)])
    return hope, fear, _first_highest(scores)


def test_one_pass_selection_equals_the_three_searches():
    """Ties, zeros of both signs, NaN and infinities among few values, and lists whose model score outweighs the
    gain (safe hope scales it down)."""
    rng = np.random.default_rng(11)
    few = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf, 2.0])
    for trial in range(3000):
        n = int(rng.integers(1, 9))
        if trial % 3 == 0:
            scores, gains = rng.choice(few, n), rng.choice(few, n)
        elif trial % 3 == 1:
            scores, gains = rng.integers(-2, 3, n) * 1.0, rng.integers(0, 3, n) * 0.5
        else:
            scores, gains = rng.normal(0.0, 100.0, n), rng.random(n)
        for safe_hope in (False, True):
            expected = _hope_fear_by_hand(scores.tolist(), gains.tolist(), safe_hope)
            assert select_hope_fear(scores, gains, n, safe_hope) == expected


def _model_best_stats(features: np.ndarray, stats: np.ndarray, offsets: np.ndarray, v: np.ndarray) -> list[float]:
    total = [0.0] * stats.shape[1]
    for s in range(offsets.size - 1):
        scores = []
        for r in range(int(offsets[s]), int(offsets[s + 1])):
            x = 0.0
            for j in range(features.shape[1]):
                x += float(features[r, j]) * float(v[j])
            scores.append(x)
        if scores:
            r = int(offsets[s]) + _first_highest(scores)
            total = [t + float(x) for t, x in zip(total, stats[r], strict=True)]
    return total


def _epoch(rows: KbestRows, w: np.ndarray, evaluate: np.ndarray) -> tuple[np.ndarray, int, float, np.ndarray]:
    distinct = _distinct_stats(rows)
    weights = AveragedWeights(w.copy(), w.copy(), np.zeros(w.size), np.zeros(1))
    group_gains = np.ascontiguousarray(distinct.group_stats[:, 0])  # a gain without state: the first column
    sentences = rows.offsets.size - 1
    order = np.arange(sentences, dtype=np.int64)[::-1].copy()
    rule = GainRule(PLUS_ONE, 1, np.zeros(1), np.zeros(rows.stats.shape[1]))
    chosen = np.empty(sentences if evaluate.size else 0, np.int64)
    updates, loss, total = _kbest_epoch(order, rows, distinct, weights, rule, group_gains, 0.01, 1.0, False, False,
                                        evaluate, chosen)  # fmt: skip
    return weights.w, updates, loss, total


@pytest.mark.parametrize("sparse", [False, True])
def test_an_epoch_scores_other_weights_as_the_evaluation_and_trains_as_before(sparse):
    """Lists of 0-9 rows (an empty one included; 4 rows at a time and the rest), integer features so that rows tie
    exactly (the first wins), one NaN feature; dense rows and CSR rows. The epoch's training is the same with and
    without the evaluation, and its summed statistics are the brute force's for the evaluated weights."""
    rng = np.random.default_rng(13)
    counts = np.array([7, 0, 9, 1, 4, 5, 8, 3])
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    features = rng.integers(-2, 3, (int(offsets[-1]), 5)).astype(np.float64)
    features[10, 2] = np.nan
    stats = np.column_stack([rng.integers(0, 5, features.shape[0]), np.arange(features.shape[0])]).astype(float)
    if sparse:
        indptr = np.arange(0, features.size + 1, features.shape[1], dtype=np.int64)
        indices = np.tile(np.arange(features.shape[1], dtype=np.int64), features.shape[0])
        rows = KbestRows(offsets, indptr, indices, features.reshape(-1).copy(), np.zeros(0), stats)
    else:
        rows = KbestRows(offsets, EMPTY, EMPTY, np.zeros(0), features.reshape(-1).copy(), stats)
    w = np.array([0.5, -1.0, 0.0, 1.0, 2.0])
    plain_w, plain_updates, plain_loss, nothing = _epoch(rows, w, np.zeros(0))
    assert nothing.tolist() == [0.0, 0.0]
    for v in (np.array([1.0, 0.0, 0.0, 0.0, 0.0]), np.array([1.0, 2.0, 0.0, -1.0, 0.5]), rng.normal(size=5)):
        fused_w, updates, loss, total = _epoch(rows, w, v)
        assert fused_w.tobytes() == plain_w.tobytes() and (updates, loss) == (plain_updates, plain_loss)
        assert total.tolist() == _model_best_stats(features, stats, offsets, v)


# ---------------------------------------------------------------------- the mixing loop, fused


def prepare(shard: Shard, key: str, start: np.ndarray) -> int:
    shard.state[key] = []
    return shard.index


def epoch(shard: Shard, key: str, mixed: np.ndarray, epoch: int) -> tuple[np.ndarray, np.ndarray, int, float]:
    w = mixed + np.array([1.0 + shard.index, -1.0])  # mixture: + (1.5, -1) an epoch
    return w, w * (3.0 - epoch), 1, 0.5  # averaged weights: scored by their first entry (below)


def stats(shard: Shard, key: str, w: np.ndarray) -> np.ndarray:
    return np.array([w[0] / 2.0])


def epoch_scoring(shard: Shard, key: str, mixed: np.ndarray, number: int, v: np.ndarray):
    shard.state[key].append(number)
    return epoch(shard, key, mixed, number), stats(shard, key, v)


class Score:
    higher_is_better = True

    def score(self, total: np.ndarray) -> float:
        return float(total[0])


class TwoShards:
    def __init__(self, stop_at: int = 0) -> None:
        self.shards = [Shard(k, 2, 2 * k, None) for k in range(2)]  # type: ignore[arg-type]
        self.metric, self.sentences, self.count, self.stop_at, self.calls = Score(), 4, 2, stop_at, 0

    def map(self, function, *args):
        if function in (epoch, epoch_scoring):
            self.calls += 1
            if self.calls == self.stop_at:  # a signal, seen at a safe point inside this epoch
                raise interrupts.Interrupted()
        return [function(shard, *args) for shard in self.shards]


def entry(epoch: int, score: float, seconds: float, updates: int, loss: float) -> Iteration:
    assert (updates, loss) == (2, 1.0)
    return Iteration(epoch, score, seconds)


def test_fused_scoring_gives_the_unfused_run_one_epoch_later():
    """Start (0, 0); epoch e's mixture is (1.5 e, -e) and its averaged weights that times 3 - e, scored by their
    first entry: 3, 3, 0 (epochs 1-3). Epochs 2 and 3 score the epoch before them; epoch 3's is scored after it."""
    start = np.zeros(2)
    runs, progress, told = [], [], []
    for scoring in (None, epoch_scoring):
        shards = TwoShards()
        heard: list[Iteration] = []
        scores: list[float] = []
        runs.append(mix(shards, Mixing(prepare, epoch, stats, (start,), entry, 3, 0, scoring), start, heard.append,
                        lambda w, score, scores=scores: scores.append(score)))  # fmt: skip
        progress.append([(e.iteration, e.score) for e in heard])
        told.append(scores)
    plain, fused = runs
    assert [e.score for e in fused.history] == [e.score for e in plain.history] == [3.0, 3.0, 0.0]
    assert progress[0] == progress[1] == [(1, 3.0), (2, 3.0), (3, 0.0)]
    assert fused.best_epoch == plain.best_epoch == 1 and fused.best.tolist() == plain.best.tolist() == [3.0, -2.0]
    assert told == [[3.0], [3.0]]
    assert [shard.state[k] for shard in shards.shards for k in shard.state] == [[2, 3], [2, 3]]
    # the timing says where the evaluations ran: epochs 1 and 2's inside epochs 2 and 3, the others on their own
    assert (plain.evaluations_in_train, fused.evaluations_in_train) == (0, 2)
    assert set(fused.timing) == {"setup", "train", "evaluate"}  # seconds only


def test_an_interrupted_fused_run_scores_the_epoch_it_trained():
    """A signal inside epoch 3: epoch 2 (which scored epoch 1) is scored on its own, then the run stops."""
    start = np.zeros(2)
    shards = TwoShards(stop_at=3)
    records: list[Iteration] = []
    with pytest.raises(interrupts.Interrupted):
        mix(shards, Mixing(prepare, epoch, stats, (start,), entry, 3, 0, epoch_scoring), start, records.append)
    assert [(e.iteration, e.score) for e in records] == [(1, 3.0), (2, 3.0)]
    assert not math.isnan(records[-1].seconds)


class FailingShards(TwoShards):
    """Shards whose third epoch call fails (a worker lost, a full disk): not an interruption."""

    def map(self, function, *args):
        if function in (epoch, epoch_scoring):
            self.calls += 1
            if self.calls == 3:
                raise RuntimeError("worker lost")
        return [function(shard, *args) for shard in self.shards]


@pytest.mark.parametrize("remote", [False, True], ids=["local", "remote"])
def test_a_failing_epoch_keeps_the_epoch_before_it_as_the_plain_loop_does(remote):
    """Epoch 3 fails: epochs 1 and 2 are recorded and checkpointed, as without fused scoring; remote shards
    (a cluster's, which a failure may take with it) are not fused at all."""
    start = np.zeros(2)
    outcomes = []
    for scoring in (None, epoch_scoring):
        shards = FailingShards()
        shards.remote = remote  # type: ignore[attr-defined]
        records: list[Iteration] = []
        told: list[float] = []
        with pytest.raises(RuntimeError, match="worker lost"):
            mix(shards, Mixing(prepare, epoch, stats, (start,), entry, 3, 0, scoring), start, records.append,
                lambda w, score, told=told: told.append(score))  # fmt: skip
        calls = [number for shard in shards.shards for k in shard.state for number in shard.state[k]]
        outcomes.append(([(e.iteration, e.score) for e in records], told, calls))
    assert outcomes[0][:2] == outcomes[1][:2] == ([(1, 3.0), (2, 3.0)], [3.0])
    assert bool(outcomes[1][2]) is not remote  # fused scoring ran on the local shards only
