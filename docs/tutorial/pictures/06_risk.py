"""Chapter 6's picture: expected BLEU+1 and entropy of p_T(d) ∝ exp(w·f(d)/T) on the toy forest against the
temperature T, from hypertune's minimum-risk objective (line) and brute force over the 27 derivations (dots).

    python docs/tutorial/pictures/06_risk.py docs/tutorial/images/06-risk.svg
"""

from __future__ import annotations

import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from scipy.special import logsumexp

from hypertune.algorithms import enumerate_derivations
from hypertune.formats import read_graphs, read_weights
from hypertune.metrics import get_metric
from hypertune.tuners import TuningSet
from hypertune.tuners.minrisk import MinRisk

FOREST = "fixtures/toy-forest.json"
WEIGHTS = "fixtures/toy-forest.weights"
REFERENCE = "the small house"
TABLE = (0.01, 0.1, 0.3, 1, 3, 10, 100)  # the chapter's table


def main(out: str) -> None:
    plt.rcParams["svg.hashsalt"] = "hypertune-tutorial"
    plt.rcParams["svg.fonttype"] = "none"
    forest = read_graphs(FOREST)[0]
    weights = read_weights(WEIGHTS)
    bleu1 = get_metric("bleu+1", tokenize="none")
    tuning_set = TuningSet([forest], [[REFERENCE]], bleu1)
    derivations = enumerate_derivations(forest)
    w = weights.vector(forest.feature_space, len(forest.feature_space))
    model = np.array([forest.derivation_features(d) @ w for d in derivations])
    gain = np.array([bleu1.sentence_score(" ".join(forest.derivation_words(d)), [REFERENCE]) for d in derivations])

    temperatures = np.geomspace(0.01, 100, 200)
    found = [MinRisk(objective="risk", scale=1 / t).evaluate(tuning_set, weights) for t in temperatures]
    expected = np.array([1 - e.value for e in found])
    entropy = np.array([e.entropy for e in found])
    dots = np.array(TABLE, dtype=float)
    probabilities = [np.exp(model / t - logsumexp(model / t)) for t in dots]
    dot_expected = np.array([p @ gain for p in probabilities])
    dot_entropy = np.array([-(p[p > 0] @ np.log(p[p > 0])) for p in probabilities])

    figure, (top, bottom) = plt.subplots(2, 1, figsize=(6.4, 5.2), sharex=True)
    top.plot(temperatures, expected, color="C0", label="hypertune minrisk (risk objective)")
    top.plot(dots, dot_expected, "o", color="C1", label="brute force, 27 derivations")
    top.axhline(gain[np.argmax(model)], ls="--", color="grey")
    top.axhline(gain.mean(), ls=":", color="grey")
    top.annotate(
        "T → 0: the 1-best's BLEU+1, the cottage (dashed)", (0.012, gain[np.argmax(model)] + 0.0065), fontsize=8
    )
    top.annotate("T → ∞: mean BLEU+1 of the 27 (dotted)", (2, gain.mean() - 0.009), fontsize=8)
    top.set_ylim(0.41, 0.53)
    top.set_ylabel("expected BLEU+1 = 1 − risk")
    top.legend(loc="upper left", fontsize=8)
    bottom.plot(temperatures, entropy, color="C0")
    bottom.plot(dots, dot_entropy, "o", color="C1")
    bottom.axhline(np.log(len(derivations)), ls=":", color="grey")
    bottom.annotate("log 27: uniform", (0.012, np.log(len(derivations)) - 0.3), fontsize=8)
    bottom.set_ylabel("entropy of p_T (nats)")
    bottom.set_xlabel("temperature T (log scale); p_T(d) ∝ exp(w·f(d) / T), γ = 1/T")
    bottom.set_xscale("log")
    figure.suptitle("Toy forest: expected BLEU+1 and entropy against temperature")
    figure.tight_layout()
    figure.savefig(out, format="svg", metadata={"Date": None})


if __name__ == "__main__":
    main(sys.argv[1])
