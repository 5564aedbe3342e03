"""Unstructured 3D meshes with the geometry a cell-centred finite-volume solver needs.

A mesh is a set of points and blocks of linear cells in meshio's types and local vertex
orderings (VTK's): ``tetra``, ``hexahedron``, ``wedge`` (prism) and ``pyramid``. Cells are
numbered in block order. :func:`build_mesh` derives everything else in one compiled (numba)
pass over the cells and one sort of their faces:

- faces are matched across cells by their sorted vertex ids; a face seen twice is internal,
  once a boundary face, more often a non-manifold error;
- face area vectors are exact for planar and warped faces alike (a quad is fanned into four
  triangles around its vertex average, whose vector areas sum to the quad's), face centroids
  are area weighted;
- each cell is split into pyramids from its vertex average to its faces: their volumes
  (the divergence theorem) sum to the cell volume and their centroids, weighted by volume,
  give the cell centroid (exact for planar faces);
- all faces of a cell are oriented outward together, from the sign of its signed volume,
  so a cell listed with mirrored vertex order is accepted and the closed-surface identity
  ``sum_f A_f n_f = 0`` holds per cell whatever the cell's shape.

Internal faces are ordered by their owner cell ``face_cells[:, 0]``, always the lower
cell index, and their normals point from owner to neighbour. Boundary faces are ordered by
their cell. Box generators give test and benchmark meshes of exact cell counts.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass, fields
from pathlib import Path

import meshio
import numba
import numpy as np

from tachyflow.errors import ConfigError

# Local faces of each cell type as cycles of local vertex ids (VTK ordering), outward by
# the right-hand rule for a positively ordered cell. Only the cycle matters here: a quad's
# vector area needs its vertices in order around it; the orientation is fixed per cell.
CELL_FACES: dict[str, tuple[tuple[int, ...], ...]] = {
    "tetra": ((0, 1, 3), (1, 2, 3), (2, 0, 3), (0, 2, 1)),
    "hexahedron": (
        (0, 4, 7, 3),
        (1, 2, 6, 5),
        (0, 1, 5, 4),
        (3, 7, 6, 2),
        (0, 3, 2, 1),
        (4, 5, 6, 7),
    ),
    "wedge": ((0, 1, 2), (3, 5, 4), (0, 3, 4, 1), (1, 4, 5, 2), (2, 5, 3, 0)),
    "pyramid": ((0, 3, 2, 1), (0, 1, 4), (1, 2, 4), (2, 3, 4), (3, 0, 4)),
}
CELL_VERTICES = {"tetra": 4, "hexahedron": 8, "wedge": 6, "pyramid": 5}

# Relative to a cell's extent cubed: below this a cell's volume is taken as zero.
_DEGENERATE_VOLUME = 1e-12

# Kuhn (Freudenthal) split of a cube into 6 tetrahedra along its main diagonal, corners
# numbered by bits (x = 1, y = 2, z = 4). Every cube uses the same split, so the diagonals
# drawn on shared cube faces agree and the tets conform across cells. Each tet walks from
# corner 0 to corner 7 along the axes in one order; vertex order is chosen per tet so that
# all six have positive VTK orientation.
_KUHN_TETS = np.array(
    [
        [0, 1, 3, 7],
        [0, 3, 2, 7],
        [0, 2, 6, 7],
        [0, 6, 4, 7],
        [0, 4, 5, 7],
        [0, 5, 1, 7],
    ]
)


@dataclass(frozen=True, eq=False)
class UnstructuredMesh:
    """An unstructured mesh of 3D cells and its finite-volume geometry.

    Build one with :func:`build_mesh` (or :func:`read_mesh`, :func:`box_mesh`); all arrays
    are read-only. Cells are numbered in block order.

    Attributes
    ----------
    points : ndarray, shape (n_points, 3), float64
        Vertex coordinates.
    cell_blocks : tuple of (str, ndarray)
        meshio cell type and connectivity ``(n_block_cells, n_vertices)`` of each block.
    centroids : ndarray, shape (n_cells, 3)
        Volume-weighted cell centroids.
    volumes : ndarray, shape (n_cells,)
        Cell volumes, all positive.
    face_cells : ndarray, shape (n_faces, 2), int64
        The two cells of each internal face, lower index first.
    face_areas : ndarray, shape (n_faces,)
        Internal face areas.
    face_normals : ndarray, shape (n_faces, 3)
        Unit normals, from ``face_cells[:, 0]`` towards ``face_cells[:, 1]``.
    face_centroids : ndarray, shape (n_faces, 3)
        Area-weighted internal face centroids.
    boundary_cells : ndarray, shape (n_boundary,), int64
        The cell of each boundary face.
    boundary_areas : ndarray, shape (n_boundary,)
        Boundary face areas.
    boundary_normals : ndarray, shape (n_boundary, 3)
        Unit outward normals of the boundary faces.
    boundary_centroids : ndarray, shape (n_boundary, 3)
        Area-weighted boundary face centroids.
    """

    points: np.ndarray
    cell_blocks: tuple[tuple[str, np.ndarray], ...]
    centroids: np.ndarray
    volumes: np.ndarray
    face_cells: np.ndarray
    face_areas: np.ndarray
    face_normals: np.ndarray
    face_centroids: np.ndarray
    boundary_cells: np.ndarray
    boundary_areas: np.ndarray
    boundary_normals: np.ndarray
    boundary_centroids: np.ndarray

    def __post_init__(self):
        # Frozen covers the attributes; locking the arrays too keeps the geometry
        # consistent with the points and connectivity it was derived from.
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
        for _, connectivity in self.cell_blocks:
            connectivity.flags.writeable = False

    @property
    def n_cells(self) -> int:
        """Number of cells."""
        return len(self.volumes)

    @property
    def n_faces(self) -> int:
        """Number of internal faces."""
        return len(self.face_cells)

    def adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """Cell graph in compressed sparse row form, as METIS (pymetis) takes it.

        Two cells are neighbours when they share a face.

        Returns
        -------
        xadj : ndarray, shape (n_cells + 1,), int64
            Cell ``i``'s neighbours are ``adjncy[xadj[i]:xadj[i + 1]]``.
        adjncy : ndarray, shape (2 * n_faces,), int64
            Neighbour lists, each in increasing order.
        """
        owner, neighbour = self.face_cells[:, 0], self.face_cells[:, 1]
        rows = np.concatenate([owner, neighbour])
        columns = np.concatenate([neighbour, owner])
        adjncy = columns[np.lexsort((columns, rows))]
        xadj = np.zeros(self.n_cells + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.n_cells), out=xadj[1:])
        return xadj, adjncy

    def to_meshio(self, cell_data: dict[str, np.ndarray] | None = None) -> meshio.Mesh:
        """The mesh as a :class:`meshio.Mesh`, with optional per-cell data.

        Parameters
        ----------
        cell_data : dict of str to array_like, optional
            Arrays of ``n_cells`` rows (any trailing shape) in cell order; each is split
            into meshio's one-array-per-block layout.

        Returns
        -------
        meshio.Mesh
            Points, cell blocks and cell data, ready for ``write``.

        Raises
        ------
        ValueError
            If an array does not have one row per cell.
        """
        offsets = np.cumsum([0] + [len(connectivity) for _, connectivity in self.cell_blocks])
        split = {}
        for name, values in (cell_data or {}).items():
            values = np.asarray(values)
            if values.ndim == 0 or len(values) != self.n_cells:
                raise ValueError(
                    f"cell_data[{name!r}] must have one row per cell ({self.n_cells}), "
                    f"got shape {values.shape}"
                )
            split[name] = np.split(values, offsets[1:-1])
        return meshio.Mesh(
            self.points,
            [(kind, np.asarray(connectivity)) for kind, connectivity in self.cell_blocks],
            cell_data=split,
        )


@numba.njit(cache=True)
def _half_cross(a, b, c, out):
    """Vector area of triangle ``a, b, c``: half the cross product of two of its edges."""
    ux, uy, uz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    vx, vy, vz = c[0] - a[0], c[1] - a[1], c[2] - a[2]
    out[0] = 0.5 * (uy * vz - uz * vy)
    out[1] = 0.5 * (uz * vx - ux * vz)
    out[2] = 0.5 * (ux * vy - uy * vx)


@numba.njit(cache=True, error_model="numpy")
def _cell_geometry(points, connectivity, faces, face_sizes):
    """Face vector areas and centroids, volumes, centroids and face keys of one block.

    ``faces`` holds the local vertex cycles of the cell type, padded to 4 columns, and
    ``face_sizes`` their lengths. Returns per cell and local face the outward vector area
    and the centroid ``(n, n_faces, 3)``, per cell the volume, centroid and extent (largest
    side of its bounding box), and per face occurrence, cell-major, two int64 keys that
    pack the sorted point ids (+1, a triangle padded with 0) two by two.
    """
    n_cells, n_vertices = connectivity.shape
    n_faces = faces.shape[0]
    base = points.shape[0] + 1
    areas = np.empty((n_cells, n_faces, 3))
    centres = np.empty((n_cells, n_faces, 3))
    volumes = np.empty(n_cells)
    centroids = np.empty((n_cells, 3))
    extents = np.empty(n_cells)
    high = np.empty(n_cells * n_faces, dtype=np.int64)
    low = np.empty(n_cells * n_faces, dtype=np.int64)
    # Scalars and fixed scratch arrays only: temporaries per face would dominate the cost.
    corner = np.empty((4, 3))
    ids = np.empty(4, dtype=np.int64)
    triangle_areas = np.empty((4, 3))
    area = np.empty(3)
    centre = np.empty(3)
    for c in range(n_cells):
        # Work relative to the vertex average, for accuracy far from the origin.
        ax = ay = az = 0.0
        extent = 0.0
        for k in range(3):
            lower = upper = points[connectivity[c, 0], k]
            total = 0.0
            for v in range(n_vertices):
                x = points[connectivity[c, v], k]
                total += x
                lower = min(lower, x)
                upper = max(upper, x)
            extent = max(extent, upper - lower)
            if k == 0:
                ax = total / n_vertices
            elif k == 1:
                ay = total / n_vertices
            else:
                az = total / n_vertices
        extents[c] = extent
        signed_volume = 0.0
        mx = my = mz = 0.0
        for f in range(n_faces):
            size = face_sizes[f]
            for v in range(size):
                point = connectivity[c, faces[f, v]]
                ids[v] = point
                corner[v, 0] = points[point, 0] - ax
                corner[v, 1] = points[point, 1] - ay
                corner[v, 2] = points[point, 2] - az
            if size == 3:
                _half_cross(corner[0], corner[1], corner[2], area)
                for k in range(3):
                    centre[k] = (corner[0, k] + corner[1, k] + corner[2, k]) / 3.0
            else:
                # A quad, planar or warped, as four triangles around its vertex average:
                # their vector areas sum to the quad's whatever the diagonal, and their
                # centroids weighted by their area along the face normal give the face
                # centroid (exact when planar). A collapsed quad keeps its vertex average,
                # so that build_mesh can report the zero area itself.
                for k in range(3):
                    centre[k] = 0.25 * (corner[0, k] + corner[1, k] + corner[2, k] + corner[3, k])
                    area[k] = 0.0
                for t in range(4):
                    _half_cross(corner[t], corner[(t + 1) % 4], centre, triangle_areas[t])
                    for k in range(3):
                        area[k] += triangle_areas[t, k]
                norm = np.sqrt(area[0] ** 2 + area[1] ** 2 + area[2] ** 2)
                if norm > 0.0:
                    wx = wy = wz = total = 0.0
                    for t in range(4):
                        weight = (
                            triangle_areas[t, 0] * area[0]
                            + triangle_areas[t, 1] * area[1]
                            + triangle_areas[t, 2] * area[2]
                        ) / norm
                        u = (t + 1) % 4
                        wx += weight * (corner[t, 0] + corner[u, 0] + centre[0])
                        wy += weight * (corner[t, 1] + corner[u, 1] + centre[1])
                        wz += weight * (corner[t, 2] + corner[u, 2] + centre[2])
                        total += weight
                    if total > 0.0:
                        centre[0] = wx / (3.0 * total)
                        centre[1] = wy / (3.0 * total)
                        centre[2] = wz / (3.0 * total)
            # The pyramid from the anchor to the face: its signed volume (divergence
            # theorem) and its centroid, 3/4 of the way from apex to base centroid.
            pyramid = (centre[0] * area[0] + centre[1] * area[1] + centre[2] * area[2]) / 3.0
            signed_volume += pyramid
            mx += 0.75 * pyramid * centre[0]
            my += 0.75 * pyramid * centre[1]
            mz += 0.75 * pyramid * centre[2]
            for k in range(3):
                areas[c, f, k] = area[k]
            centres[c, f, 0] = centre[0] + ax
            centres[c, f, 1] = centre[1] + ay
            centres[c, f, 2] = centre[2] + az
            # Sorted point ids of the face (insertion sort of at most 4).
            for v in range(1, size):
                value = ids[v]
                w = v - 1
                while w >= 0 and ids[w] > value:
                    ids[w + 1] = ids[w]
                    w -= 1
                ids[w + 1] = value
            occurrence = c * n_faces + f
            if size == 3:
                high[occurrence] = ids[0] + 1
                low[occurrence] = (ids[1] + 1) * base + ids[2] + 1
            else:
                high[occurrence] = (ids[0] + 1) * base + ids[1] + 1
                low[occurrence] = (ids[2] + 1) * base + ids[3] + 1
        # All faces outward together: a cell listed in mirrored order has negative volume.
        if signed_volume < 0.0:
            for f in range(n_faces):
                for k in range(3):
                    areas[c, f, k] = -areas[c, f, k]
        volumes[c] = abs(signed_volume)
        centroids[c, 0] = ax + mx / signed_volume
        centroids[c, 1] = ay + my / signed_volume
        centroids[c, 2] = az + mz / signed_volume
    return areas, centres, volumes, centroids, extents, high, low


def _check_blocks(points, cell_blocks) -> tuple[np.ndarray, list[tuple[str, np.ndarray]]]:
    points = np.array(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 3:
        raise ValueError(f"points must have shape (n_points, 3), got {points.shape}")
    if not np.isfinite(points).all():
        raise ValueError("points must be finite, got NaN or infinite coordinates")
    blocks = []
    for entry in cell_blocks:
        try:
            kind, connectivity = entry
        except (TypeError, ValueError):
            raise TypeError(
                f"each cell block must be a (cell type, connectivity) pair, got {entry!r}"
            ) from None
        if kind not in CELL_FACES:
            raise ValueError(
                f"cell type {kind!r} is not supported: expected one of {sorted(CELL_FACES)}"
            )
        connectivity = np.array(connectivity)
        if connectivity.size and not np.issubdtype(connectivity.dtype, np.integer):
            raise TypeError(
                f"{kind} connectivity must hold integer point ids, got {connectivity.dtype}"
            )
        connectivity = connectivity.astype(np.int64).reshape(-1, CELL_VERTICES[kind])
        if connectivity.size and (connectivity.min() < 0 or connectivity.max() >= len(points)):
            raise ValueError(
                f"{kind} connectivity refers to points {connectivity.min()}.."
                f"{connectivity.max()}, expected ids in 0..{len(points) - 1}"
            )
        blocks.append((kind, connectivity))
    if sum(len(connectivity) for _, connectivity in blocks) == 0:
        raise ValueError("cell_blocks hold no cells: a mesh needs at least one 3D cell")
    return points, blocks


def build_mesh(points, cell_blocks) -> UnstructuredMesh:
    """A mesh with its geometry computed: volumes, centroids, internal and boundary faces.

    Parameters
    ----------
    points : array_like, shape (n_points, 3)
        Vertex coordinates.
    cell_blocks : sequence of (str, array_like)
        meshio cell type (``"tetra"``, ``"hexahedron"``, ``"wedge"``, ``"pyramid"``) and
        connectivity ``(n_block_cells, n_vertices)`` in meshio's local vertex order. Either
        orientation of a cell is accepted.

    Returns
    -------
    UnstructuredMesh
        Cells numbered in block order.

    Raises
    ------
    TypeError
        If a block is not a pair or its connectivity is not integer.
    ValueError
        If the shapes or point ids are wrong, there are no cells, a cell has no volume, a
        face has no area, a face is shared by more than two cells (non-manifold) or two
        cells sharing a face lie on the same side of it (a tangled mesh).
    """
    points, blocks = _check_blocks(points, cell_blocks)
    n_points = len(points)
    # Faces are matched by two int64 keys, each packing two point ids.
    if (n_points + 1) ** 2 >= 2**63:
        raise ValueError(f"meshes of at most 3e9 points are supported, got {n_points}")

    volumes, centroids = [], []
    occurrence_cells, occurrence_areas, occurrence_centroids = [], [], []
    keys_high, keys_low = [], []
    first_cell = 0
    for kind, connectivity in blocks:
        n_block = len(connectivity)
        if n_block == 0:
            continue
        faces = CELL_FACES[kind]
        table = np.array([local + (0,) * (4 - len(local)) for local in faces])
        areas, face_centres, volume, centroid, extent, high, low = _cell_geometry(
            points, connectivity, table, np.array([len(local) for local in faces])
        )
        # Written as "not above" so that a NaN volume counts as degenerate too.
        degenerate = ~(volume > _DEGENERATE_VOLUME * extent**3)
        if degenerate.any():
            bad = np.flatnonzero(degenerate)[:5] + first_cell
            raise ValueError(
                f"{kind} cells {bad.tolist()} have no volume: expected cells of positive "
                "volume (collapsed or coincident vertices?)"
            )
        volumes.append(volume)
        centroids.append(centroid)
        occurrence_cells.append(np.repeat(np.arange(first_cell, first_cell + n_block), len(faces)))
        occurrence_areas.append(areas.reshape(-1, 3))
        occurrence_centroids.append(face_centres.reshape(-1, 3))
        keys_high.append(high)
        keys_low.append(low)
        first_cell += n_block

    cells = np.concatenate(occurrence_cells)
    areas = np.concatenate(occurrence_areas)
    face_centres = np.concatenate(occurrence_centroids)
    high, low = np.concatenate(keys_high), np.concatenate(keys_low)
    del occurrence_areas, occurrence_centroids, keys_high, keys_low

    # Stable sort: the two occurrences of a face come out in cell order.
    order = np.lexsort((low, high))
    high, low = high[order], low[order]
    starts = np.flatnonzero(
        np.concatenate([[True], (high[1:] != high[:-1]) | (low[1:] != low[:-1])])
    )
    counts = np.diff(np.append(starts, len(order)))
    if counts.max() > 2:
        worst = np.argmax(counts)
        shared = np.unique(cells[order[starts[worst] : starts[worst] + counts[worst]]])
        raise ValueError(
            f"a face is shared by {counts[worst]} cells {shared.tolist()}: expected a "
            "manifold mesh, with each face on at most two cells"
        )
    del high, low
    pairs = starts[counts == 2]
    first, second = order[pairs], order[pairs + 1]
    by_owner = np.argsort(first)
    first, second = first[by_owner], second[by_owner]
    boundary = np.sort(order[starts[counts == 1]])
    del order, starts, counts, pairs, by_owner

    face_cells = np.column_stack([cells[first], cells[second]])
    face_areas = np.linalg.norm(areas[first], axis=1)
    boundary_areas = np.linalg.norm(areas[boundary], axis=1)
    for kind_of_face, owner_cells, face_area in (
        ("internal", face_cells[:, 0], face_areas),
        ("boundary", cells[boundary], boundary_areas),
    ):
        if not (face_area > 0.0).all():
            raise ValueError(
                f"a {kind_of_face} face of cell {owner_cells[np.argmin(face_area)]} has zero "
                "area: expected faces of positive area (collapsed vertices?)"
            )
    tangled = np.einsum("fk,fk->f", areas[first], areas[second]) >= 0.0
    if tangled.any():
        pair = face_cells[np.argmax(tangled)]
        raise ValueError(
            f"cells {pair[0]} and {pair[1]} lie on the same side of their shared face: "
            "expected cells on opposite sides (the mesh is tangled or overlapping)"
        )
    return UnstructuredMesh(
        points=points,
        cell_blocks=tuple(blocks),
        centroids=np.concatenate(centroids),
        volumes=np.concatenate(volumes),
        face_cells=face_cells,
        face_areas=face_areas,
        face_normals=areas[first] / face_areas[:, None],
        face_centroids=face_centres[first],
        boundary_cells=cells[boundary],
        boundary_areas=boundary_areas,
        boundary_normals=areas[boundary] / boundary_areas[:, None],
        boundary_centroids=face_centres[boundary],
    )


def read_meshio(path: Path, what: str, examples: str):
    """``meshio.read(path)``, with every way it fails as a ConfigError naming the file.

    meshio reports through print and rich on stdout/stderr, and ``meshio.read`` calls
    ``sys.exit`` when no reader succeeds: its output is captured to word our own error (or
    a warning, after a successful read) and SystemExit counts as a failure to read.
    """
    if not path.is_file():
        raise ConfigError(f"{path}: {what} file does not exist")
    messages = io.StringIO()
    try:
        with contextlib.redirect_stdout(messages), contextlib.redirect_stderr(messages):
            mesh = meshio.read(path)
    # meshio's readers fail on malformed input with whatever their parser raises (ReadError,
    # ValueError, KeyError, struct or XML errors...): all of them mean an unreadable file.
    except (Exception, SystemExit) as error:
        reason = " ".join(messages.getvalue().split()) or f"{type(error).__name__}: {error}"
        raise ConfigError(
            f"{path}: cannot read as a {what} ({reason}); expected a file meshio reads, {examples}"
        ) from error
    if messages.getvalue().strip():
        warnings.warn(f"{path}: {' '.join(messages.getvalue().split())}", stacklevel=3)
    return mesh


def read_mesh(path) -> UnstructuredMesh:
    """Read a mesh file with meshio (Gmsh ``.msh``, VTK ``.vtu``/``.vtk``, ...).

    Only the 3D cell blocks (``tetra``, ``hexahedron``, ``wedge``, ``pyramid``) are kept,
    in file order; surface and line elements, such as Gmsh's boundary groups, are dropped.

    Parameters
    ----------
    path : path
        Mesh file; meshio picks the format from the extension.

    Returns
    -------
    UnstructuredMesh
        The 3D cells, numbered in block order, and their geometry.

    Raises
    ------
    ConfigError
        If the file does not exist, meshio cannot read it, it holds no supported 3D cells,
        or its cells do not form a valid mesh (:func:`build_mesh`'s checks, with the file
        named).
    """
    path = Path(path)
    mesh = read_meshio(path, "mesh", "such as Gmsh .msh or VTK .vtu")
    blocks = [(block.type, block.data) for block in mesh.cells if block.type in CELL_FACES]
    if not any(len(connectivity) for _, connectivity in blocks):
        found = sorted({block.type for block in mesh.cells}) or "no cells"
        raise ConfigError(
            f"{path}: no 3D cells: expected {', '.join(sorted(CELL_FACES))} cells, found {found}"
        )
    try:
        return build_mesh(mesh.points, blocks)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"{path}: {error}") from error


def _check_box(shape, lengths) -> tuple[tuple[int, int, int], np.ndarray]:
    if (
        len(shape) != 3
        or not all(isinstance(n, int | np.integer) and not isinstance(n, bool) for n in shape)
        or min(shape) < 1
    ):
        raise ValueError(f"shape must be 3 positive integers (nx, ny, nz), got {shape!r}")
    lengths = np.asarray(lengths, dtype=np.float64)
    if lengths.shape != (3,) or not (np.isfinite(lengths).all() and (lengths > 0).all()):
        raise ValueError(f"lengths must be 3 positive finite numbers, got {lengths.tolist()!r}")
    return tuple(int(n) for n in shape), lengths


def _box_points(shape, lengths) -> np.ndarray:
    """Grid points of a box, x fastest: point (i, j, k) is i + (nx+1) * (j + (ny+1) * k)."""
    axes = [np.linspace(0.0, length, n + 1) for n, length in zip(shape, lengths, strict=True)]
    z, y, x = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
    return np.column_stack([x.ravel(), y.ravel(), z.ravel()])


def _box_corners(shape) -> np.ndarray:
    """Point ids of the 8 corners of each box cell, x fastest, corners numbered by bits."""
    nx, ny, nz = shape
    k, j, i = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    origin = (i + (nx + 1) * (j + (ny + 1) * k)).ravel().astype(np.int64)
    offsets = np.array(
        [(bit & 1) + (nx + 1) * (((bit >> 1) & 1) + (ny + 1) * (bit >> 2)) for bit in range(8)]
    )
    return origin[:, None] + offsets


def box_hex_mesh(shape: tuple[int, int, int], lengths=(1.0, 1.0, 1.0)) -> UnstructuredMesh:
    """A box ``[0, Lx] x [0, Ly] x [0, Lz]`` of uniform hexahedra.

    Parameters
    ----------
    shape : tuple of 3 int
        Cells along x, y, z; the mesh has ``nx * ny * nz`` cells, x running fastest.
    lengths : tuple of 3 float
        Box side lengths.

    Returns
    -------
    UnstructuredMesh
        One ``hexahedron`` block.

    Raises
    ------
    ValueError
        If ``shape`` is not 3 positive integers or ``lengths`` not 3 positive numbers.
    """
    shape, lengths = _check_box(shape, lengths)
    # VTK's hexahedron goes round the bottom face, then the top one.
    corners = _box_corners(shape)[:, [0, 1, 3, 2, 4, 5, 7, 6]]
    return build_mesh(_box_points(shape, lengths), [("hexahedron", corners)])


def perturbed_tet_mesh(
    shape: tuple[int, int, int],
    lengths=(1.0, 1.0, 1.0),
    perturbation: float = 0.2,
    seed: int = 0,
) -> UnstructuredMesh:
    """A box of tetrahedra with randomly moved vertices, a test of skewed geometry.

    Each cell of a ``shape`` box grid is split into 6 tetrahedra (Kuhn/Freudenthal split,
    conforming across cells). Each point then moves by a uniform random amount in
    ``[-perturbation * h, perturbation * h]`` along each axis (``h`` the grid spacing of that
    axis), except along the axes where it lies on the box boundary: points on a box face
    move within the face, points on an edge along the edge, corners stay, so the box is
    kept exactly.

    Parameters
    ----------
    shape : tuple of 3 int
        Box cells along x, y, z; the mesh has ``6 * nx * ny * nz`` tetrahedra.
    lengths : tuple of 3 float
        Box side lengths.
    perturbation : float
        Largest move as a fraction of the spacing, in ``[0, 0.25)``: below 1/4 no
        tetrahedron can be inverted.
    seed : int
        Seed of the random moves; the mesh is a function of all arguments.

    Returns
    -------
    UnstructuredMesh
        One ``tetra`` block, cell ``6 * b + t`` being tetrahedron ``t`` of box cell ``b``
        (x fastest).

    Raises
    ------
    ValueError
        If ``shape``, ``lengths`` or ``perturbation`` are out of range.
    """
    shape, lengths = _check_box(shape, lengths)
    if not 0.0 <= perturbation < 0.25:
        raise ValueError(
            f"perturbation must be in [0, 0.25) so that no tetrahedron inverts, "
            f"got {perturbation!r}"
        )
    points = _box_points(shape, lengths)
    spacing = lengths / np.array(shape)
    moves = np.random.default_rng(seed).uniform(-1.0, 1.0, size=points.shape)
    moves *= perturbation * spacing
    on_boundary = np.isclose(points, 0.0, rtol=0.0, atol=1e-12 * lengths.max()) | np.isclose(
        points, lengths, rtol=1e-12, atol=0.0
    )
    moves[on_boundary] = 0.0
    points += moves
    tets = _box_corners(shape)[:, _KUHN_TETS].reshape(-1, 4)
    return build_mesh(points, [("tetra", tets)])


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def box_shape(cells: int, kind: str = "hex") -> tuple[int, int, int]:
    """The most cube-like box grid for exactly ``cells`` cells of ``kind``.

    Among the grids ``nx * ny * nz`` of the right size (``cells`` for hexahedra,
    ``cells / 6`` for tetrahedra, 6 per box cell), the one of least surface
    ``nx ny + ny nz + nz nx`` is chosen: the closest to a cube, and the fewest faces.

    Parameters
    ----------
    cells : int
        Number of cells wanted, positive.
    kind : {"hex", "tet"}
        Cell type.

    Returns
    -------
    tuple of 3 int
        ``(nx, ny, nz)`` in increasing order.

    Raises
    ------
    ValueError
        If ``kind`` is unknown, ``cells`` not positive, or, for tetrahedra, not a multiple
        of 6 (the message names the nearest counts that are).
    """
    if kind not in ("hex", "tet"):
        raise ValueError(f"kind must be 'hex' or 'tet', got {kind!r}")
    if isinstance(cells, bool) or not isinstance(cells, int | np.integer) or cells < 1:
        raise ValueError(f"cells must be a positive integer, got {cells!r}")
    cells = int(cells)
    boxes = cells
    if kind == "tet":
        if cells % 6:
            below, above = cells - cells % 6, cells - cells % 6 + 6
            nearest = f"{below} or {above}" if below else f"{above}"
            raise ValueError(
                f"a tet box has 6 tetrahedra per box cell, so cells must be a multiple of 6, "
                f"got {cells}: nearest counts that work are {nearest}"
            )
        boxes = cells // 6
    best = None
    for nx in _divisors(boxes):
        if nx**3 > boxes:
            break
        rest = boxes // nx
        for ny in _divisors(rest):
            nz = rest // ny
            if ny < nx or nz < ny:
                continue
            candidate = (nx * ny + ny * nz + nz * nx, (nx, ny, nz))
            best = min(best, candidate) if best else candidate
    return best[1]


def box_mesh(cells: int, kind: str = "hex", **kw) -> UnstructuredMesh:
    """A box mesh of exactly ``cells`` cells with cube-shaped grid cells.

    The grid is :func:`box_shape`'s and, unless ``lengths`` is given, the box is
    ``(nx, ny, nz) / max(nx, ny, nz)`` so that its longest side is 1 and grid cells are
    cubes.

    Parameters
    ----------
    cells : int
        Exact number of cells; for ``"tet"`` a multiple of 6.
    kind : {"hex", "tet"}
        :func:`box_hex_mesh` or :func:`perturbed_tet_mesh`.
    **kw
        Further arguments of that generator (``lengths``; ``perturbation``, ``seed``).

    Returns
    -------
    UnstructuredMesh
        A mesh of ``cells`` cells.

    Raises
    ------
    ValueError
        As :func:`box_shape`, or for invalid generator arguments.
    """
    shape = box_shape(cells, kind)
    kw.setdefault("lengths", np.array(shape) / max(shape))
    if kind == "hex":
        return box_hex_mesh(shape, **kw)
    return perturbed_tet_mesh(shape, **kw)
