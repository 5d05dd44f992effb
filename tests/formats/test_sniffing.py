"""Sniffing a file imports no reader: the built-in formats' sniffers live in ``formats/sniffing.py`` (issue 33)."""

from __future__ import annotations

import subprocess
import sys

from hypertune.formats import FORMATS
from hypertune.formats.registry import BUILTIN
from hypertune.formats.sniffing import SNIFFERS


def run(code: str) -> list[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()


def test_each_builtin_format_registers_the_sniffer_the_registry_tries_first():
    assert list(SNIFFERS) == list(BUILTIN)
    for name in BUILTIN:
        assert FORMATS[name].sniff is SNIFFERS[name], name


def test_detecting_an_nbest_list_imports_no_other_reader(shared):
    # eight formats are sniffed before moses-nbest; only the binary cache's reader is looked at (by its bytes)
    out = run(
        "import sys\nfrom hypertune.formats import detect_format\nfrom hypertune.formats.registry import BUILTIN\n"
        f"print(detect_format({str(shared / 'moses' / 'scorer-data' / 'nbest.out.gz')!r}).name)\n"
        "print(*sorted(m for m in set(BUILTIN.values()) if 'hypertune.formats.' + m in sys.modules))"
    )
    assert out == ["moses-nbest", "cache", "nbest"]


def test_a_format_registered_under_a_builtin_name_is_sniffed_with_its_own_sniffer(tmp_path):
    path = tmp_path / "list.txt"
    path.write_text("0 ||| a b ||| tm= -1 ||| -1\n0 ||| a c ||| tm= -2 ||| -2\n")  # a Moses n-best list
    out = run(
        "from hypertune.formats import GraphFormat, detect_format, register\n"
        "register(GraphFormat('jsonl', 'mine', lambda head: head.startswith('0 |||'), lambda *a: []))\n"
        f"print(detect_format({str(path)!r}).description)"
    )
    assert out == ["mine"]  # the built-in jsonl sniffer would not take it; moses-nbest would, after it
