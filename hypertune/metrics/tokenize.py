"""Tokenization of raw strings for the metrics, through sacrebleu's tokenizers.

The default is ``13a`` (the mteval-v13a tokenizer), which is sacrebleu's default for BLEU, with
case kept (``lowercase=False``), also sacrebleu's default. A string is processed exactly as
sacrebleu's BLEU does it: optional lowercasing, trailing whitespace stripped, the tokenizer
applied, then split on whitespace.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cache

from hypertune import choices
from hypertune.errors import UsageError, warn

DEFAULT_TOKENIZER = choices.DEFAULT_TOKENIZER
"""sacrebleu's default BLEU tokenizer (``sacrebleu.BLEU.TOKENIZER_DEFAULT``)."""

TOKENIZERS = choices.TOKENIZERS
"""Names accepted by :class:`Tokenizer` (the last five need optional sacrebleu extras)."""


def _unchanged(line: str) -> str:
    """sacrebleu's ``none`` tokenizer (``NoneTokenizer``: the line as given), without importing sacrebleu."""
    return line


@cache
def _sacrebleu_tokenizer(name: str) -> Callable[[str], str]:
    if name == "none":
        return _unchanged
    from sacrebleu.metrics.bleu import _TOKENIZERS, _get_tokenizer

    if name not in _TOKENIZERS:
        raise UsageError(f"unknown tokenizer {name!r}; choose one of {', '.join(sorted(_TOKENIZERS))}")
    sacrebleu_log = logging.getLogger("sacrebleu")
    level = sacrebleu_log.level
    sacrebleu_log.setLevel(logging.ERROR)  # its one notice (spm's new name) is ours to give, as one warning line
    try:
        if name == "spm":
            warn("tokenizer 'spm' is sacrebleu's old name of 'flores101', and sacrebleu may remove it")
        return _get_tokenizer(name)()
    except (ImportError, RuntimeError) as error:  # e.g. ja-mecab without mecab-python3 (sacrebleu's RuntimeError)
        words = " ".join(str(error).split())  # sacrebleu's message spans lines: one line, its install command
        install = words[words.find("pip install") :] if "pip install" in words else words
        raise UsageError(f"tokenizer {name!r} needs an optional package: {install}") from None
    finally:
        sacrebleu_log.setLevel(level)


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
