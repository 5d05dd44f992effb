"""The small rescoring decoder of the tuning-loop tests: a pool of hypotheses rescored with the given weights,
written as a script into a test's folder and run as the loop's decoder."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import sacrebleu

DECODER = r"""
import os, sys, time
pool, weights_path, out, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
weights = {}
section = None
for raw in open(weights_path):
    line = raw.split("#")[0].strip()
    if not line:
        continue
    if line.startswith("["):
        section = line[1:-1]
        continue
    fields = line.split()
    if section is None or section == "weight":
        if fields[0].endswith("="):  # Name= v1 v2 ...: components Name_0 ... (one: Name)
            name, values = fields[0][:-1], [float(v) for v in fields[1:]]
            for i, v in enumerate(values):
                weights[name if len(values) == 1 else f"{name}_{i}"] = v
        else:
            weights[fields[0]] = float(fields[1])
    elif section.startswith("weight-"):
        weights[section[len("weight-"):]] = float(fields[0])
lists = {}
for line in open(pool):
    sid, words, feats, _ = line.split(" ||| ")
    values, label, position = {}, None, 0
    for token in feats.split():
        if token.endswith("="):
            label, position = token[:-1], 0
            continue
        values[(label, position)] = float(token)
        position += 1
    named = {}
    for (label, position), value in values.items():
        many = sum(1 for (l, _) in values if l == label) > 1
        named[f"{label}_{position}" if many else label] = value
    score = sum(weights.get(name, 0.0) * value for name, value in named.items())
    lists.setdefault(int(sid), []).append((-score, len(lists.get(int(sid), [])), words, feats, score))
lines = []
for sid in sorted(lists):
    for _, _, words, feats, score in sorted(lists[sid])[:k]:
        lines.append(f"{sid} ||| {words} ||| {feats} ||| {score!r}\n")
with open(out, "w") as handle:
    handle.writelines(lines[: len(lines) // 2])
    handle.flush()
    time.sleep(float(os.environ.get("DECODER_PAUSE", "0")))
    handle.writelines(lines[len(lines) // 2 :])
print(f"decoded {len(lists)} sentences", file=sys.stderr)
"""

FEATURES = ["LM0", "TM0_0", "TM0_1", "WordPenalty0", "d"]


def make_corpus(tmp_path: Path) -> dict[str, Path]:
    """A pool of 25 sentences x 40 hypotheses over 5 features, references drawn from hidden weights."""
    rng = random.Random(11)
    vocabulary = [f"w{i}" for i in range(60)]
    hidden = {"LM0": 1.0, "TM0_0": -0.6, "TM0_1": 0.4, "WordPenalty0": -0.3, "d": 0.8}
    pool, refs = [], []
    for sid in range(25):
        hypotheses = []
        for _ in range(40):
            words = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(4, 9)))
            values = {name: round(rng.gauss(0, 1), 4) for name in FEATURES}
            hypotheses.append((words, values))
        best = max(hypotheses, key=lambda h: sum(hidden[n] * v for n, v in h[1].items()))
        refs.append(best[0])
        for words, values in hypotheses:
            feats = f"LM0= {values['LM0']} TM0= {values['TM0_0']} {values['TM0_1']} WordPenalty0= "
            feats += f"{values['WordPenalty0']} d= {values['d']}"
            pool.append(f"{sid} ||| {words} ||| {feats} ||| 0\n")
    (tmp_path / "pool").write_text("".join(pool))
    (tmp_path / "ref").write_text("\n".join(refs) + "\n")
    (tmp_path / "decoder.py").write_text(DECODER)
    (tmp_path / "init").write_text("LM0 1\nTM0_0 0\nTM0_1 0\nWordPenalty0 0\nd 0\n")
    return {"dir": tmp_path, "pool": tmp_path / "pool", "ref": tmp_path / "ref", "init": tmp_path / "init"}


def decoder_command(corpus: dict[str, Path], extra: str = "") -> str:
    return f"{sys.executable} {corpus['dir'] / 'decoder.py'} {corpus['pool']} {{weights}} {{kbest}} {{k}}{extra}"


def first_lines_bleu(nbest: Path, ref: Path) -> float:
    """sacrebleu's corpus BLEU (0-1) of each sentence's first hypothesis in a Moses n-best list."""
    first: dict[int, str] = {}
    for line in nbest.read_text().splitlines():
        sid, words = line.split(" ||| ")[:2]
        first.setdefault(int(sid), words.strip())
    refs = ref.read_text().splitlines()
    hyps = [first[i] for i in sorted(first)]
    return sacrebleu.corpus_bleu(hyps, [[refs[i] for i in sorted(first)]], tokenize="none").score / 100


def first_lines_ter(nbest: Path, ref: Path) -> float:
    """sacrebleu's corpus TER (0-1) of each sentence's first hypothesis in a Moses n-best list."""
    first: dict[int, str] = {}
    for line in nbest.read_text().splitlines():
        sid, words = line.split(" ||| ")[:2]
        first.setdefault(int(sid), words.strip())
    refs = ref.read_text().splitlines()
    return sacrebleu.metrics.TER().corpus_score([first[i] for i in sorted(first)], [refs[: len(first)]]).score / 100
