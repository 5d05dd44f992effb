"""Forest MIRA against Moses ``kbmira --type hypergraph`` itself: with kbmira's sentence order (``--no-shuffle``)
the two tuners take the same steps, so every epoch's BLEU, update count and loss and the written weights are
kbmira's. The expected figures are kbmira's output (Moses built -O3 by ``../shared/tools/build_moses_mert.sh``,
2026-11-27), copied here, on the two Moses hypergraphs of ``../shared/data/moses/hypergraphs`` with the references
below (``tests/conftest.py``'s ``moses_pair``, written out)::

    kbmira --type hypergraph --hgdir hg --reference ref --dense-init sparse/dense.weights -J 6 --no-shuffle -r 1

kbmira keeps its statistics in 32-bit floats and prints 6 digits: the comparisons allow that much."""

from __future__ import annotations

import json
import shutil

import pytest

from hypertune.cli import main

REFERENCES = [
    "the EU matters , also in matters of since mid September to of the .",
    "behalf of EU matters but also the management the hands business aid role of national since @-@ September the "
    "will concentrated in four centre the ely .",
]

# kbmira's stderr: "2/2 updates, avg loss = 3.41752, BLEU = 0.174816" ... per epoch (BLEU on the pruned graphs)
KBMIRA_EPOCHS = [
    (2, 3.41752, 0.174816),
    (2, 1.73964, 0.183937),
    (1, 0.92932, 0.183937),
    (1, 0.466286, 0.183937),
    (1, 0.510871, 0.19554),
    (1, 0.29621, 0.19554),
]
# kbmira's -o file: F0 ... F29, the averaged weights of its best epoch (5), in the order of --dense-init's lines
KBMIRA_DENSE = [
    0.0911133, 0.0116539, 0.0300285, 0.0174436, 0.0440913, 0.00123065, 0.0328922, 0.0717817, -0.00282479,
    -0.0155149, 0.089088, 0.0398821, -0.00640209, -0.00827328, 0.179882, -0.186241, 0.0224667, 0.0240933,
    0.0300675, 0.105122, 0.141869, 0.0441178, 0.0275117, 0.0422113, 0.0480671, 0.040153, -0.0128567,
    -0.0245151, -0.0186958, 0.0238221,
]  # fmt: skip
KBMIRA_SPARSE = {"WT_@-@~the": 0.0109875, "PL_1,2": -0.0246164, "TWI_,": -0.0126864, "PL_2,5": -0.0153652}


@pytest.mark.slow
def test_no_shuffle_forest_mira_takes_kbmiras_steps(shared, tmp_path, capsys):
    folder = shared / "moses" / "hypergraphs"
    hgdir = tmp_path / "hg"
    hgdir.mkdir()
    for i, name in enumerate(("dense", "sparse")):
        shutil.copy(folder / name / "hg.gz", hgdir / f"{i}.gz")
    (tmp_path / "ref").write_text("\n".join(REFERENCES) + "\n")
    dense = folder / "sparse" / "dense.weights"
    out = tmp_path / "tuned"
    argv = ["mira", "--type", "hypergraph", "--hgdir", str(hgdir), "--reference", str(tmp_path / "ref"),
            "--dense-init", str(dense), "-J", "6", "--no-shuffle", "-r", "1", "--normalize", "none",
            "--out-format", "kbmira-dense", "-o", str(out), "--json"]  # fmt: skip
    assert main(argv) == 0
    payload = json.loads(capsys.readouterr().out)
    got = [(h["updates"], h["average_loss"], h["score"]) for h in payload["history"]]
    for (updates, loss, bleu), (want_updates, want_loss, want_bleu) in zip(got, KBMIRA_EPOCHS, strict=True):
        assert updates == want_updates
        assert loss == pytest.approx(want_loss, rel=1e-4)
        assert bleu == pytest.approx(want_bleu, rel=1e-5)
    assert payload["best_epoch"] == 5  # kbmira keeps the first epoch of the best BLEU
    # kbmira divides the summed weights by its T = 7 steps, hypertune by T + 1 (docs/mira.md): a rescaling
    steps = sum(updates for updates, _, _ in KBMIRA_EPOCHS[:5])
    scale = (steps + 1) / steps
    lines = out.read_text().splitlines()[: len(KBMIRA_DENSE)]  # the dense weights first, in --dense-init's order
    assert [line.split()[0] for line in lines] == [line.split()[0] for line in dense.read_text().splitlines()]
    assert [scale * float(line.split()[1]) for line in lines] == pytest.approx(KBMIRA_DENSE, rel=2e-4)
    weights = payload["weights"]
    for name, value in KBMIRA_SPARSE.items():
        assert scale * weights[name] == pytest.approx(value, rel=2e-4)


def test_no_shuffle_visits_the_sentences_in_input_order(monkeypatch):
    """``shuffle=False`` (``--no-shuffle``): every epoch in input order; shuffled, each epoch a seeded permutation."""
    import numpy as np

    from hypertune.generate import random_kbest
    from hypertune.metrics import BleuMetric
    from hypertune.symbols import FeatureSpace, Vocabulary
    from hypertune.tuners import mira as mira_module
    from hypertune.tuners.corpus import TuningSet
    from hypertune.tuners.mira import batch_mira
    from hypertune.weights import Weights

    rng = np.random.default_rng(5)
    space, vocabulary = FeatureSpace(), Vocabulary()
    graphs = [random_kbest(6, num_features=3, vocabulary_size=6, seed=rng, feature_space=space, vocabulary=vocabulary)
              for _ in range(7)]  # fmt: skip
    refs = [[" ".join(f"w{i}" for i in rng.integers(0, 6, size=5))] for _ in range(7)]
    tuning_set = TuningSet(graphs, refs, BleuMetric(tokenize="none"))
    orders: list[list[int]] = []
    epoch = mira_module._KbestRunner.epoch

    def recorded(self, order_idx, *args):
        orders.append(order_idx.tolist())
        return epoch(self, order_idx, *args)

    monkeypatch.setattr(mira_module._KbestRunner, "epoch", recorded)
    batch_mira(tuning_set, Weights({"F0": 1.0}), epochs=3, seed=2, shuffle=False)
    assert orders == [list(range(7))] * 3
    orders.clear()
    batch_mira(tuning_set, Weights({"F0": 1.0}), epochs=3, seed=2)
    permutations = np.random.default_rng(2)
    assert orders == [permutations.permutation(7).tolist() for _ in range(3)]
