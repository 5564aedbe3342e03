"""Sizes a user gives are checked against this node's memory before anything is allocated
(issue 45 item 10): an observers file's arc count and samples, ``grid --cells``; each
refused with exit 2 and one line giving the bytes needed and available."""

import numpy as np
import pytest

from tests.cli.test_cli import tachyflow


def refused_in_one_line(result, *parts):
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("tachyflow: error: "), result.stderr
    assert "would need about" in lines[0] and "GiB available" in lines[0], lines[0]
    for part in parts:
        assert part in lines[0], lines[0]


def test_a_grid_too_large_for_memory_is_refused_in_one_line():
    result = tachyflow("grid", "naca0012", "--cells", "100000x100000")
    refused_in_one_line(result, "--cells 100000x100000", "10,000,200,001 points", "9,536.9 GiB")


@pytest.fixture
def surface(tmp_path):
    """A tiny recorded surface: 4 panels, 8 steps."""
    steps, panels = 8, 4
    normals = np.tile([0.0, 0.0, 1.0], (steps, panels, 1))
    path = tmp_path / "surface.npz"
    np.savez(path, times=np.arange(steps) * 1e-3, positions=np.zeros((steps, panels, 3)),
             normals=normals, areas=np.full(panels, 1e-4),
             surface_velocity=np.zeros((steps, panels, 3)), pressure=np.zeros((steps, panels)))
    return str(path)


@pytest.mark.parametrize(("observers", "parts"), [
    ("[arc]\nradius = 5.0\ncount = 100000000000\n", ["100,000,000,000 observers"]),
    ('samples = 100000000000\n[[observer]]\nposition = [0.0, 0.0, 5.0]\n',
     ["1 observers x 100,000,000,000 samples from 4 panels on 1 rank(s)"]),
])
def test_an_observers_file_too_large_for_memory_is_refused_in_one_line(tmp_path, surface,
                                                                        observers, parts):
    path = tmp_path / "observers.toml"
    path.write_text(observers)
    result = tachyflow("acoustics", surface, "--observers", str(path), "-o", str(tmp_path / "o"))
    refused_in_one_line(result, str(path), *parts)
    assert not (tmp_path / "o").exists()


ACOUSTICS_CASE = """
[case]
name = "big-acoustics"
[grid]
cells = [8, 8, 8]
lengths = [6.283185307179586, 6.283185307179586, 6.283185307179586]
[flow]
viscosity = 0.01
initial = "taylor-green"
[time]
steps = 2
dt = 0.01
[acoustics]
surface = "sphere"
centre = [3.14, 3.14, 3.14]
radius = 1.0
panels = 1000000000000
arc_radius = 50.0
"""


def test_a_run_whose_acoustics_is_too_large_is_refused_before_its_surface_is_made(tmp_path):
    case = tmp_path / "case.toml"
    case.write_text(ACOUSTICS_CASE)
    result = tachyflow("run", str(case), "-o", str(tmp_path / "run"))
    refused_in_one_line(result, "[acoustics]: 13 observers x 1,024 samples from "
                        "1,000,000,000,000 panels on 1 rank(s)")
    assert not (tmp_path / "run" / "acoustics").exists()
