"""Never a silent wrong answer: sentences matched to references by id, weights checked against the inputs'
features, one scoring rule and one BLEU scale for every command, outputs checked before work starts,
and one exit code and one line on stderr for every kind of bad input."""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import subprocess
import sys
import warnings

import pytest
from support.paths import FIXTURES, REPO

from hypertune.algorithms import count_derivations
from hypertune.cli import build_parser, main
from hypertune.errors import HypertuneWarning, InputError
from hypertune.formats import read_graphs, read_weights
from hypertune.metrics import METRICS, BleuMetric
from hypertune.tuners.corpus import TuningSet
from hypertune.tuners.mert import Mert

NBEST = FIXTURES / "mert" / "nbest.txt"
REFS = [FIXTURES / "mert" / "ref.0", FIXTURES / "mert" / "ref.1"]
INIT = FIXTURES / "mert" / "init.weights"
FOREST = FIXTURES / "toy-forest.json"


def run(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: object) -> dict:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def sentences(*ids: int) -> list[str]:
    """The fixture n-best lines of the given sentence ids."""
    lines = NBEST.read_text().splitlines()
    return [line for line in lines if int(line.split("|||")[0]) in ids]


def reference_lines(path, ids) -> str:
    lines = path.read_text().splitlines()
    return "".join(lines[i] + "\n" for i in ids)


# ---------------------------------------------------------------------------------- sentences by id


@pytest.fixture
def gapped(tmp_path):
    """Sentences 0 and 2 (sentence 1 missing, as when a decoder fails on it) with all five reference lines,
    and the same two sentences renumbered 0 and 1 with just their reference lines: what it must equal."""
    gap = tmp_path / "gap.nbest"
    gap.write_text("\n".join(sentences(0, 2)) + "\n")
    renumbered = tmp_path / "renumbered.nbest"
    renumbered.write_text("\n".join(re.sub(r"^2 \|\|\|", "1 |||", line) for line in sentences(0, 2)) + "\n")
    refs = []
    for k, path in enumerate(REFS):
        ref = tmp_path / f"matching.{k}"
        ref.write_text(reference_lines(path, [0, 2]))
        refs.append(ref)
    return gap, renumbered, refs


def test_a_missing_sentence_is_scored_against_its_own_reference(gapped, capsys):
    gap, renumbered, matching = gapped
    expected = run_json(capsys, "mert", renumbered, "--refs", *matching, "--init", INIT, "--restarts", 2, "--seed", 3)
    code, out, err = run(capsys, "mert", gap, "--refs", *REFS, "--init", INIT, "--restarts", 2, "--seed", 3, "--json")
    got = json.loads(out)
    assert code == 0
    assert got["bleu_before"] == expected["bleu_before"] and got["bleu_after"] == expected["bleu_after"]
    assert got["weights"] == expected["weights"]
    # the three reference lines no sentence uses are reported, once, as one warning line
    assert err.count("\n") == 1 and "warning: 3 of the 5 reference lines" in err and "0, 2" in err


@pytest.mark.parametrize(
    "command",
    [
        ["bleu", "--tokenize", "none", "--smooth", "none", "--nbest", "{nbest}", "--refs", "{refs}"],
        ["mira", "{nbest}", "--refs", "{refs}", "--init", str(INIT), "--epochs", "3"],
        ["hope-fear", "{nbest}", "--refs", "{refs}", "--weights", str(INIT)],
        ["linesearch", "{nbest}", "--refs", "{refs}", "--weights", str(INIT), "--direction", "LM0"],
    ],
    ids=["bleu", "mira", "hope-fear", "linesearch"],
)
def test_every_command_that_reads_references_matches_them_by_id(gapped, capsys, command):
    gap, renumbered, matching = gapped

    def call(nbest, refs):
        argv = []
        for part in command:
            argv.extend([str(r) for r in refs] if part == "{refs}" else [part.format(nbest=nbest)])
        return run_json(capsys, *argv)

    expected, got = call(renumbered, matching), call(gap, REFS)
    if command[0] == "hope-fear":  # rows carry the sentence id: 2 here, 1 in the renumbered list
        assert [row["sentence"] for row in got["sentences"]] == [0, 2]
        for row in (*expected["sentences"], *got["sentences"]):
            row.pop("sentence")
    for payload in (expected, got):  # times differ from run to run
        payload.pop("timing", None), payload.pop("seconds", None)
        for entry in payload.get("history", ()):
            entry.pop("seconds")
    assert got == expected


