"""The scaling model's transposes, halo exchanges and allreduces per step of the axial fan
are the solver's, on every process grid of 1, 2 and 3 ranks."""

import functools

import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.bench.fan_model import step_traffic
from tachyflow.parallel.pencil import process_grids
from tachyflow.solvers.cylindrical import CylindricalSolver


@pytest.mark.parallel(nprocs=[1, 2, 3])
def test_a_step_communicates_as_the_model_counts():
    for proc_grid in process_grids(MPI.COMM_WORLD.size):
        case = config.load("axial-fan").replace("grid", cells=(12, 6, 6))
        case = case.replace("parallel", proc_grid=proc_grid)
        fan = CylindricalSolver.from_case(case, MPI.COMM_WORLD, "estimate")
        calls = dict.fromkeys(("real", "complex", "halo", "allreduce"), 0)
        counting = functools.partial(_counting, calls)

        for name, transposer in (
            ("real", fan.transposer),
            ("complex", fan.poisson.complex_transposer),
        ):
            # Blocking and non-blocking (overlapped) transposes alike.
            transposer.transpose = counting(name, transposer.transpose)
            transposer.start = counting(name, transposer.start)
        fan.halo.exchange = counting("halo", fan.halo.exchange)
        fan.decomposition.sum = counting("allreduce", fan.decomposition.sum)
        fan.decomposition.sum_arrays = counting("allreduce", fan.decomposition.sum_arrays)
        fan.step(case.time.dt)
        traffic = step_traffic(*proc_grid)
        assert calls == {
            "real": traffic.row_real,
            "complex": traffic.row_complex + traffic.column_complex,
            "halo": traffic.halos,
            "allreduce": traffic.allreduces,
        }, proc_grid
        fan.free()
        fan.decomposition.free()


def _counting(calls: dict, name: str, function):
    """``function``, adding 1 to ``calls[name]`` at every call."""

    def counted(*arguments, **keywords):
        calls[name] += 1
        return function(*arguments, **keywords)

    return counted
