"""Grids read from Plot3D and CGNS files: round trips, the topology found from the
coordinates in any orientation, Debian's CGNS tools as an independent check, and the errors
of files the compressible solver cannot run."""

import shutil
import struct
import subprocess

import numpy as np
import pytest

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.io.cgns import read_cgns, write_cgns
from tachyflow.io.grid_files import read_grid_file
from tachyflow.io.plot3d import write_plot3d
from tachyflow.numerics.airfoil_grids import c_grid, flat_plate_h_grid
from tachyflow.numerics.airfoils import naca4, rae2822
from tachyflow.numerics.grid_topology import grid_from_nodes
from tachyflow.solvers.compressible.grids import build_grid


@pytest.fixture(scope="module")
def grids():
    """The RAE 2822 at the case's coarse level, a NACA 0012 C-grid and a flat plate."""
    return {
        "rae2822": c_grid(rae2822(), cells=(140, 32), wake_cells=20, far_field=20.0),
        "naca0012": c_grid(naca4("0012"), cells=(48, 12), wake_cells=8, finest_level=0),
        "plate": flat_plate_h_grid(cells=(32, 12), upstream_cells=8),
    }


def assert_same_grid(read, grid):
    np.testing.assert_array_equal(read.x, grid.x)
    np.testing.assert_array_equal(read.y, grid.y)
    assert (read.wake_cells, read.wall) == (grid.wake_cells, grid.wall)


@pytest.mark.parametrize("name", ["rae2822", "naca0012", "plate"])
def test_plot3d_and_cgns_round_trips_are_exact(tmp_path, grids, name):
    grid = grids[name]
    paths = [
        write_plot3d(tmp_path / "a.xyz", [(grid.x, grid.y)]),
        write_plot3d(tmp_path / "a.p2d", [(grid.x, grid.y)], formatted=True),
        write_plot3d(tmp_path / "a.x", [(grid.x, grid.y)], multi_block=False, byteorder=">"),
        write_cgns(tmp_path / "a.cgns", grid),
    ]
    for path in paths:
        assert_same_grid(read_grid_file(path), grid)


def test_topology_is_found_whichever_side_is_stored_first(grids):
    # The file may put the wall on any side of the index rectangle and run either way
    # round: the reader turns it back into j = 0 on the wall, right-handed.
    grid = grids["naca0012"]
    x, y = grid.x, grid.y
    stored = {
        "as written": (x, y),
        "j reversed": (x[:, ::-1], y[:, ::-1]),
        "i reversed (left-handed)": (x[::-1], y[::-1]),
        "transposed": (x.T, y.T),
        "transposed, wall last": (x[::-1].T, y[::-1].T),
        "transposed, both reversed": (x[::-1, ::-1].T, y[::-1, ::-1].T),
    }
    for label, (xs, ys) in stored.items():
        assert_same_grid(grid_from_nodes(xs, ys, label), grid)
    plate = grids["plate"]
    assert_same_grid(grid_from_nodes(plate.x[::-1], plate.y[::-1]), plate)


def test_a_wake_cut_off_by_round_off_is_found_and_closed(grids):
    grid = grids["naca0012"]
    x, y = grid.x.copy(), grid.y.copy()
    ni, w = grid.cells[0], grid.wake_cells
    off_cut = np.hypot(x[ni - w :, 1] - x[ni - w :, 0], y[ni - w :, 1] - y[ni - w :, 0])
    x[ni - w :, 0] += 1e-5 * off_cut  # a round-off gap, far below the local spacing
    read = grid_from_nodes(x, y)
    assert (read.wake_cells, read.wall) == (w, grid.wall)
    cut = np.arange(w + 1)
    np.testing.assert_array_equal(read.x[cut, 0], read.x[ni - cut, 0])  # bit for bit
    np.testing.assert_allclose(read.x, grid.x, rtol=0, atol=1e-5 * off_cut.max())


