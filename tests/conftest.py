from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from support.paths import SHARED
from support.rescoring_decoder import make_corpus

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
settings.load_profile("default")


@pytest.fixture
def shared() -> Path:
    """The reference data beside the repository; tests using it skip when it is absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared/data is not present")
    return SHARED


@pytest.fixture
def moses_pair(shared: Path, tmp_path: Path) -> dict:
    """The two real Moses hypergraphs of ``shared/moses/hypergraphs`` as a folder of sentence files ``0.gz`` and
    ``1.gz``, with one reference each (a seeded sample of the graph with every third word dropped, so tuning
    has something to find), their start weights, and a ``redecoded(weights)`` that scores what decoding the
    whole graphs with ``weights`` gives: Viterbi derivations scored by sacrebleu (tokenize none)."""
    import shutil

    import sacrebleu

    from hypertune.algorithms import sample, viterbi
    from hypertune.formats import read_graphs
    from hypertune.weights import Weights

    folder = tmp_path / "hg"
    folder.mkdir()
    for i, name in enumerate(("dense", "sparse")):
        shutil.copy(shared / "moses" / "hypergraphs" / name / "hg.gz", folder / f"{i}.gz")
    graphs = read_graphs(str(folder))

    def text(words) -> str:
        return " ".join(w for w in words if w not in ("<s>", "</s>"))

    references = []
    for i, graph in enumerate(graphs):
        words = text(sample(graph, Weights(), 1, i)[0].words).split()
        references.append(" ".join(w for k, w in enumerate(words) if k % 3))
    (tmp_path / "ref").write_text("\n".join(references) + "\n")

    def redecoded(weights: Weights) -> float:
        texts = [text(viterbi(graph, weights).words) for graph in graphs]
        return sacrebleu.corpus_bleu(texts, [references], tokenize="none").score / 100

    init = shared / "moses" / "hypergraphs" / "sparse" / "dense.weights"
    return {"folder": folder, "ref": tmp_path / "ref", "init": init, "redecoded": redecoded}


@pytest.fixture
def corpus(tmp_path: Path) -> dict[str, Path]:
    """A pool of 25 sentences x 40 hypotheses over 5 features and the rescoring decoder (tests/support)."""
    return make_corpus(tmp_path)
