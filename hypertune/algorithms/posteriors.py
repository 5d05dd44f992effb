"""Quantities of the log-linear distribution p(d) = exp(w·f(d)) / Z over derivations.

All of them come from one inside and one outside pass in the log semiring (cdec's
``InsideOutside``): the posterior of edge ``e`` is ``exp(α(head) + s_e + Σ β(tails) - log Z)``, and the
expectation of any additive quantity is its posterior-weighted sum over edges. The same numbers are
available through the first-order expectation semiring (Li & Eisner 2009), which the ``method``
arguments select and the tests compare against.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from hypertune.algorithms.inside_outside import Engine, edge_inside, inside, outside
from hypertune.hypergraph import Hypergraph
from hypertune.semirings import ExpectationSemiring, LogSemiring
from hypertune.weights import Weights

Method = Literal["posterior", "expectation"]


def log_partition(hg: Hypergraph, weights: Weights, engine: Engine = "auto") -> float:
    """log Z = log Σ_d exp(w·f(d)): the log semiring's inside value of the goal."""
    return float(inside(hg, LogSemiring(), weights.edge_scores(hg), engine)[hg.goal])


def log_inside_outside(
    hg: Hypergraph, weights: Weights, engine: Engine = "auto"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edge scores, log inside and log outside of every node."""
    semiring = LogSemiring()
    scores = weights.edge_scores(hg)
    beta = np.asarray(inside(hg, semiring, scores, engine), dtype=np.float64)
    alpha = np.asarray(outside(hg, semiring, scores, beta, engine), dtype=np.float64)
    return scores, beta, alpha


def edge_posteriors(hg: Hypergraph, weights: Weights, engine: Engine = "auto") -> np.ndarray:
    """p(e ∈ d) for every edge: exp(α(head) + s_e + Σ_tails β - log Z)."""
    scores, beta, alpha = log_inside_outside(hg, weights, engine)
    through = np.asarray(edge_inside(hg, LogSemiring(), scores, beta, engine), dtype=np.float64)
    return np.exp(alpha[hg.head] + through - beta[hg.goal])


def node_marginals(hg: Hypergraph, weights: Weights, engine: Engine = "auto") -> np.ndarray:
    """p(v ∈ d) for every node: exp(α(v) + β(v) - log Z)."""
    _, beta, alpha = log_inside_outside(hg, weights, engine)
    return np.exp(alpha + beta - beta[hg.goal])


def feature_expectations(
    hg: Hypergraph, weights: Weights, engine: Engine = "auto", method: Method = "posterior"
) -> np.ndarray:
    """E_p[f(d)] over the whole feature space: the gradient of log Z with respect to the (scaled) weights.

    ``method="posterior"``: Σ_e p(e) f_e (stable on any graph). ``method="expectation"``: the inside value
    ``<Z, Σ_d p(d) f(d)>`` of the first-order expectation semiring, divided out (real-valued, so only for
    graphs whose Z fits in a float).
    """
    features = hg.feature_matrix()
    if method == "posterior":
        return np.asarray(features.T @ edge_posteriors(hg, weights, engine)).ravel()
    semiring = ExpectationSemiring(features.shape[1])
    values = semiring.edge_values(np.exp(weights.edge_scores(hg)), features.toarray())
    z, total = inside(hg, semiring, values, engine)[hg.goal]
    return np.asarray(total) / z


def entropy(hg: Hypergraph, weights: Weights, engine: Engine = "auto", method: Method = "posterior") -> float:
    """Entropy (nats) of p(d): H = log Z - E_p[w·f(d)] (Li & Eisner 2009, Table 3)."""
    scores = weights.edge_scores(hg)
    if method == "posterior":
        return log_partition(hg, weights, engine) - float(edge_posteriors(hg, weights, engine) @ scores)
    semiring = ExpectationSemiring(1)
    z, total = inside(hg, semiring, semiring.edge_values(np.exp(scores), scores), engine)[hg.goal]
    return float(np.log(z) - total[0] / z)
