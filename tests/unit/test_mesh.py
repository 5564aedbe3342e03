import meshio
import numpy as np
import pytest

from tachyflow.errors import ConfigError
from tachyflow.io.mesh import build_mesh, read_mesh
from tachyflow.io.mesh_generators import box_hex_mesh, box_mesh, box_shape, perturbed_tet_mesh

LENGTHS = (1.0, 2.0, 0.5)
BOX_AREA = 2 * (1.0 * 2.0 + 2.0 * 0.5 + 0.5 * 1.0)


def meshes():
    return [
        box_hex_mesh((3, 4, 2), LENGTHS),
        perturbed_tet_mesh((3, 4, 2), LENGTHS, perturbation=0.2, seed=7),
    ]


def mixed_mesh():
    """One of each cell type, conforming: a wedge and a pyramid on two sides of a unit
    hexahedron, two tetrahedra on the pyramid (volumes 1, 1/2, 1/6, 1/24, 1/24)."""
    points = np.array(
        [
            [0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0],  # hexahedron bottom
            [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1],  # hexahedron top
            [2, 0, 0], [2, 1, 0],  # wedge
            [-0.5, 0.5, 0.5],  # pyramid apex
            [-0.5, 0.0, 0.0],  # tetrahedra
        ],
        dtype=float,
    )
    blocks = [
        ("hexahedron", [[0, 1, 2, 3, 4, 5, 6, 7]]),
        ("wedge", [[1, 8, 5, 2, 9, 6]]),
        ("pyramid", [[0, 3, 7, 4, 10]]),
        ("tetra", [[0, 3, 10, 11], [0, 11, 10, 4]]),
    ]
    return points, blocks


def closure(mesh):
    """Per cell, the sum of outward A_f n_f over its faces."""
    total = np.zeros((mesh.n_cells, 3))
    vector = mesh.face_normals * mesh.face_areas[:, None]
    np.add.at(total, mesh.face_cells[:, 0], vector)
    np.add.at(total, mesh.face_cells[:, 1], -vector)
    np.add.at(total, mesh.boundary_cells, mesh.boundary_normals * mesh.boundary_areas[:, None])
    return total


@pytest.mark.parametrize("mesh", meshes(), ids=["hex", "tet"])
def test_box_geometry_is_consistent(mesh):
    assert mesh.volumes.min() > 0
    assert mesh.volumes.sum() == pytest.approx(np.prod(LENGTHS), rel=1e-12)
    assert mesh.boundary_areas.sum() == pytest.approx(BOX_AREA, rel=1e-12)
    # Every cell's surface is closed, so each face is counted once with consistent normals.
    assert np.abs(closure(mesh)).max() < 1e-14
    # A closed box: boundary area vectors cancel, and faces keep to the box.
    boundary = mesh.boundary_normals * mesh.boundary_areas[:, None]
    assert np.abs(boundary.sum(axis=0)).max() < 1e-14
    assert np.allclose(np.abs(mesh.boundary_normals).max(axis=1), 1.0)
    # Volume-weighted centroids have the box's first moment.
    moment = (mesh.volumes[:, None] * mesh.centroids).sum(axis=0)
    assert np.allclose(moment, np.prod(LENGTHS) * np.array(LENGTHS) / 2, rtol=0, atol=1e-13)
    # Internal normals are unit and point from the lower cell to the higher one.
    assert np.allclose(np.linalg.norm(mesh.face_normals, axis=1), 1.0)
    assert (mesh.face_cells[:, 0] < mesh.face_cells[:, 1]).all()
    step = mesh.centroids[mesh.face_cells[:, 1]] - mesh.centroids[mesh.face_cells[:, 0]]
    assert (np.einsum("fk,fk->f", step, mesh.face_normals) > 0).all()
    pairs = {tuple(pair) for pair in mesh.face_cells.tolist()}
    assert len(pairs) == mesh.n_faces


