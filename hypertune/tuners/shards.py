"""Shards: a tuning set cut by sentence into contiguous runs (:func:`shard_ranges`, the one rule, locally and on a
cluster), the :class:`Shards` interface sharded tuners are written against (:class:`LocalShards` in this process;
:mod:`hypertune.distributed` on a Dask cluster), and how the shards' parts are combined: sums in shard order
(:func:`ordered_sum`) and iterative parameter mixing (McDonald et al. 2010; Simianer et al. 2012's feature
selection, :func:`mixed_columns`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import numpy as np

from hypertune.errors import UsageError
from hypertune.metrics import Metric
from hypertune.symbols import FeatureSpace
from hypertune.tuners.corpus import TuningSet


def shard_ranges(sentences: int | Sequence[int], count: int) -> list[tuple[int, int]]:
    """Sentences cut into ``count`` contiguous runs in order (fewer when there are fewer sentences), none
    empty. ``sentences``: a count (runs of sizes differing by at most one) or every sentence's cost, e.g. its
    edges (runs of about equal cost, as the line searcher's threads get them: envelope work grows with the
    edges). The one rule of how a tuning set is sharded, locally and on a cluster: shard ``k`` of ``count``
    is the same sentences wherever it is loaded."""
    if count < 1:
        raise UsageError(f"the number of shards must be at least 1, got {count}")
    costs = np.ones(sentences, dtype=np.float64) if isinstance(sentences, int) else np.asarray(sentences, float)
    n = costs.size
    count = max(1, min(count, n))
    if isinstance(sentences, int):
        bounds = [n * k // count for k in range(count + 1)]
    else:
        totals = np.concatenate(([0.0], np.cumsum(costs)))
        cuts = np.searchsorted(totals, totals[-1] * np.arange(1, count) / count)
        bounds = [0]
        for k, cut in enumerate(cuts, 1):  # at least one sentence per run, room left for the runs after
            bounds.append(int(min(max(cut, bounds[-1] + 1), n - (count - k))))
        bounds.append(n)
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def shard_costs(tuning_set: TuningSet) -> list[int]:
    """What :func:`shard_ranges` balances: every sentence's edges (a k-best list's hypotheses)."""
    batch = tuning_set.batch
    if batch is not None:  # a list's edges: its start axiom and its hypotheses (no graph made)
        return (batch.counts() + 1).tolist()
    return [g.num_edges for g in tuning_set.graphs]


@dataclass
class Shard:
    """One shard of a tuning set, where it lives (this process or a cluster worker): its sentences
    ``start:start + len(tuning_set)`` of the whole set, which shard it is, and ``state``, what the tuners
    prepare on it once and keep between calls (a line searcher, packed search spaces, a MIRA runner),
    keyed by the tuner's own names."""

    index: int
    count: int
    start: int
    tuning_set: TuningSet
    state: dict[str, Any] = field(default_factory=dict)


R = TypeVar("R")


class Shards(Protocol):
    """A sharded tuning set as a tuner sees it: the feature space, the metric, the sentence count, and
    ``map(function, *args)``, which calls ``function(shard, *args)`` on every :class:`Shard` and returns the
    results in shard order. Only ``args`` and the results travel between processes, so tuners written
    against this run unchanged in one process (:class:`LocalShards`) and on a Dask cluster
    (``hypertune.distributed``). ``function`` must be a module-level function (it is sent by name)."""

    feature_space: FeatureSpace
    metric: Metric
    sentences: int
    count: int

    def map(self, function: Callable[..., R], *args: Any) -> list[R]: ...

    def map_each(self, function: Callable[..., R], each: Sequence[Any], *args: Any) -> list[R]:
        """``function(shard, each[shard.index], *args)`` on every shard, results in shard order: ``each[k]``
        travels to shard ``k``'s worker only (a shard's own part of something corpus-sized)."""
        ...


class LocalShards:
    """:class:`Shards` in this process: ``tuning_set`` cut by :func:`shard_ranges` into ``count`` shards, mapped
    over in order. A tuner run on these gives the same results, bit for bit, as on a cluster with the same
    shards: both call the same shard functions and combine their results in the same order."""

    def __init__(self, tuning_set: TuningSet, count: int = 1) -> None:
        self.tuning_set = tuning_set
        self.feature_space = tuning_set.feature_space
        self.metric = tuning_set.metric
        self.sentences = len(tuning_set)
        ranges = shard_ranges(shard_costs(tuning_set), count)
        whole = len(ranges) == 1
        self.shards = [
            Shard(k, len(ranges), a, tuning_set if whole else tuning_set.subset(a, b))
            for k, (a, b) in enumerate(ranges)
        ]
        self.count = len(self.shards)

    def map(self, function: Callable[..., R], *args: Any) -> list[R]:
        return [function(shard, *args) for shard in self.shards]

    def map_each(self, function: Callable[..., R], each: Sequence[Any], *args: Any) -> list[R]:
        return [function(shard, each[shard.index], *args) for shard in self.shards]


def ordered_sum(values: Sequence[Any]) -> Any:
    """``values[0] + values[1] + ...`` left to right: how every sharded tuner adds its shards' parts, so that
    the same shards give the same floating-point sum in one process and on a cluster (one shard's value is
    returned as it is)."""
    total = values[0]
    for value in values[1:]:
        total = total + value
    return total


def mixed_columns(weights: np.ndarray, k: int) -> np.ndarray:
    """Which features iterative parameter mixing averages: all (``k = 0``), or the ``k`` with the largest l2
    norm over the shards' weight rows (Simianer et al. 2012's l1/l2 selection; ties: the lower column)."""
    keep = np.ones(weights.shape[1], dtype=bool)
    if k and k < weights.shape[1]:
        norms = np.sqrt((weights * weights).sum(axis=0))
        keep[:] = False
        keep[np.argsort(-norms, kind="stable")[:k]] = True
    return keep


def mixture(rows: Sequence[np.ndarray] | np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Iterative parameter mixing's average (McDonald et al. 2010): the mean of the shards' weight vectors,
    summed in shard order, and 0 for the features outside ``keep`` (:func:`mixed_columns`)."""
    return np.where(keep, ordered_sum(list(rows)) / len(rows), 0.0)


def mixed_epoch(
    parts: Sequence[tuple[np.ndarray, np.ndarray, int, Any]], select: int
) -> tuple[np.ndarray, np.ndarray, int, Any]:
    """One epoch of iterative parameter mixing from each shard's ``(weights, averaged weights, updates, loss)``,
    in shard order: the mixed weights the next epoch starts from, the mixed averaged weights (what the epoch
    is scored by), and the updates and losses summed; ``select``: :func:`mixed_columns`'s ``k``."""
    weights = np.vstack([p[0] for p in parts])
    keep = mixed_columns(weights, select)
    return (
        mixture(weights, keep),
        mixture([p[1] for p in parts], keep),
        sum(p[2] for p in parts),
        ordered_sum([p[3] for p in parts]),
    )
