"""``tachyflow grid``: generate an airfoil C-grid or a flat-plate H-grid (or read one from a
Plot3D or CGNS file), report its quality, export it (Plot3D, SU2, CGNS) and draw it."""

from __future__ import annotations

from dataclasses import replace

from tachyflow.commands import Command, register

DESCRIPTION = (
    "Generate the structured grid of the 2D compressible RANS case (the MPINS2D RAE 2822 "
    "case of B.-S. Lee, J.-W. Hong, S. Lee, D. H. Lee, 'Performance Analysis of Cluster "
    "Network Interfaces for Parallel Computing of Computational Fluid Dynamics': a "
    "281 x 65-point C-grid), print its quality at one or more nested levels, and write it "
    "as Plot3D, SU2, CGNS or a PNG figure. A Plot3D or CGNS file given instead of a section "
    "is read (its topology found as a case with grid = 'file' would find it), checked and "
    "converted."
)


@register
class Grid(Command):
    name = "grid"
    uses_mpi = False
    help = "generate, check and export an airfoil C-grid or flat-plate H-grid"
    description = DESCRIPTION

    def add_arguments(self, parser):
        parser.add_argument(
            "section",
            nargs="?",
            default="rae2822",
            help="rae2822 (default), nacaXXXX (a 4-digit NACA section), flat-plate, or a "
            "Plot3D (.xyz, .p3d, .p2d, .x) or CGNS (.cgns) grid file to read",
        )
        parser.add_argument(
            "--case",
            default=None,
            help="instead of a section: the grid a compressible case runs on (a built-in "
            "case name or a case file), exactly as the run builds it",
        )
        parser.add_argument("--cells", default="280x64", help="NIxNJ cells of level 0")
        parser.add_argument(
            "--wake-cells", type=int, default=40, help="cells along each wake side"
        )
        parser.add_argument("--far-field", type=float, default=50.0, help="far field in chords")
        parser.add_argument("--reynolds", type=float, default=6.5e6, help="chord Reynolds number")
        parser.add_argument("--yplus", type=float, default=1.0, help="target y+ of the first cell")
        parser.add_argument(
            "--wall-spacing", type=float, default=None, help="first cell height (overrides y+)"
        )
        parser.add_argument("--level", type=int, default=0, help="level to export and draw")
        parser.add_argument(
            "--levels",
            default=None,
            help="comma-separated levels for the quality table (default: --level)",
        )
        parser.add_argument("--finest-level", type=int, default=-1, help="finest level marched")
        parser.add_argument("--plot3d", default=None, help="write a Plot3D grid file here")
        parser.add_argument(
            "--formatted", action="store_true", help="ASCII Plot3D instead of unformatted"
        )
        parser.add_argument("--su2", default=None, help="write an SU2 mesh here")
        parser.add_argument(
            "--cgns", default=None, help="write a CGNS file here (one structured zone)"
        )
        parser.add_argument("--figure", default=None, help="write a PNG of the grid here")
        parser.add_argument("--json", action="store_true", help="print the quality as JSON")

    def run(self, args) -> int:
        import dataclasses
        import json

        from tachyflow.errors import ConfigError

        try:
            levels = [args.level] if args.levels is None else _levels(args.levels)
            wanted = sorted({*levels, args.level})
            finest = min(args.finest_level, wanted[0])  # one march: every level nests
            _check_memory(args, finest)
            grids = {level: _generate(args, level, finest) for level in wanted}
        except ValueError as error:
            raise ConfigError(str(error)) from None
        from tachyflow.numerics.airfoil_grids import grid_quality

        qualities = {level: grid_quality(grids[level]) for level in levels}
        if args.json:
            print(
                json.dumps({str(k): dataclasses.asdict(q) for k, q in qualities.items()}, indent=2)
            )
        else:
            print(_table(grids[args.level].name, qualities))
        grid = grids[args.level]
        if args.plot3d:
            from tachyflow.io.plot3d import write_plot3d

            path = write_plot3d(args.plot3d, [(grid.x, grid.y)], formatted=args.formatted)
            print(f"wrote {path}")
        if args.su2:
            from tachyflow.io.plot3d import write_su2

            print(f"wrote {write_su2(args.su2, grid)}")
        if args.cgns:
            from tachyflow.io.cgns import write_cgns

            print(f"wrote {write_cgns(args.cgns, grid)}")
        if args.figure:
            print(f"wrote {_draw(grid, args.figure)}")
        return 0


def _levels(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"--levels must be integers separated by commas, got {text!r}") from None


def _cells(text: str) -> tuple[int, int]:
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(part.strip().isdigit() for part in parts):
        raise ValueError(f"--cells must look like NIxNJ (e.g. 280x64), got {text!r}")
    return int(parts[0]), int(parts[1])


# Peak bytes per point of level 0 (its grid, quality and exports) and per point of a finer
# level marched: measured 475 and 92 at 1120 x 256 cells (finest level 0 and -1).
BYTES_PER_POINT, BYTES_PER_FINER_POINT = 512, 128


