"""``hypertune convert``: feature names for positional weights, cdec forests to Moses hypergraphs, lattices
to OpenFst with collapsed weights, Moses source-covered counts, ``--help-formats``."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from hypertune.algorithms import count_derivations, enumerate_derivations, viterbi
from hypertune.cli import main
from hypertune.formats import FORMATS, openfst, read_graphs
from hypertune.formats.weights import WEIGHTS_FORMATS
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.weights import Weights


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------- --feature-names


def test_init_opt_named_by_the_moses_nbest(shared, tmp_path, capsys):
    example = shared / "moses/mert-example"
    out = tmp_path / "weights.txt"
    code, _, err = run(
        capsys,
        *("convert", str(example / "init.opt"), str(out), "--to", "cdec", "--weights"),
        *("--feature-names", str(example / "NBEST")),
    )
    assert code == 0, err
    # NBEST's first line labels d: (7 values) lm: (2) tm: (5) w: (1); init.opt's start line is
    # "1 1 1 1 1 1 1 1 0.3 0.2 0.3 0.2 0 0 1", read by hand
    expected = [f"d_{i} 1" for i in range(7)] + ["lm_0 1", "lm_1 0.3"]
    expected += ["tm_0 0.2", "tm_1 0.3", "tm_2 0.2", "tm_3 0", "tm_4 0", "w 1"]
    assert out.read_text().splitlines() == expected


@pytest.mark.parametrize(
    ("names_file", "expected"),
    [
        (
            "0 ||| a b ||| LM0= -1 TM0= -2 -3 WT_a=1 ||| -5\n1 ||| c ||| LM0= -2 TM0= -1 -1 ||| -4\n",
            ["LM0", "TM0_0", "TM0_1"],
        ),
        ("0 ||| a b ||| lm: -1 tm: -2 -3 ||| -5\n", ["lm", "tm_0", "tm_1"]),
        ("FEATURES_TXT_BEGIN_0 0 1 3 lm_0 tm_0 tm_1\n-1 -2 -3\nFEATURES_TXT_END_0\n", ["lm", "tm_0", "tm_1"]),
        (
            "# Z-MERT\nLM ||| 0.1 Opt -Inf +Inf -1 +1\nfirst model ||| 0.2 Opt -Inf +Inf -1 +1\n"
            "second model ||| -0.1 Fix -Inf +Inf -1 +1\nnormalization = none\n",
            ["LM", "first model", "second model"],
        ),
    ],
    ids=["nbest", "legacy-nbest", "featstat", "zmert-params"],
)
def test_feature_names_from_any_kind_of_file(tmp_path, capsys, names_file, expected):
    names = tmp_path / "names"
    names.write_text(names_file)
    positional = tmp_path / "dense"
    positional.write_text("0.5 0.25 -1\n")
    out = tmp_path / "w.json"
    code, _, err = run(
        capsys, "convert", str(positional), str(out), "--to", "json", "--weights", "--feature-names", str(names)
    )
    assert code == 0, err
    assert json.loads(out.read_text()) == dict(zip(expected, [0.5, 0.25, -1.0], strict=True))


def test_feature_names_of_an_unknown_kind_is_one_line(tmp_path, capsys):
    names, positional = tmp_path / "names", tmp_path / "dense"
    names.write_text("lm 1\ntm 2\n")
    positional.write_text("0.5 0.25\n")
    code, _, err = run(
        capsys,
        "convert",
        str(positional),
        str(tmp_path / "w"),
        "--to",
        "cdec",
        "--weights",
        "--feature-names",
        str(names),
    )
    assert code == 1 and err.count("\n") == 1 and "n-best list, a FEATSTAT file or a Z-MERT parameter file" in err


# ---------------------------------------------------------------------- cdec forests to Moses hypergraphs


def _out_of_order(hg) -> int:
    """Edges whose target uses their tails in another order than the tails are listed."""
    count = 0
    for e in range(hg.num_edges):
        used = [-int(t) for t in hg.edge_target(e) if t < 0]
        count += used != sorted(used)
    return count


def test_every_cdec_forest_converts_to_a_moses_hypergraph(shared, tmp_path, capsys):
    forests = sorted((shared / "cdec/forests").glob("*.json.gz"))
    assert len(forests) == 5
    reordered = 0
    for forest in forests:
        out = tmp_path / (forest.name + ".hg")
        code, _, err = run(capsys, "convert", str(forest), str(out), "--to", "moses-hypergraph")
        assert code == 0, err
        (original,) = read_graphs(str(forest))
        (back,) = read_graphs(str(out), "moses-hypergraph")
        reordered += _out_of_order(original) > 0
        assert count_derivations(back) == count_derivations(original)
        # edge e keeps its place; its tails come in the order its target used them
        assert np.array_equal(back.head, original.head)
        for e in range(original.num_edges):
            tails = original.edge_tails(e)
            assert back.edge_tails(e).tolist() == [int(tails[-int(t) - 1]) for t in original.edge_target(e) if t < 0]
        rng = np.random.default_rng(7)
        weights = Weights({name: float(rng.normal()) for name in original.feature_space.names})
        best, best_back = viterbi(original, weights), viterbi(back, weights)
        assert best_back.words == best.words and best_back.score == pytest.approx(best.score, rel=1e-12, abs=1e-12)
    assert reordered == 3  # the README's "three of the five" forests have rules like "[2] de [1]"


def test_small_forest_after_conversion_gives_cdecs_viterbi(shared, tmp_path, capsys):
    out = tmp_path / "small.hg"
    forest = shared / "cdec/forests/decoder_test_data_small.json.gz"
    code, _, err = run(capsys, "convert", str(forest), str(out), "--to", "moses-hypergraph")
    assert code == 0 and err.count("\n") == 1 and "no source-covered counts: the third column is written as 0" in err
    assert set(_third_column(out.read_text())) == {0}
    (back,) = read_graphs(str(out))
    weights = {"Model_0": -2, "Model_1": -0.5, "Model_2": -1.1, "Model_3": -1}
    weights |= {"Model_4": -1, "Model_5": 0.5, "Model_6": 0.2, "Model_7": -3}
    best = viterbi(back, Weights(weights))  # expected values: shared/README.md (cdec's hg_test)
    assert best.text == "there is a small house" and best.score == pytest.approx(-3.00298, abs=1e-5)


# ---------------------------------------------------------------------- Moses source-covered counts

HAND_HG = """# target ||| features ||| source-covered
4 6
# vertex 0
1
<s> ||| ||| 0
2
[0] der ||| tm=-1 lm=-2.5 ||| 1
[0] die |||tm=-1.5||| 1
# a comment
1
[1] Katze ||| tm=-0.5 lm=-1 WT_Katze~cat=1 ||| 12
2
[2] </s> ||| lm=-0.25 ||| 13
[1] </s> |||  |||  7
"""


def _third_column(text: str) -> list[int]:
    """The source-covered column of a Moses hypergraph, read with nothing but ``split``."""
    return [int(line.split("|||")[2]) for line in text.splitlines() if "|||" in line and not line.startswith("#")]


@pytest.mark.parametrize("name", ["dense/hg.gz", "sparse/hg.gz", "hand"])
def test_moses_round_trip_keeps_source_covered(shared, tmp_path, capsys, name):
    if name == "hand":
        source = tmp_path / "hand.hg"
        source.write_text(HAND_HG)
        expected = [0, 1, 1, 12, 13, 7]
    else:
        source = shared / "moses/hypergraphs" / name
        with gzip.open(source, "rt", encoding="utf-8") as handle:
            expected = _third_column(handle.read())
    out = tmp_path / "out.hg"
    code, _, err = run(capsys, "convert", str(source), str(out), "--to", "moses-hypergraph")
    assert code == 0 and err == ""
    assert _third_column(out.read_text()) == expected
    (back,) = read_graphs(str(out))
    assert back.source_covered.tolist() == expected
    assert max(expected) > 0


def test_losing_source_covered_is_a_one_line_warning(tmp_path, capsys):
    source = tmp_path / "hand.hg"
    source.write_text(HAND_HG)
    code, _, err = run(capsys, "convert", str(source), str(tmp_path / "out.json"), "--to", "cdec-json")
    assert code == 0
    assert err.count("\n") == 1 and err.startswith("hypertune convert: warning: the source-covered counts")
    code, _, err = run(capsys, "convert", str(source), str(tmp_path / "out.htc"), "--to", "hypertune-cache")
    assert code == 0 and err == ""
    assert read_graphs(str(tmp_path / "out.htc"))[0].source_covered.tolist() == [0, 1, 1, 12, 13, 7]


# ---------------------------------------------------------------------- lattices to OpenFst


def _paths(hg, weights: Weights) -> dict[str, float]:
    """Brute force: every path's words and score w.f (the best score of each string)."""
    out: dict[str, float] = {}
    for d in enumerate_derivations(hg):
        text = " ".join(hg.derivation_words(d))
        score = float(weights.vector(hg.feature_space) @ hg.derivation_features(d))
        out[text] = max(score, out.get(text, -np.inf))
    return out


