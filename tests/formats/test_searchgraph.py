"""Moses phrase-based search graphs (-output-search-graph, -osgx) on the hand-written fixtures
fixtures/formats/searchgraph.osg and .osgx (the same search; see docs/formats.md).

Sentence 0 translates 'das kleine Haus'. Hypotheses (Moses ids): 1 'the' and 3 'house' from the start;
4 'small' after 1, into which 2 'the small' (from the start) was recombined; 5 'little' after 1; 6 'the' after 3;
finals 7 'house' after 4, 8 'house' after 5, 9 'small' after 6, into which 10 'little' was recombined. Moses's
best is hypothesis 7 (score -3): 'the small house'. Sentence 1 ('ja'): finals 'yes' (-0.5), 'yes .' (-0.9),
and an empty phrase (-4).
"""

from __future__ import annotations

import gzip
import json
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.strategies import corruptions as damaged

from hypertune.algorithms import count_derivations, describe_graph, viterbi
from hypertune.cli import main
from hypertune.errors import InputError
from hypertune.formats import FORMATS, detect_format, moses_searchgraph, read_graphs
from hypertune.symbols import FeatureSpace, Vocabulary
from hypertune.weights import Weights

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "formats"
PLAIN = str(FIXTURES / "searchgraph.osg")
EXTENDED = str(FIXTURES / "searchgraph.osgx")
#: The weights of the (made-up) system that wrote searchgraph.osgx: its arcs' weighted scores are the transitions.
SYSTEM = {"core_0": 0.3, "core_1": 0.5, "core_2": 0.2, "core_3": 0.2, "core_4": -1.0, "PP_the": 0.1}


def read(path: str, **kwargs):
    return moses_searchgraph.read(path, FeatureSpace(), Vocabulary(), **kwargs)


def read_text(tmp_path: Path, text: str, **kwargs):
    path = tmp_path / "graph.osg"
    path.write_text(text, encoding="utf-8")
    return read(str(path), **kwargs)


def arcs(hg) -> set[tuple[str, str, str]]:
    """(tail label, head label, words) of every arc but the start axiom."""
    labels = hg.node_labels
    return {(labels[int(hg.edge_tails(e)[0])], labels[int(hg.head[e])], _words(hg, e)) for e in range(1, hg.num_edges)}


def _words(hg, e: int) -> str:
    return " ".join(hg.vocabulary.word(int(t)) for t in hg.edge_target(e) if t >= 0)


# ---------------------------------------------------------------------- structure


@pytest.mark.parametrize("path", [PLAIN, EXTENDED])
def test_counts_and_sentences(path):
    graphs = read(path)
    assert [g.sentence_id for g in graphs] == [0, 1]
    first, second = graphs
    # nodes: start, the 8 surviving hypotheses, goal; edges: axiom, 10 transitions, 3 goal arcs
    assert describe_graph(first) == {
        "nodes": 10,
        "edges": 14,
        "derivations": 5,
        "max_arity": 1,
        "features": 1 if path == PLAIN else 6,
        "lattice": True,
    }
    assert (second.num_nodes, second.num_edges, count_derivations(second)) == (5, 7, 3)
    assert first.node_labels == ["0", "1", "3", "4", "5", "6", "7", "8", "9", "goal"]
    for g in graphs:
        assert np.array_equal(g.edge_target(0), [])
        assert len(g.metadata["covered"]) == len(g.source_covered) == g.num_edges


def test_recombination_arcs_go_into_the_surviving_hypothesis():
    hg = read(PLAIN)[0]
    found = arcs(hg)
    assert ("0", "4", "the small") in found  # hyp 2, recombined into 4
    assert ("6", "9", "little") in found  # hyp 10, recombined into 9
    assert ("1", "4", "small") in found and ("6", "9", "small") in found
    assert not {"2", "10"} & set(hg.node_labels)  # losers are no nodes
    assert {a for a in found if a[1] == "goal"} == {("7", "goal", ""), ("8", "goal", ""), ("9", "goal", "")}
    loser = next(e for e in range(hg.num_edges) if hg.metadata["covered"][e] == [0, 1])
    assert hg.edge_features(loser) == {"Transition": -2.5} and hg.source_covered[loser] == 2


