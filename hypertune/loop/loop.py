"""The outer tuning loop: decode with the current weights, add the candidates, tune, repeat (Och 2003).

One iteration ``i`` is two steps (three with a scorer), each finished (and recorded) before the next begins:

1. **decode**: write the weights of iteration ``i`` (the start weights, or iteration ``i - 1``'s tuned
   ones) in the decoder's form, run the decoder, move its output into place, and count the new candidates;
1b. **score** (``--scorer``): run the scorer on the new n-best list; its score file, checked (one line per
   hypothesis), is moved into place. Then the dev metric of the decoder's 1-best is recorded (with a
   ``scores.NAME`` metric, the mean given score of the 1-best hypotheses);
2. **tune**: run the tuner on the candidates accumulated so far (all iterations' n-best lists merged and
   deduplicated, or lattices joined, or this iteration's alone) from iteration ``i``'s weights, with the
   iteration's seed; its weights are iteration ``i + 1``'s.

The loop stops when a decoding adds no candidate, or after the decoding that follows the ``N``-th tuning
or a tuning that moved no weight by ``epsilon`` or more: every weights vector the loop can return has been
decoded, so its dev metric is measured, not predicted. It returns the weights of the decoding with the best
dev metric, the earliest of equal ones (``returns="best"``, as ``mert-moses.pl --return-best-dev``, Cherry &
Foster 2012 section 4, Tillmann & Zhang section VI-B), or those of the last decoding (``"last"``).
``--resume`` reads which steps are finished from the work directory (:mod:`hypertune.loop.workdir`) and goes on
from there; since every step is a function of files already written and of the seed, a
resumed run ends with exactly the weights of an uninterrupted one.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from hypertune.errors import InputError
from hypertune.formats.io import write_atomically
from hypertune.formats.weights import format_weights, read_weights
from hypertune.loop.candidates import CandidatePool
from hypertune.loop.decoder import DecoderConfig, expand, run_decoder
from hypertune.loop.workdir import STATE_VERSION, WorkDir
from hypertune.metrics import best_index
from hypertune.tuners.base import BleuAliases
from hypertune.weights import Weights


def iteration_seed(seed: int, iteration: int) -> int:
    """The seed of one iteration's tuner: a function of ``--seed`` and the iteration alone (numpy's
    ``SeedSequence`` mixing, so nearby seeds give unrelated streams), never of paths or time."""
    return int(np.random.SeedSequence([seed, iteration]).generate_state(1)[0] & 0x7FFFFFFF)


class TuningStep(Protocol):
    """What the loop asks of the tuner; the command line implements it with the tuning commands themselves,
    so each tuning is the command ``hypertune TUNER INPUTS --init W --seed S --out OUT`` would run."""

    def tune(
        self, inputs: list[str], init: str, out: str, seed: int, scores: list[str] | None = None
    ) -> dict[str, Any]:
        """Tune from the weights file ``init`` on the candidates in ``inputs`` (with ``scores``, the score file of
        each input, as ``--scores``); write the weights to ``out`` (atomically, ``name value`` lines) and return
        the tuner's summary (its JSON result)."""
        ...

    def score(self, inputs: list[str], weights: str, scores: list[str] | None = None) -> float:
        """The dev metric (0-1) of the decoder's 1-best in ``inputs`` (with their ``scores`` files), decoded
        with the weights file ``weights``."""
        ...

    #: The dev metric's name (``BLEU``, ``TER``, ...) and whether a larger value of it is better: the best
    #: iteration is chosen by :func:`hypertune.metrics.better`.
    metric: str
    higher_is_better: bool


