"""The semiring contract every algorithm is written against (Goodman 1999; Li & Eisner 2009, Figure 1).

A semiring is a set ``K`` with ``plus`` (⊕, associative and commutative, identity ``zero``) and ``times``
(⊗, associative, identity ``one``, distributes over ⊕, and ``zero`` annihilates). Write a new one as a
small subclass::

    class MaxTimes(Semiring):
        zero, one = 0.0, 1.0
        idempotent = selective = True
        def plus(self, a, b): return max(a, b)
        def times(self, a, b): return a * b

and every generic algorithm (inside, outside, Viterbi, ...) runs with it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, ClassVar


class Semiring:
    """Base class: ``zero``, ``one``, ``plus``, ``times`` and the properties algorithms rely on.

    Properties (as in OpenFst's weight contract):

    * ``commutative``: ``a ⊗ b = b ⊗ a``. Outside scores need it.
    * ``idempotent``: ``a ⊕ a = a``.
    * ``selective``: ``a ⊕ b`` is ``a`` or ``b`` (a "Viterbi" semiring); best-derivation search needs it.
    * ``kernel``: the name of a compiled kernel family that computes the same as the generic code on
      float arrays (``None`` for semirings that only run generically). It applies only to the class that
      declares it (see :attr:`compiled_kernel`).
    """

    zero: Any
    one: Any
    commutative: ClassVar[bool] = True
    idempotent: ClassVar[bool] = False
    selective: ClassVar[bool] = False
    kernel: ClassVar[str | None] = None

    @property
    def compiled_kernel(self) -> str | None:
        """The compiled kernel algorithms may run for this semiring: ``kernel`` if this semiring's own class
        declares it, else ``None``. A subclass that overrides ``plus`` or ``times`` but inherits ``kernel``
        would otherwise get the parent's compiled kernel, which ignores the override; a subclass that
        computes the same as its parent re-declares ``kernel`` to keep the fast path."""
        return type(self).__dict__.get("kernel")

    def plus(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def times(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def sum(self, values: Iterable[Any]) -> Any:
        """⊕ over ``values`` (``zero`` if empty)."""
        total = self.zero
        for value in values:
            total = self.plus(total, value)
        return total

    def product(self, values: Iterable[Any]) -> Any:
        """⊗ over ``values`` from left to right (``one`` if empty)."""
        total = self.one
        for value in values:
            total = self.times(total, value)
        return total

    def equal(self, a: Any, b: Any, tolerance: float = 1e-9) -> bool:
        """Equality up to floating-point error (used by tests and by the axioms checker)."""
        if isinstance(a, float) or isinstance(b, float):
            return bool(a == b or math.isclose(a, b, rel_tol=tolerance, abs_tol=tolerance))
        return bool(a == b)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