def test_viterbi_with_transition_weight_one_is_moses_best():
    graphs = read(PLAIN)
    best = [viterbi(g, Weights({"Transition": 1.0})) for g in graphs]
    assert best[0].words == ["the", "small", "house"] and best[0].score == pytest.approx(-3.0)
    assert best[1].words == ["yes"] and best[1].score == pytest.approx(-0.5)
    # the worst weight flips to the cheapest-to-lose path: the empty translation of sentence 1
    assert viterbi(graphs[1], Weights({"Transition": -1.0})).words == []


def test_all_paths_score_their_final_hypothesis():
    hg = read(PLAIN)[0]
    scores = sorted(
        round(sum(hg.edge_features(e).get("Transition", 0.0) for e in d.edges()), 9) for d in _all_derivations(hg)
    )
    assert scores == [-5.7, -5.4, -3.4, -3.3, -3.0]


def _all_derivations(hg):
    from hypertune.hypergraph import Derivation

    def walk(node):
        for e in hg.in_edges(node):
            tails = hg.edge_tails(e)
            if len(tails) == 0:
                yield Derivation(e)
            else:
                for child in walk(int(tails[0])):
                    yield Derivation(e, (child,))

    return list(walk(hg.goal))


def test_extended_form_features_reproduce_the_transitions():
    plain, extended = read(PLAIN), read(EXTENDED)
    weights = Weights(SYSTEM)
    for p, x in zip(plain, extended, strict=True):
        assert arcs(p) == arcs(x)
        for e in range(x.num_edges):
            transition = p.edge_features(e).get("Transition", 0.0)
            assert sum(weights.get(n, 0.0) * v for n, v in x.edge_features(e).items()) == pytest.approx(transition)
        assert viterbi(x, weights).words == viterbi(p, Weights({"Transition": 1.0})).words
    first = extended[0]
    edge = next(e for e in range(first.num_edges) if first.metadata["covered"][e] == [0, 1])
    assert first.edge_features(edge) == {"core_1": -8.2, "core_2": -1.5, "core_3": -1.0, "core_4": -2.0, "PP_the": 1.0}
    assert "Transition" not in first.feature_space.names


def test_extended_dense_names():
    names = ["Distortion0", "LM0", "TranslationModel0_0", "TranslationModel0_1", "WordPenalty0"]
    hg = read(EXTENDED, dense_names=names)[0]
    assert set(hg.feature_space.names) == {*names[1:], "Distortion0", "PP_the"}
    with pytest.raises(InputError, match="5 dense scores but 2 dense feature names") as error:
        read(EXTENDED, dense_names=["a", "b"])
    assert error.value.line == 2


START = "0 hyp=0 stack=0 forward=1 fscore=-1\n"
ARC = '0 hyp=1 stack=1 back=0 score=-1 transition=-1 forward=-1 fscore=0 covered=0-0 scores="{}" out="ja|yes"\n'


@pytest.mark.parametrize(
    ("scores", "features"),
    [
        ("core=(-1,0,2.5) WT_ja~yes=1 PP_x=0", {"core_0": -1.0, "core_2": 2.5, "WT_ja~yes": 1.0}),
        ("{core=(-1,0,2.5) WT_ja~yes=1, }", {"core_0": -1.0, "core_2": 2.5, "WT_ja~yes": 1.0}),
        ("<<-1, 0, 2.5>>", {"core_0": -1.0, "core_2": 2.5}),
        ("core=(-2) ", {"core": -2.0}),
    ],
)
def test_extended_score_forms_of_moses_versions(tmp_path, scores, features):
    hg = read_text(tmp_path, START + ARC.format(scores))[0]
    assert hg.edge_features(1) == features and _words(hg, 1) == "yes"