def test_hex_box_counts_and_adjacency():
    mesh = box_hex_mesh((3, 4, 5))
    assert mesh.n_cells == 60
    assert mesh.n_faces == 2 * 4 * 5 + 3 * 3 * 5 + 3 * 4 * 4
    assert len(mesh.boundary_cells) == 2 * (3 * 4 + 4 * 5 + 5 * 3)
    assert np.allclose(mesh.volumes, 1 / 60)
    xadj, adjncy = mesh.adjacency()
    assert xadj.shape == (61,) and xadj[-1] == len(adjncy) == 2 * mesh.n_faces
    degree = np.diff(xadj)
    # Cell (i, j, k) is i + 3 * (j + 4 * k): (1, 1, 1) is interior, (0, 0, 0) a corner.
    assert degree[1 + 3 * (1 + 4 * 1)] == 6 and degree[0] == 3
    faces_missing = (degree + np.bincount(mesh.boundary_cells, minlength=60)) != 6
    assert not faces_missing.any()
    rows = np.repeat(np.arange(60), degree)
    edges = set(zip(rows.tolist(), adjncy.tolist(), strict=True))
    assert edges == {(b, a) for a, b in edges}
    assert all((a != b) for a, b in edges)


def test_tet_box_is_conforming_and_deterministic():
    mesh = perturbed_tet_mesh((2, 3, 2), seed=3)
    assert mesh.n_cells == 6 * 12
    xadj, _ = mesh.adjacency()
    assert np.diff(xadj).max() == 4
    # Each tet face is internal or on the box; a triangle of the box surface per half face.
    assert len(mesh.boundary_cells) == 2 * 2 * (2 * 3 + 3 * 2 + 2 * 2)
    again = perturbed_tet_mesh((2, 3, 2), seed=3)
    assert np.array_equal(mesh.points, again.points)
    assert not np.array_equal(mesh.points, perturbed_tet_mesh((2, 3, 2), seed=4).points)
    # Points stay in the box, on their faces; interior ones move by at most 0.2 h per axis.
    regular = perturbed_tet_mesh((2, 3, 2), perturbation=0.0).points
    shift = np.abs(mesh.points - regular) / (1 / np.array([2, 3, 2]))
    assert shift.max() <= 0.2 and shift.max() > 0.1
    on_face = np.isclose(regular, 0) | np.isclose(regular, 1)
    assert (shift[on_face] == 0).all()


def test_adjacency_is_accepted_by_pymetis():
    pymetis = pytest.importorskip("pymetis")
    xadj, adjncy = box_hex_mesh((4, 4, 4)).adjacency()
    _, parts = pymetis.part_graph(4, adjacency=pymetis.CSRAdjacency(xadj, adjncy))
    assert len(parts) == 64 and np.bincount(parts).min() >= 14


def test_mixed_cells_and_mirrored_cells():
    points, blocks = mixed_mesh()
    mesh = build_mesh(points, blocks)
    assert np.allclose(mesh.volumes, [1, 1 / 2, 1 / 6, 1 / 24, 1 / 24])
    assert np.allclose(mesh.centroids[0], 0.5)
    assert np.allclose(mesh.centroids[1], [4 / 3, 0.5, 1 / 3])
    assert sorted(map(tuple, mesh.face_cells.tolist())) == [(0, 1), (0, 2), (2, 3), (2, 4), (3, 4)]
    assert np.abs(closure(mesh)).max() < 1e-15
    # The same cells listed in mirrored vertex order give the same geometry.
    mirrored = [
        (kind, np.asarray(cells)[:, order])
        for (kind, cells), order in zip(
            blocks,
            [[4, 5, 6, 7, 0, 1, 2, 3], [3, 4, 5, 0, 1, 2], [0, 3, 2, 1, 4], [0, 2, 1, 3]],
            strict=True,
        )
    ]
    flipped = build_mesh(points, mirrored)
    assert np.allclose(flipped.volumes, mesh.volumes)
    assert np.allclose(flipped.centroids, mesh.centroids)
    for faces in (internal_faces, boundary_faces):
        assert np.allclose(faces(flipped), faces(mesh))


def internal_faces(mesh):
    """Cells, area, centroid and normal of each internal face, in a canonical order."""
    rows = np.column_stack(
        [mesh.face_cells, mesh.face_areas, mesh.face_centroids, mesh.face_normals]
    )
    return rows[np.lexsort(rows[:, ::-1].T)]


