"""Triangulated bodies (``shape = "surface"``) are checked when the case's bodies are built
(issue 45 item 3): each defect is refused naming the file and the defect, and an inside-out
surface is turned right side out with a warning, giving the same inside as the right one."""

import warnings

import numpy as np
import pytest

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.solvers.pencil import bodies

trimesh = pytest.importorskip("trimesh")

CASE = """
[case]
solver = "incompressible"
[grid]
cells = [16, 16, 16]
lengths = [2.0, 2.0, 2.0]
[[immersed.body]]
name = "block"
shape = "surface"
file = "{file}"
scale = {scale}
offset = {offset}
"""


def build(path, scale=1.0, offset=(1.0, 1.0, 1.0)):
    text = CASE.format(file=path, scale=scale, offset=list(offset))
    return bodies.from_case(config.parse(text, "surface.toml"))


def written(tmp_path, mesh, name="body.stl"):
    path = tmp_path / name
    mesh.export(path)
    return path


def cube():
    return trimesh.creation.box((0.6, 0.6, 0.6))


def cell_centres():
    centres = (np.arange(16) + 0.5) * 2.0 / 16
    return np.stack(np.meshgrid(centres, centres, centres, indexing="ij"), -1).reshape(-1, 3)


@pytest.mark.parametrize("suffix", ["stl", "obj"])
def test_a_reversed_cube_is_turned_with_a_warning_and_has_the_right_inside(tmp_path, suffix):
    right = build(written(tmp_path, cube(), f"right.{suffix}"))[0]
    reversed_cube = cube()
    reversed_cube.invert()
    path = written(tmp_path, reversed_cube, f"reversed.{suffix}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        turned = build(path)[0]
    assert any(f"{str(path)!r} is inside out" in str(w.message) for w in caught), caught
    points = cell_centres()
    inside = right.level(points) < 0
    assert inside.sum() == 4**3  # a 0.6 cube about (1, 1, 1) holds 4 centres 0.125 apart
    assert np.array_equal(inside, turned.level(points) < 0)
    assert np.allclose(right.level(points), turned.level(points))


def open_box():
    mesh = cube()
    mesh.update_faces(np.arange(len(mesh.faces) - 1))
    return mesh


def flipped_face():
    mesh = cube()
    faces = mesh.faces.copy()
    faces[0] = faces[0][::-1]
    return trimesh.Trimesh(mesh.vertices, faces, process=False)


def flat_tetrahedron():  # closed, consistently wound, its four corners in a plane
    corners = [[0, 0, 0], [0.6, 0, 0], [0.6, 0.6, 0], [0, 0.6, 0]]
    return trimesh.Trimesh(corners, [[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]])


def overlapping_cubes():
    return trimesh.util.concatenate([cube(), cube().apply_translation((0.3, 0.3, 0.3))])


def crossing_bars():  # no corner of either inside the other: only an edge test sees them
    return trimesh.util.concatenate([trimesh.creation.box((1.2, 0.2, 0.2)),
                                     trimesh.creation.box((0.2, 1.2, 0.3))])


def one_part_reversed():
    reversed_cube = cube().apply_translation((0.8, 0.0, 0.0))
    reversed_cube.invert()
    return trimesh.util.concatenate([trimesh.creation.box((0.7, 0.7, 0.7)), reversed_cube])


@pytest.mark.parametrize(("mesh", "scale", "offset", "defect"), [
    (open_box, 1.0, (1, 1, 1), "is not closed (watertight)"),
    (flipped_face, 1.0, (1, 1, 1), "triangles wound against their neighbours"),
    (flat_tetrahedron, 1.0, (1, 1, 1), "encloses no volume"),
    (overlapping_cubes, 1.0, (1, 1, 1), "intersects itself"),
    (one_part_reversed, 1.0, (0.7, 1, 1), "has a part inside out among right-side-out ones"),
    (crossing_bars, 1.0, (1, 1, 1), "intersects itself"),
    (cube, 1.0, (5, 1, 1), "lies outside the domain"),
    (cube, 1.0, (1, -0.5, 1), "lies outside the domain"),
    (cube, 0.1, (1, 1, 1), "less than a cell there (0.125)"),
    (cube, 10.0, (1, 1, 1), "encloses the whole domain"),
])
def test_each_defect_is_refused_naming_the_file_and_the_defect(tmp_path, mesh, scale, offset,
                                                                defect):
    path = written(tmp_path, mesh())
    with pytest.raises(ConfigError, match=r"immersed\.body 'block'") as error:
        build(path, scale, offset)
    assert str(path) in str(error.value) and defect in str(error.value), error.value


def test_a_sound_body_across_a_boundary_and_separate_parts_are_accepted(tmp_path):
    parts = trimesh.util.concatenate([cube(), cube().apply_translation((0.8, 0.0, 0.0))])
    assert build(written(tmp_path, parts), offset=(0.7, 1.0, 1.0))
    assert build(written(tmp_path, cube(), "edge.stl"), offset=(0.1, 1.0, 1.0))
    cavity = trimesh.creation.box((0.3, 0.3, 0.3))
    cavity.invert()  # a hollow cube: its inner wall faces the cavity
    hollow = build(written(tmp_path, trimesh.util.concatenate([cube(), cavity]), "hollow.stl"))
    assert hollow[0].level(np.array([[1.0, 1.0, 1.0], [1.25, 1.0, 1.0]])).tolist() == \
        pytest.approx([0.15, -0.05])
