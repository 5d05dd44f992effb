"""Weights files and byte-order marks (issue #27): a UTF-8 byte-order mark is not part of any input; a
warning prints invisible characters as escapes; a name given twice is an error naming both lines; every
weights format written reads back as the same names and values; weights naming fewer than half of the
inputs' dense features are a warning; the Z-MERT hint names ``--params`` only where a command has it."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import threading
from pathlib import Path

import pytest
from support.paths import FIXTURES
from support.same_graphs import assert_same_readings

from hypertune.choices import WEIGHTS_FORMATS
from hypertune.cli import main
from hypertune.errors import InputError, UsageError
from hypertune.formats import read_graphs, read_references, read_weights
from hypertune.formats.io import open_text, read_bytes, read_head, read_text
from hypertune.formats.registry import detect_format
from hypertune.formats.weights import add_weights, format_weights, parse_weights, read_zmert_params, write_weights
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.weights import check_feature_names, dense_features, visible

BOM = b"\xef\xbb\xbf"
FORMATS = FIXTURES / "formats"
MERT = FIXTURES / "mert"


def with_bom(source: Path, target: Path, compress: bool = False) -> Path:
    data = BOM + source.read_bytes()
    target.write_bytes(gzip.compress(data) if compress else data)
    return target


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------- byte-order marks


def test_bom_in_the_weights_file_changes_nothing_fixture(tmp_path, capsys):
    """README's first command, with the start weights behind a byte-order mark: the same JSON, no warning."""
    marked = with_bom(MERT / "init.weights", tmp_path / "init.weights")
    common = ["mert", str(MERT / "nbest.txt"), "--refs", str(MERT / "ref."), "--restarts", "5", "--seed", "1", "--json"]
    code, plain, err = run(capsys, *common, "--init", str(MERT / "init.weights"))
    assert code == 0 and err == ""
    code, marked_out, err = run(capsys, *common, "--init", str(marked))
    assert code == 0 and err == ""
    timeless = [
        {k: v for k, v in json.loads(text).items() if k not in ("seconds", "history")} for text in (plain, marked_out)
    ]
    assert timeless[0] == timeless[1] and "weights" in timeless[0]


def test_bom_in_the_weights_file_changes_nothing_shared(shared, tmp_path, capsys):
    """Moses's mert example with ``name value`` start weights whose first line matters (tm_0): with the mark
    read as part of the name, BLEU before differed (0.7697 against 0.7577) and the output named
    ``\\ufefftm_0``."""
    example = shared / "moses" / "mert-example"
    text = "tm_0 0.2\nd_0 1\nd_1 1\nd_2 1\nd_3 1\nd_4 1\nd_5 1\nd_6 1\nlm_0 1\nlm_1 0.3\ntm_1 0.3\ntm_2 0.2\n"
    text += "tm_3 0\ntm_4 0\nw 1\n"
    (tmp_path / "plain").write_text(text, encoding="utf-8")
    (tmp_path / "marked").write_bytes(BOM + text.encode())
    common = ["mert", str(example / "NBEST"), "--refs", str(example / "REF."), "--seed", "1", "--json"]
    results = []
    for name in ("plain", "marked"):
        code, out, err = run(capsys, *common, "--init", str(tmp_path / name), "--out", str(tmp_path / f"{name}.out"))
        assert code == 0 and err == ""
        results.append(json.loads(out))
    assert results[0]["bleu_before"] == results[1]["bleu_before"]
    assert results[0]["bleu_after"] == results[1]["bleu_after"]
    assert results[0]["weights"] == results[1]["weights"]
    assert list(results[1]["weights"])[0] == "tm_0"
    assert (tmp_path / "plain.out").read_bytes() == (tmp_path / "marked.out").read_bytes()


