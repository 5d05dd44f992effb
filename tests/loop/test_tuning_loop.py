"""``hypertune tune``: the tuning loop end to end, with real decoders as subprocesses.

The decoder of most tests is a small rescoring decoder written here (it ranks a fixed pool of hypotheses
by the weights it is given and writes the k best as a Moses n-best list), so that a loop takes a second;
one test runs ``hypertune decode`` on generated forests as the decoder. Expected values come from outside
the code under test: BLEU from sacrebleu, weights from the files the runs write, the moses.ini text by
hand, the decoder's ranking by the decoder script's own arithmetic.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.paths import FIXTURES
from support.rescoring_decoder import FEATURES, decoder_command, first_lines_bleu, first_lines_ter

from hypertune.cli import main
from hypertune.formats.weights import add_weights, parse_weights, rewrite_weights
from hypertune.loop import DecoderConfig, iteration_seed, spread


def _group(name: str) -> str:
    return name.split("_")[0] if name.startswith("TM0") else name


def tune_args(corpus: dict[str, Path], workdir: Path, *more: str, decoder: str | None = None) -> list[str]:
    return ["tune", "--decoder", decoder or decoder_command(corpus), "--refs", str(corpus["ref"]), "--init",
            str(corpus["init"]), "--kbest", "5", "--iterations", "4", "--workdir", str(workdir), "--seed", "3",
            "--tuner", "mert", "--restarts", "2", *more]  # fmt: skip


def run_tune(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict, str]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


def test_loop_history_bleu_and_files(corpus, tmp_path, capsys):
    workdir = tmp_path / "wd"
    code, result, err = run_tune(tune_args(corpus, workdir, "--out", str(tmp_path / "final")), capsys)
    assert code == 0, err
    history = result["history"]
    assert [h["iteration"] for h in history] == list(range(1, len(history) + 1))
    for entry in history:  # each iteration's BLEU is sacrebleu's on the decoder's own 1-best
        nbest = workdir / f"iteration-{entry['iteration']:03d}" / "output" / "kbest"
        assert entry["score"] == pytest.approx(first_lines_bleu(nbest, corpus["ref"]), abs=1e-9)
        assert entry["bleu"] == entry["score"]  # the deprecated alias, for one release
        assert entry.get("tuner_bleu_after") == entry.get("tuner_score_after")
        assert entry["seconds"] >= 0 and entry["candidates_added"] >= 0
    assert history[0]["candidates_added"] == 25 * 5
    dev = [entry["score"] for entry in history]
    best = 1 + dev.index(max(dev))  # the earliest of the best
    assert result["best_iteration"] == result["returned_iteration"] == best and result["returns"] == "best"
    assert result["bleu_before"] == history[0]["bleu"] and result["bleu_after"] == history[best - 1]["bleu"]
    assert result["score_last"] == history[-1]["score"]
    assert result["bleu_after"] > result["bleu_before"] + 0.1
    final = parse_weights((tmp_path / "final").read_text(), "final")
    assert final == result["weights"]
    # the final weights are the ones the best decoding used
    assert (workdir / f"iteration-{best:03d}" / "weights").read_text() == (tmp_path / "final").read_text()
    state = json.loads((workdir / "state.json").read_text())
    assert state["finished"] and state["history"] == history
    tuned = json.loads((workdir / "iteration-001" / "tuner.json").read_text())
    assert tuned["seed"] == iteration_seed(3, 1) and "bleu_after" in tuned["result"]
    assert (workdir / "iteration-001" / "decoder.log").read_text() == "decoded 25 sentences\n"


def test_iteration_seeds_depend_on_seed_and_iteration_only():
    seeds = {iteration_seed(s, i) for s in range(5) for i in range(1, 6)}
    assert len(seeds) == 25 and iteration_seed(2, 3) == iteration_seed(2, 3)


def test_no_new_candidates_stops(corpus, tmp_path, capsys):
    # a decoder that returns the whole pool every time: the second decoding adds nothing
    code, result, err = run_tune(tune_args(corpus, tmp_path / "wd", "--kbest", "40"), capsys)
    assert code == 0, err
    assert result["stopped"] == "no new candidates"
    assert [h["candidates_added"] for h in result["history"]] == [1000, 0]


def _kill_when(runs: list[tuple[list[str], Path, str | float]]) -> None:
    """Start ``hypertune tune ARGV`` for every run at once and kill -9 each when its ``moment`` (a path under its
    work directory) appears, or ``moment`` seconds after they start (or when it ends by itself)."""
    env = {**os.environ, "DECODER_PAUSE": "0.3"}
    quiet = {"env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    live = [
        (subprocess.Popen([sys.executable, "-m", "hypertune", *argv], **quiet), workdir, moment)
        for argv, workdir, moment in runs
    ]
    started = time.monotonic()
    while live:
        for run in list(live):
            process, workdir, moment = run
            if (
                process.poll() is not None
                or (isinstance(moment, float) and time.monotonic() - started >= moment)
                or (isinstance(moment, str) and list(workdir.glob(moment)))
            ):
                process.send_signal(signal.SIGKILL)
                process.wait()
                live.remove(run)
        time.sleep(0.005)


@pytest.mark.slow
def test_kill_then_resume_ends_with_identical_weights(corpus, tmp_path, capsys):
    reference = tmp_path / "reference"
    code, expected, err = run_tune(tune_args(corpus, reference), capsys)
    assert code == 0, err
    expected_weights = (reference / f"iteration-{expected['history'][-1]['iteration']:03d}" / "weights").read_bytes()
    # moments: inside a decoding (half its output written), right after one, inside and after a tuning,
    # and at seeded random times
    moments: list[str | float] = ["iteration-001/.output.partial-*/kbest", "iteration-002/output",
                                  "iteration-002/tuner.json", "iteration-003/weights", "state.json"]  # fmt: skip
    rng = random.Random(5)
    moments += [round(rng.uniform(1.0, 4.0), 2) for _ in range(2)]
    workdirs = [tmp_path / f"killed-{n}" for n in range(len(moments))]
    _kill_when([(tune_args(corpus, w), w, moment) for w, moment in zip(workdirs, moments, strict=True)])
    for workdir, moment in zip(workdirs, moments, strict=True):
        assert not fcntl_locked(workdir / "lock")  # the killed run's lock went with it
        argv = (
            tune_args(corpus, workdir, "--resume") if (workdir / "config.json").exists() else tune_args(corpus, workdir)
        )
        code, result, err = run_tune(argv, capsys)
        assert code == 0, (moment, err)
        last = result["history"][-1]["iteration"]
        assert (workdir / f"iteration-{last:03d}" / "weights").read_bytes() == expected_weights, moment
        assert [h["bleu"] for h in result["history"]] == [h["bleu"] for h in expected["history"]], moment
        assert not list(workdir.rglob(".output.partial*")) and not list(workdir.rglob(".hypertune-*")), moment


def fcntl_locked(path: Path) -> bool:
    if not path.exists():
        return False
    with open(path) as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def test_a_directory_in_use_or_of_another_run_is_refused(corpus, tmp_path, capsys):
    workdir = tmp_path / "wd"
    workdir.mkdir()
    with open(workdir / "lock", "w") as handle:  # another run holds the lock
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.write("4242\n")
        handle.flush()
        code, _, err = run_tune(tune_args(corpus, workdir), capsys)
    assert code == 2 and "in use by another 'hypertune tune' (process 4242)" in err and len(err.splitlines()) == 1
    code, _, err = run_tune(tune_args(corpus, workdir, "--iterations", "1"), capsys)
    assert code == 0, err
    code, _, err = run_tune(tune_args(corpus, workdir), capsys)
    assert code == 2 and "add --resume" in err
    code, _, err = run_tune(tune_args(corpus, workdir, "--resume", "--seed", "4"), capsys)
    assert code == 2 and "another configuration (it differs in: seed)" in err
    code, _, err = run_tune(tune_args(corpus, workdir, "--resume", "--kbest", "6"), capsys)
    assert code == 2 and "differs in: kbest" in err


def test_resume_with_more_iterations_goes_on(corpus, tmp_path, capsys):
    full = tmp_path / "full"
    code, expected, err = run_tune(tune_args(corpus, full, "--iterations", "3"), capsys)
    assert code == 0, err
    short = tmp_path / "short"
    code, first, err = run_tune(tune_args(corpus, short, "--iterations", "1"), capsys)
    assert code == 0 and len(first["history"]) == 2 and first["stopped"] == "1 iteration"
    code, result, err = run_tune(tune_args(corpus, short, "--iterations", "3", "--resume"), capsys)
    assert code == 0, err
    assert result["weights"] == expected["weights"] and result["resumed"]


def test_failing_decoder_stops_and_keeps_finished_iterations(corpus, tmp_path, capsys):
    flag = tmp_path / "broken"
    failing = (
        decoder_command(corpus)
        + f" && if [ {{iteration}} -ge 2 ] && [ -e {flag} ]; then echo 'no model' >&2; exit 3; fi"
    )
    workdir = tmp_path / "wd"
    flag.write_text("")
    code, _, err = run_tune(tune_args(corpus, workdir, decoder=failing), capsys)
    assert code == 1
    message = err.strip().splitlines()[-1]
    assert "iteration-002/decoder.log: the decoder failed with exit status 3 in iteration 2" in message
    assert message.endswith("its last lines: decoded 25 sentences | no model")
    assert (workdir / "iteration-001" / "tuner.json").exists()  # iteration 1 is kept
    assert not (workdir / "iteration-002" / "output").exists()
    flag.unlink()  # the problem fixed, the run goes on from iteration 2
    code, result, err = run_tune(tune_args(corpus, workdir, "--resume", decoder=failing), capsys)
    assert code == 0, err
    code, expected, err = run_tune(tune_args(corpus, tmp_path / "clean", decoder=failing), capsys)
    assert result["weights"] == expected["weights"]


def test_decoder_that_writes_nothing(corpus, tmp_path, capsys):
    code, _, err = run_tune(tune_args(corpus, tmp_path / "wd", decoder="true {weights} {kbest}"), capsys)
    assert code == 1 and "exited normally in iteration 1 but wrote nothing to {kbest}" in err


def test_template_must_name_the_output_and_weights(corpus, tmp_path, capsys):
    code, _, err = run_tune(tune_args(corpus, tmp_path / "wd", decoder="cat {weights} > /dev/null"), capsys)
    assert code == 2 and "put {kbest} in it" in err
    code, _, err = run_tune(tune_args(corpus, tmp_path / "wd", decoder="echo > {kbest}"), capsys)
    assert code == 2 and "put {weights} in it" in err


def test_tuner_options_owned_by_the_loop_are_refused(corpus, tmp_path, capsys):
    code, _, err = run_tune([*tune_args(corpus, tmp_path / "wd"), "--", "--seed", "5"], capsys)
    assert code == 2 and "--seed of the tuner is set by the loop" in err


# ------------------------------------------------------------------------------------------ moses.ini

MOSES_INI = """# a moses.ini of both weight syntaxes
[feature]
KENLM name=LM0 factor=0 path=lm.bin order=5

