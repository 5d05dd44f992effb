"""Sharded tuning on a Dask cluster (issue 19): the tuning set cut by sentence into shards, each loaded and
kept in memory by one worker process; only weights, directions and small summaries travel.

The tuners never import Dask. They are written against :class:`hypertune.tuners.shards.Shards` -- a
feature space, a metric and ``map(function, *args)`` calling a module-level shard function on every shard
in shard order -- and this package supplies the cluster's implementation, :class:`DaskShards`, beside the
in-process :class:`~hypertune.tuners.shards.LocalShards`. Both call the same shard functions and combine
their results in the same order, so a run on a cluster equals the single-process run with the same
shards bit for bit (MERT: any shards; gradient tuners and MIRA's mixing: the same number of shards).

* :func:`open_cluster` -- ``local[:N]`` (a ``LocalCluster`` of N one-thread worker processes with
  ``NUMBA_NUM_THREADS=1``) or ``tcp://HOST:PORT`` (a running scheduler); prints the dashboard address.
* :class:`DaskShards` -- loads shard ``k`` of ``count`` on worker ``k mod W`` with a loader function the
  caller gives (the command line's input loading, sent to the worker by pickle) and keeps it there.
  A worker lost during a run stops it with a one-line :class:`ShardLost` naming the shard (see
  docs/distributed.md: no silent reload, because MIRA's shards carry state between epochs).

Importing this package imports Dask (``pip install 'hypertune[dist]'``); the command line imports it only
when ``--cluster`` is given.
"""

from __future__ import annotations

from hypertune.distributed.cluster import ClusterSpec, open_cluster, parse_cluster, require_dask

require_dask()  # before shards.py imports Dask: without it, a one-line error naming the extra to install

from hypertune.distributed.shards import DaskShards, ShardInfo, ShardLost  # noqa: E402

__all__ = ["ClusterSpec", "DaskShards", "ShardInfo", "ShardLost", "open_cluster", "parse_cluster"]