GRAPH_FILES = [
    "toy.cdec.json",
    "toy.moses-hg",
    "labels.nbest",
    "joshua.nbest",
    "legacy.nbest",
    "zmert.cand",
    "lattice.plf",
    "lattice.slf",
    "acceptor.fst",
    "transducer.fst",
    "searchgraph.osg",
    "searchgraph.osgx",
]


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("name", GRAPH_FILES)
def test_bom_in_graph_files_is_dropped(tmp_path, name, compress):
    """Every text graph format: sniffed as the same format and read as the same graphs with the mark."""
    source = FORMATS / name
    marked = with_bom(source, tmp_path / (name + (".gz" if compress else "")), compress)
    assert detect_format(str(marked)).name == detect_format(str(source)).name
    readings = []
    for path in (marked, source):
        space, vocabulary = FeatureSpace(), Vocabulary()
        readings.append((read_graphs(str(path), None, space, vocabulary), space, vocabulary))
    assert_same_readings(readings[0], readings[1])


def test_bom_in_featstat_scorestat_references_and_init_opt(tmp_path, capsys):
    """A FEATSTAT/SCORESTAT pair, its init.opt and the references, all marked: the same tuning."""
    source = FORMATS / "extractor"
    marked = tmp_path / "extractor"
    marked.mkdir()
    for name in ("FEATSTAT.txt", "SCORESTAT.txt", "init.opt"):
        with_bom(source / name, marked / name)
    results = []
    for folder in (source, marked):
        argv = ["mert", str(folder / "FEATSTAT.txt"), str(folder / "SCORESTAT.txt"), "--init", str(folder / "init.opt")]
        code, out, err = run(capsys, *argv, "--seed", "1", "--json")
        assert code == 0, err
        results.append(json.loads(out))
    assert results[0]["weights"] == results[1]["weights"] and results[0]["bleu_after"] == results[1]["bleu_after"]


def test_bom_in_references_and_weights_formats(tmp_path):
    refs = FORMATS / "refs"
    with_bom(refs / "ref.0", tmp_path / "ref.0")
    with_bom(refs / "ref.1", tmp_path / "ref.1")
    assert read_references(str(tmp_path / "ref.")) == read_references(str(refs / "ref."))
    assert read_references(str(tmp_path / "ref.0"))[0] == ["a b"]
    for name in ("kbmira.dense", "kbmira.sparse", "moses.ini", "old-moses.ini", "weights.json", "joshua.config"):
        marked = with_bom(FORMATS / name, tmp_path / name)
        assert dict(read_weights(str(marked))) == dict(read_weights(str(FORMATS / name))), name
    marked = with_bom(FORMATS / "zmert.params", tmp_path / "zmert.params")
    assert read_zmert_params(str(marked)) == read_zmert_params(str(FORMATS / "zmert.params"))
    assert read_zmert_params(str(marked))[0].name == "LM"


def test_bom_dropped_by_every_reader_of_io(tmp_path):
    """read_text, read_bytes, read_head and open_text, on a plain file, a gzip file and a pipe."""
    data = BOM + b"LM0 0.5\r\nw 1\n"
    (tmp_path / "plain").write_bytes(data)
    (tmp_path / "packed").write_bytes(gzip.compress(data))
    for name in ("plain", "packed"):
        path = str(tmp_path / name)
        assert read_text(path) == "LM0 0.5\nw 1\n"
        assert read_bytes(path) == b"LM0 0.5\nw 1\n"
        assert read_head(path) == "LM0 0.5\r\nw 1\n"
        with open_text(path) as handle:
            assert handle.read() == "LM0 0.5\nw 1\n"
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: Path(fifo).write_bytes(data))
    writer.start()
    try:
        assert dict(read_weights(fifo)) == {"LM0": 0.5, "w": 1.0}
    finally:
        writer.join()
    (tmp_path / "only").write_bytes(BOM)
    assert read_text(str(tmp_path / "only")) == ""


def test_a_bom_is_dropped_only_at_the_start(tmp_path):
    """A mark inside the text is the text's (``cat a b`` of two marked files): it stays, and shows."""
    (tmp_path / "w").write_bytes(b"LM0 0.5\n" + BOM + b"w 1\n")
    assert list(read_weights(str(tmp_path / "w"))) == ["LM0", "\ufeffw"]


# ---------------------------------------------------------------------- names printed visibly