def test_open_grid_wall_from_x_zero_or_from_cgns_wall_conditions(tmp_path, grids):
    plate = grids["plate"]
    assert grid_from_nodes(plate.x, plate.y).wall == plate.wall == (8, 32)
    # A plate ending before the outflow: Plot3D cannot say so, CGNS's BCWall does.
    short = type(plate)(plate.x, plate.y, 0, (8, 24), "short plate")
    write_cgns(tmp_path / "short.cgns", short)
    zone = read_cgns(tmp_path / "short.cgns")
    assert zone.wall_nodes[8:25, 0].all() and zone.wall_nodes.sum() == 17
    assert read_grid_file(tmp_path / "short.cgns").wall == (8, 24)
    with pytest.raises(ValueError, match="no j = 0 faces downstream of x = 0: no wall"):
        grid_from_nodes(plate.x - 10.0, plate.y)
    marked = np.zeros(plate.x.shape, dtype=bool)
    marked[[10, 11, 20, 21], 0] = True
    with pytest.raises(ValueError, match=r"not one run of faces \(2 faces between 10 and 20\)"):
        grid_from_nodes(plate.x, plate.y, wall_nodes=marked)


CGNSCHECK = shutil.which("cgnscheck")
PLOT3D_TO_CGNS = shutil.which("plot3d_to_cgns")
NO_CGNS_TOOLS = "Debian's cgns-convert (cgnscheck, plot3d_to_cgns) is not installed"


