"""Nothing recurses on graph depth and nothing changes interpreter-wide settings: every algorithm runs on
a 200,000-node chain lattice (one edge per step), whose answers are known by hand: one derivation of
N - 1 words "w", score N/2, entropy 0, every edge's posterior 1."""

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


@pytest.fixture(scope="module")
def chain() -> Hypergraph:
    """Node 0 by an axiom edge, then node i from node i - 1 by edge i with the word "w"; every edge has f = 0.5."""
    space, vocabulary = FeatureSpace(), Vocabulary()
    space.index("f")
    word = vocabulary.index("w")
    features = sp.csr_matrix((np.full(N, 0.5), (np.arange(N), np.zeros(N, dtype=int))), shape=(N, 1))
    target = np.column_stack([np.full(N - 1, -1), np.full(N - 1, word)]).ravel()
    return Hypergraph(
        N,
        np.arange(N),
        np.concatenate(([0, 0], np.arange(1, N))),
        np.arange(N - 1),
        features,
        np.concatenate(([0, 0], 2 * np.arange(1, N))),
        target,
        space,
        vocabulary,
    )


@pytest.mark.slow
def test_every_algorithm_runs_on_a_200000_node_chain(chain):
    limit = sys.getrecursionlimit()
    w = Weights({"f": 1.0})
    scores = w.edge_scores(chain)
    total = 0.5 * N
    path = list(range(N - 1, -1, -1))  # the one derivation's edges in pre-order: the goal's edge first
    for engine in ("compiled", "generic"):
        values = scores if engine == "compiled" else list(scores)
        assert A.inside(chain, LogSemiring(), values, engine)[chain.goal] == pytest.approx(total)
    assert A.outside(chain, LogSemiring(), scores)[0] == pytest.approx(total - 0.5)
    assert count_derivations(chain) == 1 and A.inside(chain, CountingSemiring(), [1] * N)[chain.goal] == 1
    best = A.viterbi(chain, w)
    assert best.score == pytest.approx(total) and best.words == ["w"] * (N - 1) and best.derivation.edges() == path
    value, derivation = A.best_derivation(chain, TropicalSemiring(), list(scores), "generic")
    assert value == pytest.approx(total) and derivation == best.derivation and hash(derivation) == hash(best.derivation)
    assert repr(derivation).startswith(f"Derivation(edges=[{N - 1}, {N - 2}, ")
    (only,) = A.kbest(chain, w, 3)
    assert only.derivation.edges() == path and only.score == pytest.approx(total)
    (drawn,) = A.sample(chain, w, 1, random_state=0)
    assert drawn.derivation.edges() == path
    (enumerated,) = A.enumerate_derivations(chain)
    assert enumerated.edges() == path
    np.testing.assert_allclose(A.edge_posteriors(chain, w), np.ones(N))
    assert A.feature_expectations(chain, w)[0] == pytest.approx(total)
    assert A.entropy(chain, w) == pytest.approx(0.0, abs=1e-6)
    for method in (envelope_inside, envelope_by_probing):
        envelope = method(chain, scores, scores)
        assert len(envelope) == 1 and envelope.derivation(0).edges() == path
    assert prune(chain, scores, 10)[0].num_edges == N  # the model-best derivation always survives
    tuning_set = TuningSet([chain], [["w w w"]], BleuMetric(tokenize="none"))
    surfaces = LineSearcher(tuning_set).surfaces(w.vector(chain.feature_space), np.ones(1))
    assert surfaces.segments == 1
    hope_fear = HopeFearDecoder(tuning_set).hope_fear(0, w.vector(chain.feature_space), Gain("bleu+1", 4))
    assert hope_fear.hope.derivation.edges() == path and hope_fear.fear.derivation.edges() == path
    assert sys.getrecursionlimit() == limit
