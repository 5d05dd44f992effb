"""Several independent tunings summed up (Clark et al. 2011): one MERT run says little, its spread does.

``hypertune tune --runs R`` runs the loop R times with seeds S..S+R-1 and reports the mean, the sample
standard deviation, the minimum and the maximum of dev (and test) BLEU; some production systems also
average the weights of the runs, which :func:`average_weights` does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hypertune.weights import Weights


def spread(values: Sequence[float]) -> dict[str, float]:
    """Mean, sample standard deviation (n - 1 in the denominator, as Clark et al.'s MultEval; 0 for one
    value), minimum and maximum of ``values``."""
    if not values:
        raise ValueError("no values")
    n = len(values)
    mean = math.fsum(values) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {"mean": mean, "sd": sd, "min": min(values), "max": max(values), "runs": n}


def average_weights(runs: Sequence[Weights]) -> Weights:
    """The mean of each weight over the runs (a weight a run lacks counts as 0), names in first-seen order."""
    names = list(dict.fromkeys(name for weights in runs for name in weights))
    return Weights({name: math.fsum(w.get(name, 0.0) for w in runs) / len(runs) for name in names})
