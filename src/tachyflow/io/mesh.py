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
their cell. Generated boxes of exact cell counts are in :mod:`tachyflow.io.mesh_generators`;
the compiled geometry pass in :mod:`tachyflow.numerics.mesh_geometry`.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from dataclasses import dataclass, fields
from pathlib import Path

import meshio
import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.numerics.mesh_geometry import cell_geometry

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

    def piece(self, cells: np.ndarray, cell_data: dict[str, np.ndarray] | None = None):
        """The cells ``cells`` (global ids, any order; in increasing order in the result)
        as a :class:`meshio.Mesh` of their own points, with ``cell_data`` given in the
        order of ``cells``: one rank's part of the mesh, for output each rank writes."""
        cells = np.asarray(cells, dtype=np.int64)
        order = np.argsort(cells, kind="stable")
        chosen = cells[order]
        offsets = np.cumsum([0] + [len(connectivity) for _, connectivity in self.cell_blocks])
        blocks, data = [], {name: [] for name in cell_data or {}}
        for (kind, connectivity), first, stop in zip(
            self.cell_blocks, offsets[:-1], offsets[1:], strict=True
        ):
            low, high = np.searchsorted(chosen, [first, stop])
            if high == low:
                continue
            blocks.append((kind, np.asarray(connectivity)[chosen[low:high] - first]))
            for name, values in (cell_data or {}).items():
                data[name].append(np.asarray(values)[order[low:high]])
        used, compact = np.unique(np.concatenate([c.ravel() for _, c in blocks]),
                                  return_inverse=True)
        sizes = np.cumsum([0] + [c.size for _, c in blocks])
        renumbered = [
            (kind, compact[a:b].reshape(c.shape))
            for (kind, c), a, b in zip(blocks, sizes[:-1], sizes[1:], strict=True)
        ]
        return meshio.Mesh(self.points[used], renumbered, cell_data=data)


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


def _refuse_unmatched_inner_faces(areas, centres, cells) -> None:
    """Refuse boundary faces that lie inside the domain: a face with no neighbour that
    has, on the same plane and within its own size, another neighbourless face looking the
    other way (cells on both sides whose faces do not match: a non-conforming mesh, e.g.
    tetrahedra whose diagonals cross on a shared face, or duplicated nodes)."""
    from scipy.spatial import cKDTree

    if len(areas) < 2:
        return
    sizes = np.linalg.norm(areas, axis=1)
    normals = areas / sizes[:, None]
    reach = np.sqrt(sizes)
    # The faces overlapping one from the other side are among its nearest few.
    distances, nearest = cKDTree(centres).query(centres, k=min(9, len(areas)))
    nearest = np.where(np.isfinite(distances), nearest, 0)
    facing = np.einsum("fkc,fc->fk", normals[nearest], normals) < -0.999
    offsets = np.abs(np.einsum("fkc,fc->fk", centres[nearest] - centres[:, None], normals))
    close = distances <= reach[:, None]
    inner = (facing & close & (offsets <= 1e-6 * reach[:, None])).any(axis=1)
    if inner.any():
        where = centres[np.argmax(inner)]
        raise ValueError(
            f"{int(inner.sum())} faces inside the domain match no neighbouring face (first "
            f"at {np.round(where, 6).tolist()}, of cell {int(cells[np.argmax(inner)])}): "
            "expected a conforming mesh, where cells sharing a face share all its vertices "
            "(non-conforming cells, crossing diagonals or duplicated nodes?)"
        )


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
        face has no area, a face is shared by more than two cells (non-manifold), faces
        inside the domain match no neighbour (non-conforming) or two cells sharing a face
        lie on the same side of it (a tangled mesh).
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
        areas, face_centres, volume, centroid, extent, high, low = cell_geometry(
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
    _refuse_unmatched_inner_faces(areas[boundary], face_centres[boundary], cells[boundary])
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
