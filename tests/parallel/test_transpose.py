import itertools

import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.parallel import PencilDecomposition, Transposer, process_grids
from tachyflow.parallel.transpose import METHODS
from tests.conftest import SHAPES, index_array

DTYPES = (np.float64, np.complex128, np.float32)


def _check_all(comm, blocking: bool) -> list:
    failures = []
    for shape, dtype in itertools.product(SHAPES, DTYPES):
        reference = index_array(shape, dtype)
        for grid, method in itertools.product(process_grids(comm.size), METHODS):
            with PencilDecomposition(shape, grid, comm) as decomposition:
                transposer = Transposer(decomposition, dtype, method)
                expected = {o: decomposition.scatter_global(reference, o) for o in "xyz"}
                case = (shape, np.dtype(dtype).name, grid, method)
                for source, target in (("x", "y"), ("y", "x"), ("y", "z"), ("z", "y")):
                    out = np.full(decomposition.local_shape(target), -7, dtype=dtype)
                    if blocking:
                        transposer.transpose(expected[source], source, target, out)
                    else:
                        transposer.start(expected[source], source, target, out).wait()
                    if not np.array_equal(out, expected[target]):
                        failures.append((*case, source, target))
                if blocking:
                    x_back = transposer.z_to_x(transposer.x_to_z(expected["x"]))
                    if not np.array_equal(x_back, expected["x"]):
                        failures.append((*case, "x->z->x"))
    return failures


@pytest.mark.parallel([1, 2, 3])
def test_blocking_transposes_match_the_gathered_reference():
    failures = _check_all(MPI.COMM_WORLD, blocking=True)
    parallel_assert(not failures, f"{len(failures)} failures, first: {failures[:3]}")


@pytest.mark.parallel([1, 2, 3])
def test_non_blocking_transposes_match_the_gathered_reference():
    failures = _check_all(MPI.COMM_WORLD, blocking=False)
    parallel_assert(not failures, f"{len(failures)} failures, first: {failures[:3]}")


@pytest.mark.parallel([2, 3])
def test_several_transposes_in_flight_at_once():
    comm = MPI.COMM_WORLD
    shape = (9, 6, 5)
    with PencilDecomposition(shape, (1, comm.size), comm) as decomposition:
        transposer = Transposer(decomposition, np.float64)
        fields = [index_array(shape) * (k + 1) for k in range(3)]
        requests = [
            transposer.start(decomposition.scatter_global(f, "y"), "y", "z") for f in fields
        ]
        results = [request.wait() for request in requests]
        ok = all(
            np.array_equal(r, decomposition.scatter_global(f, "z"))
            for r, f in zip(results, fields, strict=True)
        )
    parallel_assert(ok, "overlapping transposes corrupted each other")


@pytest.mark.parallel([2, 3])
def test_wrong_shape_or_dtype_raises_on_every_rank_before_communicating():
    comm = MPI.COMM_WORLD
    with PencilDecomposition((6, 6, 6), None, comm) as decomposition:
        transposer = Transposer(decomposition, np.float64)
        with pytest.raises(ValueError, match=r"local x-pencil on rank \d+ has shape"):
            transposer.x_to_y(np.zeros((6, 6, 6)))
        with pytest.raises(TypeError, match="dtype float32 but this Transposer moves float64"):
            transposer.x_to_y(decomposition.zeros("x", np.float32))
        with pytest.raises(ValueError, match="C-contiguous"):
            transposer.x_to_y(np.asfortranarray(decomposition.zeros("x")))
        with pytest.raises(ValueError, match="adjacent orientations"):
            transposer.start(decomposition.zeros("x"), "x", "z")
        # Still usable afterwards: nothing was left half-posted.
        out = transposer.x_to_y(decomposition.zeros("x") + 1.0)
    parallel_assert(bool((out == 1.0).all()), "transposer broken after refused input")


@pytest.mark.parallel([1, 2, 3])
def test_slab_exchanges_match_the_gathered_reference():
    comm = MPI.COMM_WORLD
    failures = []
    for shape, dtype, method in itertools.product(
        ((7, 5, 6), (6, 4, 2)), (np.float64, np.complex128), METHODS
    ):  # (6, 4, 2): fewer z-planes than 3 ranks, a slab may be empty
        reference = index_array(shape, dtype)
        with PencilDecomposition(shape, (comm.size, 1), comm) as decomposition:
            transposer = Transposer(decomposition, dtype, method, slabs=True)
            bounds = decomposition.axis_bounds(2, "row")
            planes = slice(bounds[decomposition.row], bounds[decomposition.row + 1])
            expected = reference[:, :, planes]
            pencil = decomposition.scatter_global(reference, "y")
            slab = transposer.transpose(pencil, "y", "slab")
            started = transposer.start(pencil, "y", "slab").wait()
            back = np.full_like(pencil, -7)
            transposer.start(slab, "slab", "y", back).wait()
            x_pencil = transposer.transpose(slab, "slab", "x")  # through the y-pencil
            if not (
                np.array_equal(slab, expected)
                and np.array_equal(started, expected)
                and np.array_equal(back, pencil)
                and np.array_equal(x_pencil, decomposition.scatter_global(reference, "x"))
            ):
                failures.append((shape, np.dtype(dtype).name, method))
    parallel_assert(not failures, f"{len(failures)} failures: {failures}")


@pytest.mark.parallel([2])
def test_slabs_refused_where_z_is_split():
    comm = MPI.COMM_WORLD
    with PencilDecomposition((6, 6, 6), (1, 2), comm) as decomposition:
        with pytest.raises(ValueError, match=r"p_row x 1 process grid .* got 1x2"):
            Transposer(decomposition, np.float64, slabs=True)
        transposer = Transposer(decomposition, np.float64)
        with pytest.raises(ValueError, match="orientation must be"):
            transposer.transpose(decomposition.zeros("y"), "y", "slab")
