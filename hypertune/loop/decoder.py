"""The decoder in a tuning loop: its command template, its run with logs, and its weights in its own form.

``--decoder CMD`` is a shell command template. Its placeholders are replaced by (shell-quoted) values:
``{weights}`` (the weights file, or the decoder's configuration with the new weights, for this
iteration), ``{kbest}`` (the n-best list the decoder must write), ``{lattices}`` (where it writes its
lattices or hypergraphs: a file or a directory it creates), ``{iteration}`` (1, 2, ...), ``{k}`` (the
n-best size) and ``{seed}`` (the iteration's seed). Any other braces are left alone, so shell and awk
syntax stay usable. The decoder's standard output and error go to log files; a decoder that fails stops
the loop with its exit status and the last lines of its log.

A Moses extended search graph (``-output-search-graph-extended {lattices}``, ``-osgx``) prints each arc's dense
feature values by position only; with a ``moses.ini`` as the decoder configuration the loop names them after
the decoding (:meth:`DecoderConfig.finish_output`: Moses's dense order is the ``[feature]`` section's,
:func:`~hypertune.formats.weights.moses_dense_names`) and keeps them as hypertune's corpus cache, which every
later step reads fast.

``--scorer CMD`` (a command run after each decoding that writes given scores of the new hypotheses, for a
``scores.NAME`` metric) is a template of the same kind, run the same way: its placeholders are
:data:`SCORER_PLACEHOLDERS`, ``{kbest}`` being the n-best list just written and ``{scores}`` the score file it
must write.
"""

from __future__ import annotations

import os
import re
import resource
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from hypertune.errors import HypertuneError, InputError, UsageError
from hypertune.formats.io import read_text, write_atomically
from hypertune.formats.weights import add_weights, detect_weights_format, format_weights, rewrite_weights
from hypertune.process_environment import user_environment
from hypertune.weights import Weights

PLACEHOLDERS = ("weights", "kbest", "lattices", "iteration", "k", "seed")
#: The scorer's placeholders (``--scorer``): the n-best list to score, the score file to write, and the rest.
SCORER_PLACEHOLDERS = ("kbest", "scores", "iteration", "k", "seed")
#: Names of an iteration's folder the decoder configuration's copy must not take.
RESERVED = frozenset({"weights", "tuned.weights", "tuner.json", "decoder.out", "decoder.log", "output", "lock",
                      "scores", "scores.unchecked", "scorer.out", "scorer.log"})  # fmt: skip
_PLACEHOLDER = re.compile(r"\{(" + "|".join(dict.fromkeys([*PLACEHOLDERS, *SCORER_PLACEHOLDERS])) + r")\}")


class DecoderError(HypertuneError):
    """The decoder (or the scorer) exited with a failure status (or was killed): the loop stops, keeping what
    is done."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


def expand(template: str, values: Mapping[str, object]) -> str:
    """``template`` with each ``{name}`` of ``values`` (:data:`PLACEHOLDERS` for a decoder,
    :data:`SCORER_PLACEHOLDERS` for a scorer) replaced by its shell-quoted value; other braces are left alone."""
    return _PLACEHOLDER.sub(
        lambda m: shlex.quote(str(values[m.group(1)])) if m.group(1) in values else m.group(0), template
    )


def check_template(template: str, output: str) -> None:
    """A usage error unless the template names where the decoder writes (``{kbest}`` or ``{lattices}``,
    the one the accumulation reads: ``output``) and the weights it must use."""
    used = set(_PLACEHOLDER.findall(template))
    if "{" + output + "}" not in template:
        other = "lattices" if output == "kbest" else "kbest"
        hint = f" (it names {{{other}}}: add --accumulate {'lattice' if other == 'lattices' else 'nbest'})"
        raise UsageError(
            f"--decoder must say where the decoder writes: put {{{output}}} in it" + (hint if other in used else "")
        )
    if "weights" not in used:
        raise UsageError("--decoder must pass the weights of each iteration to the decoder: put {weights} in it")


def check_scorer_template(template: str) -> None:
    """A usage error unless the ``--scorer`` template names the n-best list it scores (``{kbest}``) and the
    score file it writes (``{scores}``), and no placeholder of the decoder alone (``{weights}``, ``{lattices}``)."""
    used = set(_PLACEHOLDER.findall(template))
    if not {"kbest", "scores"} <= used:
        raise UsageError("--scorer must say what it scores and where it writes: put {kbest} (the n-best list just "
                         "decoded) and {scores} (the score file to write) in it")  # fmt: skip
    foreign = sorted(used - set(SCORER_PLACEHOLDERS))
    if foreign:
        allowed = ", ".join(f"{{{name}}}" for name in SCORER_PLACEHOLDERS)
        raise UsageError(f"--scorer: {{{foreign[0]}}} is a placeholder of the decoder, not of the scorer ({allowed})")


def die_with_parent() -> None:  # pragma: no cover - runs in the child
    """In a child process (``preexec_fn``): die with the tuning loop (Linux ``PR_SET_PDEATHSIG``)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


