"""``hypertune decode --out FILE --out-format ...``: k-best lists and 1-best text written to a file, so that
hypertune can be the decoder of a tuning loop. Expected outputs are written out by hand from the scores
w·f computed here, not by the code under test."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.paths import FIXTURES

from hypertune.cli import main
from hypertune.formats import read_graphs
from hypertune.formats.weights import parse_weights, rewrite_weights

# two sentences, ids 7 and 3 (out of order), three hypotheses each; weights a = 1, b = -1
NBEST = """7 ||| x y ||| a= 1 b= 0.5 ||| 0
7 ||| x z ||| a= 2 b= 0.25 ||| 0
7 ||| y y ||| a= 0 b= -1 ||| 0
3 ||| p ||| a= 0.5 b= 1 ||| 0
3 ||| q ||| a= 1 b= 2 ||| 0
3 ||| r s ||| a= -1 b= -2 ||| 0
"""
# scores: sentence 7: x y 0.5, x z 1.75, y y 1;  sentence 3: p -0.5, q -1, r s 1


@pytest.fixture
def lists(tmp_path: Path) -> Path:
    (tmp_path / "in.nbest").write_text(NBEST)
    (tmp_path / "w").write_text("a 1\nb -1\n")
    return tmp_path


def test_moses_nbest_keeps_ids_features_and_order(lists, capsys):
    out = lists / "out.nbest"
    code = main(["decode", str(lists / "in.nbest"), "-w", str(lists / "w"), "--kbest", "2", "--out", str(out)])
    assert code == 0
    assert out.read_text() == (
        "3 ||| r s ||| a= -1 b= -2 ||| 1\n"
        "3 ||| p ||| a= 0.5 b= 1 ||| -0.5\n"
        "7 ||| x z ||| a= 2 b= 0.25 ||| 1.75\n"
        "7 ||| y y ||| b= -1 ||| 1\n"
    )
    assert capsys.readouterr().out == f"wrote 4 derivation(s) of 2 sentence(s) to {out}\n"
    graphs = read_graphs(str(out))
    assert [g.sentence_id for g in graphs] == [3, 7]


def test_text_is_the_first_best_in_sentence_order(lists, capsys):
    out = lists / "best.txt"
    assert (
        main(["decode", str(lists / "in.nbest"), "-w", str(lists / "w"), "--out", str(out), "--out-format", "text"])
        == 0
    )
    assert out.read_text() == "r s\nx z\n"


def test_json_out_is_the_json_payload(lists, capsys):
    out = lists / "d.json"
    argv = ["decode", str(lists / "in.nbest"), "-w", str(lists / "w"), "--kbest", "1"]
    assert main([*argv, "--out", str(out), "--out-format", "json"]) == 0
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    assert out.read_text() == capsys.readouterr().out


def test_hgdir_sentence_ids_come_from_file_names(tmp_path, capsys):
    out = tmp_path / "out.nbest"
    hgdir = FIXTURES / "formats" / "hgdir"
    weights = hgdir / "weights"
    assert main(["decode", str(hgdir), "-w", str(weights), "--kbest", "3", "--out", str(out)]) == 0
    ids = [int(line.split(" ||| ")[0]) for line in out.read_text().splitlines()]
    assert sorted(set(ids)) == [0, 1] and ids == sorted(ids)
    text = tmp_path / "best.txt"  # the 1-best translations without the decoder's sentence markers
    assert main(["decode", str(hgdir), "-w", str(weights), "--out", str(text), "--out-format", "text"]) == 0
    assert text.read_text() == "a\nb\n"
    (tmp_path / "ref").write_text("a b\nc d\n")
    capsys.readouterr()
    assert main(["mert", str(out), "--refs", str(tmp_path / "ref"), "--init", str(weights), "--json"]) == 0


def test_out_path_is_checked_before_work(lists, capsys):
    code = main(["decode", str(lists / "in.nbest"), "-w", str(lists / "w"), "--out", str(lists / "no" / "such")])
    assert code == 1 and "--out" in capsys.readouterr().err


def test_moses_ini_fixture_round_trip():
    """The repository's moses.ini fixtures, both weight syntaxes: new values read back, the rest unchanged."""
    for name in ("moses.ini", "old-moses.ini"):
        text = (FIXTURES / "formats" / name).read_text()
        old = parse_weights(text, name)
        new = {key: value * 2 + 1 for key, value in old.items()}
        written, rest = rewrite_weights(text, new, name)
        assert rest == {} and parse_weights(written, name) == new
        changed = [(a, b) for a, b in zip(text.splitlines(), written.splitlines(), strict=True) if a != b]
        assert all(not a.startswith("[") and "name=" not in a for a, _ in changed)
