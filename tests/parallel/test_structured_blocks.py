"""Blocks of a structured C-grid: ghost exchange (wake cut, corners, periodic), boundary
sides, node pieces and bad input, at 1, 2 and 3 ranks."""

import itertools
import tempfile

import numpy as np
import pytest
from mpi4py import MPI
from pytest_mpi import parallel_assert

from tachyflow.numerics.airfoil_grids import c_grid
from tachyflow.numerics.airfoils import naca4
from tachyflow.parallel.structured_blocks import (
    StructuredBlocks,
    block_grids,
    choose_block_grid,
)

GHOSTS = 2
# (ni, nj, wake cells, periodic in i): C-grids with a wake of a few blocks' width, one
# whose wake is nearly all of i, a wall-only grid, an O-grid; odd sizes split unevenly.
CASES = [
    (24, 6, 6, False),
    (17, 5, 4, False),
    (30, 7, 14, False),
    (13, 6, 0, False),
    (12, 4, 0, True),
]


def ghost_source(i, j, ni, nj, wake, periodic):
    """The global cell a ghost (i, j) stands for, straight from the index convention."""
    if periodic:
        i %= ni
    if not 0 <= i < ni or j >= nj:
        return None  # outflow, far field
    if j < 0:
        if i < wake or i >= ni - wake:
            return ni - 1 - i, -1 - j  # across the wake cut
        return None  # wall
    return i, j


def expected_piece(reference, blocks, wake, periodic):
    """This rank's ghosted array as the serial reference says (NaN: physical boundary)."""
    ni, nj = reference.shape[-2:]
    g = blocks.ghosts
    expected = np.full((reference.shape[0], *blocks.shape_with_ghosts), np.nan)
    for a, b in itertools.product(*(range(n) for n in blocks.shape_with_ghosts)):
        cell = ghost_source(
            blocks.i_range.start - g + a, blocks.j_range.start - g + b, ni, nj, wake, periodic
        )
        if cell is not None:
            expected[:, a, b] = reference[:, cell[0], cell[1]]
    return expected


@pytest.mark.parallel([1, 2, 3])
def test_exchange_fills_every_ghost_like_the_serial_reference():
    comm = MPI.COMM_WORLD
    failures = []
    for ni, nj, wake, periodic in CASES:
        cells_i, cells_j = np.meshgrid(np.arange(ni), np.arange(nj), indexing="ij")
        # Three variables; every value names its cell and variable.
        reference = np.stack([1000.0 * cells_i + cells_j + 1e5 * v for v in range(3)])
        grids = [*block_grids(ni, nj, comm.size, GHOSTS), None]
        for grid in grids:
            with StructuredBlocks(comm, ni, nj, GHOSTS, wake, periodic, grid) as blocks:
                array = blocks.allocate(3)
                array[...] = np.nan
                blocks.interior(array)[...] = reference[:, blocks.i_range, :][:, :, blocks.j_range]
                blocks.exchange(array)
                expected = expected_piece(reference, blocks, wake, periodic)
                if not np.array_equal(array, expected, equal_nan=True):
                    failures.append((ni, nj, wake, periodic, blocks.proc_grid))
                # A second exchange on a single variable reuses the same plan.
                single = np.ascontiguousarray(array[1])
                blocks.exchange(single)
                if not np.array_equal(single, expected[1], equal_nan=True):
                    failures.append(("2D", ni, nj, wake, periodic, blocks.proc_grid))
    parallel_assert(not failures, f"{len(failures)} failures, first: {failures[:3]}")


@pytest.mark.parallel([1, 2, 3])
def test_boundary_sides_tile_the_physical_boundary():
    comm = MPI.COMM_WORLD
    ni, nj, wake = 24, 6, 6
    for grid in block_grids(ni, nj, comm.size, GHOSTS):
        with StructuredBlocks(comm, ni, nj, GHOSTS, wake, proc_grid=grid) as blocks:
            segments = [s for part in comm.allgather(blocks.boundary_sides()) for s in part]
        covered = {}
        for segment in segments:
            key = (segment.side, segment.kind)
            covered.setdefault(key, []).extend(range(segment.start, segment.stop))
        assert sorted(covered) == [
            ("i_high", "outflow"),
            ("i_low", "outflow"),
            ("j_high", "farfield"),
            ("j_low", "wake"),
            ("j_low", "wall"),
        ]
        assert sorted(covered[("j_low", "wall")]) == list(range(wake, ni - wake))
        assert sorted(covered[("j_low", "wake")]) == [*range(wake), *range(ni - wake, ni)]
        assert sorted(covered[("j_high", "farfield")]) == list(range(ni))
        assert sorted(covered[("i_low", "outflow")]) == list(range(nj))
        assert sorted(covered[("i_high", "outflow")]) == list(range(nj))


def cell_areas(x, y):
    return 0.5 * (
        (x[1:, 1:] - x[:-1, :-1]) * (y[:-1, 1:] - y[1:, :-1])
        - (y[1:, 1:] - y[:-1, :-1]) * (x[:-1, 1:] - x[1:, :-1])
    )


