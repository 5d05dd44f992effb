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


def visible(name: str) -> str:
    """``name`` as a message should print it: as written when every character shows and none is blank, else
    in ``repr`` form with escapes (``'\\ufefftm_0'``, ``'LM0\\xa0'``, ``'tm 0'``), so that a byte-order mark,
    a non-breaking or zero-width space or a stray blank cannot hide in a message that seems to name the
    right feature."""
    return name if name and name.isprintable() and not any(c.isspace() for c in name) else repr(name)


def dense_features(graphs: Sequence[Hypergraph]) -> list[str]:
    """The inputs' dense features: those that every edge carrying features carries, in every graph (in a
    k-best list: every hypothesis), in column order. A decoder's dense features score every hypothesis
    (n-best lists and FEATSTAT files write them, zeros included, on every line), while sparse ones (word
    pairs, rule indicators) occur on some. In a forest whose writer drops zero values, a dense feature
    that is 0 on some rule is missed: the set errs towards fewer features, never towards sparse ones.
    One count over all graphs' feature columns (a column on every carrying edge occurs as often as there
    are such edges)."""
    if not graphs:
        return []
    space = graphs[0].feature_space
    matrices = [hg.features for hg in graphs]
    carrying = sum(int(np.count_nonzero(m.indptr[1:] != m.indptr[:-1])) for m in matrices)
    if not carrying:
        return []
    counts = np.bincount(np.concatenate([m.indices for m in matrices]), minlength=len(space))
    return space.symbols(int(c) for c in np.flatnonzero(counts >= carrying))


def check_feature_names(
    weights: Mapping[str, float],
    space: FeatureSpace,
    source: str,
    strict: bool = False,
    *,
    graphs: Sequence[Hypergraph] | None = None,
    params_option: bool | None = None,
) -> None:
    """Weights must name the inputs' features. Names the inputs lack (a typo, a feature the decoder did not
    emit) are a warning, or with ``strict`` an error; a tuner keeps them and writes them back with the
    tuned weights, since the decoder still uses them. No name matching at all is always an error (e.g.
    Z-MERT weights for candidates read without their parameter file, whose features are ``F0, F1, ...``).

    ``space`` is the inputs' :class:`FeatureSpace`; given their ``graphs`` too, weights that name fewer than
    half of their :func:`dense_features` are also a warning naming those that start at 0. ``params_option``: whether
    the command takes a Z-MERT parameter file with ``--params`` (``None``: not known), for the hint.
    Names are printed with :func:`visible`."""
    known = list(space.names)
    unknown = [name for name in weights if space.get(name) is None]
    if unknown or not len(weights):
        _unknown_names(weights, unknown, known, source, strict, params_option)
    if graphs is not None and any(name not in weights for name in known):
        _few_dense_weights(weights, dense_features(graphs), source)


def _unknown_names(
    weights: Mapping[str, float],
    unknown: list[str],
    known: list[str],
    source: str,
    strict: bool,
    params_option: bool | None,
) -> None:
    shown = ", ".join(_with_closest(name, known) for name in unknown[:8]) + (" ..." if len(unknown) > 8 else "")
    features = ", ".join(visible(name) for name in known[:8]) + (" ..." if len(known) > 8 else "")
    if len(unknown) == len(weights):
        what = f"no weight names a feature of the inputs ({shown})" if unknown else "there are no weights"
        hint = ""
        if known and all(re.fullmatch(r"F\d+", name) for name in known):
            hint = " (" + _ZMERT_HINTS[params_option] + ")"
        raise InputError(f"{what}; the inputs' features are {features}{hint}", source)
    message = f"{len(unknown)} weight(s) name no feature of the inputs: {shown}"
    if strict:
        raise InputError(f"{message} (--strict)", source)
    warn(f"{source}: {message}; they are kept and written back with the tuned weights (--strict: an error)")


_ZMERT_HINTS = {
    True: "Z-MERT candidates: give the parameter file with --params to name their features",
    False: "Z-MERT candidates are read here without a parameter file: name their weights F0, F1, ... in column order",
    None: "Z-MERT candidates read without their parameter file are named F0, F1, ... in column order: name "
    "the weights so, or give the parameter file with --params where the command has that option",
}


def _few_dense_weights(weights: Mapping[str, float], dense: Sequence[str], source: str) -> None:
    """Warn when ``weights`` name fewer than half of the ``dense`` features: the others start at 0, which
    is rarely meant (a file cut short, the weights of another system)."""
    missing = [name for name in dense if name not in weights]
    named = len(dense) - len(missing)
    if not dense or 2 * named >= len(dense):
        return
    shown = ", ".join(visible(name) for name in missing[:10]) + (" ..." if len(missing) > 10 else "")
    warn(
        f"{source}: the weights name {named} of the inputs' {len(dense)} dense features; the other "
        f"{len(missing)} start at 0: {shown}"
    )


def _with_closest(name: str, known: Sequence[str]) -> str:
    """``name`` and what the inputs have instead: a feature's other number of components (``w_0`` where the
    inputs have a one-component ``w``, ``tm`` where they have ``tm_0 .. tm_4``), else the closest name."""
    component = re.fullmatch(r"(.+)_\d+", name)
    if component and component.group(1) in known:
        return f"{visible(name)} (the inputs' {visible(component.group(1))} has one component)"
    prefix = name + "_"
    components = [other for other in known if other.startswith(prefix) and other[len(prefix) :].isdigit()]
    if components:
        return f"{visible(name)} (the inputs have {visible(components[0])} .. {visible(components[-1])})"
    close = difflib.get_close_matches(name, known, n=1)
    return f"{visible(name)} (did you mean {visible(close[0])}?)" if close else visible(name)
