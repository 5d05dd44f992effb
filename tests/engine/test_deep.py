"""Nothing recurses on graph depth and nothing changes interpreter-wide settings: every algorithm runs on
a chain lattice (one edge per step) of 200,000 nodes, or 20,000 for those that build a Python object per node,
whose answers are known by hand: one derivation of N - 1 words "w", score N/2, entropy 0, every edge's
posterior 1."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.sparse as sp

from hypertune import algorithms as A
from hypertune.algorithms import count_derivations
from hypertune.algorithms.envelope import envelope_by_probing, envelope_inside
from hypertune.algorithms.prune import prune
from hypertune.hypergraph import Hypergraph
from hypertune.metrics import BleuMetric
from hypertune.metrics.gains import Gain
from hypertune.semirings import CountingSemiring, LogSemiring, TropicalSemiring
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.hope_fear import HopeFearDecoder
from hypertune.tuners.mert import LineSearcher
from hypertune.weights import Weights

N = 200_000
#: The chain for the algorithms that build a Python object per node (derivations, k-best, samples): twenty times
#: Python's default recursion limit is as sure a test of recursion as 200,000 and a tenth of the time.
N_PYTHON = 20_000


def make_chain(n: int) -> Hypergraph:
    """Node 0 by an axiom edge, then node i from node i - 1 by edge i with the word "w"; every edge has f = 0.5."""
    space, vocabulary = FeatureSpace(), Vocabulary()
    space.index("f")
    word = vocabulary.index("w")
    features = sp.csr_matrix((np.full(n, 0.5), (np.arange(n), np.zeros(n, dtype=int))), shape=(n, 1))
    target = np.column_stack([np.full(n - 1, -1), np.full(n - 1, word)]).ravel()
    return Hypergraph(
        num_nodes=n,
        head=np.arange(n),
        tail_offsets=np.concatenate(([0, 0], np.arange(1, n))),
        tails=np.arange(n - 1),
        features=features,
        target_offsets=np.concatenate(([0, 0], 2 * np.arange(1, n))),
        target=target,
        feature_space=space,
        vocabulary=vocabulary,
    )


@pytest.fixture(scope="module")
def chain() -> Hypergraph:
    return make_chain(N)


@pytest.mark.slow
def test_every_array_algorithm_runs_on_a_200000_node_chain(chain):
    limit = sys.getrecursionlimit()
    w = Weights({"f": 1.0})
    scores = w.edge_scores(chain)
    total = 0.5 * N
    assert A.inside(chain, LogSemiring(), scores, "compiled")[chain.goal] == pytest.approx(total)
    assert A.outside(chain, LogSemiring(), scores)[0] == pytest.approx(total - 0.5)
    np.testing.assert_allclose(A.edge_posteriors(chain, w), np.ones(N))
    assert A.feature_expectations(chain, w)[0] == pytest.approx(total)
    assert A.entropy(chain, w) == pytest.approx(0.0, abs=1e-6)
    for method in (envelope_inside, envelope_by_probing):
        assert len(method(chain, scores, scores)) == 1
    assert prune(chain, scores, 10)[0].num_edges == N  # the model-best derivation always survives
    tuning_set = TuningSet([chain], [["w w w"]], BleuMetric(tokenize="none"))
    surfaces = LineSearcher(tuning_set).surfaces(w.vector(chain.feature_space), np.ones(1))
    assert surfaces.segments == 1
    assert sys.getrecursionlimit() == limit


@pytest.mark.slow
def test_every_derivation_algorithm_runs_on_a_20000_node_chain():
    n = N_PYTHON
    assert n >= 20 * sys.getrecursionlimit()
    chain = make_chain(n)
    limit = sys.getrecursionlimit()
    w = Weights({"f": 1.0})
    scores = w.edge_scores(chain)
    total = 0.5 * n
    path = list(range(n - 1, -1, -1))  # the one derivation's edges in pre-order: the goal's edge first
    assert A.inside(chain, LogSemiring(), list(scores), "generic")[chain.goal] == pytest.approx(total)
    assert count_derivations(chain) == 1 and A.inside(chain, CountingSemiring(), [1] * n)[chain.goal] == 1
    best = A.viterbi(chain, w)
    assert best.score == pytest.approx(total) and best.words == ["w"] * (n - 1) and best.derivation.edges() == path
    value, derivation = A.best_derivation(chain, TropicalSemiring(), list(scores), "generic")
    assert value == pytest.approx(total) and derivation == best.derivation and hash(derivation) == hash(best.derivation)
    assert repr(derivation).startswith(f"Derivation(edges=[{n - 1}, {n - 2}, ")
    (only,) = A.kbest(chain, w, 3)
    assert only.derivation.edges() == path and only.score == pytest.approx(total)
    (drawn,) = A.sample(chain, w, 1, random_state=0)
    assert drawn.derivation.edges() == path
    (enumerated,) = A.enumerate_derivations(chain)
    assert enumerated.edges() == path
    for method in (envelope_inside, envelope_by_probing):
        envelope = method(chain, scores, scores)
        assert len(envelope) == 1 and envelope.derivation(0).edges() == path
    tuning_set = TuningSet([chain], [["w w w"]], BleuMetric(tokenize="none"))
    hope_fear = HopeFearDecoder(tuning_set).hope_fear(0, w.vector(chain.feature_space), Gain("bleu+1", 4))
    assert hope_fear.hope.derivation.edges() == path and hope_fear.fear.derivation.edges() == path
    assert sys.getrecursionlimit() == limit
