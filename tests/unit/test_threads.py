"""Threads inside a rank: the count, its environment, and threaded kernels equal serial."""

import functools
import subprocess
import sys

import pytest

from tachyflow.runtime import thread_environment, threads_per_rank, use_threads
from tests.processes import command_environment

# A few steps of a case (a channel: walls, stretching, every threaded kernel of the Cartesian
# step and the threaded FFTs of its Poisson solve; a rotating pipe: the cylindrical kernels,
# the axis and the Coriolis terms); the fields' exact bytes are printed.
STEPS = """
import hashlib, sys
from mpi4py import MPI
from tachyflow import config, runtime
from tachyflow.solvers.base import solver_class
runtime.start_threads()
case = config.load(sys.argv[1]).replace("grid", cells=(12, 16, 10))
solver = solver_class(case.case.solver).from_case(case, MPI.COMM_SELF, "estimate")
for _ in range(3):
    solver.step(solver.stable_time_step(0.5))
digest = hashlib.sha256()
for field in (*solver.velocity_arrays(), solver.p):
    digest.update(field.tobytes())
print(digest.hexdigest())
"""


def test_the_thread_count_comes_from_the_environment():
    assert threads_per_rank({}) == 1
    assert threads_per_rank({"TACHYFLOW_THREADS": "3"}) == 3
    for text in ("0", "-2", "two", ""):
        with pytest.raises(ValueError, match="expected a positive integer"):
            threads_per_rank({"TACHYFLOW_THREADS": text})
    environment = thread_environment(4)
    assert environment["NUMBA_NUM_THREADS"] == environment["OMP_NUM_THREADS"] == "4"
    with pytest.raises(ValueError, match="numba was started with"):
        use_threads(10_000)


@functools.cache
def digest(case: str, threads: int) -> str:
    """The fields' digest after a few steps of ``case`` on ``threads`` threads (one
    process each; the serial one computed once per case)."""
    environment = command_environment(**thread_environment(threads))
    result = subprocess.run(
        [sys.executable, "-c", STEPS, case], capture_output=True, text=True, env=environment,
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


# Three threads: the implicit solves split a channel's 12 x-planes into three runs of 4,
# the other loops three ways too.
@pytest.mark.parametrize("case, threads", [("channel", 2), ("channel", 3), ("rotating-pipe", 2)])
def test_threaded_steps_equal_serial_ones_bit_for_bit(case, threads):
    assert digest(case, threads) == digest(case, 1)
