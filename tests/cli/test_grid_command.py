"""``tachyflow grid``: quality table, Plot3D, SU2 and figure from the command line."""

import json

import numpy as np

from tachyflow.io.plot3d import read_plot3d
from tests.cli.test_cli import tachyflow


def test_grid_writes_plot3d_su2_and_a_figure(tmp_path):
    result = tachyflow(
        "grid", "naca0012", "--cells", "64x16", "--wake-cells", "16", "--levels", "0,1",
        "--plot3d", str(tmp_path / "g.x"), "--su2", str(tmp_path / "g.su2"),
        "--figure", str(tmp_path / "g.png"),
    )
    assert result.returncode == 0, result.stderr
    assert "| NACA 0012 C-grid | level 0 | level 1 |" in result.stdout
    assert "| cells | 64 x 16 | 32 x 8 |" in result.stdout
    ((x, y),) = read_plot3d(tmp_path / "g.x")
    assert x.shape == y.shape == (65, 17)
    np.testing.assert_array_equal(x[:17, 0], x[::-1][:17, 0])  # the wake cut
    assert "MARKER_TAG= airfoil" in (tmp_path / "g.su2").read_text()
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"


def test_grid_json_and_bad_input():
    result = tachyflow("grid", "flat-plate", "--cells", "32x16", "--json")
    assert result.returncode == 0, result.stderr
    quality = json.loads(result.stdout)["0"]
    assert quality["cells"] == [32, 16] and quality["min_area"] > 0
    result = tachyflow("grid", "naca00x2")
    assert result.returncode == 2
    assert "NACA 4-digit code must be four digits" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_grid_writes_cgns_and_reads_a_grid_file_back(tmp_path):
    from tachyflow.io.grid_files import read_grid_file

    result = tachyflow(
        "grid", "naca0012", "--cells", "64x16", "--wake-cells", "16",
        "--cgns", str(tmp_path / "g.cgns"), "--plot3d", str(tmp_path / "g.xyz"),
    )
    assert result.returncode == 0, result.stderr
    written = read_grid_file(tmp_path / "g.cgns")
    assert (written.cells, written.wake_cells, written.wall) == ((64, 16), 16, (16, 48))
    # A file in place of a section: read, its quality printed, converted.
    result = tachyflow("grid", str(tmp_path / "g.cgns"), "--su2", str(tmp_path / "g.su2"))
    assert result.returncode == 0, result.stderr
    assert "| g.cgns | level 0 |" in result.stdout and "| cells | 64 x 16 |" in result.stdout
    assert "MARKER_TAG= airfoil" in (tmp_path / "g.su2").read_text()
    result = tachyflow("grid", str(tmp_path / "missing.xyz"))
    assert result.returncode == 2 and "no such grid file" in result.stderr


def test_grid_writes_the_grid_a_case_runs_on(tmp_path):
    from tachyflow import config
    from tachyflow.io.grid_files import read_grid_file
    from tachyflow.solvers.compressible.grids import build_grid

    result = tachyflow("grid", "--case", "naca0012", "--cgns", str(tmp_path / "case.cgns"))
    assert result.returncode == 0, result.stderr
    written, built = (
        read_grid_file(tmp_path / "case.cgns"),
        build_grid(config.load("naca0012").compressible),
    )
    np.testing.assert_array_equal(written.x, built.x)
    np.testing.assert_array_equal(written.y, built.y)
    assert (written.wake_cells, written.wall) == (built.wake_cells, built.wall)
    result = tachyflow("grid", "--case", "channel")
    assert result.returncode == 2 and "runs the 'incompressible' solver" in result.stderr
