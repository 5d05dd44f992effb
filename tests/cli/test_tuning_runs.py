"""``--runs R`` on the tuning commands (issue 31, item 3): R runs with the seeds S..S+R-1 in one process, each
the run ``--seed S+i`` makes alone (compared with separate invocations, bit for bit), the spread of the dev and
held-out metrics against the standard library's mean and sample standard deviation of those separate runs'
scores, the best dev run's weights (in the metric's direction, the earliest of equal ones) written to --out
and every run's to OUT.run-SEED."""

from __future__ import annotations

import json
import signal
import statistics
import threading
from pathlib import Path

import numpy as np
import pytest
from support.paths import FIXTURES

from hypertune.cli import main
from hypertune.formats import read_weights


def write_corpus(folder: Path, seed: int, sentences: int = 30, k: int = 15) -> dict[str, str]:
    """A Moses n-best list of ``sentences`` x ``k`` noisy copies of the first reference (random words swapped
    in, the last word sometimes dropped) with four random features, two references and start weights: small,
    and hard enough that the runs of different seeds end apart."""
    rng = np.random.default_rng(seed)
    vocabulary = [f"w{i}" for i in range(40)]
    refs = [[" ".join(rng.choice(vocabulary, size=rng.integers(6, 12))) for _ in range(sentences)] for _ in range(2)]
    lines = []
    for s in range(sentences):
        for _ in range(k):
            words = [w if rng.random() < 0.6 else str(rng.choice(vocabulary)) for w in refs[0][s].split()]
            words = words[:-1] if rng.random() < 0.3 else words
            f = rng.normal(size=4)
            lines.append(f"{s} ||| {' '.join(words)} ||| LM0= {f[0]:.4f} TM0= {f[1]:.4f} {f[2]:.4f} "
                         f"WordPenalty0= {f[3]:.4f} ||| 0")  # fmt: skip
    (folder / "nbest").write_text("\n".join(lines) + "\n")
    for r, ref in enumerate(refs):
        (folder / f"ref.{r}").write_text("\n".join(ref) + "\n")
    (folder / "init").write_text("LM0 0.1\nTM0_0 0.2\nTM0_1 0.2\nWordPenalty0 -0.3\n")
    return {"nbest": str(folder / "nbest"), "refs": str(folder / "ref."), "init": str(folder / "init")}


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return write_corpus(tmp_path_factory.mktemp("dev"), 7)


