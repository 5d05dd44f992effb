"""Reranking with given weights: each sentence's model-best hypothesis, and every metric a held-out set supports
before and after tuning.

:func:`rerank` is ``hypertune rerank`` and the held-out report; its 1-best is ``hypertune decode``'s
(:func:`~hypertune.algorithms.viterbi`: the highest model score, the earlier hypothesis on ties). The held-out
report (:func:`heldout_metrics`, :func:`evaluate`) shows every metric the data supports -- each given score, and
BLEU, chrF and TER against references -- because tuning on one metric and selecting with it inflates that metric
(Kovacs, Deutsch & Freitag 2024): a user must see the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hypertune.algorithms import viterbi
from hypertune.hypergraph import Hypergraph
from hypertune.metrics import BleuMetric, ChrfMetric, GivenScore, Metric, TerMetric
from hypertune.metrics.base import strip_sentence_markers
from hypertune.tuners.sentence_ids import assemble_sentences, select_references
from hypertune.weights import Weights


@dataclass(frozen=True)
class Choice:
    """A sentence's model-best hypothesis: its sentence id, its index among the sentence's hypotheses (a k-best
    list's, in input order; ``None`` for a derivation of a lattice or forest), model score, words (sentence
    markers kept, as the input has them) and given scores."""

    sentence_id: int
    index: int | None
    model_score: float
    words: list[str]
    scores: dict[str, float]

    @property
    def text(self) -> str:
        """The translation as metrics see it: words without ``<s>`` and ``</s>``."""
        return " ".join(strip_sentence_markers(self.words))


def rerank(graphs: Sequence[Hypergraph], weights: Weights) -> list[Choice]:
    """Each sentence's model-best hypothesis under ``weights``, in sentence-id order; graphs of one sentence id are
    joined first (k-best lists merged without duplicates, as the tuners see them)."""
    sentences, ids = assemble_sentences(graphs)
    choices = []
    for hg, sid in zip(sentences, ids, strict=True):
        best = viterbi(hg, weights)
        edge = best.derivation.edge
        scores: dict[str, float] = {}
        if hg.is_kbest and hg.edge_scores is not None:
            scores = {n: float(v) for n, v in zip(hg.edge_scores.names, hg.edge_scores.values[edge], strict=True)}
        choices.append(Choice(sid, edge - 1 if hg.is_kbest else None, best.score, best.words, scores))
    return choices


def heldout_metrics(graphs: Sequence[Hypergraph], references: bool, **bleu_options: Any) -> list[Metric]:
    """The metrics a held-out set supports: each given score every hypothesis carries (``scores.NAME``), then,
    with ``references``, BLEU (``bleu_options``), chrF and TER."""
    names: dict[str, None] = {}
    if all(hg.is_kbest and hg.edge_scores is not None for hg in graphs):
        carried = [hg.edge_scores.names for hg in graphs if hg.edge_scores is not None]
        names = dict.fromkeys(n for n in carried[0] if all(n in other for other in carried[1:]))
    metrics: list[Metric] = [GivenScore(name) for name in names]
    if references:
        metrics += [BleuMetric(**bleu_options), ChrfMetric(), TerMetric()]
    return metrics


def evaluate(
    choices: Sequence[Choice], references: Sequence[list[str]] | None, metrics: Sequence[Metric]
) -> dict[str, float]:
    """Each metric of the chosen hypotheses: a given score's mean, or the corpus metric of their texts against
    ``references``, one list per choice (:func:`chosen_references`)."""
    values: dict[str, float] = {}
    for metric in metrics:
        if isinstance(metric, GivenScore):
            values[metric.name] = sum(c.scores[metric.score_name] for c in choices) / max(len(choices), 1)
        elif references is not None:
            values[metric.name] = metric.corpus_score([c.text for c in choices], references)
    return values


def chosen_references(choices: Sequence[Choice], references: Sequence[list[str]]) -> list[list[str]]:
    """The references of each choice's sentence: line ``i`` of the reference files is sentence id ``i``; an id
    past the end is an error, reference lines no sentence uses a warning (as for tuning)."""
    return select_references([c.sentence_id for c in choices], references)


def before_and_after(
    graphs: Sequence[Hypergraph],
    references: Sequence[list[str]] | None,
    before: Weights,
    after: Weights,
    metrics: Sequence[Metric],
) -> dict[str, Any]:
    """The held-out report: every metric under the start weights and under the tuned ones (JSON's ``heldout``):
    ``{"sentences": N, "metrics": {name: {"before": x, "after": y, "higher_is_better": bool}}}``."""
    first, second = rerank(graphs, before), rerank(graphs, after)
    refs = None if references is None else chosen_references(first, references)  # the same sentences, in order
    was, now = evaluate(first, refs, metrics), evaluate(second, refs, metrics)
    table: Mapping[str, dict[str, Any]] = {
        m.name: {"before": was[m.name], "after": now[m.name], "higher_is_better": m.higher_is_better}
        for m in metrics
        if m.name in was
    }
    return {"sentences": len(first), "metrics": dict(table)}
