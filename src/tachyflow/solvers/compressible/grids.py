"""Grids the compressible solver can run on, by name (``[compressible] grid``).

A grid builder takes the ``[compressible]`` section and returns an object with node arrays
``x, y`` of shape ``(ni + 1, nj + 1)`` (i round or along the body, j off it, right-handed),
``wake_cells`` and ``wall = (start, stop)`` (see
:class:`tachyflow.numerics.airfoil_grids.StructuredGrid`). Builders are registered with
:func:`register_grid`; this module stays light (reading a case file imports it).
"""

from __future__ import annotations

from collections.abc import Callable

_BUILDERS: dict[str, Callable] = {}
# The RAE 2822 C-grid opens the first cells off its wake cut to at most this length over
# height (see airfoil_grids.open_wake_spacing): with the wall spacing all along the cut the
# implicit iterations stall at a density residual of 1e-4.
RAE2822_WAKE_ASPECT_RATIO = 30.0


def register_grid(name: str):
    """Decorator: register a grid builder ``builder(section) -> grid`` under ``name``."""

    def add(builder):
        if name in _BUILDERS and _BUILDERS[name] is not builder:
            raise ValueError(f"a compressible grid named {name!r} is already registered")
        _BUILDERS[name] = builder
        return builder

    return add


def grid_names() -> list[str]:
    """Names a case may give as ``[compressible] grid``."""
    return sorted(_BUILDERS)


def build_grid(section):
    """The grid ``section.grid`` of the ``[compressible]`` section."""
    if section.grid not in _BUILDERS:
        raise ValueError(f"grid must be one of {grid_names()}, got {section.grid!r}")
    return _BUILDERS[section.grid](section)


@register_grid("flat-plate")
def flat_plate(section):
    """A plate of unit length from x = 0 with ``upstream`` chords of symmetry plane before
    it (a quarter of the i cells, at least 4) and the far field ``far_field`` above."""
    from tachyflow.numerics.airfoil_grids import flat_plate_h_grid

    ni, nj = section.cells
    upstream_cells = max(4, ni // 4)
    return flat_plate_h_grid(
        cells=(ni, nj),
        upstream_cells=upstream_cells,
        plate_length=1.0,
        upstream_length=section.upstream,
        height=section.far_field,
        wall_spacing=section.wall_spacing,
        leading_edge_spacing=min(2e-3, 0.25 / (ni - upstream_cells)),
    )


@register_grid("flat-plate-tmr")
def flat_plate_tmr(section):
    """The NASA Turbulence Modeling Resource's zero-pressure-gradient plate (x = 0 to 2,
    symmetry plane from x = -1/3, height 1) on the level of the nested family
    (:func:`tachyflow.numerics.airfoil_grids.tmr_flat_plate_grid`) that ``cells`` names:
    ``[544, 384]``, ``[272, 192]``, ``[136, 96]``, ``[68, 48]`` or ``[34, 24]`` (the TMR's
    545 x 385 ... 35 x 25 points). The family fixes the spacings and the domain, so
    ``wall_spacing``, ``far_field`` and ``upstream`` are not read."""
    from tachyflow.numerics.airfoil_grids import (
        TMR_FLAT_PLATE_CELLS,
        TMR_FLAT_PLATE_LEVELS,
        tmr_flat_plate_grid,
    )

    ni, nj = TMR_FLAT_PLATE_CELLS
    levels = {(ni >> k, nj >> k): k for k in range(TMR_FLAT_PLATE_LEVELS)}
    cells = tuple(section.cells)
    if cells not in levels:
        raise ValueError(
            f"cells must be one of the family's levels {[list(c) for c in levels]}, "
            f"got {list(cells)}"
        )
    return tmr_flat_plate_grid(levels[cells])


def _c_grid(section, airfoil: str, wake_aspect_ratio: float | None = None):
    """A C-grid round ``airfoil`` from :mod:`tachyflow.numerics.airfoil_grids`."""
    from tachyflow.numerics import airfoil_grids, airfoils

    shape = airfoils.rae2822() if airfoil == "rae2822" else airfoils.naca4(airfoil)
    return airfoil_grids.c_grid(
        shape,
        cells=tuple(section.cells),
        wake_cells=section.wake_cells,
        far_field=section.far_field,
        wall_spacing=section.wall_spacing,
        reynolds=max(section.reynolds, 1e3),
        wake_aspect_ratio=wake_aspect_ratio,
    )


@register_grid("rae2822")
def rae2822(section):
    """The RAE 2822 supercritical airfoil in a C-grid (``cells``, ``wake_cells`` on each
    side of the cut, ``far_field`` chords, ``wall_spacing``), the first cells off the wake
    cut opened to :data:`RAE2822_WAKE_ASPECT_RATIO`."""
    return _c_grid(section, "rae2822", RAE2822_WAKE_ASPECT_RATIO)


@register_grid("naca0012")
def naca0012(section):
    """The NACA 0012 airfoil (sharp trailing edge) in a C-grid, as :func:`rae2822`."""
    return _c_grid(section, "0012")


@register_grid("file")
def grid_file(section):
    """The grid in the Plot3D or CGNS file ``grid_file`` (format from the suffix; see
    :func:`tachyflow.io.grid_files.read_grid_file`): a C-grid, its wake cut found where
    ``j = 0`` folds back on itself, or an open H-grid, walled from ``x = 0`` unless the
    CGNS file's wall conditions say otherwise. ``cells`` must be the file's.

    Every rank reads the whole file, as every rank builds the built-in grids whole: the
    grid is 2D (the 281 x 65 RAE 2822 C-grid is 18,265 nodes, 0.3 MB), a file holds no
    per-rank pieces, and the wake cut and the wall need the whole ``j = 0`` line. Each
    rank reads the same file, so a bad file fails on every rank alike.
    """
    from tachyflow.io.grid_files import read_grid_file

    grid = read_grid_file(section.grid_file)
    if grid.cells != tuple(section.cells):
        ni, nj = grid.cells
        raise ValueError(
            f"{section.grid_file!r} holds a {ni} x {nj}-cell grid, but compressible.cells = "
            f"{list(section.cells)}: set cells = [{ni}, {nj}]"
        )
    return grid
