"""The rule table of tachyflow's layers: which room may import which, and which may import MPI.

A room is a top-level module or package of ``tachyflow`` (``__init__`` is the package's own
module). Rooms sit in layers, top to bottom (:data:`LAYERS`); a room imports only rooms of
the layers below its own, except the imports along one row that :data:`SIDE_IMPORTS` allows,
each with its reason. ``numerics`` never imports MPI, ``parallel`` moves data, and one
object owns each communicator: ``mpi4py`` is imported only where :data:`MPI_IMPORTERS`
says, and the drivers in :data:`THROUGH_PARALLEL` send no message on a communicator
themselves. ``tests/unit/test_layers.py`` checks the package's import graph against this
table, and ``docs/architecture.md`` shows :func:`drawing`, which the test compares with it.

This module is MPI-free and imports nothing of tachyflow.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True)
class Room:
    """A top-level module or package of ``tachyflow``, with what the drawing says of it."""

    name: str
    caption: str = ""
    package: bool = False


@dataclass(frozen=True)
class Layer:
    """A row of the drawing: its rooms, left to right."""

    name: str
    rooms: tuple[Room, ...]


@dataclass(frozen=True)
class SideImport:
    """Rooms of one row (``importers``) that may import another of that row, and why."""

    importers: tuple[str, ...]
    imported: str
    reason: str


LAYERS = (
    Layer("entry", (
        Room("cli", "parse, -n self-launch, one-line errors"),
        Room("__main__", "python -m tachyflow"),
    )),
    Layer("commands", (
        Room("commands", "one module per command, registered by name; commands/bench/: "
             "benchmarks (+ suite, report)", package=True),
    )),
    Layer("drivers", (
        Room("simulation", "the time loop"),
        Room("observers", "statistics, checkpoints, images, fields, visualisation, "
             "acoustics, yours", package=True),
        Room("bench", "harness, results, plots, report: the measurements behind every "
             "bench command", package=True),
    )),
    Layer("setup", (Room("config", "case files -> frozen dataclasses"),)),
    Layer("domain", (
        Room("solvers", "base: Solver + registry; pencil/, compressible/, unstructured/",
             package=True),
        Room("acoustics", "FW-H", package=True),
        Room("insitu", "visualisation, transit/", package=True),
        Room("programs", "NPB, HPL", package=True),
    )),
    Layer("support", (
        Room("io", "files, meshes, series", package=True),
        Room("collectives", "schedules, simulator, executor", package=True),
        Room("models", "Hockney, LogGP, machine profiles", package=True),
    )),
    Layer("movement", (
        Room("parallel", "pencils, transposes, halos, unstructured halos, noise-source "
             "exchange, agreement", package=True),
    )),
    Layer("kernels", (
        Room("numerics", "MPI-free: TDMA, FFT, stencils, FV, Krylov, FW-H", package=True),
    )),
    Layer("base", (
        Room("runtime", "launch, threads, console, abort"),
        Room("cluster", "emulated nodes"),
        Room("plugins", "users' modules, loaded by each registry"),
        Room("registry"),
        Room("options", "case tables -> dataclasses"),
        Room("errors"),
        Room("units"),
        Room("layers", "this table"),
        Room("__init__", "version, one thread per rank"),
    )),
)

SIDE_IMPORTS = (
    SideImport(("__main__",), "cli", "python -m tachyflow is the tachyflow command"),
    SideImport(("simulation",), "observers", "the time loop calls the observers"),
    SideImport(("collectives",), "models",
               'algo="auto" prices the schedules with the cost models'),
    SideImport(("runtime",), "cluster", "--nodes K launches inside the emulated nodes"),
    SideImport(("runtime", "cluster", "plugins", "options"), "errors",
               "the errors every room raises"),
)

#: Where ``mpi4py`` may be imported: a room, or a module or package inside one, and why.
MPI_IMPORTERS = {
    "runtime": "the MPI lifecycle: start, pinning, abort",
    "parallel": "moves data: owns the communicators and datatypes",
    "collectives.executor": "runs the schedules over MPI",
    "bench": "measures MPI, beside its peers",
    "programs": "MPI programs of their own",
    "commands.info": "reports the MPI library and its thread level",
    "insitu.transit": "the aggregation's messages follow SST's buffers (DESIGN.md departure)",
}

#: Drivers that reach communicators only through objects of ``parallel`` (a solver's
#: decomposition, ``parallel.agreement``, ``parallel.pieces``): they may hand one on, but
#: call nothing on it but :data:`COMMUNICATOR_QUESTIONS`.
THROUGH_PARALLEL = ("simulation", "observers")
#: What those drivers may call on a communicator themselves: questions, no messages.
COMMUNICATOR_QUESTIONS = ("Get_rank", "Get_size")

#: Columns of the drawing: the layers' names, then the box around the rooms.
LABEL_WIDTH, BOX_WIDTH = 12, 64


def rooms() -> dict[str, Room]:
    """Every room of the table by name, top to bottom."""
    return {room.name: room for layer in LAYERS for room in layer.rooms}


def depth(room: str) -> int:
    """The index of ``room``'s layer, 0 at the top (KeyError for a room not in the table)."""
    for index, layer in enumerate(LAYERS):
        if any(place.name == room for place in layer.rooms):
            return index
    raise KeyError(room)