def test_sentence_ids_past_the_references_name_the_id_and_the_file(tmp_path, capsys):
    short = tmp_path / "short.ref"
    short.write_text(reference_lines(REFS[0], [0, 1, 2]))
    code, out, err = run(capsys, "mert", NBEST, "--refs", short, "--init", INIT)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "sentence id 3" in err and str(short) in err and "3 lines" in err


def test_references_that_are_evidently_not_references_are_refused(tmp_path, capsys):
    code, _, err = run(capsys, "mert", NBEST, "--refs", NBEST, "--init", INIT)
    assert code == 1 and "n-best list" in err and str(NBEST) in err
    featstat = tmp_path / "FEATSTAT"
    featstat.write_text("FEATURES_TXT_BEGIN_0 0 1 1 LM0\n1\nFEATURES_TXT_END_0\n")
    code, _, err = run(capsys, "bleu", "--hyp", REFS[0], "--refs", featstat)
    assert code == 1 and "FEATSTAT" in err and str(featstat) in err


def test_explicit_ids_merge_and_positional_graphs_are_numbered_across_inputs(tmp_path):
    """n-best ids (and the other explicit ids) merge across inputs; graphs without ids (cdec JSON, PLF) are
    numbered by position across all inputs in order."""
    a, b = tmp_path / "a.nbest", tmp_path / "b.nbest"
    a.write_text("\n".join(sentences(3, 1)) + "\n")
    b.write_text("\n".join(sentences(1)[:2] + [sentences(1)[0].replace("i am going home now", "i am home")]) + "\n")
    graphs = read_graphs([str(a), str(b)])
    references = [["r"]] * 5
    with pytest.warns(HypertuneWarning, match="3 of the 5 reference lines"):
        tuning_set = TuningSet.from_corpus(graphs, references, BleuMetric(tokenize="none"))
    assert tuning_set.sentence_ids == [1, 3]
    # sentence 1: its five hypotheses, plus the one new hypothesis of b (b's first two are duplicates)
    assert [g.num_edges - 1 for g in tuning_set.graphs] == [6, 5]
    forests = read_graphs([str(FOREST), str(FOREST)])
    assert TuningSet.from_corpus(forests, [["a"], ["b"]], BleuMetric()).sentence_ids == [0, 1]
    with pytest.raises(InputError, match="sentence id 1 has no reference"):
        TuningSet.from_corpus(forests, [["a"]], BleuMetric())