def test_factored_source_and_empty_target_in_extended_form(tmp_path):
    text = START + ARC.format("core=(1)").replace('out="ja|yes"', 'out="ja|ADV|"')
    hg = read_text(tmp_path, text)[0]
    assert _words(hg, 1) == "" and viterbi(hg, Weights({"core": 1.0})).words == []


def test_plain_start_line_without_forward_and_empty_source(tmp_path):
    hg = read_text(tmp_path, "7 hyp=0 stack=0\n")[0]  # an empty input: hyp 0 is final
    assert hg.sentence_id == 7 and count_derivations(hg) == 1 and viterbi(hg, Weights()).words == []


def test_factored_plain_output_and_words_with_equals_signs(tmp_path):
    text = (
        "0 hyp=0 stack=0\n0 hyp=1 stack=2 back=0 score=-1 transition=-1 forward=-1 fscore=0 covered=0-1 out=a=b c|N\n"
    )
    hg = read_text(tmp_path, text)[0]
    assert viterbi(hg, Weights({"Transition": 1.0})).words == ["a=b", "c|N"]


# ---------------------------------------------------------------------- sniffing and CLI


def test_sniffing_and_read_graphs(tmp_path):
    assert detect_format(PLAIN).name == detect_format(EXTENDED).name == "moses-searchgraph"
    assert "moses-searchgraph" in FORMATS
    graphs = read_graphs([PLAIN, EXTENDED])
    assert len(graphs) == 4 and graphs[0].feature_space is graphs[3].feature_space
    packed = tmp_path / "graph.gz"
    packed.write_bytes(gzip.compress(Path(PLAIN).read_bytes()))
    assert detect_format(str(packed)).name == "moses-searchgraph"
    assert [g.num_edges for g in read_graphs(str(packed))] == [14, 7]
    for other in ["toy.moses-hg", "labels.nbest", "lattice.plf", "toy.cdec.json", "legacy.nbest"]:
        assert detect_format(str(FIXTURES / other)).name != "moses-searchgraph"
    assert not moses_searchgraph.sniff("0 ||| a b ||| tm= -1 ||| -1\n")
    assert not moses_searchgraph.sniff("0 1 the 0.5\n")


