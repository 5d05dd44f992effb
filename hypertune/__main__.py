"""``python -m hypertune``: the same as the ``hypertune`` command."""

import sys

from hypertune.cli import command

sys.exit(command())
