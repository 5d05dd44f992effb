"""Speed benchmark of BLEU sufficient statistics on synthetic k-best lists."""

from __future__ import annotations

import time

import numpy as np

from hypertune.arrays import offsets_from_counts
from hypertune.bench.core import Figure
from hypertune.metrics.bleu import bleu_stats_batch, build_references


def synthetic_kbest(
    n_hypotheses: int,
    seed: int = 0,
    n_references: int = 4,
    mean_length: int = 25,
    hypotheses_per_sentence: int = 100,
    vocabulary_size: int = 20_000,
) -> tuple[list[list[np.ndarray]], np.ndarray, np.ndarray, np.ndarray]:
    """Random references and k-best hypotheses as flat word-id arrays.

    Words are Zipf-distributed ids; each hypothesis mixes words of the first reference (kept in
    order, so that n-grams match) with random words, so match rates resemble real MT output.
    Returns ``(references, tokens, offsets, sentence)``.
    """
    rng = np.random.default_rng(seed)
    n_sentences = max(1, -(-n_hypotheses // hypotheses_per_sentence))

    cdf = np.cumsum(1.0 / np.arange(1, vocabulary_size + 1) ** 1.1)
    cdf /= cdf[-1]

    def words(size: int) -> np.ndarray:
        return np.minimum(np.searchsorted(cdf, rng.random(size)), vocabulary_size - 1).astype(np.int64)

    references = []
    base = []
    for _ in range(n_sentences):
        lengths = np.maximum(1, rng.poisson(mean_length, size=n_references))
        refs = [words(int(n)) for n in lengths]
        references.append(refs)
        base.append(refs[0])
    sentence = np.repeat(np.arange(n_sentences, dtype=np.int64), hypotheses_per_sentence)[:n_hypotheses]
    lengths = np.maximum(1, rng.poisson(mean_length, size=n_hypotheses)).astype(np.int64)
    offsets = offsets_from_counts(lengths)
    tokens = words(int(offsets[-1]))
    # copy runs from the sentence's first reference into about 60% of the positions
    keep = rng.random(int(offsets[-1])) < 0.6
    position = np.arange(int(offsets[-1])) - np.repeat(offsets[:-1], lengths)
    ref_lengths = np.array([len(b) for b in base], dtype=np.int64)
    ref_flat = np.concatenate(base)
    ref_start = offsets_from_counts(ref_lengths)[:-1]
    hyp_sentence = np.repeat(sentence, lengths)
    source = ref_start[hyp_sentence] + position % ref_lengths[hyp_sentence]
    tokens[keep] = ref_flat[source[keep]]
    return references, tokens, offsets, sentence


def benchmark_bleu_stats(n_hypotheses: int = 1_000_000, seed: int = 0) -> dict[str, float]:
    """Time BLEU statistics of ``n_hypotheses`` hypotheses (~25 words, 4 references, 100 per sentence).

    Returns labelled timings in seconds plus the throughput; compilation is excluded (a warm-up
    call on a tiny batch runs first; compiled kernels are cached on disk).
    """
    references, tokens, offsets, sentence = synthetic_kbest(n_hypotheses, seed)
    small = build_references(references[:2])
    bleu_stats_batch(tokens[: offsets[3]], offsets[:4], np.zeros(3, dtype=np.int64), small)
    bleu_stats_batch(tokens[: offsets[5000]], offsets[:5001], np.zeros(5000, dtype=np.int64), small)
    start = time.perf_counter()
    prepared = build_references(references)
    built = time.perf_counter()
    stats = bleu_stats_batch(tokens, offsets, sentence, prepared)
    done = time.perf_counter()
    assert stats.shape[0] == n_hypotheses
    return {
        "bleu_stats.n_hypotheses": float(n_hypotheses),
        "bleu_stats.n_sentences": float(len(references)),
        "bleu_stats.build_references_s": built - start,
        "bleu_stats.stats_s": done - built,
        "bleu_stats.total_s": done - start,
        "bleu_stats.hypotheses_per_s": n_hypotheses / (done - start),
        "bleu_stats.mean_length": float(offsets[-1] / n_hypotheses),
    }


def metric_figures(num_hypotheses: int = 1_000_000, seed: int = 0) -> list[Figure]:
    """BLEU statistics of ``num_hypotheses`` hypotheses (about 25 words, 4 references)."""
    result = benchmark_bleu_stats(n_hypotheses=num_hypotheses, seed=seed)
    detail = (
        f"{int(result['bleu_stats.n_hypotheses'])} hypotheses, mean length "
        f"{result['bleu_stats.mean_length']:.1f}, 4 references"
    )
    return [Figure("BLEU statistics", result["bleu_stats.total_s"], 5.0 * num_hypotheses / 1_000_000, detail)]
