"""2D structured grids in CGNS files (HDF5), through pyCGNS (``CGNS.MAP``, ``CGNS.PAT``).

:func:`write_cgns` writes a :class:`~tachyflow.numerics.airfoil_grids.StructuredGrid` as
the CGNS standard (the SIDS) lays out a structured grid: a ``CGNSBase_t`` of cell and
physical dimension 2, one ``Zone_t`` of ``ZoneType`` Structured with its node and cell
counts, ``GridCoordinates_t`` with ``CoordinateX`` and ``CoordinateY`` (``i`` fastest),
and the topology the solver uses, so ParaView and other solvers see it too:

- ``ZoneBC``: ``wall`` (``BCWall``) on the grid's wall range of ``j = 0``, ``symmetry``
  (``BCSymmetryPlane``) on the rest of ``j = 0`` that is not the wake cut (an H-grid's
  plane ahead of its plate), ``farfield`` (``BCFarfield``) on ``j = nj``, and
  ``outflow_i_low`` / ``outflow_i_high`` (``BCFarfield``: the solver's characteristic
  condition, free-stream pressure where the flow leaves) on the ``i`` ends; point ranges
  of vertices, 1-based.
- ``ZoneGridConnectivity``: the wake cut of a C-grid as two ``GridConnectivity1to1_t``
  of the zone with itself (each branch's donor the other branch, transform ``[-1, -2]``:
  ``i`` and ``j`` both reverse across the cut).

The file says CGNS version 3.4, which the library of Debian's ``cgns-convert`` tools
(``cgnscheck``) reads.

:func:`read_cgns` reads a file with one structured zone of index dimension 2, or a 3D
zone one node or one cell thick in ``k`` with the same ``x, y`` on both planes (an
extruded 2D grid, as ``plot3d_to_cgns`` makes from a 2D grid written as 3D); wall
boundary conditions (``BCWall*`` on vertex ranges or lists) come back as marked nodes;
the grid connectivity is not needed, the wake cut is found from the coordinates
(:func:`tachyflow.numerics.grid_topology.grid_from_nodes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tachyflow.io.files import replacing

CGNS_VERSION = 3.4
_WALL_PREFIX = "BCWall"  # BCWall, BCWallInviscid, BCWallViscous, BCWallViscousHeatFlux, ...


@dataclass(frozen=True)
class CgnsGrid:
    """The one structured zone of a CGNS file.

    Attributes
    ----------
    x, y : ndarray (ni + 1, nj + 1)
        Node coordinates.
    wall_nodes : ndarray of bool (ni + 1, nj + 1) or None
        Nodes on ``BCWall*`` patches; None if the zone has no wall boundary condition.
    zone : str
        The zone's name.
    """

    x: np.ndarray
    y: np.ndarray
    wall_nodes: np.ndarray | None
    zone: str


def write_cgns(path, grid, zone: str = "grid") -> Path:
    """Write ``grid`` (a :class:`~tachyflow.numerics.airfoil_grids.StructuredGrid`) to
    ``path`` as one structured CGNS zone named ``zone`` with its boundary conditions and
    wake-cut connectivity, atomically."""
    import CGNS.MAP
    import CGNS.PAT.cgnslib as cgnslib
    import CGNS.PAT.cgnsutils as cgnsutils

    if not zone or len(zone) > 32 or "/" in zone:
        raise ValueError(f"zone must be a CGNS name (1 to 32 characters, no '/'), got {zone!r}")
    ni, nj = grid.cells
    wake = grid.wake_cells
    tree = cgnslib.newCGNSTree(CGNS_VERSION)
    base = cgnslib.newCGNSBase(tree, "Base", 2, 2)
    # Coordinates in chords. (Not cgnslib.newDataClass: its check calls ndarray.tostring,
    # gone from numpy 2.)
    cgnsutils.newNode(
        "DataClass",
        cgnsutils.setStringAsArray("NormalizedByUnknownDimensional"),
        [],
        "DataClass_t",
        base,
    )
    size = np.array([[ni + 1, ni, 0], [nj + 1, nj, 0]], dtype=np.int32, order="F")
    node = cgnslib.newZone(base, zone, size, "Structured")
    coordinates = cgnslib.newGridCoordinates(node, "GridCoordinates")
    for name, values in (("CoordinateX", grid.x), ("CoordinateY", grid.y)):
        array = cgnslib.newDataArray(coordinates, name, np.asfortranarray(values, np.float64))
        # A length: exponents of mass, length, time, temperature, angle.
        exponents = np.array([0.0, 1.0, 0.0, 0.0, 0.0])
        cgnsutils.newNode("DimensionalExponents", exponents, [], "DimensionalExponents_t", array)
    conditions = cgnslib.newZoneBC(node)
    wall_start, wall_stop = grid.wall
    patches = [("wall", "BCWall", [[wall_start + 1, wall_stop + 1], [1, 1]])]
    symmetry = [(wake, wall_start), (wall_stop, ni - wake)]
    for number, (start, stop) in enumerate(s for s in symmetry if s[1] > s[0]):
        patches.append((f"symmetry_{number}", "BCSymmetryPlane", [[start + 1, stop + 1], [1, 1]]))
    patches += [
        ("farfield", "BCFarfield", [[1, ni + 1], [nj + 1, nj + 1]]),
        ("outflow_i_low", "BCFarfield", [[1, 1], [1, nj + 1]]),
        ("outflow_i_high", "BCFarfield", [[ni + 1, ni + 1], [1, nj + 1]]),
    ]
    for name, kind, point_range in patches:
        cgnslib.newBoundary(conditions, name, point_range, kind)
    if wake:
        connectivity = cgnslib.newZoneGridConnectivity(node)
        lower, upper = [[1, wake + 1], [1, 1]], [[ni + 1 - wake, ni + 1], [1, 1]]
        reversed_lower, reversed_upper = [[ni + 1, ni + 1 - wake], [1, 1]], [[wake + 1, 1], [1, 1]]
        cgnslib.newGridConnectivity1to1(
            connectivity, "wake_cut_lower", zone, lower, reversed_lower, [-1, -2]
        )
        cgnslib.newGridConnectivity1to1(
            connectivity, "wake_cut_upper", zone, upper, reversed_upper, [-1, -2]
        )
    with replacing(path) as temporary:
        temporary.unlink()  # the HDF5 layer makes its own file
        CGNS.MAP.save(str(temporary), tree)
    return Path(path)


def read_cgns(path) -> CgnsGrid:
    """The single structured 2D zone of the CGNS file ``path``.

    Raises
    ------
    ValueError
        If the file is missing or not CGNS, holds no zone or more than one, an
        unstructured zone, a 3D zone that is not one layer of a 2D grid, or no
        ``CoordinateX`` / ``CoordinateY``.
    """
    import CGNS.MAP
    import CGNS.PAT.cgnsutils as cgnsutils

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    try:
        tree, _, _ = CGNS.MAP.load(str(path))
    except CGNS.MAP.error as error:
        raise ValueError(f"{path}: not a readable CGNS file ({error})") from None
    zones = [zone for base in _children(tree, "CGNSBase_t") for zone in _children(base, "Zone_t")]
    if len(zones) != 1:
        names = [zone[0] for zone in zones]
        raise ValueError(
            f"{path}: {len(zones)} zones {names}: one structured zone expected (multi-block "
            "grids are not read; join the blocks into one C- or H-grid)"
        )
    (zone,) = zones
    kind = [cgnsutils.getValueAsString(n) for n in _children(zone, "ZoneType_t")]
    if kind != ["Structured"]:
        raise ValueError(f"{path}: zone {zone[0]!r} is {kind or 'untyped'}, not Structured")
    nodes = tuple(int(n) for n in np.asarray(zone[1])[:, 0])
    coordinates = {
        child[0]: child[1]
        for grid in _children(zone, "GridCoordinates_t")
        if grid[0] == "GridCoordinates"
        for child in _children(grid, "DataArray_t")
    }
    if "CoordinateX" not in coordinates or "CoordinateY" not in coordinates:
        raise ValueError(
            f"{path}: zone {zone[0]!r} has no GridCoordinates with CoordinateX and CoordinateY"
        )
    x, y = (np.asarray(coordinates[n], dtype=np.float64) for n in ("CoordinateX", "CoordinateY"))
    if x.shape != nodes or y.shape != nodes:
        raise ValueError(
            f"{path}: zone {zone[0]!r} of {nodes} nodes holds coordinates of shape {x.shape}"
        )
    planar = _planar(x, y, nodes, f"{path}: zone {zone[0]!r}")
    wall = _wall_nodes(zone, nodes, f"{path}: zone {zone[0]!r}")
    if wall is not None:
        wall = wall.reshape(*nodes[:2], -1).any(axis=2)
    return CgnsGrid(x[planar], y[planar], wall, zone[0])


def _children(node, kind: str) -> list:
    return [child for child in node[2] if child[3] == kind]


def _planar(x, y, nodes: tuple[int, ...], where: str):
    """The index of the 2D node arrays in ``x`` and ``y``: all of a 2D zone, the first k
    plane of a 3D zone one layer thick."""
    if len(nodes) == 2:
        return (slice(None), slice(None))
    if len(nodes) != 3:
        raise ValueError(f"{where}: index dimension {len(nodes)}, expected 2")
    layers = nodes[2]
    if layers > 2 or not (
        np.array_equal(x[..., 0], x[..., -1]) and np.array_equal(y[..., 0], y[..., -1])
    ):
        raise ValueError(
            f"{where}: a 3D zone of {' x '.join(map(str, nodes))} nodes; a 2D grid is read "
            "from a 2D zone or a 3D zone one layer thick (1 or 2 k planes with equal x, y)"
        )
    return (slice(None), slice(None), 0)


def _wall_nodes(zone, nodes: tuple[int, ...], where: str) -> np.ndarray | None:
    """Nodes on the zone's ``BCWall*`` patches, or None if it has none."""
    import CGNS.PAT.cgnsutils as cgnsutils

    marked = np.zeros(nodes, dtype=bool)
    found = False
    for conditions in _children(zone, "ZoneBC_t"):
        for condition in _children(conditions, "BC_t"):
            if not cgnsutils.getValueAsString(condition).startswith(_WALL_PREFIX):
                continue
            locations = [
                cgnsutils.getValueAsString(n) for n in _children(condition, "GridLocation_t")
            ]
            if locations not in ([], ["Vertex"]):
                raise ValueError(
                    f"{where}: wall condition {condition[0]!r} is given at {locations[0]}; "
                    "only vertex point ranges and lists are read"
                )
            for point in condition[2]:
                if point[0] not in ("PointRange", "PointList"):
                    continue
                found = True
                _mark(marked, np.asarray(point[1]), point[0], where, condition[0])
    return marked if found else None


def _mark(marked, points: np.ndarray, kind: str, where: str, name: str) -> None:
    dims = marked.ndim
    if points.ndim != 2 or points.shape[0] != dims:
        raise ValueError(
            f"{where}: wall condition {name!r} has a {kind} of shape {points.shape}, "
            f"expected ({dims}, n)"
        )
    low, high = points.min(axis=1), points.max(axis=1)
    if (low < 1).any() or (high > np.array(marked.shape)).any():
        raise ValueError(f"{where}: wall condition {name!r} reaches outside the zone's nodes")
    if kind == "PointRange":
        marked[tuple(slice(a - 1, b) for a, b in zip(low, high, strict=True))] = True
    else:
        marked[tuple(points - 1)] = True
