"""Symbol tables: words and feature names mapped to dense integer ids.

A corpus of graphs shares one :class:`Vocabulary` (target words) and one
:class:`FeatureSpace` (feature names), so that word ids and feature columns mean
the same thing in every graph, and metrics can hash n-grams of integers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np


class SymbolTable:
    """A growing bijection between strings and the integers ``0 .. len-1``."""

    __slots__ = ("_ids", "_symbols")

    def __init__(self, symbols: Iterable[str] = ()) -> None:
        self._ids: dict[str, int] = {}
        self._symbols: list[str] = []
        for symbol in symbols:
            self.index(symbol)

    def index(self, symbol: str) -> int:
        """The id of ``symbol``, adding it if it is new."""
        found = self._ids.get(symbol)
        if found is None:
            found = len(self._symbols)
            self._ids[symbol] = found
            self._symbols.append(symbol)
        return found

    def indices(self, symbols: Iterable[str]) -> np.ndarray:
        """Ids of many symbols at once (adding new ones), as an int64 array."""
        return np.fromiter((self.index(s) for s in symbols), dtype=np.int64)

    def get(self, symbol: str, default: int | None = None) -> int | None:
        """The id of ``symbol`` without adding it."""
        return self._ids.get(symbol, default)

    def symbol(self, i: int) -> str:
        """The string with id ``i``."""
        return self._symbols[i]

    def symbols(self, ids: Iterable[int]) -> list[str]:
        """The strings of many ids."""
        table = self._symbols
        return [table[i] for i in ids]

    def __contains__(self, symbol: object) -> bool:
        return symbol in self._ids

    def __len__(self) -> int:
        return len(self._symbols)

    def __iter__(self) -> Iterator[str]:
        return iter(self._symbols)

    def __getitem__(self, i: int) -> str:
        return self._symbols[i]

    def __repr__(self) -> str:
        head = ", ".join(self._symbols[:5])
        more = ", ..." if len(self) > 5 else ""
        return f"{type(self).__name__}({len(self)}: {head}{more})"

    @property
    def names(self) -> Sequence[str]:
        """All symbols in id order (a read-only view)."""
        return tuple(self._symbols)


class Vocabulary(SymbolTable):
    """Target-side words. ``word(i)``/``words(ids)`` are aliases of ``symbol``/``symbols``."""

    __slots__ = ()

    def word(self, i: int) -> str:
        return self._symbols[i]

    def words(self, ids: Iterable[int]) -> list[str]:
        return self.symbols(ids)


class FeatureSpace(SymbolTable):
    """Feature names <-> columns of the edge feature matrices (dense and sparse features alike)."""

    __slots__ = ()

    def column(self, name: str) -> int:
        return self.index(name)