def test_moses_hypergraph_file_names_and_slf_utterances_are_sentence_ids(tmp_path):
    hgdir = tmp_path / "hgdir"
    hgdir.mkdir()
    toy = (FIXTURES / "formats" / "toy.moses-hg").read_bytes()
    for name in ("3.gz", "1.gz"):
        (hgdir / name).write_bytes(gzip.compress(toy))
    lines = [["zero"], ["one"], ["two"], ["three"]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tuning_set = TuningSet.from_corpus(read_graphs(str(hgdir)), lines, BleuMetric(tokenize="none"))
    assert tuning_set.sentence_ids == [1, 3] and tuning_set.references == [["one"], ["three"]]
    assert [str(w.message) for w in caught if w.category is HypertuneWarning] == [
        "2 of the 4 reference lines in the references match no sentence (sentences: 1, 3)"
    ]
    slf = tmp_path / "lattice.slf"
    slf.write_text((FIXTURES / "formats" / "lattice.slf").read_text().replace("UTTERANCE=sent1", "UTTERANCE=2"))
    with pytest.warns(HypertuneWarning, match=r"3 of the 4 .*\(sentences: 2\)"):
        assert TuningSet.from_corpus(read_graphs(str(slf)), lines, BleuMetric()).sentence_ids == [2]


def test_graphs_with_ids_need_from_corpus_not_positions():
    graphs = read_graphs(str(NBEST))
    TuningSet(graphs, [["r"]] * 5, BleuMetric())  # ids 0..4 are their positions: fine
    with pytest.raises(InputError, match="from_corpus"):
        TuningSet(graphs[1:], [["r"]] * 4, BleuMetric())


# ---------------------------------------------------------------------------------- weights


def test_unknown_weight_names_warn_with_the_closest_name_and_strict_refuses(tmp_path, capsys):
    init = tmp_path / "init"
    init.write_text(INIT.read_text() + "LMO 0.5\n")
    code, out, err = run(capsys, "mert", NBEST, "--refs", *REFS, "--init", init)
    assert code == 0 and err.count("\n") == 1
    assert "warning" in err and "LMO (did you mean LM0?)" in err and str(init) in err
    code, out, err = run(capsys, "mert", NBEST, "--refs", *REFS, "--init", init, "--strict")
    assert code == 1 and out == "" and "LMO" in err and err.count("\n") == 1


def test_normalization_scales_the_whole_written_vector_by_one_factor(tmp_path, capsys):
    init = tmp_path / "init"
    init.write_text(INIT.read_text() + "Distortion0 0.5\n")  # a feature the n-best list does not have
    raw = run_json(capsys, "mert", NBEST, "--refs", *REFS, "--init", init, "--normalize", "none", "--restarts", 2)
    got = run_json(capsys, "mert", NBEST, "--refs", *REFS, "--init", init, "--restarts", 2)
    assert raw["weights"]["Distortion0"] == 0.5
    total = sum(abs(v) for v in raw["weights"].values())
    assert got["weights"] == pytest.approx({k: v / total for k, v in raw["weights"].items()}, rel=1e-12)


def test_weights_and_references_read_from_pipes(tmp_path, capsys):
    expected = run_json(capsys, "mert", NBEST, "--refs", *REFS, "--init", INIT)
    descriptors = []
    for text in (INIT.read_text(), REFS[0].read_text(), REFS[1].read_text()):
        read, write = os.pipe()
        os.write(write, text.encode())
        os.close(write)
        descriptors.append(read)
    try:
        init, ref0, ref1 = (f"/dev/fd/{fd}" for fd in descriptors)
        got = run_json(capsys, "mert", NBEST, "--refs", ref0, ref1, "--init", init)
        assert [got[k] for k in ("bleu_before", "bleu_after", "weights")] == [
            expected[k] for k in ("bleu_before", "bleu_after", "weights")
        ]
    finally:
        for fd in descriptors:
            os.close(fd)
    stdin = subprocess.run(
        [sys.executable, "-m", "hypertune", "mert", str(NBEST), "--refs", *map(str, REFS), "--init", "-", "--json"],
        input=INIT.read_bytes(),
        capture_output=True,
        cwd=REPO,
        check=True,
    )
    assert json.loads(stdin.stdout)["weights"] == expected["weights"]


# ---------------------------------------------------------------------------------- one model, one score

MARKED = """# target ||| features ||| source-covered
3 3
# node 0
1
<s> |||  ||| 0
# node 1
1
[0] a b c d  ||| f=1 ||| 4
# node 2
1
[1] </s> |||  ||| 4
"""


def test_sentence_markers_are_not_words_for_any_command(tmp_path, capsys):
    """One derivation "<s> a b c d </s>", reference "a b c d e": every precision is 1 and the brevity penalty
    is exp(1 - 5/4), by hand. Counting the markers would give 6 words and lower precisions."""
    graph, ref, weights = tmp_path / "0", tmp_path / "ref", tmp_path / "w"
    graph.write_text(MARKED)
    ref.write_text("a b c d e\n")
    weights.write_text("f 1\n")
    expected = math.exp(1 - 5 / 4)
    bleu = run_json(capsys, "bleu", "--graphs", graph, "-w", weights, "--refs", ref, "--tokenize", "none")
    assert bleu["bleu"] == pytest.approx(expected, rel=1e-12) and bleu["hyp_len"] == 4
    mert = run_json(capsys, "mert", graph, "--refs", ref, "--init", weights)
    mira = run_json(capsys, "mira", graph, "--refs", ref, "--init", weights, "--epochs", "1")
    hope_fear = run_json(capsys, "hope-fear", graph, "--refs", ref, "--weights", weights)
    line = run_json(capsys, "linesearch", graph, "--refs", ref, "--weights", weights, "--direction", "f")
    assert mert["bleu_before"] == pytest.approx(expected, rel=1e-12)
    assert mira["bleu_before"] == pytest.approx(expected, rel=1e-12)
    assert hope_fear["sentences"][0]["model"]["bleu"] == pytest.approx(expected, rel=1e-12)
    assert line["bleu_at_zero"] == pytest.approx(expected, rel=1e-12)
    # decode keeps the yield as the decoder wrote it
    code, out, _ = run(capsys, "decode", graph, "-w", weights)
    assert out.split("\t")[2].strip() == "<s> a b c d </s>"


def test_mert_and_mira_report_bleu_on_one_scale(capsys):
    code, out, _ = run(capsys, "mert", NBEST, "--refs", *REFS, "--init", INIT)
    payload = run_json(capsys, "mert", NBEST, "--refs", *REFS, "--init", INIT)
    shown = re.match(r"BLEU before ([\d.]+) after ([\d.]+)", out)
    assert float(shown.group(1)) == pytest.approx(100 * payload["bleu_before"], abs=0.005)
    assert float(shown.group(2)) == pytest.approx(100 * payload["bleu_after"], abs=0.005)
    code, out, _ = run(capsys, "mira", NBEST, "--refs", *REFS, "--init", INIT, "--epochs", "2")
    payload = run_json(capsys, "mira", NBEST, "--refs", *REFS, "--init", INIT, "--epochs", "2")
    shown = re.match(r"BLEU before ([\d.]+) after ([\d.]+)", out)
    assert float(shown.group(1)) == pytest.approx(100 * payload["bleu_before"], abs=0.005)
    assert float(shown.group(2)) == pytest.approx(100 * payload["bleu_after"], abs=0.005)


def test_mert_reports_every_line_search():
    graphs = read_graphs(str(NBEST))
    references = [[a, b] for a, b in zip(*(p.read_text().splitlines() for p in REFS), strict=True)]
    messages: list[str] = []
    result = Mert(restarts=1, seed=1, progress=messages.append).fit(
        TuningSet.from_corpus(graphs, references, BleuMetric(tokenize="none")), read_weights(str(INIT))
    )
    searches = [m for m in messages if m.startswith("\r")]
    assert len(searches) == result.line_searches
    assert searches[0].startswith("\rstart 1/2, line search 1: ") and searches[-1].startswith("\rstart 2/2")
    assert [m.split(":")[0] for m in messages if not m.startswith("\r")] == ["start 1/2", "start 2/2"]


# ---------------------------------------------------------------------------------- outputs


def test_an_unwritable_output_fails_before_any_input_is_read(capsys):
    code, out, err = run(capsys, "mert", "no-such-input", "--refs", *REFS, "--init", INIT, "-o", "/no/such/dir/w")
    assert code == 1 and out == "" and err.count("\n") == 1
    assert "/no/such/dir/w" in err and "no-such-input" not in err and ".hypertune-" not in err


def test_weights_reach_stdout_when_the_final_write_fails(tmp_path, capsys, monkeypatch):
    import hypertune.cli.tuning as tuning_front_end

    def full_disk(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tuning_front_end, "write_weights", full_disk)
    code, out, err = run(capsys, "mert", NBEST, "--refs", *REFS, "--init", INIT, "-o", tmp_path / "w")
    assert code == 1 and err.count("\n") == 1 and "No space left" in err and str(tmp_path / "w") in err
    printed = dict(line.split() for line in out.splitlines())
    assert set(printed) == {"LM0", "TM0_0", "TM0_1", "WordPenalty0"}


def test_written_files_keep_the_usual_permissions(tmp_path, capsys):
    mask = os.umask(0o022)
    try:
        out = tmp_path / "w"
        assert run(capsys, "mert", NBEST, "--refs", *REFS, "--init", INIT, "-o", out)[0] == 0
        assert out.stat().st_mode & 0o777 == 0o644
        out.chmod(0o600)  # replacing a file keeps its mode
        assert run(capsys, "mert", NBEST, "--refs", *REFS, "--init", INIT, "-o", out)[0] == 0
        assert out.stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(mask)


def test_json_is_standard_and_spells_out_infinity(capsys):
    from types import SimpleNamespace

    from hypertune.cli.common import emit

    emit(SimpleNamespace(json=True), "", {"interval": [-math.inf, 1.5], "nan": math.nan})

    def refuse(name):
        raise AssertionError(f"non-standard JSON constant {name}")

    assert json.loads(capsys.readouterr().out, parse_constant=refuse) == {"interval": ["-inf", 1.5], "nan": None}
    code, out, _ = run(capsys, "linesearch", NBEST, "--refs", *REFS, "--weights", INIT, "--direction", "LM0", "--json")
    payload = json.loads(out, parse_constant=refuse)
    low, high = payload["best_interval"]
    assert low == "-inf" or isinstance(low, float)


def test_a_closed_pipe_ends_quietly():
    process = subprocess.Popen(
        [sys.executable, "-m", "hypertune", "decode", str(FOREST), "-w", str(FIXTURES / "toy-forest.weights")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    process.stdout.close()  # the reader is gone before anything is written, as with '| head -0'
    stderr = process.stderr.read()
    assert process.wait() == 141 and stderr == b""


# ---------------------------------------------------------------------------------- the bad-input table


def _bad_files(tmp_path) -> dict[str, object]:
    files = {"missing": tmp_path / "missing"}
    (tmp_path / "empty").write_text("")
    files["empty"] = tmp_path / "empty"
    (tmp_path / "binary").write_bytes(bytes(range(256)) * 4)
    files["binary"] = tmp_path / "binary"
    return files


def _truncated_gzip(tmp_path, name: str, text: str):
    path = tmp_path / name
    data = gzip.compress(text.encode())
    path.write_bytes(data[: max(24, len(data) * 2 // 3)])
    return path


def bad_inputs(tmp_path) -> list[tuple[str, str, object]]:
    """(slot, class, path): a bad file for each place a command reads one."""
    cases = []
    big_nbest = "".join(f"{s} ||| w{s} x y ||| LM0= -{s}.5 TM0= -1 -2 WordPenalty0= -3 ||| -1\n" for s in range(300))
    for name, path in _bad_files(tmp_path).items():
        for slot in ("input", "refs", "weights"):
            cases.append((slot, name, path))
    (tmp_path / "cut.nbest").write_text(NBEST.read_text()[:300])
    cases.append(("input", "truncated", tmp_path / "cut.nbest"))
    cases.append(("input", "truncated-gzip", _truncated_gzip(tmp_path, "cut.nbest.gz", big_nbest)))
    cases.append(("refs", "truncated-gzip", _truncated_gzip(tmp_path, "cut.ref.gz", "a b c\n" * 3000)))
    cases.append(("weights", "truncated-gzip", _truncated_gzip(tmp_path, "cut.w.gz", "LM0 1\n" * 3000)))
    cases.append(("input", "wrong-format", INIT))
    cases.append(("refs", "wrong-format", NBEST))
    cases.append(("weights", "wrong-format", NBEST))
    (tmp_path / "short.ref").write_text("the house is small\n")
    cases.append(("refs", "mismatched", tmp_path / "short.ref"))
    (tmp_path / "unknown.w").write_text("LanguageModel 1\nWordPenalty -1\n")
    cases.append(("weights", "unknown-features", tmp_path / "unknown.w"))
    (tmp_path / "nan.w").write_text("LM0 nan\n")
    cases.append(("weights", "nan", tmp_path / "nan.w"))
    (tmp_path / "inf.nbest").write_text(NBEST.read_text().replace("-9.1", "inf", 1))
    cases.append(("input", "inf", tmp_path / "inf.nbest"))
    cases.append(("output", "unwritable", tmp_path / "no" / "such" / "dir" / "out"))
    return cases


COMMANDS = {
    "inspect": ["inspect", "{input}"],
    "decode": ["decode", "{input}", "-w", "{weights}"],
    "convert": ["convert", "{input}", "{output}", "--to", "hypertune"],
    "bleu": ["bleu", "--nbest", "{input}", "--refs", "{refs}", "-w", "{weights}"],
    "mert": ["mert", "{input}", "--refs", "{refs}", "--init", "{weights}", "-o", "{output}"],
    "linesearch": ["linesearch", "{input}", "--refs", "{refs}", "--weights", "{weights}", "--direction", "LM0"],
    "mira": ["mira", "{input}", "--refs", "{refs}", "--init", "{weights}", "--epochs", "1", "-o", "{output}"],
    "hope-fear": ["hope-fear", "{input}", "--refs", "{refs}", "--weights", "{weights}"],
}


def test_every_command_gives_one_exit_code_and_one_line_for_every_bad_input(tmp_path, capsys):
    good = {"input": NBEST, "refs": REFS[0], "weights": INIT, "output": tmp_path / "out"}
    checked = 0
    failures = []
    for slot, kind, path in bad_inputs(tmp_path):
        for command, template in COMMANDS.items():
            if "{" + slot + "}" not in template:
                continue
            values = {**good, slot: path}
            argv = [part.format(**{k: str(v) for k, v in values.items()}) for part in template]
            code, out, err = run(capsys, *argv)
            checked += 1
            name = os.path.basename(str(path)) if slot != "output" else str(path)
            ok = code == 1 and err.count("\n") == 1 and "Traceback" not in err and name in err
            ok = ok and err.startswith(f"hypertune {command}: error: ")
            if not ok:
                failures.append(f"{command} {slot}={kind}: exit {code}: {err.strip()}")
    assert not failures, "\n".join(failures)
    assert checked > 90


# ---------------------------------------------------------------------------------- the command line


def _subcommands():
    import argparse

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def test_every_option_has_help_and_no_choice_is_listed_twice():
    import argparse

    for name, parser in _subcommands().items():
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
            if action.choices:
                assert len(set(action.choices)) == len(list(action.choices)), f"{name} {action.dest}"


def test_metric_help_names_every_metric_and_graph_commands_take_format():
    commands = _subcommands()
    for name in ("mert", "linesearch"):
        text = commands[name].format_help()
        assert all(metric in text for metric in METRICS)
    for name in ("inspect", "decode", "bleu", "mert", "linesearch", "mira", "hope-fear"):
        assert "--format" in commands[name].format_help(), name


def test_mira_and_hope_fear_take_format(capsys):
    plain = run_json(capsys, "hope-fear", NBEST, "--refs", *REFS, "--weights", INIT)
    named = run_json(capsys, "hope-fear", NBEST, "--refs", *REFS, "--weights", INIT, "--format", "moses-nbest")
    assert named == plain
    code, _, err = run(capsys, "mira", NBEST, "--refs", *REFS, "--init", INIT, "--format", "plf")
    assert code == 1 and str(NBEST) in err and err.count("\n") == 1


def test_inspect_names_each_graphs_file(tmp_path, capsys):
    payload = run_json(capsys, "inspect", FOREST, NBEST)
    assert [row["file"] for row in payload["graphs"]] == [str(FOREST)] + [str(NBEST)] * 5
    assert [row.get("id") for row in payload["graphs"]][1:] == [0, 1, 2, 3, 4]


def test_decode_labels_each_graph_with_its_sentence_id(tmp_path, capsys):
    nbest = tmp_path / "gap.nbest"
    nbest.write_text("3 ||| a b ||| f= 1 ||| 1\n7 ||| c ||| f= 2 ||| 2\n")
    weights = tmp_path / "w"
    weights.write_text("f 1\n")
    code, out, _ = run(capsys, "decode", nbest, "-w", weights)
    assert out == "3\t1\ta b\n7\t2\tc\n"


def test_an_n_best_list_for_a_sentence_without_its_graph_is_said(tmp_path):
    """Accumulation adds n-best lists to lattices and forests; a list whose id no graph has is a new
    sentence, which is said rather than silently tuned on."""
    nbest = tmp_path / "envelope.nbest"
    nbest.write_text("0 ||| the cottage ||| tm= -1 ||| 0\n1 ||| a house ||| tm= -2 ||| 0\n")
    graphs = read_graphs([str(FOREST), str(nbest)])
    with pytest.warns(HypertuneWarning, match=r"sentence\(s\) 1 have only n-best lists"):
        tuning_set = TuningSet.from_corpus(graphs, [["the cottage"], ["a house"]], BleuMetric(tokenize="none"))
    assert tuning_set.sentence_ids == [0, 1] and not tuning_set.graphs[0].is_kbest and tuning_set.graphs[1].is_kbest


def test_a_positional_graph_meeting_a_named_one_is_said(tmp_path):
    """A cdec forest is sentence 0 by position; a Moses hypergraph file 0.gz names sentence 0: they are
    joined (accumulation), which may not be what the user meant, so it is said."""
    named = tmp_path / "0.gz"
    named.write_bytes(gzip.compress((FIXTURES / "formats" / "toy.moses-hg").read_bytes()))
    graphs = read_graphs([str(FIXTURES / "formats" / "toy.cdec.json"), str(named)])
    with pytest.warns(HypertuneWarning, match=r"sentence\(s\) 0 join a graph numbered by its position"):
        tuning_set = TuningSet.from_corpus(graphs, [["a b c"]], BleuMetric(tokenize="none"))
    assert tuning_set.sentence_ids == [0]
    assert count_derivations(tuning_set.graphs[0]) == sum(count_derivations(g) for g in graphs)


def test_graph_inputs_from_pipes_are_refused_not_shortened(capsys):
    read, write = os.pipe()
    os.write(write, NBEST.read_bytes())
    os.close(write)
    try:
        code, out, err = run(capsys, "mert", f"/dev/fd/{read}", "--refs", *REFS, "--init", INIT)
    finally:
        os.close(read)
    assert code == 1 and out == "" and "not a pipe" in err and err.count("\n") == 1


def test_linear_bleu_by_name_says_where_its_p_and_r_come_from(capsys):
    """Tromble's linear BLEU cannot be built from its name alone: one line that says which commands estimate
    p and r, not Python's 'missing 2 required positional arguments'."""
    code, _, err = run(capsys, "mert", FIXTURES / "mert" / "nbest.txt", "--refs", FIXTURES / "mert" / "ref.",
                       "--init", FIXTURES / "mert" / "init.weights", "--metric", "linear-bleu")  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "needs Tromble's p and r" in err and "minrisk --objective linear-bleu" in err


@pytest.mark.parametrize(
    "command", [["inspect"], ["decode", "-w", os.devnull], ["mert", "--refs", os.devnull, "--init", os.devnull]]
)
def test_a_folder_of_folders_is_refused_naming_them(tmp_path, capsys, command):
    for name in ("dense", "sparse"):
        (tmp_path / "hg" / name).mkdir(parents=True)
    code = main([command[0], str(tmp_path / "hg"), *command[1:]])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert f"{tmp_path / 'hg'}: a directory of graphs holds one file per sentence, but this one holds only folders " \
           "(dense, sparse): give one of them" in err  # fmt: skip
