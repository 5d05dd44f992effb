"""Sharded tuning on Dask (issue 19, docs/distributed.md): a real scheduler and workers started as separate
processes on localhost (``dask scheduler``, ``dask worker``), plus a ``LocalCluster``.

Expected values come from the single-process tuners through their public API (``Mert.fit`` on the whole
tuning set; for the gradient tuners and MIRA's mixing, which depend on the number of shards, the same
tuner over :class:`LocalShards` of the same count), compared with ``==``: bit for bit."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support.dask_cluster import ENV, RealCluster, free_port
from support.paths import REPO

distributed = pytest.importorskip("distributed")

from hypertune import algorithms  # noqa: E402
from hypertune.cli import main  # noqa: E402
from hypertune.cli.tuning import load_shard  # noqa: E402
from hypertune.formats import hypertune_json, read_graphs, read_references, read_weights  # noqa: E402
from hypertune.generate import random_hypergraph  # noqa: E402
from hypertune.hypergraph import Hypergraph  # noqa: E402
from hypertune.metrics import BleuMetric  # noqa: E402
from hypertune.symbols import FeatureSpace, Vocabulary  # noqa: E402
from hypertune.tuners import Mert, TuningSet  # noqa: E402
from hypertune.tuners.minrisk import MinRisk  # noqa: E402
from hypertune.tuners.mira import Mira  # noqa: E402
from hypertune.tuners.shards import LocalShards, shard_ranges  # noqa: E402
from hypertune.tuners.train import Trainer  # noqa: E402
from hypertune.weights import Weights  # noqa: E402

NBEST = str(REPO / "fixtures" / "mert" / "nbest.txt")
REFS = str(REPO / "fixtures" / "mert" / "ref.")
INIT = str(REPO / "fixtures" / "mert" / "init.weights")


@pytest.fixture(scope="module")
def cluster():
    started = RealCluster(2)
    yield started
    started.close()


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def kbest_tuning_set() -> TuningSet:
    return TuningSet.from_corpus(read_graphs(NBEST), read_references(REFS), BleuMetric(tokenize="none"))


def generated(folder: Path, forests: bool) -> tuple[str, str, Weights]:
    """Nine generated lattices (and forests) in a file, references that are the model-best yields of other
    weights (so BLEU moves), start weights."""
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs = [
        random_hypergraph(
            300,
            lattice=not (forests and i % 2),
            num_features=5,
            vocabulary_size=30,
            seed=i,
            feature_space=space,
            vocabulary=vocabulary,
        )  # fmt: skip
        for i in range(9)
    ]
    rng = np.random.default_rng(7)
    target = Weights({f"F{i}": float(x) for i, x in enumerate(rng.standard_normal(5))})
    path, refs, init = folder / "graphs.json", folder / "ref", folder / "init"
    hypertune_json.write(graphs, str(path))
    refs.write_text("".join(algorithms.viterbi(g, target).text + "\n" for g in graphs))
    init.write_text("".join(f"F{i} 0.1\n" for i in range(5)))
    return str(path), str(refs), Weights({f"F{i}": 0.1 for i in range(5)})


@pytest.fixture(scope="module")
def graphs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, Weights]:
    return generated(tmp_path_factory.mktemp("graphs"), forests=True)


@pytest.fixture(scope="module")
def lattices(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, Weights]:
    """Lattices only: xbleu's n-gram split of random forests of this size is large."""
    return generated(tmp_path_factory.mktemp("lattices"), forests=False)


def sentence_directory(folder: Path) -> tuple[str, str, Weights]:
    """Nine lattices as a Moses hgdir (one file per sentence), each naming its five features in another order
    (so a block of files read alone meets the names in another order than the whole corpus does), references
    that are the model-best yields of other weights, start weights."""
    from hypertune.formats.moses_hypergraph import write_hgdir

    rng = np.random.default_rng(11)
    target = rng.standard_normal(5)
    graphs, refs = [], []
    for i in range(9):
        g = random_hypergraph(200 + 40 * i, lattice=True, num_features=5, vocabulary_size=30, seed=20 + i)
        names = [f"F{(j + 2 * i + 1) % 5}" for j in range(5)]  # column j is named F{(j + 2i + 1) mod 5}
        g = Hypergraph(num_nodes=g.num_nodes, head=g.head, tail_offsets=g.tail_offsets, tails=g.tails,
                       features=g.features, target_offsets=g.target_offsets, target=g.target,
                       feature_space=FeatureSpace(names), vocabulary=g.vocabulary)  # fmt: skip
        graphs.append(g)
        w = Weights({name: float(target[j]) for j, name in enumerate(names)})
        refs.append(algorithms.viterbi(g, w).text)
    write_hgdir(graphs, str(folder / "hg"))
    (folder / "ref").write_text("".join(r + "\n" for r in refs))
    (folder / "init").write_text("".join(f"F{i} 0.1\n" for i in range(5)))
    return str(folder / "hg"), str(folder / "ref"), Weights({f"F{i}": 0.1 for i in range(5)})


