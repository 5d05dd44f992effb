"""The tuner interface: options in the constructor, fit returns a TuningResult with one set of names, and
no run state stays on the tuner (one tuner fits several tuning sets, also at once, with the same results
as one at a time)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from support.paths import FIXTURES

from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.metrics import BleuMetric
from hypertune.tuners import TUNERS, Mert, MinRisk, Mira, TuningResult, TuningSet

NBEST = str(FIXTURES / "mert" / "nbest.txt")
REFS = str(FIXTURES / "mert" / "ref.")
INIT = str(FIXTURES / "mert" / "init.weights")


def tuning_set(sentences: list[int]) -> TuningSet:
    graphs = [g for g in read_graphs(NBEST) if g.sentence_id in sentences]
    return TuningSet.from_corpus(graphs, read_references(REFS), BleuMetric(tokenize="none"))


def fits(tuner, sets):
    return [tuner.fit(s, read_weights(INIT)) for s in sets]


def test_one_tuner_fits_several_tuning_sets_at_once_as_it_would_one_at_a_time():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unused reference lines
        sets = [tuning_set([0, 1, 2]), tuning_set([2, 3, 4]), tuning_set([0, 4])]
    for tuner in (Mert(restarts=3, seed=5, n_jobs=1), Mira(epochs=4, seed=5), MinRisk(objective="risk", seed=5)):
        alone = fits(tuner, sets)
        with ThreadPoolExecutor(3) as pool:
            together = list(pool.map(lambda s, t=tuner: t.fit(s, read_weights(INIT)), sets))
        for a, b in zip(alone, together, strict=True):
            assert (a.bleu_before, a.bleu_after, dict(a.weights)) == (b.bleu_before, b.bleu_after, dict(b.weights))
        assert not {k for k in vars(tuner) if k.startswith("_")}, "run state left on the tuner"


def test_every_tuner_returns_the_same_names():
    for name, tuner_class in TUNERS.items():
        result = tuner_class(seed=2).fit(tuning_set([0, 1, 2, 3, 4]), read_weights(INIT))
        assert isinstance(result, TuningResult), name
        payload = json.loads(json.dumps(result.to_json()))
        assert list(payload)[:10] == [
            "bleu_before", "bleu_after", "metric", "weights", "history", "seconds", "seed",
            "score_before", "score_after", "higher_is_better",
        ]  # fmt: skip
        assert payload["seed"] == 2 and payload["metric"] == "BLEU" and payload["higher_is_better"] is True
        assert (payload["score_before"], payload["score_after"]) == (payload["bleu_before"], payload["bleu_after"])
        assert all({"iteration", "score", "bleu", "seconds"} <= set(entry) for entry in payload["history"]), name
        assert all(entry["score"] == entry["bleu"] for entry in payload["history"]), name
        assert [entry["iteration"] for entry in payload["history"]] == list(range(1, len(payload["history"]) + 1))
        if name in ("mert", "mira"):  # they keep the best start point / epoch by BLEU (minrisk: by its objective)
            best = max(entry["bleu"] for entry in payload["history"])
            assert result.bleu_after >= best - 1e-12, name
        if name == "mert":  # the given start point is one of MERT's, so it never ends worse
            assert result.bleu_after >= result.bleu_before
