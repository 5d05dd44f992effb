"""BLEU (Papineni et al. 2002) as additive sufficient statistics.

Statistics layout (``2 * max_order + 1`` float64 columns, the layout of Moses's ``SCORESTAT``
files, so that they map directly)::

    m1 c1 m2 c2 ... mN cN reflen

``m_n`` is the number of hypothesis n-grams matched in the references, each n-gram's count clipped
by its maximum count over the references; ``c_n`` is the number of hypothesis n-grams
(``max(0, len - n + 1)``); the hypothesis length is ``c1``; ``reflen`` is the reference length
chosen by the reference-length strategy:

``closest``
    the reference length closest to the hypothesis length, ties to the *shorter* one (sacrebleu,
    Moses, Z-MERT). The default.
``shortest`` / ``average``
    the shortest reference / the mean reference length (Moses ``reflen:shortest|average``).
``ibm``
    cdec's ``IBM_BLEU``: the closest length with ties keeping the *earlier* reference; scoring then
    replaces a zero match count by 0.01 and averages only the orders with at least one hypothesis
    n-gram (cdec ``mteval/ns.cc``).

Scores are in ``[0, 1]`` (sacrebleu prints 100 times this).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

import numba
import numpy as np

from hypertune.arrays import offsets_from_counts
from hypertune.compiled import EMPTY_KEY
from hypertune.errors import InputError, UsageError
from hypertune.metrics import _kernels
from hypertune.metrics.base import Metric, Text, as_stats_array, check_same_length
from hypertune.metrics.tokenize import DEFAULT_TOKENIZER, Tokenizer
from hypertune.symbols import Vocabulary

REF_LENGTHS: dict[str, int] = {
    "closest": _kernels.CLOSEST,
    "shortest": _kernels.SHORTEST,
    "average": _kernels.AVERAGE,
    "ibm": _kernels.IBM,
}
"""Reference-length strategies."""

SMOOTHING: dict[str, float | None] = {
    "none": None,
    "exp": None,
    "floor": 0.1,
    "add-k": 1.0,
    "plus1": 1.0,
    "moses": 1.0,
    "nakov": 1.0,
}
"""Smoothing methods and the default of their parameter (``smooth_value``).

``none``  no smoothing: any order without a match gives 0.
``exp``   sacrebleu's default (mteval-v13a "NIST" smoothing, Chen & Cherry 2014 method 3): the k-th
          order without a match gets precision ``1 / (2**k * c_n)``.
``floor`` sacrebleu: an order without a match gets precision ``value / c_n`` (default 0.1).
``add-k`` sacrebleu / Chen & Cherry method 2: ``k`` added to matches and counts of orders > 1.
``plus1`` BLEU+1 of Lin & Och 2004: ``add-k`` with k = 1 (unigrams unsmoothed).
``moses`` Moses ``smoothedSentenceBleu``: ``value`` (default 1) added to matches and counts of
          *every* order; the brevity penalty is not smoothed.
``nakov`` Nakov et al. 2012 (Moses "brevity-penalty smoothing"): as ``moses`` and ``value`` also
          added to the reference length in the brevity penalty ``exp(1 - (r + value) / c)``.
