"""SIGINT and SIGTERM (issue 27): a tuning command stops at its next safe point -- never inside a compiled
kernel, where Python's own KeyboardInterrupt became ``SystemError: CPUDispatcher(...) returned a result with an
exception set`` -- exits 130 (143), says so in one line and keeps the best weights so far (``OUT.interrupted``,
or on stdout). The tuners report those weights through their ``checkpoint`` option. ``oracle --method exact``
reports progress, stops inside its branch and bound, and a sentence beyond its budget is exit 1 with the
finished sentences written."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import select
import signal
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest
from support.paths import FIXTURES, REPO, SHARED

from hypertune import interrupts
from hypertune.cli import main
from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.metrics import BleuMetric
from hypertune.tuners import Mert, MinRisk, Mira, TuningSet
from hypertune.tuners.online import OnlineTrainer
from hypertune.tuners.train import Trainer
from hypertune.weights import Weights


@pytest.fixture(autouse=True)
def _signals_handled():
    """Python's own SIGINT and SIGTERM dispositions for each test, whatever the test run inherited: a shell's
    background job (or nohup) starts with SIGINT ignored, which the handler keeps ignored and which the
    commands started here would inherit."""
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        yield
        return
    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        yield
    finally:
        for signum, old in saved.items():
            signal.signal(signum, old if old is not None else signal.SIG_DFL)


# ---------------------------------------------------------------------- the interrupts module
def test_a_deferred_signal_is_raised_at_the_next_safe_point():
    with interrupts.installed():
        with pytest.raises(interrupts.Interrupted) as stopped:
            with interrupts.deferred():
                signal.raise_signal(signal.SIGTERM)  # recorded, not raised: the computation goes on
                assert interrupts.pending() == signal.SIGTERM
                interrupts.check()
                raise AssertionError("check() did not raise")  # pragma: no cover
    assert (stopped.value.exit_code, stopped.value.message) == (143, "interrupted (SIGTERM)")
    assert interrupts.pending() is None


def test_a_signal_after_the_last_safe_point_ends_the_block_and_outside_one_raises_at_once():
    with interrupts.installed():
        with pytest.raises(interrupts.Interrupted) as stopped:
            with interrupts.deferred():
                signal.raise_signal(signal.SIGINT)
        assert stopped.value.exit_code == 130
        with pytest.raises(interrupts.Interrupted):
            signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_an_error_while_a_signal_is_pending_is_the_interrupt():
    """A signal to a process group kills a cluster's workers too: the lost worker the client then sees is the
    interrupt's doing, and reported as the interrupt."""
    with interrupts.installed(), pytest.raises(interrupts.Interrupted) as stopped:
        with interrupts.deferred():
            signal.raise_signal(signal.SIGTERM)
            raise RuntimeError("a worker left the cluster")
    assert stopped.value.exit_code == 143 and isinstance(stopped.value.__cause__, RuntimeError)


def test_the_systemerror_numba_makes_of_a_keyboardinterrupt_is_recognised():
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as error:
            raise SystemError("CPUDispatcher(<function f>) returned a result with an exception set") from error
    except SystemError as error:
        found = interrupts.as_interrupt(error)
    assert found is not None and found.exit_code == 130
    assert interrupts.as_interrupt(SystemError("something else")) is None
    assert interrupts.as_interrupt(ValueError("no")) is None


@numba.njit(nogil=True)
def _spin(stop, work, limit):  # pragma: no cover - compiled
    """Count until ``stop[0]`` is set. The store into ``work`` (an array of the same type, which the compiler
    cannot tell apart from ``stop``) makes it read the flag on every turn: an empty loop would be solved in
    closed form and return at once."""
    count = 0
    while stop[0] == 0 and count < limit:
        work[count & 1023] += 1
        count += 1
    return count