#: The decoder's keeper, a small process between the loop and the shell. The shell runs in a process group
#: of its own, so that everything it starts (a pipeline, ``a && b``) can be stopped at once; the keeper
#: asks the kernel for SIGTERM when the loop dies (``PR_SET_PDEATHSIG``, Linux), even by ``kill -9``, and
#: then kills that whole group: a killed loop leaves no decoder running on beside its resumed run. The
#: keeper exits as the shell did (with its status, or killed by the same signal).
KEEPER = r"""
import ctypes, os, signal, subprocess, sys
child = None
def stop(signum, frame):
    if child is not None:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
    os._exit(128 + signum)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
try:
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)
except (OSError, AttributeError):
    pass
if os.getppid() != int(sys.argv[2]):
    stop(signal.SIGTERM, None)
child = subprocess.Popen(sys.argv[1], shell=True, start_new_session=True)
status = child.wait()
if status < 0:
    signal.signal(-status, signal.SIG_DFL)
    os.kill(os.getpid(), -status)
sys.exit(status)
"""


class DecoderRun(NamedTuple):
    """What a decoder (or scorer) run took: wall-clock ``seconds`` and ``cpu_seconds``, the user and system CPU
    of the command and of everything it ran and waited for (Moses's threads, a pipeline's parts): unlike the
    wall clock, not inflated by other work on a loaded machine."""

    seconds: float
    cpu_seconds: float


def run_decoder(
    command: str,
    stdout_path: str,
    stderr_path: str,
    iteration: int | str,
    tick: Callable[[float], None] | None = None,
    role: str = "decoder",
) -> DecoderRun:
    """Run ``command`` through the shell (under :data:`KEEPER`), its standard output to ``stdout_path`` and
    error to ``stderr_path``; return what it took (:class:`DecoderRun`). A failure raises :class:`DecoderError`
    naming the exit status (or signal) and quoting the log's last lines (``role``, the decoder or the scorer,
    names what failed). ``tick(seconds)`` is called about once a second while it runs (progress on a
    terminal). Ctrl-C stops the command's whole process group."""
    started = time.perf_counter()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        try:
            process = subprocess.Popen(
                [sys.executable, "-c", KEEPER, command, str(os.getpid())],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=user_environment(),  # the user's, without the one BLAS thread this process runs on
            )
        except OSError as error:
            raise DecoderError(f"cannot start the {role}: {error.strerror}", 127) from None
        try:
            status, usage = _wait(process, started, tick)
        except ChildProcessError:  # reaped by someone else: SIGCHLD ignored by an application embedding us
            raise DecoderError(
                f"cannot tell how the {role} ended in iteration {iteration}: its exit status was taken by another "
                "wait (is SIGCHLD ignored?)",
                1,
            ) from None
        except KeyboardInterrupt:
            process.terminate()  # the keeper stops the decoder's group
            process.wait()
            raise
    if status != 0:
        how = f"was killed by signal {-status}" if status < 0 else f"failed with exit status {status}"
        log = stderr_path if os.path.getsize(stderr_path) else stdout_path
        raise DecoderError(f"{log}: the {role} {how} in iteration {iteration}{_last_lines(log)}", status)
    return DecoderRun(time.perf_counter() - started, usage.ru_utime + usage.ru_stime)


def _wait(
    process: subprocess.Popen, started: float, tick: Callable[[float], None] | None
) -> tuple[int, resource.struct_rusage]:
    """Wait for ``process`` (``os.wait4``, which gives the CPU it and its waited-for children used), calling
    ``tick`` about once a second; its exit code (minus the signal that killed it) and its resource usage."""
    pause, ticked = 0.0005, started
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return process.returncode, usage
        time.sleep(pause)
        pause = min(2 * pause, 0.05)
        now = time.perf_counter()
        if tick is not None and now - ticked >= 1.0:
            ticked = now
            tick(now - started)