[weight]
LM0= 0.5   # language model
TM0= 0.2 0.3
WordPenalty0= -1

[weight-d]
0.3
"""


def test_moses_ini_round_trip_both_syntaxes():
    new = {"LM0": 0.125, "TM0_0": -0.25, "TM0_1": 2.0, "WordPenalty0": 1e-07, "d": 0.0625, "sparse_a~b": 0.5}
    text, rest = rewrite_weights(MOSES_INI, new, "moses.ini")
    assert rest == {"sparse_a~b": 0.5}
    assert text == MOSES_INI.replace("LM0= 0.5 ", "LM0= 0.125 ").replace("TM0= 0.2 0.3", "TM0= -0.25 2").replace(
        "WordPenalty0= -1", "WordPenalty0= 1e-07"
    ).replace("\n0.3\n", "\n0.0625\n")
    assert parse_weights(text, "new.ini") == {k: v for k, v in new.items() if k != "sparse_a~b"}
    assert add_weights(text, rest, "new.ini").endswith("WordPenalty0= 1e-07\nsparse_a~b= 0.5\n\n[weight-d]\n0.0625\n")
    with_file = add_weights(text, {}, "new.ini", weight_file="/w/sparse")
    assert with_file.endswith("[weight-d]\n0.0625\n\n[weight-file]\n/w/sparse\n")
    # components numbered across lines, as the reader numbers them
    old = "[weight-d]\n0.1\n0.2 # b\n[weight-t]\n1\n"
    text, _ = rewrite_weights(old, {"d_0": 5.0, "d_1": 6.0, "tm": 7.0}, "old.ini")
    assert text == "[weight-d]\n5\n6 # b\n[weight-t]\n7\n"


def test_decoder_config_writes_sparse_weights_beside_moses_ini(tmp_path):
    (tmp_path / "moses.ini").write_text(MOSES_INI)
    config = DecoderConfig.from_file(str(tmp_path / "moses.ini"))
    folder = tmp_path / "it"
    folder.mkdir()
    path = config.write({"LM0": 1.0, "x~y": 0.5}, str(folder))
    assert path == str(folder / "moses.ini")
    sparse = folder / "moses.ini.sparse"
    assert sparse.read_text() == "x~y 0.5\n"
    assert Path(path).read_text().endswith(f"[weight-file]\n{sparse}\n")
    assert "LM0= 1   # language model" in Path(path).read_text()


def test_loop_with_a_moses_ini(corpus, tmp_path, capsys):
    ini = tmp_path / "moses.ini"
    ini.write_text(MOSES_INI.replace("TM0= 0.2 0.3", "TM0= 0 0").replace("WordPenalty0= -1", "WordPenalty0= 0")
                   .replace("\n0.3\n", "\n0\n").replace("LM0= 0.5", "LM0= 1"))  # fmt: skip
    argv = tune_args(corpus, tmp_path / "wd", "--decoder-config", str(ini))
    argv.remove("--init")
    argv.remove(str(corpus["init"]))
    code, result, err = run_tune(argv, capsys)
    assert code == 0, err
    written = (tmp_path / "wd" / "iteration-002" / "moses.ini").read_text()
    tuned = parse_weights((tmp_path / "wd" / "iteration-001" / "tuned.weights").read_text(), "tuned")
    assert parse_weights(written, "ini") == {k: tuned[k] for k in ["LM0", "TM0_0", "TM0_1", "WordPenalty0", "d"]}
    assert written.startswith("# a moses.ini of both weight syntaxes\n[feature]\nKENLM name=LM0")
    assert result["bleu_after"] > result["bleu_before"]


# ------------------------------------------------------------------------------------------ runs


def test_spread_is_mean_sample_sd_min_max():
    assert spread([0.2, 0.4, 0.3]) == pytest.approx({"mean": 0.3, "sd": 0.1, "min": 0.2, "max": 0.4, "runs": 3})
    assert spread([0.5])["sd"] == 0.0


@pytest.mark.slow
def test_runs_report_the_spread(corpus, tmp_path, capsys):
    argv = tune_args(corpus, tmp_path / "runs", "--runs", "2", "--iterations", "2", "--out", str(tmp_path / "avg"),
                     "--average-weights", "--test-decoder", decoder_command(corpus), "--test-refs",
                     str(corpus["ref"]))  # fmt: skip
    code, result, err = run_tune(argv, capsys)
    assert code == 0, err
    test = [run["test_bleu"] for run in result["runs"]]
    for run, bleu in zip(result["runs"], test, strict=True):  # each run decoded the test set with its weights
        nbest = tmp_path / "runs" / f"run-{run['seed']}" / f"test-{run['returned_iteration']:03d}" / "output" / "kbest"
        assert bleu == pytest.approx(first_lines_bleu(nbest, corpus["ref"]), abs=1e-9)
    assert result["test_score"] == result["test_bleu"] == pytest.approx(spread(test))
    dev = [run["bleu_after"] for run in result["runs"]]
    assert [run["seed"] for run in result["runs"]] == [3, 4]
    assert result["dev_score"] == result["dev_bleu"] == pytest.approx(spread(dev))
    averaged = parse_weights((tmp_path / "avg").read_text(), "avg")
    for name in FEATURES:
        assert averaged[name] == pytest.approx(sum(run["weights"][name] for run in result["runs"]) / 2)
    single = tmp_path / "single"  # a run of the set is the single run with its seed
    code, one, err = run_tune(tune_args(corpus, single, "--iterations", "2", "--seed", "4"), capsys)
    assert one["weights"] == result["runs"][1]["weights"]


# ------------------------------------------------------------------------------------------ hypertune decode


@pytest.mark.slow
def test_hypertune_decode_as_the_decoder(tmp_path, capsys):
    """Generated forests rescored by ``hypertune decode``; references are the forests' best yields under
    hidden weights, so tuning from other weights must raise BLEU."""
    graphs, ref = tmp_path / "g.json", tmp_path / "ref"
    assert (
        main(["generate", str(graphs), "--graphs", "12", "--edges", "400", "--features", "6", "--seed", "5", "-q"]) == 0
    )
    (tmp_path / "hidden").write_text("F0 0.3\nF1 -1\nF2 0.5\nF3 0.2\nF4 -0.4\nF5 1\n")
    assert main(["decode", str(graphs), "-w", str(tmp_path / "hidden"), "--out", str(ref), "--out-format", "text"]) == 0
    (tmp_path / "init").write_text("F0 1\nF1 0\nF2 0\nF3 0\nF4 0\nF5 0\n")
    capsys.readouterr()
    decoder = f"{sys.executable} -m hypertune decode {graphs} --weights {{weights}} --kbest {{k}} --out {{kbest}} -q"
    for tuner in ("mert", "mira"):
        argv = ["tune", "--decoder", decoder, "--refs", str(ref), "--init", str(tmp_path / "init"), "--kbest", "20",
                "--iterations", "2", "--workdir", str(tmp_path / tuner), "--tuner", tuner]  # fmt: skip
        code, result, err = run_tune(argv, capsys)
        assert code == 0, err
        bleu = [h["bleu"] for h in result["history"]]
        assert bleu[-1] > bleu[0] + 0.1, (tuner, bleu)
        nbest = tmp_path / tuner / "iteration-001" / "output" / "kbest"
        assert bleu[0] == pytest.approx(first_lines_bleu(nbest, ref), abs=1e-9)


# ------------------------------------------------------------------------------------------ lattices


def test_lattice_accumulation_joins_by_sentence_id(tmp_path, capsys):
    """A decoder that writes the same Moses hypergraph directory every time: the second decoding adds no
    lattice, so the loop stops there; lattices without sentence ids are refused (they cannot be joined)."""
    hgdir = FIXTURES / "formats" / "hgdir"
    (tmp_path / "ref").write_text("a x\nb x\n")
    decoder = f"cp -r {hgdir} {{lattices}} && rm {{lattices}}/weights # {{weights}}"
    argv = ["tune", "--decoder", decoder, "--accumulate", "lattice", "--refs", str(tmp_path / "ref"), "--init",
            str(hgdir / "weights"), "--workdir", str(tmp_path / "wd")]  # fmt: skip
    code, result, err = run_tune(argv, capsys)
    assert code == 0, err
    assert [h["candidates_added"] for h in result["history"]] == [2, 0] and result["stopped"] == "no new candidates"
    forest = FIXTURES / "toy-forest.json"  # hypertune JSON without an id
    (tmp_path / "ref1").write_text("the house\n")
    argv = ["tune", "--decoder", f"cp {forest} {{lattices}} # {{weights}}", "--accumulate", "lattice", "--refs",
            str(tmp_path / "ref1"), "--init", str(FIXTURES / "toy-forest.weights"),
            "--workdir", str(tmp_path / "w2")]  # fmt: skip
    code, _, err = run_tune(argv, capsys)
    assert code == 1 and "carry no sentence ids" in err


def test_a_warning_is_said_once_per_run(corpus, tmp_path, capsys):
    (tmp_path / "ghost").write_text("Ghost0 1\n")  # a weight no feature has: every tuning would warn of it
    code, result, err = run_tune(tune_args(corpus, tmp_path / "wd", "--init", str(tmp_path / "ghost")), capsys)
    assert code == 0 and len(result["history"]) > 2
    assert err.count("Ghost0") == 1 and err.startswith("hypertune tune: warning: ")
    assert result["weights"]["Ghost0"] != 0  # kept (scaled with the rest), as every tuner keeps such weights


@pytest.mark.parametrize("tuner", ["mert", "mira", "minrisk", "train", "pro"])
def test_every_tuner_runs_in_the_loop(tuner, corpus, tmp_path, capsys):
    """Each ``--tuner`` is its tuning command with its own options; one tuning and the decoding after it."""
    argv = tune_args(corpus, tmp_path / "wd", "--iterations", "1")
    argv[argv.index("--tuner") + 1] = tuner
    argv.remove("--restarts")
    argv.remove("2")
    code, result, err = run_tune(argv, capsys)
    assert code == 0, err
    summary = json.loads((tmp_path / "wd" / "iteration-001" / "tuner.json").read_text())["result"]
    tuned = parse_weights((tmp_path / "wd" / "iteration-001" / "tuned.weights").read_text(), "tuned")
    assert tuned == summary["weights"] == result["weights"] and len(result["history"]) == 2


def test_references_must_be_files_the_loop_can_read_again(corpus, tmp_path, capsys):
    read, write = os.pipe()
    os.write(write, corpus["ref"].read_bytes())
    os.close(write)
    argv = tune_args(corpus, tmp_path / "wd")
    argv[argv.index("--refs") + 1] = f"/dev/fd/{read}"
    code, _, err = run_tune(argv, capsys)
    os.close(read)
    assert code == 2 and "give a file, not a pipe" in err and not (tmp_path / "wd").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_loop_leaves_no_decoder_running(corpus, tmp_path):
    marker = f"hypertune-test-{os.getpid()}-{time.monotonic_ns()}"
    decoder = f"sleep 30 && echo {marker} > {{kbest}} # {{weights}}"  # a shell with a child: the group must go
    workdir = tmp_path / "wd"
    process = subprocess.Popen([sys.executable, "-m", "hypertune", *tune_args(corpus, workdir, decoder=decoder)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip

    def running() -> int:  # processes whose command line names the marker, the loop's own aside
        count = 0
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            count += marker.encode() in cmdline and int(pid) != process.pid
        return count

    deadline = time.monotonic() + 30
    while running() < 2 and time.monotonic() < deadline:  # the keeper and the shell (and sleep) are up
        time.sleep(0.05)
    assert running() >= 2
    process.send_signal(signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 5
    while running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running() == 0


def test_tune_on_a_cluster_stops_on_a_lost_worker_and_resumes(corpus, tmp_path, capsys):
    """``tune --cluster``: every tuning runs on Dask. A real ``dask worker`` killed while the loop runs stops the
    loop with the one-line error (the finished steps kept); ``--resume`` on another cluster (a LocalCluster)
    ends with the weights of an uninterrupted single-process run (MERT's sharded result is the unsharded one)."""
    pytest.importorskip("distributed")
    from support.dask_cluster import RealCluster

    code, expected, err = run_tune(tune_args(corpus, tmp_path / "reference"), capsys)
    assert code == 0, err
    workdir = tmp_path / "wd"
    cluster = RealCluster(1)
    try:
        argv = [*tune_args(corpus, workdir), "--shards", "2", "--cluster", cluster.address]
        env = {**os.environ, "DECODER_PAUSE": "1.0"}
        process = subprocess.Popen([sys.executable, "-m", "hypertune", *argv], env=env, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)  # fmt: skip
        while process.poll() is None and not (workdir / "iteration-002" / "tuner.json").exists():
            time.sleep(0.02)
        cluster.workers[0].kill()  # during iteration 3's decoding: its tuning finds the shards' worker gone
        cluster.workers[0].wait(10)
        _, stderr = process.communicate(timeout=120)
    finally:
        cluster.close()
    assert process.returncode != 0
    message = stderr.strip().splitlines()[-1]
    assert "no workers" in message or "lost shard" in message, stderr
    assert (workdir / "iteration-002" / "tuner.json").exists() and not (
        workdir / "iteration-003" / "tuner.json"
    ).exists()
    code, result, err = run_tune([*tune_args(corpus, workdir, "--resume"), "--shards", "2", "--cluster", "local:2"],
                                 capsys)  # fmt: skip
    assert code == 0, err
    assert result["resumed"] and result["weights"] == expected["weights"]
    assert [h["bleu"] for h in result["history"]] == [h["bleu"] for h in expected["history"]]
    argv = tune_args(corpus, tmp_path / "mira")
    argv[argv.index("--tuner") + 1 :] = ["mira", "--cluster", "local:2"]
    code, _, err = run_tune(argv, capsys)
    assert code != 0 and "--shards" in err  # results of the other tuners depend on the shards: they must be given


@pytest.mark.slow
def test_runs_on_one_local_cluster_give_the_runs_without_it(corpus, tmp_path, capsys):
    """``--runs R --cluster local:N`` starts one local cluster for all the runs and gives each run its address;
    MERT's sharded results are the unsharded ones, so every run ends with its plain run's weights."""
    pytest.importorskip("distributed")
    plain = tune_args(corpus, tmp_path / "plain", "--runs", "2", "--iterations", "2")
    code, expected, err = run_tune(plain, capsys)
    assert code == 0, err
    shared = [*tune_args(corpus, tmp_path / "shared", "--runs", "2", "--iterations", "2"), "--cluster=local:1"]
    code, result, err = run_tune(shared, capsys)
    assert code == 0, err
    assert [r["weights"] for r in result["runs"]] == [r["weights"] for r in expected["runs"]]


@pytest.mark.parametrize("metric", ["bleu", "ter"])
def test_tune_says_score_metric_and_direction_and_picks_the_better_iteration(metric, corpus, tmp_path, capsys):
    workdir = tmp_path / "wd"
    code, result, err = run_tune(tune_args(corpus, workdir, "--metric", metric), capsys)
    assert code == 0, err
    lower = metric == "ter"
    assert result["metric"].lower() == metric and result["higher_is_better"] is (not lower)
    assert (result["score_before"], result["score_after"]) == (result["bleu_before"], result["bleu_after"])
    dev = []
    for entry in result["history"]:  # each iteration's dev metric, computed here with sacrebleu
        nbest = workdir / f"iteration-{entry['iteration']:03d}" / "output" / "kbest"
        dev.append(first_lines_ter(nbest, corpus["ref"]) if lower else first_lines_bleu(nbest, corpus["ref"]))
        assert entry["bleu"] == pytest.approx(dev[-1], abs=1e-9)
        if "tuner_bleu_after" in entry:
            tuned = json.loads((workdir / f"iteration-{entry['iteration']:03d}" / "tuner.json").read_text())["result"]
            assert entry["tuner_bleu_after"] == tuned["score_after"] == tuned[f"{metric}_after"]
    assert result["best_iteration"] == 1 + dev.index(min(dev) if lower else max(dev))
