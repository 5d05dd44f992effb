"""One BLAS thread while a small optimizer runs (:func:`one_blas_thread`).

numpy and scipy each carry an OpenBLAS that starts one thread per core and splits an operation among them
when it is large enough (a dot product of more than 10,000 numbers). The tuners that call scipy's L-BFGS-B
after every objective evaluation (minimum risk, PRO and the other losses) make thousands of such small calls:
on a loaded machine waking the threads costs more than the arithmetic (PRO on the Moses scorer data spent
2.7 of its 4.3 s inside L-BFGS-B's 319 calls, 0.02 s with one thread), and a sum split among threads is added
in an order that depends on the number of cores, so an annealed minimum-risk run (whose entropy is such a
sum) ended with other weights on a machine with another core count. ``threadpoolctl`` (scikit-learn's) sets
every BLAS it finds loaded in the process, OpenBLAS, MKL or BLIS, and gives the counts back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with every loaded BLAS on one thread, then give each its thread count back. Load the
    libraries first (import what uses them before entering): one loaded inside is left as it is."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
