"""Chapter 6's second picture (Neubig's chapter 18, Figure 56, for the toy forest): the risk E_T[1 − BLEU+1]
along the lm weight, the other weights fixed, at four temperatures, by brute force over the 27 derivations.

    python docs/tutorial/pictures/06_surface.py docs/tutorial/images/06-surface.svg
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

FOREST = "fixtures/toy-forest.json"
WEIGHTS = "fixtures/toy-forest.weights"
REFERENCE = "the small house"
TEMPERATURES = (0.01, 0.1, 0.3, 1.0)


def main(out: str) -> None:
    plt.rcParams["svg.hashsalt"] = "hypertune-tutorial"
    plt.rcParams["svg.fonttype"] = "none"
    forest = read_graphs(FOREST)[0]
    weights = read_weights(WEIGHTS)
    bleu1 = get_metric("bleu+1", tokenize="none")
    derivations = enumerate_derivations(forest)
    texts = [" ".join(forest.derivation_words(d)) for d in derivations]
    features = np.array([forest.derivation_features(d) for d in derivations])
    loss = 1 - np.array([bleu1.sentence_score(t, [REFERENCE]) for t in texts])
    w = weights.vector(forest.feature_space, len(forest.feature_space))
    lm = forest.feature_space.index("lm")

    grid = np.linspace(-2.0, 1.5, 701)
    scores = np.array([features @ np.where(np.arange(w.size) == lm, x, w) for x in grid])  # grid × derivations
    figure, axes = plt.subplots(figsize=(6.4, 3.8))
    best = np.array([texts[i] for i in scores.argmax(axis=1)])
    valley = grid[best == REFERENCE]
    axes.axvspan(valley.min(), valley.max(), color="C2", alpha=0.15, label=f'1-best is "{REFERENCE}"')
    for k, temperature in enumerate(TEMPERATURES):
        scaled = scores / temperature
        p = np.exp(scaled - logsumexp(scaled, axis=1, keepdims=True))
        axes.plot(grid, p @ loss, color=f"C{k}", label=f"T = {temperature:g}")
    axes.axvline(w[lm], ls="--", color="grey")
    axes.annotate("start weight", (w[lm] + 0.03, 0.05), fontsize=8)
    axes.set_xlabel("weight of lm (tm, glue, reorder, drop fixed at the start weights)")
    axes.set_ylabel("risk E_T[1 − BLEU+1]")
    axes.set_title("Toy forest: the risk along one weight at four temperatures")
    axes.legend(fontsize=8, loc="lower left")
    figure.tight_layout()
    figure.savefig(out, format="svg", metadata={"Date": None})


if __name__ == "__main__":
    main(sys.argv[1])
