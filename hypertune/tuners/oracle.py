"""Oracles: the translation in each search space that the metric likes best (see docs/oracle.md).

Methods (``method=``):

``kbest``
    k-best lists: the exact sentence oracle under the tuning set's metric, any metric (BLEU+1 by default,
    chrF, TER, ...). Lattices and forests are refused; use one of the graph methods. (k-best lists are
    searched this way whatever the method.)
``linear``
    Viterbi under the linear-BLEU gain (Tromble et al. 2008; Sokolov et al. 2012's LB-4g) over the graph
    split by (N−1)-word state: exact for that gain.
``partial``
    Viterbi with the BLEU+1 of the statistics of each node's best partial derivation (Li & Khudanpur 2009;
    Sokolov et al.'s PB): clipped matches, brevity penalty against the reference length prorated by
    source coverage (Moses hypergraphs) or the node's position -- the approximate hope search of
    :mod:`hypertune.tuners.hope_fear` with the model score left out, with a beam of ``beam`` states per
    node (:mod:`hypertune.tuners.partial_bleu`; default 1).
``exact``
    The true sentence oracle. A graph with at most ``enumerate_below`` derivations (counting semiring), or any
    graph under a metric the bound is not written for, has every distinct string enumerated best derivation
    first (:class:`~hypertune.algorithms.kbest.LazyKBest`) and scored exactly, refused above ``max_strings``;
    otherwise BLEU+1 (and BLEU with add-k smoothing) is maximized by branch and bound over the n-gram-split
    graph from the ``partial`` oracle (:mod:`hypertune.tuners.exact_oracle`), refused beyond
    ``max_expansions``. A refused sentence is a :class:`SearchLimitError`; with ``keep_going`` the search goes
    on with the other sentences and names the refused ones in :attr:`OracleResult.unfinished`.
``corpus``
    The greedy corpus oracle (survey Fig. 2): from the sentence oracles of ``start_method``, repeatedly
    switch the one sentence whose switch raises corpus BLEU most, until no switch helps. On lattices and
    forests each pass first draws a new candidate per sentence from the graph by the ``partial`` search
    against the corpus's current statistics (cicada's hill climbing). ``variant="sentence-order"`` visits
    sentences one at a time in a seeded order instead (Chiang et al. 2008's oracle).

Every method returns per sentence the oracle's words, features, model score under the weights (all 0
without weights) and exact statistics recomputed from its words. Among candidates with equal metric
score the higher model score wins, then (k-best lists and ``exact``) the lexicographically greater
string; graph searches break remaining ties by the first in-edge.

The sentence methods check for a deferred signal between sentences (and the branch and bound inside its
search; :mod:`hypertune.interrupts`); ``progress(done, total)`` is called after every sentence and
``checkpoint(oracle)`` with every sentence's oracle as it is found, so that a caller keeps the finished ones.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numba
import numpy as np

import hypertune.numba_cache  # noqa: F401  # first: the kernels' cache stamps cover the whole package
from hypertune import interrupts
from hypertune.algorithms import count_derivations
from hypertune.algorithms.kbest import LazyKBest
from hypertune.arrays import offsets_from_counts
from hypertune.choices import CORPUS_ORACLE_VARIANTS, ORACLE_METHODS
from hypertune.errors import GraphError, HypertuneError, InputError, UsageError
from hypertune.metrics import BleuMetric, LinearBleu
from hypertune.metrics.background import SCALE_NONE, background_bleu
from hypertune.metrics.bleu import bleu_score
from hypertune.metrics.gains import Gain
from hypertune.metrics.linear_bleu import estimate_precisions
from hypertune.tuners import exact_oracle
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.hope_fear import ForestArrays, HopeFearDecoder
from hypertune.tuners.model_best import ModelBest
from hypertune.tuners.ngram_edges import NgramEdges
from hypertune.tuners.partial_bleu import beam_search
from hypertune.tuners.shards import Shard, Shards
from hypertune.weights import Weights

METHODS = ORACLE_METHODS
VARIANTS = CORPUS_ORACLE_VARIANTS


class SearchLimitError(HypertuneError):
    """A sentence the exact oracle cannot finish within its limits (``max_expansions``, ``max_strings``, the
    n-gram split's size); the message names the sentence by its id and what to do. ``sentence``: its index."""

    def __init__(self, message: str, sentence: int) -> None:
        super().__init__(message)
        self.sentence = sentence


@dataclass(frozen=True)
class Oracle:
    """One sentence's oracle: its words (sentence markers dropped), sparse features, model score ``w·h``, exact
    metric statistics and sentence score."""

    sentence: int
    words: list[str]
    features: dict[str, float]
    model_score: float
    stats: np.ndarray
    score: float

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass
class OracleResult:
    """Every sentence's oracle, the corpus statistics and the corpus metric of the oracle translations
    (``bleu``, 0-1: plain corpus BLEU for the BLEU family, see :func:`corpus_score`), the method and how long
    the search took. With ``keep_going``, ``unfinished`` holds ``(sentence, reason)`` of every sentence beyond the
    limits, and ``oracles``, the statistics and ``bleu`` are those of the finished sentences alone."""

    oracles: list[Oracle]
    corpus_stats: np.ndarray
    bleu: float
    method: str
    seconds: float = 0.0
    #: JSON-ready figures of the search (``linear_p``, the exact search's counts under ``exact``, ...)
    details: dict[str, Any] = field(default_factory=dict)
    unfinished: list[tuple[int, str]] = field(default_factory=list)


class OracleSearch:
    """Oracle search with options in the constructor and one ``run(tuning_set, weights)`` (see the module
    docstring). ``linear_p``/``linear_r``: Tromble's p and r for ``linear`` (default: estimated from the
    model-best statistics under ``weights``). ``beam``: states per node of ``partial``. ``max_strings``:
    the most distinct strings ``exact`` enumerates per graph; ``enumerate_below``: graphs with at most this
    many derivations are enumerated, larger ones searched by branch and bound with at most
    ``max_expansions`` partial derivations expanded. ``passes``: the most candidate-drawing passes
    of ``corpus`` on graphs. ``seed``: the sentence order of ``variant="sentence-order"``. ``keep_going``: a
    sentence beyond the limits does not stop a sentence method (:attr:`OracleResult.unfinished`). ``progress``:
    called with (sentences done, sentences) after every sentence of a sentence method in this process;
    ``checkpoint``: with each of their :class:`Oracle` as it is found."""

    def __init__(  # noqa: PLR0913 - the search's options, keyword-only
        self,
        *,
        method: str = "partial",
        start_method: str = "partial",
        variant: str = "best-switch",
        linear_p: float | None = None,
        linear_r: float | None = None,
        beam: int = 1,
        max_strings: int = 100_000,
        max_expansions: int = exact_oracle.MAX_EXPANSIONS,
        enumerate_below: int = exact_oracle.ENUMERATE_BELOW,
        passes: int = 10,
        seed: int = 0,
        keep_going: bool = False,
        progress: Callable[[int, int], None] | None = None,
        checkpoint: Callable[[Oracle], None] | None = None,
    ) -> None:
        if method not in METHODS:
            raise UsageError(f"unknown oracle method {method!r}; choose one of {', '.join(METHODS)}")
        if start_method not in METHODS or start_method == "corpus":
            raise UsageError(f"--start-method must be a sentence method ({', '.join(METHODS[:-1])})")
        if variant not in VARIANTS:
            raise UsageError(f"unknown corpus oracle variant {variant!r}; choose one of {', '.join(VARIANTS)}")
        if (linear_p is None) != (linear_r is None):
            raise UsageError("give both --linear-p and --linear-r, or neither (both are then estimated)")
        self.method = method
        self.start_method = start_method
        self.variant = variant
        self.linear_p, self.linear_r = linear_p, linear_r
        if beam < 1:
            raise UsageError(f"--beam must be at least 1, got {beam}")
        self.beam = beam
        if max_strings < 1 or max_expansions < 1:
            raise UsageError("--max-strings and --max-expansions must be at least 1")
        self.max_strings = max_strings
        self.max_expansions = max_expansions
        self.enumerate_below = enumerate_below
        self.passes = passes
        self.seed = seed
        self.keep_going = keep_going
        self.progress = progress
        self.checkpoint = checkpoint

    def run(self, tuning_set: TuningSet | Shards, weights: Weights | None = None) -> OracleResult:
        """Every sentence's oracle. A sharded tuning set (:class:`~hypertune.tuners.shards.Shards`, e.g. on a
        Dask cluster) searches each shard's sentences where the shard is (:meth:`run_shards`)."""
        if not isinstance(tuning_set, TuningSet):
            return self.run_shards(tuning_set, weights)
        started = time.perf_counter()
        search = _Search(self, tuning_set, weights or Weights())
        method = self.method
        unfinished: list[tuple[int, str]] = []
        if method == "corpus":
            chosen = {s: search.describe(s, edges) for s, edges in enumerate(search.corpus())}
        else:
            chosen, unfinished = search.sentence_oracles(method, self.progress, self.checkpoint)
        oracles = list(chosen.values())
        total, bleu = _corpus_total(tuning_set, oracles)
        return OracleResult(oracles, total, bleu, method, time.perf_counter() - started, search.details, unfinished)

    def run_shards(self, shards: Shards, weights: Weights | None = None) -> OracleResult:
        """The oracles searched shard by shard where the shards are: only the options, weights and statistics
        rows travel out, and every sentence's oracle (words, features, statistics) back; they are joined in
        shard order, so the result is the single-process one. ``linear`` without ``linear_p``/``linear_r``
        first sums the shards' model-best statistics to estimate them over the whole corpus, as one process
        does. The corpus oracle keeps each sentence's candidates on its shard and switches their statistics
        rows here (:func:`switch_and_draw`), one round of drawing per pass."""
        started = time.perf_counter()
        weights = weights or Weights()
        if self.method == "corpus":
            oracles, corpus_details = self._corpus_on_shards(shards, weights)
            total = np.sum([o.stats for o in oracles], axis=0)
            return OracleResult(
                oracles, total, corpus_score(shards, total), "corpus", time.perf_counter() - started, corpus_details
            )
        options = copy.copy(self)
        options.progress = options.checkpoint = None  # what travels: the options, not the caller's callbacks
        if self.method == "linear" and self.linear_p is None:
            order = getattr(shards.metric, "max_order", 4)
            total = np.sum(shards.map(oracle_shard_model_stats, weights), axis=0)
            try:
                p, r = estimate_precisions(total, order)
            except InputError as error:
                raise UsageError(f"{error} in the model-best translations; give --linear-p and --linear-r") from None
            options.linear_p, options.linear_r = p, r
        parts = shards.map(oracle_shard_sentences, options, weights)
        oracles = [oracle for found, _, _ in parts for oracle in found]
        unfinished = [item for _, _, part in parts for item in part]
        details: dict[str, object] = {}
        for _, found, _ in parts:
            for key, value in found.items():
                into = details.get(key)
                if key == "exact" and isinstance(into, dict):  # the exact search's counts, summed over shards
                    for name in ("enumerated", "searched", "expansions"):
                        into[name] += value[name]
                    into["most"] = max(into["most"], value["most"])
                else:
                    details.setdefault(key, dict(value) if isinstance(value, dict) else value)
        total, bleu = _corpus_total(shards, oracles)
        return OracleResult(oracles, total, bleu, self.method, time.perf_counter() - started, details, unfinished)

    def _corpus_on_shards(self, shards: Shards, weights: Weights) -> tuple[list[Oracle], dict[str, object]]:
        """The corpus oracle over shards: candidates start and grow on the shards, statistics rows are switched
        here; the same passes, in the same order, as in one process."""
        if not isinstance(shards.metric, BleuMetric):
            raise UsageError("the corpus oracle raises corpus BLEU: use a BLEU metric")
        parts = shards.map(oracle_shard_corpus_start, self, weights)
        bounds = offsets_from_counts([len(part) for part in parts])
        spans = list(zip(bounds[:-1], bounds[1:], strict=True))
        stats = [rows for part in parts for rows in part]

        def draw(chosen: np.ndarray, total: np.ndarray) -> list[np.ndarray | None]:
            drawn = shards.map_each(oracle_shard_corpus_draw, [chosen[a:b] for a, b in spans], total)
            return [row for part in drawn for row in part]

        current, passes = switch_and_draw(self, getattr(shards.metric, "max_order", 4), stats, draw)
        found = shards.map_each(oracle_shard_corpus_oracles, [current[a:b] for a, b in spans])
        details: dict[str, object] = {}
        for _, part in found:
            for key, value in part.items():
                details.setdefault(key, value)
        details.update(passes=passes)
        return [oracle for oracles, _ in found for oracle in oracles], details


def oracle_shard_sentences(
    shard: Shard, options: OracleSearch, weights: Weights
) -> tuple[list[Oracle], dict, list[tuple[int, str]]]:
    """The shard's sentence oracles (numbered in the whole tuning set), its search's details and its unfinished
    sentences (``keep_going``)."""
    search = _Search(options, shard.tuning_set, weights)
    chosen, unfinished = search.sentence_oracles(options.method)
    found = [replace(oracle, sentence=shard.start + s) for s, oracle in chosen.items()]
    return found, search.details, [(shard.start + s, reason) for s, reason in unfinished]


def _corpus_total(tuning_set: TuningSet | Shards, oracles: list[Oracle]) -> tuple[np.ndarray, float]:
    """The summed statistics of ``oracles`` and their corpus score (0 statistics and score without any)."""
    if not oracles:
        return np.zeros(tuning_set.metric.stats_size), 0.0
    total = np.sum([o.stats for o in oracles], axis=0)
    return total, corpus_score(tuning_set, total)


def oracle_shard_model_stats(shard: Shard, weights: Weights) -> np.ndarray:
    """The shard's summed statistics of its model-best translations under ``weights``."""
    space = shard.tuning_set.feature_space
    return ModelBest(shard.tuning_set).stats(weights.vector(space, len(space))).sum(axis=0)


def oracle_shard_corpus_start(shard: Shard, options: OracleSearch, weights: Weights) -> list[np.ndarray]:
    """The corpus oracle's start on a shard: its sentences' candidates, kept on the shard; their statistics."""
    candidates = _CorpusCandidates(_Search(options, shard.tuning_set, weights))
    shard.state["oracle:corpus"] = candidates
    return candidates.stats


def oracle_shard_corpus_draw(shard: Shard, chosen: np.ndarray, total: np.ndarray) -> list[np.ndarray | None]:
    """One pass's new candidates of the shard's sentences (:meth:`_CorpusCandidates.draw`)."""
    return shard.state["oracle:corpus"].draw(chosen, total)


def oracle_shard_corpus_oracles(shard: Shard, current: np.ndarray) -> tuple[list[Oracle], dict]:
    """The shard's chosen candidates as oracles (numbered in the whole tuning set); the candidates are freed."""
    candidates: _CorpusCandidates = shard.state.pop("oracle:corpus")
    search = candidates.search
    chosen = candidates.chosen(current)
    return [
        replace(search.describe(s, edges), sentence=shard.start + s) for s, edges in enumerate(chosen)
    ], search.details


class _Search:
    """One run: the tuning set, weights, the hope/fear decoder that walks graphs, cached split graphs."""

    def __init__(self, options: OracleSearch, tuning_set: TuningSet, weights: Weights) -> None:
        self.options = options
        self.tuning_set = tuning_set
        self.w = weights.vector(tuning_set.feature_space, len(tuning_set.feature_space))
        self.decoder = HopeFearDecoder(tuning_set)
        self.metric = tuning_set.metric
        self.sign = 1.0 if getattr(self.metric, "higher_is_better", True) else -1.0
        self.order = getattr(self.metric, "max_order", 4)
        self.split: dict[int, NgramEdges] = {}
        self.gains: dict[int, np.ndarray] = {}
        self._linear: LinearBleu | None = None
        self.details: dict[str, object] = {}

    # ------------------------------------------------------------------ one sentence
    def sentence_oracles(
        self,
        method: str,
        progress: Callable[[int, int], None] | None = None,
        checkpoint: Callable[[Oracle], None] | None = None,
    ) -> tuple[dict[int, Oracle], list[tuple[int, str]]]:
        """Every sentence's oracle under a sentence method, by sentence (each given to ``checkpoint`` as it is
        found); with ``keep_going``, the sentences beyond the limits are left out and returned as ``(sentence,
        reason)``."""
        chosen: dict[int, Oracle] = {}
        unfinished: list[tuple[int, str]] = []
        count = len(self.tuning_set)
        if progress is not None:
            progress(0, count)
        for s in range(count):
            interrupts.check()  # a safe point between sentences
            try:
                chosen[s] = self.describe(s, self.sentence_oracle(s, method))
            except SearchLimitError as error:
                if not self.options.keep_going:
                    raise
                unfinished.append((s, str(error)))
            else:
                if checkpoint is not None:
                    checkpoint(chosen[s])
            if progress is not None:
                progress(s + 1, count)
        return chosen, unfinished

    def sentence_oracle(self, sentence: int, method: str) -> np.ndarray:
        """Pre-order edges of ``sentence``'s oracle under a sentence method."""
        hg = self.tuning_set.graphs[sentence]
        if hg.is_kbest:
            return np.asarray([self.kbest_oracle(sentence), 0])
        if method == "kbest":
            raise UsageError("--method kbest is for k-best lists; lattices and forests take linear, partial or exact")
        scores = self.decoder.edge_scores(sentence, self.w)
        if method == "linear":
            return self._linear_oracle(sentence, scores)
        if method == "partial":
            data = self.decoder.sentence_data(sentence)
            forest = ForestArrays(hg.node_offsets, hg.tail_offsets, hg.tails, data.target_offsets, data.target)
            return beam_search(forest, data.refs, self.order, self.options.beam, max(hg.max_arity, 1))
        return self._exact(sentence, scores)

    def kbest_oracle(self, sentence: int) -> int:
        """The hypothesis edge of a k-best list's exact sentence oracle (tie rule of the module docstring)."""
        stats = self.decoder.kbest_stats(sentence)[1:]
        scores = self.sign * np.asarray(self.metric.score(stats), dtype=np.float64)
        model = self.decoder.edge_scores(sentence, self.w)[1:]
        return 1 + _best_of(scores, model, lambda i: self._text(sentence, np.asarray([i + 1, 0])))

    def _text(self, sentence: int, edges: np.ndarray) -> str:
        return self.tuning_set.text(self.decoder.words(sentence, edges))

    def _linear_oracle(self, sentence: int, scores: np.ndarray) -> np.ndarray:
        split = self.split_graph(sentence)
        if sentence not in self.gains:
            statistics = np.column_stack([split.counts[:, 0], split.unclipped_matches()])
            self.gains[sentence] = statistics @ self.linear().theta
        gains = self.gains[sentence]
        g = split.graph
        best_edge = _lexicographic_viterbi(g.node_offsets, g.tail_offsets, g.tails, gains, scores[split.origin])
        return split.origin[g.derivation_from_backpointers(best_edge).edges()]

    def split_graph(self, sentence: int) -> NgramEdges:
        """The sentence's graph split by (N−1)-word state, with its edges' n-grams (cached)."""
        if sentence not in self.split:
            self.split[sentence] = NgramEdges.of(self.tuning_set, sentence, self.order, self.decoder.skip.tolist())
        return self.split[sentence]

    def linear(self) -> LinearBleu:
        if self._linear is None:
            options = self.options
            if options.linear_p is None or options.linear_r is None:  # both or neither (checked when made)
                try:
                    p, r = estimate_precisions(ModelBest(self.tuning_set).stats(self.w), self.order)
                except InputError as error:
                    raise UsageError(
                        f"{error} in the model-best translations; give --linear-p and --linear-r"
                    ) from None
            else:
                p, r = float(options.linear_p), float(options.linear_r)
            self._linear = LinearBleu(p, r, bleu=BleuMetric(max_order=self.order))
            self.details.update(linear_p=p, linear_r=r)
        return self._linear

    def _exact(self, sentence: int, scores: np.ndarray) -> np.ndarray:
        """The exact oracle: enumeration for small graphs (and metrics the bound is not written for), else
        branch and bound (see the module docstring)."""
        metric = self.metric
        form = exact_oracle.bleu_form(metric)  # a form only for BLEU
        hg = self.tuning_set.graphs[sentence]
        if form is None or not isinstance(metric, BleuMetric) or count_derivations(hg) <= self.options.enumerate_below:
            self._count("enumerated", 0)
            return self._enumerated(sentence, scores)
        return self._branch_and_bound(sentence, scores, form, metric)

    def _count(self, how: str, expansions: int) -> None:
        """``details["exact"]``: graphs enumerated and searched, the expansions in all and at most."""
        figures = self.details.get("exact")
        if not isinstance(figures, dict):
            figures = self.details["exact"] = {"enumerated": 0, "searched": 0, "expansions": 0, "most": 0}
        figures[how] += 1
        figures["expansions"] += expansions
        figures["most"] = max(figures["most"], expansions)

    def _branch_and_bound(
        self, sentence: int, scores: np.ndarray, form: exact_oracle.BleuForm, metric: BleuMetric
    ) -> np.ndarray:
        start = self.sentence_oracle(sentence, "partial")
        start_words = self.decoder.words(sentence, start)
        start_stats = self.decoder.stats_of(sentence, [start_words])[0]
        start_model = float(scores[start].sum())
        incumbent = (start_stats[0 : 2 * self.order : 2], int(start_stats[1]), start_model, start_words)
        try:
            split = self.split_graph(sentence)
        except GraphError as error:  # the split's own size limit: this sentence is beyond the search
            raise SearchLimitError(
                f"sentence {self.tuning_set.sentence_ids[sentence]}: the exact oracle's branch and bound needs the "
                f"graph split by n-gram state, and {error} (use --method partial)",
                sentence,
            ) from None
        lengths = np.asarray([len(metric.ids(r)) for r in self.tuning_set.references[sentence]], dtype=np.int64)
        limit = self.options.max_expansions
        skip = self.decoder.skip.tolist()
        found = exact_oracle.branch_and_bound(split, scores[split.origin], form, lengths, incumbent, limit, skip)
        if not found.finished:
            raise SearchLimitError(
                f"sentence {self.tuning_set.sentence_ids[sentence]}: the exact oracle's branch and bound passed "
                f"{limit} expansions with BLEU+1 between {found.best:.4f} and {found.open_bound:.4f} left open "
                "(raise --max-expansions, or use --method partial or linear)",
                sentence,
            )
        self._count("searched", found.expansions)
        candidates = [start] + [split.origin[edges] for edges in found.candidates]
        yields = [self.decoder.words(sentence, edges) for edges in candidates]
        stats = self.decoder.stats_of(sentence, yields)
        metric_scores = self.sign * np.asarray(metric.score(stats), dtype=np.float64)
        model = np.asarray([scores[edges].sum() for edges in candidates])
        return candidates[_best_of(metric_scores, model, lambda i: self.tuning_set.text(yields[i]))]

    def _enumerated(self, sentence: int, scores: np.ndarray) -> np.ndarray:
        hg = self.tuning_set.graphs[sentence]
        limit = self.options.max_strings
        found = list(LazyKBest(hg, scores, unique=True).best(limit + 1))
        if len(found) > limit:
            raise SearchLimitError(
                f"sentence {self.tuning_set.sentence_ids[sentence]}: more than {limit} distinct strings; the exact "
                "oracle enumerates them all (raise --max-strings, or use --method partial or linear)",
                sentence,
            )
        yields = [self.decoder.words(sentence, np.asarray(d.edges())) for _, d in found]
        stats = self.decoder.stats_of(sentence, yields)
        metric_scores = self.sign * np.asarray(self.metric.score(stats), dtype=np.float64)
        model = np.asarray([s for s, _ in found])
        best = _best_of(metric_scores, model, lambda i: self.tuning_set.text(yields[i]))
        return np.asarray(found[best][1].edges())

    # ------------------------------------------------------------------ the corpus oracle
    def corpus(self) -> list[np.ndarray]:
        """The greedy corpus oracle (see the module docstring) over this run's sentences: the candidates
        (:class:`_CorpusCandidates`) switched and drawn by :func:`switch_and_draw`."""
        candidates = _CorpusCandidates(self)
        current, passes = switch_and_draw(self.options, self.order, candidates.stats, candidates.draw)
        self.details.update(passes=passes)
        return candidates.chosen(current)

    def _distinct_rows(self, sentence: int) -> list[np.ndarray]:
        """A k-best list's hypotheses (0-based) grouped by equal statistics, the sentence oracle's group
        first."""
        stats = self.decoder.kbest_stats(sentence)[1:]
        _, group = np.unique(stats, axis=0, return_inverse=True)
        group = group.ravel()
        order = np.argsort(group, kind="stable")
        members = np.split(order, np.flatnonzero(np.diff(group[order])) + 1)
        start = group[self.kbest_oracle(sentence) - 1]
        return [members[start]] + [m for g, m in enumerate(members) if g != start]

    def _representative(self, sentence: int, members: np.ndarray) -> int:
        """Among hypotheses with equal statistics, the one the tie rule prefers (higher model score, then
        greater string)."""
        if members.size == 1:
            return int(members[0])
        model = self.decoder.edge_scores(sentence, self.w)[1:][members]
        pick = _best_of(np.zeros(members.size), model, lambda i: self._text(sentence, np.asarray([members[i] + 1, 0])))
        return int(members[pick])

    def _candidate_stats(self, sentence: int, edges: list[np.ndarray]) -> np.ndarray:
        if self.tuning_set.graphs[sentence].is_kbest:
            return self.decoder.kbest_stats(sentence)[[int(e[0]) for e in edges]]
        return self.decoder.stats_of(sentence, [self.decoder.words(sentence, e) for e in edges])

    # ------------------------------------------------------------------ output
    def describe(self, sentence: int, edges: np.ndarray) -> Oracle:
        """The oracle with its features, model score and exact statistics (a list's own for k-best input)."""
        hg = self.tuning_set.graphs[sentence]
        words = self.decoder.words(sentence, edges)
        if hg.is_kbest:
            stats = self.decoder.kbest_stats(sentence)[int(edges[0])]
        else:
            stats = self.decoder.stats_of(sentence, [words])[0]
        features = np.asarray(hg.feature_matrix(self.w.size)[edges].sum(axis=0)).ravel()
        names = self.tuning_set.feature_space.names
        return Oracle(
            sentence,
            self.tuning_set.vocabulary.words(words),
            {names[i]: float(features[i]) for i in np.flatnonzero(features).tolist()},
            float(features @ self.w),
            stats,
            float(self.metric.score(stats)),
        )


class _CorpusCandidates:
    """The corpus oracle's candidates of one run's sentences (the whole tuning set, or one shard's): per
    sentence a k-best list's every distinct statistics row, or a graph's start oracle plus one new candidate
    per pass, with their statistics ``stats[s]`` (one row per candidate)."""

    def __init__(self, search: _Search) -> None:
        if not isinstance(search.metric, BleuMetric):
            raise UsageError("the corpus oracle raises corpus BLEU: use a BLEU metric")
        self.search = search
        self.edges: list[list[np.ndarray]] = []
        self.groups: dict[int, list[np.ndarray]] = {}  # a k-best list's hypotheses by distinct statistics
        for s, hg in enumerate(search.tuning_set.graphs):
            if hg.is_kbest:
                self.groups[s] = search._distinct_rows(s)
                self.edges.append([np.asarray([members[0] + 1, 0]) for members in self.groups[s]])
            else:
                self.edges.append([search.sentence_oracle(s, search.options.start_method)])
        self.stats = [search._candidate_stats(s, c) for s, c in enumerate(self.edges)]

    def draw(self, chosen: np.ndarray, total: np.ndarray) -> list[np.ndarray | None]:
        """One new candidate per graph sentence, given the statistics of each sentence's chosen candidate
        (``chosen``, one row per sentence) and their corpus total ``total``: the partial search with BLEU taken
        against the corpus without this sentence. Per sentence the new candidate's statistics row, or None (a
        k-best list, or nothing new)."""
        search = self.search
        drawn: list[np.ndarray | None] = []
        for s, hg in enumerate(search.tuning_set.graphs):
            if hg.is_kbest:
                drawn.append(None)
                continue
            gain = Gain("background", search.order)
            background = total - chosen[s]
            scores = search.decoder.edge_scores(s, search.w)
            edges = search.decoder.best_edges(s, scores, _against(gain, background), 0.0, 1.0)
            if any(np.array_equal(edges, c) for c in self.edges[s]):
                drawn.append(None)
                continue
            self.edges[s].append(edges)
            drawn.append(search._candidate_stats(s, [edges])[0])
        return drawn

    def chosen(self, current: np.ndarray) -> list[np.ndarray]:
        """The pre-order edges of each sentence's chosen candidate (equal statistics: the tie rule's pick)."""
        chosen = [self.edges[s][int(current[s])] for s in range(len(self.edges))]
        for s, members in self.groups.items():
            chosen[s] = np.asarray([self.search._representative(s, members[int(current[s])]) + 1, 0])
        return chosen


def switch_and_draw(
    options: OracleSearch,
    order: int,
    stats: list[np.ndarray],
    draw: Callable[[np.ndarray, np.ndarray], list[np.ndarray | None]],
) -> tuple[np.ndarray, int]:
    """The corpus oracle's passes (survey Fig. 2; module docstring): switch sentences greedily among their
    candidates' statistics ``stats`` (every sentence starts from its first candidate), then ``draw`` one new
    candidate per sentence (given the chosen rows and their total), until nothing new is drawn or
    ``options.passes``. ``stats`` grows with the drawn rows. Returns each sentence's chosen candidate and the
    passes run. Only statistics rows are switched, so on shards only rows and totals travel."""
    current = np.zeros(len(stats), dtype=np.int64)
    passes = 0
    for passes in range(1, options.passes + 1):  # noqa: B007 - returned
        current = _switch(options, order, stats, current)
        chosen = np.asarray([stats[s][current[s]] for s in range(len(stats))])
        drawn = draw(chosen, np.sum(chosen, axis=0))
        for s, row in enumerate(drawn):
            if row is not None:
                stats[s] = np.vstack([stats[s], row])
        if all(row is None for row in drawn):
            break
    return current, passes


def _switch(options: OracleSearch, order: int, stats: list[np.ndarray], current: np.ndarray) -> np.ndarray:
    rows = np.vstack(stats)
    owner = np.repeat(np.arange(len(stats)), [s.shape[0] for s in stats])
    starts = offsets_from_counts([s.shape[0] for s in stats])
    visit = np.arange(len(stats))
    if options.variant == "sentence-order":
        visit = np.random.default_rng(options.seed).permutation(len(stats))
    best_switch = options.variant == "best-switch"
    chosen = greedy_corpus_oracle(rows, owner, starts, current + starts[:-1], visit, order, best_switch)
    return chosen - starts[:-1]


def corpus_score(tuning_set: TuningSet | Shards, total: np.ndarray) -> float:
    """The corpus metric of summed statistics: plain corpus BLEU for every smoothed sentence BLEU (BLEU+1
    smooths sentences, not corpora), else the metric's own corpus score."""
    metric = tuning_set.metric
    if isinstance(metric, BleuMetric) and metric.ref_length != "ibm":
        return float(bleu_score(total, metric.max_order))
    return float(metric.score(total))


def _against(gain: Gain, background: np.ndarray) -> Gain:
    """``gain`` scored against a fixed pseudo-corpus ``background`` (the corpus without this sentence)."""
    other = gain.copy()
    other.background = np.asarray(background, dtype=np.float64).copy()
    return other


def _best_of(scores: np.ndarray, model: np.ndarray, text: Callable[[int], str]) -> int:
    """The index with the highest score, then the highest model score, then the greatest string. Scores
    within 1e-12 (model scores within 1e-9) of the best are ties: two formulas of one BLEU differ in the
    last digit."""
    best = scores.max()
    top = np.flatnonzero(scores >= best - 1e-12 * max(1.0, abs(best)))
    if top.size > 1:
        best = model[top].max()
        top = top[model[top] >= best - 1e-9 * max(1.0, abs(best))]
    if top.size > 1:
        return int(max(top.tolist(), key=text))
    return int(top[0])


@numba.njit(cache=True, nogil=True)
def _lexicographic_viterbi(node_offsets, tail_offsets, tails, primary, secondary):  # pragma: no cover - compiled
    """Back-pointers of the best derivation by ``(Σ primary, Σ secondary)`` compared lexicographically (the
    first in-edge on full ties); ``primary`` sums equal to 1e-9 (relative) count as ties."""
    n = node_offsets.size - 1
    best = np.full(n, -np.inf)
    second = np.full(n, -np.inf)
    best_edge = np.full(n, -1, dtype=np.int64)
    for v in range(n):
        for e in range(node_offsets[v], node_offsets[v + 1]):
            x, y = primary[e], secondary[e]
            for k in range(tail_offsets[e], tail_offsets[e + 1]):
                x += best[tails[k]]
                y += second[tails[k]]
            margin = 1e-9 * max(1.0, abs(x), abs(best[v]))
            if best_edge[v] < 0 or x > best[v] + margin or (abs(x - best[v]) <= margin and y > second[v]):
                best[v], second[v], best_edge[v] = x, y, e
    return best_edge


@numba.njit(cache=True, nogil=True)
def greedy_corpus_oracle(rows, owner, starts, current, visit, max_order, best_switch):  # pragma: no cover - compiled
    """Greedy corpus-BLEU oracle over candidate statistics ``rows`` (sentence ``s`` owns rows
    ``starts[s]:starts[s+1]``), from the chosen rows ``current``. ``best_switch``: each round switches the one
    sentence whose switch raises corpus BLEU most (survey Fig. 2); otherwise sentences are visited in
    ``visit`` order, each taking its best candidate given the others, until a pass changes nothing."""
    chosen = current.copy()
    total = np.zeros(rows.shape[1])
    for s in range(chosen.size):
        total += rows[chosen[s]]
    none = np.zeros(rows.shape[1])  # corpus BLEU is the background BLEU of an empty background, unscaled
    now = background_bleu(total, none, max_order, SCALE_NONE, 0.0)
    trial = np.empty(rows.shape[1])
    while True:
        best_gain, best_row = 0.0, -1
        changed = False
        for k in range(visit.size):
            s = visit[k]
            for r in range(starts[s], starts[s + 1]):
                if r == chosen[s]:
                    continue
                for j in range(rows.shape[1]):
                    trial[j] = total[j] - rows[chosen[s], j] + rows[r, j]
                gain = background_bleu(trial, none, max_order, SCALE_NONE, 0.0) - now
                if gain > best_gain + 1e-12:
                    best_gain, best_row = gain, r
            if not best_switch and best_row >= 0:
                total += rows[best_row] - rows[chosen[s]]
                chosen[s] = best_row
                now = background_bleu(total, none, max_order, SCALE_NONE, 0.0)
                best_gain, best_row, changed = 0.0, -1, True
        if best_switch:
            if best_row < 0:
                break
            s = owner[best_row]
            total += rows[best_row] - rows[chosen[s]]
            chosen[s] = best_row
            now = background_bleu(total, none, max_order, SCALE_NONE, 0.0)
        elif not changed:
            break
    return chosen
