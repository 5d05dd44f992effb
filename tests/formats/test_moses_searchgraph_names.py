"""A Moses extended search graph (-osgx) decoded with a moses.ini, as the tuning loop keeps it: its dense values,
printed by position only, named after the moses.ini (Moses's dense order is its ``[feature]`` section's), and
stored as hypertune's corpus cache (:meth:`hypertune.loop.decoder.DecoderConfig.finish_output`).

The fixture fixtures/formats/searchgraph.osgx was written for a made-up system whose weights are
``core_0 .. core_4 = 0.3, 0.5, 0.2, 0.2, -1`` and ``PP_the = 0.1`` (tests/formats/test_searchgraph.py); the
moses.ini below names those five dense values, so its weights must give every arc the fixture's ``transition``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hypertune.algorithms import viterbi
from hypertune.errors import InputError
from hypertune.formats import detect_format, read_graphs
from hypertune.formats.weights import moses_dense_names
from hypertune.loop.decoder import DecoderConfig

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats"

MOSES_INI = """\
[input-factors]
0
# feature functions
[feature]
Distortion
KENLM name=LM0 factor=0 path=lm.blm order=3
PhraseDictionaryMemory name=TranslationModel0 num-features=2 path=phrase-table.gz input-factor=0 output-factor=0
TargetWordInsertionFeature name=PP factor=0
WordPenalty

[weight]
Distortion0= 0.3
LM0= 0.5
TranslationModel0= 0.2 0.2
WordPenalty0= -1
"""

#: What Moses's FeatureFunction::ParseLine names these lines (an unnamed line: its type and the count of the
#: unnamed lines of that type before it), each with its [weight] line's values; PP is sparse (no dense value).
NAMES = ["Distortion0", "LM0", "TranslationModel0_0", "TranslationModel0_1", "WordPenalty0"]


def test_dense_names_follow_the_feature_section() -> None:
    assert moses_dense_names(MOSES_INI, "moses.ini") == NAMES
    two = MOSES_INI.replace("Distortion\n", "Distortion\nDistortion name=Far\nDistortion\n").replace(
        "Distortion0= 0.3\n", "Distortion0= 0.3\nFar= 1\nDistortion1= 0.1\n"
    )
    assert moses_dense_names(two, "moses.ini")[:4] == ["Distortion0", "Far", "Distortion1", "LM0"]


def test_an_extended_search_graph_is_named_and_cached(tmp_path: Path) -> None:
    ini = tmp_path / "moses.ini"
    ini.write_text(MOSES_INI, encoding="utf-8")
    config = DecoderConfig.from_file(str(ini))
    shutil.copy(FIXTURES / "searchgraph.osgx", tmp_path / "lattices")
    config.finish_output(str(tmp_path), "lattices")
    assert detect_format(str(tmp_path / "lattices")).name == "hypertune-cache"
    assert (tmp_path / "lattices.moses").read_bytes() == (FIXTURES / "searchgraph.osgx").read_bytes()
    weights = config.weights()
    weights["PP_the"] = 0.1
    graphs = read_graphs(str(tmp_path / "lattices"))
    assert sorted(graphs[0].feature_space.symbols(range(len(graphs[0].feature_space)))) == sorted([*NAMES, "PP_the"])
    best = [viterbi(hg, weights) for hg in graphs]
    # Moses's best of the made-up system (the fixture's scores): 'the small house' at -3, 'yes' at -0.5
    assert [d.words for d in best] == [["the", "small", "house"], ["yes"]]
    assert [d.score for d in best] == pytest.approx([-3.0, -0.5])


def test_a_plain_search_graph_is_refused(tmp_path: Path) -> None:
    ini = tmp_path / "moses.ini"
    ini.write_text(MOSES_INI, encoding="utf-8")
    shutil.copy(FIXTURES / "searchgraph.osg", tmp_path / "lattices")
    with pytest.raises(
        InputError, match=r"lattices: a plain Moses search graph .* write -output-search-graph-extended"
    ):
        DecoderConfig.from_file(str(ini)).finish_output(str(tmp_path), "lattices")


def test_dense_values_the_ini_does_not_name_are_an_error(tmp_path: Path) -> None:
    ini = tmp_path / "moses.ini"
    ini.write_text(MOSES_INI.replace("WordPenalty\n", "").replace("WordPenalty0= -1\n", ""), encoding="utf-8")
    shutil.copy(FIXTURES / "searchgraph.osgx", tmp_path / "lattices")
    with pytest.raises(InputError, match=r"lattices:2: 5 dense scores but 4 dense feature names were given"):
        DecoderConfig.from_file(str(ini)).finish_output(str(tmp_path), "lattices")


def test_the_tuning_loop_tunes_on_named_search_graphs(tmp_path: Path) -> None:
    """``tune --decoder-config moses.ini --accumulate lattice`` with a 'decoder' that writes the fixture: the loop
    keeps the lattices as the cache, and the dev metric of the start weights (chrF: a 3-word corpus has no 4-grams
    for BLEU) is sacrebleu's chrF of Moses's best paths, 'the small house' and 'yes'."""
    import json

    import sacrebleu

    from hypertune.cli import main

    ini = tmp_path / "moses.ini"
    ini.write_text(MOSES_INI, encoding="utf-8")
    refs = tmp_path / "ref"
    refs.write_text("a small house\nyes .\n", encoding="utf-8")
    decoder = f"cp {FIXTURES / 'searchgraph.osgx'} {{lattices}} # {{weights}}"
    workdir = tmp_path / "run"
    argv = [
        "tune",
        "--decoder",
        decoder,
        "--decoder-config",
        str(ini),
        "--refs",
        str(refs),
        "--accumulate",
        "lattice",
        "--iterations",
        "1",
        "--workdir",
        str(workdir),
        "--json",
        "--quiet",
        "--metric",
        "chrf",
    ]
    assert main(argv) == 0
    result = json.loads((workdir / "result.json").read_text(encoding="utf-8"))
    expected = sacrebleu.corpus_chrf(["the small house", "yes"], [["a small house", "yes ."]]).score / 100
    assert result["history"][0]["score"] == pytest.approx(expected, abs=1e-12)
    assert result["stopped"] == "no new candidates"
    output = workdir / "iteration-001" / "output"
    assert detect_format(str(output / "lattices")).name == "hypertune-cache"
    assert (output / "lattices.moses").read_bytes() == (FIXTURES / "searchgraph.osgx").read_bytes()
