"""How good is the approximate hope/fear search? Measured against enumeration on small seeded random
forests or lattices (docs/mira.md, "How good is the approximate search?")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hypertune.algorithms import count_derivations, enumerate_derivations
from hypertune.generate import random_hypergraph
from hypertune.hypergraph import Hypergraph
from hypertune.metrics import BleuMetric
from hypertune.metrics.gains import Gain
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.hope_fear import HopeFearDecoder
from hypertune.weights import Weights


@dataclass(frozen=True)
class Approximation:
    """Share of sentences where the approximate search found an optimal hope / fear, and the mean gap
    (optimal objective minus found objective, in gain units) over all sentences."""

    graphs: int
    hope_exact: float
    fear_exact: float
    hope_gap: float
    fear_gap: float


def approximation_quality(
    num_graphs: int = 200,
    seed: int = 0,
    lattice: bool = False,
    num_edges: int = 30,
    vocabulary_size: int = 6,
    background: float = 1.0,
) -> Approximation:
    """Approximate hope/fear search against enumeration on ``num_graphs`` seeded random forests (or
    lattices) with a background-BLEU gain; references are noisy yields of random derivations."""
    rng = np.random.default_rng(seed)
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs: list[Hypergraph] = []
    references: list[list[str]] = []
    while len(graphs) < num_graphs:
        hg = random_hypergraph(
            num_edges,
            lattice=lattice,
            num_features=4,
            vocabulary_size=vocabulary_size,
            fan_in=2,
            max_span=4,
            seed=rng,
            feature_space=space,
            vocabulary=vocabulary,
        )
        if count_derivations(hg) > 5000:
            continue
        derivations = enumerate_derivations(hg)
        words = hg.derivation_words(derivations[int(rng.integers(len(derivations)))])
        noisy = [w if rng.random() > 0.2 else f"w{rng.integers(vocabulary_size)}" for w in words] or ["w0"]
        graphs.append(hg)
        references.append([" ".join(noisy)])
    tuning_set = TuningSet(graphs, references, BleuMetric(tokenize="none"))
    weights = Weights({f"F{i}": float(rng.normal(scale=0.3)) for i in range(4)}).vector(space)
    decoder = HopeFearDecoder(tuning_set)
    gain = Gain("background", 4, 1.0, background)
    hope_hits = fear_hits = 0
    hope_gaps, fear_gaps = [], []
    for s, hg in enumerate(graphs):
        derivations = enumerate_derivations(hg)
        features = np.vstack([hg.derivation_features(d) for d in derivations])
        width = min(features.shape[1], weights.size)
        scores = features[:, :width] @ weights[:width]
        yields = [decoder.words(s, np.asarray(d.edges())) for d in derivations]
        gains = np.asarray(gain.score(tuning_set.yield_stats(s, yields)))
        found = decoder.hope_fear(s, weights, gain, with_model=False)
        hope_gap = float(np.max(scores + gains) - (found.hope.model_score + found.hope.gain))
        fear_gap = float(np.max(scores - gains) - (found.fear.model_score - found.fear.gain))
        hope_hits += hope_gap <= 1e-9
        fear_hits += fear_gap <= 1e-9
        hope_gaps.append(hope_gap)
        fear_gaps.append(fear_gap)
    n = len(graphs)
    return Approximation(n, hope_hits / n, fear_hits / n, float(np.mean(hope_gaps)), float(np.mean(fear_gaps)))
