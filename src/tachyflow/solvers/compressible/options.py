"""The case table of the compressible solver, ``[compressible]``, and its checks.

Light on purpose (reading a case file imports it, never the kernels): the solver's
:attr:`~tachyflow.solvers.base.Solver.case_options` is :data:`COMPRESSIBLE`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from tachyflow.options import Check, FilePath, at_least, inside, positive
from tachyflow.solvers.base import BLOCK_FIELDS, CHECKPOINTS, WALL_SURFACES, SolverOptions

Positive = Annotated[float, positive]
Fraction = Annotated[float, inside(0, 1)]


@dataclass(frozen=True)
class CompressibleSection:
    """``[compressible]``: the 2D compressible Navier–Stokes / RANS solver (``solver =
    "compressible"``): grid, free stream, scheme and the pseudo-time iteration.

    ``grid`` names a registered grid (``"flat-plate"``: an H-grid over a plate of unit length
    from x = 0, ``upstream`` chords of symmetry plane before it, ``far_field`` high) of
    ``cells = [ni, nj]``; ``mach``, ``alpha`` (degrees), ``reynolds`` (per chord) and
    ``temperature`` (K, for Sutherland's law) set the free stream. ``time_stepping``:
    ``lu-sgs`` or ``dp-sgs`` (``sweeps`` symmetric Gauss–Seidel sweep pairs, Jacobi across
    blocks; ``line_implicit``: each relaxation step solves a whole line of constant i,
    implicit along j) iterate to a steady state with local time steps, the CFL number growing
    geometrically from ``cfl_start`` to ``cfl`` over ``cfl_ramp`` iterations, until the
    density residual falls below ``target_residual`` times its first value; ``rk3``
    (SSP-RK3) advances in time with ``[time] cfl`` or ``dt``; ``dual-lu-sgs`` and
    ``dual-dp-sgs`` (dual time stepping) advance in time by steps of ``[time] dt`` of the
    second-order backward difference (the first a backward Euler step), each solved by
    LU-SGS or DP-SGS pseudo-time iterations (the CFL ramp over the run's pseudo-time
    iterations) until the density equation's unsteady residual has fallen by
    ``inner_tolerance`` or after ``inner_iterations``.

    ``grid = "file"`` reads the grid from ``grid_file``, a Plot3D (``.xyz``, ``.p3d``,
    ``.p2d``, ``.x``) or CGNS (``.cgns``) file; a relative path is taken from the case
    file's folder. ``cells`` must then be the file's; ``wake_cells``, ``wall_spacing``,
    ``far_field`` and ``upstream`` are not read (see docs/grid-files.md).
    """

    grid: str = "flat-plate"
    grid_file: Annotated[str, FilePath()] = ""
    cells: Annotated[tuple[int, int], Check(lambda n: n >= 4, "[ni, nj], each >= 4",
                                            each=True)] = (64, 32)
    wall_spacing: Positive = 5e-4
    far_field: Positive = 0.5
    upstream: Positive = 0.5
    wake_cells: int = 0
    mach: Positive = 0.4
    alpha: Annotated[float, Check(lambda a: -90 < a < 90, "in (-90, 90) degrees")] = 0.0
    reynolds: Annotated[float, Check(lambda r: r >= 0, ">= 0 (0: inviscid)")] = 1e5
    temperature: Positive = 288.15
    scheme: Literal["roe", "ausm+up"] = "roe"
    limiter: Literal["van-albada", "minmod", "none", "first-order"] = "van-albada"
    entropy_fix: Annotated[float, inside(0, 1, "[)")] = 0.1
    turbulence: Literal["laminar", "sa"] = "laminar"
    nu_tilde_ratio: Positive = 3.0
    time_stepping: Literal["lu-sgs", "dp-sgs", "rk3", "dual-lu-sgs", "dual-dp-sgs"] = "dp-sgs"
    sweeps: Annotated[int, at_least(1)] = 4
    line_implicit: bool = False
    inner_iterations: Annotated[int, at_least(1)] = 30
    inner_tolerance: Annotated[float, Check(lambda t: 0 < t < 1, "in (0, 1), the relative "
                                            "drop of the inner residual")] = 1e-3
    cfl: Positive = 30.0
    cfl_start: Positive = 2.0
    cfl_ramp: Annotated[int, at_least(0)] = 100
    target_residual: Fraction = 1e-7
    vortex_correction: bool = False


def check_compressible(config, require) -> None:
    """Checks across the compressible solver's values."""
    from tachyflow.solvers.compressible.grids import grid_names

    section = config.compressible
    require(section.grid in grid_names(), "compressible.grid", f"one of {grid_names()}",
            section.grid)
    _check_grid_file(section, require)
    require(0 <= 2 * section.wake_cells < section.cells[0], "compressible.wake_cells",
            f"in [0, ni/2 = {section.cells[0] / 2})", section.wake_cells)
    require(section.turbulence == "laminar" or section.reynolds > 0, "compressible.reynolds",
            "> 0 with turbulence = 'sa'", section.reynolds)
    require(section.cfl_start <= section.cfl, "compressible.cfl_start",
            f"<= cfl = {section.cfl}", section.cfl_start)
    require(not section.vortex_correction or section.mach < 1,
            "compressible.vortex_correction", "false with a supersonic free stream",
            section.vortex_correction)
    require(not section.time_stepping.startswith("dual-") or config.time.dt > 0, "time.dt",
            "> 0, the physical time step, with compressible.time_stepping = "
            f"{section.time_stepping!r}", config.time.dt)


def _check_grid_file(section: CompressibleSection, require) -> None:
    from tachyflow.io.grid_files import GRID_FILE_SUFFIXES, grid_file_format

    if section.grid != "file":
        require(not section.grid_file, "compressible.grid_file",
                "empty unless grid = 'file'", section.grid_file)
        return
    require(bool(section.grid_file), "compressible.grid_file",
            "the path of a Plot3D or CGNS grid file with grid = 'file'", section.grid_file)
    try:
        grid_file_format(section.grid_file)
    except ValueError:
        require(False, "compressible.grid_file",
                f"a path ending in one of {list(GRID_FILE_SUFFIXES)}", section.grid_file)


COMPRESSIBLE = SolverOptions(
    {"compressible": CompressibleSection},
    check_compressible,
    lambda config: frozenset({BLOCK_FIELDS, WALL_SURFACES, CHECKPOINTS}),
)
