"""Tokenization of raw strings for the metrics, through sacrebleu's tokenizers.

The default is ``13a`` (the mteval-v13a tokenizer), which is sacrebleu's default for BLEU, with
case kept (``lowercase=False``), also sacrebleu's default. A string is processed exactly as
sacrebleu's BLEU does it: optional lowercasing, trailing whitespace stripped, the tokenizer
applied, then split on whitespace.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from hypertune import choices
from hypertune.errors import UsageError

DEFAULT_TOKENIZER = choices.DEFAULT_TOKENIZER
"""sacrebleu's default BLEU tokenizer (``sacrebleu.BLEU.TOKENIZER_DEFAULT``)."""

TOKENIZERS = choices.TOKENIZERS
"""Names accepted by :class:`Tokenizer` (the last five need optional sacrebleu extras)."""


@cache
def _sacrebleu_tokenizer(name: str) -> Callable[[str], str]:
    from sacrebleu.metrics.bleu import _TOKENIZERS, _get_tokenizer

    if name not in _TOKENIZERS:
        raise UsageError(f"unknown tokenizer {name!r}; choose one of {', '.join(sorted(_TOKENIZERS))}")
    try:
        return _get_tokenizer(name)()
    except ImportError as error:  # e.g. ja-mecab without mecab-python3
        raise UsageError(f"tokenizer {name!r} needs an optional package: {error}") from error


class Tokenizer:
    """Turn a raw string into a list of tokens the way sacrebleu's BLEU does.

    >>> Tokenizer("13a")("Hello, world!")
    ['Hello', ',', 'world', '!']
    """

    __slots__ = ("name", "lowercase", "_tokenize")

    def __init__(self, name: str = DEFAULT_TOKENIZER, lowercase: bool = False) -> None:
        self.name = name
        self.lowercase = lowercase
        self._tokenize = _sacrebleu_tokenizer(name)

    def __call__(self, text: str) -> list[str]:
        if self.lowercase:
            text = text.lower()
        return self._tokenize(text.rstrip()).split()

    def __repr__(self) -> str:
        return f"Tokenizer({self.name!r}, lowercase={self.lowercase})"
