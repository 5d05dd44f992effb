"""Make each tutorial chapter docs/tutorial/NN-name.md a Jupyter notebook docs/tutorial/notebooks/NN-name.ipynb.

The Markdown is the source; the notebooks are generated, never edited by hand. A chapter becomes:

- prose -> markdown cells (picture comments dropped; relative links rewritten for notebooks/: a chapter's
  NN-name.md becomes its notebook, anything else gets ``../``);
- a ```python block -> a code cell; the ```text block right after it -> that cell's output (stdout), so the
  notebook shows what the chapter shows before it is run;
- each ``$ hypertune ...`` line of a ```console block -> a code cell running ``hypertune.cli.main([...])``
  in the kernel (no shell needed), with the lines after it as its output;
- other blocks (```text on its own, ```sh, ...) stay in the markdown.

A first code cell moves the kernel to the repository root, where the chapter's paths start. The output is
deterministic (no execution counts, timestamps or random cell ids). tests/docs/test_tutorial_notebooks.py
checks that the committed notebooks equal a fresh generation, and runs them.

    python docs/tutorial/make_notebooks.py           # write the notebooks
    python docs/tutorial/make_notebooks.py --check   # list the out-of-date ones (exit 1), write nothing
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shlex
import sys
from pathlib import Path
from typing import Any

try:
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
except ImportError:  # (a message, not a traceback)
    sys.exit("make_notebooks.py needs nbformat: .venv/bin/pip install -e '.[test]' (or '.[notebooks]')")

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = Path("docs/tutorial")
NOTEBOOKS = TUTORIAL / "notebooks"
CHAPTER = re.compile(r"^\d\d-[\w-]+\.md$")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*\n?", re.S | re.M)  # as tests/docs/test_tutorials.py reads them
PICTURE = re.compile(r"^<!--\s*picture:.*?-->[ \t]*\n", re.M)
LINK = re.compile(r"(\]\(|^\[[^\]]+\]:[ \t]*)([^)\s]+)", re.M)
SETUP = """\
# Generated from docs/tutorial/{name} by docs/tutorial/make_notebooks.py (edit the Markdown, not this).
# The chapter's paths start at the repository root: this cell moves there (Jupyter starts in notebooks/).
import os
from pathlib import Path

while not Path("docs/tutorial").is_dir() and Path.cwd() != Path.cwd().parent:
    os.chdir("..")"""


def chapters(root: Path = REPO) -> list[Path]:
    """The chapters, NN-name.md, in order."""
    return sorted(p for p in (root / TUTORIAL).glob("*.md") if CHAPTER.match(p.name))


def relink(target: str) -> str:
    """A link target of a chapter, as seen from notebooks/."""
    if re.match(r"^([a-z][a-z0-9+.-]*:|#|/)", target, re.I):
        return target
    chapter = re.match(r"^(\d\d-[\w-]+)\.md(#.*)?$", target)
    if chapter:
        return f"{chapter.group(1)}.ipynb{chapter.group(2) or ''}"
    return "../" + target


def prose(text: str) -> str:
    """A markdown cell's source: picture comments dropped, links rewritten, outer blank lines trimmed."""
    text = PICTURE.sub("", text)
    text = LINK.sub(lambda m: m.group(1) + relink(m.group(2)), text)
    return text.strip("\n")


def console_cells(body: str) -> list[Any]:
    """One code cell per ``$ hypertune ...`` line, its output the lines that follow it."""
    cells = []
    for chunk in re.split(r"^(?=\$ )", body, flags=re.M):
        if not chunk.startswith("$ "):
            continue  # (text before the first command: none in the tutorials)
        command, _, printed = chunk.partition("\n")
        words = shlex.split(command[2:])
        call = f"assert hypertune.cli.main({json.dumps(words[1:], ensure_ascii=False)}) == 0"
        source = f"# {command}\nimport hypertune.cli\n\n{call}"
        cells.append(with_output(new_code_cell(source), printed))
    return cells


def with_output(cell: Any, printed: str) -> Any:
    if printed.strip("\n"):
        cell.outputs = [new_output("stream", name="stdout", text=printed.rstrip("\n") + "\n")]
    return cell


def cells_of(markdown: str, name: str) -> list[Any]:
    """The notebook cells of one chapter's Markdown (see the module docstring)."""
    cells: list[Any] = []
    pending = ""  # prose not yet in a cell

    def flush() -> None:
        nonlocal pending
        if prose(pending):
            cells.append(new_markdown_cell(prose(pending)))
        pending = ""

    position, after_code = 0, False
    for match in FENCE.finditer(markdown):
        gap, position = markdown[position : match.start()], match.end()
        language, body = match.group(1), match.group(2)
        if language == "text" and after_code and not gap.strip():
            with_output(cells[-1], body)
            after_code = False
            continue
        pending += gap
        after_code = language == "python"
        if language == "python" or (language == "console" and "\n$ hypertune" in "\n" + body):
            flush()
            if not any(c.cell_type == "code" for c in cells):
                cells.append(new_code_cell(SETUP.format(name=name)))
            cells.extend([new_code_cell(body.rstrip("\n"))] if after_code else console_cells(body))
        else:
            pending += match.group(0)
    pending += markdown[position:]
    flush()
    for i, cell in enumerate(cells):  # ids from the content (a new cell does not renumber the others)
        digest = hashlib.sha256(cell.source.encode()).hexdigest()[:8]
        cell.id = f"{digest}-{sum(1 for c in cells[:i] if c.source == cell.source)}"
    return cells


def notebook(chapter: Path) -> str:
    """The notebook of a chapter, as the text to write."""
    nb = new_notebook(cells=cells_of(chapter.read_text(encoding="utf-8"), chapter.name))
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    nbformat.validate(nb)
    return str(nbformat.writes(nb)) + "\n"


def target(chapter: Path, root: Path = REPO) -> Path:
    return root / NOTEBOOKS / (chapter.stem + ".ipynb")


def main(argv: list[str] | None = None, root: Path = REPO) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="list notebooks that differ from their chapter (exit 1)")
    args = parser.parse_args(argv)
    wanted = {target(c, root): notebook(c) for c in chapters(root)}
    existing = set((root / NOTEBOOKS).glob("*.ipynb"))
    differ = [p for p, text in wanted.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    extra = sorted(existing - set(wanted))
    if args.check:
        for path in differ:
            print(f"{path.relative_to(root)}: out of date with its chapter")
        for path in extra:
            print(f"{path.relative_to(root)}: no chapter makes it")
        if differ or extra:
            print("run python docs/tutorial/make_notebooks.py", file=sys.stderr)
        return 1 if differ or extra else 0
    (root / NOTEBOOKS).mkdir(parents=True, exist_ok=True)
    for path in differ:
        path.write_text(wanted[path], encoding="utf-8")
    for path in extra:
        path.unlink()
    print(f"{len(differ)} of {len(wanted)} notebooks written, {len(extra)} removed", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
