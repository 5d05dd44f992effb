"""N-gram intersection: same derivations (mapped back), and every n-gram of a yield created exactly once."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st
from support.strategies import hypergraphs

from hypertune.algorithms import count_derivations, enumerate_derivations
from hypertune.algorithms.intersect import intersect_ngrams


def _ngrams(words, order):
    return Counter(tuple(words[i : i + n]) for n in range(1, order + 1) for i in range(len(words) - n + 1))


@settings(max_examples=60)
@given(hypergraphs(max_nodes=6), st.integers(1, 4), st.booleans())
def test_intersection_preserves_derivations_and_creates_each_ngram_once(hg, order, skip_first):
    _check_by_enumeration(hg, order, [0] if skip_first and len(hg.vocabulary) else [])


@settings(max_examples=40)
@given(
    st.one_of(hypergraphs(max_nodes=5, max_arity=3), hypergraphs(max_nodes=7, lattice=True)),
    st.integers(1, 4),
    st.sampled_from([[], [0], [1, 2]]),
)
def test_brute_force_on_lattices_and_three_tail_rules(hg, order, skip):
    _check_by_enumeration(hg, order, skip)


def _check_by_enumeration(hg, order, skip):
    """Every derivation of the split graph maps to one of the original (each exactly once), with the same
    yield, and its edges create exactly the n-grams of that yield (skip words dropped)."""
    inter = intersect_ngrams(hg, order, skip)
    split = inter.graph
    originals = Counter(enumerate_derivations(hg))
    mapped = Counter()
    for d in enumerate_derivations(split):
        original = inter.original_derivation(d)
        mapped[original] += 1
        words = [w for w in hg.derivation_yield(original) if w not in skip]
        created = Counter()
        for e in d.edges():
            lo, hi = inter.gram_offsets[e], inter.gram_offsets[e + 1]
            for row, n in zip(inter.grams[lo:hi], inter.gram_orders[lo:hi], strict=True):
                created[tuple(int(x) for x in row[:n])] += 1
        assert created == _ngrams(words, order)
        assert split.derivation_yield(d) == hg.derivation_yield(original)
    assert mapped == originals


@given(st.integers(0, 10_000))
def test_lattices_keep_only_right_contexts(seed):
    """Tails first (a phrase-based lattice): only the last words matter, as in an n-gram automaton."""
    from hypertune.generate import random_hypergraph

    hg = random_hypergraph(20, lattice=True, vocabulary_size=3, fan_in=2, seed=seed)
    assert all(hg.edge_target(e)[0] < 0 for e in range(1, hg.num_edges))
    inter = intersect_ngrams(hg, 3)
    assert all(
        left is None
        for left, right in zip(inter.node_left, inter.node_right, strict=True)
        if right is None or len(right) == 2
    )
    assert count_derivations(inter.graph) == count_derivations(hg)
