"""Plot3D round trips in every layout, and C-grids as SU2 meshes read back by meshio."""

import itertools
import re
import warnings

import meshio
import numpy as np
import pytest

from tachyflow.io.plot3d import read_plot3d, su2_connectivity, write_plot3d, write_su2
from tachyflow.numerics.airfoil_grids import c_grid, flat_plate_h_grid
from tachyflow.numerics.airfoils import naca4
from tachyflow.numerics.grid_topology import grid_from_nodes


@pytest.fixture(scope="module")
def small_c_grid():
    return c_grid(naca4("0012"), cells=(24, 6), wake_cells=6, finest_level=0)


def test_plot3d_round_trips(tmp_path, small_c_grid):
    second = (np.arange(12.0).reshape(4, 3), -np.arange(12.0).reshape(4, 3) / 7)
    first = (small_c_grid.x, small_c_grid.y)
    layouts = itertools.product((False, True), (True, False), ("double", "single"), "<>")
    for formatted, multi, precision, byteorder in layouts:
        if formatted and byteorder == ">":
            continue  # byte order means nothing in ASCII
        blocks = [first, second] if multi else [first]
        path = tmp_path / f"grid-{formatted}-{multi}-{precision}-{byteorder == '<'}.xyz"
        write_plot3d(path, blocks, formatted, multi, precision, byteorder)
        back = read_plot3d(path)
        assert len(back) == len(blocks)
        for (x, y), (bx, by) in zip(blocks, back, strict=True):
            if precision == "double":
                np.testing.assert_array_equal(bx, x)
                np.testing.assert_array_equal(by, y)
            else:
                np.testing.assert_array_equal(bx, x.astype(np.float32))
                np.testing.assert_array_equal(by, y.astype(np.float32))


def test_c_grid_from_a_plot3d_file_finds_its_wake_cut(tmp_path, small_c_grid):
    path = write_plot3d(tmp_path / "c.x", [(small_c_grid.x, small_c_grid.y)])
    ((x, y),) = read_plot3d(path)
    grid = grid_from_nodes(x, y, "read back")
    assert grid.wake_cells == small_c_grid.wake_cells == 6
    assert grid.wall == small_c_grid.wall == (6, 18)
    plate = flat_plate_h_grid(cells=(8, 4), upstream_cells=3)
    assert grid_from_nodes(plate.x, plate.y).wake_cells == 0  # an open grid: no cut


def test_plot3d_layout_on_disk(tmp_path):
    x, y = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]), np.array([[0, 1], [0, 1], [0, 1.0]])
    path = write_plot3d(tmp_path / "a.p2d", [(x, y)], formatted=True, multi_block=True)
    tokens = path.read_text().split()
    # Block count, dimensions, then x with i fastest, then y.
    assert tokens[:3] == ["1", "3", "2"]
    assert [float(t) for t in tokens[3:9]] == [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]
    raw = write_plot3d(tmp_path / "a.x", [(x, y)], multi_block=False).read_bytes()
    assert raw[:16] == np.array([8, 3, 2, 8], dtype="<i4").tobytes()
    assert len(raw) == 16 + 4 + 12 * 8 + 4


def test_plot3d_bad_input(tmp_path):
    with pytest.raises(ValueError, match="the single-block layout holds one block, got 2"):
        write_plot3d(tmp_path / "b.x", [(np.zeros((2, 2)),) * 2] * 2, multi_block=False)
    with pytest.raises(ValueError, match="block 0: x and y must be 2D node arrays"):
        write_plot3d(tmp_path / "b.x", [(np.zeros((2, 2)), np.zeros((2, 3)))])
    (tmp_path / "short.xyz").write_text("1\n3 2\n0 1 2\n")
    with pytest.raises(ValueError, match="header asks for 12 coordinates"):
        read_plot3d(tmp_path / "short.xyz")


def test_su2_c_grid_reads_back_with_the_wake_merged(tmp_path, small_c_grid):
    grid = small_c_grid
    (ni, nj), w = grid.cells, grid.wake_cells
    path = write_su2(tmp_path / "naca.su2", grid)
    text = path.read_text()
    assert re.findall(r"MARKER_TAG= (\w+)", text) == ["airfoil", "farfield"]
    assert [int(n) for n in re.findall(r"MARKER_ELEMS= (\d+)", text)] == [
        ni - 2 * w,
        ni + 2 * nj,
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mesh = meshio.read(path)
    assert len(mesh.points) == (ni + 1) * (nj + 1) - (w + 1)
    assert mesh.get_cells_type("quad").shape == (ni * nj, 4)
    lines = mesh.get_cells_type("line")
    assert len(lines) == (ni - 2 * w) + (ni + 2 * nj)
    tags = np.concatenate(mesh.cell_data["su2:tag"][1:])
    assert np.bincount(tags).tolist() == [0, ni - 2 * w, ni + 2 * nj]
    # Every quad keeps a positive area, and the cut is gone: each inner edge of the mesh
    # belongs to exactly two quads, the boundary edges to one, and those are the markers.
    points, quads, markers = su2_connectivity(grid)
    corners = points[quads]
    diagonal, other = corners[:, 2] - corners[:, 0], corners[:, 3] - corners[:, 1]
    assert np.all(diagonal[:, 0] * other[:, 1] - diagonal[:, 1] * other[:, 0] > 0)
    edges = np.sort(np.stack([quads, np.roll(quads, -1, axis=1)], axis=-1).reshape(-1, 2))
    unique, count = np.unique(edges, axis=0, return_counts=True)
    boundary = np.sort(np.concatenate(list(markers.values())), axis=1)
    np.testing.assert_array_equal(unique[count == 1], np.unique(boundary, axis=0))
    assert set(count) == {1, 2}


def test_su2_h_grid_has_a_symmetry_marker():
    grid = flat_plate_h_grid(cells=(8, 4), upstream_cells=3)
    _, quads, markers = su2_connectivity(grid)
    assert {name: len(lines) for name, lines in markers.items()} == {
        "airfoil": 5,
        "farfield": 8 + 2 * 4,
        "symmetry": 3,
    }
    assert len(quads) == 32
