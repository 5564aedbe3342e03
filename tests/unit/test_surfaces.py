import meshio
import numpy as np
import pytest

from tachyflow.acoustics.surfaces import (
    Surface,
    box,
    cylinder,
    from_mesh,
    orient_outward,
    sphere,
    write_surface,
)
from tachyflow.errors import ConfigError


def _outward_from(surface: Surface, centre) -> np.ndarray:
    """Height of each panel centre above ``centre`` along its normal."""
    return np.einsum("ij,ij->i", surface.centres - np.asarray(centre), surface.normals)


def _assert_unit_normals(surface: Surface) -> None:
    assert np.allclose(np.linalg.norm(surface.normals, axis=1), 1.0, rtol=0, atol=1e-14)


@pytest.mark.parametrize("panels", [384, 600, 2000])
def test_sphere_area_and_volume_converge_and_normals_point_outward(panels):
    centre, radius = (1.0, -2.0, 0.5), 0.7
    surface = sphere(centre, radius, panels)
    assert surface.panels == 6 * round(np.sqrt(panels / 6)) ** 2
    area, volume = 4 * np.pi * radius**2, 4 / 3 * np.pi * radius**3
    assert abs(surface.total_area / area - 1) < 0.01
    assert abs(surface.enclosed_volume() / volume - 1) < 0.02
    _assert_unit_normals(surface)
    # On a sphere the outward normal is nearly radial.
    radial = (surface.centres - centre) / np.linalg.norm(surface.centres - centre, axis=1)[:, None]
    assert np.einsum("ij,ij->i", radial, surface.normals).min() > 0.99
    assert surface.areas.max() / surface.areas.min() < 1.5


def test_sphere_error_shrinks_like_the_panel_area():
    errors = [abs(sphere((0, 0, 0), 1.0, 6 * m * m).total_area / (4 * np.pi) - 1) for m in (8, 16)]
    assert 3.5 < errors[0] / errors[1] < 4.5


def test_box_is_exact_and_panels_are_at_most_spacing_wide():
    surface = box((-1.0, 0.0, 2.0), (1.0, 3.0, 2.5), 0.4)
    lengths = np.array([2.0, 3.0, 0.5])
    assert surface.total_area == pytest.approx(
        2 * (lengths[0] * lengths[1] + lengths[1] * lengths[2] + lengths[0] * lengths[2]),
        rel=1e-13,
    )
    assert surface.enclosed_volume() == pytest.approx(np.prod(lengths), rel=1e-13)
    _assert_unit_normals(surface)
    assert _outward_from(surface, (0.0, 1.5, 2.25)).min() > 0
    # Normals are the six axis directions.
    assert np.allclose(np.abs(surface.normals).max(axis=1), 1.0)
    counts = np.ceil(lengths / 0.4)
    expected = 2 * (counts[0] * counts[1] + counts[1] * counts[2] + counts[0] * counts[2])
    assert surface.panels == expected


def test_box_with_a_whole_number_of_spacings_gets_exactly_that_many_panels():
    surface = box((0, 0, 0), (0.3, 0.3, 0.3), 0.1)
    assert surface.panels == 6 * 9


def test_cylinder_area_volume_and_outward_normals_along_any_axis():
    centre, axis, radius, length = np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 0.5]), 0.5, 2
    surface = cylinder(centre, axis, radius, length, around=64)
    area = 2 * np.pi * radius * length + 2 * np.pi * radius**2
    assert abs(surface.total_area / area - 1) < 0.01
    assert abs(surface.enclosed_volume() / (np.pi * radius**2 * length) - 1) < 0.01
    _assert_unit_normals(surface)
    assert _outward_from(surface, centre).min() > 0
    # End caps face along the axis, the side across it.
    unit = axis / np.linalg.norm(axis)
    along = np.abs(surface.normals @ unit)
    assert np.all((along > 1 - 1e-12) | (along < 1e-12))
    caps = np.isclose(along, 1.0)
    assert np.isclose(surface.areas[caps].sum(), 2 * np.pi * radius**2, rtol=0.01)


def test_cylinder_panel_counts():
    surface = cylinder((0, 0, 0), (0, 0, 1), 1.0, 3.0, around=12, along=5, rings=3)
    assert surface.panels == 12 * (5 + 2 * 3)
    kinds = dict((kind, len(c)) for kind, c in surface.cell_blocks)
    assert kinds == {"quad": 12 * (5 + 2 * 2), "triangle": 2 * 12}


def test_written_vtu_reads_back_with_its_data(tmp_path):
    surface = cylinder((0, 0, 0), (0, 1, 0), 1.0, 2.0, around=10)
    values = np.arange(surface.panels, dtype=np.float64)
    path = write_surface(surface, tmp_path / "surface.vtu", {"pressure": values})
    assert path.exists() and not list(tmp_path.glob(".*"))  # no temporary file left
    mesh = meshio.read(path)
    assert np.allclose(mesh.points, surface.vertices)
    written = {block.type: block.data for block in mesh.cells}
    for kind, connectivity in surface.cell_blocks:
        assert np.array_equal(written[kind], connectivity)
    assert np.allclose(np.concatenate(mesh.cell_data["pressure"]), values)
    assert np.allclose(np.concatenate(mesh.cell_data["normal"]), surface.normals)
    assert np.allclose(np.concatenate(mesh.cell_data["area"]), surface.areas)
    again = from_mesh(path)
    assert np.allclose(again.centres, surface.centres)
    assert np.allclose(again.normals, surface.normals)
    assert np.allclose(again.areas, surface.areas)