def may_import(importer: str, imported: str) -> bool:
    """Whether room ``importer`` may import room ``imported``: itself, a room of a lower
    layer, or one of its own row that :data:`SIDE_IMPORTS` allows."""
    if importer == imported or depth(imported) > depth(importer):
        return True
    return any(
        importer in side.importers and imported == side.imported for side in SIDE_IMPORTS
    )


def may_import_mpi(module: str) -> bool:
    """Whether ``module`` (dotted, below ``tachyflow``: ``collectives.executor``) may
    import ``mpi4py``."""
    return any(module == place or module.startswith(f"{place}.") for place in MPI_IMPORTERS)


def drawing() -> str:
    """The layers as ``docs/architecture.md`` draws them: a box of rows, then the imports
    along a row that are allowed and the rooms that may import ``mpi4py``."""
    inner = BOX_WIDTH - 2
    margin = " " * LABEL_WIDTH

    def rule(left: str, right: str) -> str:
        return f"{margin}{left}{'─' * inner}{right}"

    lines = [rule("┌", "┐")]
    for index, layer in enumerate(LAYERS):
        if index:
            lines.append(rule("├", "┤"))
        items = [
            room.name + ("/" if room.package else "")
            + (f" ({room.caption})" if room.caption else "")
            for room in layer.rooms
        ]
        for row, line in enumerate(_packed(items, inner - 2)):
            label = f"  {layer.name}" if row == 0 else ""
            lines.append(f"{label:<{LABEL_WIDTH}}│ {line:<{inner - 2}} │")
    lines.append(rule("└", "┘"))
    lines.append("")
    lines += _legend(
        "same row",
        [f"{', '.join(side.importers)} -> {side.imported}: {side.reason}"
         for side in SIDE_IMPORTS],
    )
    lines += _legend("mpi4py", [f"{place}: {why}" for place, why in MPI_IMPORTERS.items()])
    return "\n".join(lines) + "\n"


def _packed(items: list[str], width: int) -> list[str]:
    """``items`` side by side in lines of ``width``: an item that does not fit on the
    line begins the next one, an item wider than a line is wrapped."""
    lines: list[str] = []
    for item in items:
        pieces = textwrap.wrap(item, width, break_on_hyphens=False)
        if lines and len(pieces) == 1 and len(lines[-1]) + 3 + len(item) <= width:
            lines[-1] += "   " + item
        else:
            lines += pieces
    return lines


def _legend(title: str, entries: list[str]) -> list[str]:
    """``entries`` under ``title``, each wrapped to the drawing's width and indented."""
    lines = []
    for number, entry in enumerate(entries):
        wrapped = textwrap.wrap(entry, BOX_WIDTH, break_on_hyphens=False)
        for row, line in enumerate(wrapped):
            label = f"  {title}" if number == 0 and row == 0 else ""
            indent = "" if row == 0 else "  "
            lines.append(f"{label:<{LABEL_WIDTH}}{indent}{line}")
    return lines
