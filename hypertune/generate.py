"""Seeded synthetic forests, lattices and k-best lists: for benchmarks, tests and teaching.

The shapes follow real decoder output, so derivation counts stay realistic (cdec's 14,141-edge forest
has about 1e18 derivations; a random DAG of that size would have astronomically many):

* A **forest** is what a Hiero/CKY decoder builds over a source sentence of ``length`` words: every span
  ``(i, j)`` no longer than ``max_span`` (and every prefix span ``(0, j)``, as glue rules build) has
  ``states`` nodes (its language-model states); a node's in-edges are phrase rules (axioms, on short
  spans), rules with one gap (one tail on a sub-span) and, with ``max_arity >= 2``, binary rules over a
  split point (two tails on adjacent sub-spans). The goal joins the nodes of the whole sentence.
* A **lattice** is a phrase-based search graph: ``states`` nodes per source position, arcs that cover
  1-3 source words, and a goal after the last position.

Everything not on a derivation of the goal is trimmed, so the edge count is close to, not exactly,
the requested size. Feature values are standard normal; words are ``w0 .. w{vocabulary_size-1}``.

A **reranking set** (:func:`random_reranking_set`) is k-best lists with QE-like features and a given
COMET-like score per hypothesis, correlated through a latent quality (documented there), with references.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from hypertune.arrays import flat_ranges, offsets_from_counts
from hypertune.hypergraph import EdgeScores, Hypergraph, KbestLists, from_kbest, kbest_lattices, trimmed
from hypertune.symbols import FeatureSpace, Vocabulary


def random_hypergraph(  # noqa: PLR0913 - keyword-only knobs of a generator, each with a default
    num_edges: int = 1000,
    *,
    max_arity: int = 2,
    num_features: int = 20,
    vocabulary_size: int = 1000,
    lattice: bool = False,
    fan_in: int = 4,
    max_span: int = 8,
    seed: int | np.random.Generator | None = None,
    feature_space: FeatureSpace | None = None,
    vocabulary: Vocabulary | None = None,
) -> Hypergraph:
    """A random forest (or lattice, or with ``max_arity=1`` a forest of one-gap rules) of about
    ``num_edges`` edges; each node has 1..2*fan_in-1 in-edges (``fan_in`` on average)."""
    rng = np.random.default_rng(seed)
    if max_arity < 1 or num_edges < 4 or num_features < 0:
        raise ValueError("need max_arity >= 1, num_edges >= 4 and num_features >= 0")
    fan_in = max(1, fan_in)
    if lattice:
        head, tails_list = _lattice_structure(num_edges, fan_in, rng)
    else:
        head, tails_list = _forest_structure(num_edges, min(max_arity, 2), fan_in, max_span, rng)
    arity = np.fromiter((len(t) for t in tails_list), dtype=np.int64, count=len(tails_list))
    tails = np.fromiter((t for ts in tails_list for t in ts), dtype=np.int64, count=int(arity.sum()))
    order = np.argsort(head, kind="stable")
    tails = tails[flat_ranges(offsets_from_counts(arity), order)]
    head, arity = head[order], arity[order]
    num_nodes = int(head.max()) + 1
    vocabulary = Vocabulary() if vocabulary is None else vocabulary
    feature_space = FeatureSpace() if feature_space is None else feature_space
    target_offsets, target = _random_targets(arity, lattice, vocabulary, vocabulary_size, rng)
    columns = np.array([feature_space.index(f"F{i}") for i in range(num_features)], dtype=np.int64)
    dense = rng.standard_normal((head.size, num_features))
    features = sp.csr_matrix(
        (dense.ravel(), np.tile(columns, head.size), np.arange(head.size + 1) * num_features),
        shape=(head.size, len(feature_space)),
    )
    return trimmed(
        {
            "num_nodes": num_nodes,
            "head": head,
            "tail_offsets": offsets_from_counts(arity),
            "tails": tails,
            "features": features,
            "target_offsets": target_offsets,
            "target": target,
            "feature_space": feature_space,
            "vocabulary": vocabulary,
            "metadata": {"generator": "lattice" if lattice else "forest"},
        }
    )


def _forest_structure(
    num_edges: int, max_arity: int, fan_in: int, max_span: int, rng: np.random.Generator
) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """Nodes per span, bottom-up by span length; returns edge heads and tails (goal = last node)."""
    states = max(2, int(np.sqrt(num_edges / fan_in / 40)))
    spans_needed = max(2, num_edges // (fan_in * states))
    length = 2
    while _span_count(length, max_span) < spans_needed:
        length += 1
    spans = sorted(
        ((i, j) for i in range(length) for j in range(i + 1, length + 1) if j - i <= max_span or i == 0),
        key=lambda s: (s[1] - s[0], s[0]),
    )
    first_node = {}
    for index, span in enumerate(spans):
        first_node[span] = index * states
    heads: list[int] = []
    tails: list[tuple[int, ...]] = []
    for (i, j), base in first_node.items():
        width = j - i
        for node in range(base, base + states):
            for k in range(int(rng.integers(1, 2 * fan_in))):
                choice = rng.random()
                if width <= 2 and (k == 0 or choice < 0.3):
                    tails.append(())
                elif max_arity >= 2 and width >= 2 and (choice < 0.7 or width > max_span):
                    split = _split_point(i, j, max_span, rng)
                    tails.append(
                        (_pick(first_node, (i, split), states, rng), _pick(first_node, (split, j), states, rng))
                    )
                elif width >= 2:
                    inner = (
                        (i, j - 1)
                        if (i, j - 1) in first_node and (rng.random() < 0.5 or (i + 1, j) not in first_node)
                        else (i + 1, j)
                    )
                    tails.append((_pick(first_node, inner, states, rng),))
                else:
                    tails.append(())
                heads.append(node)
    goal = len(spans) * states
    top = first_node[(0, length)]
    for node in range(top, top + states):
        heads.append(goal)
        tails.append((node,))
    return np.asarray(heads, dtype=np.int64), tails


def _span_count(length: int, max_span: int) -> int:
    return sum(1 for i in range(length) for j in range(i + 1, length + 1) if j - i <= max_span or i == 0)


def _split_point(i: int, j: int, max_span: int, rng: np.random.Generator) -> int:
    """A split ``k`` of span (i, j) whose two halves are both spans of the chart."""
    return int(rng.integers(max(i + 1, j - max_span), j))


def _pick(first_node: dict[tuple[int, int], int], span: tuple[int, int], states: int, rng: np.random.Generator) -> int:
    return first_node[span] + int(rng.integers(0, states))


def _lattice_structure(
    num_edges: int, fan_in: int, rng: np.random.Generator
) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """A start node, ``states`` nodes per source position, arcs covering 1-3 positions, and a goal."""
    states = max(2, int(np.sqrt(num_edges / fan_in / 20)))
    positions = max(2, num_edges // (fan_in * states))
    heads = [0]
    tails: list[tuple[int, ...]] = [()]
    for position in range(1, positions + 1):
        for s in range(states):
            node = 1 + (position - 1) * states + s
            for _ in range(int(rng.integers(1, 2 * fan_in))):
                back = int(rng.integers(1, min(3, position) + 1))
                source = 0 if position == back else 1 + (position - back - 1) * states + int(rng.integers(0, states))
                heads.append(node)
                tails.append((source,))
    goal = 1 + positions * states
    for s in range(states):
        heads.append(goal)
        tails.append((1 + (positions - 1) * states + s,))
    return np.asarray(heads, dtype=np.int64), tails


def _random_targets(
    arity: np.ndarray, lattice: bool, vocabulary: Vocabulary, vocabulary_size: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Target sides: (lattice) the tail then 1-3 words; (forest) a word before and after each tail with
    probability one half, at least one word on axioms."""
    words = np.array([vocabulary.index(f"w{i}") for i in range(vocabulary_size)], dtype=np.int64)
    edges = arity.size
    if lattice:
        before = np.zeros(edges, dtype=np.int64)
        after = rng.integers(1, 4, size=edges) * (arity > 0)
    else:
        before = ((rng.random(edges) < 0.5) | (arity == 0)).astype(np.int64)
        after = (rng.random(edges) < 0.5).astype(np.int64)
    length = before + arity + after
    offsets = offsets_from_counts(length)
    target = np.empty(int(offsets[-1]), dtype=np.int64)
    position = np.arange(target.size) - np.repeat(offsets[:-1], length)
    tail_index = position - np.repeat(before, length)
    is_tail = (tail_index >= 0) & (tail_index < np.repeat(arity, length))
    target[is_tail] = -(tail_index[is_tail] + 1)
    target[~is_tail] = words[rng.integers(0, vocabulary_size, size=int((~is_tail).sum()))]
    return offsets, target


