"""The Boolean semiring ({False, True}, or, and): does a derivation exist?"""

from hypertune.semirings.base import Semiring


class BooleanSemiring(Semiring):
    zero, one = False, True
    idempotent = selective = True
    kernel = "boolean"

    def plus(self, a: bool, b: bool) -> bool:
        return a or b

    def times(self, a: bool, b: bool) -> bool:
        return a and b
