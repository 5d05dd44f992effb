"""A moses.ini's ``[weight-file]`` (Moses's sparse weights, one ``name value`` a line, as mert-moses.pl writes
them for sparse features): read with the ini's weights, and left for the caller when weights are rewritten.
Expected values are the numbers written in the files below, combined as Moses's StaticData::LoadData does
(the weight file first, then the [weight] section's values over it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hypertune.errors import InputError
from hypertune.formats import read_weights
from hypertune.formats.weights import parse_weights, rewrite_weights, write_weights

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


def test_the_sections_values_win_and_a_path_is_read_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sparse = tmp_path / "elsewhere" / "w.sparse"
    sparse.parent.mkdir()
    sparse.write_text("# sparse weights\nLM0 2\nTWI_the 1.5\n", encoding="utf-8")
    ini = tmp_path / "moses.ini"
    ini.write_text(INI.format(path=sparse), encoding="utf-8")
    assert dict(read_weights(str(ini))) == {"LM0": 0.5, "WordPenalty0": -1.0, "TWI_the": 1.5}
    # a relative name is opened from the working directory first, as Moses opens it
    (tmp_path / "w.sparse").write_text("TWI_a 3\n", encoding="utf-8")
    (tmp_path / "elsewhere" / "moses.ini").write_text(INI.format(path="w.sparse"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert dict(read_weights(str(tmp_path / "elsewhere" / "moses.ini")))["TWI_a"] == 3.0


def test_names_with_equals_signs_are_kept(tmp_path: Path) -> None:
    (tmp_path / "s").write_text("PP_a=b~~c 0.5\nPP_x~y 0.25\n", encoding="utf-8")
    ini = tmp_path / "moses.ini"
    ini.write_text(INI.format(path=tmp_path / "s"), encoding="utf-8")
    assert dict(read_weights(str(ini)))["PP_a=b~~c"] == 0.5
    # and in a weights file of 'name value' lines (the tuning loop's), written and read back
    weights = {"LM0": 1.0, "PP_a=b~~c": 0.5, "PP_x~y": 0.25}
    path = tmp_path / "init.weights"
    write_weights(weights, str(path), "cdec")
    assert path.read_text(encoding="utf-8").splitlines()[1] == "PP_a=b~~c 0.5"
    assert dict(read_weights(str(path))) == weights


def test_a_second_weight_file_and_a_bad_line_are_refused(tmp_path: Path) -> None:
    (tmp_path / "s").write_text("PP_a 0.5\nPP_b 1 2\n", encoding="utf-8")
    ini = tmp_path / "moses.ini"
    ini.write_text(INI.format(path=tmp_path / "s") + "other\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"moses\.ini:11: \[weight-file\] names one file; this is a second"):
        read_weights(str(ini))
    ini.write_text(INI.format(path=tmp_path / "s"), encoding="utf-8")
    with pytest.raises(InputError, match=r"/s:2: expected 'name value', got 'PP_b 1 2'"):
        read_weights(str(ini))


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
