import numpy as np
import pytest
from mpi4py import MPI

from tachyflow.errors import DecompositionError
from tachyflow.parallel import (
    PencilDecomposition,
    Transposer,
    choose_process_grid,
    parse_proc_grid,
    process_grids,
    split_bounds,
)
from tachyflow.parallel.halo import _axis_plan


@pytest.mark.parametrize(("length", "parts"), [(10, 3), (3, 5), (1, 1), (17, 4), (4, 4)])
def test_split_bounds_are_even_and_cover_the_axis(length, parts):
    bounds = split_bounds(length, parts)
    sizes = np.diff(bounds)
    assert bounds[0] == 0 and bounds[-1] == length and len(sizes) == parts
    assert sizes.max() - sizes.min() <= 1
    assert list(sizes) == sorted(sizes, reverse=True)


def test_split_bounds_exact_values():
    assert list(split_bounds(10, 3)) == [0, 4, 7, 10]
    assert list(split_bounds(2, 3)) == [0, 1, 2, 2]


def test_process_grids_lists_every_factorisation():
    assert process_grids(12) == [(1, 12), (2, 6), (3, 4), (4, 3), (6, 2), (12, 1)]
    assert process_grids(7) == [(1, 7), (7, 1)]


def test_choose_process_grid():
    # Slabs move the least data; ties go to more rows (longer contiguous runs).
    assert choose_process_grid((128, 128, 128), 2) == (2, 1)
    assert choose_process_grid((128, 128, 128), 4) == (4, 1)
    # More ranks than cells along x: a pencil grid avoids idle ranks.
    assert choose_process_grid((4, 64, 64), 16) == (4, 4)
    # z too short to be split 8 ways: slabs in x; on a small grid the latency of 7 messages
    # outweighs the volume saved, and a 4x2 pencil grid wins.
    assert choose_process_grid((256, 256, 2), 8) == (8, 1)
    assert choose_process_grid((64, 64, 2), 8) == (4, 2)


def test_parse_proc_grid():
    assert parse_proc_grid("2x3") == (2, 3)
    for text in ("2", "2x", "x3", "2x3x4", "axb", "-1x2"):
        with pytest.raises(DecompositionError, match="ROWSxCOLS"):
            parse_proc_grid(text)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"global_shape": (4, 4)}, r"3 positive integers, got \(4, 4\)"),
        ({"global_shape": (4, -1, 4)}, r"3 positive integers, got \(4, -1, 4\)"),
        ({"global_shape": (4, 4.5, 4)}, r"3 positive integers"),
        ({"global_shape": 7}, r"3 positive integers, got 7"),
        (
            {"global_shape": (4, 4, 4), "proc_grid": (2, 1)},
            r"2x1 has 2 ranks but the communicator has 1; valid grids: 1x1",
        ),
        ({"global_shape": (4, 4, 4), "proc_grid": (0, 1)}, r"two positive integers"),
        ({"global_shape": (4, 4, 4), "periodic": (True, False)}, r"a bool or 3 bools"),
    ],
)
def test_decomposition_rejects_bad_input(arguments, message):
    with pytest.raises(DecompositionError, match=message):
        PencilDecomposition(comm=MPI.COMM_SELF, **arguments)


def test_serial_decomposition_has_whole_pencils_and_no_traffic():
    with PencilDecomposition((5, 6, 7), comm=MPI.COMM_SELF) as decomposition:
        for orientation in "xyz":
            assert decomposition.local_shape(orientation) == (5, 6, 7)
            assert decomposition.local_start(orientation) == (0, 0, 0)
        transposer = Transposer(decomposition, np.complex64)
        data = (np.arange(210) * (1 + 2j)).astype(np.complex64).reshape(5, 6, 7)
        assert np.array_equal(transposer.x_to_z(data), data)


def test_transposer_rejects_bad_construction():
    with PencilDecomposition((4, 4, 4), comm=MPI.COMM_SELF) as decomposition:
        with pytest.raises(ValueError, match="method must be one of"):
            Transposer(decomposition, method="alltoall")
        with pytest.raises(TypeError, match="real or complex arrays, got dtype int64"):
            Transposer(decomposition, np.int64)
        with pytest.raises(ValueError, match="orientation must be 'x', 'y' or 'z', got 'w'"):
            Transposer(decomposition).transpose(decomposition.zeros("x"), "x", "w")


def test_halo_plan_wraps_periodically_onto_narrow_pieces():
    # 5 cells in pieces [0,2) [2,4) [4,5); width 2 on the last rank needs cells 2,3 (from
    # rank 1) below and 0,1 (rank 0, wrapped) above.
    bounds = split_bounds(5, 3)
    sends, receives = _axis_plan(bounds, 2, width=2, periodic=True)
    assert [(t.peer, t.indices) for t in receives] == [(0, slice(3, 5)), (1, slice(0, 2))]
    # Rank 2 owns only cell 4: rank 0's low ghosts are cells 3 and 4, so it sends cell 4 once
    # to rank 0; rank 1's high ghosts are cells 4 and 0, so cell 4 goes to rank 1 as well.
    assert [(t.peer, t.indices) for t in sends] == [(0, slice(2, 3)), (1, slice(2, 3))]


def test_halo_plan_without_periodicity_has_no_wrap():
    sends, receives = _axis_plan(split_bounds(6, 2), 0, width=1, periodic=False)
    assert [(t.peer, t.indices) for t in receives] == [(1, slice(4, 5))]
    assert [(t.peer, t.indices) for t in sends] == [(1, slice(3, 4))]
