"""HPL on 1, 2 and 3 ranks: residual check on every process grid and several block sizes,
the exact solution, every panel broadcast giving the same answer, a singular matrix, and
bad input."""

import itertools
from functools import partial

import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow import collectives
from tachyflow.bench.hpl import run_hpl_benchmark
from tachyflow.numerics.lu import random_block
from tachyflow.parallel.process_grid import ProcessGrid
from tachyflow.programs.hpl.solver import BROADCASTS, DistributedLU


def grids(size):
    return [(p, size // p) for p in range(1, size + 1) if size % p == 0]


def solve(grid, n, block, broadcast="binomial", matrix=None):
    matrix = matrix or partial(random_block, seed=42)
    solver = DistributedLU(grid, n, block, broadcast)
    solver.generate(matrix)
    zero = solver.factor()
    x = solver.solve() if zero < 0 else None
    return solver, zero, x, matrix


def whole_x(grid, solver, x):
    """x gathered on every rank (test only: small N)."""
    pieces = grid.comm.allgather((solver.cols.indices[: x.size], x))
    full = np.zeros(solver.n)
    for columns, values in pieces:
        full[columns] = values
    return full


@pytest.mark.parallel([1, 2, 3])
def test_residual_check_passes_on_every_grid_and_block_size():
    comm = MPI.COMM_WORLD
    for rows, cols in grids(comm.size):
        grid = ProcessGrid(comm, rows, cols)
        # Block sizes that divide N, that do not (b shares the last block), and N = 301.
        for n, block in [(500, 32), (500, 64), (500, 48), (301, 20)]:
            solver, zero, x, matrix = solve(grid, n, block)
            check = solver.residual(matrix, x)
            label = f"{rows}x{cols}, N={n}, NB={block}"
            parallel_assert(zero == -1, f"{label}: zero pivot at {zero}")
            parallel_assert(check["residual"] < 16, f"{label}: {check}")
            parallel_assert(check["a_norm"] > 0 and check["x_norm"] > 0)
        grid.free()


@pytest.mark.parallel([1, 2, 3])
def test_solution_is_the_exact_one():
    comm = MPI.COMM_WORLD
    n = 120
    augmented = random_block(np.arange(n), np.arange(n + 1), seed=42)
    exact = np.linalg.solve(augmented[:, :n], augmented[:, n])
    for rows, cols in grids(comm.size):
        grid = ProcessGrid(comm, rows, cols)
        solver, _, x, _ = solve(grid, n, 7)  # blocks cut the matrix unevenly
        full = whole_x(grid, solver, x)
        parallel_assert(np.allclose(full, exact, rtol=1e-10, atol=1e-10), f"{rows}x{cols}")
        grid.free()


@pytest.mark.parallel([2, 3])
def test_every_panel_broadcast_gives_the_same_solution():
    comm = MPI.COMM_WORLD
    for rows, cols in grids(comm.size):
        grid = ProcessGrid(comm, rows, cols)
        solutions = {}
        for broadcast in BROADCASTS:
            solver, _, x, _ = solve(grid, 200, 16, broadcast)
            solutions[broadcast] = whole_x(grid, solver, x)
        reference = solutions["native"]
        for broadcast, full in solutions.items():
            parallel_assert(
                np.allclose(full, reference, rtol=1e-13, atol=1e-13),
                f"{broadcast} on {rows}x{cols}: {np.abs(full - reference).max()}",
            )
        grid.free()


@pytest.mark.parallel([1, 2, 3])
def test_a_singular_matrix_is_reported_not_a_crash():
    comm = MPI.COMM_WORLD

    def with_zero_column(rows, columns, out):
        random_block(rows, columns, seed=42, out=out)
        out[:, np.asarray(columns) == 45] = 0.0
        return out

    for rows, cols in grids(comm.size):
        grid = ProcessGrid(comm, rows, cols)
        _, zero, x, _ = solve(grid, 100, 16, matrix=with_zero_column)
        parallel_assert(zero == 45 and x is None, f"{rows}x{cols}: zero pivot at {zero}")
        grid.free()
    document = run_hpl_benchmark(
        [100], 16, grids(comm.size)[-1], ["ring", "native"], 2, comm, matrix=with_zero_column
    )
    (entry,) = document["results"]
    parallel_assert(entry["singular"] and entry["zero_pivot_column"] == 45)
    parallel_assert(not entry["residual_passed"] and entry["gflops"] is None)


@pytest.mark.parallel([1, 2, 3])
def test_benchmark_document_reports_gflops_and_the_check():
    comm = MPI.COMM_WORLD
    shape = grids(comm.size)[0]
    document = run_hpl_benchmark([150, 200], 32, shape, ["binomial", "ring"], 2, comm)
    parallel_assert(len(document["results"]) == 4)
    for entry in document["results"]:
        parallel_assert(entry["residual_passed"] and entry["verified"] and not entry["singular"])
        parallel_assert(entry["gflops"] == pytest.approx(
            (2 / 3 * entry["n"] ** 3 + 1.5 * entry["n"] ** 2) / entry["median"] / 1e9
        ))
        parallel_assert(len(entry["samples"]) == 2 and entry["proc_grid"] == list(shape))


@pytest.mark.parallel([2])
def test_bad_input_is_refused_on_every_rank():
    comm = MPI.COMM_WORLD
    with pytest.raises(ValueError, match="needs 4 ranks, got 2"):
        ProcessGrid(comm, 2, 2)
    grid = ProcessGrid(comm, 1, 2)
    with pytest.raises(ValueError, match="block size NB"):
        DistributedLU(grid, 10, 0)
    with pytest.raises(ValueError, match="order N"):
        DistributedLU(grid, 0, 4)
    with pytest.raises(ValueError, match="broadcast must be one of"):
        DistributedLU(grid, 10, 4, "carrier-pigeon")
    with pytest.raises(ValueError, match="repeats"):
        run_hpl_benchmark([10], 4, (1, 2), ["ring"], 0, comm)
    grid.free()


@pytest.mark.parallel([1, 2, 3])
def test_nonblocking_broadcast_completes_while_polled():
    comm = MPI.COMM_WORLD
    for algo, root in itertools.product(sorted(set(BROADCASTS.values())), range(comm.size)):
        expected = np.arange(1000, dtype=np.float64) * (root + 1)
        buffer = expected.copy() if comm.rank == root else np.zeros(1000)
        segments = 3 if algo in ("pipeline", "two-path") else None
        transfer = collectives.ibcast(comm, buffer, root, algo, segments)
        while not transfer.test():  # a rank's own work would go between the polls
            continue
        parallel_assert(np.array_equal(transfer.wait(), expected), f"{algo} root {root}")
