"""The scaling model's transposes, halo exchanges and allreduces per step of the axial fan
are the solver's, on every process grid of 1, 2 and 3 ranks, with overlapped transposes
and without."""

import functools
from fractions import Fraction

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.bench.fan_model import step_traffic
from tachyflow.parallel import Transposer
from tachyflow.parallel.pencil import process_grids
from tachyflow.solvers.pencil.cylindrical import CylindricalSolver


@pytest.mark.parallel(nprocs=[1, 2, 3])
@pytest.mark.parametrize("overlap", [("theta", "poisson"), ()])
def test_a_step_communicates_as_the_model_counts(monkeypatch, overlap):
    calls = dict.fromkeys(("real", "complex", "halo", "allreduce"), 0)
    # Blocking and non-blocking transposes alike; a window of a pencil (the overlapped
    # Poisson solve) counts as its share of a whole transpose.
    for method in ("transpose", "start"):
        monkeypatch.setattr(
            Transposer, method, _counting_transposes(calls, getattr(Transposer, method))
        )
    for proc_grid in process_grids(MPI.COMM_WORLD.size):
        case = config.load("axial-fan").replace("grid", cells=(12, 6, 6))
        case = case.replace("parallel", proc_grid=proc_grid, overlap=overlap)
        fan = CylindricalSolver.from_case(case, MPI.COMM_WORLD, "estimate")
        calls.update(dict.fromkeys(calls, 0))
        counting = functools.partial(_counting, calls)
        fan.halo.exchange = counting("halo", fan.halo.exchange)
        fan.decomposition.sum = counting("allreduce", fan.decomposition.sum)
        fan.decomposition.sum_arrays = counting("allreduce", fan.decomposition.sum_arrays)
        fan.step(case.time.dt)
        # z-slabs on a p_row x 1 grid (the case's 6 θ-cells have 4 modes; 1 rank: none),
        # unless the solve is overlapped (its windows are pencil transposes).
        assert fan.poisson.slabs is (proc_grid[0] > 1 and proc_grid[1] == 1)
        traffic = step_traffic(*proc_grid, slabs=fan.poisson.slabs and not overlap)
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


def _counting_transposes(calls: dict, method):
    """``Transposer.method``, adding the share of a whole transpose it moves to
    ``calls["real"]`` or ``calls["complex"]``."""

    def counted(transposer, *arguments, **keywords):
        share = Fraction(1)
        if transposer.window is not None:
            axis, start, stop = transposer.window
            source = "y" if axis == 0 else "x"
            share = Fraction(stop - start, transposer.decomposition.local_shape(source)[axis])
        calls["complex" if transposer.dtype == np.complex128 else "real"] += share
        return method(transposer, *arguments, **keywords)

    return counted
