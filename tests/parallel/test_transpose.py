import itertools

import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.parallel import PencilDecomposition, Transposer, process_grids, transpose
from tachyflow.parallel.transpose import LONG_RUN_BYTES, METHODS
from tests.conftest import SHAPES, index_array

DTYPES = (np.float64, np.complex128, np.float32)
# The default, and 1 byte: every block that is not one contiguous run is then received
# through a datatype (the small shapes here have short runs).
RUN_THRESHOLDS = pytest.mark.parametrize("long_run_bytes", [LONG_RUN_BYTES, 1])


def _typed_receives(transposer) -> bool:
    return any(exchange.receive_typed for exchange in transposer._exchanges.values())


def _check_all(comm, blocking: bool) -> list:
    failures, typed = [], False
    for shape, dtype in itertools.product(SHAPES, DTYPES):
        reference = index_array(shape, dtype)
        for grid, method in itertools.product(process_grids(comm.size), METHODS):
            with PencilDecomposition(shape, grid, comm) as decomposition:
                transposer = Transposer(decomposition, dtype, method)
                typed = typed or _typed_receives(transposer)
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
    return failures, typed


def _check_receives(comm, typed: bool, long_run_bytes: int) -> None:
    """Typed receives where every block not in one run is taken so (more than one rank)."""
    if comm.size > 1 and long_run_bytes == 1:
        parallel_assert(typed, "no exchange received through datatypes")


@pytest.mark.parallel([1, 2, 3])
@RUN_THRESHOLDS
def test_blocking_transposes_match_the_gathered_reference(long_run_bytes, monkeypatch):
    monkeypatch.setattr(transpose, "LONG_RUN_BYTES", long_run_bytes)
    failures, typed = _check_all(MPI.COMM_WORLD, blocking=True)
    parallel_assert(not failures, f"{len(failures)} failures, first: {failures[:3]}")
    _check_receives(MPI.COMM_WORLD, typed, long_run_bytes)


@pytest.mark.parallel([1, 2, 3])
@RUN_THRESHOLDS
def test_non_blocking_transposes_match_the_gathered_reference(long_run_bytes, monkeypatch):
    monkeypatch.setattr(transpose, "LONG_RUN_BYTES", long_run_bytes)
    failures, typed = _check_all(MPI.COMM_WORLD, blocking=False)
    parallel_assert(not failures, f"{len(failures)} failures, first: {failures[:3]}")
    _check_receives(MPI.COMM_WORLD, typed, long_run_bytes)


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
@RUN_THRESHOLDS
def test_slab_exchanges_match_the_gathered_reference(long_run_bytes, monkeypatch):
    monkeypatch.setattr(transpose, "LONG_RUN_BYTES", long_run_bytes)
    comm = MPI.COMM_WORLD
    failures, typed = [], False
    for shape, dtype, method in itertools.product(
        ((7, 5, 6), (6, 4, 2)), (np.float64, np.complex128), METHODS
    ):  # (6, 4, 2): fewer z-planes than 3 ranks, a slab may be empty
        reference = index_array(shape, dtype)
        with PencilDecomposition(shape, (comm.size, 1), comm) as decomposition:
            transposer = Transposer(decomposition, dtype, method, slabs=True)
            typed = typed or _typed_receives(transposer)
            bounds = decomposition.axis_bounds(2, "row")
            planes = slice(bounds[decomposition.row], bounds[decomposition.row + 1])
            expected = reference[:, :, planes].transpose(1, 0, 2)  # a slab holds (y, x, z)
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
    _check_receives(comm, typed, long_run_bytes)


@pytest.mark.parallel([1, 2, 3])
def test_shared_slab_exchanges_match_the_gathered_reference():
    """The slab exchanges pulled from shared memory (every rank here is on one node)."""
    comm = MPI.COMM_WORLD
    failures = []
    for shape, dtype in itertools.product(((7, 5, 6), (6, 4, 2)), (np.float64, np.complex128)):
        reference = index_array(shape, dtype)
        with PencilDecomposition(shape, (comm.size, 1), comm) as decomposition:
            transposer = Transposer(decomposition, dtype, slabs=True, shared=True)
            assert transposer.shared
            bounds = decomposition.axis_bounds(2, "row")
            planes = slice(bounds[decomposition.row], bounds[decomposition.row + 1])
            expected = reference[:, :, planes].transpose(1, 0, 2)
            pencil = transposer.shared_array("y")
            pencil[...] = decomposition.scatter_global(reference, "y")
            slab = transposer.transpose(pencil, "y", "slab")
            started = transposer.start(pencil, "y", "slab").wait()
            shared_slab = transposer.shared_array("slab")
            shared_slab[...] = slab
            back = np.full(pencil.shape, -7, dtype=dtype)
            transposer.start(shared_slab, "slab", "y", back).wait()
            again = transposer.transpose(shared_slab, "slab", "y")
            if not (
                np.array_equal(slab, expected)
                and np.array_equal(started, expected)
                and np.array_equal(back, pencil)
                and np.array_equal(again, pencil)
            ):
                failures.append((shape, np.dtype(dtype).name))
            with pytest.raises(ValueError, match=r"reads shared_array\('y'\)"):
                transposer.transpose(pencil.copy(), "y", "slab")
            transposer.free()
    parallel_assert(not failures, f"{len(failures)} failures: {failures}")


@pytest.mark.parallel([1])
def test_shared_exchanges_are_checked():
    comm = MPI.COMM_WORLD
    with PencilDecomposition((4, 4, 4), (1, 1), comm) as decomposition:
        with pytest.raises(ValueError, match="needs slabs=True"):
            Transposer(decomposition, np.float64, shared=True)
        with pytest.raises(TypeError, match="shared must be True or False"):
            Transposer(decomposition, np.float64, slabs=True, shared=1)
        transposer = Transposer(decomposition, np.float64, slabs=True, shared=True)
        with pytest.raises(ValueError, match="no shared 'x' array"):
            transposer.shared_array("x")
        transposer.free()
        assert not transposer.shared


@pytest.mark.parallel([2])
def test_slabs_refused_where_z_is_split():
    comm = MPI.COMM_WORLD
    with PencilDecomposition((6, 6, 6), (1, 2), comm) as decomposition:
        with pytest.raises(ValueError, match=r"p_row x 1 process grid .* got 1x2"):
            Transposer(decomposition, np.float64, slabs=True)
        transposer = Transposer(decomposition, np.float64)
        with pytest.raises(ValueError, match="orientation must be"):
            transposer.transpose(decomposition.zeros("y"), "y", "slab")