def random_kbest(
    num_hypotheses: int = 100,
    *,
    num_features: int = 10,
    max_length: int = 20,
    vocabulary_size: int = 200,
    seed: int | np.random.Generator | None = None,
    feature_space: FeatureSpace | None = None,
    vocabulary: Vocabulary | None = None,
) -> Hypergraph:
    """A random k-best list (as a degenerate lattice) with dense features ``F0 ..``."""
    rng = np.random.default_rng(seed)
    hypotheses = []
    for _ in range(num_hypotheses):
        length = int(rng.integers(1, max_length + 1))
        words = [f"w{i}" for i in rng.integers(0, vocabulary_size, size=length)]
        values = rng.standard_normal(num_features)
        hypotheses.append((words, {f"F{i}": float(v) for i, v in enumerate(values)}))
    return from_kbest(hypotheses, feature_space, vocabulary)


#: The features of a synthetic reranking set, in order (``num_features`` takes the first ones; more are
#: ``f8, f9, ...``): name, loading on the hypothesis's quality ``q``, and the noise's standard deviation
#: (see :func:`random_reranking_set`).
RERANKING_FEATURES = (
    ("logprob", None, 1.0),  # length-driven model log-probability (see the docstring)
    ("length", None, 0.0),  # the word count
    ("qe", 0.8, 0.5),  # a strong QE model (CometKiwi-like)
    ("qe_small", 0.3, 0.6),  # a weaker QE model
    ("mbr", 0.1, 0.08),  # an MBR utility (expected similarity to the other candidates)
    ("lm", 0.15, 0.5),  # a target language model's per-word score: weakly correlated
    ("copy", -0.2, 0.3),  # a copy / hallucination detector: negatively correlated
    ("noise", 0.0, 1.0),  # uncorrelated
)