def _last_lines(path: str, count: int = 3) -> str:
    """The last lines of a log, on one line (errors are one line): ``; its last lines: a | b | c``."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - 4096))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()][-count:]
    return f"; its last lines: {' | '.join(lines)}" if lines else "; its log is empty"


@dataclass(frozen=True)
class DecoderConfig:
    """How weights reach the decoder: a plain weights file (``name value`` lines, which ``hypertune decode
    --weights`` and cdec read), or the user's own configuration file -- Moses ``moses.ini`` (``[weight]``
    ``Name= v ...`` lines and old ``[weight-X]`` sections), a Joshua config, a cdec or Joshua weights file
    -- with only its weights replaced. Weights the configuration does not name (sparse features met in
    the n-best lists) are added: a moses.ini gets a ``[weight-file]`` beside it (``NAME.sparse``, as
    ``mert-moses.pl`` does), the others ``name value`` lines."""

    template: str | None = None  # the configuration's text
    name: str = "weights"  # the file name written in each iteration's folder
    source: str | None = None  # the configuration's path, for messages

    @classmethod
    def from_file(cls, path: str) -> DecoderConfig:
        text = read_text(path, "decoder configuration")
        kind = detect_weights_format(text)
        if kind not in ("moses-ini", "joshua-config", "lines", "json"):
            raise InputError(f"a {kind} file cannot carry a decoder's weights; give a moses.ini, a Joshua config or a "
                             "weights file", path)  # fmt: skip
        rewrite_weights(text, {}, path)  # a malformed configuration fails now, not in iteration 1
        name = os.path.basename(path)
        return cls(text, f"decoder-{name}" if name in RESERVED else name, path)

    @property
    def kind(self) -> str:
        return "weights" if self.template is None else detect_weights_format(self.template)

    def weights(self) -> Weights:
        """The weights the configuration holds (the start weights when no ``--init`` is given)."""
        if self.template is None:
            return Weights()
        from hypertune.formats.weights import parse_weights

        return Weights(parse_weights(self.template, self.source or self.name))

    def dense_names(self) -> list[str] | None:
        """The names of Moses's dense feature values in its order, for a moses.ini
        (:func:`~hypertune.formats.weights.moses_dense_names`)."""
        if self.template is None or self.kind != "moses-ini":
            return None
        from hypertune.formats.weights import moses_dense_names

        return moses_dense_names(self.template, self.source or self.name)

    def finish_output(self, folder: str, name: str) -> None:
        """After a decoding that exited normally, before its output ``folder/name`` is moved into place: a Moses
        extended search graph decoded with a moses.ini becomes hypertune's corpus cache with the dense values
        named (the decoder's file is kept as ``name.moses``); a plain search graph (``-output-search-graph``:
        one weighted score per arc) is refused, since no weight of the moses.ini can be tuned on it."""
        path = os.path.join(folder, name)
        names = self.dense_names()
        if names is None or not os.path.isfile(path):
            return
        from hypertune.formats import cache, moses_searchgraph
        from hypertune.formats.registry import detect_format
        from hypertune.symbols import FeatureSpace, Vocabulary

        if detect_format(path).name != moses_searchgraph.FORMAT.name:
            return
        if not names:
            raise InputError(
                "no [feature] section names the dense values of Moses's extended search graph: an old-format "
                "moses.ini ([weight-X] sections only) cannot name them; convert it to the [feature]/[weight] form",
                self.source or self.name,
            )
        space = FeatureSpace()
        graphs = moses_searchgraph.read(path, space, Vocabulary(), names)
        if moses_searchgraph.TRANSITION in space:
            raise InputError(
                "a plain Moses search graph (-output-search-graph) carries one weighted score per arc, no feature "
                "values, so no weight can be tuned on it: write -output-search-graph-extended {lattices} (-osgx)",
                path,
            )
        os.replace(path, path + ".moses")
        cache.write(graphs, path)

    def write(self, weights: Weights, folder: str) -> str:
        """Write ``weights`` in this form into ``folder`` (atomically); return the path the decoder gets."""
        path = os.path.join(folder, self.name)
        if self.template is None:
            write_atomically(path, format_weights(weights, "cdec"))
            return path
        source = self.source or self.name
        text, rest = rewrite_weights(self.template, weights, source)
        if rest and self.kind == "moses-ini":
            sparse = path + ".sparse"
            write_atomically(sparse, format_weights(Weights(rest), "cdec"))
            text = add_weights(text, {}, source, weight_file=os.path.abspath(sparse))
        elif rest:
            text = add_weights(text, rest, source)
        write_atomically(path, text)
        return path