def test_visible_names():
    assert visible("tm_0") == "tm_0"
    assert visible("\ufefftm_0") == "'\\ufefftm_0'"
    assert visible("LM0\u200b") == "'LM0\\u200b'"
    assert visible("phrase model") == "'phrase model'"
    assert visible("") == "''"


def test_warning_escapes_invisible_characters(tmp_path, capsys):
    (tmp_path / "w").write_text("LM0\u200b 0.1\nTM0_0 0.2\nTM0_1 0.2\nWordPenalty0 -0.3\n", encoding="utf-8")
    argv = ["mert", str(MERT / "nbest.txt"), "--refs", str(MERT / "ref."), "--init", str(tmp_path / "w")]
    code, _, err = run(capsys, *argv, "--seed", "1")
    assert code == 0
    assert "'LM0\\u200b' (did you mean LM0?)" in err
    assert "\u200b" not in err


def test_unknown_components_name_what_the_inputs_have():
    space = FeatureSpace(["w", "d_0", "d_1", "tm_0", "tm_1", "tm_2"])
    with pytest.warns(Warning) as caught:
        check_feature_names({"w_0": 1.0, "w_1": 2.0, "tm": 1.0, "d_0": 1.0}, space, "init")
    message = str(caught[0].message)
    assert "w_0 (the inputs' w has one component)" in message
    assert "tm (the inputs have tm_0 .. tm_2)" in message
    assert "d_0?" not in message


# ---------------------------------------------------------------------- a name given twice


@pytest.mark.parametrize(
    "text, lines",
    [
        ("LM0 0.5\nw 1\nLM0 0.7\n", (1, 3)),
        ("LM0=0.5\n\n# comment\nLM0=0.7\n", (1, 4)),
        ("w_0 0.5\nLM0 1\nw= 1 2\n", (1, 3)),  # w_0 as a line and as the first component of w=
        ("w= 1\nw= 2\nLM0 1\nw_1 3\n", (2, 4)),  # w_1: the second w= line and its own line
        ("[weight]\nLM0= 1\nWordPenalty0 -1\nWordPenalty0 -2\n", (3, 4)),
    ],
)
def test_a_name_given_twice_is_an_error_naming_both_lines(tmp_path, text, lines):
    path = tmp_path / "w"
    path.write_text(text)
    with pytest.raises(InputError) as error:
        read_weights(str(path))
    assert error.value.path == str(path) and error.value.line == lines[1]
    assert f"lines {lines[0]} and {lines[1]}" in str(error.value)


def test_a_name_given_twice_fails_the_command(tmp_path, capsys):
    (tmp_path / "w").write_text("LM0 0.1\nTM0_0 0.2\nTM0_1 0.2\nWordPenalty0 -0.3\nLM0 0.4\n")
    argv = ["mert", str(MERT / "nbest.txt"), "--refs", str(MERT / "ref."), "--init", str(tmp_path / "w")]
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    assert err.strip() == (
        f"hypertune mert: error: {tmp_path / 'w'}:5: weight LM0 is given twice, on lines 1 and 5 (remove one of them)"
    )


def test_repeated_name_lines_stay_components():
    """kbmira's dense format: one ``Name=`` line a component; old moses.ini sections likewise."""
    text = "LM0= 0.5\nTM0= 0.2\nTM0= 0.3\nTM0= -0.1\n"
    assert dict(parse_weights(text, "dense")) == {"LM0": 0.5, "TM0_0": 0.2, "TM0_1": 0.3, "TM0_2": -0.1}
    text = "[weight-l]\n0.5\n[weight-t]\n0.2\n0.3\n"
    assert dict(parse_weights(text, "old.ini")) == {"lm": 0.5, "tm_0": 0.2, "tm_1": 0.3}


def test_json_and_zmert_names_given_twice(tmp_path):
    with pytest.raises(InputError, match="weight LM0 is given twice"):
        parse_weights('{"LM0": 0.5, "w": 1, "LM0": 0.7}', "w.json")
    with pytest.raises(InputError, match=r"parameter 'phrase model' is given twice, on lines 1 and 3") as error:
        parse_weights("phrase model ||| 1 Opt -Inf +Inf\nLM ||| 1 Opt -1 1\nphrase model ||| 2 Opt -1 1\n", "p.txt")
    assert error.value.line == 3


