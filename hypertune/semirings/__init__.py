"""Semirings: one small class each. See :mod:`hypertune.semirings.base` for the contract."""

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np

from hypertune.semirings.base import Semiring
from hypertune.semirings.boolean import BooleanSemiring
from hypertune.semirings.counting import CountingSemiring
from hypertune.semirings.expectation import (
    ExpectationSemiring,
    ExpectationValues,
    SecondOrderExpectationSemiring,
)
from hypertune.semirings.kbest import KBestSemiring
from hypertune.semirings.log import LogSemiring
from hypertune.semirings.real import RealSemiring
from hypertune.semirings.tropical import TropicalSemiring, ViterbiSemiring

# One value per edge (or per node) in a semiring: a list for the generic algorithms, a float array for the
# scalar compiled kernels, ExpectationValues for the expectation kernel. All are indexed by edge (node).
SemiringValues: TypeAlias = Sequence[Any] | np.ndarray | ExpectationValues

__all__ = [
    "BooleanSemiring",
    "CountingSemiring",
    "ExpectationSemiring",
    "ExpectationValues",
    "KBestSemiring",
    "LogSemiring",
    "RealSemiring",
    "SecondOrderExpectationSemiring",
    "Semiring",
    "SemiringValues",
    "TropicalSemiring",
    "ViterbiSemiring",
]