def test_watched_stops_a_long_kernel_through_its_flag():
    """A nogil kernel that polls a flag runs in a helper thread; a signal sets the flag, the kernel returns early
    and the interrupt is raised (the exact oracle's branch and bound runs so)."""
    stop, work = np.zeros(1, dtype=np.int64), np.zeros(1024, dtype=np.int64)
    returned = []
    limit = 1 << 62  # unreachable: only the flag ends it
    assert _spin(np.ones(1, dtype=np.int64), work, limit) == 0  # compiled before the clock starts
    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT))
    with interrupts.installed(), pytest.raises(interrupts.Interrupted):
        with interrupts.deferred():
            timer.start()
            interrupts.watched(lambda: returned.append(_spin(stop, work, limit)), lambda: stop.__setitem__(0, 1))
    timer.join()
    assert stop[0] == 1 and returned and returned[0] < limit
    assert interrupts.watched(lambda: 7, lambda: None) == 7  # without deferred signals: a plain call


# ---------------------------------------------------------------------- the tuners' checkpoint
def _nbest_set() -> TuningSet:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graphs = read_graphs(str(FIXTURES / "mert" / "nbest.txt"))
        return TuningSet.from_corpus(
            graphs, read_references(str(FIXTURES / "mert" / "ref.")), BleuMetric(tokenize="none")
        )


@pytest.mark.parametrize(
    "make",
    [
        lambda cp: Mert(restarts=2, seed=3, n_jobs=1, checkpoint=cp),
        lambda cp: Mira(epochs=5, seed=3, checkpoint=cp),
        lambda cp: Trainer(loss="pro", seed=3, iterations=20, checkpoint=cp),
        lambda cp: OnlineTrainer(loss="perceptron", epochs=4, seed=3, checkpoint=cp),
        lambda cp: MinRisk(objective="xbleu", iterations=15, checkpoint=cp),
    ],
    ids=["mert", "mira", "pro", "online", "minrisk"],
)
def test_the_last_checkpoint_is_the_result(make):
    """Every tuner reports, as it goes, the weights it would return if stopped then; the last report is what it
    returns, written the same way (start weights' other features kept, normalized as asked) with its metric."""
    reported = []
    tuner = make(lambda weights, score: reported.append((dict(weights), score)))
    poor = Weights({"LM0": -0.1, "TM0_0": 0.2, "TM0_1": 0.2, "WordPenalty0": 0.3})  # every tuner beats it
    result = tuner.fit(_nbest_set(), poor)
    assert reported and not result.kept_start, "no checkpoint"
    weights, score = reported[-1]
    assert weights.keys() == dict(result.weights).keys()
    assert np.allclose([weights[k] for k in weights], [result.weights[k] for k in weights], rtol=1e-6, atol=1e-9)
    assert score == pytest.approx(result.bleu_after, abs=1e-9)
    if isinstance(tuner, Mert):  # MERT reports only improvements, on the start weights' score
        scores = [s for _, s in reported]
        assert scores == sorted(scores) and scores[0] > result.bleu_before


# ---------------------------------------------------------------------- the command line, signalled on a pty
def _hypertune(*argv: str) -> list[str]:
    return [sys.executable, "-m", "hypertune", *argv]


def _signalled(argv: list[str], marker: bytes, signum: int, cwd: Path) -> tuple[int, str, str]:
    """Run ``argv`` with its stderr on a terminal (so that it draws progress), send ``signum`` once ``marker``
    appears there, and return the exit code, stderr (progress redraws included) and stdout."""
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, cwd=cwd, env=env)
    os.close(slave)
    seen, sent = b"", False
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 300)
            assert ready, f"no output for 300 s: {seen[-500:]!r}"
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            seen += chunk
            if not sent and marker in seen:
                process.send_signal(signum)
                sent = True
    finally:
        os.close(master)
    out = process.stdout.read().decode()
    code = process.wait()
    assert sent, f"the marker {marker!r} never came: {seen[-2000:]!r}"
    return code, seen.decode(errors="replace").replace("\r\n", "\n"), out


