"""Chapter 3's entropy picture: the entropy of p(d) ∝ exp(scale · w·f(d)) on the small forest against the scale,
computed in log space (hypertune's ``entropy``, a line), by brute force over the five derivations (dots) and by
the real-valued expectation semiring (crosses), which fails once Z underflows (Li & Eisner 2009, Table 3).

    python docs/tutorial/pictures/03_entropy.py docs/tutorial/images/03-entropy.svg
"""

from __future__ import annotations

import math
import sys

import numpy as np

from hypertune.algorithms import entropy, enumerate_derivations
from hypertune.cli.plots import pyplot, save_figure
from hypertune.formats import read_graphs, read_weights
from hypertune.weights import Weights

FOREST = "docs/tutorial/data/01-forest.json"
WEIGHTS = "docs/tutorial/data/01-forest.weights"
MARKED = (0.01, 0.1, 0.3, 1, 2, 3, 10, 100, 1000, 1480, 1490, 2000)  # the dots and crosses


def main(out: str) -> None:
    forest = read_graphs(FOREST)[0]
    weights = read_weights(WEIGHTS)
    derivations = enumerate_derivations(forest)
    base = weights.edge_scores(forest)
    score = np.array([base[d.edges()].sum() for d in derivations])

    def scaled(scale: float) -> Weights:
        return Weights({name: weights[name] for name in weights}, scale=scale)

    def brute_force(scale: float) -> float:
        log_p = scale * score - np.logaddexp.reduce(scale * score)
        return float(-np.sum(np.exp(log_p) * log_p))

    def by_semiring(scale: float) -> float:
        with np.errstate(all="ignore"):
            return float(entropy(forest, scaled(scale), method="expectation"))

    scales = np.geomspace(0.01, 3000, 300)
    line = [entropy(forest, scaled(s)) for s in scales]
    marked = np.array(MARKED, dtype=float)
    semiring = np.array([by_semiring(s) for s in marked])
    finite = np.isfinite(semiring)
    underflow = 2 * 745.2  # exp(-0.5 · scale), the best derivation's value, is 0.0 in floats beyond here

    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6.4, 3.6))
    axis.axvspan(underflow * 0.99, 3000, color="0.92")
    axis.plot(scales, line, color="C0", label="log space: log Z − Σ p(e) s(e)  (entropy())")
    axis.plot(marked, [brute_force(s) for s in marked], "o", color="C1", label="brute force, five derivations")
    axis.plot(marked[finite], semiring[finite], "x", color="C3", ms=8, label="real expectation semiring")
    for s in marked[~finite]:
        axis.annotate("nan", (s, 0.05), color="C3", ha="center", fontsize=8)
    axis.axhline(math.log(5), ls=":", color="grey")
    axis.annotate("log 5 = 1.609: uniform", (0.012, math.log(5) + 0.05), fontsize=8)
    axis.annotate("scale 1: 1.152", (1, line[int(np.argmin(abs(scales - 1)))]), (2, 1.3), fontsize=8,
                  arrowprops={"arrowstyle": "->", "color": "grey"})  # fmt: skip
    axis.annotate("exp(score) underflows:\nthe semiring goes wrong,\nthen divides 0 by 0", (1150, 0.25), fontsize=8,
                  ha="right")  # fmt: skip
    axis.set_xscale("log")
    axis.set_ylim(-0.05, 2.2)
    axis.set_xlabel("scale (every weight multiplied by it; log axis)")
    axis.set_ylabel("entropy H (nats)")
    axis.set_title("Small forest: entropy of p(d) ∝ exp(scale · w·f(d))", fontsize=10)
    axis.legend(loc="upper right", fontsize=8)
    save_figure(figure, out)


if __name__ == "__main__":
    main(sys.argv[1])
