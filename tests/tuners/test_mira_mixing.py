"""The parameter-mixing driver batch MIRA and the online tuners share (hypertune/tuners/mixing.py), on two toy
shards whose epochs return fixed weights: the mixture is the mean in shard order, the best epoch is chosen by the
metric's direction, the checkpoint hears only of weights better than the start, and a start kept after all is
told to it. Expected values worked by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from hypertune.tuners.base import Iteration
from hypertune.tuners.mixing import Mixing, mix
from hypertune.tuners.shards import Shard

#: Shard k's first weight after epoch e (from 1): the mixtures' first weights are (1+3)/2 = 2, (3+5)/2 = 4, (2+0)/2 = 1.
FIRST = {0: (1.0, 3.0, 2.0), 1: (3.0, 5.0, 0.0)}


def prepare(shard: Shard, key: str, start: np.ndarray) -> int:
    shard.state[key] = start.copy()
    return 10 * shard.index


def epoch(shard: Shard, key: str, mixed: np.ndarray, epoch: int) -> tuple[np.ndarray, np.ndarray, int, float]:
    w = np.array([FIRST[shard.index][epoch - 1], mixed[1] + 1.0])
    return w, w, shard.index, 0.25  # updates 0 and 1, losses 0.25 each


def stats(shard: Shard, key: str, w: np.ndarray) -> np.ndarray:
    return np.array([w[0] / 2.0])  # two shards: the corpus score is the first weight


class Score:
    def __init__(self, higher_is_better: bool) -> None:
        self.higher_is_better = higher_is_better

    def score(self, total: np.ndarray) -> float:
        return float(total[0])


class TwoShards:
    def __init__(self, higher_is_better: bool) -> None:
        self.shards = [Shard(k, 2, 2 * k, None) for k in range(2)]  # type: ignore[arg-type]
        self.metric, self.sentences, self.count = Score(higher_is_better), 4, 2

    def map(self, function, *args):
        return [function(shard, *args) for shard in self.shards]


def entry(epoch: int, score: float, seconds: float, updates: int, loss: float) -> Iteration:
    assert (updates, loss) == (1, 0.5)  # summed over the shards
    return Iteration(epoch, score, seconds)


@pytest.mark.parametrize(("higher", "best_epoch", "told"), [(True, 2, [2.0, 4.0]), (False, 3, [1.0])])
def test_the_loop_keeps_the_best_epoch_by_the_metrics_direction(higher, best_epoch, told):
    start = np.array([1.5, 0.0])  # scores 1.5: epoch 1 (2) and 2 (4) beat it upwards, epoch 3 (1) downwards
    heard = []
    run = mix(TwoShards(higher), Mixing(prepare, epoch, stats, (start,), entry, 3), start, None,
              lambda w, score: heard.append((w.copy(), score)))  # fmt: skip
    assert run.prepared == [0, 10] and run.score_before == 1.5
    assert [e.score for e in run.history] == [2.0, 4.0, 1.0]
    assert run.best_epoch == best_epoch and run.best_score == [2.0, 4.0, 1.0][best_epoch - 1]
    # the second weight: each epoch adds 1 to the mixture's on both shards
    np.testing.assert_array_equal(run.best, [[2.0, 4.0, 1.0][best_epoch - 1], float(best_epoch)])
    assert [score for _, score in heard] == told and run.reported
    assert not run.keep_start(run.score_before, run.best_score, higher)


def test_a_start_kept_after_all_is_told_to_the_checkpoint():
    start = np.array([1.5, 0.0])
    heard = []
    run = mix(TwoShards(True), Mixing(prepare, epoch, stats, (start,), entry, 2), start, None,
              lambda w, score: heard.append((w.copy(), score)))  # fmt: skip
    assert run.best_epoch == 2
    assert run.keep_start(1.5, 1.5, True)  # e.g. the inputs as given score the found weights no better
    assert run.best_epoch == 0 and run.best is start
    np.testing.assert_array_equal(heard[-1][0], start)
    assert heard[-1][1] == 1.5 and len(heard) == 3
