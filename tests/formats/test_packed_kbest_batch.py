"""Moses FEATSTAT/SCORESTAT read as one k-best batch (issue 33): the arrays hold the file's numbers as written
by hand below, and a list asked for as a graph is the one the graph reader makes."""

from __future__ import annotations

import pytest

from hypertune.formats.extractor import read_featstat, read_featstat_batch, read_featstat_input
from hypertune.formats.kbest_batch import KbestBatch
from hypertune.metrics import BleuMetric
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners.corpus import TuningSet

FEATS = """FEATURES_TXT_BEGIN_0 3 3 3 d_0 lm_0 w_0
0.5 -2 -4
0 -3.25 -5
0.5 -2 -4
FEATURES_TXT_END_0
FEATURES_TXT_BEGIN_0 7 2 3 d_0 lm_0 w_0
-1 0 -2
1e-3 -7 -1
FEATURES_TXT_END_0
"""
SCORES = """SCORES_TXT_BEGIN_0 3 3 9 BLEU
3 4 1 3 0 2 0 1 5
2 5 0 4 0 3 0 2 5
3 4 1 3 0 2 0 1 5
SCORES_TXT_END_0
SCORES_TXT_BEGIN_0 7 2 9 BLEU
1 2 0 1 0 0 0 0 3
2 2 1 1 0 0 0 0 3
SCORES_TXT_END_0
"""
DENSE = [[0.5, -2, -4], [0, -3.25, -5], [0.5, -2, -4], [-1, 0, -2], [1e-3, -7, -1]]
STATS = [[3, 4, 1, 3, 0, 2, 0, 1, 5], [2, 5, 0, 4, 0, 3, 0, 2, 5], [3, 4, 1, 3, 0, 2, 0, 1, 5],
         [1, 2, 0, 1, 0, 0, 0, 0, 3], [2, 2, 1, 1, 0, 0, 0, 0, 3]]  # fmt: skip


@pytest.fixture
def files(tmp_path):
    feats, scores = tmp_path / "FEATSTAT", tmp_path / "SCORESTAT"
    feats.write_text(FEATS)
    scores.write_text(SCORES)
    return str(feats), str(scores)


def test_a_dense_featstat_file_is_one_batch_of_its_numbers(files) -> None:
    batch = read_featstat_batch(*files[:1], FeatureSpace(), Vocabulary(), files[1])
    assert isinstance(batch, KbestBatch)
    assert batch.list_offsets.tolist() == [0, 3, 5]
    assert batch.sentence_ids == [3, 7]
    assert batch.dense is not None and batch.dense.tolist() == DENSE
    assert batch.stats is not None and batch.stats.tolist() == STATS
    assert list(batch.feature_space.names) == ["d", "lm", "w"]  # Moses's lm_0 of a one-component feature: lm
    assert batch.list_stats(1).tolist() == [[0.0] * 9, *STATS[3:]]


def test_a_list_asked_for_is_the_graph_the_graph_reader_makes(files) -> None:
    graphs = read_featstat(files[0], FeatureSpace(), Vocabulary(), files[1])
    batch = read_featstat_batch(files[0], FeatureSpace(), Vocabulary(), files[1])
    assert len(batch) == len(graphs) == 2
    for made, read in zip(batch, graphs, strict=True):
        assert made.sentence_id == read.sentence_id and made.metadata == read.metadata
        assert made.head.tolist() == read.head.tolist() and made.target_offsets.tolist() == read.target_offsets.tolist()
        assert made.features.shape == read.features.shape
        assert made.features.toarray().tolist() == read.features.toarray().tolist()
        assert made.features.nnz == read.features.nnz  # explicit zeros kept, as the reader keeps them
        assert made.edge_stats.tolist() == read.edge_stats.tolist()
    assert batch[-1] is batch[1]  # made once