@pytest.fixture(scope="module")
def heldout(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return write_corpus(tmp_path_factory.mktemp("heldout"), 8, sentences=12, k=10)


def base(command: str, corpus: dict[str, str]) -> list[str]:
    return [command, corpus["nbest"], "--refs", corpus["refs"], "--init", corpus["init"]]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def as_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def alone(capsys: pytest.CaptureFixture[str], argv: list[str], seeds: list[int]) -> list[dict]:
    """Each seed's run as a command of its own (no --runs): what every run of a set must reproduce."""
    return [as_json(capsys, *argv, "--seed", str(seed)) for seed in seeds]


def hand_spread(values: list[float]) -> dict[str, float]:
    return {"mean": statistics.mean(values), "sd": statistics.stdev(values), "min": min(values), "max": max(values)}


def check_spread(found: dict[str, float], values: list[float]) -> None:
    expected = hand_spread(values)
    assert found["runs"] == len(values)
    assert {k: found[k] for k in expected} == pytest.approx(expected, rel=1e-12, abs=1e-15)


def best_of(scores: list[float], higher_is_better: bool) -> int:
    """The best run by hand: the best score, the first of equal ones."""
    best = max(scores) if higher_is_better else min(scores)
    return scores.index(best)


#: A run's JSON without --runs: what scripts and docs read, unchanged by --runs.
ONE_RUN_KEYS = {"bleu_before", "bleu_after", "metric", "weights", "history", "seconds", "seed", "score_before",
                "score_after", "higher_is_better", "kept_start", "line_searches", "restart_scores", "optimizer",
                "sentences", "output", "sentence_ids"}  # fmt: skip
RUNS_KEYS = {"runs", "dev_score", "best_seed", "weights", "metric", "higher_is_better", "output", "sentences",
             "sentence_ids"}  # fmt: skip


def test_mert_runs_are_the_separate_runs_of_their_seeds_and_the_best_is_written(dev, tmp_path, capsys):
    argv = [*base("mert", dev), "--random-directions", "2"]
    out = tmp_path / "tuned.weights"
    payload = as_json(capsys, *argv, "--runs", "3", "--seed", "5", "--out", str(out))
    separate = alone(capsys, argv, [5, 6, 7])
    scores = [one["score_after"] for one in separate]
    assert len(set(scores)) > 1, "the seeds should end apart for this test to mean something"
    assert set(payload) == RUNS_KEYS
    for found, one, seed in zip(payload["runs"], separate, [5, 6, 7], strict=True):
        assert found["seed"] == seed
        assert found["weights"] == one["weights"]  # bit for bit
        assert (found["score_before"], found["score_after"]) == (one["score_before"], one["score_after"])
        assert found["weights_path"] == f"{out}.run-{seed}"
        assert dict(read_weights([found["weights_path"]])) == one["weights"]
    check_spread(payload["dev_score"], scores)
    best = best_of(scores, True)
    assert payload["best_seed"] == 5 + best and payload["weights"] == separate[best]["weights"]
    assert dict(read_weights([str(out)])) == separate[best]["weights"]
    assert (payload["metric"], payload["higher_is_better"], payload["sentences"]) == ("BLEU", True, 30)


def test_one_run_is_reported_as_before(dev, capsys):
    assert set(as_json(capsys, *base("mert", dev))) == ONE_RUN_KEYS
    assert set(as_json(capsys, *base("mert", dev), "--runs", "1")) == ONE_RUN_KEYS
    code, out, _ = run(capsys, *base("mert", dev), "--runs", "1")
    assert code == 0 and out.startswith("BLEU before ") and " runs" not in out


def test_mira_runs_are_the_separate_runs_of_their_seeds(dev, capsys):
    argv = base("mira", dev)
    payload = as_json(capsys, *argv, "--runs", "2", "--seed", "3")
    separate = alone(capsys, argv, [3, 4])
    assert [r["weights"] for r in payload["runs"]] == [one["weights"] for one in separate]
    assert separate[0]["weights"] != separate[1]["weights"]
    assert [r["weights_path"] for r in payload["runs"]] == [None, None]  # no --out: in the JSON only


def test_a_lower_is_better_metric_chooses_the_lowest_and_the_summary_says_it(dev, capsys):
    argv = [*base("pro", dev), "--metric", "ter"]
    separate = alone(capsys, argv, [0, 1, 2])
    scores = [one["score_after"] for one in separate]
    best = best_of(scores, False)
    assert best != best_of(scores, True)
    payload = as_json(capsys, *argv, "--runs", "3")
    assert payload["best_seed"] == best and payload["higher_is_better"] is False
    assert payload["weights"] == separate[best]["weights"]
    code, out, _ = run(capsys, *argv, "--runs", "3")
    spread = hand_spread(scores)
    shown = ", ".join(f"{key} {100 * spread[key]:.2f}" for key in ("mean", "sd", "min", "max"))
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"dev TER over 3 runs: {shown} (30 sentences, seeds 0-2; lower is better)"
    assert lines[1].startswith(f"best dev run: seed {best}, TER before ")
    assert lines[-5] == f"weights of the best dev run (seed {best}):"  # printed without --out, as one run's


def test_heldout_spread(dev, heldout, tmp_path, capsys):
    argv = [*base("mert", dev), "--random-directions", "2", "--heldout", heldout["nbest"], "--heldout-refs",
            heldout["refs"]]  # fmt: skip
    separate = alone(capsys, argv, [0, 1, 2])
    payload = as_json(capsys, *argv, "--runs", "3")
    assert [r["heldout"] for r in payload["runs"]] == [one["heldout"] for one in separate]
    names = list(separate[0]["heldout"]["metrics"])
    assert {"bleu", "chrf", "ter"} <= set(names) and list(payload["heldout_spread"]) == names
    for name in names:
        check_spread(payload["heldout_spread"][name], [one["heldout"]["metrics"][name]["after"] for one in separate])
    code, out, _ = run(capsys, *argv, "--runs", "3", "--out", str(tmp_path / "w"))
    bleu = hand_spread([one["heldout"]["metrics"]["bleu"]["after"] for one in separate])
    before = separate[0]["heldout"]["metrics"]["bleu"]["before"]
    shown = ", ".join(f"{key} {100 * bleu[key]:.2f}" for key in ("mean", "sd", "min", "max"))
    assert f"\nheld-out BLEU over 3 runs: {shown} (12 sentences, before {100 * before:.2f})\n" in out
    assert "\nheld-out TER over 3 runs: " in out and out.count("; lower is better)") == 1
    assert out.rstrip().endswith(f"written to {tmp_path / 'w'}; every run's to {tmp_path / 'w'}.run-0 ... "
                                 f"{tmp_path / 'w'}.run-2")  # fmt: skip


def test_minrisk_refuses_runs_it_would_repeat(dev, capsys):
    code, _, err = run(capsys, *base("minrisk", dev), "--runs", "2")
    assert code == 2
    assert err.strip().splitlines() == [
        "hypertune minrisk: error: --runs 2: minimum risk training draws nothing at random (its seed is only "
        "recorded); every run would be the same"
    ]


def test_runs_that_all_end_alike_are_a_warning_and_each_warning_is_said_once(tmp_path, capsys):
    """MERT without restarts or random directions draws nothing: the seeds change nothing. A reference line no
    sentence uses is the same warning in every run: said once."""
    for r in (0, 1):
        (tmp_path / f"ref.{r}").write_text((FIXTURES / "mert" / f"ref.{r}").read_text() + "an unused line\n")
    nbest, init = str(FIXTURES / "mert" / "nbest.txt"), str(FIXTURES / "mert" / "init.weights")
    code, _, err = run(capsys, "mert", nbest, "--refs", str(tmp_path / "ref."), "--init", init, "--runs", "3", "--json")
    warnings = err.strip().splitlines()
    assert code == 0 and len(warnings) == 2
    assert "match no sentence" in warnings[0]
    assert warnings[1].startswith("hypertune mert: warning: the 3 runs ended with the same weights")


def test_envelope_nbest_is_the_best_runs(tmp_path, capsys):
    """Forests: the envelope derivations written are those of the best dev run (all tie here: the first)."""
    argv = ["mert", str(FIXTURES / "toy-forest.json"), "--refs", str(FIXTURES / "toy-forest.ref"), "--init",
            str(FIXTURES / "toy-forest.weights"), "--random-directions", "2", "--json"]  # fmt: skip
    paths = [tmp_path / "runs.nbest", tmp_path / "seed-0.nbest", tmp_path / "seed-1.nbest"]
    code, out, _ = run(capsys, *argv, "--runs", "2", "--envelope-nbest", str(paths[0]))
    assert code == 0 and json.loads(out)["best_seed"] == 0
    for seed, path in enumerate(paths[1:]):
        assert run(capsys, *argv, "--seed", str(seed), "--envelope-nbest", str(path))[0] == 0
    assert paths[1].read_text() != paths[2].read_text()  # the seeds' envelopes differ: the choice shows
    assert paths[0].read_text() == paths[1].read_text()


def test_plot_draws_the_best_run(dev, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    argv = [*base("mert", dev), "--random-directions", "2"]
    picture = tmp_path / "runs.svg"
    payload = as_json(capsys, *argv, "--runs", "2", "--plot", str(picture))
    best = payload["runs"][payload["best_seed"]]
    shown = f"{100 * best['score_before']:.2f} → {100 * best['score_after']:.2f}"
    assert f"mert: BLEU {shown} (seed {best['seed']}, the best of 2 runs)" in picture.read_text()


@pytest.fixture
def _signals_handled():
    """Python's own SIGINT disposition for the test (a background job's shell may have it ignored)."""
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        pytest.skip("signals are for the main thread")
    saved = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, saved if saved is not None else signal.SIG_DFL)


@pytest.mark.usefixtures("_signals_handled")
def test_an_interrupted_run_keeps_the_finished_runs(dev, tmp_path, capsys, monkeypatch):
    """SIGINT during the second run: the first run's weights are kept in their file, the second run ends as
    one run ends (exit 130, one line), and nothing is written to --out."""
    from hypertune.tuners.mert import Mert

    fit, calls = Mert.fit, []

    def signalled(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            signal.raise_signal(signal.SIGINT)  # held until the tuner's next safe point
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(Mert, "fit", signalled)
    out = tmp_path / "w"
    code, _, err = run(capsys, *base("mert", dev), "--random-directions", "2", "--runs", "3", "--out", str(out))
    assert code == 130
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hypertune mert: interrupted (SIGINT)")
    assert lines[0].endswith(f"; finished before it: seed 0 ({out}.run-0)")
    assert (out.parent / "w.run-0").is_file() and not (out.parent / "w.run-1").exists() and not out.exists()


@pytest.mark.slow
def test_runs_share_one_cluster(dev, capsys):
    """--cluster local:1: one cluster for every run; MERT's result does not depend on the sharding."""
    pytest.importorskip("distributed")
    argv = [*base("mert", dev), "--random-directions", "2"]
    payload = as_json(capsys, *argv, "--runs", "2", "--cluster", "local:1")
    assert [r["weights"] for r in payload["runs"]] == [one["weights"] for one in alone(capsys, argv, [0, 1])]
