"""``hypertune rerank`` and the held-out report of the tuning commands (issue #30): each sentence's best
hypothesis under weights, recomputed here from the n-best file's text, and every held-out metric against
sacrebleu on those translations."""

from __future__ import annotations

import json

import pytest
import sacrebleu
from support.paths import FIXTURES

from hypertune.cli import main

NBEST = FIXTURES / "mert" / "nbest.txt"
REFS = [FIXTURES / "mert" / f"ref.{i}" for i in range(2)]
INIT = FIXTURES / "mert" / "init.weights"
WEIGHTS = {"LM0": 0.1, "TM0_0": 0.2, "TM0_1": 0.2, "WordPenalty0": -0.3}  # init.weights, by hand


def parse_nbest(text: str) -> list[tuple[int, str, dict[str, float]]]:
    """(id, words, features) per line of a Moses n-best list: ``name= v v`` groups become ``name_0``, ... (one
    value: ``name``)."""
    rows = []
    for line in text.splitlines():
        sid, words, features = [part.strip() for part in line.split("|||")[:3]]
        groups: list[tuple[str, list[float]]] = []
        for token in features.split():
            if token.endswith("="):
                groups.append((token[:-1], []))
            else:
                groups[-1][1].append(float(token))
        named = {}
        for name, values in groups:
            names = [name] if len(values) == 1 else [f"{name}_{i}" for i in range(len(values))]
            named.update(zip(names, values, strict=True))
        rows.append((int(sid), words, named))
    return rows


def best_by_hand(rows, weights, scores=None):
    """Per sentence id (ascending): (index among the id's lines, model score, words, scores) of the first line of
    highest model score."""
    best: dict[int, tuple] = {}
    seen: dict[int, int] = {}
    for k, (sid, words, features) in enumerate(rows):
        index = seen.get(sid, 0)
        seen[sid] = index + 1
        score = sum(weights.get(n, 0.0) * v for n, v in features.items())
        if sid not in best or score > best[sid][1]:
            best[sid] = (index, score, words, None if scores is None else scores[k])
    return [best[sid] for sid in sorted(best)]


@pytest.fixture
def scored(tmp_path):
    """The fixture n-best with a score file whose values are known here: comet = 1/(line+2), q = line."""
    rows = parse_nbest(NBEST.read_text())
    scores = [{"comet": 1.0 / (k + 2), "q": float(k)} for k in range(len(rows))]
    path = tmp_path / "scores.txt"
    path.write_text("".join(f"q={s['q']!r} comet={s['comet']!r}\n" for s in scores))
    return rows, scores, path


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out, err


def test_rerank_prints_each_sentences_best_translation_and_nothing_else(capsys):
    out, _ = run(["rerank", NBEST, "--weights", INIT], capsys)
    expected = [words for _, _, words, _ in best_by_hand(parse_nbest(NBEST.read_text()), WEIGHTS)]
    assert out.splitlines() == expected


def test_rerank_json_gives_index_model_score_and_scores(scored, capsys):
    rows, scores, path = scored
    out, _ = run(["rerank", NBEST, "--scores", path, "--weights", INIT, "--json"], capsys)
    got = json.loads(out)["sentences"]
    expected = best_by_hand(rows, WEIGHTS, scores)
    assert [g["id"] for g in got] == sorted({sid for sid, _, _ in rows})
    for g, (index, score, words, given) in zip(got, expected, strict=True):
        assert (g["index"], g["hyp"], g["scores"]) == (index, words, given)
        assert g["model_score"] == pytest.approx(score, abs=1e-12)


def test_rerank_ties_go_to_the_earlier_hypothesis_and_jsonl_is_written(tmp_path, capsys):
    nbest = tmp_path / "tie.nbest"
    lines = ["0 ||| b b ||| f= 1 ||| 0", "0 ||| a a ||| f= 1 ||| 0", "1 ||| c ||| f= 0 ||| 0", "1 ||| d ||| f= 2 ||| 0"]
    nbest.write_text("\n".join(lines) + "\n")
    weights = tmp_path / "w"
    weights.write_text("f 0.5\n")
    out = tmp_path / "best.jsonl"
    run(["rerank", nbest, "-w", weights, "--out", out, "--out-format", "jsonl"], capsys)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(x["id"], x["index"], x["hyp"], x["model_score"]) for x in lines] == [(0, 0, "b b", 0.5), (1, 1, "d", 1.0)]


def test_rerank_warns_when_sentence_ids_have_gaps(tmp_path, capsys):
    nbest = tmp_path / "gap.nbest"
    nbest.write_text("0 ||| a ||| f= 1 ||| 0\n2 ||| c ||| f= 0 ||| 0\n")
    weights = tmp_path / "w"
    weights.write_text("f 1\n")
    out, err = run(["rerank", nbest, "-w", weights], capsys)
    assert out == "a\nc\n" and "sentence id(s) 1" in err


def test_heldout_reports_every_metric_before_and_after(scored, capsys):
    rows, scores, path = scored
    out, _ = run(["mert", NBEST, "--scores", path, "--metric", "scores.comet", "--init", INIT, "--restarts", "2",
                  "--heldout", NBEST, "--heldout-scores", path, "--heldout-refs", *REFS, "--json"], capsys)  # fmt: skip
    payload = json.loads(out)
    heldout = payload["heldout"]
    assert heldout["sentences"] == 5
    references = [[line.rstrip("\n") for line in open(r, encoding="utf-8")] for r in REFS]
    for key, weights in (("before", WEIGHTS), ("after", payload["weights"])):
        chosen = best_by_hand(rows, weights, scores)
        hyps = [words for _, _, words, _ in chosen]
        expected = {
            "scores.comet": sum(s["comet"] for *_, s in chosen) / len(chosen),
            "scores.q": sum(s["q"] for *_, s in chosen) / len(chosen),
            "bleu": sacrebleu.corpus_bleu(hyps, references, tokenize="none").score / 100,
            "chrf": sacrebleu.corpus_chrf(hyps, references).score / 100,
            "ter": sacrebleu.corpus_ter(hyps, references).score / 100,
        }
        got = {name: row[key] for name, row in heldout["metrics"].items()}
        assert got == pytest.approx(expected, abs=1e-12), key
    assert heldout["metrics"]["ter"]["higher_is_better"] is False
    assert heldout["metrics"]["scores.comet"]["after"] == pytest.approx(payload["score_after"], abs=1e-12)


def test_heldout_options_need_heldout(capsys):
    code = main(["mert", str(NBEST), "--refs", *map(str, REFS), "--init", str(INIT), "--heldout-refs", str(REFS[0])])
    assert code == 2 and "give --heldout too" in capsys.readouterr().err


def test_heldout_references_no_sentence_uses_are_a_warning(tmp_path, capsys):
    """Held-out references with lines for sentences the held-out inputs lack: probably the wrong file, said once."""
    refs = tmp_path / "ref"
    refs.write_text(REFS[0].read_text() + "an extra line\nand another\n")
    code = main(["mert", str(NBEST), "--refs", *map(str, REFS), "--init", str(INIT), "--heldout", str(NBEST),
                 "--heldout-refs", str(refs)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0 and err.count("2 of the 7 reference lines") == 1, err
