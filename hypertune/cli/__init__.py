"""The ``hypertune`` command line. One module per command; each has ``register(subparsers)``.

A command's ``run(args) -> int`` returns the exit code. Exit codes, the same for every command:

* 0 -- done;
* 1 -- bad input or output: a file that is missing, unreadable, malformed, truncated, of the wrong kind,
  references that do not fit the sentences, weights that name no feature, an output path that cannot
  be written (checked before any input is read);
* 2 -- a bad command line (argparse's own errors, options that do not fit together);
* 130 -- interrupted (SIGINT, Ctrl-C), 143 -- terminated (SIGTERM): one line on stderr, no traceback;
* 141 -- standard output closed early (``| head``), quietly, as Unix tools do.

Library errors (:class:`hypertune.errors.HypertuneError`) become one line on stderr; warnings
(:class:`hypertune.errors.HypertuneWarning`) one line each. Nothing else is caught, so real bugs still
show a traceback.

Signals: :func:`main` installs :mod:`hypertune.interrupts`' handler for SIGINT and SIGTERM. A tuning command
runs its tuner inside :func:`hypertune.cli.tuning.interruptible`, where a signal is held until the tuner's
next safe point (between compiled kernel calls), so that it never surfaces inside a compiled function as
``SystemError``; the best weights the tuner reported so far are then written beside the output
(``OUT.interrupted``, or printed on stdout without ``--out``) and the one line names them. Elsewhere a signal
stops the command at once; one that Python raised inside a compiled function's dispatcher anyway (the
``SystemError`` numba makes of it) is recognised and reported the same way.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import warnings
from collections.abc import Sequence

from hypertune import __version__, interrupts
from hypertune.errors import HypertuneError, HypertuneWarning, UsageError

#: Command modules (``<name>_command``) in the order ``hypertune --help`` lists them, with the summary it shows.
COMMANDS = {
    "inspect": "count nodes, edges, derivations and features of graphs",
    "decode": "best (or k best) derivations of graphs under weights",
    "rerank": "each sentence's best hypothesis under weights, as plain text (or JSON/JSONL with its scores)",
    "mbr": "minimum Bayes risk decoding of k-best lists, samples (BLEU+1, chrF, TER, COMET), lattices, forests",
    "inside": "inside/outside values of every node in any semiring, with the computation written out",
    "convert": "convert graphs (or weights) between formats",
    "draw": "draw a graph (Graphviz DOT; SVG/PNG with dot): best derivation, posteriors, node scores",
    "bleu": "BLEU of a hypothesis file against references (sacrebleu-compatible)",
    "compare": "compare systems: scores with bootstrap intervals, significance against the first, over runs",
    "mert": "minimum error rate training (exact line search on k-best lists, lattices, forests)",
    "linesearch": "one exact line search along a direction (envelopes, segments, best step)",
    "mira": "tune weights with batch MIRA (hope/fear; Moses kbmira)",
    "hope_fear": "hope, fear and model-best translations (for MIRA)",
    "minrisk": "minimum risk / expected BLEU training (L-BFGS over k-best lists, lattices, forests)",
    "train": "tune with a loss over k-best candidates (PRO, Plackett-Luce, ranking, MSE, softmax) and L-BFGS",
    "pro": "PRO, pairwise ranking optimization (Hopkins & May 2011; Moses pro)",
    "tune": "the tuning loop: decode, accumulate, tune, repeat; resumable, with the spread over several runs",
    "oracle": "BLEU oracles of k-best lists, lattices and forests (exact or approximate; corpus oracle)",
    "generate": "write seeded synthetic forests, lattices or k-best lists",
    "bench": "time the engine and metrics on this machine",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line. With ``only`` (a command name, or ``""`` for none), every other command is
    registered by name and summary alone, so its module (and what it imports: numpy, scipy, numba) is
    not loaded: ``hypertune --version`` and ``--help`` start fast, and a command loads only itself."""
    parser = argparse.ArgumentParser(
        prog="hypertune",
        description="Tune SMT weights on k-best lists, lattices and hypergraphs.",
        epilog="Run 'hypertune COMMAND --help' for the options and an example of each command.",
    )
    parser.add_argument("--version", action="version", version=f"hypertune {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, summary in COMMANDS.items():
        command = name.replace("_", "-")
        if only is None or command == only:
            importlib.import_module(f"hypertune.cli.{name}_command").register(subparsers)
        else:
            subparsers.add_parser(command, help=summary)
    for command, summary in _registered_tuners().items():  # a tuner of the registry with no command module
        if only is None or command == only:
            importlib.import_module("hypertune.cli.tuner_command").register(subparsers, command)
        else:
            subparsers.add_parser(command, help=summary)
    return parser


def _registered_tuners() -> dict[str, str]:
    """The registry's tuning commands that have no module here, with their summaries."""
    from hypertune.tuners.registry import TUNERS

    return {
        entry.command_name: entry.summary or entry.name
        for entry in TUNERS.values()
        if entry.command_name.replace("-", "_") not in COMMANDS
    }


def command() -> int:
    """The ``hypertune`` command (and ``python -m hypertune``): :func:`main` with OpenBLAS on one thread unless
    the environment says otherwise (:mod:`hypertune.process_environment`)."""
    from hypertune.process_environment import use_one_blas_thread

    use_one_blas_thread()
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    names = {name.replace("_", "-") for name in COMMANDS} | set(_registered_tuners())
    parser = build_parser(next((word for word in argv if word in names), ""))
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return 2
    name = f"hypertune {args.command}"
    with interrupts.installed():
        return _run(args, name)


def _run(args: argparse.Namespace, name: str) -> int:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", HypertuneWarning)  # each is issued once per run
            warnings.showwarning = _one_line_warning(name)
            from hypertune.cli.common import check_outputs

            check_outputs(args)
            code = int(args.run(args) or 0)
            sys.stdout.flush()
            return code
    except UsageError as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        return 2
    except HypertuneError as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return _closed_stdout()
    except OSError as error:
        print(f"{name}: error: {error.filename or ''}: {error.strerror or error}", file=sys.stderr)
        return 1
    except MemoryError:  # a size the machine cannot hold (--kbest 10**15, a graph's n-gram split): one line
        print(f"{name}: error: out of memory; ask for less (fewer derivations, samples or edges)", file=sys.stderr)
        return 1
    except KeyboardInterrupt as error:
        return _interrupted(name, interrupts.as_interrupt(error) or interrupts.Interrupted())
    except SystemError as error:  # a signal Python raised inside a compiled function's dispatcher
        stop = interrupts.as_interrupt(error)
        if stop is None:
            raise
        return _interrupted(name, stop)


def _interrupted(name: str, stop: interrupts.Interrupted) -> int:
    """The one line of an interrupted run (on a fresh line: a progress line may be drawn); 128 + the signal."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    if sys.stderr.isatty():
        sys.stderr.write("\r\x1b[K")
    print(f"{name}: {stop.message}", file=sys.stderr)
    return stop.exit_code


def _one_line_warning(name: str):
    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, HypertuneWarning):
            print(f"{name}: warning: {message}", file=sys.stderr)
        else:
            print(f"{name}: warning: {category.__name__}: {message}", file=sys.stderr)

    return show


def _closed_stdout() -> int:
    """The reader of our standard output went away (``| head``): stop quietly, as Unix tools do."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush must not fail again
    except (OSError, ValueError):
        pass
    return 141


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
