"""Every tutorial in docs/tutorial runs: each ```python block is executed (one namespace per tutorial, from
the repository root) and what it prints must equal the ```text block right after it; each ```console block's
``$ hypertune ...`` lines run through the command line and must print the lines that follow them (run times,
``1.23 s``, are the one thing compared loosely)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from pathlib import Path

import pytest
from conftest import REPO

from hypertune.cli import main

TUTORIALS = sorted(p for p in (REPO / "docs" / "tutorial").glob("*.md") if p.name != "README.md")
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


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs_and_prints_what_it_says(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    namespace: dict[str, object] = {"__name__": f"tutorial_{path.stem}"}
    found = blocks(path)
    assert found, f"{path.name} has no code"
    for i, (language, body) in enumerate(found):
        if language == "python":
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(body, f"{path.name} block {i}", "exec"), namespace)  # noqa: S102 - the tutorial's own code
            following = found[i + 1] if i + 1 < len(found) else ("", "")
            printed = out.getvalue()
            if following[0] == "text":
                assert printed.rstrip("\n").splitlines() == following[1].rstrip("\n").splitlines(), f"block {i}"
            else:
                assert not printed, f"block {i} prints output that no ```text block shows"
        elif language == "console":
            run_console(body)


def test_the_tutorials_are_listed_in_order() -> None:
    index = (REPO / "docs" / "tutorial" / "README.md").read_text(encoding="utf-8")
    listed = re.findall(r"\]\((\d\d-[\w-]+\.md)\)", index)
    assert listed == [p.name for p in TUTORIALS]
    assert os.path.exists(REPO / "README.md") and "docs/tutorial" in (REPO / "README.md").read_text(encoding="utf-8")