def test_inspect_json(capsys):
    assert main(["inspect", PLAIN, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["total"] == {
        "graphs": 2,
        "nodes": 15,
        "edges": 21,
        "derivations": 8,
        "max_arity": 1,
        "features": 1,
    }
    assert [g["lattice"] for g in payload["graphs"]] == [True, True]


def test_inspect_reports_errors_as_messages(tmp_path, capsys):
    bad = tmp_path / "bad.osg"
    bad.write_text(START + "0 hyp=1 stack=1 back=5 score=-1 transition=-1 forward=-1 covered=0-0 out=a\n")
    code = main(["inspect", str(bad)])
    err = capsys.readouterr().err
    assert code != 0 and "bad.osg:2" in err and "back=5" in err and "Traceback" not in err


# ---------------------------------------------------------------------- errors

GOOD = Path(PLAIN).read_text(encoding="utf-8").split("\n")


def replace(number: int, old: str, new: str) -> str:
    lines = list(GOOD)
    assert old in lines[number - 1]
    lines[number - 1] = lines[number - 1].replace(old, new, 1)
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (replace(4, "back=1", "back=42"), 4, "back=42 names no hypothesis"),
        (replace(7, "back=3", "back=2"), 7, "back=2 names a recombined hypothesis"),
        (replace(4, "score=-2.2", "score=-2.x"), 4, "expected a number for score="),
        (replace(4, "score=-2.2", "score=nan"), 4, "must be finite"),
        (replace(4, "score=-2.2", "score=-7"), 4, "is not the score of back=1"),
        (replace(4, " covered=1-1", ""), 4, "missing the field covered="),
        (replace(4, "covered=1-1", "covered=2-1"), 4, "expected covered=START-END"),
        (replace(4, "stack=2", "stack=3"), 4, "stack=3, but back=1 is in stack 1"),
        (replace(5, "recombined=4", "recombined=77"), 5, "recombined=77 names no surviving hypothesis"),
        (replace(5, "recombined=4", "recombined=3"), 5, "recombined=3 is in stack 1"),
        (replace(4, "hyp=4", "hyp=3"), 4, "hypothesis 3 is described twice (first on line 3)"),
        (replace(4, "forward=7", "forward=8"), 4, "forward=8 names no hypothesis extending hypothesis 4"),
        (replace(8, "forward=-1", "forward=3"), 8, "forward=3 on a final hypothesis"),
        (replace(4, "fscore=-0.8", "fscore=-0.8 colour=red"), 4, "unknown field colour="),
        (replace(4, "out=small", "bogus"), 4, "expected a field name=value"),
        (replace(1, "0 hyp=0", "x hyp=0"), 1, "expected an integer for the sentence id"),
        (replace(1, "stack=0", "stack=0 back=3"), 1, "hyp=0 is the start hypothesis: it has no back="),
        (replace(12, "1 hyp=0 stack=0", "1 hyp=9 stack=0"), 12, "hypothesis 9: missing the field back="),
        (replace(15, "1 hyp=3", "0 hyp=11"), 15, "sentence 0 appears again"),
        (replace(4, "out=small", 'scores="core=(1)" out="a|small"'), 4, "has scores="),
        ("\n\n", 2, "no search graph lines"),
    ],
)
def test_errors_name_the_line(tmp_path, text, line, message):
    with pytest.raises(InputError) as error:
        read_text(tmp_path, text)
    assert message in error.value.reason, error.value.reason
    assert error.value.line == line and error.value.path.endswith("graph.osg")


def test_missing_start_line_is_an_error(tmp_path):
    text = "\n".join(GOOD[1:])
    with pytest.raises(InputError, match="no start hypothesis line") as error:
        read_text(tmp_path, text)
    assert error.value.line == 1


@pytest.mark.parametrize(
    ("scores", "message"),
    [
        ("core=(1,x)", "expected a number for dense score 1"),
        ("core=(1", "closing core=(...)"),
        ("1 2 3", "expected scores="),
        ("core=(1) a", "expected a sparse score name=value"),
        ("<<1, 2", "closing '>>'"),
    ],
)
def test_extended_score_errors(tmp_path, scores, message):
    with pytest.raises(InputError, match=re.escape(message)) as error:
        read_text(tmp_path, START + ARC.format(scores))
    assert error.value.line == 2


def test_extended_dense_count_must_agree(tmp_path):
    text = START + ARC.format("core=(1,2)") + ARC.format("core=(1)").replace("hyp=1", "hyp=2")
    with pytest.raises(InputError, match="1 dense scores, but earlier lines have 2") as error:
        read_text(tmp_path, text)
    assert error.value.line == 3


# ---------------------------------------------------------------------- fuzzing

JUNK = ["", "x", "nan", "inf", "1e999", "-", "-1", "0", "99", "1.5", "=", '"', "|", "hyp=3", "back=0", "0-0", "7-2"]


def corruptions(text: str) -> st.SearchStrategy[str]:
    return damaged(text, JUNK, r"[^\s=\"|]+|[=\"|]")


@pytest.mark.parametrize("name", ["searchgraph.osg", "searchgraph.osgx"])
def test_fuzz(name):
    text = (FIXTURES / name).read_text(encoding="utf-8")

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(corruptions(text))
    def run(corrupted: str) -> None:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / name
            path.write_text(corrupted, encoding="utf-8")
            try:
                graphs = read(str(path))
            except InputError as error:
                assert error.path == str(path) and error.line is not None and error.line >= 1, error
                assert error.reason and "Traceback" not in error.reason
            else:
                for g in graphs:  # whatever reads is a well-formed lattice with a path
                    assert g.is_lattice and count_derivations(g) >= 1

    run()
