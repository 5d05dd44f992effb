"""Tuner options: one frozen dataclass per tuner, checked when it is made, from which the command line
generates the tuner's flags.

A tuner's options class subclasses :class:`TunerOptions` and declares each option with :func:`option`: its
default, a help line, and what the command line needs to offer it (a flag when it is not ``--name``, the
choices -- a tuple of :mod:`hypertune.choices` --, the kind of number). The class checks every value when an
object is made -- the kinds and choices from the declarations, anything that relates two options in its
:meth:`TunerOptions.check` --, so a library user and the command line get the same refusal, worded in
parameter names (``restarts must be at least 0``); the command line rewords it in flags (``--restarts``,
:meth:`OptionError.worded`). The object is what a tuner keeps (``tuner.options``) and what travels to a
cluster's workers, never the tuner with its callbacks.

This module imports only the standard library, :mod:`hypertune.choices` and :mod:`hypertune.errors`, and so
must every options module: the command line builds ``--help`` from them without loading numpy.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from hypertune.choices import NORMALIZATIONS, NORMALIZE_HELP
from hypertune.errors import UsageError

#: The kinds of values an option may declare; the command line has one argparse type for each
#: (:data:`hypertune.cli.options.KIND_TYPES`), and :class:`TunerOptions` checks the same bounds.
KINDS = {
    "int": (-math.inf, math.inf, False),
    "count": (0, math.inf, False),  # an integer >= 0
    "positive-count": (1, math.inf, False),  # an integer >= 1
    "seed": (0, 2**32 - 1, False),
    "number": (-math.inf, math.inf, False),  # a finite number
    "non-negative": (0.0, math.inf, False),
    "positive": (0.0, math.inf, True),  # greater than 0
    "fraction": (0.0, 1.0, False),  # from 0 to 1
}

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class OptionError(UsageError):
    """A bad option value or combination. The message names options as ``{name}`` placeholders: ``str()``
    shows the parameter names, :meth:`worded` the command line's flags."""

    def __init__(self, template: str) -> None:
        self.template = template
        super().__init__(self.worded({}))

    def worded(self, flags: Mapping[str, str]) -> str:
        """The message with each ``{name}`` replaced by ``flags[name]`` (the parameter name if absent)."""
        return _PLACEHOLDER.sub(lambda m: flags.get(m.group(1), m.group(1)), self.template)