def test_from_mesh_turns_a_scrambled_closed_surface_outward(tmp_path):
    reference = sphere((0.5, 0.5, 0.5), 0.3, 216)
    quads = reference.cell_blocks[0][1].copy()
    rng = np.random.default_rng(4)
    flipped = rng.random(len(quads)) < 0.5
    quads[flipped] = quads[flipped][:, ::-1]
    # Every other quad split into two triangles (mixed blocks), and a line block (such as
    # a Gmsh boundary group), which is ignored.
    triangles = np.concatenate([quads[1::2, :3], quads[1::2][:, [0, 2, 3]]])
    blocks = [("quad", quads[::2]), ("triangle", triangles), ("line", [[0, 1]])]
    path = tmp_path / "scrambled.vtk"
    meshio.write(path, meshio.Mesh(reference.vertices, blocks))
    surface = from_mesh(path)
    assert surface.enclosed_volume() > 0
    assert _outward_from(surface, (0.5, 0.5, 0.5)).min() > 0
    assert surface.total_area == pytest.approx(reference.total_area, rel=1e-3)


def test_orient_outward_flips_an_inside_out_surface_and_keeps_open_ones():
    reference = box((0, 0, 0), (1, 1, 1), 0.5)
    inside_out = Surface(reference.vertices, (("quad", reference.cell_blocks[0][1][:, ::-1]),))
    assert inside_out.enclosed_volume() < 0
    assert np.allclose(orient_outward(inside_out).normals, reference.normals)
    # One face alone is open: its orientation is kept, consistent across panels.
    face = Surface(reference.vertices, (("quad", reference.cell_blocks[0][1][:4]),))
    assert np.allclose(orient_outward(face).normals, face.normals)


def test_non_manifold_edges_are_refused():
    vertices = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1]], float)
    triangles = np.array([[0, 1, 2], [0, 1, 3], [0, 1, 4]])
    with pytest.raises(ValueError, match="shared by 3 panels"):
        orient_outward(Surface(vertices, (("triangle", triangles),)))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: sphere((0, 0, 0), 0.0, 100), "radius must be a positive"),
        (lambda: sphere((0, 0, 0), -1.0, 100), "radius must be a positive"),
        (lambda: sphere((0, 0), 1.0, 100), "centre must be 3 finite"),
        (lambda: sphere((0, 0, np.nan), 1.0, 100), "centre must be 3 finite"),
        (lambda: sphere((0, 0, 0), 1.0, 5), "panels must be at least 6"),
        (lambda: box((0, 0, 0), (1, 0, 1), 0.1), "must exceed lower"),
        (lambda: box((0, 0, 0), (1, 1, 1), 0.0), "spacing must be a positive"),
        (lambda: cylinder((0, 0, 0), (0, 0, 0), 1, 1), "axis must be a non-zero"),
        (lambda: cylinder((0, 0, 0), (0, 0, 1), 1, -2), "length must be a positive"),
        (lambda: cylinder((0, 0, 0), (0, 0, 1), 1, 1, around=2), "around must be at least 3"),
        (lambda: Surface(np.zeros((3, 2)), ()), r"vertices must have shape \(nv, 3\)"),
        (lambda: Surface(np.eye(3), (("hexahedron", [[0, 1, 2]]),)), "panel type must be"),
        (lambda: Surface(np.eye(3), (("triangle", [[0, 1, 3]]),)), "outside 0..2"),
        (lambda: Surface(np.eye(3), (("quad", [[0, 1, 2]]),)), r"shape \(n, 4\)"),
        (lambda: Surface(np.eye(3), ()), "at least one panel"),
        (lambda: Surface(np.eye(3), (("triangle", [[0, 1, 1]]),)), "panel 0 .* degenerate"),
    ],
)
def test_bad_input_is_refused(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_wrong_types_are_refused():
    with pytest.raises(TypeError, match="panels must be an integer"):
        sphere((0, 0, 0), 1.0, 100.5)
    with pytest.raises(TypeError, match="radius must be a number"):
        sphere((0, 0, 0), "1", 100)


def test_files_that_are_not_surfaces_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        from_mesh(tmp_path / "missing.vtu")
    garbage = tmp_path / "garbage.vtu"
    garbage.write_text("not a mesh")
    with pytest.raises(ConfigError, match="cannot read"):
        from_mesh(garbage)
    volume = tmp_path / "tetra.vtu"
    meshio.write(volume, meshio.Mesh(np.eye(4, 3), [("tetra", [[0, 1, 2, 3]])]))
    with pytest.raises(ConfigError, match=r"no triangles or quads.*tetra"):
        from_mesh(volume)
    surface = box((0, 0, 0), (1, 1, 1), 1.0)
    with pytest.raises(ValueError, match=r"must end in \.vtu or \.vtk"):
        write_surface(surface, tmp_path / "surface.stl")
    with pytest.raises(ValueError, match="one row per panel"):
        write_surface(surface, tmp_path / "surface.vtu", {"p": np.zeros(5)})