"""

_MY_LOG_ZERO = -9999999999.0  # sacrebleu's floor for log(0)
_SEQUENCE_TYPES = (list, tuple)


@dataclass(frozen=True, eq=False)
class BleuReferences:
    """Reference n-gram tables of a set of sentences, built once (see :meth:`BleuMetric.prepare`)."""

    max_order: int
    tables: _kernels.ReferenceTables
    max_gram: int
    inexact: dict[int, list[np.ndarray]] = field(default_factory=dict)
    """Sentences whose packed n-gram keys would overflow 63 bits: scored by the exact Python path."""

    @property
    def n_sentences(self) -> int:
        return len(self.tables.sent_ref_offsets) - 1

    def references(self, sentence: int) -> int:
        """Number of references of ``sentence``."""
        offsets = self.tables.sent_ref_offsets
        return int(offsets[sentence + 1] - offsets[sentence])


def _table_sizes(bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Power-of-two table sizes with load factor at most 2/3 (at least 2), and their log2."""
    need = np.maximum(2, (bounds * 3 + 1) // 2)
    bits = np.ceil(np.log2(need)).astype(np.int64)
    bits = np.maximum(bits, 1)
    return np.left_shift(np.int64(1), bits), bits


def build_references(references: Sequence[Sequence[np.ndarray]], max_order: int = 4) -> BleuReferences:
    """Build the reference tables of many sentences; ``references[s]`` are the id arrays of sentence s."""
    if max_order < 1:
        raise UsageError(f"max_order must be at least 1, got {max_order}")
    n_sent = len(references)
    refs_per_sentence = np.fromiter((len(r) for r in references), dtype=np.int64, count=n_sent)
    sent_ref_offsets = offsets_from_counts(refs_per_sentence)
    flat_refs = [np.asarray(r, dtype=np.int64) for refs in references for r in refs]
    ref_lengths = np.fromiter((len(r) for r in flat_refs), dtype=np.int64, count=len(flat_refs))
    ref_offsets = offsets_from_counts(ref_lengths)
    ref_tokens = np.concatenate(flat_refs) if flat_refs else np.zeros(0, dtype=np.int64)
    if ref_tokens.size and ref_tokens.min() < 0:
        raise InputError("word ids must be non-negative")
    # per-sentence bounds: tokens (distinct words) and n-gram positions (distinct n-grams)
    grams_per_ref = np.zeros(len(flat_refs), dtype=np.int64)
    for n in range(max_order):
        grams_per_ref += np.maximum(ref_lengths - n, 0)
    cum_tokens = offsets_from_counts(ref_lengths)
    cum_grams = offsets_from_counts(grams_per_ref)
    tokens_per_sentence = cum_tokens[sent_ref_offsets[1:]] - cum_tokens[sent_ref_offsets[:-1]]
    grams_per_sentence = cum_grams[sent_ref_offsets[1:]] - cum_grams[sent_ref_offsets[:-1]]
    word_sizes, word_bits = _table_sizes(tokens_per_sentence)
    gram_sizes, gram_bits = _table_sizes(grams_per_sentence)
    word_offsets = offsets_from_counts(word_sizes)
    gram_offsets = offsets_from_counts(gram_sizes)
    word_keys = np.full(int(word_offsets[-1]), EMPTY_KEY, dtype=np.int64)
    word_values = np.zeros(int(word_offsets[-1]), dtype=np.int64)
    gram_keys = np.full(int(gram_offsets[-1]), EMPTY_KEY, dtype=np.int64)
    gram_counts = np.zeros(int(gram_offsets[-1]), dtype=np.int32)
    bases = np.zeros(n_sent, dtype=np.int64)
    tables = _kernels.ReferenceTables(
        sent_ref_offsets,
        ref_lengths,
        word_offsets,
        word_bits,
        word_keys,
        word_values,
        gram_offsets,
        gram_bits,
        gram_keys,
        gram_counts,
        bases,
    )
    _kernels.build_tables(ref_tokens, ref_offsets, tables, max_order)
    # Exactness: keys are base-B numerals with max_order digits; they must stay below 2**63.
    limit = int(np.floor((2**63 - 1) ** (1.0 / max_order))) - 1
    inexact: dict[int, list[np.ndarray]] = {}
    for s in np.flatnonzero(bases > limit).tolist():
        if int(bases[s]) ** max_order >= 2**63:
            inexact[s] = [np.asarray(r, dtype=np.int64) for r in references[s]]
    return BleuReferences(
        max_order=max_order,
        tables=tables,
        max_gram=int(gram_sizes.max()) if n_sent else 1,
        inexact=inexact,
    )


_PARALLEL_THRESHOLD = 100_000
"""Hypotheses from which BLEU's statistics are computed on numba's threads: 10,000 take 4 ms in one thread,
and the first parallel call costs about 30 ms of CPU (starting the threading layer, loading the parallel kernel),
so a smaller batch is faster in one thread (docs/performance.md, "Minimum risk and PRO, second round"). The
statistics are integer counts: the same either way."""


def bleu_stats_batch(
    tokens: np.ndarray,
    offsets: np.ndarray,
    sentence: np.ndarray,
    references: BleuReferences,
    ref_length: str = "closest",
    clip: bool = True,
) -> np.ndarray:
    """BLEU statistics of many hypotheses at once (the fast path).

    Hypothesis ``h`` is ``tokens[offsets[h]:offsets[h+1]]`` (word ids) and is scored against the
    references of sentence ``sentence[h]`` in ``references``. Returns ``(n, 2 * N + 1)`` float64.
    With ``clip=False`` every hypothesis n-gram found in a reference counts as a match (the
    unclipped counts of Tromble et al. 2008's linear BLEU).
    """
    mode = _ref_length_code(ref_length)
    tokens = np.ascontiguousarray(tokens, dtype=np.int64)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    sentence = np.ascontiguousarray(sentence, dtype=np.int64)
    n = len(offsets) - 1
    if n < 0 or len(sentence) != n:
        raise InputError(f"{len(offsets)} offsets for {len(sentence)} hypotheses (expected n + 1)")
    if n and (sentence.min() < 0 or sentence.max() >= references.n_sentences):
        raise InputError(f"sentence index out of range 0..{references.n_sentences - 1}")
    if n and (offsets[0] != 0 or offsets[-1] != len(tokens) or np.any(np.diff(offsets) < 0)):
        raise InputError("offsets must rise from 0 to len(tokens)")
    if tokens.size and tokens.min() < 0:
        raise InputError("word ids must be non-negative")
    order = references.max_order
    out = np.empty((n, 2 * order + 1), dtype=np.float64)
    if n == 0:
        return out
    max_len = int(np.max(np.diff(offsets)))
    threads = 1
    if n >= _PARALLEL_THRESHOLD:  # asking numba for its thread count starts its threads: only when they may run
        import numba

        threads = numba.get_num_threads()
    parallel = threads > 1
    kernel = _kernels.hypothesis_stats if parallel else _kernels.hypothesis_stats_serial
    hypotheses = _kernels.Hypotheses(tokens, offsets, sentence)
    chunks = threads * 8 if parallel else 1
    kernel(hypotheses, references.tables, order, mode, clip, chunks, references.max_gram, max_len, out)
    if references.inexact:
        for h in np.flatnonzero(np.isin(sentence, list(references.inexact))):
            refs = references.inexact[int(sentence[h])]
            out[h] = reference_bleu_stats(tokens[offsets[h] : offsets[h + 1]], refs, order, ref_length, clip)
    return out


def _ref_length_code(ref_length: str) -> int:
    try:
        return REF_LENGTHS[ref_length]
    except KeyError:
        raise UsageError(
            f"unknown reference length strategy {ref_length!r}; choose one of {', '.join(REF_LENGTHS)}"
        ) from None


def _ngrams(ids: Sequence[object], max_order: int) -> Counter:
    counts: Counter = Counter()
    for n in range(1, max_order + 1):
        for i in range(len(ids) - n + 1):
            counts[tuple(ids[i : i + n])] += 1
    return counts


def reference_bleu_stats(
    hypothesis: Sequence[Hashable] | np.ndarray,
    references: Sequence[Sequence[Hashable] | np.ndarray],
    max_order: int = 4,
    ref_length: str = "closest",
    clip: bool = True,
) -> np.ndarray:
    """BLEU statistics by the textbook definition with Python dictionaries (slow, exact).

    Works on any hashable tokens; the reference implementation the fast kernels are tested against.
    """
    hyp = list(hypothesis.tolist() if isinstance(hypothesis, np.ndarray) else hypothesis)
    refs = [list(r.tolist() if isinstance(r, np.ndarray) else r) for r in references]
    max_ref: Counter = Counter()
    for ref in refs:
        for gram, count in _ngrams(ref, max_order).items():
            if count > max_ref[gram]:
                max_ref[gram] = count
    out = np.zeros(2 * max_order + 1)
    for gram, count in _ngrams(hyp, max_order).items():
        n = len(gram) - 1
        out[2 * n + 1] += count
        if gram in max_ref:
            out[2 * n] += min(count, max_ref[gram]) if clip else count
    lengths = [len(r) for r in refs]
    mode = _ref_length_code(ref_length)
    out[2 * max_order] = _kernels._reference_length.py_func(
        np.asarray(lengths, dtype=np.int64), 0, len(lengths), len(hyp), mode
    )
    return out


def bleu_score(
    stats: np.ndarray,
    max_order: int = 4,
    smooth: str = "none",
    smooth_value: float | None = None,
    effective_order: bool = False,
    ibm: bool = False,
) -> float | np.ndarray:
    """BLEU of statistics ``m1 c1 ... mN cN reflen``: one vector (a float) or each row of a 2-D array.

    ``BLEU = BP * exp(sum_n log p_n / N)`` with ``p_n = m_n / c_n`` and ``BP = min(1, exp(1 - r/c))``
    (Papineni et al. 2002, eq. 1-2), with the smoothing of :data:`SMOOTHING`. Methods ``none``,
    ``exp``, ``floor``, ``add-k`` and ``plus1`` reproduce ``sacrebleu.BLEU.compute_bleu`` exactly,
    including ``effective_order`` (average only the orders with hypothesis n-grams). ``ibm=True`` is
    cdec's IBM BLEU scoring (zero matches count 0.01; only orders with hypothesis n-grams averaged).
    """
    if smooth not in SMOOTHING:
        raise UsageError(f"unknown smoothing {smooth!r}; choose one of {', '.join(SMOOTHING)}")
    array = as_stats_array(stats, 2 * max_order + 1)
    rows = np.atleast_2d(array)
    value = SMOOTHING[smooth] if smooth_value is None else float(smooth_value)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if ibm:
            result = _ibm_score(rows, max_order)
        elif smooth in ("moses", "nakov"):
            assert value is not None  # both have a default (SMOOTHING)
            result = _moses_score(rows, max_order, value, smooth == "nakov")
        else:
            result = _sacrebleu_score(rows, max_order, smooth, value, effective_order)[0]
    return float(result[0]) if array.ndim == 1 else result


@numba.njit(cache=True, nogil=True, inline="always")
def bleu_plus_one(stats: np.ndarray, order: int) -> float:  # pragma: no cover - compiled
    """Sentence BLEU+1 of one statistics row ``m1 c1 ... mN cN reflen`` (Lin & Och 2004): unigram precision
    unsmoothed, orders 2..N as ``(m + 1) / (c + 1)``, brevity penalty ``exp(min(0, 1 - r/c))``; 0 when
    ``m1`` or ``c1`` is 0. The hope/fear gain ``bleu+1``; compiled so the searches can call it per row."""
    if stats[0] <= 0.0 or stats[1] <= 0.0:
        return 0.0
    log_bleu = 0.0
    for n in range(order):
        add = 1.0 if n > 0 else 0.0
        log_bleu += np.log(stats[2 * n] + add) - np.log(stats[2 * n + 1] + add)
    hyp = stats[1]
    ref = stats[2 * order]
    log_bleu /= order
    if hyp < ref:
        log_bleu += 1.0 - ref / hyp
    return np.exp(log_bleu)


def _brevity_log(hyp_len: np.ndarray, ref_len: np.ndarray) -> np.ndarray:
    """log BP = min(0, 1 - r/c); -inf for an empty hypothesis with a non-empty reference."""
    short = hyp_len < ref_len
    safe = np.where(hyp_len > 0, hyp_len, 1.0)
    out = np.where(short, 1.0 - ref_len / safe, 0.0)
    return np.where(short & (hyp_len <= 0), -np.inf, out)


def _order_sums(values: np.ndarray) -> np.ndarray:
    """Per statistics row, the sum over its orders of ``values`` (one row per order, one column per
    statistics row), bit for bit as NumPy's ``sum(axis=1)`` of the (rows, orders) array: NumPy adds fewer
    than 8 numbers of a row one after the other from 0.0 (its pairwise summation starts at 8), which one
    long vector addition per order reproduces several times faster."""
    if not 0 < values.shape[0] < 8:
        return np.ascontiguousarray(values.T).sum(axis=1)
    total = values[0] + 0.0
    for row in values[1:]:
        total += row
    return total


def _orders(rows: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Matches and n-gram counts, one row per order (a transposed copy): elementwise operations then run
    along long rows, much faster than along the few columns of the (rows, orders) layout."""
    columns = np.ascontiguousarray(rows[:, : 2 * order].T)
    return columns[0::2], columns[1::2]


def _sacrebleu_score(
    rows: np.ndarray, order: int, smooth: str, value: float | None, effective: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Score, precisions (fractions, one row per statistics row) and brevity penalty, following sacrebleu's
    compute_bleu."""
    m, c = _orders(rows, order)
    hyp_len = rows[:, 1]
    ref_len = rows[:, 2 * order]
    any_match = (m > 0).any(axis=0)
    if smooth in ("add-k", "plus1") and order > 1:
        m, c = m.copy(), c.copy()
        m[1:] += value
        c[1:] += value
    if (c > 0).all() and (m > 0).all():  # every order has n-grams and matches (any corpus)
        return _all_matched_score(m, c, c[0], ref_len, order)
    valid = c > 0  # sacrebleu stops at the first order without n-grams
    for n in range(1, order):
        valid[n] &= valid[n - 1]
    safe_c = np.where(c > 0, c, 1.0)
    precision = np.where(valid & (m > 0), m / safe_c, 0.0)
    zero = valid & (m <= 0)
    if smooth == "exp":
        halvings = np.cumsum(zero, axis=0)
        precision = np.where(zero, 1.0 / (np.exp2(halvings) * safe_c), precision)
    elif smooth == "floor":
        precision = np.where(zero, value / safe_c, precision)
    logs = np.where(precision > 0, np.log(np.where(precision > 0, precision, 1.0)), _MY_LOG_ZERO)
    if effective:
        eff = valid.sum(axis=0)
        logs = np.where(np.arange(order)[:, None] < eff[None, :], logs, 0.0)
        eff = np.maximum(eff, 1)
    else:
        eff = np.full(len(rows), order)
    log_bp = _brevity_log(hyp_len, ref_len)
    bp = np.exp(log_bp)
    score = bp * np.exp(_order_sums(logs) / eff)
    score = np.where(any_match, score, 0.0)
    return score, precision.T, bp


def _all_matched_score(
    m: np.ndarray, c: np.ndarray, hyp_len: np.ndarray, ref_len: np.ndarray, order: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_sacrebleu_score` where every order of every row has n-grams and matches: the same operations on
    the same numbers, less the selections that change nothing there (no smoothing or zero-precision case
    applies, every order counts for ``effective_order``), so the same results bit for bit, in fewer passes."""
    precision = m / c
    if not (precision > 0).all():  # a precision that underflows takes sacrebleu's log(0) floor: the general path
        logs = np.where(precision > 0, np.log(np.where(precision > 0, precision, 1.0)), _MY_LOG_ZERO)
    else:
        logs = np.log(precision)
    bp = np.exp(np.where(hyp_len < ref_len, 1.0 - ref_len / hyp_len, 0.0))  # _brevity_log with c1 > 0
    return bp * np.exp(_order_sums(logs) / order), precision.T, bp


def _moses_score(rows: np.ndarray, order: int, value: float, smooth_bp: bool) -> np.ndarray:
    """Moses ``smoothedSentenceBleu`` (mert/BleuScorer.cpp): +value on every order, optionally on r."""
    m, c = _orders(rows, order)
    m, c = m + value, c + value
    ok = (m > 0).all(axis=0) & (c > 0).all(axis=0)
    logs = np.log(np.where(m > 0, m, 1.0)) - np.log(np.where(c > 0, c, 1.0))
    ref_len = rows[:, 2 * order] + (value if smooth_bp else 0.0)
    log_bleu = _order_sums(logs) / order + _brevity_log(rows[:, 1], ref_len)
    return np.where(ok, np.exp(log_bleu), 0.0)


def _ibm_score(rows: np.ndarray, order: int) -> np.ndarray:
    """cdec ``IBM_BLEU`` (mteval/ns.cc ComputeBreakdown)."""
    m, c = _orders(rows, order)
    present = c > 0
    matches = np.where(m > 0, m, 0.01)
    logs = np.where(present, np.log(matches) - np.log(np.where(present, c, 1.0)), 0.0)
    count = present.sum(axis=0)
    log_bleu = _order_sums(logs) / np.maximum(count, 1) + _brevity_log(rows[:, 1], rows[:, 2 * order])
    return np.where(count > 0, np.exp(log_bleu), 0.0)


class BleuBreakdown(TypedDict):
    """:meth:`BleuMetric.breakdown`: the score and the figures sacrebleu prints beside it."""

    score: float
    precisions: list[float]
    bp: float
    ratio: float
    hyp_len: float
    ref_len: float
    matches: list[float]
    counts: list[float]


class BleuMetric(Metric):
    """BLEU with configurable order, reference length, smoothing and tokenization.

    Raw strings are tokenized with sacrebleu's tokenizer ``tokenize`` (default ``13a``, sacrebleu's
    default; ``lowercase=False`` by default, also as sacrebleu) and mapped to ids in ``vocabulary``
    (pass the corpus's shared :class:`~hypertune.symbols.Vocabulary` so that hypotheses given as id
    arrays and references given as strings agree). Default smoothing is ``none`` (corpus BLEU as
    Moses, cdec and Z-MERT tune it; note sacrebleu's *command line* default is ``exp``).
    """

    name = "bleu"

    def __init__(  # noqa: PLR0913 - BLEU's options, as sacrebleu.BLEU takes them
        self,
        max_order: int = 4,
        ref_length: str = "closest",
        smooth: str = "none",
        smooth_value: float | None = None,
        effective_order: bool = False,
        tokenize: str = DEFAULT_TOKENIZER,
        lowercase: bool = False,
        vocabulary: Vocabulary | None = None,
        clip: bool = True,
    ) -> None:
        if max_order < 1:
            raise UsageError(f"max_order must be at least 1, got {max_order}")
        _ref_length_code(ref_length)
        if smooth not in SMOOTHING:
            raise UsageError(f"unknown smoothing {smooth!r}; choose one of {', '.join(SMOOTHING)}")
        if ref_length == "ibm" and smooth != "none":
            raise UsageError("cdec's IBM BLEU has its own smoothing (0.01 for zero matches): use smooth='none'")
        self.max_order = max_order
        self.ref_length = ref_length
        self.smooth = smooth
        self.smooth_value = smooth_value
        self.effective_order = effective_order
        self.tokenizer = Tokenizer(tokenize, lowercase)
        self.vocabulary = vocabulary if vocabulary is not None else Vocabulary()
        self.clip = clip

    def __repr__(self) -> str:
        return (
            f"BleuMetric(max_order={self.max_order}, ref_length={self.ref_length!r}, smooth={self.smooth!r}, "
            f"smooth_value={self.smooth_value}, effective_order={self.effective_order}, "
            f"tokenize={self.tokenizer.name!r}, lowercase={self.tokenizer.lowercase})"
        )

    @property
    def stats_size(self) -> int:
        return 2 * self.max_order + 1

    @property
    def stats_names(self) -> tuple[str, ...]:
        names: list[str] = []
        for n in range(1, self.max_order + 1):
            names += [f"m{n}", f"c{n}"]
        return (*names, "reflen")

    # -- input conversion -------------------------------------------------------------------------
    def ids(self, text: Text) -> np.ndarray:
        """Word ids of a raw string (tokenized), a token list, or an id array (passed through)."""
        if isinstance(text, np.ndarray):
            if text.ndim != 1 or not np.issubdtype(text.dtype, np.integer):
                raise InputError(f"expected a 1-D integer array of word ids, got {text.dtype} {text.shape}")
            return text.astype(np.int64, copy=False)
        if isinstance(text, str):
            return self.vocabulary.indices(self.tokenizer(text))
        if isinstance(text, _SEQUENCE_TYPES):
            if all(isinstance(word, str) for word in text):
                return self.vocabulary.indices(text)
            if all(isinstance(word, (int, np.integer)) for word in text):
                return np.asarray(text, dtype=np.int64).reshape(-1)
            raise InputError("a token list must hold only strings (words) or only integers (word ids)")
        raise InputError(f"cannot use a {type(text).__name__} as a sentence")

    def prepare(self, references: Sequence[Sequence[Text]]) -> BleuReferences:
        """Reference tables for many sentences (``references[s]`` = the references of sentence s)."""
        return build_references([[self.ids(r) for r in refs] for refs in references], self.max_order)

    def flatten(self, hypotheses: Sequence[Text]) -> tuple[np.ndarray, np.ndarray]:
        """Concatenated word ids and offsets of many hypotheses."""
        arrays = [self.ids(h) for h in hypotheses]
        offsets = offsets_from_counts([len(a) for a in arrays])
        tokens = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
        return tokens, offsets

    # -- statistics --------------------------------------------------------------------------------
    def stats_batch(
        self, tokens: np.ndarray, offsets: np.ndarray, sentence: np.ndarray, references: BleuReferences
    ) -> np.ndarray:
        """Statistics of flat id arrays against prepared references (see :func:`bleu_stats_batch`)."""
        if references.max_order != self.max_order:
            raise UsageError(f"references prepared for order {references.max_order}, metric uses {self.max_order}")
        return bleu_stats_batch(tokens, offsets, sentence, references, self.ref_length, self.clip)

    def stats_many(self, hypotheses: Sequence[Text], references: Sequence[Text] | BleuReferences) -> np.ndarray:
        prepared = references if isinstance(references, BleuReferences) else self.prepare([references])
        tokens, offsets = self.flatten(hypotheses)
        return self.stats_batch(tokens, offsets, np.zeros(len(hypotheses), dtype=np.int64), prepared)

    def corpus_stats(
        self, hypotheses: Sequence[Text], references: Sequence[Sequence[Text]] | BleuReferences
    ) -> np.ndarray:
        if isinstance(references, BleuReferences):
            if references.n_sentences != len(hypotheses):
                raise InputError(f"{len(hypotheses)} hypotheses but references for {references.n_sentences} sentences")
            prepared = references
        else:
            check_same_length(hypotheses, references)
            prepared = self.prepare(references)
        tokens, offsets = self.flatten(hypotheses)
        return self.stats_batch(tokens, offsets, np.arange(len(hypotheses), dtype=np.int64), prepared)

    # -- scores ------------------------------------------------------------------------------------
    def score(self, stats: np.ndarray) -> float | np.ndarray:
        ibm = self.ref_length == "ibm"
        return bleu_score(stats, self.max_order, self.smooth, self.smooth_value, self.effective_order, ibm)

    def sentence_values(self, stats: np.ndarray) -> np.ndarray:
        """BLEU+1 of each row (Lin & Och 2004): a sentence's BLEU is smoothed, so that a hypothesis without a
        4-gram match still scores (the ``bleu+1`` gain, as BLEU's part of an interpolation's sentence value)."""
        rows = np.atleast_2d(as_stats_array(stats, self.stats_size))
        return np.asarray(bleu_score(rows, self.max_order, "plus1"), dtype=np.float64)

    def breakdown(self, stats: np.ndarray) -> BleuBreakdown:
        """Score, precisions (as used in the score, in ``[0, 1]``), brevity penalty, lengths, ratio."""
        row = as_stats_array(stats, self.stats_size)
        if row.ndim != 1:
            raise InputError("breakdown takes one statistics vector")
        order = self.max_order
        m = row[0 : 2 * order : 2]
        c = row[1 : 2 * order : 2]
        hyp_len, ref_len = float(row[1]), float(row[2 * order])
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.ref_length == "ibm":
                precisions = np.where(c > 0, np.where(m > 0, m, 0.01) / np.where(c > 0, c, 1), 0.0)
                bp = float(np.exp(_brevity_log(np.array([hyp_len]), np.array([ref_len]))[0]))
            elif self.smooth in ("moses", "nakov"):
                default = SMOOTHING[self.smooth]
                assert default is not None  # both have one
                value = float(self.smooth_value if self.smooth_value is not None else default)
                precisions = (m + value) / np.where(c + value > 0, c + value, 1)
                r = ref_len + (value if self.smooth == "nakov" else 0.0)
                bp = float(np.exp(_brevity_log(np.array([hyp_len]), np.array([r]))[0]))
            else:
                smoothing = self.smooth_value if self.smooth_value is not None else SMOOTHING[self.smooth]
                _, prec, bps = _sacrebleu_score(row[None, :], order, self.smooth, smoothing, self.effective_order)
                precisions, bp = prec[0], float(bps[0])
                if not (m > 0).any():
                    precisions = np.zeros(order)
        return {
            "score": float(self.score(row)),
            "precisions": [float(p) for p in precisions],
            "bp": bp,
            "ratio": hyp_len / ref_len if ref_len else 0.0,
            "hyp_len": hyp_len,
            "ref_len": ref_len,
            "matches": [float(x) for x in m],
            "counts": [float(x) for x in c],
        }


def format_bleu(breakdown: BleuBreakdown, name: str = "BLEU") -> str:
    """sacrebleu's one-line summary: ``BLEU = 32.45 63.2/38.1/25.0/17.3 (BP = 0.981 ratio = ...)``."""
    precisions = "/".join(f"{100 * p:.1f}" for p in breakdown["precisions"])
    return (
        f"{name} = {100 * breakdown['score']:.2f} {precisions} (BP = {breakdown['bp']:.3f} "
        f"ratio = {breakdown['ratio']:.3f} hyp_len = {_int_or_float(breakdown['hyp_len'])} "
        f"ref_len = {_int_or_float(breakdown['ref_len'])})"
    )


def _int_or_float(x: float) -> str:
    value = float(x)
    return f"{int(value):d}" if value.is_integer() else f"{value:.1f}"
