"""A tuning set sharded over Dask workers: :class:`DaskShards`, the cluster's
:class:`~hypertune.tuners.shards.Shards`.

Shard ``k`` of ``count`` (the sentences :func:`~hypertune.tuners.shards.shard_ranges` gives it) is loaded
by worker ``k mod W`` (workers sorted by address) with the caller's ``loader(k, count)`` -- a task pinned
to that worker, reading the input files there -- and kept in that worker process's memory for the whole
run (:data:`_HELD`). ``map(function, *args)`` sends ``function`` (by name) and ``args`` to every worker
once (``Client.run``), which applies it to the shards it holds; the client puts the results in shard
order. Nothing else travels.

Worker loss: every call first checks that each shard's worker is still in the scheduler's list (and a
call that fails or finds a shard missing checks again). When one is gone, the run stops with
:class:`ShardLost`, one line naming the shard, its sentences and the worker. The shard is not reloaded
elsewhere: MERT and the gradient tuners could be resumed that way, but MIRA's
shards keep state between epochs (background corpus, running average), so a silent reload would change
results; stopping keeps every finished run bit-identical to the single-process one.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import distributed

from hypertune.distributed.loading import (
    BlockRead,
    SentenceFiles,
    check_count,
    describe_block,
    joined,
    read_files,
    settle,
)
from hypertune.errors import HypertuneError, warn
from hypertune.metrics import Metric
from hypertune.symbols import FeatureSpace
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.shards import Shard, shard_ranges

R = TypeVar("R")
#: ``loader(index, count)`` -> (shard ``index`` of ``count`` as a tuning set, its first sentence in the whole set);
#: it runs on the worker, so it must be picklable (a module-level function or a ``functools.partial`` of one)
ShardLoader = Callable[[int, int], tuple[TuningSet, int]]

#: the shards this worker process holds, by (run, shard index)
_HELD: dict[tuple[str, int], Shard] = {}
#: shard-local loading's read round: the files this worker parsed, by (run, file index), until the shards settle
_READ: dict[tuple[str, int], list] = {}


class ShardLost(HypertuneError):
    """A worker holding a shard left the cluster during a run (its process died or was killed)."""


@dataclass(frozen=True)
class ShardInfo:
    """What a worker reports after loading its shard: sizes, the feature names (in id order) and where."""

    index: int
    start: int
    sentences: int
    feature_names: tuple[str, ...]
    sentence_ids: tuple[int, ...]
    worker: str
    pid: int
    seconds: float
    files_read: int = 0  # shard-local loading: files its worker parsed when settling (not in the read round)
    reference_lines: int = 0


def _load(run: str, index: int, count: int, loader: ShardLoader) -> ShardInfo:
    """On a worker: load shard ``index`` of ``count`` and keep it (runs once per shard)."""
    began = time.perf_counter()
    tuning_set, start = loader(index, count)
    return _hold(run, Shard(index, count, start, tuning_set), began)


def _hold(run: str, shard: Shard, began: float, **loading: int) -> ShardInfo:
    """On a worker: keep ``shard`` for the run; what the client learns of it (``loading``: shard-local counts)."""
    _HELD[run, shard.index] = shard
    tuning_set = shard.tuning_set
    return ShardInfo(
        shard.index,
        shard.start,
        len(tuning_set),
        tuple(tuning_set.feature_space.names),
        tuple(tuning_set.sentence_ids or ()),
        distributed.get_worker().address,
        os.getpid(),
        time.perf_counter() - began,
        **loading,
    )


def _read_block(run: str, plan: SentenceFiles, start: int, stop: int) -> BlockRead:
    """On a worker: the read round of shard-local loading (:mod:`hypertune.distributed.loading`): parse files
    ``start:stop`` and keep them until the shards settle."""
    graphs = read_files(plan, range(start, stop))
    for i, found in graphs.items():
        _READ[run, i] = found
    return describe_block(start, graphs)


class _Joined(NamedTuple):
    """The read round joined (:func:`~hypertune.distributed.loading.joined`): the feature names and words of
    every shard, and every file's sentence id."""

    names: list[str]
    words: list[str]
    ids: list[int]


def _settle(
    run: str, index: int, count: int, plan: SentenceFiles, start: int, stop: int, read: _Joined, metric: Metric
) -> ShardInfo:
    """On a worker: shard ``index`` made of files ``start:stop`` (those of the read round, the others read now)
    in the joined names and words, kept for the run."""
    began = time.perf_counter()
    held = {i: _READ.pop((run, i)) for i in range(start, stop) if (run, i) in _READ}  # each file is one shard's
    missing = stop - start - len(held)
    tuning_set, lines = settle(plan, held, start, stop, read.names, read.words, read.ids, metric)
    return _hold(run, Shard(index, count, start, tuning_set), began, files_read=missing, reference_lines=lines)