def option(  # noqa: PLR0913 - a declaration, like dataclasses.field: every keyword is one attribute
    default: Any,
    help: str,  # argparse's word
    *,
    flag: str | None = None,
    aliases: tuple[str, ...] = (),
    kind: str | None = None,
    choices: tuple[Any, ...] | None = None,
    metavar: str | None = None,
    negated: str | None = None,
    command_line: bool = True,
    repeatable: bool = False,
    parse: str | None = None,
    shared: str | None = None,
    dest: str | None = None,
) -> Any:
    """An option field: its ``default`` and ``help`` line; ``flag`` (default ``--name`` with dashes) and
    ``aliases`` on the command line; ``kind`` (a key of :data:`KINDS`) for numbers, ``choices`` for names;
    ``negated``: for a ``True``-by-default boolean, the flag that turns it off (``--corpus-order`` for
    ``shuffle``; for a ``None``-by-default one, the flag that makes it ``False``: ``--no-average``);
    ``repeatable``: a tuple option given once per value (``--fix a --fix b``);
    ``parse``: a command-line value that is not one word (``"names"``: comma-separated feature names, repeatable;
    ``"bounds"``: ``NAME=LOW:HIGH``, repeatable); ``shared``: the destination of an option several commands
    share, added by :mod:`hypertune.cli.options` (``--jobs``: ``"jobs"``), that sets this one; ``dest``: the
    parsed value's name when the field's name is another option's on the same command (``train``'s ``smooth``,
    ``--gain-smooth``, beside the metric's ``--smooth``); ``command_line=False``: for library users only (a
    restart box read from a file, a callback's wish)."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"unknown option kind {kind!r}")
    metadata = {
        "help": help,
        "flag": flag,
        "aliases": aliases,
        "kind": kind,
        "choices": choices,
        "metavar": metavar,
        "negated": negated,
        "command_line": command_line,
        "repeatable": repeatable,
        "parse": parse,
        "shared": shared,
        "dest": dest,
    }
    if isinstance(default, list | dict | set):
        raise TypeError("option defaults must be immutable (a tuple, not a list)")
    return field(default=default, metadata=metadata)


# ---------------------------------------------------------------------- options several tuners take, declared once
def fixed_features() -> Any:
    """``fixed``: feature names kept at their start values (``--fix a,b --fix c``; MERT, minimum risk)."""
    return option(
        (), "features kept at their start values (comma-separated, repeatable)", flag="--fix", parse="names",
        metavar="NAMES",
    )  # fmt: skip


def feature_bounds() -> Any:
    """``bounds``: name -> (low, high) of a weight (``--bounds NAME=LOW:HIGH``, repeatable; MERT, minimum risk)."""
    return option(
        None, "bounds of a feature's weight, e.g. WordPenalty=-1:1 (repeatable)", parse="bounds",
        metavar="NAME=LOW:HIGH",
    )  # fmt: skip


def normalization() -> Any:
    """``normalize``: how the written weights are finished (:mod:`hypertune.tuners.finishing`; every tuner)."""
    return option("l1", NORMALIZE_HELP, choices=NORMALIZATIONS)


def flag_of(f: dataclasses.Field) -> str:
    """The command-line flag of an option field: its declared ``flag`` or ``--name-with-dashes``."""
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


T = TypeVar("T", bound="TunerOptions")


@dataclass(frozen=True)
class TunerOptions:
    """The base of every tuner's options: frozen, checked when made (:meth:`__post_init__`: each field's kind
    and choices, then :meth:`check`). ``summary`` is the class's one-line description of the tuner."""

    summary: ClassVar[str] = ""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            choices, kind = f.metadata.get("choices"), f.metadata.get("kind")
            if value is None:
                continue
            if choices is not None and value not in choices:
                raise OptionError(f"{{{f.name}}} must be one of {', '.join(map(str, choices))}, got {value!r}")
            if kind is not None:
                _check_kind(f.name, kind, value)
        self.check()

    def check(self) -> None:
        """Checks that relate several options (an :class:`OptionError` naming them); none by default."""

    def replace(self: T, **changes: Any) -> T:
        """A copy with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """The options as a JSON object (tuples as lists)."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def make(cls: type[T], options: T | None = None, overrides: Mapping[str, Any] | None = None) -> T:
        """``options`` (or the defaults) with ``overrides`` applied: how a tuner's constructor takes either an
        options object or keyword arguments. An unknown keyword is an :class:`OptionError` naming the known."""
        overrides = dict(overrides or {})
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise OptionError(
                f"unknown option(s) {', '.join(unknown)} of {cls.__name__}; it takes {', '.join(sorted(names))}"
            )
        if options is None:
            return cls(**overrides)
        if not isinstance(options, cls):
            raise TypeError(f"expected {cls.__name__}, got {type(options).__name__}")
        return dataclasses.replace(options, **overrides) if overrides else options


def _check_kind(name: str, kind: str, value: Any) -> None:
    low, high, open_low = KINDS[kind]
    integral = kind in ("int", "count", "positive-count", "seed")
    if isinstance(value, bool) or not isinstance(value, int | float) or (integral and not isinstance(value, int)):
        raise OptionError(f"{{{name}}} must be {'an integer' if integral else 'a number'}, got {value!r}")
    if not math.isfinite(value):
        raise OptionError(f"{{{name}}} must be finite, got {value!r}")
    if value < low or (open_low and value == low):
        raise OptionError(f"{{{name}}} must be {'greater than' if open_low else 'at least'} {low:g}, got {value!r}")
    if value > high:
        raise OptionError(f"{{{name}}} must be at most {high:g}, got {value!r}")


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value
