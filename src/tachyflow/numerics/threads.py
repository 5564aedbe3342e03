"""Threads inside a rank (hybrid MPI + threads): how many the kernels use.

The count comes from ``$TACHYFLOW_THREADS`` (default 1: MPI ranks fill the cores), which
``tachyflow --threads T`` sets for its ranks together with ``$NUMBA_NUM_THREADS`` (numba
reads it once, when imported: tachyflow sets it to 1 unless the user chose otherwise).
The threaded kernels split their outermost loop (numba ``prange``) and FFTW plans take
that many threads; each output point is computed by the same operations in the same order
as on one thread, so threaded results equal serial ones bit for bit.
"""

from __future__ import annotations

import os

THREADS_VARIABLE = "TACHYFLOW_THREADS"


def threads_per_rank(environ=None) -> int:
    """The threads each rank's kernels use (``$TACHYFLOW_THREADS``, default 1).

    Raises
    ------
    ValueError
        When the variable is not a positive integer.
    """
    text = (os.environ if environ is None else environ).get(THREADS_VARIABLE, "1")
    try:
        threads = int(text)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ValueError(f"${THREADS_VARIABLE} = {text!r}: expected a positive integer")
    return threads


def thread_environment(threads: int) -> dict[str, str]:
    """The variables that give each rank ``threads`` threads: tachyflow's kernels (numba,
    FFTW) and the BLAS/OpenMP libraries (HPL's panel updates)."""
    value = str(threads)
    return {
        THREADS_VARIABLE: value,
        "NUMBA_NUM_THREADS": value,
        "OMP_NUM_THREADS": value,
        "OPENBLAS_NUM_THREADS": value,
        "MKL_NUM_THREADS": value,
        # OpenMP's threads (numba's threading layer) otherwise spin after each parallel
        # loop, taking the cores FFTW and the serial parts need: measured 32 ms per
        # channel step at 64³ with spinning, 24 ms passive (1 rank, 2 threads).
        "OMP_WAIT_POLICY": "PASSIVE",
    }


def use_threads(threads: int) -> None:
    """Make numba's parallel kernels use ``threads`` threads in this process.

    Raises
    ------
    ValueError
        When numba was started with fewer (``$NUMBA_NUM_THREADS`` was read at import).
    """
    import numba

    available = numba.config.NUMBA_NUM_THREADS
    if threads > available:
        raise ValueError(
            f"{threads} threads per rank asked but numba was started with {available} "
            f"($NUMBA_NUM_THREADS is read when numba is imported: set it to {threads} in "
            "the ranks' environment, as `tachyflow --threads` does)"
        )
    numba.set_num_threads(threads)