def boundary_faces(mesh):
    """Cell, area, centroid and normal of each boundary face, in a canonical order."""
    rows = np.column_stack(
        [
            mesh.boundary_cells,
            mesh.boundary_areas,
            mesh.boundary_centroids,
            mesh.boundary_normals,
        ]
    )
    return rows[np.lexsort(rows[:, ::-1].T)]


def test_warped_quads_keep_the_surface_closed():
    mesh = box_hex_mesh((3, 3, 3))
    points = mesh.points.copy()
    interior = np.all((points > 0.01) & (points < 0.99), axis=1)
    points[interior] += np.random.default_rng(1).uniform(-0.05, 0.05, (interior.sum(), 3))
    warped = build_mesh(points, mesh.cell_blocks)
    assert np.abs(closure(warped)).max() < 1e-15
    assert warped.volumes.sum() == pytest.approx(1.0, rel=1e-12)


def test_bad_meshes_are_rejected():
    points, _ = mixed_mesh()
    tet = [0, 1, 3, 4]
    below = np.vstack([points, [[0.3, 0.2, -1]]])
    with pytest.raises(ValueError, match=r"a face is shared by 3 cells \[0, 1, 2\]"):
        build_mesh(below, [("tetra", [tet, [0, 1, 3, 7], [0, 1, 3, 12]])])
    with pytest.raises(ValueError, match="same side of their shared face"):
        build_mesh(points, [("tetra", [tet, [0, 1, 3, 6]])])
    with pytest.raises(ValueError, match=r"tetra cells \[0\] have no volume"):
        build_mesh(points, [("tetra", [[0, 1, 2, 3]])])
    with pytest.raises(ValueError, match="cell type 'triangle' is not supported"):
        build_mesh(points, [("triangle", [[0, 1, 2]])])
    with pytest.raises(ValueError, match=r"expected ids in 0\.\.11"):
        build_mesh(points, [("tetra", [[0, 1, 3, 12]])])
    with pytest.raises(ValueError, match=r"shape \(n_points, 3\)"):
        build_mesh(points[:, :2], [("tetra", [tet])])
    with pytest.raises(TypeError, match="integer point ids"):
        build_mesh(points, [("tetra", [[0.0, 1.0, 3.0, 4.0]])])
    with pytest.raises(ValueError, match="no cells"):
        build_mesh(points, [("tetra", np.zeros((0, 4), dtype=int))])


def test_read_mesh_round_trips_a_mixed_vtu(tmp_path):
    points, blocks = mixed_mesh()
    mesh = build_mesh(points, blocks)
    path = tmp_path / "mixed.vtu"
    # A surface block too, as a file would carry boundary patches: it is dropped on reading.
    out = mesh.to_meshio(cell_data={"p": np.arange(5.0), "u": np.arange(15.0).reshape(5, 3)})
    out.cells.insert(0, meshio.CellBlock("triangle", np.array([[0, 1, 5]])))
    for name in out.cell_data:
        out.cell_data[name].insert(0, np.zeros((1, *out.cell_data[name][0].shape[1:])))
    meshio.write(path, out)
    back = read_mesh(path)
    assert [kind for kind, _ in back.cell_blocks] == ["hexahedron", "wedge", "pyramid", "tetra"]
    assert np.array_equal(back.face_cells, mesh.face_cells)
    assert np.allclose(back.volumes, mesh.volumes)
    assert np.allclose(back.boundary_areas, mesh.boundary_areas)


def test_to_meshio_splits_cell_data_per_block():
    points, blocks = mixed_mesh()
    out = build_mesh(points, blocks).to_meshio({"p": np.arange(5.0)})
    assert [block.type for block in out.cells] == ["hexahedron", "wedge", "pyramid", "tetra"]
    assert [list(values) for values in out.cell_data["p"]] == [[0.0], [1.0], [2.0], [3.0, 4.0]]
    with pytest.raises(ValueError, match=r"cell_data\['p'\] must have one row per cell \(5\)"):
        build_mesh(points, blocks).to_meshio({"p": np.arange(4.0)})


