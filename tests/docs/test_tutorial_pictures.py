"""The tutorials' pictures exist, are shown where declared, and were drawn from their current inputs.

A picture is declared by ``<!-- picture: COMMAND -->`` on the line before its image link
(docs/tutorial/make_pictures.py). The check hashes the inputs (command, files it names, hypertune's drawing
code) and compares with images/MANIFEST, written when the pictures were drawn: nothing is drawn here."""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
from support.paths import REPO

TUTORIAL = REPO / "docs" / "tutorial"
FIX = "run python docs/tutorial/make_pictures.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_pictures", TUTORIAL / "make_pictures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


make = load()
PICTURES = make.declared()


def test_every_declaration_is_well_formed() -> None:
    assert [e for p in PICTURES for e in make.problems(p)] == []


@pytest.mark.parametrize("picture", PICTURES, ids=[str(p.output) for p in PICTURES])
def test_the_picture_exists_and_was_drawn_from_its_current_inputs(picture: object) -> None:
    stale = {p.output: why for p, why in make.stale([picture])}
    assert not stale, f"{picture.output}: {stale[picture.output]} ({picture.where}): {FIX}"  # type: ignore[attr-defined]


def test_every_tutorial_image_is_declared_and_every_declared_one_is_recorded() -> None:
    declared = {p.output.as_posix() for p in PICTURES}
    images = TUTORIAL / "images"
    on_disk = {f"docs/tutorial/images/{p.name}" for p in images.glob("*") if p.is_file() and p.name != "MANIFEST"}
    assert on_disk <= declared, f"images nothing declares (remove them, or declare them): {sorted(on_disk - declared)}"
    linked = set()
    for page in TUTORIAL.glob("*.md"):
        prose = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)  # (not examples)
        for target in re.findall(r"!\[[^\]]*\]\((images/[^)\s]+)\)", prose):
            linked.add(f"docs/tutorial/{target}")
    assert linked <= declared, f"image links without a <!-- picture: ... --> comment: {sorted(linked - declared)}"
    assert set(make.read_manifest()) == declared, FIX


def test_the_hash_follows_each_input_and_check_mode_lists_stale_pictures(tmp_path: Path) -> None:
    """On a scratch copy: a picture drawn by a script; changing the script, its data, the command line or
    the drawing code makes it stale, and ``--check`` says so without drawing."""
    tutorial = tmp_path / "docs" / "tutorial"
    (tutorial / "pictures").mkdir(parents=True)
    (tutorial / "data").mkdir()
    (tmp_path / "hypertune" / "cli").mkdir(parents=True)
    (tmp_path / "hypertune" / "cli" / "plots.py").write_text("# plots\n")
    (tutorial / "data" / "n.txt").write_text("3\n")
    script = tutorial / "pictures" / "p.py"
    script.write_text(
        "import sys\nfrom pathlib import Path\n"
        'n = Path("docs/tutorial/data/n.txt").read_text()\n'
        'Path(sys.argv[1]).write_text(f"<svg>{n}</svg>")\n'
    )
    command = "python docs/tutorial/pictures/p.py docs/tutorial/images/01-p.svg"
    page = tutorial / "01-a.md"
    page.write_text(f"# 1. A\n\n<!-- picture: {command} -->\n![p](images/01-p.svg)\n")
    (tutorial / "images").mkdir()
    assert make.main(["--check"], root=tmp_path) == 1  # missing
    assert make.main([], root=tmp_path) == 0
    assert (tutorial / "images" / "01-p.svg").read_text() == "<svg>3\n</svg>"
    assert make.main(["--check"], root=tmp_path) == 0
    first = make.read_manifest(tmp_path)["docs/tutorial/images/01-p.svg"]
    copy = tmp_path.parent / (tmp_path.name + "-copy")
    shutil.copytree(tmp_path, copy)
    assert make.input_hash(make.declared(copy)[0], copy) == first  # nothing depends on where the tree is
    assert make.main(["--check"], root=copy) == 0
    for path, change in [
        (tutorial / "data" / "n.txt", "4\n"),  # data the script reads
        (script, script.read_text() + "# edited\n"),  # the script
        (tmp_path / "hypertune" / "cli" / "plots.py", "# plots, edited\n"),  # the drawing code
        (page, page.read_text().replace("01-p.svg -->", "01-p.svg  -->").replace("p.py", "p.py ")),  # spaces only
    ]:
        before = path.read_text()
        path.write_text(change)
        stale = path != page
        assert make.main(["--check"], root=tmp_path) == int(stale), path
        path.write_text(before)
    page.write_text(page.read_text().replace("![p]", "text\n![p]"))
    assert make.main(["--check"], root=tmp_path) == 2  # the link is not on the next line