@pytest.fixture(scope="module")
def hgdir(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, Weights]:
    return sentence_directory(tmp_path_factory.mktemp("hgdir"))


def test_shard_ranges_cover_the_sentences_in_order():
    assert shard_ranges(10, 3) == [(0, 3), (3, 6), (6, 10)]
    assert shard_ranges(2, 5) == [(0, 1), (1, 2)]
    assert shard_ranges([10, 1, 1, 1, 1, 10], 2) == [(0, 3), (3, 6)]  # about equal edges
    assert shard_ranges([100, 1, 1], 3) == [(0, 1), (1, 2), (2, 3)]  # never empty


def test_kbest_mert_on_a_real_scheduler_equals_one_process(cluster, capsys):
    expected = Mert(restarts=4, seed=3, random_directions=2).fit(kbest_tuning_set(), read_weights(INIT))
    got = run_cli(capsys, "mert", NBEST, "--refs", REFS, "--init", INIT, "--restarts", "4", "--seed", "3",
                  "--random-directions", "2", "--cluster", cluster.address, "--shards", "3")  # fmt: skip
    assert got["weights"] == dict(expected.weights)
    assert got["bleu_after"] == expected.bleu_after and got["bleu_before"] == expected.bleu_before
    assert got["line_searches"] == expected.line_searches
    assert got["restart_scores"] == expected.restart_scores


@pytest.mark.slow
def test_lattice_mert_on_a_local_cluster_equals_one_process(graphs, capsys):
    path, refs, init = graphs
    tuning_set = TuningSet(read_graphs(path), read_references(refs), BleuMetric(tokenize="none"))
    expected = Mert(optimizer="cyclic", random_directions=3, seed=2).fit(tuning_set, init)
    assert expected.bleu_after > expected.bleu_before
    got = run_cli(capsys, "mert", path, "--refs", refs, "--init", str(Path(refs).with_name("init")), "--optimizer",
                  "cyclic", "--random-directions", "3", "--seed", "2", "--cluster", "local:2")  # fmt: skip
    assert got["weights"] == dict(expected.weights)
    assert got["bleu_after"] == expected.bleu_after
    assert got["line_searches"] == expected.line_searches


@pytest.mark.parametrize("objective", ["xbleu", "risk"])
def test_minimum_risk_on_a_real_scheduler_equals_one_process_with_the_same_shards(lattices, cluster, objective):
    path, refs, init = lattices
    tuning_set = TuningSet(read_graphs(path), read_references(refs), BleuMetric(tokenize="none"))
    tuner = MinRisk(objective=objective, iterations=8, kbest=20)
    expected = tuner.fit(LocalShards(tuning_set, 3), init)
    whole = tuner.fit(tuning_set, init)
    args = _args("minrisk", path, "--refs", refs, "--init", str(Path(refs).with_name("init")))
    with distributed_shards(cluster.client, args, 3) as shards:
        got = tuner.fit(shards, init)
    assert dict(got.weights) == dict(expected.weights)
    assert got.objective_after == expected.objective_after and got.bleu_after == expected.bleu_after
    assert got.evaluations == expected.evaluations
    for name, value in whole.weights.items():  # shards change only the rounding of the sums
        assert got.weights[name] == pytest.approx(value, rel=1e-6, abs=1e-9)


def test_pro_on_a_real_scheduler_equals_one_process_with_the_same_shards(cluster):
    tuning_set = kbest_tuning_set()
    init = read_weights(INIT)
    tuner = Trainer(loss="pro", seed=4, iterations=30)
    expected = tuner.fit(LocalShards(tuning_set, 3), init)
    assert dict(tuner.fit(tuning_set, init).weights) == dict(Trainer(loss="pro", seed=4, iterations=30).fit(
        LocalShards(tuning_set, 1), init).weights)  # fmt: skip
    args = _args("pro", NBEST, "--refs", REFS, "--init", INIT)
    with distributed_shards(cluster.client, args, 3) as shards:
        got = tuner.fit(shards, init)
    assert dict(got.weights) == dict(expected.weights)
    assert got.loss_after == expected.loss_after and got.pairs == expected.pairs


