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

import ast
import builtins
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
#: The chapters, NN-name.md (the other tutorial page is answers.md, the exercises' answers).
CHAPTERS = [p for p in TUTORIALS if re.match(r"\d\d-", p.name)]
ANSWERS = REPO / "docs" / "tutorial" / "answers.md"
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
    assert listed == [p.name for p in CHAPTERS]
    assert "](answers.md)" in index
    assert os.path.exists(REPO / "README.md") and "docs/tutorial" in (REPO / "README.md").read_text(encoding="utf-8")


# The structure of the chapters and their exercises (the numbering rules are written in docs/tutorial/README.md).


def masked(text: str) -> str:
    """``text`` with its fenced blocks blanked (same length and lines), so that a ``#`` comment in code is
    never read as a heading."""
    return FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def sections(text: str, level: str) -> list[tuple[str, str]]:
    """The (title, raw text) of each heading of ``level`` (``"##"``), fenced blocks ignored when finding them."""
    starts = [(m.start(), m.group(1).strip()) for m in re.finditer(rf"^{level} (.*)$", masked(text), re.M)]
    ends = [start for start, _ in starts[1:]] + [len(text)]
    return [(title, text[start:end]) for (start, title), end in zip(starts, ends[: len(starts)], strict=True)]


def exercises(chapter: Path) -> list[int]:
    """The numbers of the exercises of a chapter: the numbered items of its last ``##`` section, Exercises."""
    found = sections(chapter.read_text(encoding="utf-8"), "##")
    assert found and found[-1][0] == "Exercises", f"{chapter.name} must end with a section `## Exercises`"
    return [int(n) for n in re.findall(r"^(\d+)\. ", masked(found[-1][1]), re.M)]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_the_chapter_ends_with_three_numbered_exercises_or_more(chapter: Path) -> None:
    numbers = exercises(chapter)
    assert numbers == list(range(1, len(numbers) + 1)), f"{chapter.name}: exercises numbered 1, 2, 3, ...: {numbers}"
    assert len(numbers) >= 3, f"{chapter.name} has {len(numbers)} exercises; at least 3"


def check_answers(chapter: Path, answers: str) -> None:
    """answers.md: under ``## Chapter N``, one ``### Exercise N.k`` per exercise k of chapter N, in order,
    each with a ```python block that asserts (its output is checked when answers.md runs as a page)."""
    n = int(chapter.name[:2])
    chapters = dict(sections(answers, "##"))
    assert f"Chapter {n}" in chapters, f"answers.md has no section `## Chapter {n}`"
    found = sections(chapters[f"Chapter {n}"], "###")
    wanted = [f"Exercise {n}.{k}" for k in exercises(chapter)]
    assert [title for title, _ in found] == wanted, f"answers.md `## Chapter {n}`: one `### Exercise {n}.k` each"
    for title, text in found:
        code = [body for language, body in FENCE.findall(text) if language == "python"]
        asserts = [node for body in code for node in ast.walk(ast.parse(body)) if isinstance(node, ast.Assert)]
        assert asserts, f"answers.md {title}: a ```python block that asserts the answer against an independent value"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_answers_md_answers_every_exercise_with_a_checked_block(chapter: Path) -> None:
    check_answers(chapter, ANSWERS.read_text(encoding="utf-8"))


def test_the_exercise_checks_on_a_scratch_chapter(tmp_path: Path) -> None:
    chapter = tmp_path / "03-scratch.md"
    code = "```python\n## not a heading\n1. not an exercise\n```\n"
    chapter.write_text(f"# 3. Scratch\n\n## Exercises\n\n1. One.\n2. Two,\n   on two lines.\n{code}3. Three.\n")
    assert exercises(chapter) == [1, 2, 3]
    answer = "### Exercise 3.{k}\n\n```python\nassert 1 + 1 == 2\nprint(2)\n```\n\n```text\n2\n```\n"
    good = "## Chapter 2\n\n## Chapter 3\n\n" + "".join(answer.format(k=k) for k in (1, 2, 3)) + "## Chapter 4\n"
    check_answers(chapter, good)
    for bad in [
        good.replace("Exercise 3.2", "Exercise 3.4"),  # misnumbered
        good.replace("### Exercise 3.3", "### Exercise 3.3\n\n## Chapter 9\n"),  # 3.3 outside chapter 3
        good.replace("assert 1 + 1 == 2\n", "", 1),  # an answer that checks nothing
        good.replace("## Chapter 3", "## Chapter three"),
    ]:
        with pytest.raises(AssertionError):
            check_answers(chapter, bad)
    chapter.write_text(chapter.read_text() + "\n## Further reading\n")
    with pytest.raises(AssertionError, match="must end with a section `## Exercises`"):
        exercises(chapter)


def free_names(source: str) -> set[str]:
    """The names a block reads but neither assigns, imports, defines nor gets from builtins (scopes ignored:
    a name bound anywhere in the block counts as its own)."""
    tree = ast.parse(source)
    loaded: set[str] = set()
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.alias):
            if node.name == "*":
                return set()  # (a star import: what it binds is unknown here)
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
    return loaded - bound - set(dir(builtins))


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_a_block_that_uses_an_earlier_blocks_names_says_it_continues(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    for match in FENCE.finditer(text):
        if match.group(1) != "python":
            continue
        body, line = match.group(2), text.count("\n", 0, match.start()) + 1
        names = free_names(body)
        assert not names or body.lstrip().startswith("# continues"), (
            f"{path.name}:{line}: the block uses {sorted(names)} from an earlier block: start it with "
            '`# continues the block above` (or `# continues "<section>"`), or import/define them in it'
        )


def test_free_names_sees_what_a_block_takes_from_earlier_ones() -> None:
    block = """
import numpy as np
from math import log as ln
import os.path

def f(x, *rest, k=1, **kw):
    return g(x) + ln(k) + len(rest) + len(kw)

class A:
    pass

total = sum(y for y in forest.edges)
try:
    pass
except ValueError as error:
    print(error, np, os, A, f, total, [z for z in weights])
"""
    assert free_names(block) == {"g", "forest", "weights"}  # (by reading the block above)
    assert free_names("from hypertune import *\nprint(anything)") == set()
