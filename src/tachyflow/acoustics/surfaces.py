"""Panelled surfaces for the FW-H integration: spheres, boxes, cylinders, mesh files.

A :class:`Surface` is a set of flat-ish panels (triangles and quadrilaterals) over shared
vertices; its panel centres, outward unit normals and areas are derived from them, so the
three always agree. The built-in shapes are made with every panel already facing out;
:func:`from_mesh` reads any meshio surface mesh and orients it: panels are made consistent
with their neighbours (a shared edge runs in opposite directions in the two panels), then
every closed piece is turned so that it encloses a positive volume.

Geometry of one panel: the vector area of a triangle is ``(b - a) × (c - a) / 2``; a
quadrilateral is fanned into four triangles around its vertex average, whose vector areas
sum to ``(c - a) × (d - b) / 2`` for planar and warped quads alike, and its centre is the
area-weighted centroid of the four. The enclosed volume of a closed surface follows from
the divergence theorem, ``V = Σ (c · n) A / 3``: exact for planar panels.

Everything here is MPI-free. :func:`write_surface` writes a VTK ``.vtu`` file (through
meshio, to a temporary name then renamed) with the normals, areas and any per-panel data,
for inspection in ParaView.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from pathlib import Path

import meshio
import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.io.files import replacing
from tachyflow.io.mesh import read_meshio

PANEL_TYPES = {"triangle": 3, "quad": 4}
VTK_SUFFIXES = {".vtu": "vtu", ".vtk": "vtk"}

# A panel whose area is below this fraction of its squared longest edge is degenerate: its
# normal is undefined.
_DEGENERATE_FRACTION = 1e-12


@dataclass(frozen=True)
class Surface:
    """A panelled surface: vertices, panels over them, and each panel's geometry.

    Parameters
    ----------
    vertices : array_like, shape (nv, 3)
        Vertex coordinates.
    cell_blocks : sequence of (str, array_like)
        meshio cell type (``"triangle"`` or ``"quad"``) and connectivity
        ``(n_block_panels, 3 or 4)`` of each block; panels are numbered in block order.
        A panel's normal follows its vertex order by the right-hand rule.

    Attributes
    ----------
    centres : numpy.ndarray, shape (n, 3)
        Panel centres (area centroids).
    normals : numpy.ndarray, shape (n, 3)
        Unit normals (outward for the shapes built here and for closed :func:`from_mesh`
        surfaces).
    areas : numpy.ndarray, shape (n,)
        Panel areas, positive.

    Raises
    ------
    ValueError
        Vertices not ``(nv, 3)`` finite numbers, an unknown cell type, connectivity of the
        wrong width or naming missing vertices, no panels, or a degenerate (zero-area)
        panel.
    """

    vertices: np.ndarray
    cell_blocks: tuple[tuple[str, np.ndarray], ...]
    centres: np.ndarray = field(init=False, repr=False)
    normals: np.ndarray = field(init=False, repr=False)
    areas: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        vertices = np.ascontiguousarray(self.vertices, dtype=np.float64)
        if vertices.ndim != 2 or vertices.shape[1] != 3:
            raise ValueError(f"vertices must have shape (nv, 3), got {vertices.shape}")
        if not np.all(np.isfinite(vertices)):
            raise ValueError("vertices must be finite numbers")
        blocks = tuple(_check_block(block, len(vertices)) for block in self.cell_blocks)
        if sum(len(connectivity) for _, connectivity in blocks) == 0:
            raise ValueError("a surface needs at least one panel, got none")
        centres, vector_areas = [], []
        for kind, connectivity in blocks:
            block_centres, block_vectors = _panel_geometry(vertices, kind, connectivity)
            centres.append(block_centres)
            vector_areas.append(block_vectors)
        vector_area = np.concatenate(vector_areas)
        areas = np.linalg.norm(vector_area, axis=1)
        _check_not_degenerate(areas, blocks, vertices)
        object.__setattr__(self, "vertices", vertices)
        object.__setattr__(self, "cell_blocks", blocks)
        object.__setattr__(self, "centres", np.concatenate(centres))
        object.__setattr__(self, "normals", vector_area / areas[:, None])
        object.__setattr__(self, "areas", areas)

    @property
    def panels(self) -> int:
        """Number of panels."""
        return self.areas.size

    @property
    def total_area(self) -> float:
        """Sum of the panel areas."""
        return float(self.areas.sum())

    def enclosed_volume(self) -> float:
        """Volume enclosed by a closed, outward-oriented surface: ``Σ (c · n) A / 3``.

        Measured from the vertex average, which changes nothing for a closed surface but
        keeps the terms small (less cancellation far from the origin).
        """
        origin = self.vertices.mean(axis=0)
        heights = np.einsum("ij,ij->i", self.centres - origin, self.normals)
        return float(np.dot(heights, self.areas) / 3.0)

    def to_meshio(self, panel_data: dict | None = None) -> meshio.Mesh:
        """The surface as a :class:`meshio.Mesh` with cell data ``normal``, ``area`` and
        ``panel_data`` (arrays with one row per panel, any trailing shape).

        Raises
        ------
        ValueError
            If an array of ``panel_data`` does not have one row per panel.
        """
        data = {"normal": self.normals, "area": self.areas}
        for name, values in (panel_data or {}).items():
            values = np.asarray(values)
            if values.ndim == 0 or values.shape[0] != self.panels:
                raise ValueError(
                    f"panel data {name!r} must have one row per panel ({self.panels}), got "
                    f"shape {values.shape}"
                )
            data[str(name)] = values
        offsets = np.cumsum([0] + [len(c) for _, c in self.cell_blocks])[1:-1]
        return meshio.Mesh(
            self.vertices,
            [(kind, connectivity) for kind, connectivity in self.cell_blocks],
            cell_data={name: np.split(values, offsets) for name, values in data.items()},
        )


def _check_block(block, vertex_count: int) -> tuple[str, np.ndarray]:
    try:
        kind, connectivity = block
    except (TypeError, ValueError):
        raise ValueError(
            f"a cell block must be a (cell type, connectivity) pair, got {block!r}"
        ) from None
    if kind not in PANEL_TYPES:
        raise ValueError(f"panel type must be one of {sorted(PANEL_TYPES)}, got {kind!r}")
    connectivity = np.asarray(connectivity)
    if connectivity.size == 0:
        connectivity = connectivity.reshape(0, PANEL_TYPES[kind])
    if connectivity.ndim != 2 or connectivity.shape[1] != PANEL_TYPES[kind]:
        raise ValueError(
            f"{kind} connectivity must have shape (n, {PANEL_TYPES[kind]}), got "
            f"{connectivity.shape}"
        )
    if connectivity.size and connectivity.dtype.kind not in "iu":
        raise ValueError(f"{kind} connectivity must hold integers, got {connectivity.dtype}")
    connectivity = connectivity.astype(np.int64)
    if connectivity.size and (connectivity.min() < 0 or connectivity.max() >= vertex_count):
        raise ValueError(
            f"{kind} connectivity names vertices outside 0..{vertex_count - 1} (got "
            f"{connectivity.min()}..{connectivity.max()})"
        )
    return kind, np.ascontiguousarray(connectivity)


def _panel_geometry(vertices, kind, connectivity):
    """Centres and vector areas of one block's panels."""
    corners = vertices[connectivity]  # (n, 3 or 4, 3)
    if kind == "triangle":
        a, b, c = corners[:, 0], corners[:, 1], corners[:, 2]
        return (a + b + c) / 3.0, 0.5 * np.cross(b - a, c - a)
    middle = corners.mean(axis=1)
    following = np.roll(corners, -1, axis=1)
    fan = 0.5 * np.cross(corners - middle[:, None], following - middle[:, None])  # (n, 4, 3)
    vector_area = fan.sum(axis=1)
    direction = vector_area / np.maximum(np.linalg.norm(vector_area, axis=1), 1e-300)[:, None]
    # Each fan triangle weighs its centroid by its area along the quad's normal.
    weights = np.einsum("nti,ni->nt", fan, direction)
    centroids = (corners + following + middle[:, None]) / 3.0
    total = weights.sum(axis=1)
    safe = np.where(total > 0.0, total, 1.0)
    centres = np.einsum("nt,nti->ni", weights, centroids) / safe[:, None]
    return np.where((total > 0.0)[:, None], centres, middle), vector_area