def test_mira_mixing_is_reproducible_by_seed_and_equal_on_the_cluster(cluster):
    tuning_set = kbest_tuning_set()
    init = read_weights(INIT)
    tuner = Mira(epochs=4, seed=5, select=2)
    first = tuner.fit(LocalShards(tuning_set, 2), init)
    assert dict(tuner.fit(LocalShards(tuning_set, 2), init).weights) == dict(first.weights)
    other_seed = Mira(epochs=4, seed=6).fit(LocalShards(tuning_set, 2), init)
    assert [e.bleu for e in other_seed.history] and len(first.history) == 4
    args = _args("mira", NBEST, "--refs", REFS, "--dense-init", INIT)
    with distributed_shards(cluster.client, args, 2) as shards:
        got = tuner.fit(shards, init)
    assert dict(got.weights) == dict(first.weights)
    assert [e.bleu for e in got.history] == [e.bleu for e in first.history]


def test_each_worker_reads_only_its_own_files_and_the_shards_equal_the_whole_read(hgdir, cluster):
    """Shard-local loading of an hgdir: every worker parses its block of files (and the boundary files its shard
    lacks), the shards are those of the whole read cut by edges, feature ids and all; MERT and minimum risk
    equal their single-process runs over the whole read (:class:`LocalShards` of the same count) bit for bit."""
    from hypertune.distributed import DaskShards
    from hypertune.distributed.loading import sentence_files

    path, refs, init = hgdir
    tuning_set = TuningSet.from_corpus(read_graphs(path), read_references(refs), BleuMetric(tokenize="none"))
    plan = sentence_files([path], None, [refs])
    assert plan is not None and len(plan.files) == 9
    local = LocalShards(tuning_set, 3)
    with DaskShards(cluster.client, None, BleuMetric(tokenize="none"), 3, files=plan) as shards:
        assert shards.loading == "files"
        assert list(shards.feature_space.names) == list(tuning_set.feature_space.names)
        assert shards.feature_space.names[0] == "F1"  # the later blocks meet the names in other orders
        assert [(i.start, i.sentences) for i in shards.infos] == [(s.start, len(s.tuning_set)) for s in local.shards]
        assert shards.sentence_ids == tuning_set.sentence_ids
        assert sum(shards.files_read) < 9 + 3  # each file parsed about once, not once per worker
        mert = Mert(optimizer="cyclic", random_directions=2, seed=1)
        expected = mert.fit(tuning_set, init)
        got = mert.fit_shards(shards, init)
        assert dict(got.weights) == dict(expected.weights) and got.bleu_after == expected.bleu_after
        assert expected.bleu_after > expected.bleu_before
        risk = MinRisk(objective="xbleu", iterations=5, kbest=20)
        expected = risk.fit(local, init)
        got = risk.fit(shards, init)
        assert dict(got.weights) == dict(expected.weights) and got.objective_after == expected.objective_after


def test_a_directory_without_sentence_ids_falls_back_to_the_whole_read(hgdir, cluster, tmp_path):
    """Files whose names carry no sentence id are numbered by position over the whole input: every worker reads
    it all (the caller's loader), as before."""
    from hypertune.distributed import DaskShards
    from hypertune.distributed.loading import sentence_files

    path, refs, init = hgdir
    renamed = tmp_path / "hg"
    renamed.mkdir()
    for name in sorted(os.listdir(path)):
        (renamed / f"s{'abcdefghijkl'[int(name.split('.')[0])]}.gz").symlink_to(os.path.join(path, name))  # no number
    plan = sentence_files([str(renamed)], "moses-hypergraph", [refs])
    args = _args("mert", str(renamed), "--refs", refs, "--init", str(Path(refs).with_name("init")), "--format",
                 "moses-hypergraph")  # fmt: skip
    loader = functools.partial(load_shard, args, 0.0, BleuMetric(tokenize="none"))
    with DaskShards(cluster.client, loader, BleuMetric(tokenize="none"), 2, files=plan) as shards:
        assert shards.loading == "whole" and shards.sentences == 9


