"""The surface-loads observer: the force and moment on an immersed body from its surface's
traction (pressure and viscous stress sampled off its triangles and integrated,
:class:`tachyflow.solvers.pencil.surface_loads.SurfaceLoads`), in ``surface-loads.csv``: the
second path beside the forcing's ``forces.csv``."""

from __future__ import annotations

import math

from tachyflow.errors import ConfigError
from tachyflow.io.files import AppendedTable
from tachyflow.observers import Observer, register
from tachyflow.solvers.base import CARTESIAN_GRID, IMMERSED_BODIES
from tachyflow.solvers.pencil.bodies import shape_class
from tachyflow.solvers.pencil.surface_loads import PROBE_CELLS, SurfaceLoads

LOADS = ("Fx", "Fy", "Fz", "Mx", "My", "Mz")


@register
class SurfaceLoadsObserver(Observer):
    """Force and moment (about the origin) on the ``[[immersed.body]]`` named ``body``
    from its surface's traction, every ``[immersed] forces_every`` steps and after the
    last: ``surface-loads.csv`` (``step``, ``time``, ``Fx`` ... ``Mz``). Turned on by
    ``[observers.surface-loads]`` with ``body`` and, optionally, ``probe_cells`` (how far
    out the first probe is, in cells; default 1.5). Cartesian incompressible solver,
    bodies at rest or rotating in place. Collective."""

    name = "surface-loads"
    needs_config = True
    needs = frozenset({CARTESIAN_GRID, IMMERSED_BODIES})

    def __init__(self, config, body: str = "", probe_cells: float = PROBE_CELLS):
        found = [section for section in config.immersed.body if section.name == body]
        if len(found) != 1:
            raise ConfigError(
                f"{config.source}: [observers.surface-loads] body must name one "
                f"[[immersed.body]], got {body!r}"
            )
        if found[0].motion != "rigid":
            raise ConfigError(
                f"{config.source}: [observers.surface-loads] body {body!r} moves "
                f"({found[0].motion!r}); its surface loads need a body at rest or rotating "
                "in place"
            )
        if isinstance(probe_cells, bool) or not (
            isinstance(probe_cells, int | float) and math.isfinite(probe_cells) and probe_cells > 0
        ):
            raise ConfigError(
                f"{config.source}: [observers.surface-loads] probe_cells must be a positive "
                f"number, got {probe_cells!r}"
            )
        self.config, self.section = config, found[0]
        self.index = [section.name for section in config.immersed.body].index(body)
        self.every = config.immersed.forces_every
        self.probe_cells = float(probe_cells)
        self._loads = self._table = self._last = None

    def start(self, run) -> None:
        body = run.solver.bodies[self.index]
        section = self.section
        try:
            mesh = shape_class(section.shape).surface(section, body, self.config)
        except ValueError as error:
            raise ConfigError(f"{self.config.source}: [observers.surface-loads] body "
                              f"{section.name!r}: {error}") from None
        self._loads = SurfaceLoads(run.solver, body, mesh, self.probe_cells)
        if run.root:
            self._table = AppendedTable(run.output / "surface-loads.csv",
                                        ["step", "time", *LOADS], run.restarted,
                                        run.first_step)

    def observe(self, run) -> None:
        loads = self._loads.loads()
        self._last = run.solver.steps
        if self._table is not None:
            row = {"step": run.solver.steps, "time": run.solver.time}
            self._table.append(row | dict(zip(LOADS, map(float, loads), strict=True)))

    def finish(self, run) -> None:
        if self._last != run.solver.steps:
            self.observe(run)
        self.close(run)

    def close(self, run) -> None:
        self._table = AppendedTable.closed(self._table)
        if self._loads is not None:
            self._loads.free()
            self._loads = None
