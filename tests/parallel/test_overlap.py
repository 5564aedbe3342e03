"""Overlapped (non-blocking, pipelined) transposes give the results of blocking ones, on
every process grid of 1, 2 and 3 ranks."""

import itertools

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.parallel import PencilDecomposition, Transposer
from tachyflow.parallel.pencil import process_grids
from tachyflow.parallel.transpose import pipelined
from tachyflow.solvers.cylindrical import CylindricalSolver


@pytest.mark.parallel(nprocs=[1, 2, 3])
def test_pipelined_plane_transposes_equal_whole_ones():
    """x-planes moved y→z and back in separate, overlapping transposes (one Transposer
    per chunk of planes) land exactly where a whole transpose puts them."""
    comm = MPI.COMM_WORLD
    for proc_grid in process_grids(comm.size):
        with PencilDecomposition((7, 5, 6), proc_grid, comm) as decomposition:
            for progress in (False, True):
                _check_plane_round_trip(decomposition, progress)


def _check_plane_round_trip(decomposition: PencilDecomposition, progress: bool) -> None:
    field = np.random.default_rng(3).standard_normal((7, 5, 6))
    y_pencil = decomposition.scatter_global(field, "y")
    whole = Transposer(decomposition).y_to_z(y_pencil)
    local_x = y_pencil.shape[0]
    bounds = [0, local_x // 3, local_x]
    chunks = [Transposer(decomposition, planes=planes) for planes in itertools.pairwise(bounds)]
    z_pencil, back = decomposition.zeros("z"), decomposition.zeros("y")

    def there(i):
        start, stop = chunks[i].planes
        return chunks[i].start(y_pencil[start:stop], "y", "z", out=z_pencil[start:stop])

    def and_back(i):
        start, stop = chunks[i].planes
        return chunks[i].start(z_pencil[start:stop], "z", "y", out=back[start:stop])

    pipelined(len(chunks), (there, and_back), progress=progress)
    assert np.array_equal(z_pencil, whole), decomposition.proc_grid
    assert np.array_equal(back, y_pencil), decomposition.proc_grid


def test_plane_transposer_refuses_planes_beyond_the_piece():
    with PencilDecomposition((4, 4, 4), None, MPI.COMM_SELF) as decomposition:
        with pytest.raises(ValueError, match="planes must be"):
            Transposer(decomposition, planes=(2, 5))
        chunk = Transposer(decomposition, planes=(0, 2))
        with pytest.raises(ValueError, match="moves y<->z only"):
            chunk.transpose(np.zeros((2, 4, 4)), "x", "y")


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