@pytest.mark.parametrize(
    ("options", "select"),
    [
        ({"loss": "perceptron"}, 0),
        ({"loss": "latent-svm", "optimizer": "adagrad"}, 3),
        ({"loss": "pro", "optimizer": "sgd"}, 0),
    ],
)
def test_online_mixing_is_reproducible_by_seed_and_equal_on_the_cluster(cluster, options, select):
    """The online tuners over shards: iterative parameter mixing. The same seed and shards give the same weights
    in one process and on the cluster (the whole-set run is one shard's mixing by construction, and is checked
    against hand-worked updates in test_online.py)."""
    from hypertune.tuners.online import OnlineTrainer

    tuning_set = kbest_tuning_set()
    init = read_weights(INIT)

    def trainer(seed: int) -> OnlineTrainer:
        return OnlineTrainer(epochs=3, seed=seed, select=select, **options)

    first = trainer(5).fit(LocalShards(tuning_set, 2), init)
    again = trainer(5).fit(LocalShards(tuning_set, 2), init)
    assert dict(again.weights) == dict(first.weights) and len(first.history) == 3
    args = _args("train", NBEST, "--refs", REFS, "--init", INIT)
    with distributed_shards(cluster.client, args, 2) as shards:
        got = trainer(5).fit(shards, init)
    assert dict(got.weights) == dict(first.weights)
    assert [e.bleu for e in got.history] == [e.bleu for e in first.history]
    assert [e.updates for e in got.history] == [e.updates for e in first.history]


def same_oracles(got, expected) -> None:
    assert got.bleu == expected.bleu and np.array_equal(got.corpus_stats, expected.corpus_stats)
    assert got.details == expected.details
    assert len(got.oracles) == len(expected.oracles)
    for a, b in zip(got.oracles, expected.oracles, strict=True):
        assert (a.sentence, a.words, a.features, a.model_score, a.score) == (
            b.sentence, b.words, b.features, b.model_score, b.score)  # fmt: skip
        assert np.array_equal(a.stats, b.stats)


@pytest.mark.parametrize("method", ["partial", "linear"])
def test_sentence_oracles_on_the_cluster_equal_one_process(hgdir, cluster, method):
    """Oracles searched where each shard is (each worker read its own files), joined in shard order: the
    single-process search over the whole read (``OracleSearch.run`` on the tuning set), field for field."""
    from hypertune.distributed import DaskShards
    from hypertune.distributed.loading import sentence_files
    from hypertune.tuners.oracle import OracleSearch

    path, refs, init = hgdir
    tuning_set = TuningSet.from_corpus(read_graphs(path), read_references(refs), BleuMetric(tokenize="none"))
    search = OracleSearch(method=method)
    expected = search.run(tuning_set, init)
    with DaskShards(
        cluster.client, None, BleuMetric(tokenize="none"), 3, files=sentence_files([path], None, [refs])
    ) as shards:
        same_oracles(search.run(shards, init), expected)
    if method == "partial":
        kbest = OracleSearch(method="kbest").run(kbest_tuning_set(), read_weights(INIT))
        same_oracles(OracleSearch(method="kbest").run(LocalShards(kbest_tuning_set(), 3), read_weights(INIT)), kbest)


@pytest.mark.parametrize("variant", ["best-switch", "sentence-order"])
def test_the_corpus_oracle_on_the_cluster_equals_one_process(hgdir, cluster, variant):
    """The corpus oracle over shards: each sentence's candidates start and grow on its shard, their statistics
    rows are switched on the client; the single-process oracle field for field, its passes included. k-best
    lists (every hypothesis a candidate) too, on shards in this process."""
    from hypertune.distributed import DaskShards
    from hypertune.distributed.loading import sentence_files
    from hypertune.tuners.oracle import OracleSearch

    path, refs, init = hgdir
    tuning_set = TuningSet.from_corpus(read_graphs(path), read_references(refs), BleuMetric(tokenize="none"))
    search = OracleSearch(method="corpus", variant=variant, seed=3)
    expected = search.run(tuning_set, init)
    assert expected.details["passes"] >= 2  # a pass drew new candidates: the draw round is exercised
    with DaskShards(
        cluster.client, None, BleuMetric(tokenize="none"), 3, files=sentence_files([path], None, [refs])
    ) as shards:
        same_oracles(search.run(shards, init), expected)
    kbest = search.run(kbest_tuning_set(), read_weights(INIT))
    same_oracles(search.run(LocalShards(kbest_tuning_set(), 3), read_weights(INIT)), kbest)