def random_reranking_set(
    sentences: int = 100,
    candidates: int = 100,
    *,
    num_features: int = 8,
    score_name: str = "comet",
    vocabulary_size: int = 500,
    seed: int | np.random.Generator | None = None,
    feature_space: FeatureSpace | None = None,
    vocabulary: Vocabulary | None = None,
) -> tuple[list[Hypergraph], list[str]]:
    """A seeded synthetic reranking set: ``sentences`` k-best lists of ``candidates`` hypotheses with features
    and a given score each, shaped like the n-best lists of neural MT with QE features and a COMET score
    (Fernandes et al. 2022), and one reference per sentence. Returns the graphs (sentence ids 0..) and the
    references.

    The model: sentence ``i`` has a reference of ``5 + Poisson(15)`` words drawn uniformly from ``w0 ..
    w{vocabulary_size-1}`` and a difficulty ``d_i ~ N(0, 1)``; its hypothesis ``j`` has the latent quality
    ``q = d_i + 0.7 z`` (``z ~ N(0, 1)``: the part reranking can exploit) and the word error rate ``p =
    sigmoid(-1 - 0.9 q)``: it copies the reference with each word replaced by a random word with probability
    ``p``, ``round(N(0, 1 + 3p))`` words longer or shorter (at least one word), so BLEU against the reference
    follows ``q``. The given score is ``sigmoid(1.2 + 0.9 q + 0.25 e)`` (``e ~ N(0, 1)``), COMET-like in
    (0, 1). The features (:data:`RERANKING_FEATURES`), each with its own noise, correlate with the score as
    real ones do: ``logprob = -(0.9 + 0.6 p) L + N(0, 1)`` for ``L`` words (driven by length, so it prefers
    short hypotheses), ``length = L``, ``qe = sigmoid(1 + 0.8 q + 0.5 e')`` (strong), and ``a q + s e_k`` for
    the others: ``qe_small`` (a = 0.3), ``mbr`` (0.5 + 0.1 q), ``lm`` (-3 + 0.15 q, weak), ``copy`` (-0.2:
    negative) and ``noise`` (0: none); features ``f8 ..`` beyond those have loadings drawn from
    [-0.3, 0.5]. Scores and features are rounded to 4 decimals, as tools print them."""
    rng = np.random.default_rng(seed)
    if sentences < 1 or candidates < 1 or num_features < 0 or vocabulary_size < 1:
        raise ValueError("need sentences >= 1, candidates >= 1, num_features >= 0 and vocabulary_size >= 1")
    feature_space = FeatureSpace() if feature_space is None else feature_space
    vocabulary = Vocabulary() if vocabulary is None else vocabulary
    words = vocabulary.indices([f"w{k}" for k in range(vocabulary_size)]).astype(np.int64)
    ref_lengths = 5 + rng.poisson(15, sentences)
    ref_offsets = offsets_from_counts(ref_lengths)
    references = words[rng.integers(0, vocabulary_size, int(ref_offsets[-1]))]
    hypotheses = sentences * candidates
    sentence = np.repeat(np.arange(sentences), candidates)
    quality = rng.standard_normal(sentences)[sentence] + 0.7 * rng.standard_normal(hypotheses)
    error_rate = 1 / (1 + np.exp(1 + 0.9 * quality))
    lengths = np.maximum(1, ref_lengths[sentence] + np.rint(rng.normal(0, 1 + 3 * error_rate)).astype(np.int64))
    word_offsets = offsets_from_counts(lengths)
    owner = np.repeat(np.arange(hypotheses), lengths)  # the hypothesis of every word
    position = np.arange(int(word_offsets[-1])) - word_offsets[owner]
    copied = (position < ref_lengths[sentence][owner]) & (rng.random(owner.size) >= error_rate[owner])
    tokens = words[rng.integers(0, vocabulary_size, owner.size)]
    reference_word = ref_offsets[sentence[owner]] + np.minimum(position, ref_lengths[sentence][owner] - 1)
    tokens[copied] = references[reference_word[copied]]
    score = 1 / (1 + np.exp(-(1.2 + 0.9 * quality + 0.25 * rng.standard_normal(hypotheses))))
    columns = []
    for k in range(num_features):
        name, loading, noise = RERANKING_FEATURES[k] if k < len(RERANKING_FEATURES) else (f"f{k}", None, 1.0)
        if name == "logprob":
            value = -(0.9 + 0.6 * error_rate) * lengths + noise * rng.standard_normal(hypotheses)
        elif name == "length":
            value = lengths.astype(np.float64)
        elif name == "qe":
            value = 1 / (1 + np.exp(-(1 + 0.8 * quality + 0.5 * rng.standard_normal(hypotheses))))
        else:
            loading = rng.uniform(-0.3, 0.5) if loading is None else loading
            offset = {"mbr": 0.5, "lm": -3.0}.get(name, 0.0)
            value = offset + loading * quality + noise * rng.standard_normal(hypotheses)
        columns.append((feature_space.index(name), np.round(value, 4)))
    width = len(columns)
    features = sp.csr_matrix(
        (
            np.column_stack([v for _, v in columns]).ravel() if width else np.zeros(0),
            np.tile(np.array([c for c, _ in columns], dtype=np.int64), hypotheses),
            np.arange(hypotheses + 1) * width,
        ),
        shape=(hypotheses, len(feature_space)),
    )
    graphs = kbest_lattices(
        KbestLists(np.arange(sentences + 1) * candidates, tokens, word_offsets, features),
        feature_space,
        vocabulary,
        sentence_ids=list(range(sentences)),
        hypothesis_scores=EdgeScores([score_name], np.round(score, 4)[:, None]),
    )
    texts = vocabulary.words(references.tolist())
    lines = [" ".join(texts[lo:hi]) for lo, hi in zip(ref_offsets[:-1].tolist(), ref_offsets[1:].tolist(), strict=True)]
    return graphs, lines
