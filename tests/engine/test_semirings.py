"""Semiring axioms for every built-in semiring, on random elements."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hypertune.hypergraph import Derivation
from hypertune.semirings import (
    BooleanSemiring,
    CountingSemiring,
    ExpectationSemiring,
    KBestSemiring,
    LogSemiring,
    RealSemiring,
    SecondOrderExpectationSemiring,
    TropicalSemiring,
)

small = st.floats(-5, 5, allow_nan=False)
log_values = st.one_of(st.just(-math.inf), small)
vector = st.lists(small, min_size=2, max_size=2).map(np.array)
matrix = st.lists(small, min_size=4, max_size=4).map(lambda v: np.array(v).reshape(2, 2))
nonnegative = st.floats(0, 5, allow_nan=False)


def kbest_values(k: int) -> st.SearchStrategy:
    items = st.lists(small, max_size=k).map(
        lambda scores: tuple((s, Derivation(i)) for i, s in enumerate(sorted(scores, reverse=True)))
    )
    return items


CASES = [
    (BooleanSemiring(), st.booleans()),
    (CountingSemiring(), st.integers(0, 10**30)),
    (RealSemiring(), nonnegative),
    (LogSemiring(), log_values),
    (TropicalSemiring(), log_values),
    (KBestSemiring(3), kbest_values(3)),
    (ExpectationSemiring(2), st.tuples(nonnegative, vector)),
    (SecondOrderExpectationSemiring(2, 2), st.tuples(nonnegative, vector, vector, matrix)),
]


def close(semiring, a, b):
    return semiring.equal(a, b, 1e-7)


@pytest.mark.parametrize(("semiring", "elements"), CASES, ids=[type(s).__name__ for s, _ in CASES])
def test_semiring_axioms(semiring, elements):
    @given(elements, elements, elements)
    def check(a, b, c):
        plus, times = semiring.plus, semiring.times
        assert close(semiring, plus(plus(a, b), c), plus(a, plus(b, c)))
        assert close(semiring, plus(a, b), plus(b, a))
        assert close(semiring, plus(a, semiring.zero), a)
        assert close(semiring, times(times(a, b), c), times(a, times(b, c)))
        assert close(semiring, times(a, semiring.one), a)
        assert close(semiring, times(semiring.one, a), a)
        assert close(semiring, times(a, semiring.zero), semiring.zero)
        assert close(semiring, times(semiring.zero, a), semiring.zero)
        assert close(semiring, times(a, plus(b, c)), plus(times(a, b), times(a, c)))
        assert close(semiring, times(plus(a, b), c), plus(times(a, c), times(b, c)))
        if semiring.commutative:
            assert close(semiring, times(a, b), times(b, a))
        if semiring.idempotent:
            assert close(semiring, plus(a, a), a)
        if semiring.selective:
            assert close(semiring, plus(a, b), a) or close(semiring, plus(a, b), b)

    check()


def test_log_plus_is_stable_far_from_zero():
    log = LogSemiring()
    assert log.plus(-1000.0, -1000.0) == pytest.approx(-1000.0 + math.log(2))
    assert log.plus(800.0, 800.0) == pytest.approx(800.0 + math.log(2))
    assert log.plus(-math.inf, -math.inf) == -math.inf


def test_counting_is_exact_beyond_floats():
    counting = CountingSemiring()
    big = 10**40 + 1
    assert counting.times(big, big) == 10**80 + 2 * 10**40 + 1