def test_later_files_still_override_earlier_ones(tmp_path):
    (tmp_path / "a").write_text("LM0 0.5\nw 1\n")
    (tmp_path / "b").write_text("LM0 0.7\n")
    assert dict(read_weights([str(tmp_path / "a"), str(tmp_path / "b")])) == {"LM0": 0.7, "w": 1.0}


# ---------------------------------------------------------------------- every format reads back


#: Names as Moses's n-best lists and kbmira produce them: a two-component w, d, lm, tm.
MOSES_NAMES = {
    "w_0": -0.5,
    "w_1": 0.25,
    "d_0": 0.1,
    "d_1": -0.2,
    "d_2": 0.3,
    "d_3": 0.0,
    "d_4": 1e-07,
    "d_5": -3.0,
    "d_6": 0.07,
    "lm_0": 0.6,
    "tm_0": 0.01,
    "tm_1": 0.02,
    "tm_2": -0.03,
    "tm_3": 0.30000000000000004,
    "tm_4": 2.0,
}


@pytest.mark.parametrize("format", WEIGHTS_FORMATS)
@pytest.mark.parametrize(
    "weights",
    [
        MOSES_NAMES,
        {"LM0": 0.5, "TM0_0": 0.2, "TM0_1": 0.3, "WordPenalty0": -1.0, "tm_pt_3": 1e-7, "PhrasePenalty0": 0.2},
        # a one-component w next to the two components a kbmira file gave: each must survive
        {"w_0": 1.0, "w_1": 2.0, "lm_0": 0.5, "w": 3.0},
        {"w": 3.0, "w_0": 1.0, "w_1": 2.0},
        {"X_0": 1.0, "Y": 2.0, "X_1": 3.0, "X_0_0": 4.0, "X_0_1": 5.0},
    ],
    ids=["moses-names", "moses2", "w-beside-components", "w-first", "interleaved"],
)
def test_every_format_reads_back(tmp_path, format, weights):
    path = tmp_path / "out"
    write_weights(weights, str(path), format)
    assert dict(read_weights(str(path))) == weights


def test_kbmira_dense_file_through_moses_output(tmp_path):
    """The issue's case: kbmira's dense file repeats ``w=``; written as ``moses`` it reads back as w_0 w_1."""
    (tmp_path / "dense").write_text("w= -0.5\nw= 0.25\nlm= 0.6\ntm= 0.01\ntm= 0.02\n")
    weights = read_weights(str(tmp_path / "dense"))
    assert dict(weights) == {"w_0": -0.5, "w_1": 0.25, "lm": 0.6, "tm_0": 0.01, "tm_1": 0.02}
    weights["w"] = 0.75  # the tuned one-component w of the inputs, kept beside the file's own names
    write_weights(weights, str(tmp_path / "out"), "moses")
    assert dict(read_weights(str(tmp_path / "out"))) == {
        "w_0": -0.5,
        "w_1": 0.25,
        "lm": 0.6,
        "tm_0": 0.01,
        "tm_1": 0.02,
        "w": 0.75,
    }


def test_mert_out_format_moses_reads_back(shared, tmp_path, capsys):
    """End to end on Moses's mert example: start weights in kbmira's dense format with one ``w=`` too many;
    ``--out-format moses`` writes what reads back as the command's own (JSON) weights."""
    example = shared / "moses" / "mert-example"
    dense = "".join(f"d= {v}\n" for v in (1, 1, 1, 1, 1, 1, 1)) + "lm= 1\nlm= 0.3\n"
    dense += "".join(f"tm= {v}\n" for v in (0.2, 0.3, 0.2, 0, 0)) + "w= 1\nw= 0.5\n"
    (tmp_path / "init").write_text(dense)
    argv = ["mert", str(example / "NBEST"), "--refs", str(example / "REF."), "--init", str(tmp_path / "init")]
    code, out, err = run(
        capsys, *argv, "--seed", "1", "--json", "--out", str(tmp_path / "out"), "--out-format", "moses"
    )
    assert code == 0
    assert "w_0 (the inputs' w has one component)" in err
    written = dict(read_weights(str(tmp_path / "out")))
    assert written == json.loads(out)["weights"]
    assert {"w", "w_0", "w_1"} <= set(written) and "w_2" not in written