def _check_memory(args, finest_level: int) -> None:
    """ConfigError in one line, before anything is allocated, when the grid of ``--cells``
    (marched from ``finest_level``) would not fit in this node's memory."""
    from pathlib import Path

    from tachyflow import runtime
    from tachyflow.io.grid_files import GRID_FILE_SUFFIXES

    if args.case is not None or Path(args.section).suffix.lower() in GRID_FILE_SUFFIXES:
        return  # a case's grid is checked by the case, a file's is the file's size
    ni, nj = _cells(args.cells)
    points = (ni + 1) * (nj + 1)
    finer = sum(4**-level for level in range(finest_level, 0))  # each level 4x the next
    needed = points * (BYTES_PER_POINT + BYTES_PER_FINER_POINT * finer)
    runtime.require_memory(needed, f"grid {args.section} --cells {args.cells} "
                           f"({points:,} points, finest level {finest_level})")


def _generate(args, level: int, finest_level: int):
    from pathlib import Path

    from tachyflow.io.grid_files import GRID_FILE_SUFFIXES, read_grid_file
    from tachyflow.numerics import airfoil_grids, airfoils, stretching

    if args.case is not None:
        if level != 0:
            raise ValueError("a case's grid has level 0 only (--level 0)")
        return _case_grid(args.case)
    if Path(args.section).suffix.lower() in GRID_FILE_SUFFIXES:
        if level != 0:
            raise ValueError("a grid read from a file has level 0 only (--level 0)")
        return read_grid_file(args.section)
    cells = _cells(args.cells)
    name = args.section.lower()
    if name == "flat-plate":
        if level != 0:
            raise ValueError("the flat-plate H-grid has level 0 only (--level 0)")
        spacing = args.wall_spacing or stretching.wall_spacing_for_yplus(
            args.reynolds, args.yplus
        )
        return airfoil_grids.flat_plate_h_grid(
            cells, upstream_cells=cells[0] // 4, wall_spacing=spacing
        )
    if name == "rae2822":
        section = airfoils.rae2822()
    elif name.startswith("naca"):
        section = airfoils.naca4(name[4:])
    else:
        raise ValueError(f"section must be rae2822, nacaXXXX or flat-plate, got {args.section!r}")
    return airfoil_grids.c_grid(
        section,
        cells=cells,
        wake_cells=args.wake_cells,
        far_field=args.far_field,
        wall_spacing=args.wall_spacing,
        reynolds=args.reynolds,
        yplus=args.yplus,
        level=level,
        finest_level=finest_level,
    )


def _case_grid(name: str):
    from tachyflow import config
    from tachyflow.solvers.base import BLOCK_FIELDS
    from tachyflow.solvers.compressible.grids import build_grid

    case = config.load(name)
    if BLOCK_FIELDS not in case.provides:
        raise ValueError(
            f"--case {name!r} runs the {case.case.solver!r} solver; a grid comes from a case "
            "whose solver runs on a 2D block grid ([compressible])"
        )
    grid = build_grid(case.compressible)
    return replace(grid, name=grid.name or case.compressible.grid)


def _table(name: str, qualities: dict) -> str:
    """A Markdown table, one column per level."""
    levels = list(qualities)
    rows = [q.rows() for q in qualities.values()]
    lines = [
        f"| {name} | " + " | ".join(f"level {level}" for level in levels) + " |",
        "|---|" + "---|" * len(levels),
    ]
    for k, (label, _) in enumerate(rows[0]):
        lines.append(f"| {label} | " + " | ".join(row[k][1] for row in rows) + " |")
    return "\n".join(lines)


def _draw(grid, path):
    """The grid whole, near the airfoil, at the leading edge and at the trailing edge."""
    from tachyflow.io.figures import new_subplots, save_figure

    figure, axes = new_subplots(2, 2, figsize=(11, 9))
    views = [
        ("whole grid", None),
        ("near field", (-0.6, 1.6, -0.8, 0.8)),
        ("leading edge", (-0.03, 0.05, -0.04, 0.04)),
        ("trailing edge", (0.96, 1.04, -0.04, 0.04)),
    ]
    for axis, (title, box) in zip(axes.ravel(), views, strict=True):
        axis.plot(grid.x, grid.y, color="0.25", linewidth=0.35)
        axis.plot(grid.x.T, grid.y.T, color="0.25", linewidth=0.35)
        i0, i1 = grid.wall
        axis.plot(grid.x[i0 : i1 + 1, 0], grid.y[i0 : i1 + 1, 0], color="C3", linewidth=1.2)
        if box is not None:
            axis.set_xlim(box[0], box[1])
            axis.set_ylim(box[2], box[3])
        axis.set_aspect("equal")
        axis.set_title(f"{grid.name}, {grid.cells[0]} x {grid.cells[1]} cells: {title}")
    return save_figure(figure, path, dpi=80)