def _convert_to_fst(capsys, tmp_path, lattice, weights: str):
    weights_file = tmp_path / "collapse.w"
    weights_file.write_text(weights)
    out = tmp_path / "out.fst"
    code, _, err = run(
        capsys, "convert", str(lattice), str(out), "--to", "openfst", "--collapse-weights", str(weights_file)
    )
    assert code == 0, err
    (back,) = openfst.read(str(out), FeatureSpace(), Vocabulary())
    assert set(back.feature_space.names) <= {openfst.FEATURE}
    return out.read_text(), back


@pytest.mark.parametrize(
    ("line", "weights", "fst", "best", "score"),
    [
        # costs by hand: -(w.f) per arc; the goal (node 2 / node 1) is the final state
        (0, "LatticeCost_0 -1\n", "0 1 A 0.5\n0 1 C 0.25\n0 2 AB 0.125\n1 2 B 2\n2\n", "AB", -0.125),
        (0, "LatticeCost_0 1\n", "0 1 A -0.5\n0 1 C -0.25\n0 2 AB -0.125\n1 2 B -2\n2\n", "A B", 2.5),
        (1, "LatticeCost_0 -1\nUsesDPrime 0.5\n", "0 1 A 0.5\n0 1 D' -0.4\n0 1 B 0\n1\n", "D'", 0.4),
    ],
)
def test_plf_input_to_openfst(shared, tmp_path, capsys, line, weights, fst, best, score):
    lattice = tmp_path / "one.plf"  # an FST file holds one lattice: take one line of input.txt
    lattice.write_text((shared / "cdec/plf/input.txt").read_text().splitlines()[line] + "\n")
    code, _, err = run(capsys, "convert", str(lattice), str(tmp_path / "x.fst"), "--to", "openfst")
    assert code == 1 and err.count("\n") == 1 and "--collapse-weights" in err
    text, back = _convert_to_fst(capsys, tmp_path, lattice, weights)
    assert text == fst
    result = viterbi(back, Weights({openfst.FEATURE: -1}))
    assert (result.text, result.score) == (best, pytest.approx(score, abs=1e-12))
    (original,) = read_graphs(str(lattice))
    assert viterbi(original, Weights(dict(line.split() for line in weights.splitlines()))).text == best


