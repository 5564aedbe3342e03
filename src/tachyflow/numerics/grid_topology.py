"""The topology of a 2D structured grid given only its nodes (read from a file): which side
is the wall, where the wake cut is, which way round it runs (MPI-free).

The compressible solver wants the convention of :mod:`tachyflow.numerics.airfoil_grids`:
``j = 0`` is the wall (and a C-grid's wake cut), ``j = nj`` the far field, ``(i, j)``
right-handed. A grid from another generator may be stored with any side first and either
way round, so :func:`grid_from_nodes` finds the topology from the coordinates:

- **C-grid**: exactly one side of the index rectangle folds back on itself from its ends:
  node ``k`` and node ``n - k`` of that side coincide for ``k <= wake_cells`` (to
  ``tolerance`` times the local spacing: the shortest grid edge at either node), and
  ``0 < wake_cells < n / 2``. That side becomes ``j = 0``, its folded ends the wake cut
  (both branches made bit-identical, the mean of the two), the rest the wall.
- **O-grid** (two opposite sides coincide node for node: the grid is periodic) and grids
  where more than one side folds are refused with a :class:`ValueError` saying what was
  found; the solver has no periodic-``i`` boundary.
- **Open (H) grid**, no side folding: ``j = 0`` stays the side stored first. The wall is
  the ``j = 0`` faces marked by ``wall_nodes`` (a CGNS file's wall boundary conditions)
  if given, otherwise the faces downstream of ``x = 0`` (``x > 0`` at the face's middle:
  the plate's leading edge in the built-in and NASA TMR flat-plate grids); the rest of
  ``j = 0`` is a symmetry plane. The wall must be one run of faces.

Finally ``i`` is reversed if the cells' areas are all negative (a left-handed file);
cells of both signs (a folded or tangled grid) are refused.
"""

from __future__ import annotations

import numpy as np

from tachyflow.numerics.airfoil_grids import StructuredGrid

# Nodes closer than this fraction of the local grid spacing are one node.
DEFAULT_TOLERANCE = 1e-3

# How each side of the stored index rectangle is turned into j = 0: the side's name and
# the re-indexing of a node array (n0, n1) that puts that side at [:, 0].
_SIDES = {
    "j = 0": lambda a: a,
    "j = nj": lambda a: a[:, ::-1],
    "i = 0": lambda a: a.T,
    "i = ni": lambda a: a[::-1, :].T,
}


