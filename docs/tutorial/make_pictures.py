"""Draw every picture the tutorials declare, and record what each was drawn from in images/MANIFEST.

A chapter declares a picture by a comment on the line right before its image link (paths from the
repository root; the command writes exactly the file the link names)::

    <!-- picture: hypertune draw docs/tutorial/data/X.json --renderer builtin -o docs/tutorial/images/01-x.svg -->
    ![what it shows](images/01-x.svg)

or ``<!-- picture: python docs/tutorial/pictures/NN_name.py docs/tutorial/images/NN-x.svg -->`` for a
picture drawn by a script. Each command runs from the repository root in a fresh interpreter (this one:
the virtual environment's), with ``SOURCE_DATE_EPOCH`` and matplotlib's ``svg.hashsalt`` fixed so that the
same inputs give the same bytes. MANIFEST holds, per picture, a sha256 of its inputs, not of its pixels:
the command line, every existing file the command names (a script: also the files its string constants
name), and the hypertune code that draws (``DRAWING_CODE``). tests/docs/test_tutorial_pictures.py
recomputes the hashes, so a picture whose inputs changed since it was drawn fails the tests.

    python docs/tutorial/make_pictures.py            # draw them all, rewrite MANIFEST
    python docs/tutorial/make_pictures.py --stale    # draw only the missing or stale ones
    python docs/tutorial/make_pictures.py --check    # list the missing or stale ones (exit 1), draw nothing
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TUTORIAL = Path("docs/tutorial")
MANIFEST = TUTORIAL / "images" / "MANIFEST"
PICTURE = re.compile(r"^<!--\s*picture:\s*(.*?)\s*-->\s*$")
IMAGE_LINK = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
HEADER = (
    "# Written by docs/tutorial/make_pictures.py: each picture, and a sha256 of what it is drawn from\n"
    "# (its command line, the files the command names, the hypertune drawing code), not of its pixels.\n"
)


@dataclass(frozen=True)
class Picture:
    """One declared picture: where it is declared, its command, and the file it writes (all from the root)."""

    page: Path
    line: int  # 1-based line of the comment
    command: str
    output: Path | None  # None: no image link on the next line
    link: str | None  # the image link's target, as written

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def declared(root: Path = REPO) -> list[Picture]:
    """Every ``<!-- picture: ... -->`` of docs/tutorial/*.md, in page and line order."""
    found = []
    for page in sorted((root / TUTORIAL).glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        fenced = False
        for i, line in enumerate(lines):
            fenced ^= line.lstrip().startswith("```")
            match = PICTURE.match(line.strip())
            if fenced or not match:  # (a comment shown in a code block declares nothing)
                continue
            link_match = IMAGE_LINK.search(lines[i + 1]) if i + 1 < len(lines) else None
            link = link_match.group(1) if link_match else None
            output = Path(os.path.normpath(TUTORIAL / link)) if link else None
            found.append(Picture(page.relative_to(root), i + 1, match.group(1), output, link))
    return found


def problems(picture: Picture) -> list[str]:
    """What is wrong with a declaration itself (before anything is drawn)."""
    if picture.link is None:
        return [f"{picture.where}: the line after a picture comment must be its image link ![...](images/...)"]
    assert picture.output is not None
    words = command_words(picture.command)
    if not words or words[0] not in ("hypertune", "python"):
        return [
            f"{picture.where}: a picture's command is `hypertune ...` or `python FILE OUT`, not {picture.command!r}"
        ]
    if picture.output.as_posix() not in mentioned(words):
        return [f"{picture.where}: the command does not write {picture.output} (the image link's file)"]
    return []


def command_words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return []


def mentioned(words: list[str]) -> list[str]:
    """Every word of a command that may be a path: the words, and the values of ``--option=value``."""
    out = []
    for word in words[1:]:
        out.append(word)
        if word.startswith("-") and "=" in word:
            out.append(word.split("=", 1)[1])
    return [os.path.normpath(w) if w else w for w in out]


def named_files(words: list[str], root: Path) -> list[Path]:
    """The existing files a command names (from ``root``): files, every file under a named folder, and the
    files a prefix names (``--refs data/ref.`` for ``ref.0``, ``ref.1``, ...). A ``python`` script adds the
    files its string constants name (the data it reads)."""
    found: set[Path] = set()
    for word in mentioned(words):
        if not word or word.startswith("-"):
            continue
        path = root / word
        if path.is_file():
            found.add(path)
        elif path.is_dir():
            found.update(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        elif "/" in word and path.parent.is_dir():
            found.update(p for p in path.parent.glob(path.name + "*") if p.is_file())
    if words and words[0] == "python" and len(words) > 1 and (root / words[1]).is_file():
        found.update(script_data(root / words[1], root))
    return sorted(found)


def script_data(script: Path, root: Path) -> set[Path]:
    """The existing files (from ``root``) that a script's string constants name."""
    try:
        tree = ast.parse(script.read_text(encoding="utf-8"))
    except SyntaxError:
        return set()
    strings = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return {root / s for s in strings if 0 < len(s) < 300 and "\n" not in s and (root / s).is_file()}


def drawing_code(root: Path = REPO) -> list[Path]:
    """The hypertune modules that draw: every module with "draw" in its path, the DOT writer and the plots."""
    package = root / "hypertune"
    drawing = {p for p in package.rglob("*.py") if "draw" in p.relative_to(package).as_posix()}
    drawing |= {package / "formats" / "dot.py", package / "cli" / "plots.py"}
    return sorted(p for p in drawing if p.is_file())


def input_hash(picture: Picture, root: Path = REPO) -> str:
    """sha256 over the command line, the files it names (but pictures: its output, or others) and the drawing code."""
    words = command_words(picture.command)
    digest = hashlib.sha256()
    digest.update(("command\0" + shlex.join(words) + "\0").encode())
    drawing, images = drawing_code(root), root / MANIFEST.parent
    inputs = [p for p in named_files(words, root) if images not in p.parents and p not in drawing]  # (no picture)
    for kind, paths in (("input", inputs), ("drawing", drawing)):
        for path in paths:
            digest.update(f"{kind}\0{path.relative_to(root).as_posix()}\0".encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def read_manifest(root: Path = REPO) -> dict[str, str]:
    """MANIFEST's lines: picture path -> hash."""
    path = root / MANIFEST
    if not path.exists():
        return {}
    entries = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        words = line.split()
        if len(words) == 2 and not line.startswith("#"):  # (anything else: not a record, so its picture is stale)
            entries[words[0]] = words[1]
    return entries


def write_manifest(entries: dict[str, str], root: Path = REPO) -> None:
    lines = [f"{name}  {digest}\n" for name, digest in sorted(entries.items())]
    (root / MANIFEST).parent.mkdir(parents=True, exist_ok=True)
    (root / MANIFEST).write_text(HEADER + "".join(lines), encoding="utf-8")


def stale(pictures: list[Picture], root: Path = REPO) -> Iterator[tuple[Picture, str]]:
    """The pictures to redraw, each with why: missing, never recorded, or drawn from other inputs."""
    manifest = read_manifest(root)
    for picture in pictures:
        assert picture.output is not None
        name = picture.output.as_posix()
        if not (root / picture.output).is_file():
            yield picture, "missing"
        elif name not in manifest:
            yield picture, "not in MANIFEST"
        elif manifest[name] != input_hash(picture, root):
            yield picture, "stale (its command, input files or drawing code changed)"


def draw(picture: Picture, root: Path = REPO) -> str | None:
    """Run the picture's command from ``root`` in a fresh interpreter, made deterministic; why it failed, or None."""
    assert picture.output is not None
    words = command_words(picture.command)
    argv = [sys.executable, "-m", "hypertune", *words[1:]] if words[0] == "hypertune" else [sys.executable, *words[1:]]
    (root / picture.output).parent.mkdir(parents=True, exist_ok=True)
    (root / picture.output).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as rc_dir:
        Path(rc_dir, "matplotlibrc").write_text("svg.hashsalt: hypertune-tutorial\n", encoding="utf-8")
        env = {**os.environ, "SOURCE_DATE_EPOCH": "0", "MATPLOTLIBRC": rc_dir, "MPLBACKEND": "Agg"}
        env["PYTHONHASHSEED"] = "0"
        done = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"{picture.where}: `{picture.command}` failed:\n{done.stderr.strip()}"
    if not (root / picture.output).is_file():
        return f"{picture.where}: `{picture.command}` did not write {picture.output}"
    return None


def main(argv: list[str] | None = None, root: Path = REPO) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true", help="list missing or stale pictures (exit 1); draw nothing")
    what.add_argument("--stale", action="store_true", help="draw only the missing or stale pictures")
    args = parser.parse_args(argv)
    pictures = declared(root)
    errors = [e for p in pictures for e in problems(p)]
    outputs = [p.output for p in pictures]
    errors += [f"{p.where}: {p.output} is declared twice" for i, p in enumerate(pictures) if p.output in outputs[:i]]
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 2
    todo = list(stale(pictures, root))
    if args.check:
        for picture, why in todo:
            print(f"{picture.output}: {why} ({picture.where})")
        if todo:
            print("run python docs/tutorial/make_pictures.py", file=sys.stderr)
        return 1 if todo else 0
    chosen = [p for p, _ in todo] if args.stale else pictures
    failed = []
    for picture in chosen:
        print(f"drawing {picture.output}", file=sys.stderr)
        error = draw(picture, root)
        if error:
            print(error, file=sys.stderr)
            failed.append(picture)
    entries = {p.output.as_posix(): input_hash(p, root) for p in pictures if p.output and p not in failed}
    write_manifest(entries, root)
    print(f"{len(chosen) - len(failed)} of {len(pictures)} pictures drawn, {len(failed)} failed; {MANIFEST} written")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
