"""The tuning loop (``hypertune tune``): a decoder in the loop, accumulation, checkpoints and resume.

Every tuner of :mod:`hypertune.tuners` optimizes on a fixed set of candidates; real tuning alternates
decoding and tuning until no new candidates appear (Och 2003; Moses ``mert-moses.pl``, cdec ``dpmert.pl``,
Z-MERT). This package runs that loop so that no work is ever lost: every step's result is written
atomically to a work directory (:mod:`~hypertune.loop.workdir`), a killed run resumes from its last
finished step and ends with the same weights, and a second run on the same directory is refused.

It sits above the tuners and below the command line: it runs the decoder (:mod:`~hypertune.loop.decoder`)
and, for ``scores.NAME`` metrics, the scorer (the same way), counts candidates and scores the decoder's
1-best (:mod:`~hypertune.loop.candidates`), and asks a :class:`~hypertune.loop.loop.TuningStep` -- given by
the caller; the command line's runs the tuning commands themselves -- to tune. ``stability`` sums up several
runs (Clark et al. 2011).
"""

from hypertune.choices import ACCUMULATE
from hypertune.loop.candidates import CandidatePool, first_best_score
from hypertune.loop.decoder import (
    PLACEHOLDERS,
    SCORER_PLACEHOLDERS,
    DecoderConfig,
    DecoderError,
    DecoderRun,
    check_scorer_template,
    check_template,
    expand,
    run_decoder,
)
from hypertune.loop.loop import LoopResult, LoopSettings, TuningLoop, TuningStep, iteration_seed
from hypertune.loop.stability import average_weights, spread
from hypertune.loop.workdir import WorkDir, fingerprint_file

__all__ = [
    "ACCUMULATE",
    "PLACEHOLDERS",
    "SCORER_PLACEHOLDERS",
    "CandidatePool",
    "DecoderConfig",
    "DecoderError",
    "DecoderRun",
    "LoopResult",
    "LoopSettings",
    "TuningLoop",
    "TuningStep",
    "WorkDir",
    "average_weights",
    "check_scorer_template",
    "check_template",
    "expand",
    "fingerprint_file",
    "first_best_score",
    "iteration_seed",
    "run_decoder",
    "spread",
]
