"""Orchestration around the loop: several runs with consecutive seeds (``tune --runs R``, as processes), the
cluster a loop's tunings share (``tune --cluster``), and the choice of the runs' final weights (MultEval's
advice, Clark et al. 2011: report the spread over optimizer runs, not one run)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

from hypertune import interrupts
from hypertune.errors import HypertuneError
from hypertune.formats import read_weights
from hypertune.loop.decoder import die_with_parent
from hypertune.loop.stability import average_weights, spread
from hypertune.loop.workdir import WorkDir
from hypertune.metrics import best_index
from hypertune.process_environment import user_environment
from hypertune.weights import Weights


@contextlib.contextmanager
def shared_cluster(spec: str | None) -> Iterator[str | None]:
    """The scheduler address the loop's tunings (or a set of runs) share for the ``with`` block: ``local[:N]`` is
    started here, once (R runs starting N workers each would oversubscribe the cores), a ``tcp://`` address is
    passed on as given; ``None`` without a cluster (nothing imports Dask then). A lost worker stops the tuning
    with the one-line error naming the shard; the finished steps are kept for ``--resume``."""
    if not spec:
        yield None
        return
    from hypertune.distributed import open_cluster, parse_cluster

    parsed = parse_cluster(spec)
    if parsed.kind != "local":
        yield spec
        return
    with open_cluster(parsed) as client:
        yield client.scheduler.address


def run_seeds(
    workdir: WorkDir,
    seeds: list[int],
    parallel: int,
    command: Callable[[int], list[str]],
    say: Callable[[str], None] | None = None,
    shown: Callable[[float], str] = lambda value: f"{100 * value:.2f}",
) -> dict[int, dict[str, Any]]:
    """Run ``command(seed)`` (the arguments of ``hypertune``) for every seed as a process, at most ``parallel``
    at once, its JSON on stdout kept in ``run-<seed>.json`` and its stderr in ``run-<seed>.log`` of
    ``workdir``; returns each run's JSON. ``say`` hears of each run's start and end (its dev metric as
    ``shown``). A failed run stops the others (after they finish) with one line
    quoting its log's end. An interrupt stops the runs still going (SIGTERM: each keeps its finished steps)
    and waits for them; the one line says that ``--resume`` goes on. On Linux a killed parent takes its
    runs with it."""
    results: dict[int, dict[str, Any]] = {}
    running: list[tuple[int, subprocess.Popen, Any, Any]] = []
    pending = list(seeds)
    try:
        while pending or running:
            while pending and len(running) < parallel:
                seed = pending.pop(0)
                out = open(workdir.file(f"run-{seed}.json"), "w", encoding="utf-8")
                err = open(workdir.file(f"run-{seed}.log"), "w", encoding="utf-8")
                linux = sys.platform.startswith("linux")
                process = subprocess.Popen(
                    [sys.executable, "-m", "hypertune", *command(seed)], stdout=out, stderr=err,
                    stdin=subprocess.DEVNULL, preexec_fn=die_with_parent if linux else None,
                    env=user_environment(),  # each run sets its own defaults; its decoder gets the user's
                )  # fmt: skip
                running.append((seed, process, out, err))
                if say is not None:
                    say(f"run with seed {seed} started ({workdir.file(f'run-{seed}')})")
            seed, process, out, err = running[0]
            status = process.wait()  # the run stays in running until it ends: an interrupt stops it too
            running.pop(0)
            out.close()
            err.close()
            if status != 0:
                _wait(running)
                log = workdir.file(f"run-{seed}.log")
                lines = [line.strip() for line in open(log, encoding="utf-8") if line.strip()][-2:]
                raise HypertuneError(
                    f"{log}: the run with seed {seed} failed (exit status {status}): {' | '.join(lines)}"
                )
            with open(workdir.file(f"run-{seed}.json"), encoding="utf-8") as handle:
                results[seed] = json.load(handle)
            if say is not None:
                say(f"run with seed {seed}: {results[seed]['metric']} {shown(results[seed]['score_after'])}")
    except (KeyboardInterrupt, SystemError) as error:
        stop = interrupts.as_interrupt(error)
        if stop is None:
            raise
        for _, process, *_files in running:
            if process.poll() is None:
                process.terminate()
        _wait(running)
        raise stop.explained(
            f"interrupted ({stop.name}); {workdir.path} keeps every run's finished steps: continue with --resume"
        ) from None
    return results


def _wait(running: list[tuple[Any, ...]]) -> None:
    for _, process, *files in running:
        process.wait()
        for handle in files:
            handle.close()


#: What a set of runs keeps of each run's JSON (``bleu_*``: deprecated, kept for one release).
RUN_KEYS = ("bleu_before", "bleu_after", "score_before", "score_after", "metric", "higher_is_better", "iterations",
            "stopped", "best_iteration", "returned_iteration", "score_last", "test_score", "test_score_last",
            "test_bleu", "weights")  # fmt: skip


def summarize_runs(
    workdir: WorkDir, seeds: list[int], results: dict[int, dict[str, Any]], average: bool
) -> tuple[dict[str, Any], Weights]:
    """The runs' summary (``runs``: each run's figures; ``dev_score``: the spread of the dev metric of the weights
    each run returned; ``test_score`` when they decoded a test set; ``weights_chosen``; ``dev_bleu`` and
    ``test_bleu``: deprecated aliases kept for one release) and the final weights: the mean of the runs' weights
    with ``average``, else the best dev run's (:func:`hypertune.metrics.best_index`)."""
    runs = [results[s] for s in seeds]
    summaries = [{"seed": s, **{k: r[k] for k in RUN_KEYS if k in r}} for s, r in zip(seeds, runs, strict=True)]
    payload: dict[str, Any] = {"runs": summaries}
    payload["dev_score"] = payload["dev_bleu"] = spread([r["score_after"] for r in runs])
    if all("test_bleu" in r for r in runs):
        payload["test_score"] = payload["test_bleu"] = spread([r.get("test_score", r["test_bleu"]) for r in runs])
    if average:
        final = average_weights([Weights(r["weights"]) for r in runs])
        payload["weights_chosen"] = "averaged over the runs"
    else:
        best = best_index([r["score_after"] for r in runs], runs[0].get("higher_is_better", True))
        final = read_weights(workdir.file(f"run-{seeds[best]}.weights"))
        payload["weights_chosen"] = f"of the best dev run (seed {seeds[best]})"
    return payload, final
