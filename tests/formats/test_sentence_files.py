"""Sentence ids of per-sentence files come from their names (issue 27).

A file holding exactly one graph with no id of its own is the sentence its name numbers (the trailing digits of
the name without its extensions), for every format, as Moses hypergraph folders always were; ids written in a
file win; names without a number keep the command line's order and the summaries say so; clashes and gaps
are named in a warning (an error under --strict). The expected values are computed without the name rule:
each forest read on its own, decoded, and scored by sacrebleu against the reference line it belongs to.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import shutil
import warnings
from pathlib import Path

import pytest

from hypertune.cli import main
from hypertune.errors import HypertuneWarning, InputError
from hypertune.formats import read_graphs, read_references
from hypertune.formats.registry import corpus_files, describe_sentence_ids, read_inputs, sentence_number
from hypertune.metrics import BleuMetric
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.sentence_ids import sentence_numbers

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
#: cdec's lo_test start weights (its PassThrough weight names no feature of these two forests)
WEIGHTS = {"WordPenalty": 4.25, "LanguageModel": -1.1165, "PhraseModel_0": -0.96, "PhraseModel_1": -0.65,
           "PhraseModel_2": -0.77}  # fmt: skip


@pytest.mark.parametrize(
    ("name", "number"),
    [
        ("f10.json.gz", 10),
        ("0.gz", 0),
        ("17", 17),
        ("17.txt.gz", 17),
        ("sent.0", 0),
        ("nbest.3.bz2", 3),
        ("007.gz", 7),
        ("a1b3.json", 3),  # the trailing digits, not the first number
        ("training_dpmert_test_data_1.json.gz", 1),
        ("dev/f2.plf", 2),
        ("dev.json.gz", None),
        ("17a.gz", None),
        ("hg_test.hg_int", None),
    ],
)
def test_the_number_in_a_name_is_its_trailing_digits_without_extensions(name, number):
    assert sentence_number(name) == number


def test_a_folder_is_ordered_by_that_number_then_by_name(tmp_path):
    for name in ("f10.json", "x.json", "f2.json", "a1b3.json", "b.json"):
        (tmp_path / name).write_text("")
    assert [os.path.basename(f) for f in corpus_files(str(tmp_path))] == [
        "f2.json", "a1b3.json", "f10.json", "b.json", "x.json"
    ]  # fmt: skip


def one_lattice_plf(tmp_path: Path) -> Path:
    path = tmp_path / "first.plf"
    path.write_text((FIXTURES / "formats" / "lattice.plf").read_text().splitlines()[0] + "\n")
    return path


@pytest.mark.parametrize(
    "source",
    [
        "formats/toy.cdec.json",
        "toy-forest.json",
        "formats/lattice.slf",
        "formats/acceptor.fst",
        "formats/toy.moses-hg",
        "one-lattice.plf",
    ],
)
def test_every_per_sentence_format_takes_the_id_from_the_name(tmp_path, source):
    src = one_lattice_plf(tmp_path) if source == "one-lattice.plf" else FIXTURES / source
    (tmp_path / "d").mkdir()
    target = tmp_path / "d" / f"s7{src.suffix}.gz"
    target.write_bytes(gzip.compress(src.read_bytes()))
    (graph,) = read_graphs(str(target))
    assert graph.sentence_id == 7
    plain = tmp_path / "d" / f"plain{src.suffix}"
    shutil.copy(src, plain)
    assert [g.sentence_id for g in read_graphs(str(plain))] == [None]  # no number: numbered by position


def test_ids_written_in_a_file_win_and_several_graphs_are_numbered_in_the_file(tmp_path):
    slf = tmp_path / "s7.slf"  # an integer UTTERANCE is the sentence id, whatever the name says
    slf.write_text((FIXTURES / "formats" / "lattice.slf").read_text().replace("UTTERANCE=sent1", "UTTERANCE=2"))
    assert [g.sentence_id for g in read_graphs(str(slf))] == [2]
    plf = tmp_path / "lattices5.plf"  # two lattices: sentences 0 and 1 by position, the name does not apply
    shutil.copy(FIXTURES / "formats" / "lattice.plf", plf)
    graphs, naming = read_inputs([str(plf)])
    assert [g.sentence_id for g in graphs] == [None, None]
    assert sentence_numbers(graphs) == [0, 1]
    assert naming.origin == "file order" and naming.note is None
    nbest = tmp_path / "nbest.5"  # n-best ids are the file's own
    nbest.write_text("0 ||| a b ||| f= 1 ||| 1\n1 ||| c ||| f= 2 ||| 2\n")
    graphs, naming = read_inputs([str(nbest)])
    assert [g.sentence_id for g in graphs] == [0, 1] and naming.origin == "file contents"


# ---------------------------------------------------------------------- the cdec forests of the issue
def forest_texts(shared: Path) -> list[str]:
    """Each real forest's Viterbi yield under cdec's lo_test weights, read on its own (no name rule)."""
    from hypertune.algorithms import viterbi
    from hypertune.formats import cdec_json
    from hypertune.metrics.base import strip_sentence_markers
    from hypertune.symbols import FeatureSpace, Vocabulary
    from hypertune.weights import Weights

    texts = []
    for i in (0, 1):
        path = shared / "cdec" / "forests" / f"training_dpmert_test_data_{i}.json.gz"
        (hg,) = cdec_json.read(str(path), FeatureSpace(), Vocabulary())
        texts.append(" ".join(strip_sentence_markers(viterbi(hg, Weights(WEIGHTS)).words)))
    return texts


def forest_references(shared: Path, k: int) -> list[str]:
    """Line ``i`` of ``lo_test.ref.k`` belongs to forest ``i``."""
    return (shared / "cdec" / "forests" / f"lo_test.ref.{k}").read_text().splitlines()


def sacrebleu_score(hypotheses: list[str], references: list[list[str]]) -> float:
    import sacrebleu

    return sacrebleu.corpus_bleu(hypotheses, references).score


@pytest.fixture
def twelve(shared, tmp_path) -> dict:
    """Twelve files ``f0 ... f11.json.gz`` (sentence ``i`` is forest ``i % 2``) with four reference files whose
    line ``i`` is forest ``i % 2``'s, the same files under names without a number (``a.json.gz`` ...), a
    weights file, and the expected BLEU of the right order."""
    forests = shared / "cdec" / "forests"
    numbered, unnamed = tmp_path / "globin", tmp_path / "plain"
    numbered.mkdir()
    unnamed.mkdir()
    for i in range(12):
        shutil.copy(forests / f"training_dpmert_test_data_{i % 2}.json.gz", numbered / f"f{i}.json.gz")
        shutil.copy(forests / f"training_dpmert_test_data_{i % 2}.json.gz", unnamed / f"{'abcdefghijkl'[i]}.json.gz")
    refs = []
    for k in range(4):
        lines = forest_references(shared, k)
        (tmp_path / f"ref.{k}").write_text("".join(lines[i % 2] + "\n" for i in range(12)))
        refs.append(str(tmp_path / f"ref.{k}"))
    (tmp_path / "w").write_text("".join(f"{name} {value}\n" for name, value in WEIGHTS.items()))
    texts = forest_texts(shared)
    expected = sacrebleu_score(
        [texts[i % 2] for i in range(12)], [[forest_references(shared, k)[i % 2] for i in range(12)] for k in range(4)]
    )
    wrong_order = sorted(glob.glob(str(numbered / "f*")))  # as a shell glob gives them: f0 f1 f10 f11 f2 ...
    assert [os.path.basename(p) for p in wrong_order[:4]] == ["f0.json.gz", "f1.json.gz", "f10.json.gz", "f11.json.gz"]
    return {
        "glob": wrong_order,
        "numbered": str(numbered),
        "unnamed": [str(unnamed / f"{'abcdefghijkl'[i]}.json.gz") for i in range(12)],
        "refs": refs,
        "weights": str(tmp_path / "w"),
        "expected": expected,
    }


def run_json(capsys, *argv: str) -> tuple[dict, str]:
    capsys.readouterr()
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


def test_bleu_of_a_shell_glob_is_scored_by_the_numbers_in_the_names(twelve, capsys):
    """The issue's case: ``bleu --graphs globin/f*`` gets f0 f1 f10 f11 f2 ... and must score each file against
    its own reference line."""
    got, _ = run_json(capsys, "bleu", "--graphs", *twelve["glob"], "-w", twelve["weights"], "--refs", *twelve["refs"])
    assert got["score"] == pytest.approx(twelve["expected"], abs=1e-9)
    assert got["sentence_ids"] == "file names"
    folder, _ = run_json(capsys, "bleu", "--graphs", twelve["numbered"], "-w", twelve["weights"], "--refs",
                         *twelve["refs"])  # fmt: skip
    assert folder["score"] == got["score"]
    # names without a number: the command line's order, and the output says so
    plain, _ = run_json(capsys, "bleu", "--graphs", *twelve["unnamed"], "-w", twelve["weights"], "--refs",
                        *twelve["refs"])  # fmt: skip
    assert plain["score"] == got["score"] and plain["sentence_ids"] == "command line order"
    shuffled = twelve["unnamed"][2:] + twelve["unnamed"][:2]  # 2, 3, ... 11, 0, 1: still alternating
    swapped = [twelve["unnamed"][1], twelve["unnamed"][0], *twelve["unnamed"][2:]]
    assert run_json(capsys, "bleu", "--graphs", *shuffled, "-w", twelve["weights"], "--refs", *twelve["refs"])[0][
        "score"
    ] == pytest.approx(twelve["expected"], abs=1e-9)
    wrong, _ = run_json(capsys, "bleu", "--graphs", *swapped, "-w", twelve["weights"], "--refs", *twelve["refs"])
    assert wrong["score"] < twelve["expected"] - 1  # the order given is the order used
    capsys.readouterr()
    assert main(["bleu", "--graphs", *twelve["unnamed"], "-w", twelve["weights"], "--refs", *twelve["refs"]]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("sentence ids: command line order (12 files whose names carry no number: a.json.gz")


def test_mert_tunes_a_shell_glob_as_the_files_in_their_right_order(twelve, capsys):
    by_names, _ = run_json(capsys, "mert", *twelve["glob"], "--refs", *twelve["refs"], "--init", twelve["weights"])
    in_order, _ = run_json(capsys, "mert", *twelve["unnamed"], "--refs", *twelve["refs"], "--init", twelve["weights"])
    assert by_names["weights"] == in_order["weights"] and by_names["bleu_after"] == in_order["bleu_after"]
    assert by_names["bleu_before"] == pytest.approx(twelve["expected"] / 100, abs=1e-9)
    assert by_names["sentence_ids"] == "file names" and in_order["sentence_ids"] == "command line order"
    capsys.readouterr()
    assert main(["mert", *twelve["unnamed"], "--refs", *twelve["refs"], "--init", twelve["weights"]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("sentence ids: command line order (12 files whose names carry no number")
    assert main(["mert", *twelve["glob"], "--refs", *twelve["refs"], "--init", twelve["weights"]]) == 0
    assert not any(line.startswith("sentence ids:") for line in capsys.readouterr().out.splitlines())


def test_decode_prints_a_shell_glob_in_sentence_order(twelve, capsys):
    got, _ = run_json(capsys, "decode", *twelve["glob"], "-w", twelve["weights"])
    assert [row["sentence"] for row in got["graphs"]] == list(range(12))
    texts = [row["derivations"][0]["text"] for row in got["graphs"]]
    assert texts[0] != texts[1] and texts == [texts[i % 2] for i in range(12)]
    capsys.readouterr()
    assert main(["decode", *twelve["glob"], "-w", twelve["weights"]]) == 0
    assert [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()] == [str(i) for i in range(12)]


# ---------------------------------------------------------------------- gaps and clashes
@pytest.fixture
def gapped(shared, tmp_path) -> dict:
    """A folder of cdec forests ``0.json.gz`` and ``2.json.gz`` (forests 0 and 1) and one reference file of three
    lines: forest 0's, a line no file has, forest 1's."""
    forests = shared / "cdec" / "forests"
    folder = tmp_path / "cdec"
    folder.mkdir()
    shutil.copy(forests / "training_dpmert_test_data_0.json.gz", folder / "0.json.gz")
    shutil.copy(forests / "training_dpmert_test_data_1.json.gz", folder / "2.json.gz")
    lines = forest_references(shared, 0)
    (tmp_path / "ref").write_text(f"{lines[0]}\nno file has this sentence\n{lines[1]}\n")
    (tmp_path / "w").write_text("".join(f"{name} {value}\n" for name, value in WEIGHTS.items()))
    return {"folder": folder, "ref": str(tmp_path / "ref"), "weights": str(tmp_path / "w"), "lines": lines}


def test_a_folder_with_a_gap_is_numbered_as_a_moses_hgdir_and_the_gap_is_named(gapped, shared, tmp_path, capsys):
    texts = forest_texts(shared)
    expected = sacrebleu_score(texts, [gapped["lines"]])  # file 0 against line 0, file 2 against line 2
    got, err = run_json(capsys, "bleu", "--graphs", str(gapped["folder"]), "-w", gapped["weights"], "--refs",
                        gapped["ref"])  # fmt: skip
    assert got["score"] == pytest.approx(expected, abs=1e-9)
    assert "1 of the 3 reference lines have no file (sentences 1)" in err
    assert f"jump from {gapped['folder'] / '0.json.gz'} to {gapped['folder'] / '2.json.gz'}" in err
    # the same forests as a Moses hgdir 0.gz, 2.gz (the rule Moses folders always had)
    moses = tmp_path / "hgdir"
    assert main(["convert", str(gapped["folder"]), str(moses), "--to", "moses-hgdir"]) == 0
    assert sorted(os.listdir(moses)) == ["0.gz", "2.gz"]
    from_moses, _ = run_json(capsys, "bleu", "--graphs", str(moses), "-w", gapped["weights"], "--refs", gapped["ref"])
    assert from_moses["score"] == got["score"]
    # --strict: an error, exit 1
    capsys.readouterr()
    strict = ["bleu", "--graphs", str(gapped["folder"]), "-w", gapped["weights"], "--refs", gapped["ref"], "--strict"]
    assert main(strict) == 1
    assert "have no file (sentences 1)" in capsys.readouterr().err
    # a number past the references' end: an error naming the file
    (gapped["folder"] / "5.json.gz").write_bytes((gapped["folder"] / "0.json.gz").read_bytes())
    assert main(["mert", str(gapped["folder"]), "--refs", gapped["ref"], "--init", gapped["weights"]]) == 1
    assert f"sentence id 5, from the file name {gapped['folder'] / '5.json.gz'}, has no reference" in (
        capsys.readouterr().err
    )


def test_files_of_one_folder_with_the_same_number_are_named(gapped, capsys):
    folder = gapped["folder"]
    (folder / "1.json.gz").write_bytes((folder / "0.json.gz").read_bytes())
    (folder / "01.json.gz").write_bytes((folder / "0.json.gz").read_bytes())
    args = ["mert", str(folder), "--refs", gapped["ref"], "--init", gapped["weights"]]
    got, err = run_json(capsys, *args)
    assert f"files {folder / '01.json.gz'}, {folder / '1.json.gz'} in one folder all number sentence 1" in err
    assert got["sentences"] == 3
    assert main([*args, "--strict"]) == 1
    assert "all number sentence 1 by their names" in capsys.readouterr().err


def test_the_same_number_in_two_folders_is_accumulation_not_a_clash(gapped, tmp_path):
    again = tmp_path / "again"
    shutil.copytree(gapped["folder"], again)
    graphs, naming = read_inputs([str(gapped["folder"]), str(again)])
    assert naming.clashes() == [] and naming.origin == "file names"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tuning_set = TuningSet.from_corpus(graphs, read_references([gapped["ref"]]), BleuMetric(), naming)
    assert tuning_set.sentence_ids == [0, 2]
    messages = [str(w.message) for w in caught if w.category is HypertuneWarning]
    assert len(messages) == 1 and "have no file (sentences 1)" in messages[0]
    with pytest.raises(InputError, match=r"have no file \(sentences 1\).*\(--strict\)"):
        TuningSet.from_corpus(graphs, read_references([gapped["ref"]]), BleuMetric(), naming, strict=True)


def test_the_cache_keeps_the_ids_and_their_origin(gapped, tmp_path, capsys):
    args = ["mert", str(gapped["folder"]), "--refs", gapped["ref"], "--init", gapped["weights"],
            "--cache", str(tmp_path / "cache")]  # fmt: skip
    first, _ = run_json(capsys, *args)
    second, _ = run_json(capsys, *args)  # from the cache
    assert first["sentence_ids"] == second["sentence_ids"] == "file names"
    assert first["weights"] == second["weights"] and first["sentences"] == second["sentences"] == 2


def test_describing_a_cached_folder_pairs_files_and_graphs():
    hgdir = str(FIXTURES / "formats" / "hgdir")
    naming = describe_sentence_ids([(hgdir, read_graphs(hgdir))])
    assert [(os.path.basename(f), i) for f, i in naming.named] == [(os.path.basename(f), sentence_number(f))
                                                                   for f in corpus_files(hgdir)]  # fmt: skip
    assert naming.origin == "file names" and not naming.by_position


def test_the_cluster_loads_a_folder_in_the_order_of_the_names(tmp_path):
    pytest.importorskip("distributed")
    from hypertune.distributed.loading import read_files, sentence_files

    toy = (FIXTURES / "formats" / "toy.cdec.json").read_text()
    folder = tmp_path / "forests"
    folder.mkdir()
    for name in ("f10.json", "f2.json", "a1b3.json"):
        (folder / name).write_text(toy)
    (tmp_path / "ref").write_text("a\n" * 11)
    plan = sentence_files([str(folder)], None, [str(tmp_path / "ref")])
    assert [os.path.basename(f) for f in plan.files] == ["f2.json", "a1b3.json", "f10.json"]
    assert [g[0].sentence_id for g in read_files(plan, range(3)).values()] == [2, 3, 10]


def test_convert_writes_a_shell_glob_in_sentence_order(twelve, tmp_path, capsys):
    """One output file of several graphs holds them in sentence-id order, not in the glob's f0 f1 f10 f11 f2 ...:
    a reader of a format without ids numbers them by position."""
    out = tmp_path / "all.json"
    assert main(["convert", *twelve["glob"], str(out), "--to", "hypertune", "-q"]) == 0
    graphs = read_graphs(str(out))
    assert [g.sentence_id for g in graphs] in (list(range(12)), [None] * 12)
    from hypertune.algorithms import viterbi
    from hypertune.formats import read_weights

    weights = read_weights([twelve["weights"]])
    texts = [" ".join(viterbi(g, weights).words) for g in graphs]
    assert texts[0] != texts[1] and texts == [texts[i % 2] for i in range(12)]  # forests 0, 1, 0, 1, ... as numbered
