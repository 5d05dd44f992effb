"""The formats' registry imports a reader's module only when its format is looked up (issue 33)."""

from __future__ import annotations

import subprocess
import sys

from hypertune import choices
from hypertune.formats import FORMATS
from hypertune.formats.registry import BINARY, BUILTIN


def run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_importing_the_package_imports_no_reader_and_names_every_format_in_sniffing_order():
    out = run(
        "import sys, hypertune.formats as f\n"
        "print(sorted(n for n in f.registry.BUILTIN.values() if 'hypertune.formats.' + n in sys.modules))\n"
        "print(','.join(f.FORMATS))\n"
        "print(f.plf.__name__, 'hypertune.formats.plf' in sys.modules, f.FORMATS['plf'].name)"
    )
    imported, names, plf = out.splitlines()
    assert imported == "[]"
    # the order of the modules' registrations before the registry was lazy (jsonl before cdec-json)
    assert names.split(",") == [
        "hypertune-cache", "jsonl", "cdec-json", "moses-extractor", "htk-slf", "hypertune", "moses-hypergraph",
        "moses-searchgraph", "moses-nbest", "zmert", "openfst", "plf",
    ]  # fmt: skip
    assert plf == "hypertune.formats.plf True plf"


def test_every_builtin_format_is_registered_by_its_module_and_only_binary_ones_sniff_bytes():
    assert sorted(FORMATS) == sorted(choices.GRAPH_FORMATS)
    for name, module in BUILTIN.items():
        fmt = FORMATS[name]
        assert fmt.name == name
        assert fmt.read.__module__ == f"hypertune.formats.{module}"
        assert (fmt.sniff_bytes is not None) == (name in BINARY), name


def test_detecting_an_nbest_list_does_not_import_the_formats_sniffed_after_it(shared):
    out = run(
        "import sys\nfrom hypertune.formats import detect_format\n"
        f"print(detect_format({str(shared / 'moses' / 'scorer-data' / 'nbest.out.gz')!r}).name)\n"
        "print('hypertune.formats.plf' in sys.modules, 'hypertune.formats.openfst' in sys.modules)"
    )
    assert out.splitlines() == ["moses-nbest", "False False"]


def test_a_format_registered_under_a_builtin_name_stays_when_the_builtin_module_loads_later():
    out = run(
        "from hypertune.formats import FORMATS, GraphFormat, register\n"
        "mine = GraphFormat('moses-nbest', 'mine', lambda head: False, lambda *a, **k: None)\n"
        "register(mine)\n"
        "FORMATS['zmert']  # imports the n-best module, which registers moses-nbest too\n"
        "print(FORMATS['moses-nbest'].description, list(FORMATS).index('moses-nbest'))\n"
        "other = GraphFormat('other', 'other', lambda head: False, lambda *a, **k: None)\n"
        "register(other, before='plf')\n"
        "register(other)  # again, without before: keeps its place, as a dict would\n"
        "FORMATS['other'] = other\n"
        "print(list(FORMATS)[-2:])\n"
        "del FORMATS['other']\n"
        "print('other' in FORMATS)"
    )
    assert out.splitlines() == ["mine 8", "['other', 'plf']", "False"]