def test_read_mesh_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"nothing.vtu: mesh file does not exist"):
        read_mesh(tmp_path / "nothing.vtu")
    garbage = tmp_path / "garbage.vtu"
    garbage.write_bytes(b"\x00not a mesh\xff")
    with pytest.raises(
        ConfigError, match=r"garbage.vtu: cannot read as a mesh \(.*Couldn't read file"
    ):
        read_mesh(garbage)
    surface = tmp_path / "surface.vtu"
    meshio.write(surface, meshio.Mesh(np.eye(3), [("triangle", np.array([[0, 1, 2]]))]))
    with pytest.raises(ConfigError, match=r"surface.vtu: no 3D cells: .* found \['triangle'\]"):
        read_mesh(surface)
    flat = tmp_path / "flat.vtu"
    meshio.write(
        flat,
        meshio.Mesh(
            [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]], [("tetra", np.array([[0, 1, 2, 3]]))]
        ),
    )
    with pytest.raises(ConfigError, match=r"flat.vtu: tetra cells \[0\] have no volume"):
        read_mesh(flat)


def test_box_shape_gives_exact_cube_like_counts():
    for cells in (53280, 144000, 288305, 1472000):
        shape = box_shape(cells)
        assert np.prod(shape) == cells and list(shape) == sorted(shape)
    assert box_shape(53280) == (36, 37, 40)
    assert box_shape(1472000) == (100, 115, 128)
    assert box_shape(144000, "tet") == (25, 30, 32)
    assert box_shape(53280, "tet") == (15, 16, 37)
    assert box_shape(7) == (1, 1, 7)
    with pytest.raises(ValueError, match="nearest counts that work are 53280 or 53286"):
        box_shape(53281, "tet")
    with pytest.raises(ValueError, match=r"nearest counts that work are 6$"):
        box_shape(5, "tet")
    with pytest.raises(ValueError, match="kind must be 'hex' or 'tet', got 'prism'"):
        box_shape(6, "prism")
    with pytest.raises(ValueError, match="positive integer, got 0"):
        box_shape(0)


def test_box_mesh_has_cubic_cells():
    mesh = box_mesh(24)
    assert mesh.n_cells == 24
    assert np.allclose(mesh.points.max(axis=0), [0.5, 0.75, 1.0])
    assert np.allclose(mesh.volumes, 0.25**3)
    tets = box_mesh(36, "tet", seed=1)
    assert tets.n_cells == 36
    assert tets.volumes.sum() == pytest.approx(1 / 3 * 2 / 3)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: box_hex_mesh((2, 0, 2)), r"shape must be 3 positive integers .* \(2, 0, 2\)"),
        (lambda: box_hex_mesh((2, 2)), "shape must be 3 positive integers"),
        (lambda: box_hex_mesh((2, 2, 2), (1, -1, 1)), "lengths must be 3 positive finite"),
        (lambda: perturbed_tet_mesh((2, 2, 2), perturbation=0.3), r"\[0, 0.25\).*got 0.3"),
    ],
)
def test_box_arguments_are_checked(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def five_tetrahedra_cubes(mirror_odd: bool):
    """Two unit cubes along x, each split into 5 tetrahedra; unless ``mirror_odd``, both
    the same way, so that the diagonals on their shared face cross."""
    points = np.array([(i, j, k) for k in (0, 1) for j in (0, 1) for i in (0, 1, 2)], float)

    def vertex(cube, i, j, k):
        i = 1 - i if mirror_odd and cube % 2 else i
        return (cube + i) + 3 * j + 6 * k

    split = [(0, 1, 3, 5), (0, 3, 2, 6), (0, 5, 4, 6), (3, 5, 6, 7), (0, 3, 5, 6)]
    corner = [(v & 1, (v >> 1) & 1, (v >> 2) & 1) for v in range(8)]
    tets = [[vertex(cube, *corner[v]) for v in tet] for cube in (0, 1) for tet in split]
    return points, [("tetra", np.array(tets))]


def test_a_non_conforming_mesh_is_refused_saying_how_many_faces_and_where():
    conforming = build_mesh(*five_tetrahedra_cubes(mirror_odd=True))
    assert conforming.n_cells == 10 and conforming.face_cells.shape[0] == 2 * 4 + 2
    with pytest.raises(ValueError, match=r"4 faces inside the domain match no neighbouring "
                       r"face \(first at \[1\.0, "):
        build_mesh(*five_tetrahedra_cubes(mirror_odd=False))
