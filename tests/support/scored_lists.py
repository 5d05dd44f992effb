"""Small k-best lists whose hypotheses carry given scores (``scores.NAME``, issue #30), kept beside the plain
arrays they were made from, and the brute-force reranking the tests compare the tuners with: per sentence the
hypothesis of highest ``features · w``, the first on ties (Moses's rule, ``tuners/model_best.py``), computed
here with NumPy alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from hypertune.hypergraph import Hypergraph, from_kbest
from hypertune.metrics import Metric, parse_metric
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.tuners import TuningSet


@dataclass
class ScoredLists:
    """Per sentence: a (k, F) feature matrix, named score columns of length k and the hypotheses' texts."""

    features: list[np.ndarray]
    scores: list[dict[str, np.ndarray]]
    texts: list[list[str]]

    @property
    def names(self) -> list[str]:
        return [f"f{j}" for j in range(self.features[0].shape[1])]

    def graphs(self) -> list[Hypergraph]:
        space, vocabulary = FeatureSpace(), Vocabulary()
        for name in self.names:  # every feature in the space, in this order, even a column of zeros
            space.index(name)
        out = []
        for s, (matrix, scores, texts) in enumerate(zip(self.features, self.scores, self.texts, strict=True)):
            hyps = [
                (text, dict(zip(self.names, map(float, row), strict=True)))
                for text, row in zip(texts, matrix, strict=True)
            ]
            out.append(from_kbest(hyps, space, vocabulary, scores={k: v.tolist() for k, v in scores.items()},
                                  sentence_id=s))  # fmt: skip
        return out

    def tuning_set(
        self, metric: str | Metric = "scores.comet", references: Sequence[list[str]] | None = None
    ) -> TuningSet:
        chosen = parse_metric(metric) if isinstance(metric, str) else metric
        return TuningSet.from_corpus(self.graphs(), references, chosen)

    def vector(self, weights: Mapping[str, float]) -> np.ndarray:
        """``weights`` as a vector over :attr:`names` (0 for a missing name)."""
        return np.array([float(weights.get(n, 0.0)) for n in self.names])

    def chosen(self, w: np.ndarray) -> list[int]:
        """Each sentence's model-best hypothesis under ``w``: ``np.argmax`` of ``features @ w``, the first on ties."""
        return [int(np.argmax(matrix @ w)) for matrix in self.features]

    def mean_score(self, w: np.ndarray, name: str = "comet") -> float:
        """The mean over sentences of the model-best hypotheses' score ``name``."""
        return float(np.mean([scores[name][i] for scores, i in zip(self.scores, self.chosen(w), strict=True)]))


def random_lists(
    rng: np.random.Generator,
    sentences: int = 6,
    hypotheses: tuple[int, int] = (3, 7),
    features: int = 3,
    names: Sequence[str] = ("comet",),
    correlated: bool = False,
) -> ScoredLists:
    """Random lists: integer features in [-3, 3], scores in quarters in [-1, 1] (ties happen); ``correlated``:
    the first score follows a hidden weight vector plus noise, so that tuners have something to learn."""
    hidden = rng.normal(size=features)
    out = ScoredLists([], [], [])
    for s in range(sentences):
        k = int(rng.integers(hypotheses[0], hypotheses[1] + 1))
        matrix = rng.integers(-3, 4, size=(k, features)).astype(np.float64)
        scores = {n: rng.integers(-4, 5, size=k) / 4.0 for n in names}
        if correlated:
            signal = matrix @ hidden + rng.normal(scale=0.5, size=k)
            scores[names[0]] = np.round(np.tanh(signal / 3) * 4) / 4
        out.features.append(matrix)
        out.scores.append(scores)
        out.texts.append([f"s{s} w{int(rng.integers(0, 4))} h{i}" for i in range(k)])
    return out


@st.composite
def scored_lists(draw: st.DrawFn, max_sentences: int = 4, max_hypotheses: int = 6, features: int = 2) -> ScoredLists:
    """A hypothesis strategy: 1 to ``max_sentences`` lists of 1 to ``max_hypotheses`` hypotheses, integer
    features in [-2, 2] (equal lines, parallel lines and lines crossing at one point are all common) and
    score ``comet`` in quarters in [-1, 1]."""
    sentences = draw(st.integers(1, max_sentences))
    out = ScoredLists([], [], [])
    for s in range(sentences):
        k = draw(st.integers(1, max_hypotheses))
        values = draw(st.lists(st.integers(-2, 2), min_size=k * features, max_size=k * features))
        out.features.append(np.array(values, dtype=np.float64).reshape(k, features))
        out.scores.append({"comet": np.array(draw(st.lists(st.integers(-4, 4), min_size=k, max_size=k))) / 4.0})
        out.texts.append([f"s{s} h{i}" for i in range(k)])
    return out