def _lines(stderr: str) -> list[str]:
    """The lines left on the terminal: progress redraws (``\\r\\x1b[K...``) overwritten, empty lines dropped."""
    return [line.split("\r\x1b[K")[-1].strip() for line in stderr.split("\n") if line.split("\r\x1b[K")[-1].strip()]


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight forests of ``make_bench.py hg`` (Moses hypergraphs) with references and start weights."""
    from hypertune.bench.core import make_bench_corpus

    if not SHARED.is_dir():
        pytest.skip("../shared/data is not present")
    return make_bench_corpus(SHARED.parent, tmp_path_factory.mktemp("bench"), "hg", 8)


def _bleu(corpus: Path, weights: Path, work: Path) -> float:
    """Corpus BLEU of the model-best translations under ``weights``: ``decode`` then ``bleu``, as a user would
    (tokenized as the tuning commands' BLEU is by default: not at all); in process, no signal is involved."""
    best = work / f"{weights.name}.best"
    decode = ["decode", str(corpus / "hg"), "-w", str(weights), "--out", str(best), "--out-format", "text", "-q"]
    assert main(decode) == 0
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["bleu", "--hyp", str(best), "--refs", str(corpus / "ref"), "--tokenize", "none", "--json"]) == 0
    return json.loads(printed.getvalue())["score"] / 100


@pytest.fixture(scope="module")
def start_bleu(bench: Path, tmp_path_factory: pytest.TempPathFactory) -> float:
    """The start weights' BLEU on the bench corpus (:func:`_bleu`)."""
    return _bleu(bench, bench / "dense", tmp_path_factory.mktemp("start"))


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_mert_interrupted_in_its_line_searches_keeps_its_best_weights(bench, start_bleu, tmp_path, signum):
    """The issue's case: MERT on forests, signalled between line searches (which run compiled, on threads):
    exit 130/143, one line, no traceback, and OUT.interrupted holds weights that decode to the BLEU the line
    names, at least the start weights'."""
    out = tmp_path / "tuned.weights"
    argv = _hypertune("mert", str(bench / "hg"), "--refs", str(bench / "ref"), "--init", str(bench / "dense"),
                      "--restarts", "20", "--seed", "1", "--out", str(out))  # fmt: skip
    # a round line-searches each of the 117 features the forests use, then moves: search 120 is past a better point
    code, stderr, stdout = _signalled(argv, b"line search 120:", signum, tmp_path)
    assert code == 128 + signum, stderr
    assert "Traceback" not in stderr and "SystemError" not in stderr
    messages = [line for line in _lines(stderr) if not line.startswith("mert: ")]  # the progress is "mert: ..."
    saved = Path(f"{out}.interrupted")
    name = signal.Signals(signum).name
    assert len(messages) == 1 and messages[0].startswith(f"hypertune mert: interrupted ({name}); the best weights "
                                                         "so far (BLEU "), messages  # fmt: skip
    assert messages[0].endswith(f") written to {saved}")
    assert not out.exists() and saved.is_file() and stdout == ""
    reported = float(messages[0].split("(BLEU ")[1].split(")")[0]) / 100
    after = _bleu(bench, saved, tmp_path)
    assert after == pytest.approx(reported, abs=0.00005)  # the line's score is the written weights' on the inputs
    assert after >= start_bleu