def test_sparse_features_or_a_used_feature_space_give_graphs(files, tmp_path) -> None:
    sparse = tmp_path / "sparse.FEATSTAT"
    sparse.write_text(FEATS.replace("0.5 -2 -4\n0 -3.25", "0.5 -2 -4 tm_9=1\n0 -3.25", 1))
    assert isinstance(read_featstat_batch(str(sparse), FeatureSpace(), Vocabulary()), list)
    space = FeatureSpace()
    space.indices(["w"])  # columns interned before the file: not the file's order
    assert isinstance(read_featstat_batch(files[0], space, Vocabulary(), files[1]), list)


def test_a_tuning_set_of_a_batch_makes_no_graph(files) -> None:
    batch, naming = read_featstat_input(files[0], FeatureSpace(), Vocabulary(), files[1])
    assert naming.contents and not naming.named
    tuning_set = TuningSet.from_corpus(batch, None, BleuMetric())
    assert tuning_set.batch is batch and tuning_set.sentence_ids == [3, 7]
    assert tuning_set.precomputed and tuning_set.is_kbest and tuning_set.stats_size == 9
    assert tuning_set.edge_stats(0).tolist() == [[0.0] * 9, *STATS[:3]]
    part = tuning_set.subset(1, 2)
    assert part.batch is not None and part.batch.dense.tolist() == DENSE[3:]
    assert part.edge_stats(0).tolist() == [[0.0] * 9, *STATS[3:]]
    assert not batch._graphs  # nothing above needed a graph


NBEST = """0 ||| a b c ||| d= 1 0 lm= -2 ||| -1
0 ||| a b d ||| d= 0.5 0 lm= -3 ||| -2
1 ||| x y ||| d= 2 1 lm= -1 w= -2 ||| -3
"""


def test_an_nbest_list_is_one_batch_and_its_bleu_statistics_are_counted_once(tmp_path) -> None:
    from hypertune.formats.nbest import read_moses, read_moses_batch

    path = tmp_path / "nbest.txt"
    path.write_text(NBEST)
    batch = read_moses_batch(str(path), FeatureSpace(), Vocabulary())
    assert batch.list_offsets.tolist() == [0, 2, 3] and batch.sentence_ids == [0, 1]
    assert batch.words is not None
    ids, offsets = batch.words
    bounds = zip(offsets[:-1], offsets[1:], strict=True)
    assert [[batch.vocabulary.word(int(i)) for i in ids[a:b]] for a, b in bounds] == [
        ["a", "b", "c"],
        ["a", "b", "d"],
        ["x", "y"],
    ]
    names = list(batch.feature_space.names)
    rows = batch.feature_rows().toarray()
    assert [dict(zip(names, r, strict=True)) for r in rows.tolist()][2] == {"d_0": 2, "d_1": 1, "lm": -1, "w": -2}
    assert batch.metadata[0] == {"totals": [-1.0, -2.0]}
    # the lists as graphs: those the graph reader makes
    graphs = read_moses(str(path), FeatureSpace(), Vocabulary())
    for made, read in zip(batch, graphs, strict=True):
        assert made.target.tolist() == read.target.tolist() and made.metadata == read.metadata
        assert made.features.toarray().tolist() == read.features.toarray().tolist()
    # BLEU's statistics of every hypothesis at once; by hand for "a b c" against "a b d": matches and counts
    refs = [["a b d"], ["x z"]]
    packed = TuningSet.from_corpus(read_moses_batch(str(path), FeatureSpace(), Vocabulary()), refs, BleuMetric())
    assert packed.batch is not None
    assert packed.edge_stats(0)[1].tolist() == [2, 3, 1, 2, 0, 1, 0, 0, 3]
    assert packed.edge_stats(1)[1].tolist() == [1, 2, 0, 1, 0, 0, 0, 0, 2]
    listed = TuningSet.from_corpus(graphs, refs, BleuMetric())
    for s in range(2):
        assert packed.edge_stats(s).tolist() == listed.edge_stats(s).tolist()
    assert not packed.batch._graphs
