"""A 2D structured grid read from a file, in the compressible solver's orientation.

The format comes from the file's suffix (:data:`GRID_FILE_SUFFIXES`): Plot3D
(:func:`tachyflow.io.plot3d.read_plot3d`, one block) or CGNS
(:func:`tachyflow.io.cgns.read_cgns`, one structured zone, its wall boundary conditions
used on an open grid). The topology (C-grid with its wake cut, or open H-grid with its
wall) and the orientation come from the coordinates:
:func:`tachyflow.numerics.grid_topology.grid_from_nodes`.
"""

from __future__ import annotations

from pathlib import Path

PLOT3D_SUFFIXES = (".xyz", ".p3d", ".p2d", ".x")
CGNS_SUFFIXES = (".cgns",)
GRID_FILE_SUFFIXES = PLOT3D_SUFFIXES + CGNS_SUFFIXES


def grid_file_format(path) -> str:
    """``"plot3d"`` or ``"cgns"`` from the suffix of ``path`` (ValueError otherwise)."""
    suffix = Path(path).suffix.lower()
    if suffix in PLOT3D_SUFFIXES:
        return "plot3d"
    if suffix in CGNS_SUFFIXES:
        return "cgns"
    raise ValueError(
        f"{str(path)!r}: a grid file's suffix must be one of {list(GRID_FILE_SUFFIXES)} "
        f"(Plot3D or CGNS), got {suffix or 'none'!r}"
    )


def read_grid_file(path):
    """The :class:`~tachyflow.numerics.airfoil_grids.StructuredGrid` in the Plot3D or CGNS
    file ``path`` (ValueError naming what is wrong: missing file, unknown suffix, several
    blocks or zones, a 3D zone, a topology the solver does not run)."""
    from tachyflow.numerics.grid_topology import grid_from_nodes

    path = Path(path)
    kind = grid_file_format(path)
    if not path.is_file():
        raise ValueError(f"{str(path)!r}: no such grid file")
    if kind == "cgns":
        from tachyflow.io.cgns import read_cgns

        zone = read_cgns(path)
        x, y, wall_nodes = zone.x, zone.y, zone.wall_nodes
    else:
        from tachyflow.io.plot3d import read_plot3d

        blocks = read_plot3d(path)
        if len(blocks) != 1:
            raise ValueError(
                f"{str(path)!r}: {len(blocks)} Plot3D blocks; one block expected (multi-block "
                "grids are not read; join the blocks into one C- or H-grid)"
            )
        ((x, y),) = blocks
        wall_nodes = None
    try:
        return grid_from_nodes(x, y, name=path.name, wall_nodes=wall_nodes)
    except ValueError as error:
        raise ValueError(f"{str(path)!r}: {error}") from None