@pytest.mark.parallel([1, 2, 3])
def test_node_pieces_mirror_the_wake_and_agree_with_one_block():
    comm = MPI.COMM_WORLD
    grid = c_grid(naca4("0012"), cells=(24, 6), wake_cells=6, finest_level=0)
    (ni, nj), wake, g = grid.cells, grid.wake_cells, GHOSTS
    with StructuredBlocks(MPI.COMM_SELF, ni, nj, g, wake) as whole:
        whole_x, whole_y = whole.node_piece(grid.x, grid.y)
    # Serial checks of the extended grid (node (i, j) sits at [i + g, j + g]).
    nodes = np.arange(wake + 1)
    for k in range(1, g + 1):
        np.testing.assert_array_equal(whole_x[nodes + g, g - k], grid.x[ni - nodes, k])
        np.testing.assert_array_equal(whole_y[nodes + g, g - k], grid.y[ni - nodes, k])
    wall = np.arange(wake + 1, ni - wake)
    np.testing.assert_allclose(whole_x[wall + g, g - 1], 2 * grid.x[wall, 0] - grid.x[wall, 1])
    areas = cell_areas(whole_x, whole_y)
    cut = np.arange(wake)
    # Ghost cell (i, -1) across the cut is cell (ni - 1 - i, 0): the same area.
    np.testing.assert_allclose(areas[cut + g, g - 1], areas[ni - 1 - cut + g, g], rtol=1e-12)
    np.testing.assert_allclose(areas[g:-g, g:-g], grid.cell_areas())
    # An O-grid (periodic in i, no wake): ghost nodes wrap round, the far field extrapolates.
    angle = np.linspace(0.0, 2 * np.pi, 13)[:, None]
    radius = np.geomspace(1.0, 8.0, 5)[None, :]
    ring_x, ring_y = radius * np.cos(angle), radius * np.sin(angle)
    with StructuredBlocks(MPI.COMM_SELF, 12, 4, g, periodic_i=True) as ring:
        piece_x, piece_y = ring.node_piece(ring_x, ring_y)
    np.testing.assert_allclose(piece_x[: g + 1, g:-g], ring_x[-g - 1 :, :], atol=1e-12)
    np.testing.assert_allclose(piece_y[-g:, g:-g], ring_y[1 : g + 1, :], atol=1e-12)
    np.testing.assert_allclose(piece_x[g:-g, -1], 3 * ring_x[:, -1] - 2 * ring_x[:, -2])
    # Node pieces read only what they need: a memory map of the global grid will do.
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        np.save(f"{folder}/x.npy", grid.x)
        mapped_x = np.load(f"{folder}/x.npy", mmap_mode="r")
        for proc_grid in block_grids(ni, nj, comm.size, g):
            with StructuredBlocks(comm, ni, nj, g, wake, proc_grid=proc_grid) as blocks:
                x, y = blocks.node_piece(mapped_x, grid.y)
                rows = slice(blocks.i_range.start, blocks.i_range.stop + 2 * g + 1)
                columns = slice(blocks.j_range.start, blocks.j_range.stop + 2 * g + 1)
                if not (
                    np.array_equal(x, whole_x[rows, columns])
                    and np.array_equal(y, whole_y[rows, columns])
                ):
                    failures.append(proc_grid)
    parallel_assert(not failures, f"node pieces differ on {failures}")


@pytest.mark.parallel([1, 2, 3])
def test_block_choice_reductions_and_shapes():
    comm = MPI.COMM_WORLD
    with StructuredBlocks(comm, 280, 64, wake_cut=40) as blocks:
        assert blocks.proc_grid == choose_block_grid(280, 64, comm.size, 2)
        assert blocks.proc_grid == (comm.size, 1)  # splits in i for a C-grid
        sizes = comm.allgather(len(blocks.i_range))
        assert sum(sizes) == 280 and max(sizes) - min(sizes) <= 1
        assert blocks.shape_with_ghosts == (len(blocks.i_range) + 4, 68)
        assert blocks.sum(comm.rank + 1) == comm.size * (comm.size + 1) / 2
        assert blocks.max(comm.rank) == comm.size - 1
        np.testing.assert_array_equal(
            blocks.sum(np.array([1.0, comm.rank])), [comm.size, sum(range(comm.size))]
        )
    assert choose_block_grid(280, 64, 16, 2) == (8, 2)
    assert choose_block_grid(280, 64, 4, 2) == (4, 1)


@pytest.mark.parallel([1, 2, 3])
def test_bad_input_raises_on_every_rank():
    comm = MPI.COMM_WORLD
    with pytest.raises(ValueError, match="a 1 x 1 grid cannot be split over"):
        StructuredBlocks(comm, 1, 1)
    with pytest.raises(ValueError, match="ghosts must be an integer >= 1, got 0"):
        StructuredBlocks(comm, 24, 6, ghosts=0)
    with pytest.raises(ValueError, match="wake_cut must be an integer in"):
        StructuredBlocks(comm, 24, 6, wake_cut=13)
    with pytest.raises(ValueError, match=f"proc_grid {comm.size}x2 has"):
        StructuredBlocks(comm, 24, 6, proc_grid=(comm.size, 2))
    with pytest.raises(ValueError, match="nj = 3 cells over 1 blocks gives blocks of 3 cells"):
        StructuredBlocks(comm, 24, 3, ghosts=4, proc_grid=(comm.size, 1))
    with StructuredBlocks(comm, 24, 6, wake_cut=6) as blocks:
        with pytest.raises(ValueError, match=r"needs \(\.\.\., "):
            blocks.exchange(np.zeros((3, 3)))
        with pytest.raises(ValueError, match="C-contiguous"):
            blocks.exchange(np.asfortranarray(blocks.allocate(2)))
        with pytest.raises(TypeError, match="numpy array"):
            blocks.exchange([1.0])
        with pytest.raises(ValueError, match="node arrays must have shape \\(25, 7\\)"):
            blocks.node_piece(np.zeros((24, 7)), np.zeros((24, 7)))
