"""Test-suite wide settings for the MPI harness.

Run alone, mpi-pytest runs each ``@pytest.mark.parallel`` variant under ``mpiexec`` found
on ``PATH``; ``make test`` (``tests/run_suite.sh``) instead runs all variants of one size
under one outer ``mpiexec``. The environment's own ``bin`` goes first on ``PATH`` so that
it is the launcher of the MPI library mpi4py loads. ``MPIEXEC_TIMEOUT`` (honoured by
MPICH's Hydra and Open MPI's mpirun) kills a deadlocked launch after that many seconds,
well inside pytest's own per-test timeout, so a hang fails one test instead of stalling
the run.
"""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
os.environ.setdefault("MPIEXEC_TIMEOUT", "90")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one BLAS thread per rank
os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # one kernel thread per rank

# Global shapes used by the parallel tests: cubes, primes, 1-cell axes, axes shorter than
# the process count, and an empty-looking mix.
SHAPES = [
    (8, 8, 8),
    (7, 5, 3),
    (13, 11, 17),
    (1, 1, 1),
    (2, 3, 1),
    (1, 7, 2),
    (5, 1, 4),
    (3, 2, 2),
]


def index_array(shape, dtype=np.float64) -> np.ndarray:
    """Global test array whose every entry is distinct (complex: distinct imaginary part)."""
    values = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + 1.0
    if np.dtype(dtype).kind == "c":
        return (values - 0.5j * values).astype(dtype)
    return values.astype(dtype)


@pytest.fixture
def comm_world():
    from mpi4py import MPI

    return MPI.COMM_WORLD
