"""The tropical (Viterbi) semiring (R ∪ {-inf}, max, +): inside scores are best-derivation scores.

Back-pointers are kept by the Viterbi algorithm (:func:`hypertune.algorithms.viterbi.best_derivation`),
which works for any selective semiring; the values here stay plain floats so the compiled kernel applies.
"""

import math

from hypertune.semirings.base import Semiring


class TropicalSemiring(Semiring):
    zero, one = -math.inf, 0.0
    idempotent = selective = True
    kernel = "tropical"

    def plus(self, a: float, b: float) -> float:
        return a if a >= b else b

    def times(self, a: float, b: float) -> float:
        return a + b


ViterbiSemiring = TropicalSemiring
