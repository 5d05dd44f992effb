"""A moses.ini's ``[weight-file]`` (Moses's sparse weights, one ``name value`` a line, as mert-moses.pl writes
them for sparse features): read with the ini's weights, and left for the caller when weights are rewritten.
Expected values are the numbers written in the files below."""

from __future__ import annotations

from pathlib import Path

import pytest

from hypertune.errors import InputError
from hypertune.formats import read_weights
from hypertune.formats.weights import parse_weights, rewrite_weights

INI = "[feature]\nLM name=LM0 factor=0\nWordPenalty\n\n[weight]\nLM0= 0.5\nWordPenalty0= -1\n\n[weight-file]\n{path}\n"


def test_a_weight_file_beside_the_ini_is_read_with_it(tmp_path: Path) -> None:
    (tmp_path / "run4.sparse-weights").write_text("PP_a~~b 0.25\nPP_:~„~~&quot; -0.125\n", encoding="utf-8")
    ini = tmp_path / "moses.ini"
    ini.write_text(INI.format(path="run4.sparse-weights"), encoding="utf-8")
    assert dict(read_weights(str(ini))) == {
        "LM0": 0.5,
        "WordPenalty0": -1.0,
        "PP_a~~b": 0.25,
        "PP_:~„~~&quot;": -0.125,
    }


def test_the_weight_file_overrides_the_text_and_an_absolute_path_is_read_as_given(tmp_path: Path) -> None:
    sparse = tmp_path / "elsewhere" / "w.sparse"
    sparse.parent.mkdir()
    sparse.write_text("LM0 2\nTWI_the 1.5\n", encoding="utf-8")
    ini = tmp_path / "moses.ini"
    ini.write_text(INI.format(path=sparse), encoding="utf-8")
    assert dict(read_weights(str(ini))) == {"LM0": 2.0, "WordPenalty0": -1.0, "TWI_the": 1.5}


def test_a_missing_weight_file_names_the_ini_line(tmp_path: Path) -> None:
    ini = tmp_path / "moses.ini"
    ini.write_text(INI.format(path="gone.sparse"), encoding="utf-8")
    with pytest.raises(InputError, match=r"moses\.ini:10: \[weight-file\] names 'gone\.sparse', which is not a file"):
        read_weights(str(ini))


def test_rewriting_leaves_the_weight_files_names_to_the_caller(tmp_path: Path) -> None:
    (tmp_path / "s").write_text("PP_a~~b 0.25\n", encoding="utf-8")
    ini = tmp_path / "moses.ini"
    text = INI.format(path="s")
    ini.write_text(text, encoding="utf-8")
    new, rest = rewrite_weights(text, {"LM0": 0.75, "WordPenalty0": -2.0, "PP_a~~b": 0.5}, str(ini))
    # the text's own weights are rewritten in place; the sparse one comes back, to be written to a new weight file
    assert rest == {"PP_a~~b": 0.5}
    assert "LM0= 0.75\n" in new and "WordPenalty0= -2\n" in new
    assert parse_weights(new, str(ini)) == {"LM0": 0.75, "WordPenalty0": -2.0, "PP_a~~b": 0.25}