def _forget_read(run: str) -> int:
    """On a worker: drop the read round's files (the shards have settled)."""
    keys = [key for key in _READ if key[0] == run]
    for key in keys:
        del _READ[key]
    return len(keys)


def _call_held(run: str, function: Callable[..., R], args: tuple) -> list[tuple[int, R]]:
    """On a worker: ``function(shard, *args)`` on every shard of ``run`` this worker holds, in shard order."""
    return [(key[1], function(_HELD[key], *args)) for key in sorted(_HELD) if key[0] == run]


def _call_held_each(run: str, function: Callable[..., R], each: dict[int, Any], args: tuple) -> list[tuple[int, R]]:
    """On a worker: ``function(shard, each[k], *args)`` on every shard ``k`` of ``run`` it holds, in shard order."""
    return [(key[1], function(_HELD[key], each[key[1]], *args)) for key in sorted(_HELD) if key[0] == run]


def _release(run: str) -> int:
    """On a worker: forget the run's shards."""
    keys = [key for key in _HELD if key[0] == run]
    for key in keys:
        del _HELD[key]
    return len(keys)


class DaskShards:
    """The tuning set of ``loader`` cut into ``count`` shards (default: one per worker), each loaded and held by
    a worker of ``client`` (see the module docstring; the loader cuts by
    :func:`~hypertune.tuners.shards.shard_ranges`). ``metric`` scores merged statistics on the client.
    ``progress`` gets a line as shards finish loading. Use as a context manager (or call :meth:`close`) to
    free the workers' memory."""

    #: Shards held by other processes, which can be lost mid-call (:func:`~hypertune.tuners.mixing.mix` then does
    #: not defer an epoch's scoring to the next epoch's call).
    remote = True

    def __init__(
        self,
        client: Any,
        loader: ShardLoader,
        metric: Metric,
        count: int | None = None,
        progress: Callable[[str], None] | None = None,
        files: SentenceFiles | None = None,
    ) -> None:
        self.client = client
        self.metric = metric
        self.run = uuid.uuid4().hex
        workers = sorted(client.nthreads())
        if not workers:
            raise ShardLost("the cluster has no workers")
        self.count = count or len(workers)
        self.workers = [workers[k % len(workers)] for k in range(self.count)]
        self.progress = progress
        started = time.perf_counter()
        #: how the shards were loaded: "files" (each worker read its own files) or "whole" (every worker read
        #: every input and kept its shard); with "files", ``files_read[k]`` is how many files shard k's worker
        #: parsed for it (its block in the read round and the boundary files it lacked)
        self.loading = "whole"
        self.files_read: list[int] = []
        infos = self._load_files(files) if files is not None else None
        if infos is None:
            infos = self._gather(
                [
                    client.submit(
                        _load, self.run, k, self.count, loader, workers=[w], allow_other_workers=False, pure=False
                    )  # fmt: skip
                    for k, w in enumerate(self.workers)
                ],
                "shards loaded",
            )
        infos.sort(key=lambda info: info.index)
        self.infos = infos
        names = infos[0].feature_names
        for info in infos[1:]:
            if info.feature_names != names:
                raise HypertuneError(
                    f"shard {info.index} read the features in another order than shard 0: every worker must see "
                    "the same input files"
                )
        self.feature_space = FeatureSpace(names)
        self.sentences = sum(info.sentences for info in infos)
        self.sentence_ids = [i for info in infos for i in info.sentence_ids]
        self.load_seconds = time.perf_counter() - started
        self.calls = 0
        self.bytes_sent = 0
        if progress is not None:
            how = ", each from its own files" if self.loading == "files" else ""
            progress(
                f"\rdask: {self.count} shards of {self.sentences} sentences loaded in {self.load_seconds:.1f} s{how}\n"
            )

    def _gather(self, futures: list[Any], what: str) -> list[Any]:
        """The futures' results as they finish (a progress line each), stopping when a shard's worker is lost."""
        out = []
        for done, future in enumerate(distributed.as_completed(futures), 1):
            self._check_workers(futures)
            out.append(future.result())
            if self.progress is not None:
                self.progress(f"\rdask: {done}/{len(futures)} {what}")
        return out

    def _load_files(self, plan: SentenceFiles) -> list[ShardInfo] | None:
        """Shard-local loading (:mod:`hypertune.distributed.loading`): a read round of blocks of about equal bytes,
        then every shard settled on its worker in the joined feature names; ``None`` (the read round's files
        forgotten) when the files are not one graph per sentence in increasing order, for the whole read."""
        client, run = self.client, self.run
        check_count(len(plan.files), self.count)
        blocks = plan.blocks(self.count)
        try:
            reads = self._gather(
                [
                    client.submit(_read_block, run, plan, a, b, workers=[w], allow_other_workers=False, pure=False)
                    for (a, b), w in zip(blocks, self.workers, strict=True)
                ],
                "blocks of files read",
            )
            found = joined(reads)
            if found is None:
                return None
            names, words, ids, edges = found
            read = _Joined(names, words, ids)
            ranges = shard_ranges(edges, self.count)
            infos = self._gather(
                [
                    client.submit(
                        _settle,
                        run,
                        k,
                        self.count,
                        plan,
                        a,
                        b,
                        read,
                        self.metric,
                        workers=[w],
                        allow_other_workers=False,
                        pure=False,
                    )  # fmt: skip
                    for k, ((a, b), w) in enumerate(zip(ranges, self.workers, strict=True))
                ],
                "shards settled",
            )
        finally:
            try:
                client.run(_forget_read, run, workers=sorted(set(self.workers)))
            except Exception:  # a lost worker is reported by the next check
                pass
        infos.sort(key=lambda info: info.index)
        self.loading = "files"
        self.files_read = [(b - a) + info.files_read for (a, b), info in zip(blocks, infos, strict=True)]
        lines = infos[0].reference_lines
        if lines > len(ids):
            warn(f"{lines - len(ids)} of the {lines} reference lines match no sentence")
        return infos

    def __len__(self) -> int:
        return self.sentences

    def describe(self, index: int) -> str:
        info = self.infos[index] if hasattr(self, "infos") else None
        where = f"shard {index} of {self.count}"
        if info is not None:
            where += f" (sentences {info.start}-{info.start + info.sentences - 1})"
        return where

    def map(self, function: Callable[..., R], *args: Any) -> list[R]:
        """``function(shard, *args)`` on every shard's worker; the results in shard order.

        One direct call per worker (``Client.run``: the worker runs the function on each shard it holds), not
        one scheduled task per shard: a line search is short, and a round trip through the scheduler's task
        graph costs about 15 ms on a two-core machine against 2 ms this way (docs/distributed.md)."""
        workers = sorted(set(self.workers))
        self.calls += 1
        self._check_workers(())  # the scheduler knows at once when a worker's connection drops; a call would wait
        with self._failures_named():
            answers = list(self.client.run(_call_held, self.run, function, args, workers=workers).values())
        return self._in_shard_order(answers)

    def map_each(self, function: Callable[..., R], each: Sequence[Any], *args: Any) -> list[R]:
        """``function(shard, each[k], *args)`` on every shard ``k``; ``each[k]`` goes to shard ``k``'s worker only.

        One task pinned to each worker (``Client.submit``), carrying the parts of the shards it holds: a round
        trip through the scheduler (about 15 ms here) instead of sending every part to every worker."""
        self.calls += 1
        self._check_workers(())
        held: dict[str, dict[int, Any]] = {}
        for k, worker in enumerate(self.workers):
            held.setdefault(worker, {})[k] = each[k]
        with self._failures_named():
            futures = [
                self.client.submit(
                    _call_held_each,
                    self.run,
                    function,
                    parts,
                    args,
                    workers=[worker],
                    allow_other_workers=False,
                    pure=False,
                )
                for worker, parts in sorted(held.items())
            ]
            answers = self.client.gather(futures)
        return self._in_shard_order(answers)

    @contextmanager
    def _failures_named(self) -> Iterator[None]:
        """A call that fails because a worker went away becomes :class:`ShardLost` naming what was lost."""
        try:
            yield
        except HypertuneError:
            raise
        except Exception as error:  # a worker gone mid-call surfaces as a comm or key error
            self._check_workers(())
            reason = str(error).splitlines()[0] if str(error) else ""
            raise ShardLost(f"a call to the shards failed: {type(error).__name__} {reason}".rstrip()) from None

    def _in_shard_order(self, answers: Sequence[list[tuple[int, R]]]) -> list[R]:
        """The workers' ``(shard, result)`` lists as one list in shard order; a shard no worker answered for
        (its worker lost it) is :class:`ShardLost`."""
        results: dict[int, R] = {}
        for found in answers:
            results.update(found)
        missing = [k for k in range(self.count) if k not in results]
        if missing:
            self._check_workers(())
            worker = self.workers[missing[0]]
            raise ShardLost(f"lost {self.describe(missing[0])}: its worker {worker} no longer holds it")
        return [results[k] for k in range(self.count)]

    def _check_workers(self, futures: Sequence[Any]) -> None:
        """Stop with :class:`ShardLost` when a shard's worker has left the cluster."""
        alive = set(self.client.nthreads())
        for k, worker in enumerate(self.workers):
            if worker not in alive:
                for future in futures:
                    future.cancel()
                raise ShardLost(
                    f"lost {self.describe(k)}: its worker {worker} left the cluster (died or was killed); "
                    "the run stopped (restart it: shards are reloaded from the files)"
                )

    def close(self) -> None:
        try:
            self.client.run(_release, self.run)
        except Exception:  # a cluster going away frees the memory anyway
            pass

    def __enter__(self) -> DaskShards:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
