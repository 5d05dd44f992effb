"""Every ```python block in docs/ and CONTRIBUTING.md runs, and every tutorial in docs/tutorial runs as printed.

One rule for all pages: a page's ```python blocks run in order in one namespace (a later block may use what
an earlier one defined, as a reader who pastes them in order would), from the repository root, and what a
block prints must equal the ```text block right after it. In the tutorials every printed line must be shown
so (a block that prints with no ```text block after it fails), and each ```console block's
``$ hypertune ...`` lines run through the command line and must print the lines that follow them (run times,
``1.23 s``, are the one thing compared loosely). In the other pages of docs/ a block may print without a
```text block (e.g. tuned weights, whose digits the page does not promise); their ```console examples name
files that are not in the repository, so they are not run."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from pathlib import Path

import pytest
from support.paths import REPO

from hypertune.cli import main

TUTORIALS = sorted(p for p in (REPO / "docs" / "tutorial").glob("*.md") if p.name != "README.md")
#: The reference pages of docs/, and CONTRIBUTING.md (its recipes), that hold Python code.
PAGES = sorted(
    p for p in [*(REPO / "docs").glob("*.md"), REPO / "CONTRIBUTING.md"] if "```python" in p.read_text(encoding="utf-8")
)
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
SECONDS = re.compile(r"\b\d+\.\d+ s\b")


def timeless(lines: list[str]) -> list[str]:
    return [SECONDS.sub("<time> s", line) for line in lines]


def blocks(path: Path) -> list[tuple[str, str]]:
    """The fenced blocks of a Markdown file in order: (language, body)."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(path.read_text(encoding="utf-8"))]


def run_console(body: str) -> None:
    """``$ hypertune ...`` lines, each followed by the lines it must print (stdout only)."""
    commands: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
    for command, expected in commands:
        words = shlex.split(command)
        assert words[0] == "hypertune", f"a tutorial runs hypertune commands only: {command}"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(words[1:])
        assert code == 0, command
        assert timeless(out.getvalue().rstrip("\n").splitlines()) == timeless(expected), command


def run_page(path: Path, tutorial: bool) -> None:
    """Run the page's blocks in order (see the module docstring): Python blocks in one namespace, their
    output against the ```text block after them; with ``tutorial``, console blocks too, and no output unshown."""
    namespace: dict[str, object] = {"__name__": f"docs_{path.stem.replace('-', '_')}"}
    found = blocks(path)
    assert found, f"{path.name} has no code"
    for i, (language, body) in enumerate(found):
        if language == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(body, f"{path.name} block {i}", "exec"), namespace)  # the page's own code
            following = found[i + 1] if i + 1 < len(found) else ("", "")
            printed = out.getvalue()
            if following[0] == "text":
                assert printed.rstrip("\n").splitlines() == following[1].rstrip("\n").splitlines(), f"block {i}"
            elif tutorial:
                assert not printed, f"block {i} prints output that no ```text block shows"
        elif language == "console" and tutorial:
            run_console(body)


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs_and_prints_what_it_says(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    run_page(path, tutorial=True)


@pytest.mark.parametrize("path", PAGES, ids=[p.stem for p in PAGES])
def test_every_python_block_of_the_docs_runs(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    run_page(path, tutorial=False)


def test_the_docs_pages_with_code_are_found() -> None:
    assert {p.name for p in PAGES} >= {"hypergraph.md", "semirings.md", "mert.md", "mira.md"}


def test_the_tutorials_are_listed_in_order() -> None:
    index = (REPO / "docs" / "tutorial" / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"\]\((\d\d-[\w-]+\.md)\)", index)
    assert listed == [p.name for p in TUTORIALS]
    assert os.path.exists(REPO / "README.md") and "docs/tutorial" in (REPO / "README.md").read_text(encoding="utf-8")
