"""Grids the compressible solver can run on, by name (``[compressible] grid``).

A grid builder takes the ``[compressible]`` section and returns an object with node arrays
``x, y`` of shape ``(ni + 1, nj + 1)`` (i round or along the body, j off it, right-handed),
``wake_cells`` and ``wall = (start, stop)`` (see
:class:`tachyflow.numerics.compressible.grids.BodyGrid`). Builders are registered with
:func:`register_grid`; this module stays light (reading a case file imports it).
"""

from __future__ import annotations

from collections.abc import Callable

_BUILDERS: dict[str, Callable] = {}


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
    from tachyflow.numerics.compressible.grids import flat_plate_grid

    ni, nj = section.cells
    upstream_cells = max(4, ni // 4)
    return flat_plate_grid(
        cells_upstream=upstream_cells,
        cells_plate=ni - upstream_cells,
        cells_normal=nj,
        upstream=section.upstream,
        length=1.0,
        height=section.far_field,
        wall_spacing=section.wall_spacing,
        leading_edge_spacing=min(2e-3, 0.25 / (ni - upstream_cells)),
    )
