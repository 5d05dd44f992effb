"""Model weights: a mapping from feature names to values that scores edges as ``scale * (w . f_e)``."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from hypertune.errors import InputError, warn
from hypertune.symbols import FeatureSpace

if TYPE_CHECKING:
    from hypertune.hypergraph import Hypergraph


class Weights(MutableMapping[str, float]):
    """Feature weights by name. Missing names weigh zero.

    ``scale`` multiplies every score: the sharpness (inverse temperature) of the log-linear distribution
    ``p(d) ∝ exp(scale * w . f(d))`` used by minimum risk and sampling; Viterbi ignores it.
    """

    def __init__(self, values: Mapping[str, float] | Iterable[tuple[str, float]] = (), scale: float = 1.0) -> None:
        self._values: dict[str, float] = {}
        self.scale = float(scale)
        items = values.items() if isinstance(values, Mapping) else values
        for name, value in items:
            self[name] = value

    def __getitem__(self, name: str) -> float:
        return self._values[name]

    def __setitem__(self, name: str, value: float) -> None:
        value = float(value)
        if not np.isfinite(value):
            raise ValueError(f"weight {name!r} must be finite, not {value}")
        self._values[name] = value

    def __delitem__(self, name: str) -> None:
        del self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v:g}" for k, v in self._values.items())
        scale = f", scale={self.scale:g}" if self.scale != 1.0 else ""
        return f"Weights({inner}{scale})"

    def copy(self) -> Weights:
        return Weights(self._values, self.scale)

    def vector(self, space: FeatureSpace, width: int | None = None) -> np.ndarray:
        """The weights as a dense vector over ``space``'s columns (unknown names are ignored),
        multiplied by ``scale``; ``width`` defaults to the size of the space."""
        width = len(space) if width is None else width
        vector = np.zeros(width, dtype=np.float64)
        for name, value in self._values.items():
            column = space.get(name)
            if column is not None and column < width:
                vector[column] = value
        return vector * self.scale

    @classmethod
    def from_vector(cls, space: FeatureSpace, vector: np.ndarray, scale: float = 1.0) -> Weights:
        """Weights named by ``space`` from a dense vector (zeros are kept, so every feature is listed)."""
        return cls(zip(space.names[: len(vector)], (float(v) for v in vector), strict=True), scale)

    def edge_scores(self, hg: Hypergraph) -> np.ndarray:
        """``scale * (w . f_e)`` for every edge of ``hg``, one sparse matrix-vector product."""
        from hypertune.compiled import csr_matvec

        features = hg.features
        return csr_matvec(
            features.indptr, features.indices, features.data, self.vector(hg.feature_space, features.shape[1])
        )


def check_feature_names(weights: Mapping[str, float], space: FeatureSpace, source: str, strict: bool = False) -> None:
    """Weights must name the inputs' features. Names the inputs lack (a typo, a feature the decoder did not
    emit) are a warning, or with ``strict`` an error; a tuner keeps them and writes them back with the
    tuned weights, since the decoder still uses them. No name matching at all is always an error (e.g.
    Z-MERT weights for candidates read without ``--params``, whose features are ``F0, F1, ...``)."""
    known = list(space.names)
    unknown = [name for name in weights if space.get(name) is None]
    if not unknown and len(weights):
        return
    shown = ", ".join(_with_closest(name, known) for name in unknown[:8]) + (" ..." if len(unknown) > 8 else "")
    features = ", ".join(known[:8]) + (" ..." if len(known) > 8 else "")
    if len(unknown) == len(weights):
        what = f"no weight names a feature of the inputs ({shown})" if unknown else "there are no weights"
        hint = ""
        if known and all(re.fullmatch(r"F\d+", name) for name in known):
            hint = " (Z-MERT candidates: give the parameter file with --params to name their features)"
        raise InputError(f"{what}; the inputs' features are {features}{hint}", source)
    message = f"{len(unknown)} weight(s) name no feature of the inputs: {shown}"
    if strict:
        raise InputError(f"{message} (--strict)", source)
    warn(f"{source}: {message}; they are kept and written back with the tuned weights (--strict: an error)")


def _with_closest(name: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"{name} (did you mean {close[0]}?)" if close else name
