"""Overlapped (non-blocking, pipelined) transposes give the results of blocking ones, on
every process grid of 1, 2 and 3 ranks."""

import itertools

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.numerics.cylindrical_grid import CylindricalGrid
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.parallel import PencilDecomposition, Transposer
from tachyflow.parallel.pencil import process_grids
from tachyflow.parallel.transpose import METHODS, pipelined
from tachyflow.solvers.pencil.cylindrical import CylindricalSolver
from tachyflow.solvers.pencil.incompressible import IncompressibleSolver
from tachyflow.solvers.pencil.poisson import PoissonSolver

POISSON_GRIDS = [
    StaggeredGrid((8, 6, 10), (2.0, 1.5, 3.0), periodic_y=False, stretching=1.0),
    StaggeredGrid((7, 5, 9), (2.0, 1.5, 3.0), periodic_y=True, periodic_x=False),
    CylindricalGrid((6, 5, 8), 2.0, 1.0, stretching=1.0),
]


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
    """The y-pencil moves by windows; the other pencil's windows are separate arrays
    (x) or pieces of one array (z)."""
    axis, source, target = exchange
    pencil = decomposition.scatter_global(field, source)
    whole = Transposer(decomposition, method=method).transpose(pencil, source, target)
    bounds = [0, pencil.shape[axis] // 3, pencil.shape[axis]]
    chunks = [
        Transposer(decomposition, method=method, window=(axis, *ends))
        for ends in itertools.pairwise(bounds)
    ]
    if axis == 0:
        there = decomposition.zeros(target)
        pieces = [there[start:stop] for start, stop in itertools.pairwise(bounds)]
    else:
        pieces = [np.zeros(chunk.local_shape(target)) for chunk in chunks]
    back = decomposition.zeros(source)
    stages = (
        lambda i: chunks[i].start(pencil, source, target, out=pieces[i]),
        lambda i: chunks[i].start(pieces[i], target, source, out=back),
    )
    pipelined(len(chunks), stages, progress=progress)
    assert np.array_equal(np.concatenate(pieces, axis), whole), (decomposition.proc_grid, axis)
    assert np.array_equal(back, pencil), (decomposition.proc_grid, exchange)


def test_window_transposer_checks_its_window():
    with PencilDecomposition((4, 4, 4), None, MPI.COMM_SELF) as decomposition:
        with pytest.raises(ValueError, match="need 0 <= start <= stop <= 4"):
            Transposer(decomposition, window=(0, 2, 5))
        with pytest.raises(ValueError, match="axis must be 0"):
            Transposer(decomposition, window=(1, 0, 2))
        chunk = Transposer(decomposition, window=(0, 0, 2))
        with pytest.raises(ValueError, match="moves y->z and z->y only"):
            chunk.transpose(np.zeros((2, 4, 4)), "x", "y")
        with pytest.raises(ValueError, match=r"z-pencil window on rank 0 has shape \(2, 4, 4\)"):
            chunk.transpose(decomposition.zeros("y"), "y", "z", out=decomposition.zeros("z"))


@pytest.mark.parallel(nprocs=[1, 2, 3])
def test_overlapped_cylindrical_step_equals_blocking_bit_for_bit():
    comm = MPI.COMM_WORLD
    variants = (((), False), (("theta",), False), (("theta", "poisson"), True))
    for proc_grid in process_grids(comm.size):
        case = config.load("axial-fan").replace("grid", cells=(8, 6, 6))
        results = []
        for overlap, progress in variants:
            case = case.replace("parallel", proc_grid=proc_grid, overlap=overlap)
            fan = CylindricalSolver.from_case(case, comm, "estimate")
            assert (fan.theta_overlap, fan.overlap) == ("theta" in overlap, "poisson" in overlap)
            fan.progress_calls = progress
            for _ in range(2):
                fan.step(case.time.dt)
            results.append([fan.cell_field(name) for name in fan.fields])
            fan.free()
            fan.decomposition.free()
        for other in results[1:]:
            for blocking, overlapped in zip(results[0], other, strict=True):
                assert np.array_equal(blocking, overlapped), proc_grid


def test_overlap_places_are_checked():
    text = config.load("axial-fan").to_toml()
    assert 'overlap = ["theta"]' in text
    with pytest.raises(ConfigError, match=r"parallel\.overlap"):
        config.parse(text.replace('overlap = ["theta"]', 'overlap = ["fft"]'))
    with PencilDecomposition((4, 4, 4), None, MPI.COMM_SELF) as decomposition:
        grid = CylindricalGrid((4, 4, 4), 1.0, 1.0)
        with pytest.raises(ValueError, match="overlap must be a collection of"):
            CylindricalSolver(decomposition, grid, 0.1, overlap=("fft",))


@pytest.mark.parallel(nprocs=[1, 2, 3])
@pytest.mark.parametrize("grid", POISSON_GRIDS, ids=("channel", "open-x", "pipe"))
def test_overlapped_and_slab_poisson_solves_equal_the_pencil_one(grid):
    comm = MPI.COMM_WORLD
    rng = np.random.default_rng(7)
    rhs = rng.standard_normal(grid.shape)
    for proc_grid in process_grids(comm.size):
        with PencilDecomposition(grid.shape, proc_grid, comm) as decomposition:
            local = decomposition.scatter_global(rhs, "y")
            solutions = []
            for overlap, chunks, progress, slabs in (
                (False, 2, False, False),
                (False, 2, False, True),
                (True, 2, False, True),
                (True, 3, True, True),
            ):
                solver = PoissonSolver(
                    decomposition, grid, planning="estimate", overlap=overlap, chunks=chunks,
                    slabs=slabs,
                )
                # z-slabs where z is whole and x split (every grid here has modes enough).
                assert solver.slabs is (slabs and proc_grid[0] > 1 and proc_grid[1] == 1)
                solver.progress_calls = progress
                solutions.append(solver.solve(local))
                assert np.array_equal(local, decomposition.scatter_global(rhs, "y"))
                solver.free()
            scale = np.abs(solutions[0]).max(initial=1.0)
            for other in solutions[1:]:
                difference = np.abs(other - solutions[0]).max(initial=0.0)
                assert difference <= 1e-13 * scale, (proc_grid, difference)


def test_poisson_slabs_are_checked():
    grid = POISSON_GRIDS[0]
    with PencilDecomposition(grid.shape, None, MPI.COMM_SELF) as decomposition:
        solver = PoissonSolver(decomposition, grid, planning="estimate")
        assert not solver.slabs  # one rank: nothing to exchange
        with pytest.raises(ValueError, match=r"z-slabs need a p_row x 1 grid .* got a 1x1"):
            solver.slabs = True
        with pytest.raises(TypeError, match="slabs must be True or False, got 1"):
            solver.slabs = 1
        solver.free()
        with pytest.raises(TypeError, match="slabs must be True or False, got 'yes'"):
            PoissonSolver(decomposition, grid, planning="estimate", slabs="yes")


def test_poisson_refuses_a_bad_chunk_count():
    grid = POISSON_GRIDS[0]
    with PencilDecomposition(grid.shape, None, MPI.COMM_SELF) as decomposition:
        with pytest.raises(ValueError, match="chunks must be an integer >= 1, got 0"):
            PoissonSolver(decomposition, grid, planning="estimate", chunks=0)


@pytest.mark.parallel(nprocs=[1, 2, 3])
def test_overlapped_channel_step_equals_blocking():
    comm = MPI.COMM_WORLD
    for proc_grid in process_grids(comm.size):
        case = config.load("channel").replace("grid", cells=(8, 6, 6))
        results = []
        for overlap in ((), ("poisson",)):
            case = case.replace("parallel", proc_grid=proc_grid, overlap=overlap)
            solver = IncompressibleSolver.from_case(case, comm, "estimate")
            assert solver.overlap is bool(overlap)
            for _ in range(2):
                solver.step(case.time.dt or 1e-3)
            results.append([solver.cell_field(name) for name in solver.fields])
            solver.free()
            solver.decomposition.free()
        for blocking, overlapped in zip(*results, strict=True):
            scale = np.abs(blocking).max(initial=1.0)
            assert np.abs(overlapped - blocking).max(initial=0.0) <= 1e-13 * scale, proc_grid