def grid_from_nodes(
    x,
    y,
    name: str = "",
    wall_nodes=None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> StructuredGrid:
    """A :class:`~tachyflow.numerics.airfoil_grids.StructuredGrid` in the solver's
    orientation from node arrays ``x[i, j]``, ``y[i, j]`` in any orientation.

    Parameters
    ----------
    x, y : array_like (n0, n1)
        Node coordinates, at least 3 x 3 nodes.
    name : str
        The grid's name (where it came from).
    wall_nodes : array_like of bool (n0, n1), optional
        Nodes on wall boundary patches (an open grid's wall faces are those whose two
        nodes are both marked); ignored on a C-grid, whose wall is the rest of ``j = 0``.
    tolerance : float
        Nodes closer than ``tolerance`` times the local spacing coincide.

    Raises
    ------
    ValueError
        For arrays of the wrong shape, an O-grid, several folding sides, a C-grid whose
        wake cut covers half its side, no wall on an open grid, or tangled cells.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or x.shape != y.shape or min(x.shape) < 3:
        raise ValueError(
            f"node arrays must be 2D, of one shape, at least 3 x 3, got {x.shape} and {y.shape}"
        )
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("node coordinates must be finite numbers (the file holds NaN or inf)")
    if not 0 < tolerance < 0.5:
        raise ValueError(f"tolerance must be in (0, 0.5), got {tolerance!r}")
    _refuse_periodic(x, y, tolerance)
    folds = {side: _fold(turn(x), turn(y), tolerance) for side, turn in _SIDES.items()}
    folding = {side: cells for side, cells in folds.items() if cells is not None}
    if len(folding) > 1:
        raise ValueError(
            "more than one side of the grid folds back on itself "
            f"({', '.join(folding)}): not a single C-grid"
        )
    node = np.arange(x.size).reshape(x.shape)  # stored node numbers, re-indexed with x, y
    if folding:
        (side, wake), *_ = folding.items()
        turn = _SIDES[side]
        x, y, node = turn(x), turn(y), turn(node)
    else:
        wake = 0
    if _right_handedness(x, y) < 0:
        x, y, node = x[::-1], y[::-1], node[::-1]
    x, y = np.array(x), np.array(y)  # own, contiguous copies
    ni = x.shape[0] - 1
    if wake:
        cut = np.arange(wake + 1)
        for a in (x, y):  # the two branches, bit for bit the same nodes
            a[cut, 0] = a[ni - cut, 0] = 0.5 * (a[cut, 0] + a[ni - cut, 0])
        wall = (wake, ni - wake)
    else:
        wall = _open_grid_wall(x, y, node, wall_nodes)
    return StructuredGrid(x, y, wake, wall, name)


def _spacing(x, y) -> np.ndarray:
    """The shortest grid edge at each node of the ``[:, 0]`` side (along it and off it)."""
    along = np.hypot(np.diff(x[:, 0]), np.diff(y[:, 0]))
    off = np.hypot(x[:, 1] - x[:, 0], y[:, 1] - y[:, 0])
    shortest = off.copy()
    shortest[:-1] = np.minimum(shortest[:-1], along)
    shortest[1:] = np.minimum(shortest[1:], along)
    return shortest


def _fold(x, y, tolerance: float) -> int | None:
    """Cells of the wake cut if the ``[:, 0]`` side folds back on itself, else None."""
    n = x.shape[0] - 1
    gap = np.hypot(x[:, 0] - x[::-1, 0], y[:, 0] - y[::-1, 0])
    h = _spacing(x, y)
    apart = gap > tolerance * np.minimum(h, h[::-1])
    if not apart.any():
        raise ValueError(
            f"the {n + 1} nodes of one side coincide with themselves reversed: a degenerate "
            "grid (a side folded onto itself along its whole length)"
        )
    wake = int(np.argmax(apart)) - 1
    if wake < 0:
        return None
    if wake == 0:
        raise ValueError(
            "the two ends of one side coincide but the nodes next to them do not: a closed "
            "side with no wake cut (a C-grid's cut must be at least one cell long)"
        )
    if 2 * wake >= n:
        raise ValueError(f"a wake cut of {wake} cells covers half of its {n}-cell side")
    return wake


def _refuse_periodic(x, y, tolerance: float) -> None:
    for axis, label in ((0, "i"), (1, "j")):
        first, last = np.take(x, 0, axis), np.take(x, -1, axis)
        first_y, last_y = np.take(y, 0, axis), np.take(y, -1, axis)
        gap = np.hypot(first - last, first_y - last_y)
        size = np.hypot(
            np.take(x, 1, axis) - first, np.take(y, 1, axis) - first_y
        )  # the first cells' widths across that side
        if np.all(gap <= tolerance * size):
            n = x.shape[axis]
            raise ValueError(
                f"an O-grid: the {label} = 0 and {label} = {n - 1} grid lines coincide node "
                "for node (a grid periodic in one index); the compressible solver runs "
                "C-grids (a wake cut on one side) and open H-grids"
            )


def _right_handedness(x, y) -> int:
    """+1 if every cell's area is positive, -1 if every one is negative."""
    area = 0.5 * (
        (x[1:, 1:] - x[:-1, :-1]) * (y[:-1, 1:] - y[1:, :-1])
        - (y[1:, 1:] - y[:-1, :-1]) * (x[:-1, 1:] - x[1:, :-1])
    )
    if np.all(area > 0):
        return 1
    if np.all(area < 0):
        return -1
    positive, cells = int(np.sum(area > 0)), area.size
    raise ValueError(
        f"{positive} of the {cells} cells have a positive area and {cells - positive} a "
        "negative or zero one: a folded or tangled grid"
    )


def _open_grid_wall(x, y, node, wall_nodes) -> tuple[int, int]:
    """The wall faces of an open grid's ``j = 0`` side: marked ones, or those at x > 0."""
    if wall_nodes is not None:
        marked = np.asarray(wall_nodes, dtype=bool).ravel()
        if marked.size != node.size:
            raise ValueError(
                f"wall_nodes must mark the {node.size} nodes of the grid, got {marked.size}"
            )
        on_wall = marked[node[:, 0]]
        faces = np.flatnonzero(on_wall[:-1] & on_wall[1:])
        where = "marked as wall by the boundary conditions"
    else:
        faces = np.flatnonzero(0.5 * (x[:-1, 0] + x[1:, 0]) > 0)
        where = "downstream of x = 0"
    if faces.size == 0:
        raise ValueError(
            f"an open grid with no j = 0 faces {where}: no wall (an open grid's wall is "
            "on j = 0, from x = 0 unless its boundary conditions say)"
        )
    if faces[-1] - faces[0] + 1 != faces.size:
        raise ValueError(
            f"the j = 0 faces {where} are not one run of faces "
            f"({faces.size} faces between {faces[0]} and {faces[-1]}): one wall is supported"
        )
    return int(faces[0]), int(faces[-1]) + 1
