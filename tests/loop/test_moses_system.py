"""``hypertune tune`` driving a real Moses system (issue #35): skipped unless ``HYPERTUNE_MOSES=DIR`` names a system
built by ``../shared/tools/build_moses_system.sh`` (``DIR/mosesdecoder/bin/moses``, ``DIR/train/model/moses.ini``,
``DIR/corpus/val.de``, ``DIR/corpus/val.en``).

20 dev sentences are decoded at ``-s 10`` through ``tune`` for one iteration (decode, tune, decode), once with
n-best lists and once with extended search graphs (``-osgx``) as lattices. The loop's dev BLEU of the start
weights (the tuners' BLEU: no tokenizer, no smoothing) must be BLEU -- ``hypertune bleu`` and sacrebleu with
those options -- of Moses's own 1-best output, decoded by the test
with moses directly, not through hypertune; the first decoding's n-best lists and lattices are read back, and
their 1-best (first hypothesis, Viterbi path under the moses.ini's weights) are Moses's 1-best lines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hypertune.algorithms import viterbi
from hypertune.formats import read_graphs, read_weights

ROOT = os.environ.get("HYPERTUNE_MOSES")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not ROOT, reason="HYPERTUNE_MOSES=DIR (a built Moses system) is not set"),
]
SENTENCES = 20
#: Moses as the test runs it: small stack, two threads, niced (the machine is shared).
MOSES_FLAGS = "-s 10 -threads 2"


def hypertune(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hypertune", *argv], capture_output=True, text=True, check=False, timeout=1200
    )


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The first 20 dev sentences and references, and Moses's own 1-best of them (decoded directly)."""
    assert ROOT is not None
    root = Path(ROOT)
    moses, ini = root / "mosesdecoder" / "bin" / "moses", root / "train" / "model" / "moses.ini"
    for path in (moses, ini, root / "corpus" / "val.de", root / "corpus" / "val.en"):
        if not path.exists():
            pytest.fail(f"HYPERTUNE_MOSES={ROOT}: no {path}")
    folder = tmp_path_factory.mktemp("moses-system")
    files = {"moses": str(moses), "ini": str(ini), "folder": str(folder)}
    for side in ("de", "en"):
        lines = (root / "corpus" / f"val.{side}").read_text(encoding="utf-8").splitlines(keepends=True)
        files[side] = str(folder / f"dev20.{side}")
        Path(files[side]).write_text("".join(lines[:SENTENCES]), encoding="utf-8")
    files["1best"] = str(folder / "moses.1best")
    with open(files["de"], "rb") as source, open(files["1best"], "wb") as out:
        subprocess.run(["nice", "-n", "10", str(moses), "-f", str(ini), *MOSES_FLAGS.split()], stdin=source,
                       stdout=out, stderr=subprocess.DEVNULL, check=True, timeout=1200)  # fmt: skip
    return files


def decoder(system: dict[str, str], output: str) -> str:
    return f"nice -n 10 {system['moses']} -f {{weights}} {MOSES_FLAGS} {output} -i {system['de']}"


def tune(system: dict[str, str], name: str, output: str, *extra: str) -> dict:
    workdir = os.path.join(system["folder"], name)
    done = hypertune("tune", "--decoder", decoder(system, output), "--decoder-config", system["ini"], "--refs",
                     system["en"], "--tuner", "mert", "--restarts", "2", "--iterations", "1", "--kbest", "20",
                     "--seed", "1", "--workdir", workdir, "--json", *extra)  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [entry["iteration"] for entry in result["history"]] == [1, 2]
    return result


def moses_lines(system: dict[str, str]) -> list[str]:
    """Moses's 1-best lines (it ends each with a space)."""
    return [line.strip() for line in Path(system["1best"]).read_text(encoding="utf-8").splitlines()]


def moses_bleu(system: dict[str, str]) -> float:
    """BLEU of Moses's own 1-best by ``hypertune bleu`` (0-100) with the tuners' options (the corpus is tokenized
    already: no tokenizer, no smoothing), checked against sacrebleu with the same options."""
    import sacrebleu

    done = hypertune("bleu", "--hyp", system["1best"], "--refs", system["en"], "--tokenize", "none", "--smooth",
                     "none", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    score = json.loads(done.stdout)["score"]
    references = Path(system["en"]).read_text(encoding="utf-8").splitlines()
    expected = sacrebleu.corpus_bleu(moses_lines(system), [references], tokenize="none", smooth_method="none")
    assert score == pytest.approx(expected.score, abs=1e-9)
    return score


def test_nbest_loop_scores_moses_own_1best(system: dict[str, str]) -> None:
    result = tune(system, "nbest", "-n-best-list {kbest} {k} distinct")
    assert 100 * result["history"][0]["score"] == pytest.approx(moses_bleu(system), abs=1e-9)
    lists = read_graphs(os.path.join(system["folder"], "nbest", "iteration-001", "output", "kbest"))
    assert [hg.sentence_id for hg in lists] == list(range(SENTENCES))
    first = [" ".join(hg.vocabulary.word(int(t)) for t in hg.edge_target(1) if t >= 0) for hg in lists]
    assert first == moses_lines(system)


def test_lattice_loop_scores_moses_own_1best(system: dict[str, str]) -> None:
    result = tune(system, "lattice", "-osgx {lattices}", "--accumulate", "lattice")
    assert 100 * result["history"][0]["score"] == pytest.approx(moses_bleu(system), abs=1e-9)
    iteration = os.path.join(system["folder"], "lattice", "iteration-001")
    lattices = read_graphs(os.path.join(iteration, "output", "lattices"))
    assert [hg.sentence_id for hg in lattices] == list(range(SENTENCES))
    weights = read_weights(os.path.join(iteration, "weights"))
    best = [" ".join(viterbi(hg, weights).words) for hg in lattices]
    assert best == moses_lines(system)
    # the decoder's own file is kept beside the cache the loop reads, and every iteration of it is read too
    assert os.path.getsize(os.path.join(iteration, "output", "lattices.moses")) > 0
    assert result["history"][1]["candidates"] >= SENTENCES
