"""Semirings: one small class each. See :mod:`hypertune.semirings.base` for the contract."""

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
    "TropicalSemiring",
    "ViterbiSemiring",
]