def test_the_commands_on_the_cluster_and_with_shards_in_one_process(hgdir, cluster, capsys, tmp_path):
    """The command line: ``mert --shards N`` without ``--cluster`` runs the sharded code path in this process (the
    same result as unsharded); ``train`` with an online loss mixes over ``--shards`` in one process and on the
    cluster alike; ``oracle --cluster`` gives the single-process oracles."""
    path, refs, _ = hgdir
    init = str(Path(refs).with_name("init"))
    mert = ["mert", NBEST, "--refs", REFS, "--init", INIT, "--restarts", "2", "--seed", "3"]
    plain, sharded = run_cli(capsys, *mert), run_cli(capsys, *mert, "--shards", "3")
    assert sharded["weights"] == plain["weights"] and sharded["bleu_after"] == plain["bleu_after"]
    assert sharded["line_searches"] == plain["line_searches"]
    train = ["train", NBEST, "--refs", REFS, "--init", INIT, "--loss", "perceptron", "--epochs", "3", "--seed", "2"]
    local = run_cli(capsys, *train, "--shards", "2", "--select", "4")
    remote = run_cli(capsys, *train, "--cluster", cluster.address, "--shards", "2", "--select", "4")
    assert remote["weights"] == local["weights"] and remote["bleu_after"] == local["bleu_after"]
    assert main([*train, "--select", "4"]) != 0 and "--select" in capsys.readouterr().err
    oracle = ["oracle", path, "--refs", refs, "--weights", init, "--method", "linear"]
    one = run_cli(capsys, *oracle)
    assert run_cli(capsys, *oracle, "--cluster", cluster.address, "--shards", "3") == {
        **one,
        "seconds": pytest.approx(0, abs=1e9),
    }


@pytest.mark.slow
def test_a_killed_worker_stops_the_run_naming_its_shard():
    """Worker loss: the run stops with one line naming the lost shard (docs/distributed.md says why it does
    not reload the shard elsewhere)."""
    from hypertune.distributed import ShardLost
    from hypertune.tuners.mert import ShardedSearcher

    own = RealCluster(2)
    try:
        args = _args("mert", NBEST, "--refs", REFS, "--init", INIT)
        with distributed_shards(own.client, args, 2) as shards:
            searcher = ShardedSearcher(shards)
            w = np.zeros(len(shards.feature_space))
            direction = np.eye(len(shards.feature_space))[0]
            searcher.surfaces(w, direction)
            victim = shards.infos[1]
            process = next(p for p in own.workers if p.pid == victim.pid)
            os.kill(process.pid, signal.SIGKILL)
            process.wait(10)
            with pytest.raises(ShardLost) as caught:
                searcher.surfaces(w, direction)
        message = str(caught.value)
        assert "\n" not in message
        assert message.startswith(f"lost shard 1 of 2 (sentences {victim.start}-{victim.start + victim.sentences - 1})")
        assert victim.worker in message
    finally:
        own.close()


def test_an_unreachable_scheduler_is_a_one_line_error(capsys):
    from hypertune.distributed import open_cluster
    from hypertune.errors import UsageError

    with pytest.raises(UsageError, match="cannot reach the scheduler") as caught:
        with open_cluster(f"tcp://127.0.0.1:{free_port()}", timeout=1):
            pass
    assert "\n" not in str(caught.value)
    assert main(["mert", NBEST, "--refs", REFS, "--init", INIT, "--cluster", "lcoal"]) != 0
    assert "--cluster 'lcoal'" in capsys.readouterr().err


def test_the_command_line_imports_no_dask_without_cluster():
    found = subprocess.run([sys.executable, "-X", "importtime", "-m", "hypertune", "mert", "--help"],
                           capture_output=True, text=True, cwd=REPO, env=ENV)  # fmt: skip
    assert found.returncode == 0
    assert " dask" not in found.stderr and "distributed" not in found.stderr


# ---------------------------------------------------------------------- helpers
def _args(*argv: str):
    """The parsed command line a worker loads its shard with."""
    from hypertune.cli import build_parser

    return build_parser(argv[0]).parse_args(list(argv))


def distributed_shards(client, args, count: int):
    from hypertune.cli.tuning import _worker_args
    from hypertune.distributed import DaskShards

    loader = functools.partial(load_shard, _worker_args(args), 0.0, BleuMetric(tokenize="none"))
    return DaskShards(client, loader, BleuMetric(tokenize="none"), count)
