"""Semiring axioms (Goodman 1999, Sect. 2) for every semiring the package exports, on random elements.

The semirings are discovered, not listed: every :class:`~hypertune.semirings.Semiring` subclass that
``hypertune.semirings`` exports or defines in one of its modules runs through the axioms, and a new one
without a sampler of its elements in :data:`SAMPLERS` fails rather than being skipped.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hypertune.semirings
from hypertune.hypergraph import Derivation
from hypertune.semirings import (
    BooleanSemiring,
    CountingSemiring,
    ExpectationSemiring,
    KBestSemiring,
    LogSemiring,
    RealSemiring,
    SecondOrderExpectationSemiring,
    Semiring,
    TropicalSemiring,
)
from hypertune.semirings.envelope import CommutativeEnvelopeSemiring, EnvelopeSemiring, Line, upper_envelope

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


def envelopes() -> st.SearchStrategy:
    """Upper envelopes of up to four lines with small integer slopes and intercepts (breakpoints rational)."""
    line = st.tuples(st.integers(-3, 3), st.integers(-4, 4)).map(lambda ms: Line(-math.inf, float(ms[0]), float(ms[1])))
    return st.lists(line, max_size=4).map(upper_envelope)


# Each exported semiring class: an instance (with a sample parameter where it takes one) and its elements.
SAMPLERS: dict[type[Semiring], Callable[[], tuple[Semiring, st.SearchStrategy]]] = {
    BooleanSemiring: lambda: (BooleanSemiring(), st.booleans()),
    CountingSemiring: lambda: (CountingSemiring(), st.integers(0, 10**30)),
    RealSemiring: lambda: (RealSemiring(), nonnegative),
    LogSemiring: lambda: (LogSemiring(), log_values),
    TropicalSemiring: lambda: (TropicalSemiring(), log_values),
    KBestSemiring: lambda: (KBestSemiring(3), kbest_values(3)),
    ExpectationSemiring: lambda: (ExpectationSemiring(2), st.tuples(nonnegative, vector)),
    SecondOrderExpectationSemiring: lambda: (
        SecondOrderExpectationSemiring(2, 2),
        st.tuples(nonnegative, vector, vector, matrix),
    ),
    EnvelopeSemiring: lambda: (EnvelopeSemiring(), envelopes()),
    CommutativeEnvelopeSemiring: lambda: (CommutativeEnvelopeSemiring(), envelopes()),
}


def exported_semirings() -> list[type[Semiring]]:
    """Every public Semiring subclass of ``hypertune.semirings`` and of its modules (aliases such as
    ``ViterbiSemiring`` are their class), by name."""
    package = hypertune.semirings
    modules = [package] + [
        importlib.import_module(f"{package.__name__}.{info.name}")
        for info in pkgutil.iter_modules(package.__path__)
        if not info.name.startswith("_")
    ]
    found = {
        value
        for module in modules
        for name, value in vars(module).items()
        if not name.startswith("_") and isinstance(value, type) and issubclass(value, Semiring)
    }
    found.discard(Semiring)
    return sorted(found, key=lambda cls: cls.__name__)


EXPORTED = exported_semirings()


def test_every_exported_semiring_has_a_sampler_and_every_sampler_a_semiring():
    assert {cls.__name__ for cls in EXPORTED} >= {"TropicalSemiring", "KBestSemiring", "EnvelopeSemiring"}
    missing = [cls.__name__ for cls in EXPORTED if cls not in SAMPLERS]
    assert not missing, f"add a sampler of elements to SAMPLERS for {missing}"
    stale = [cls.__name__ for cls in SAMPLERS if cls not in EXPORTED]
    assert not stale, f"SAMPLERS names semirings the package no longer exports: {stale}"


def close(semiring, a, b):
    return semiring.equal(a, b, 1e-7)


@pytest.mark.parametrize("cls", EXPORTED, ids=[cls.__name__ for cls in EXPORTED])
def test_semiring_axioms(cls):
    if cls not in SAMPLERS:
        pytest.fail(f"{cls.__name__} has no sampler of elements in SAMPLERS: its axioms would go unchecked")
    semiring, elements = SAMPLERS[cls]()
    assert type(semiring) is cls

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
