"""The tutorial notebooks (docs/tutorial/notebooks/) are the chapters' current translation, and they run.

Each notebook is executed in a Jupyter kernel as a new one would run it: no names defined, in notebooks/
(where Jupyter starts it; its first cell moves to the repository root). One kernel serves all notebooks,
its namespace cleared before each, since starting one costs more than most chapters. What each cell prints
must equal the output the chapter shows under the block (the output the generator stored), as
tests/docs/test_tutorials.py checks for the Markdown. Needs nbformat, nbclient and ipykernel (the `test`
extra); skipped without them."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from support.paths import REPO

NOTEBOOKS = REPO / "docs" / "tutorial" / "notebooks"
CHAPTERS = sorted(p for p in (REPO / "docs" / "tutorial").glob("*.md") if re.match(r"\d\d-", p.name))
SECONDS = re.compile(r"\b\d+\.\d+ s\b")
FIX = "run python docs/tutorial/make_notebooks.py"


def generator() -> ModuleType:
    """docs/tutorial/make_notebooks.py, imported (skips without nbformat)."""
    pytest.importorskip("nbformat", reason="nbformat is not installed: pip install -e '.[test]'")
    spec = importlib.util.spec_from_file_location("make_notebooks", REPO / "docs" / "tutorial" / "make_notebooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def printed(cell: Any) -> str:
    """What a code cell printed (stdout), with run times blurred as in test_tutorials."""
    text = "".join(o["text"] for o in cell.get("outputs", []) if o["output_type"] == "stream" and o["name"] == "stdout")
    return SECONDS.sub("<time> s", text)


def test_the_committed_notebooks_are_the_chapters_translation() -> None:
    make = generator()
    assert [p.stem for p in sorted(NOTEBOOKS.glob("*.ipynb"))] == [p.stem for p in CHAPTERS], FIX
    for chapter in CHAPTERS:
        committed = (NOTEBOOKS / f"{chapter.stem}.ipynb").read_text(encoding="utf-8")
        assert committed == make.notebook(chapter), f"{chapter.stem}.ipynb differs from {chapter.name}: {FIX}"


def test_the_generator_check_mode_sees_a_stale_notebook(tmp_path: Path) -> None:
    make = generator()
    tutorial = tmp_path / "docs" / "tutorial"
    tutorial.mkdir(parents=True)
    chapter = "# 9. A chapter\n\nSee [the next](10-next.md) and ![a picture](images/09-a.svg).\n\n"
    chapter += '```python\nprint("hi")\n```\n\n```text\nhi\n```\n\n```console\n$ hypertune --version\n```\n'
    (tutorial / "09-a-chapter.md").write_text(chapter, encoding="utf-8")
    assert make.main(["--check"], root=tmp_path) == 1  # missing
    assert make.main([], root=tmp_path) == 0
    assert make.main(["--check"], root=tmp_path) == 0
    nb = json.loads((tutorial / "notebooks" / "09-a-chapter.ipynb").read_text(encoding="utf-8"))
    # (hand-written expectations: links seen from notebooks/, the shown output under its cell, the command
    # run in the kernel, and no execution counts)
    sources = ["".join(cell["source"]) for cell in nb["cells"]]
    assert "See [the next](10-next.ipynb) and ![a picture](../images/09-a.svg)." in sources[0]
    assert "os.chdir" in sources[1] and sources[2] == 'print("hi")'
    assert nb["cells"][2]["outputs"] == [{"name": "stdout", "output_type": "stream", "text": ["hi\n"]}]
    assert sources[3].endswith('assert hypertune.cli.main(["--version"]) == 0') and len(sources) == 4
    assert all(cell.get("execution_count") is None for cell in nb["cells"])
    (tutorial / "09-a-chapter.md").write_text(chapter.replace("hi", "ho"), encoding="utf-8")
    assert make.main(["--check"], root=tmp_path) == 1


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One Jupyter kernel for all the notebooks (started once: a start costs more than most chapters), its
    namespace cleared before each; started in notebooks/, where Jupyter starts a notebook's kernel. It runs
    this interpreter (a kernel spec of its own: not a "python3" kernel installed elsewhere)."""
    pytest.importorskip("nbclient", reason="nbclient is not installed: pip install -e '.[test]'")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed: pip install -e '.[test]'")
    from ipykernel.kernelspec import write_kernel_spec
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    specs = tmp_path_factory.mktemp("kernels")
    write_kernel_spec(str(specs / "python3"))
    manager = KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)]))
    manager.start_kernel(cwd=str(NOTEBOOKS))
    yield manager
    manager.shutdown_kernel(now=True)


def run_and_compare(path: Path, kernel: Any) -> None:
    """Execute the notebook at ``path`` as in a new kernel started in notebooks/ (no names defined), failing
    on a cell's error or on printed output other than the stored one."""
    import nbclient
    import nbformat
    from nbformat.v4 import new_code_cell

    expected = nbformat.read(path, as_version=4)
    executed = nbformat.read(path, as_version=4)
    fresh = f'get_ipython().run_line_magic("reset", "-f")\n__import__("os").chdir({str(NOTEBOOKS)!r})'
    executed.cells.insert(0, new_code_cell(fresh))
    nbclient.NotebookClient(executed, km=kernel, timeout=300).execute()  # raises CellExecutionError on an error
    for i, (want, got) in enumerate(zip(expected.cells, executed.cells[1:], strict=True)):
        if want.cell_type == "code":
            assert printed(got) == printed(want), f"{path.name} cell {i}:\n{want.source}"


@pytest.mark.slow
@pytest.mark.parametrize("chapter", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_the_notebook_runs_and_prints_what_the_chapter_shows(chapter: Path, kernel: Any) -> None:
    path = NOTEBOOKS / f"{chapter.stem}.ipynb"
    assert path.exists(), FIX
    run_and_compare(path, kernel)


@pytest.mark.slow
def test_a_notebook_fails_on_other_output_or_a_name_of_an_earlier_notebook(tmp_path: Path, kernel: Any) -> None:
    import nbclient

    make = generator()
    tutorial = tmp_path / "docs" / "tutorial"
    tutorial.mkdir(parents=True)
    pages = {
        "01-a.md": "```python\nleft_over = 6 * 7\nprint(left_over)\n```\n\n```text\n42\n```\n",  # runs
        "02-b.md": "```python\nprint(6 * 7)\n```\n\n```text\n41\n```\n",  # prints another number
        "03-c.md": "```python\nprint(left_over)\n```\n\n```text\n42\n```\n",  # 01's name: undefined
    }
    for name, text in pages.items():
        (tutorial / name).write_text(f"# {name}\n\n{text}", encoding="utf-8")
    assert make.main([], root=tmp_path) == 0
    notebooks = tutorial / "notebooks"
    run_and_compare(notebooks / "01-a.ipynb", kernel)
    with pytest.raises(AssertionError, match="02-b.ipynb cell"):
        run_and_compare(notebooks / "02-b.ipynb", kernel)
    with pytest.raises(nbclient.exceptions.CellExecutionError, match="NameError"):
        run_and_compare(notebooks / "03-c.ipynb", kernel)
