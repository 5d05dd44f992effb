"""The log semiring (R ∪ {-inf}, log-sum-exp, +): the real semiring in log space, without underflow."""

import math

from hypertune.semirings.base import Semiring


class LogSemiring(Semiring):
    zero, one = -math.inf, 0.0
    kernel = "log"

    def plus(self, a: float, b: float) -> float:
        """log(e^a + e^b), computed as max + log1p(e^-|a-b|) so it never overflows."""
        if a == -math.inf:
            return b
        if b == -math.inf:
            return a
        high, low = (a, b) if a >= b else (b, a)
        return high + math.log1p(math.exp(low - high))

    def times(self, a: float, b: float) -> float:
        return a + b
