"""Moses n-best labels whose names hold ':' or '=' (phrase-pair features name phrases with any punctuation).

Moses's own reader (mert/Data.cpp) takes any token ending in '=' as a label; the expected names and values
below are read off the lines by that rule, by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from hypertune.errors import InputError
from hypertune.formats import read_graphs
from hypertune.formats.nbest import kbest_entries


def _entries(tmp_path: Path, text: str) -> list[tuple[list[str], dict[str, float]]]:
    path = tmp_path / "n.nbest"
    path.write_text(text, encoding="utf-8")
    (graph,) = read_graphs(str(path), format="moses-nbest")
    return kbest_entries(graph)


def test_phrase_pair_names_with_colons_and_equals_signs(tmp_path: Path) -> None:
    line = '0 ||| a " b ||| LM0= -1.5 PP_:~„~~&quot;= 1 PP_a=b~~c= 2 PP_x:= 1 TM0= -2 -3 ||| -1\n'
    ((words, features),) = _entries(tmp_path, line)
    assert words == ["a", '"', "b"]
    assert features == {
        "LM0": -1.5,
        "PP_:~„~~&quot;": 1.0,
        "PP_a=b~~c": 2.0,
        "PP_x:": 1.0,
        "TM0_0": -2.0,
        "TM0_1": -3.0,
    }


def test_a_legacy_label_is_still_a_plain_word(tmp_path: Path) -> None:
    ((_, features),) = _entries(tmp_path, "0 ||| a ||| lm: -1 -2 w: 3 ||| -1\n")
    assert features == {"lm_0": -1.0, "lm_1": -2.0, "w": 3.0}
    with pytest.raises(InputError, match=r"n\.nbest:1: .*'x'.*expected a number, got 'y:'"):
        _entries(tmp_path, "0 ||| a ||| LM0= -1 x=y: 1 ||| -1\n")
