"""A run with a defective immersed surface ends before computing with exit 2 and one line
naming the body, the file and the defect (issue 45 item 3); an inside-out one runs, warned."""

import numpy as np
import pytest

from tests.cli.test_cli import tachyflow

trimesh = pytest.importorskip("trimesh")

CASE = """
[case]
name = "surface-body"
[grid]
cells = [16, 16, 16]
lengths = [2.0, 2.0, 2.0]
[flow]
viscosity = 0.01
initial = "taylor-green"
[time]
steps = 1
dt = 0.001
[[immersed.body]]
name = "block"
shape = "surface"
file = "{file}"
offset = [1.0, 1.0, 1.0]
"""


def run_with(tmp_path, mesh):
    surface = tmp_path / "block.stl"
    mesh.export(surface)
    case = tmp_path / "case.toml"
    case.write_text(CASE.format(file=surface))
    return tachyflow("run", str(case), "-o", str(tmp_path / "run")), str(surface)


def test_an_open_surface_ends_the_run_in_one_line(tmp_path):
    mesh = trimesh.creation.box((0.6, 0.6, 0.6))
    mesh.update_faces(np.arange(len(mesh.faces) - 1))
    result, surface = run_with(tmp_path, mesh)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (f"tachyflow: error: ConfigError: immersed.body 'block': "
                                     f"surface {surface!r} is not closed (watertight): no "
                                     "inside"), result.stderr


def test_an_inside_out_surface_runs_with_a_warning(tmp_path):
    mesh = trimesh.creation.box((0.6, 0.6, 0.6))
    mesh.invert()
    result, surface = run_with(tmp_path, mesh)
    assert result.returncode == 0, result.stderr
    assert f"surface {surface!r} is inside out" in result.stderr
