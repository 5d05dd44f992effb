"""Consensus decoding over forests (DeNero et al. 2009): BLEU against the forest's expected n-gram counts.

DeNero et al. replace MBR's expected BLEU, ``sum_e' p(e') BLEU(e, e')``, by BLEU against the *expected
features* of the distribution: the expected n-gram counts ``E[c(g)] = sum_e' p(e') c(e', g)`` and the expected
length ``E[|e'|]`` take the place of a reference's counts and length (their section 2, fast consensus decoding
with a non-linear similarity; section 3 computes the expectations over a forest). For a hypothesis ``e``::

    m_n(e) = sum_{g of order n in e} min(c(e, g), E[c(g)])        (clipped by the expected counts)
    c_n(e) = |e| - n + 1                                            (its n-grams of order n)
    log CBLEU(e) = min(0, 1 - E[|e'|] / |e|) + (1/N) sum_{n=1..N} log(m_n(e) / c_n(e))

and ``CBLEU(e) = 0`` when some ``m_n`` or ``c_n`` is 0 (a hypothesis shorter than ``N`` words, say), as BLEU
has it. The decision is the hypothesis with the largest ``CBLEU`` among the forest's ``kbest`` best derivations
under the model (Huang & Chiang 2005's lazy k-best; ``unique=True``: the ``kbest`` best distinct strings), as
DeNero et al. choose among a k-best list extracted from the forest; ties go to the earlier (higher model
score) hypothesis, and the first of the list is the MAP hypothesis.

The expected counts come from the n-gram-split graph and one inside/outside pass
(:func:`hypertune.mbr.lattice.split_posteriors`, the ``"expected-counts"`` posteriors of lattice MBR), under
``p(d) ∝ exp(scale * w.h(d))``; a candidate's clipped matches are counted by one compiled pass over the list
(:func:`hypertune.mbr._graph_kernels.consensus_stats`). ``<s>`` and ``</s>`` are no words.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hypertune.algorithms.kbest import kbest_list
from hypertune.arrays import offsets_from_counts
from hypertune.errors import InputError, UsageError
from hypertune.hypergraph import Hypergraph
from hypertune.mbr import _graph_kernels
from hypertune.mbr.lattice import check_options, split_posteriors
from hypertune.metrics.base import sentence_marker_ids
from hypertune.weights import Weights

__all__ = ["ConsensusChoice", "consensus", "consensus_bleu", "consensus_corpus"]


@dataclass(frozen=True)
class ConsensusChoice:
    """One sentence's decision: the chosen ``words``, its consensus BLEU ``score`` and its ``rank`` in the k-best
    list (0: the MAP hypothesis), and the MAP hypothesis ``map_words`` with its ``map_score``."""

    words: list[str]
    score: float
    rank: int
    map_words: list[str]
    map_score: float

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def map_text(self) -> str:
        return " ".join(self.map_words)


def consensus_bleu(stats: np.ndarray, expected_length: float, max_order: int = 4) -> np.ndarray:
    """``CBLEU`` (module docstring) of every row of BLEU statistics ``[m_1, c_1, ..., m_N, c_N, length]`` (clipped
    by the expected counts) against the expected length."""
    rows = np.atleast_2d(np.asarray(stats, dtype=np.float64))
    matches = rows[:, 0 : 2 * max_order : 2]
    totals = rows[:, 1 : 2 * max_order : 2]
    length = rows[:, 2 * max_order]
    defined = np.all(matches > 0, axis=1) & np.all(totals > 0, axis=1) & (length > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        brevity = np.minimum(0.0, 1.0 - expected_length / length)
        precision = np.log(matches / totals).mean(axis=1)
        return np.where(defined, np.exp(brevity + precision), 0.0)


def consensus(
    hg: Hypergraph,
    weights: Weights,
    *,
    scale: float = 1.0,
    kbest: int = 100,
    unique: bool = False,
    max_order: int = 4,
) -> ConsensusChoice:
    """Consensus decoding of one forest or lattice (module docstring): the hypothesis of the ``kbest`` best
    derivations (``unique``: distinct strings) with the highest BLEU against the expected n-gram counts under
    ``p(d) ∝ exp(scale * w.h(d))``."""
    _check(scale, kbest, max_order)
    return _decide(hg, weights, scale, int(kbest), unique, max_order)


def _check(scale: float, kbest: int, max_order: int) -> None:
    check_options(scale, max_order)
    if not isinstance(kbest, int | np.integer) or kbest < 1:
        raise UsageError(f"the k-best list for consensus decoding needs k >= 1, got {kbest}")


def _decide(
    hg: Hypergraph,
    weights: Weights,
    scale: float,
    kbest: int,
    unique: bool,
    max_order: int,
    sentence: int | None = None,
) -> ConsensusChoice:
    split = split_posteriors(hg, weights, scale, max_order, sentence)
    expected_length = float(split.expected[split.id_orders == 1].sum())
    tokens, token_offsets = _kbest_yields(hg, weights, kbest, unique)
    stats = _graph_kernels.consensus_stats(
        tokens, token_offsets, max_order, split.table, split.expected, split.id_orders
    )
    scores = consensus_bleu(stats, expected_length, max_order)
    rank = int(np.argmax(scores))  # the first of the largest: the higher model score
    bounds = token_offsets.tolist()
    words = hg.vocabulary.words(tokens[bounds[rank] : bounds[rank + 1]].tolist())
    map_words = hg.vocabulary.words(tokens[bounds[0] : bounds[1]].tolist())
    return ConsensusChoice(words, float(scores[rank]), rank, map_words, float(scores[0]))


def _kbest_yields(hg: Hypergraph, weights: Weights, k: int, unique: bool) -> tuple[np.ndarray, np.ndarray]:
    """The word ids (sentence markers dropped) of the ``k`` best derivations, best first, flat with offsets."""
    found = kbest_list(hg, weights, k, unique)  # the yields as flat arrays, built in compiled code
    tokens = np.asarray(found.words, dtype=np.int64)
    lengths = np.diff(found.word_offsets)
    markers = sentence_marker_ids(hg.vocabulary)
    if markers.size:
        keep = ~np.isin(tokens, markers)
        owner = np.repeat(np.arange(len(found)), lengths)
        tokens = tokens[keep]
        lengths = np.bincount(owner[keep], minlength=len(found))
    return np.ascontiguousarray(tokens), offsets_from_counts(lengths.tolist())


def consensus_corpus(
    graphs: Sequence[Hypergraph],
    weights: Weights,
    *,
    scale: float = 1.0,
    kbest: int = 100,
    unique: bool = False,
    max_order: int = 4,
) -> list[ConsensusChoice]:
    """:func:`consensus` of every graph, in order."""
    if not graphs:
        raise InputError("no sentences")
    return [consensus(hg, weights, scale=scale, kbest=kbest, unique=unique, max_order=max_order) for hg in graphs]
