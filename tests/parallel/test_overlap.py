"""Overlapped (non-blocking, pipelined) transposes give the results of blocking ones, on
every process grid of 1, 2 and 3 ranks."""

import itertools

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.parallel import PencilDecomposition, Transposer
from tachyflow.parallel.pencil import process_grids
from tachyflow.parallel.transpose import METHODS, pipelined
from tachyflow.solvers.cylindrical import CylindricalSolver


@pytest.mark.parallel(nprocs=[1, 2, 3])
@pytest.mark.parametrize("method", METHODS)
def test_pipelined_window_transposes_equal_whole_ones(method):
    """Windows of a pencil (x-planes for y↔z, z-planes for x↔y) moved there and back in
    separate, overlapping transposes land exactly where whole transposes put them."""
    comm = MPI.COMM_WORLD
    for proc_grid in process_grids(comm.size):
        with PencilDecomposition((7, 5, 6), proc_grid, comm) as decomposition:
            field = np.random.default_rng(3).standard_normal((7, 5, 6))
            for axis, source, target in ((0, "y", "z"), (2, "y", "x")):
                for progress in (False, True):
                    _check_window_round_trip(
                        decomposition, field, method, (axis, source, target), progress
                    )


def _check_window_round_trip(decomposition, field, method, exchange, progress) -> None:
    axis, source, target = exchange
    pencil = decomposition.scatter_global(field, source)
    whole = Transposer(decomposition, method=method).transpose(pencil, source, target)
    bounds = [0, pencil.shape[axis] // 3, pencil.shape[axis]]
    chunks = [
        Transposer(decomposition, method=method, window=(axis, *ends))
        for ends in itertools.pairwise(bounds)
    ]
    there, back = decomposition.zeros(target), decomposition.zeros(source)
    stages = (
        lambda i: chunks[i].start(pencil, source, target, out=there),
        lambda i: chunks[i].start(there, target, source, out=back),
    )
    pipelined(len(chunks), stages, progress=progress)
    assert np.array_equal(there, whole), (decomposition.proc_grid, exchange)
    assert np.array_equal(back, pencil), (decomposition.proc_grid, exchange)


def test_window_transposer_checks_its_window():
    with PencilDecomposition((4, 4, 4), None, MPI.COMM_SELF) as decomposition:
        with pytest.raises(ValueError, match="need 0 <= start <= stop <= 4"):
            Transposer(decomposition, window=(0, 2, 5))
        with pytest.raises(ValueError, match="axis must be 0"):
            Transposer(decomposition, window=(1, 0, 2))
        chunk = Transposer(decomposition, window=(0, 0, 2))
        with pytest.raises(ValueError, match="moves y->z and z->y only"):
            chunk.transpose(decomposition.zeros("x"), "x", "y")


@pytest.mark.parallel(nprocs=[1, 2, 3])
def test_overlapped_cylindrical_step_equals_blocking_bit_for_bit():
    comm = MPI.COMM_WORLD
    for proc_grid in process_grids(comm.size):
        case = config.load("axial-fan").replace("grid", cells=(8, 6, 6))
        results = []
        for overlap, progress in ((False, False), (True, False), (True, True)):
            case = case.replace("parallel", proc_grid=proc_grid, overlap=overlap)
            fan = CylindricalSolver.from_case(case, comm, "estimate")
            fan.progress_calls = progress
            for _ in range(2):
                fan.step(case.time.dt)
            results.append([fan.cell_field(name) for name in fan.fields])
            fan.free()
            fan.decomposition.free()
        for other in results[1:]:
            for blocking, overlapped in zip(results[0], other, strict=True):
                assert np.array_equal(blocking, overlapped), proc_grid