def _check_not_degenerate(areas, blocks, vertices) -> None:
    """Raise ValueError naming the first panel whose area is negligible for its size."""
    first = 0
    for kind, connectivity in blocks:
        corners = vertices[connectivity]
        edges = corners - np.roll(corners, -1, axis=1)
        longest = np.max(np.einsum("nvi,nvi->nv", edges, edges), axis=1, initial=0.0)
        block_areas = areas[first : first + len(connectivity)]
        bad = np.flatnonzero(~(block_areas > _DEGENERATE_FRACTION * longest))
        if bad.size:
            panel = first + int(bad[0])
            raise ValueError(
                f"panel {panel} ({kind} {connectivity[bad[0]].tolist()}) is degenerate: "
                f"area {block_areas[bad[0]]:.3g}; {bad.size} such panel(s)"
            )
        first += len(connectivity)


# -- built-in shapes --------------------------------------------------------------------------


def _point(name: str, value) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.shape != (3,) or not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be 3 finite numbers, got {value!r}")
    return array


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _count(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return int(value)


def _box_lattice(counts) -> tuple[np.ndarray, np.ndarray]:
    """Integer vertices and outward quads of the surface of the box ``[0, counts]``.

    Each face is a grid of unit quads; on the face of axis ``a`` the quad runs along the
    next two axes ``b = a + 1``, ``c = a + 2`` (cyclic), whose cross product is ``+e_a``, so
    the quads of the upper face keep that order and those of the lower face are reversed.
    Vertices on edges and corners are shared (numbered once).
    """
    counts = np.asarray(counts, dtype=np.int64)
    faces = []
    for axis in range(3):
        b, c = (axis + 1) % 3, (axis + 2) % 3
        along_b, along_c = np.meshgrid(np.arange(counts[b]), np.arange(counts[c]), indexing="ij")
        along_b, along_c = along_b.ravel(), along_c.ravel()
        steps = ((0, 0), (1, 0), (1, 1), (0, 1))
        for side in (0, counts[axis]):
            quad = np.empty((along_b.size, 4, 3), dtype=np.int64)
            quad[:, :, axis] = side
            for corner, (db, dc) in enumerate(steps):
                quad[:, corner, b] = along_b + db
                quad[:, corner, c] = along_c + dc
            faces.append(quad if side else quad[:, ::-1])
    lattice = np.concatenate(faces)  # (nq, 4, 3) integer coordinates
    keys = (lattice[..., 0] * (counts[1] + 1) + lattice[..., 1]) * (counts[2] + 1)
    keys = keys + lattice[..., 2]
    unique, inverse = np.unique(keys.ravel(), return_inverse=True)
    z = unique % (counts[2] + 1)
    y = (unique // (counts[2] + 1)) % (counts[1] + 1)
    x = unique // ((counts[2] + 1) * (counts[1] + 1))
    return np.stack([x, y, z], axis=1), inverse.reshape(-1, 4)


def sphere(centre, radius, panels: int) -> Surface:
    """A sphere of near-uniform quadrilaterals (equiangular cube-sphere).

    Each cube face is split into ``m × m`` quads with ``m = round(sqrt(panels / 6))``
    (at least 1), so the sphere has ``6 m²`` panels; the grid lines are equally spaced in
    angle, which keeps the largest panel within 1.4 times the smallest. Vertices lie on the
    sphere; the flat panels enclose slightly less than ``4/3 π r³``, with a total area
    within 1 % of ``4 π r²`` from ``m = 8`` (384 panels) on (0.02 % at 20,000 panels).

    Parameters
    ----------
    centre : array_like, shape (3,)
        Centre of the sphere.
    radius : float
        Radius, positive.
    panels : int
        Wanted number of panels (at least 6).

    Returns
    -------
    Surface
        Panels facing outward.

    Raises
    ------
    ValueError, TypeError
        A centre that is not 3 finite numbers, a radius that is not positive, fewer than
        6 panels.
    """
    centre = _point("centre", centre)
    radius = _positive("radius", radius)
    m = max(1, round(np.sqrt(_count("panels", panels, 6) / 6.0)))
    lattice, quads = _box_lattice((m, m, m))
    cube = np.tan((lattice / m - 0.5) * (np.pi / 2.0))  # equiangular: tan of the angle
    directions = cube / np.linalg.norm(cube, axis=1)[:, None]
    return Surface(centre + radius * directions, (("quad", quads),))


def box(lower, upper, spacing) -> Surface:
    """The surface of an axis-aligned box, in quadrilaterals at most ``spacing`` wide.

    Parameters
    ----------
    lower, upper : array_like, shape (3,)
        Opposite corners, ``upper > lower`` along every axis.
    spacing : float
        Largest panel width; each edge of the box is split into
        ``ceil(length / spacing)`` equal parts.

    Returns
    -------
    Surface
        Panels facing outward.

    Raises
    ------
    ValueError, TypeError
        Corners that are not 3 finite numbers or not ordered, a spacing that is not
        positive.
    """
    lower, upper = _point("lower", lower), _point("upper", upper)
    if not np.all(upper > lower):
        raise ValueError(
            f"upper {upper.tolist()} must exceed lower {lower.tolist()} along every axis"
        )
    spacing = _positive("spacing", spacing)
    lengths = upper - lower
    # The small allowance keeps a length that is a whole number of spacings from
    # gaining a sliver of a cell through rounding.
    counts = np.maximum(1, np.ceil(lengths / spacing * (1.0 - 1e-12))).astype(np.int64)
    lattice, quads = _box_lattice(counts)
    return Surface(lower + lattice * (lengths / counts), (("quad", quads),))


def _frame(axis: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Right-handed orthonormal frame ``(e1, e2, e3)`` with ``e3`` along ``axis``."""
    e3 = axis / np.linalg.norm(axis)
    helper = np.eye(3)[np.argmin(np.abs(e3))]  # the coordinate axis least aligned
    e1 = np.cross(e3, helper)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(e3, e1), e3


def cylinder(centre, axis, radius, length, around: int = 32, along=None, rings=None) -> Surface:
    """A closed cylinder: quadrilaterals on the side, rings of panels on the two end caps.

    Parameters
    ----------
    centre : array_like, shape (3,)
        Midpoint of the cylinder's axis.
    axis : array_like, shape (3,)
        Direction of the axis (any non-zero length).
    radius, length : float
        Radius and length along the axis, positive.
    around : int
        Panels around the circumference (at least 3).
    along : int, optional
        Panels along the side; default: as many as keep them about square.
    rings : int, optional
        Rings of panels on each cap (triangles in the innermost, quads outside); default:
        as many as keep them about as wide as the side panels.

    Returns
    -------
    Surface
        ``around * (along + 2 * rings)`` panels facing outward.

    Raises
    ------
    ValueError, TypeError
        A centre or axis that is not 3 finite numbers, a zero axis, a radius or length
        that is not positive, panel counts below their minimum.
    """
    centre, axis = _point("centre", centre), _point("axis", axis)
    if not np.linalg.norm(axis) > 0:
        raise ValueError("axis must be a non-zero vector, got (0, 0, 0)")
    radius, length = _positive("radius", radius), _positive("length", length)
    around = _count("around", around, 3)
    width = 2.0 * np.pi * radius / around
    along = max(1, round(length / width)) if along is None else _count("along", along)
    rings = max(1, round(radius / width)) if rings is None else _count("rings", rings)
    e1, e2, e3 = _frame(axis)
    angles = 2.0 * np.pi * np.arange(around) / around
    circle = np.cos(angles)[:, None] * e1 + np.sin(angles)[:, None] * e2  # (around, 3)
    heights = length * (np.arange(along + 1) / along - 0.5)
    side = (heights[:, None, None] * e3 + radius * circle[None]).reshape(-1, 3)
    # Inner cap rings (radii below the side's end rings) of the bottom, then of the top.
    fractions = np.arange(1, rings) / rings
    caps = [
        (height * e3 + radius * fractions[:, None, None] * circle[None]).reshape(-1, 3)
        for height in (heights[0], heights[-1])
    ]
    vertices = np.concatenate([side, *caps, [-0.5 * length * e3, 0.5 * length * e3]])
    vertices = vertices + centre
    following = (np.arange(around) + 1) % around
    here = np.arange(around)

    def ring_ids(ring, cap):
        """Vertex ids of cap ring ``ring`` (1..rings, ``rings`` = the side's end ring)."""
        if ring == rings:
            return (0 if cap == 0 else along) * around + here
        return side.shape[0] + cap * (rings - 1) * around + (ring - 1) * around + here

    quads = []
    for level in range(along):  # side: tangent × axis points outward
        low, high = level * around + here, (level + 1) * around + here
        quads.append(np.stack([low, low - here + following, high - here + following, high], 1))
    triangles = []
    centre_ids = (len(vertices) - 2, len(vertices) - 1)
    for cap in (0, 1):  # top: radial × tangent = +e3 outward; bottom reversed
        inner = ring_ids(1, cap)
        fan = np.stack([np.full(around, centre_ids[cap]), inner, inner - here + following], 1)
        triangles.append(fan if cap else fan[:, ::-1])
        for ring in range(1, rings):
            a, b = ring_ids(ring, cap), ring_ids(ring + 1, cap)
            quad = np.stack([a, b, b - here + following, a - here + following], 1)
            quads.append(quad if cap else quad[:, ::-1])
    return Surface(
        vertices, (("quad", np.concatenate(quads)), ("triangle", np.concatenate(triangles)))
    )


# -- files ------------------------------------------------------------------------------------


def from_mesh(path) -> Surface:
    """A surface from the triangles and quadrilaterals of a mesh file (meshio).

    Other cell types (lines, vertices, volume cells) are ignored. The panels are made
    consistent with their neighbours and every closed piece (each edge shared by exactly
    two panels) is turned to enclose a positive volume, so its normals point outward; an
    open piece keeps the orientation of its first panel in the file.

    Parameters
    ----------
    path : path
        Mesh file; meshio picks the format from the extension (``.vtu``, ``.vtk``,
        ``.stl``, ``.obj``, Gmsh ``.msh``, ...).

    Returns
    -------
    Surface

    Raises
    ------
    ConfigError
        The file does not exist, cannot be read, or holds no triangles or quads.
    ValueError
        An edge shared by more than two panels, a non-orientable piece (Möbius strip), or
        the checks of :class:`Surface`.
    """
    mesh = read_meshio(Path(path), "surface mesh", "such as STL, VTK .vtu or Gmsh .msh")
    blocks = [(b.type, b.data) for b in mesh.cells if b.type in PANEL_TYPES and len(b.data)]
    if not blocks:
        found = sorted({block.type for block in mesh.cells}) or ["none"]
        raise ConfigError(
            f"{path}: no triangles or quads to make a surface of (cell types: {', '.join(found)})"
        )
    return orient_outward(Surface(np.asarray(mesh.points)[:, :3], tuple(blocks)))


def orient_outward(surface: Surface) -> Surface:
    """``surface`` with consistent panel orientations, closed pieces facing outward.

    Raises
    ------
    ValueError
        An edge shared by more than two panels, or a piece that cannot be oriented.
    """
    panels = [list(row) for _, c in surface.cell_blocks for row in c.tolist()]
    owners = collections.defaultdict(list)  # undirected edge -> [(panel, runs forward)]
    for index, vertices in enumerate(panels):
        for first, second in zip(vertices, vertices[1:] + vertices[:1], strict=True):
            owners[(min(first, second), max(first, second))].append((index, first < second))
    neighbours = [[] for _ in panels]  # (neighbour, must be flipped relative to this panel)
    edges_shared = [True] * len(panels)  # every edge of the panel has a neighbour
    for edge, sharing in owners.items():
        if len(sharing) > 2:
            raise ValueError(f"edge {edge} is shared by {len(sharing)} panels (non-manifold)")
        if len(sharing) == 1:
            edges_shared[sharing[0][0]] = False
            continue
        (a, forward_a), (b, forward_b) = sharing
        # Consistent panels run a shared edge in opposite directions.
        neighbours[a].append((b, forward_a == forward_b))
        neighbours[b].append((a, forward_a == forward_b))
    flip = [None] * len(panels)
    pieces = []
    for seed in range(len(panels)):
        if flip[seed] is not None:
            continue
        flip[seed] = False
        piece, queue = [seed], collections.deque([seed])
        while queue:
            here = queue.popleft()
            for there, relative in neighbours[here]:
                wanted = flip[here] != relative
                if flip[there] is None:
                    flip[there] = wanted
                    piece.append(there)
                    queue.append(there)
                elif flip[there] != wanted:
                    raise ValueError(
                        f"the surface cannot be oriented (panels {here} and {there}: a "
                        "Möbius-like piece)"
                    )
        pieces.append(piece)
    flip = np.array(flip, dtype=bool)
    areas, heights = surface.areas, np.einsum("ij,ij->i", surface.centres, surface.normals)
    for piece in pieces:
        piece = np.array(piece)
        if all(edges_shared[i] for i in piece):  # a closed piece
            origin = surface.centres[piece].mean(axis=0)
            signs = np.where(flip[piece], -1.0, 1.0)
            local = heights[piece] - surface.normals[piece] @ origin
            if np.dot(signs * local, areas[piece]) < 0.0:
                flip[piece] = ~flip[piece]
    reoriented, first = [], 0
    for kind, connectivity in surface.cell_blocks:
        rows = connectivity.copy()
        mask = flip[first : first + len(rows)]
        rows[mask] = rows[mask][:, ::-1]
        reoriented.append((kind, rows))
        first += len(rows)
    return Surface(surface.vertices, tuple(reoriented))


def write_surface(surface: Surface, path, panel_data: dict | None = None) -> Path:
    """Write ``surface`` as a VTK file for inspection, atomically.

    The panels carry cell data ``normal`` and ``area`` and every array of ``panel_data``
    (one row per panel: sampled values, source terms, the rank that integrates it...).

    Parameters
    ----------
    surface : Surface
    path : path
        ``.vtu`` (VTK XML unstructured grid) or ``.vtk`` (legacy) file.
    panel_data : dict of str to array_like, optional
        Per-panel arrays, first dimension the number of panels.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ValueError
        Another suffix, or an array of ``panel_data`` without one row per panel.
    """
    path = Path(path)
    file_format = VTK_SUFFIXES.get(path.suffix.lower())
    if file_format is None:
        raise ValueError(f"surface file must end in .vtu or .vtk, got {path.name!r}")
    mesh = surface.to_meshio(panel_data)
    with replacing(path) as temporary:
        meshio.write(temporary, mesh, file_format=file_format)
    return path