@dataclass
class LoopSettings:
    """One run of the loop. ``config()`` is what makes two runs the same run (checked on ``--resume``);
    ``iterations`` is left out of it, so a finished run can be resumed with more iterations, and so is
    ``returns`` (which decoding's weights are the result: ``best`` or ``last``), which changes no step."""

    decoder: str
    init: Weights
    tuner: str
    tuner_args: list[str]
    references: list[str]  # content digests of the reference files, in order
    kbest: int = 100
    iterations: int = 10
    accumulate: str = "nbest"
    epsilon: float = 1e-5
    seed: int = 0
    decoder_config: DecoderConfig = field(default_factory=DecoderConfig)
    extra: dict[str, Any] = field(default_factory=dict)  # other settings that make a run different
    scorer: str | None = None  # --scorer: the command that writes each decoding's score file
    returns: str = "best"  # --return: the weights of the best dev decoding, or of the last one

    def config(self) -> dict[str, Any]:
        scorer = {} if self.scorer is None else {"scorer": self.scorer}  # a run without one reads as before
        return {
            "version": STATE_VERSION,
            "decoder": self.decoder,
            "decoder_config": self.decoder_config.template,
            "decoder_config_name": self.decoder_config.name,
            "init": format_weights(self.init, "cdec"),
            "tuner": self.tuner,
            "tuner_args": list(self.tuner_args),
            "references": list(self.references),
            "kbest": self.kbest,
            "accumulate": self.accumulate,
            "epsilon": self.epsilon,
            "seed": self.seed,
            **scorer,
            **self.extra,
        }

    @property
    def output_name(self) -> str:
        """The placeholder the decoder writes to, and the name of its output in ``output/``."""
        return "lattices" if self.accumulate == "lattice" else "kbest"


def entry_score(entry: dict[str, Any]) -> float | None:
    """A history entry's dev metric: its ``score``, or in a work directory of an earlier release its ``bleu``
    (``None`` before the decoding is scored)."""
    return entry.get("score", entry.get("bleu"))


def scored(entry: dict[str, Any]) -> float:
    """The dev metric of a history entry that has been scored (:func:`entry_score`)."""
    score = entry_score(entry)
    if score is None:
        raise InputError(f"iteration {entry['iteration']} of the work directory's history has no score")
    return score


def best_iteration(history: list[dict[str, Any]], higher_is_better: bool = True) -> int:
    """The iteration whose decoding scored best, the earliest of equal ones (:func:`hypertune.metrics.best_index`);
    entries not scored yet are passed over."""
    decoded = [entry for entry in history if entry_score(entry) is not None]
    if not decoded:
        raise InputError("no decoding of the run has been scored yet")
    return decoded[best_index([scored(entry) for entry in decoded], higher_is_better)]["iteration"]


@dataclass
class LoopResult(BleuAliases):
    """How the loop ended: the weights returned (those iteration ``returned_iteration`` decoded with: the best
    dev decoding's under ``returns="best"``, the last one's under ``"last"``) and their dev metric, the history,
    why it stopped. A history entry's dev metric (``metric``) is its ``score`` (:func:`entry_score`); its
    ``bleu`` is a deprecated alias kept for one release, as are ``tuner_bleu_before``/``tuner_bleu_after`` beside
    ``tuner_score_before``/``tuner_score_after``."""

    weights: Weights
    history: list[dict[str, Any]]
    stopped: str
    weights_path: str
    seconds: float
    resumed: bool = False
    metric: str = "BLEU"
    higher_is_better: bool = True
    returns: str = "best"

    @property
    def score_before(self) -> float:
        return scored(self.history[0])

    @property
    def score_after(self) -> float:
        """The dev metric of the weights returned."""
        return scored(self.history[self.returned_iteration - 1])

    @property
    def score_last(self) -> float:
        """The dev metric of the last decoding."""
        return scored(self.history[-1])

    @property
    def best_iteration(self) -> int:
        """The iteration whose decoding scored best (:func:`best_iteration`)."""
        return best_iteration(self.history, self.higher_is_better)

    @property
    def returned_iteration(self) -> int:
        """The iteration whose weights are returned."""
        return self.best_iteration if self.returns == "best" else self.history[-1]["iteration"]

    def to_json(self) -> dict[str, Any]:
        """The keys ``bleu_before`` and ``bleu_after`` are deprecated, kept for one release."""
        return {
            "bleu_before": self.score_before,
            "bleu_after": self.score_after,
            "weights": dict(self.weights),
            "history": self.history,
            "iterations": len(self.history),
            "best_iteration": self.best_iteration,
            "returned_iteration": self.returned_iteration,
            "returns": self.returns,
            "stopped": self.stopped,
            "seconds": self.seconds,
            "resumed": self.resumed,
            "weights_path": self.weights_path,
            "score_before": self.score_before,
            "score_after": self.score_after,
            "score_last": self.score_last,
            "metric": self.metric,
            "higher_is_better": self.higher_is_better,
        }