@pytest.mark.parametrize("format", [f for f in WEIGHTS_FORMATS if f != "json"])
def test_names_a_format_cannot_hold_are_refused(tmp_path, format):
    with pytest.raises(UsageError, match=rf"cannot be written in the {format} format .*json"):
        write_weights({"LM0": 0.5, "x#y": 1.0}, str(tmp_path / "out"), format)
    assert not (tmp_path / "out").exists()
    assert dict(parse_weights(format_weights({"a b": 1.0, "x#y": 2.0}, "json"), "j")) == {"a b": 1.0, "x#y": 2.0}


def test_weights_added_to_a_moses_ini_keep_their_names():
    """A moses.ini naming ``w=`` gets w_0 w_1 added: not as more ``w=`` values."""
    text = "[feature]\nWordPenalty\n\n[weight]\nw= 1\nLM0= 0.5\n"
    added = add_weights(text, {"w_0": 2.0, "w_1": 3.0, "TM0_0": 0.1, "TM0_1": 0.2}, "moses.ini")
    assert dict(parse_weights(added, "moses.ini")) == {
        "w": 1.0,
        "LM0": 0.5,
        "w_0": 2.0,
        "w_1": 3.0,
        "TM0_0": 0.1,
        "TM0_1": 0.2,
    }


# ---------------------------------------------------------------------- dense features named


def write_nbest(path: Path) -> None:
    """Three sentences with dense features A, B, C (B= has two components) and sparse s1, s2 on some."""
    lines = [
        "0 ||| a b ||| A= -1 B= -2 -3 C= 1 s1=1 ||| 0",
        "0 ||| a c ||| A= -2 B= -1 -1 C= 1 ||| 0",
        "1 ||| d ||| A= -1 B= -2 -2 C= 2 s2=1 ||| 0",
        "2 ||| e f ||| A= -4 B= 0 -1 C= 1 s1=1 ||| 0",
    ]
    path.write_text("\n".join(lines) + "\n")


def test_dense_features_are_those_of_every_sentence(tmp_path):
    write_nbest(tmp_path / "nbest")
    assert dense_features(read_graphs(str(tmp_path / "nbest"))) == ["A", "B_0", "B_1", "C"]


@pytest.mark.parametrize(
    "text, warned",
    [
        (
            "A 1\ns1 1\ns2 1\n",
            "the weights name 1 of the inputs' 4 dense features; the other 3 start at 0: B_0, B_1, C",
        ),
        ("s1 1\n", "the weights name 0 of the inputs' 4 dense features; the other 4 start at 0: A, B_0, B_1, C"),
        ("A 1\nC 1\n", None),  # half
        ("B= 1 2\nC 1\ns1 0.5\n", None),
    ],
)
def test_few_dense_features_named_warn(tmp_path, capsys, text, warned):
    write_nbest(tmp_path / "nbest")
    (tmp_path / "ref").write_text("a b\nd\ne f\n")
    (tmp_path / "w").write_text(text)
    argv = ["mert", str(tmp_path / "nbest"), "--refs", str(tmp_path / "ref"), "--init", str(tmp_path / "w")]
    code, _, err = run(capsys, *argv, "--seed", "1")
    assert code == 0
    if warned is None:
        assert "dense" not in err
    else:
        assert f"warning: {tmp_path / 'w'}: {warned}\n" in err


