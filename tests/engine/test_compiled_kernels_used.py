"""README's main job compiles only the kernels it uses (#33): counted, not timed.

The expected list is read off the code path of ``hypertune mert`` on a Moses n-best list: the reader's two
kernels (line bounds, the Moses one-pass scan; the Z-MERT scan is a kernel of its own, not compiled here),
BLEU's statistics (reference tables, hypothesis statistics), the start point's model-best rows and model
scores (a dense product, a column at a time), the envelopes of all lists and the line search's merge. Their
helpers are compiled into them. Nothing of the other commands (forests, MIRA, the semiring kernels, other
readers) may compile, and each kernel needs one version (no literal-argument copies). When the MERT path
changes, this list changes with it.
"""

from __future__ import annotations

from hypertune.bench.cold_start import MAIN_JOB, kernels_used

MERT_NBEST_KERNELS = {
    "hypertune.formats._scan.text_bounds",
    "hypertune.formats.nbest._scan_moses",
    "hypertune.metrics._kernels.build_tables",
    "hypertune.metrics._kernels.hypothesis_stats_serial",
    "hypertune.tuners.model_best.model_best_rows",
    "hypertune.compiled.dense_matvec",
    "hypertune.algorithms.envelope._kbest_surface_kernel",
    "hypertune.tuners.linesearch._merge_kernel",
}


def test_main_job_compiles_only_its_kernels() -> None:
    kernels = kernels_used(MAIN_JOB)
    assert set(kernels) == MERT_NBEST_KERNELS
    assert all(versions == 1 for versions in kernels.values()), kernels
