"""The counting semiring (N, +, ×) on Python integers: exact derivation counts however large."""

from hypertune.semirings.base import Semiring


class CountingSemiring(Semiring):
    zero, one = 0, 1

    def plus(self, a: int, b: int) -> int:
        return a + b

    def times(self, a: int, b: int) -> int:
        return a * b
