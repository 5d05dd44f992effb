"""The pictures of chapter 7 (docs/tutorial/07-mbr.md), one SVG per call, chosen by the file's name:

    python docs/tutorial/pictures/07_mbr.py docs/tutorial/images/07-tiny.svg   # posterior and E[BLEU+1], bars
    python docs/tutorial/pictures/07_mbr.py docs/tutorial/images/07-scale.svg  # E[BLEU+1] against the scale

07-tiny: the three hypotheses of the tiny k-best list, each with its posterior (the MAP rule's score) and its
expected BLEU+1 against the others (the MBR rule's score; Kumar & Byrne 2004), from ``hypertune.mbr``.
07-scale: on the toy forest's 27 derivations as a k-best list, every hypothesis's expected BLEU+1 against the
scale α = 1/T of the posterior; the highest curve at each α is k-best MBR's choice.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from hypertune.cli.plots import pyplot, save_figure
from hypertune.formats import read_graphs, read_weights
from hypertune.mbr import MbrOptions, kbest_lists, mbr_decide
from hypertune.metrics import get_metric

TINY = "docs/tutorial/data/07-tiny.jsonl"
TINY_WEIGHTS = "docs/tutorial/data/07-tiny.weights"
KBEST = "docs/tutorial/data/05-toy-27best.jsonl"
TOY_WEIGHTS = "fixtures/toy-forest.weights"
SCALES = (0.0, 0.3, 0.5, 1.0, 3.0)  # the chapter's table


def tiny(out: str) -> None:
    bleu1 = get_metric("bleu+1", tokenize="none")
    lists = kbest_lists(read_graphs(TINY), read_weights(TINY_WEIGHTS))
    decision = mbr_decide(lists, bleu1, MbrOptions(scale=1.0))
    texts = lists.texts()
    where = np.arange(len(texts))
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6.4, 3.4))
    for shift, values, digits, label, colour in (
        (-0.2, decision.posterior, 2, "posterior p(e): MAP's score", "C0"),
        (0.2, decision.expected, 4, "E[BLEU+1] against the list: MBR's score", "C1"),
    ):
        bars = axis.bar(where + shift, values, width=0.38, color=colour, label=label)
        axis.bar_label(bars, [f"{v:.{digits}f}" for v in values], fontsize=8)
    top = decision.posterior[decision.map_index[0]]
    axis.annotate("MAP", (decision.map_index[0] - 0.2, top + 0.07), ha="center", fontsize=9, color="C0", weight="bold")
    top = decision.expected[decision.choice[0]]
    axis.annotate("MBR", (decision.choice[0] + 0.2, top + 0.07), ha="center", fontsize=9, color="C1", weight="bold")
    axis.set_xticks(where, [f"e{i}: {t}" for i, t in enumerate(texts)])
    axis.set_ylim(0, 1.2)
    axis.set_ylabel("score")
    axis.set_title("Tiny list, scale 1: MAP picks the most probable, MBR the most central", fontsize=10)
    axis.legend(loc="upper right", fontsize=8, ncol=2)
    save_figure(figure, out)


def scale(out: str) -> None:
    bleu1 = get_metric("bleu+1", tokenize="none")
    lists = kbest_lists(read_graphs(KBEST), read_weights(TOY_WEIGHTS))
    texts = lists.texts()
    utility = np.array([[bleu1.sentence_score(e, [r]) for r in texts] for e in texts])  # row e, reference r
    alphas = np.linspace(0, 3, 301)
    posteriors = np.exp(alphas[:, None] * lists.scores - logsumexp(alphas[:, None] * lists.scores, axis=1)[:, None])
    expected = posteriors @ utility.T  # (alpha, hypothesis)
    chosen = np.argmax(expected, axis=1)
    switch = alphas[int(np.flatnonzero(chosen != chosen[0])[0])]
    named = {texts.index("the small house"): "C0", texts.index("the cottage"): "C3"}
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(6.4, 4.0))
    for h in range(len(texts)):
        if h not in named:
            axis.plot(alphas, expected[:, h], color="0.8", lw=0.7)
    for h, colour in named.items():
        axis.plot(alphas, expected[:, h], color=colour, lw=1.6, label=texts[h])
    axis.plot(alphas, expected.max(axis=1), color="black", lw=0.6, ls="--", label="the highest: MBR's choice")
    dots = np.array(SCALES)
    found = [mbr_decide(lists, bleu1, MbrOptions(scale=float(a))) for a in dots]
    axis.plot(dots, [d.expected[d.choice[0]] for d in found], "o", color="C1", ms=5, label="hypertune mbr_decide")
    axis.axvline(switch, color="grey", ls=":")
    axis.annotate(f"the choice changes\nat α ≈ {switch:.2f}", (switch + 0.05, 0.2), fontsize=8)
    axis.annotate("grey: the other 25 hypotheses", (1.7, 0.03), fontsize=8, color="0.5")
    axis.set_xlim(0, 3)
    axis.set_ylim(0, 1)
    axis.set_xlabel("scale α = 1/T of the posterior p(e) ∝ exp(α · w·f(e))")
    axis.set_ylabel("expected BLEU+1 against the list")
    axis.set_title("Toy forest's 27 hypotheses: k-best MBR against the scale", fontsize=10)
    axis.legend(loc="upper left", fontsize=8)
    save_figure(figure, out)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        raise SystemExit(__doc__)
    path = argv[0]
    name = Path(path).stem
    if name == "07-tiny":
        tiny(path)
    elif name == "07-scale":
        scale(path)
    else:
        raise SystemExit(f"{path}: no such picture in chapter 7 (07-tiny.svg, 07-scale.svg)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
