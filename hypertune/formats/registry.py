"""One registry of graph formats: each format module registers a reader (and maybe a writer) and a sniffer.

``read_graphs`` picks the format the user names, or the first whose sniffer recognises the file's
beginning; a directory reads as a corpus of per-sentence files in sentence-id order. All graphs of one
call share a :class:`FeatureSpace` and a :class:`Vocabulary`.

Sentence ids of per-sentence files come from their names (one rule, here, for every reader and for the
cluster's shard-local loading): a file holding exactly one graph that carries no id of its own (a cdec
forest, a hypertune JSON graph, a PLF file of one lattice, an OpenFst or SLF lattice, a Moses hypergraph)
is the sentence its name numbers, :func:`sentence_number` (the trailing digits of the name without its
extensions: ``f10.json.gz`` is 10, ``0.gz`` is 0). Ids written in a file (n-best ids, FEATSTAT, Moses search
graphs, an SLF ``UTTERANCE``, a hypertune JSON ``"sentence_id"``) win; the graphs of a file holding several
and no ids, and a file whose name carries no number, are numbered by position (command-line order, a
directory's files by name). :func:`describe_sentence_ids` says which rule gave a corpus its ids.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass

from hypertune.errors import InputError, UsageError
from hypertune.formats.io import is_empty, read_head, require_rereadable
from hypertune.formats.sniffing import SNIFFERS
from hypertune.hypergraph import Hypergraph
from hypertune.symbols import FeatureSpace, Vocabulary

Reader = Callable[[str, FeatureSpace, Vocabulary], list[Hypergraph]]
Writer = Callable[[Sequence[Hypergraph], str], None]


@dataclass(frozen=True)
class GraphFormat:
    name: str
    description: str
    sniff: Callable[[str], bool]
    read: Reader
    write: Writer | None = None
    sniff_bytes: Callable[[bytes], bool] | None = None  # for binary formats (checked before the text sniffers)

    def read_file(self, path: str, feature_space: FeatureSpace, vocabulary: Vocabulary) -> list[Hypergraph]:
        """The graphs of file ``path``, a per-sentence file numbered by its name (:func:`named_by_file`)."""
        return named_by_file(path, self.read(path, feature_space, vocabulary))


#: The built-in formats in sniffing order (the most specific sniffers first), each with the module of
#: ``hypertune.formats`` that defines and registers it. A module is imported when one of its formats is first
#: looked up, so a command that reads one format does not import every reader (and its compiled kernels).
BUILTIN: dict[str, str] = {
    "hypertune-cache": "cache",
    "jsonl": "jsonl",  # before cdec-json, whose sniffer takes any object whose first key is "features"
    "cdec-json": "cdec_json",
    "moses-extractor": "extractor",
    "htk-slf": "htk_slf",
    "hypertune": "hypertune_json",
    "moses-hypergraph": "moses_hypergraph",
    "moses-searchgraph": "moses_searchgraph",  # only lines 'id hyp=N stack=N': no clash with other formats
    "moses-nbest": "nbest",
    "zmert": "nbest",
    "openfst": "openfst",
    "plf": "plf",
}
#: The built-in formats that sniff raw bytes (``sniff_bytes``), checked before every text sniffer.
BINARY = frozenset({"hypertune-cache"})


class FormatRegistry(MutableMapping[str, GraphFormat]):
    """The graph formats by name, in sniffing order: the built-in ones (:data:`BUILTIN`, their names known
    before their modules are imported) and those given to :func:`register`. Looking a format up (``[]``,
    ``get``, ``values``, ``items``) imports its module; listing names (``in``, iteration, ``len``) does not.
    A format registered under a built-in name replaces the built-in one for good (its module is imported
    first, so that importing it later cannot put the built-in back)."""

    def __init__(self) -> None:
        self._order: list[str] = list(BUILTIN)
        self._formats: dict[str, GraphFormat] = {}

    def __getitem__(self, name: str) -> GraphFormat:
        if name not in self._formats and name in BUILTIN:
            importlib.import_module(f"hypertune.formats.{BUILTIN[name]}")  # registers it
        return self._formats[name]

    def __setitem__(self, name: str, fmt: GraphFormat) -> None:
        if name != fmt.name:
            raise UsageError(f"a graph format named {fmt.name!r} registered as {name!r}")
        self.add(fmt)

    def __delitem__(self, name: str) -> None:
        if name not in self._order:
            raise KeyError(name)
        self._order.remove(name)
        self._formats.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._order

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def loaded(self, name: str) -> bool:
        """Whether format ``name`` is held already (its module imported)."""
        return name in self._formats

    def add(self, fmt: GraphFormat, before: str | None = None) -> None:
        """Hold ``fmt``: a name held already keeps its place (a built-in one: :data:`BUILTIN`'s) unless ``before``
        is given; a new one goes last, or just before ``before``."""
        if fmt.name in BUILTIN and fmt.name not in self._formats:
            importlib.import_module(f"hypertune.formats.{BUILTIN[fmt.name]}")  # its own registration first
        self._formats[fmt.name] = fmt
        if fmt.name in BUILTIN or (before is None and fmt.name in self._order):
            return
        if fmt.name in self._order:
            self._order.remove(fmt.name)
        place = self._order.index(before) if before is not None and before in self._order else len(self._order)
        self._order.insert(place, fmt.name)


FORMATS = FormatRegistry()


def register(fmt: GraphFormat, before: str | None = None) -> GraphFormat:
    """Add ``fmt`` last in sniffing order, or just before the format named ``before`` (whose sniffer would
    take its files); a built-in format (:data:`BUILTIN`) keeps its place."""
    FORMATS.add(fmt, before)
    return fmt


def detect_format(path: str) -> GraphFormat:
    """The format whose sniffer recognises the file, or an :class:`InputError` listing the formats."""
    with open(path, "rb") as raw:
        magic = raw.read(64)
    for name in FORMATS:  # a built-in format outside BINARY has no bytes sniffer: not imported for one
        if name in BINARY or name not in BUILTIN or FORMATS.loaded(name):
            fmt = FORMATS[name]
            if fmt.sniff_bytes is not None and fmt.sniff_bytes(magic):
                return fmt
    head = read_head(path)
    for name in FORMATS:  # in order; a built-in format's module is imported when its sniffer takes the file
        if FORMATS.loaded(name) or name not in BUILTIN:
            if FORMATS[name].sniff(head):
                return FORMATS[name]
        elif SNIFFERS[name](head):  # what its module registers, without importing its reader
            return FORMATS[name]
    if not head.strip():
        if is_empty(path):
            raise InputError("the file is empty; expected a graph, lattice or n-best list", path)
        raise InputError(f"binary data, not a known graph format (name it with --format: {', '.join(FORMATS)})", path)
    raise InputError(f"cannot tell the format; name it with --format ({', '.join(FORMATS)})", path)


def get_format(name: str) -> GraphFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise UsageError(f"unknown format {name!r}; known formats: {', '.join(FORMATS)}") from None


#: Files a corpus directory may hold besides its graphs: kbmira's hgdir keeps its weights in ``weights``.
NOT_GRAPHS = frozenset({"weights", "weights.txt", "dense.weights", "sparse.weights"})


#: A name's extensions: trailing ``.`` + a letter + letters, digits, ``_`` or ``-`` (``.json``, ``.gz``, ``.bz2``,
#: ``.moses-hg``); ``.0`` is no extension (``sent.0`` is sentence 0).
_EXTENSIONS = re.compile(r"(?:\.[A-Za-z][\w-]*)+$")
_TRAILING_DIGITS = re.compile(r"\d+$")


def sentence_number(path: str) -> int | None:
    """The sentence id a per-sentence file's name gives: the trailing digits of its base name without its
    extensions (``f10.json.gz`` is 10, ``0.gz`` and ``sent.0`` are 0, ``007.gz`` is 7), ``None`` when the name
    carries no number there (``dev.json.gz``, ``17a.gz``). The one rule of every reader, of directory order
    (:func:`corpus_files`) and of the cluster's shard-local loading."""
    stem = _EXTENSIONS.sub("", os.path.basename(path))
    match = _TRAILING_DIGITS.search(stem)
    return int(match.group()) if match else None


def named_by_file(path: str, graphs: list[Hypergraph]) -> list[Hypergraph]:
    """``graphs`` read from ``path``, numbered by the file's name when it is a per-sentence file: exactly one
    graph that carries no sentence id of its own, and a name with a number (:func:`sentence_number`).
    Otherwise as read (ids of their own, or several graphs numbered by position later)."""
    if len(graphs) != 1 or graphs[0].sentence_id is not None:
        return graphs
    number = sentence_number(path)
    return graphs if number is None else [graphs[0].annotated(sentence_id=number)]


def corpus_files(path: str) -> list[str]:
    """A file, or the files of a directory in sentence-id order: by the number in their names
    (:func:`sentence_number`), then those without one by name. Hidden files and weights files
    (:data:`NOT_GRAPHS`, e.g. an hgdir's ``weights``) are skipped."""
    if not os.path.isdir(path):
        return [path]
    names = [
        n
        for n in os.listdir(path)
        if not n.startswith(".") and n not in NOT_GRAPHS and os.path.isfile(os.path.join(path, n))
    ]

    def key(name: str) -> tuple[int, int, str]:
        number = sentence_number(name)
        return (0, number, name) if number is not None else (1, 0, name)

    return [os.path.join(path, n) for n in sorted(names, key=key)]


def read_graphs(
    paths: str | Iterable[str],
    format: str | None = None,
    feature_space: FeatureSpace | None = None,
    vocabulary: Vocabulary | None = None,
) -> list[Hypergraph]:
    """Every graph in ``paths`` (files or directories), sharing one feature space and vocabulary."""
    feature_space = FeatureSpace() if feature_space is None else feature_space
    vocabulary = Vocabulary() if vocabulary is None else vocabulary
    graphs: list[Hypergraph] = []
    for path in [paths] if isinstance(paths, str) else paths:
        if not os.path.exists(path):
            raise InputError("no such file or directory", path)
        require_rereadable(path)
        files = corpus_files(path)
        if not files:
            raise InputError(_no_graph_files(path), path)
        for file in files:
            fmt = get_format(format) if format else detect_format(file)
            graphs.extend(fmt.read_file(file, feature_space, vocabulary))
    return graphs


def _no_graph_files(folder: str) -> str:
    """Why a directory gives no graphs: it holds no files (naming the folders it holds instead, if any)."""
    inside = sorted(n for n in os.listdir(folder) if not n.startswith(".") and os.path.isdir(os.path.join(folder, n)))
    if inside:
        shown = ", ".join(inside[:3]) + (", ..." if len(inside) > 3 else "")
        return (
            f"a directory of graphs holds one file per sentence, but this one holds only folders ({shown}): give "
            "one of them"
        )
    return "a directory of graphs holds one file per sentence, but this one holds no graph file"


def read_inputs(paths: Sequence[str], format: str | None = None) -> tuple[list[Hypergraph], SentenceIds]:
    """Every graph of the inputs ``paths`` (as :func:`read_graphs`, in one feature space and vocabulary) and
    where their sentence ids come from (:func:`describe_sentence_ids`)."""
    feature_space, vocabulary = FeatureSpace(), Vocabulary()
    read = [(path, read_graphs(path, format, feature_space, vocabulary)) for path in paths]
    return [g for _, graphs in read for g in graphs], describe_sentence_ids(read)


# ---------------------------------------------------------------------- where sentence ids come from
FILE_NAMES = "file names"
FILE_CONTENTS = "file contents"
FILE_ORDER = "file order"
COMMAND_LINE_ORDER = "command line order"


@dataclass(frozen=True)
class SentenceIds:
    """Where the sentence ids of a corpus come from: ``named`` the (file, id) of every file numbered by its name,
    ``unnamed`` the files (or inputs) whose graphs are numbered by position, ``contents`` whether some graphs
    carry ids of their own. :attr:`origin` sums it up (the ``sentence_ids`` key of ``--json``)."""

    named: tuple[tuple[str, int], ...] = ()
    unnamed: tuple[str, ...] = ()
    contents: bool = False

    @property
    def origin(self) -> str:
        """``"file names"``, ``"file contents"``, ``"file order"`` (the graphs of one file, in order) or
        ``"command line order"`` (graphs of several files numbered by position: single-graph files whose
        names carry no number, in the order given), several joined by ``" + "`` in that order."""
        parts = [FILE_NAMES] if self.named else []
        parts += [FILE_CONTENTS] if self.contents else []
        if self.unnamed:
            parts.append(FILE_ORDER if len(self.unnamed) == 1 else COMMAND_LINE_ORDER)
        return " + ".join(parts) or FILE_CONTENTS

    @property
    def by_position(self) -> bool:
        """True when graphs of several files are numbered by their order on the command line."""
        return len(self.unnamed) > 1

    @property
    def note(self) -> str | None:
        """The summary line of the commands when graphs of several files are numbered by their order on the
        command line (their names carry no number), else ``None``."""
        if not self.by_position:
            return None
        shown = ", ".join(os.path.basename(f) for f in self.unnamed[:3]) + (", ..." if len(self.unnamed) > 3 else "")
        return (
            f"sentence ids: command line order ({len(self.unnamed)} files whose names carry no number: {shown}; "
            "end each name with its sentence number to number them)"
        )

    def clashes(self) -> list[tuple[int, list[str]]]:
        """``(id, files)`` for every id that two or more files of one folder take from their names (files of
        different folders with the same number are the same sentence: accumulation, e.g. one folder per
        iteration)."""
        groups: dict[tuple[str, int], list[str]] = {}
        seen: set[str] = set()  # the same file given twice is one file
        for path, number in self.named:
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                groups.setdefault((os.path.dirname(real), number), []).append(path)
        return [
            (number, files) for (_, number), files in sorted(groups.items(), key=lambda x: x[0][1]) if len(files) > 1
        ]


def describe_sentence_ids(inputs: Iterable[tuple[str, Sequence[Hypergraph]]]) -> SentenceIds:
    """Where the ids of the graphs read from each input (a path as given and its graphs, e.g. from the input
    cache) come from. A file of one graph whose id is its name's number counts as numbered by its name (an id
    of its own equal to it says the same); the files of a directory pair with its graphs when there are as
    many of each."""
    named: list[tuple[str, int]] = []
    unnamed: list[str] = []
    contents = False
    for path, graphs in inputs:
        files = corpus_files(path) if os.path.isdir(path) else [path]
        if len(files) == len(graphs):
            for file, hg in zip(files, graphs, strict=True):
                number = sentence_number(file)
                if hg.sentence_id is None:
                    unnamed.append(file)
                elif hg.sentence_id == number:
                    named.append((file, number))
                else:
                    contents = True
            continue
        if any(hg.sentence_id is None for hg in graphs):
            unnamed.extend(files)  # numbered by position, over all of the input's files
        contents = contents or any(hg.sentence_id is not None for hg in graphs)
    return SentenceIds(tuple(named), tuple(dict.fromkeys(unnamed)), contents)


def write_graphs(graphs: Sequence[Hypergraph], path: str, format: str) -> None:
    fmt = get_format(format)
    if fmt.write is None:
        raise UsageError(f"hypertune reads {format} but does not write it")
    fmt.write(graphs, path)
