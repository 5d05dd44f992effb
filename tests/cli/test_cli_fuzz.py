"""Every command with bad option values: never a traceback.

Each command runs on tiny inputs (``fixtures/``) once as given (:func:`base_commands`) and then once per
option and bad value, the options taken from the command's own argparse parser, so a new option is fuzzed
without a line here. A run may succeed (exit 0) -- a zero count or a file named ``nan`` can be fine -- but it
must never end in a traceback: the exit code is 0, 1 or 2, and a failure prints exactly one error line on stderr,
``hypertune COMMAND: error: ...``, after any warnings (``hypertune COMMAND: warning: ...``) or, for
argparse's own errors, after the usage lines. Runs are in process (``hypertune.cli.main``), from a
temporary directory (an output path such as ``nan`` lands there), and cut short after a few seconds (a
huge count may legitimately take forever; that is not what this test looks for).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import sys

import pytest
from support.paths import FIXTURES

from hypertune.cli import COMMANDS, build_parser, main
from hypertune.errors import HypertuneError
from hypertune.formats.registry import FORMATS, read_graphs

FOREST = str(FIXTURES / "toy-forest.json")
FOREST_WEIGHTS = str(FIXTURES / "toy-forest.weights")
FOREST_REF = str(FIXTURES / "toy-forest.ref")
NBEST = str(FIXTURES / "mert" / "nbest.txt")
REF_PREFIX = str(FIXTURES / "mert" / "ref.")
INIT = str(FIXTURES / "mert" / "init.weights")

#: Values given to every option that takes one: negative, zero, not a number, infinite, huge (a float, then an
#: integer beyond 64 bits), tiny, not a number at all, empty.
BAD_VALUES = ("-3", "0", "nan", "inf", "-inf", "1e308", "1e-300", "99999999999999999999999", "x", "")
#: Options whose value is a choice get an unknown choice (argparse's own error) and each of their choices (a
#: tokenizer whose optional package is missing must say so in one line, too) ...
BAD_CHOICE = "bogus"
#: ... but for these, whose choices run for minutes.
ONLY_BAD_CHOICE = {("bench", "--suite")}
#: Options whose value only names a file to write get the values that differ as file names (one read as an
#: option, a plain name, empty): each run draws a picture, and "nan" or "1e308" name a file as "x" does.
FILE_NAME_VALUES = {"--plot": ("-3", "x", "")}
#: How long one run may take before it is cut short (seconds).
LIMIT = 2

TUNING = [NBEST, "--refs", REF_PREFIX, "--init", INIT]


def base_commands() -> dict[str, list[str]]:
    """A command line for each command that succeeds on the fixtures (checked by the first test)."""
    return {
        "inspect": [FOREST],
        "decode": [FOREST, "--weights", FOREST_WEIGHTS],
        "rerank": [NBEST, "--weights", INIT],
        "mbr": [NBEST, "--weights", INIT],
        "inside": [FOREST, "--semiring", "counting"],
        "convert": [FOREST, "converted.json", "--to", "hypertune"],
        "draw": [FOREST, "--weights", FOREST_WEIGHTS, "--out", "forest.dot"],
        "bleu": ["--hyp", FOREST_REF, "--refs", FOREST_REF],
        "compare": [FOREST_REF, FOREST_REF, "--refs", FOREST_REF],
        "mert": TUNING,
        "linesearch": [NBEST, "--refs", REF_PREFIX, "--weights", INIT, "--direction", "LM0"],
        "mira": [*TUNING, "--epochs", "2"],
        "hope-fear": [NBEST, "--refs", REF_PREFIX, "--weights", INIT],
        "minrisk": [*TUNING, "--iterations", "3"],
        "train": [*TUNING, "--iterations", "3"],
        "pro": [*TUNING, "--iterations", "3"],
        "tune": [
            "--decoder",
            f": {{weights}}; cp {NBEST} {{kbest}}",
            "--refs",
            REF_PREFIX,
            "--init",
            INIT,
            "--iterations",
            "1",
            "--workdir",
            "run",
            "--quiet",
        ],
        "oracle": [NBEST, "--refs", REF_PREFIX],
        "generate": ["generated.json", "--edges", "20", "--features", "3"],
        "bench": ["--edges", "50", "--features", "3", "--repeat", "1", "--workdir", "bench", "--quiet"],
    }


class TooLong(Exception):
    pass


_cut: list[bool] = [False]  # whether the alarm fired during the current run


def _alarm(signum, frame):
    """Cut the run short, unless numba or llvmlite is running Python code (compiling or loading a kernel): an
    exception raised there can leave llvmlite's lock taken (it runs callbacks after acquiring it), and the next
    kernel this test process compiles or loads would wait for it forever. Asked again a little later."""
    while frame is not None:
        if any(f"{os.sep}{package}{os.sep}" in frame.f_code.co_filename for package in ("numba", "llvmlite")):
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            return
        frame = frame.f_back
    _cut[0] = True
    raise TooLong


def run(argv: list[str], limit: int | None = LIMIT) -> tuple[int | None, str]:
    """``hypertune ARGV`` in process: its exit code (``None`` if cut short after ``limit`` seconds; ``None``: never)
    and stderr. An exception that escapes ``main`` is a traceback: it fails the test with the command line. The
    cut-off may land inside a compiled function, whose dispatcher then reports it as a ``SystemError``, or inside
    a ctypes callback of numba's compiler, which swallows it and fails later with another error: whatever a cut-off
    run raises counts as cut short."""
    out, err = io.StringIO(), io.StringIO()
    _cut[0] = False
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(limit or 0)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as stop:  # argparse
                code = stop.code if isinstance(stop.code, int) else 2
    except TooLong:
        return None, err.getvalue()
    except Exception as error:  # what the test is looking for, unless the run was cut short
        if _cut[0]:
            return None, err.getvalue()
        pytest.fail(f"hypertune {' '.join(argv)}: traceback: {type(error).__name__}: {error}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return (None if _cut[0] else code), err.getvalue()  # an alarm a callback swallowed: cut short all the same


def check(argv: list[str], code: int | None, err: str) -> None:
    command = f"hypertune {argv[0]}"
    shown = f"hypertune {' '.join(argv)}"
    assert "Traceback" not in err, f"{shown}: {err}"
    if code is None or code == 0:
        return
    assert code in (1, 2), f"{shown}: exit {code}: {err}"
    lines = err.rstrip("\n").split("\n")
    errors = [line for line in lines if line.startswith(f"{command}: error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], f"{shown}: stderr is not one error line:\n{err}"
    if not lines[0].startswith("usage:"):  # argparse's usage comes first; else only warnings may
        assert all(line.startswith(f"{command}: warning: ") for line in lines[:-1]), f"{shown}:\n{err}"


def options(command: str) -> list[argparse.Action]:
    """The options of ``command`` that take a value, from its own parser."""
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = []
    for action in sub.choices[command]._actions:
        if action.option_strings and action.nargs != 0 and not isinstance(action, argparse._HelpAction):
            found.append(action)
    return found


def cases(command: str) -> list[list[str]]:
    base = base_commands()[command]
    out = []
    for action in options(command):
        flag = max(action.option_strings, key=len)
        if action.choices is None:
            values = FILE_NAME_VALUES.get(flag, BAD_VALUES)
        elif (command, flag) in ONLY_BAD_CHOICE:
            values = (BAD_CHOICE,)
        else:
            values = (BAD_CHOICE, *action.choices)
        for value in values:
            out.append([command, *base, f"{flag}={value}"])
    return out


NAMES = [name.replace("_", "-") for name in COMMANDS]


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


@pytest.mark.parametrize("command", NAMES)
def test_the_base_command_lines_succeed(command):
    argv = [command, *base_commands()[command]]
    code, err = run(argv, limit=None)  # no cut-off: on a fresh machine this run compiles the command's kernels
    assert code == 0, f"hypertune {' '.join(argv)}: exit {code}: {err}"


@pytest.fixture(scope="module")
def readers_compiled() -> None:
    """Every format's reader run once on the inputs, so that compiling its kernels (minutes on a fresh
    machine) is not cut short by :data:`LIMIT` in every command's ``--format`` case, unchecked."""
    for name in FORMATS:
        for path in (FOREST, NBEST):
            with contextlib.suppress(HypertuneError):
                read_graphs(path, format=name)


@pytest.mark.slow
@pytest.mark.parametrize("command", NAMES)
def test_bad_option_values_never_end_in_a_traceback(command, readers_compiled):
    for argv in cases(command):
        code, err = run(argv)
        check(argv, code, err)


if __name__ == "__main__":  # a list of every failure, for fixing them: python tests/cli/test_cli_fuzz.py [COMMAND...]
    import tempfile
    import time

    os.chdir(tempfile.mkdtemp())
    failures = 0
    for command in sys.argv[1:] or NAMES:
        started = time.perf_counter()
        for argv in cases(command):
            try:
                code, err = run(argv)
                check(argv, code, err)
            except (AssertionError, pytest.fail.Exception) as failure:
                failures += 1
                print(str(failure).split("\n")[0][:300])
        print(f"# {command}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    sys.exit(1 if failures else 0)