# nodes 0-3; paths "a c f", "a d", "b f", "e"
HAND_PLF = (
    "((('a',{'x':1,'y':2},1),('b',{'x':-1},2),('e',{'y':0.5},3),),"
    "(('c',{'y':-3},1),('d',{'x':2,'y':1},2),),(('f',{'x':0.25},1),),)\n"
)


@pytest.mark.parametrize("weights", ["x 2\ny 1\n", "x -1\ny 0.5\n", "x 0.5\ny -2\n"])
def test_hand_lattice_to_openfst_keeps_every_path_score(tmp_path, capsys, weights):
    lattice = tmp_path / "hand.plf"
    lattice.write_text(HAND_PLF)
    w = Weights({name: float(value) for name, value in (line.split() for line in weights.splitlines())})
    (original,) = read_graphs(str(lattice))
    _, back = _convert_to_fst(capsys, tmp_path, lattice, weights)
    expected = _paths(original, w)
    assert set(expected) == {"a c f", "a d", "b f", "e"}
    got = _paths(back, Weights({openfst.FEATURE: -1}))
    assert got.keys() == expected.keys() and all(got[k] == pytest.approx(v, abs=1e-12) for k, v in expected.items())
    result = viterbi(back, Weights({openfst.FEATURE: -1}))
    assert result.score == pytest.approx(max(expected.values()), abs=1e-12)
    assert result.text == max(expected, key=expected.get)


def test_collapse_weights_option_errors(tmp_path, capsys):
    lattice, weights = tmp_path / "hand.plf", tmp_path / "w"
    lattice.write_text(HAND_PLF)
    weights.write_text("x 1\n")
    code, _, err = run(
        capsys, "convert", str(lattice), str(tmp_path / "o"), "--to", "plf", "--collapse-weights", str(weights)
    )
    assert code == 2 and err.count("\n") == 1 and "--to openfst" in err
    weights.write_text("nothing 1\n")
    code, _, err = run(
        capsys, "convert", str(lattice), str(tmp_path / "o"), "--to", "openfst", "--collapse-weights", str(weights)
    )
    assert code == 1 and err.count("\n") == 1 and "no weight names a feature" in err


# ---------------------------------------------------------------------- --help-formats


def test_help_formats_lists_every_reader_and_writer(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["convert", "--help-formats"])
    assert exit_info.value.code == 0
    graphs, weights = (
        {line.split()[0]: line.split()[1] for line in part.splitlines() if line.startswith("  ")}
        for part in capsys.readouterr().out.split("\n\n")
    )
    assert graphs == {name: "read/write" if fmt.write else "read" for name, fmt in FORMATS.items()} | {
        "moses-hgdir": "read/write"
    }
    assert {name for name, kind in weights.items() if kind == "read/write"} == set(WEIGHTS_FORMATS)
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    help_text = capsys.readouterr().out
    assert "--help-formats" in help_text and "--collapse-weights" in help_text
