"""The real (probability) semiring (R+, +, ×): inside scores are partition functions."""

from hypertune.semirings.base import Semiring


class RealSemiring(Semiring):
    zero, one = 0.0, 1.0
    kernel = "real"

    def plus(self, a: float, b: float) -> float:
        return a + b

    def times(self, a: float, b: float) -> float:
        return a * b