def test_one_of_fourteen_dense_features(shared, tmp_path, capsys):
    """The issue's case on real data: a file naming one of the 14 dense features of a FEATSTAT file (and
    one of the 15 of Moses's mert example n-best list)."""
    featstat = shared / "moses" / "featstat-10x100"
    (tmp_path / "w").write_text("lm 1\n")
    argv = ["mert", str(featstat / "FEATSTAT.txt"), str(featstat / "SCORESTAT.txt"), "--init", str(tmp_path / "w")]
    code, _, err = run(capsys, *argv, "--seed", "1")
    assert code == 0
    shown = "d_0, d_1, d_2, d_3, d_4, d_5, d_6, tm_0, tm_1, tm_2 ..."
    assert f"the weights name 1 of the inputs' 14 dense features; the other 13 start at 0: {shown}" in err
    example = shared / "moses" / "mert-example"
    (tmp_path / "w").write_text("lm_0 1\n")
    argv = ["mert", str(example / "NBEST"), "--refs", str(example / "REF."), "--init", str(tmp_path / "w")]
    code, _, err = run(capsys, *argv, "--seed", "1")
    assert code == 0
    assert "the weights name 1 of the inputs' 15 dense features; the other 14 start at 0: d_0, d_1," in err


def test_sparse_features_of_forests_are_not_dense(shared):
    """Moses hypergraphs drop zero values and mix in sparse word-pair features (``WT_x~y``, ``PL_...``), some of
    them on most edges: only the features on every edge count as dense."""
    graphs = read_graphs(str(shared / "moses" / "hypergraphs" / "sparse" / "hg.gz"))
    assert dense_features(graphs) == ["WordPenalty0", "PhrasePenalty0", "OpSequenceModel0_0", "LM0"]


def test_start_weights_of_forests_do_not_warn(moses_pair, capsys):
    argv = ["mert", str(moses_pair["folder"]), "--refs", str(moses_pair["ref"]), "--init", str(moses_pair["init"])]
    code, _, err = run(capsys, *argv, "--seed", "1")
    assert code == 0 and "dense" not in err


# ---------------------------------------------------------------------- the Z-MERT hint


@pytest.mark.parametrize(
    "command, says_params",
    [
        (["mert", "CAND", "--refs", "REFS", "--init", "W"], True),
        (["mira", "CAND", "--refs", "REFS", "--init", "W"], False),
        (["decode", "CAND", "-w", "W"], False),
        (["bleu", "--refs", "REFS", "--weights", "W", "--graphs", "CAND"], False),
    ],
)
def test_zmert_hint_names_params_only_where_the_command_has_it(tmp_path, capsys, command, says_params):
    shutil.copy(FORMATS / "zmert.cand", tmp_path / "cand")
    (tmp_path / "w").write_text("LM 1\n")
    refs = str(FORMATS / "refs" / "ref.")
    given = {"REFS": refs, "W": str(tmp_path / "w"), "CAND": str(tmp_path / "cand")}
    code, _, err = run(capsys, *(given.get(a, a) for a in command))
    assert code == 1 and "no weight names a feature of the inputs (LM)" in err
    if says_params is True:
        assert "give the parameter file with --params" in err
    elif says_params is False:
        assert "--params" not in err and "name their weights F0, F1, ..." in err
    else:
        assert "where the command has that option" in err


def test_an_out_format_that_cannot_hold_the_names_is_refused_before_tuning(shared, tmp_path, capsys):
    """Z-MERT names hold blanks ("first model"): ``cdec`` lines cannot carry them, so ``--out`` in that format is
    refused before any work (nothing written, no summary); the zmert format holds them and reads back."""
    zmert = shared / "zmert"
    argv = [
        "mert", str(zmert / "cand_database.txt"), "--params", str(zmert / "params.txt"),
        "--refs", *(str(zmert / f"ref.{i}") for i in range(4)), "--init", str(zmert / "params.txt"),
        "--out", str(tmp_path / "w"),
    ]  # fmt: skip
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and not (tmp_path / "w").exists()
    assert err.count("\n") == 1 and "'first model'" in err and "json" in err
    code, out, err = run(capsys, *argv, "--out-format", "zmert")
    assert code == 0 and {"LM", "first model", "second model"} <= set(read_weights([str(tmp_path / "w")]))