@pytest.mark.skipif(CGNSCHECK is None, reason=NO_CGNS_TOOLS)
@pytest.mark.parametrize("name", ["rae2822", "plate"])
def test_cgnscheck_finds_nothing_wrong_in_our_files(tmp_path, grids, name):
    path = write_cgns(tmp_path / f"{name}.cgns", grids[name])
    result = subprocess.run([CGNSCHECK, "-w3", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    for word in ("ERROR", "WARNING"):
        assert word not in result.stdout.upper(), result.stdout
    for checked in ('checking BC "wall"', 'checking BC "farfield"'):
        assert checked in result.stdout
    if grids[name].wake_cells:
        assert 'checking 1to1 connectivity "wake_cut_lower"' in result.stdout


def fortran_record(out, array):
    out.write(struct.pack("<i", array.nbytes))
    out.write(array.tobytes())
    out.write(struct.pack("<i", array.nbytes))


@pytest.mark.skipif(PLOT3D_TO_CGNS is None, reason=NO_CGNS_TOOLS)
def test_a_grid_converted_by_plot3d_to_cgns_reads_back(tmp_path, grids):
    # plot3d_to_cgns reads 3D Plot3D only: the 2D grid extruded one cell in z.
    grid = grids["naca0012"]
    x, y = (np.repeat(a[:, :, None], 2, axis=2) for a in (grid.x, grid.y))
    z = np.zeros_like(x)
    z[:, :, 1] = 1.0
    with open(tmp_path / "g.xyz", "wb") as out:
        fortran_record(out, np.array([1], "<i4"))
        fortran_record(out, np.array(x.shape, "<i4"))
        fortran_record(out, np.concatenate([a.ravel(order="F") for a in (x, y, z)]))
    result = subprocess.run(
        [PLOT3D_TO_CGNS, "-u", "-d", str(tmp_path / "g.xyz"), str(tmp_path / "g.cgns")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert_same_grid(read_grid_file(tmp_path / "g.cgns"), grid)


def two_zone_cgns(path, grid):
    import CGNS.MAP
    import CGNS.PAT.cgnsutils as cgnsutils

    write_cgns(path, grid)
    tree, _, _ = CGNS.MAP.load(str(path))
    zone = cgnsutils.getNodeByPath(tree, "/Base/grid")
    second = cgnsutils.nodeCopy(zone, "second")
    cgnsutils.getNodeByPath(tree, "/Base")[2].append(second)
    path.unlink()
    CGNS.MAP.save(str(path), tree)
    return path


def three_d_cgns(path, grid, layers: int):
    import CGNS.MAP
    import CGNS.PAT.cgnslib as cgnslib

    tree = cgnslib.newCGNSTree(3.4)
    base = cgnslib.newCGNSBase(tree, "Base", 3, 3)
    shape = (*grid.x.shape, layers)
    size = np.array([[n, n - 1, 0] for n in shape], dtype=np.int32, order="F")
    zone = cgnslib.newZone(base, "block", size, "Structured")
    coordinates = cgnslib.newGridCoordinates(zone, "GridCoordinates")
    stretch = 1.0 + np.arange(layers)  # a real 3D block: x, y change with k
    for name, values in (("CoordinateX", grid.x), ("CoordinateY", grid.y)):
        cgnslib.newDataArray(coordinates, name, np.asfortranarray(values[:, :, None] * stretch))
    cgnslib.newDataArray(coordinates, "CoordinateZ", np.asfortranarray(np.zeros(shape) + stretch))
    CGNS.MAP.save(str(path), tree)
    return path


def test_files_the_solver_cannot_run_raise_clear_errors(tmp_path, grids):
    grid = grids["naca0012"]
    theta, radius = np.linspace(0, 2 * np.pi, 33), np.linspace(1, 2, 9)
    o_grid = np.outer(np.cos(theta), radius), np.outer(np.sin(theta), radius)
    tangled = grid.x.copy()
    tangled[20, 5] += 1.0
    write_plot3d(tmp_path / "blocks.xyz", [(grid.x, grid.y)] * 2)
    write_plot3d(tmp_path / "o.xyz", [o_grid])
    write_plot3d(tmp_path / "tangled.xyz", [(tangled, grid.y)])
    (tmp_path / "junk.xyz").write_bytes(bytes(range(256)))
    (tmp_path / "junk.cgns").write_text("not HDF5")
    (tmp_path / "no-dimensions.xyz").write_text("1\n")  # a block count, nothing else
    (tmp_path / "no-blocks.xyz").write_text("0\n")
    cases = {
        tmp_path / "no-dimensions.xyz": r"no-dimensions\.xyz: not a 2D Plot3D grid \(bad "
                                        r"header: 1 block\(s\) need 2 positive dimensions",
        tmp_path / "no-blocks.xyz": r"no-blocks\.xyz: not a 2D Plot3D grid \(bad header",
        tmp_path / "missing.cgns": "no such grid file",
        tmp_path / "grid.msh": r"suffix must be one of \['.xyz'",
        tmp_path / "blocks.xyz": "2 Plot3D blocks; one block expected",
        two_zone_cgns(tmp_path / "zones.cgns", grid): r"2 zones \['grid', 'second'\]",
        three_d_cgns(tmp_path / "3d.cgns", grid, 3): "a 3D zone of 49 x 13 x 3 nodes",
        tmp_path / "o.xyz": "an O-grid: the i = 0 and i = 32 grid lines coincide",
        tmp_path / "tangled.xyz": "negative or zero one: a folded or tangled grid",
        tmp_path / "junk.xyz": "not a 2D Plot3D grid",
        tmp_path / "junk.cgns": "not a readable CGNS file",
    }
    for path, message in cases.items():
        with pytest.raises(ValueError, match=message):
            read_grid_file(path)
    # An extruded grid (two equal k planes) is a 2D grid, not a 3D one: wall j = 0 on k = 0.
    two_layers = three_d_cgns(tmp_path / "2d-in-3d.cgns", grid, 1)
    assert_same_grid(read_grid_file(two_layers), grid)


def test_case_names_a_grid_file_relative_to_itself(tmp_path, grids):
    grid = grids["naca0012"]
    (tmp_path / "grids").mkdir()
    write_cgns(tmp_path / "grids" / "naca.cgns", grid)
    case = tmp_path / "case.toml"
    case.write_text(
        '[case]\nsolver = "compressible"\n[compressible]\ngrid = "file"\n'
        'grid_file = "grids/naca.cgns"\ncells = [48, 12]\n'
    )
    section = config.load(str(case)).compressible
    assert section.grid_file == str(tmp_path / "grids" / "naca.cgns")
    assert_same_grid(build_grid(section), grid)
    wrong_cells = config.load(str(case)).replace("compressible", cells=(64, 16))
    with pytest.raises(ValueError, match=r"holds a 48 x 12-cell grid.*set cells = \[48, 12\]"):
        build_grid(wrong_cells.compressible)
    bad = {
        'grid = "file"\n': "'compressible.grid_file' must be the path of a Plot3D or CGNS",
        'grid = "file"\ngrid_file = "g.msh"\n': "must be a path ending in one of",
        'grid = "naca0012"\ngrid_file = "g.cgns"\n': "must be empty unless grid = 'file'",
    }
    for lines, message in bad.items():
        case.write_text(f'[case]\nsolver = "compressible"\n[compressible]\n{lines}')
        with pytest.raises(ConfigError, match=message):
            config.load(str(case))