@pytest.mark.slow
def test_hypergraph_mira_interrupted_prints_its_best_weights_without_out(bench, tmp_path):
    """Hypergraph MIRA (the issue's other case: its hope/fear search is compiled): without --out the best epoch's
    weights so far are printed on stdout, in --out-format, and the line says so."""
    argv = _hypertune("mira", str(bench / "hg"), "--refs", str(bench / "ref"), "--init", str(bench / "dense"),
                      "--epochs", "500", "--out-format", "moses")  # fmt: skip
    code, stderr, stdout = _signalled(argv, b"epoch 2:", signal.SIGINT, tmp_path)
    assert code == 130, stderr
    assert "Traceback" not in stderr and "SystemError" not in stderr
    messages = [line for line in _lines(stderr) if not line.startswith("epoch ")]
    assert len(messages) == 1 and messages[0].startswith(
        "hypertune mira: interrupted (SIGINT); the best weights so far"
    )
    assert messages[0].endswith("on the graphs pruned to 50 edges/word) printed on stdout")
    assert stdout.startswith("LexicalReordering0= ")  # Moses's format: Name= v1 v2 ...
    (tmp_path / "printed").write_text(stdout)
    assert read_weights([str(tmp_path / "printed")]).keys() >= read_weights([str(bench / "dense")]).keys()


# ---------------------------------------------------------------------- oracle --method exact
def _forests(shared: Path) -> tuple[list[str], str]:
    forests = shared / "cdec" / "forests"
    files = [str(forests / f"training_dpmert_test_data_{i}.json.gz") for i in (0, 1)]
    return files, str(forests / "lo_test.ref.0")


def test_oracle_beyond_its_budget_writes_the_finished_sentences_and_names_the_others(shared, tmp_path, capsys):
    """Sentence 1 passes --max-expansions, sentence 0 does not: exit 1 (not the usage error 2), sentence 0's
    exact oracle written (the one a budget that lets it finish finds), an empty line for sentence 1, and the
    error line names sentence 1. (In process: no signal is involved.)"""
    files, refs = _forests(shared)
    out = tmp_path / "oracles.txt"
    code = main(["oracle", *files, "--refs", refs, "--method", "exact", "--max-expansions", "50", "--out", str(out)])
    stderr = capsys.readouterr().err
    assert code == 1, stderr
    error = stderr.strip().splitlines()
    assert len(error) == 1 and "Traceback" not in stderr
    assert error[0].startswith("hypertune oracle: error: sentence 1: the exact oracle's branch and bound passed 50 ")
    assert error[0].endswith(f"the finished sentences' oracles (1 of 2) are written to {out}, an empty line for each "
                             "unfinished one")  # fmt: skip
    assert main(["oracle", files[0], "--refs", refs, "--method", "exact", "--json"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert out.read_text() == alone["sentences"][0]["text"] + "\n\n"
    assert main(["oracle", *files, "--refs", refs, "--method", "exact", "--max-expansions", "50", "--json"]) == 1
    found = json.loads(capsys.readouterr().out)
    assert [s["id"] for s in found["sentences"]] == [0] and [u["id"] for u in found["unfinished"]] == [1]


@pytest.mark.slow
def test_oracle_shows_progress_and_stops_inside_the_branch_and_bound(shared, tmp_path):
    """On a terminal the exact oracle counts sentences; Ctrl-C during sentence 1's long branch and bound stops it
    there (the kernel polls a flag) -- not after it, when sentence 1 would be unfinished by its budget instead --
    and sentence 0's oracle, found already, is written beside the output."""
    files, refs = _forests(shared)
    out = tmp_path / "oracles.txt"
    argv = _hypertune("oracle", *files, "--refs", refs, "--method", "exact", "--max-expansions", "2000000",
                      "--out", str(out))  # fmt: skip
    code, stderr, stdout = _signalled(argv, b"oracle: 1/2 sentences", signal.SIGINT, tmp_path)
    assert code == 130 and "Traceback" not in stderr and stdout == ""
    saved = Path(f"{out}.interrupted")
    assert _lines(stderr)[-1] == (f"hypertune oracle: interrupted (SIGINT); the finished sentences' oracles (1 of 2) "
                                  f"written to {saved}, an empty line for each sentence not searched")  # fmt: skip
    assert not out.exists() and saved.read_text() == "australia reopens embassy in manila\n\n"