Report = Callable[[str, dict[str, Any]], None]


class TuningLoop:
    """Runs :class:`LoopSettings` in a :class:`WorkDir` with a :class:`TuningStep` (see the module docstring).
    ``report(event, data)`` hears of each step (``decoding``, ``scoring``, ``decoded``, ``tuning``, ``tuned``) for
    progress and the per-iteration summary; ``tick(seconds)`` while the decoder runs."""

    def __init__(
        self,
        settings: LoopSettings,
        workdir: WorkDir,
        step: TuningStep,
        report: Report | None = None,
        tick: Callable[[float], None] | None = None,
    ) -> None:
        self.settings = settings
        self.workdir = workdir
        self.step = step
        self.report = report or (lambda event, data: None)
        self.tick = tick

    # ------------------------------------------------------------------ the loop
    def run(self, resume: bool = False) -> LoopResult:
        """Run (or, with ``resume``, continue) the loop to its end, holding the work directory's lock."""
        started = time.perf_counter()
        with self.workdir.locked():
            resumed = self.workdir.check_config(self.settings.config(), resume)
            self.workdir.tidy()
            if not os.path.exists(self.workdir.file("init.weights")):
                write_atomically(self.workdir.file("init.weights"), format_weights(self.settings.init, "cdec"))
            state = self.workdir.read_json("state.json") or {}
            history: dict[int, dict[str, Any]] = {entry["iteration"]: entry for entry in state.get("history", [])}
            pool = CandidatePool()
            i = 1
            while True:
                entry = history.setdefault(i, {"iteration": i})
                self._decode(i, entry, pool)
                self._save(history, None)
                self._run_scorer(i, entry, pool.last_hypotheses)
                self._measure(i, entry)
                self._save(history, None)
                stop = self._stop_after_decoding(i, entry, history)
                if stop:
                    break
                self._tune(i, entry)
                self._save(history, None)
                i += 1
            for later in [k for k in history if k > i]:  # steps of a longer earlier run with other stop settings
                del history[later]
            entries = [history[k] for k in sorted(history)]
            higher = getattr(self.step, "higher_is_better", True)
            returned = best_iteration(entries, higher) if self.settings.returns == "best" else i
            weights_path = self.workdir.iteration(returned, "weights")  # what that decoding used, exactly
            self._save(history, stop)
            result = LoopResult(
                read_weights(weights_path),
                entries,
                stop,
                weights_path,
                time.perf_counter() - started,
                resumed,
                getattr(self.step, "metric", "BLEU"),
                higher,
                self.settings.returns,
            )
            self.workdir.write_json(result.to_json(), "result.json")
            return result

    def _stop_after_decoding(self, i: int, entry: dict[str, Any], history: dict[int, dict[str, Any]]) -> str | None:
        """Why the loop ends after decoding ``i``, or ``None``: the decisions are recomputed from the recorded
        steps on every run, so resuming with more ``--iterations`` goes on where a finished run stopped."""
        if i > 1 and entry["candidates_added"] == 0:
            return "no new candidates"
        if i > self.settings.iterations:
            return f"{self.settings.iterations} iteration{'' if self.settings.iterations == 1 else 's'}"
        previous = history.get(i - 1)
        if previous is not None and previous.get("weights_moved", math.inf) < self.settings.epsilon:
            return f"weights moved less than {self.settings.epsilon:g}"
        return None

    # ------------------------------------------------------------------ steps
    def _weights_file(self, i: int) -> str:
        """The exact weights iteration ``i`` decodes with: the start weights, else the previous tuning's."""
        return self.workdir.file("init.weights") if i == 1 else self.workdir.iteration(i - 1, "tuned.weights")

    def _decode(self, i: int, entry: dict[str, Any], pool: CandidatePool) -> None:
        """Step 1 of iteration ``i`` (the decoder runs only if its output is not in place yet; the pool is
        rebuilt from the files either way). A decoding redone drops what was measured of the one before."""
        settings, workdir = self.settings, self.workdir
        folder = workdir.iteration(i)
        output = workdir.iteration(i, "output")
        target = os.path.join(output, settings.output_name)
        if not os.path.isdir(output):
            os.makedirs(folder, exist_ok=True)
            weights = read_weights(self._weights_file(i))
            write_atomically(workdir.iteration(i, "weights"), format_weights(weights, "cdec"))
            config = settings.decoder_config.write(weights, folder)
            staging = workdir.staging(f"iteration-{i:03d}", "output")  # a decoding a kill interrupted is redone
            values = {
                "weights": config,
                "kbest": os.path.join(staging, "kbest"),
                "lattices": os.path.join(staging, "lattices"),
                "iteration": i,
                "k": settings.kbest,
                "seed": iteration_seed(settings.seed, i),
            }
            command = expand(settings.decoder, values)
            self.report("decoding", {"iteration": i, "command": command})
            ran = run_decoder(
                command, workdir.iteration(i, "decoder.out"), workdir.iteration(i, "decoder.log"), i, self.tick
            )
            written = os.path.join(staging, settings.output_name)
            if not os.path.exists(written) or (os.path.isfile(written) and os.path.getsize(written) == 0):
                what = "nothing" if not os.path.exists(written) else "an empty file"
                raise InputError(
                    f"the decoder exited normally in iteration {i} but wrote {what} to {{{settings.output_name}}} "
                    f"({workdir.iteration(i, 'decoder.log')} may say why)",
                    written,
                )
            settings.decoder_config.finish_output(staging, settings.output_name)  # Moses -osgx: named, cached
            with open(os.path.join(staging, "decode.json"), "w", encoding="utf-8") as handle:
                json.dump({"seconds": ran.seconds, "cpu_seconds": ran.cpu_seconds, "command": command}, handle)
            workdir.discard(f"iteration-{i:03d}", "scores")  # scores of an earlier decoding, if any, are void
            os.replace(staging, output)  # the decoding is finished the moment its output is in place
            for key in ("score", "bleu", "scorer_seconds"):
                entry.pop(key, None)
        entry["candidates_added"] = pool.add([target])
        if settings.accumulate == "lattice" and pool.unnamed:
            raise InputError(
                "the decoder's lattices carry no sentence ids (a Moses hypergraph directory's file names, an n-best "
                "list's first field), so those of later iterations cannot be joined with them; write them with ids "
                "or use --accumulate none",
                target,
            )
        entry["candidates"] = pool.size

    def _run_scorer(self, i: int, entry: dict[str, Any], hypotheses: int) -> None:
        """Step 1b of iteration ``i`` with ``--scorer``: finished exactly when ``scores`` is in place. The scorer
        writes into a fresh staging folder (a scoring a kill interrupted is redone, a finished one never); its
        file is moved to ``scores.unchecked``, read (:func:`~hypertune.formats.score_files.read_score_file`),
        its lines counted against the ``hypotheses`` of the n-best list, and renamed to ``scores``."""
        settings, workdir = self.settings, self.workdir
        if settings.scorer is None:
            return
        name = f"iteration-{i:03d}"
        path = workdir.iteration(i, "scores")
        if os.path.exists(path):
            workdir.clear_staging(name, "scores")  # a run killed between the rename and the clean-up
            return
        from hypertune.formats.score_files import read_score_file

        kbest = workdir.iteration(i, "output", settings.output_name)
        written = os.path.join(workdir.staging(name, "scores"), "scores")
        values = {
            "kbest": kbest,
            "scores": written,
            "iteration": i,
            "k": settings.kbest,
            "seed": iteration_seed(settings.seed, i),
        }
        command = expand(settings.scorer, values)
        self.report("scoring", {"iteration": i, "command": command})
        seconds = run_decoder(
            command, workdir.iteration(i, "scorer.out"), workdir.iteration(i, "scorer.log"), i, self.tick, "scorer"
        ).seconds
        if not os.path.isfile(written) or os.path.getsize(written) == 0:
            what = (
                "nothing" if not os.path.exists(written) else "an empty file" if os.path.isfile(written) else "a folder"
            )
            raise InputError(
                f"the scorer exited normally in iteration {i} but wrote {what} to {{scores}} "
                f"({workdir.iteration(i, 'scorer.log')} may say why)",
                written,
            )
        unchecked = workdir.iteration(i, "scores.unchecked")
        os.replace(written, unchecked)
        workdir.clear_staging(name, "scores")
        lines = len(read_score_file(unchecked))  # a malformed file: one line naming it and the line
        if lines != hypotheses:
            raise InputError(
                f"the scorer wrote {lines} lines of scores in iteration {i} for the {hypotheses} hypotheses of {kbest} "
                "(one line per hypothesis, in the n-best list's order)",
                unchecked,
            )
        os.replace(unchecked, path)  # the scoring is finished the moment its file is in place
        for key in ("score", "bleu"):
            entry.pop(key, None)
        entry["scorer_seconds"] = seconds

    def _measure(self, i: int, entry: dict[str, Any]) -> None:
        """The dev metric of iteration ``i``'s 1-best (recorded once per decoding) and the ``decoded`` report."""
        settings, workdir = self.settings, self.workdir
        if entry_score(entry) is None:
            inputs, scores = self._inputs(i, i)
            entry["score"] = entry["bleu"] = self.step.score(inputs, workdir.iteration(i, "weights"), scores)
            decoded = workdir.read_json(f"iteration-{i:03d}", "output", "decode.json") or {}
            entry["decode_seconds"] = decoded.get("seconds")
            entry["decode_cpu_seconds"] = decoded.get("cpu_seconds")  # absent from a decoding of an older version
            entry["seed"] = iteration_seed(settings.seed, i)
        entry["seconds"] = sum(entry.get(key) or 0.0 for key in ("decode_seconds", "scorer_seconds", "tune_seconds"))
        self.report("decoded", entry)

    def _inputs(self, i: int, first: int | None = None) -> tuple[list[str], list[str] | None]:
        """The candidates iteration ``i``'s tuning sees -- every decoding's output so far, or this one's (from
        decoding ``first`` on) -- and with ``--scorer`` their score files, in the same order."""
        if first is None:
            first = i if self.settings.accumulate == "none" else 1
        folders = range(first, i + 1)
        inputs = [self.workdir.iteration(j, "output", self.settings.output_name) for j in folders]
        scores = [self.workdir.iteration(j, "scores") for j in folders] if self.settings.scorer else None
        return inputs, scores

    def _tune(self, i: int, entry: dict[str, Any]) -> None:
        """Step 2 of iteration ``i``: finished once ``tuner.json`` is written (after the tuned weights)."""
        summary = self.workdir.read_json(f"iteration-{i:03d}", "tuner.json")
        seed = iteration_seed(self.settings.seed, i)
        if summary is None:
            self.report("tuning", {"iteration": i, "tuner": self.settings.tuner})
            started = time.perf_counter()
            inputs, scores = self._inputs(i)
            init, out = self.workdir.iteration(i, "weights"), self.workdir.iteration(i, "tuned.weights")
            result = self.step.tune(inputs, init, out, seed, scores)
            summary = {"seconds_wall": time.perf_counter() - started, "seed": seed, "result": result}
            self.workdir.write_json(summary, f"iteration-{i:03d}", "tuner.json")
        result = summary["result"]
        before = read_weights(self.workdir.iteration(i, "weights"))
        after = read_weights(self.workdir.iteration(i, "tuned.weights"))
        names = list(dict.fromkeys([*before, *after]))
        entry["weights_moved"] = max((abs(after.get(n, 0.0) - before.get(n, 0.0)) for n in names), default=0.0)
        old = next((k[: -len("_before")] for k in result if k.endswith("_before")), "bleu")  # a tuner.json of
        before = result.get("score_before", result.get(f"{old}_before"))  # an earlier release
        after = result.get("score_after", result.get(f"{old}_after"))
        entry["tuner_score_before"] = entry["tuner_bleu_before"] = before  # tuner_bleu_*: deprecated aliases
        entry["tuner_score_after"] = entry["tuner_bleu_after"] = after
        entry["tune_seconds"] = summary["seconds_wall"]
        entry["seconds"] = sum(entry.get(key) or 0.0 for key in ("decode_seconds", "scorer_seconds", "tune_seconds"))
        self.report("tuned", entry)

    def _save(self, history: dict[int, dict[str, Any]], stopped: str | None) -> None:
        self.workdir.write_json(
            {
                "version": STATE_VERSION,
                "history": [history[k] for k in sorted(history)],
                "stopped": stopped,
                "finished": stopped is not None,
            },
            "state.json",
        )
