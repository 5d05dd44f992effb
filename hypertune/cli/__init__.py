"""The ``hypertune`` command line. One module per command; each has ``register(subparsers)``.

A command's ``run(args) -> int`` returns the exit code. Library errors
(:class:`hypertune.errors.HypertuneError`) become a one-line message on stderr and exit
code 1 (2 for usage errors); nothing else is caught, so real bugs still show a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from hypertune import __version__
from hypertune.errors import HypertuneError, UsageError

# Command modules, in the order ``hypertune --help`` lists them.
COMMANDS = ("inspect", "decode", "convert", "bleu", "mert", "linesearch", "mira", "hope_fear", "generate", "bench")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hypertune",
        description="Tune SMT weights on k-best lists, lattices and hypergraphs.",
        epilog="Run 'hypertune COMMAND --help' for the options and an example of each command.",
    )
    parser.add_argument("--version", action="version", version=f"hypertune {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"hypertune.cli.{name}_command").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.run(args) or 0)
    except UsageError as error:
        print(f"hypertune {args.command}: error: {error}", file=sys.stderr)
        return 2
    except HypertuneError as error:
        print(f"hypertune {args.command}: error: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"hypertune {args.command}: error: {error.filename or ''}: {error.strerror or error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("hypertune: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
