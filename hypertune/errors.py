"""Exceptions raised by hypertune. The CLI turns them into one-line messages and exit codes."""

from __future__ import annotations


class HypertuneError(Exception):
    """Base class of every error hypertune raises on purpose."""


class GraphError(HypertuneError, ValueError):
    """A hypergraph violates a structural rule (cycle, dangling id, empty, ...). ``item``, when known, is
    the index of the offending part in what the caller gave (e.g. a hypothesis), so a reader can name
    its line."""

    def __init__(self, message: str, item: int | None = None) -> None:
        super().__init__(message)
        self.item = item


class InputError(HypertuneError, ValueError):
    """Malformed input data; names the file and line and says what was expected."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.reason = message
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)


class UsageError(HypertuneError, ValueError):
    """Arguments that do not fit together (bad option values, missing inputs)."""


class HypertuneWarning(UserWarning):
    """Suspicious but usable input (unused reference lines, unknown feature names). The CLI prints each
    as one line on stderr; library users see an ordinary Python warning."""


def warn(message: str) -> None:
    """Issue a :class:`HypertuneWarning` (shown once per message)."""
    import warnings

    warnings.warn(message, HypertuneWarning, stacklevel=3)
