"""The surface-loads observer: the force and moment on an immersed body from its surface's
traction (pressure and viscous stress sampled off its triangles and integrated,
:class:`tachyflow.solvers.pencil.surface_loads.SurfaceLoads`), in ``surface-loads.csv``: the
second path beside the forcing's ``forces.csv``."""

from __future__ import annotations

import math

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.io.files import AppendedTable
from tachyflow.observers import Observer, register
from tachyflow.solvers.pencil.surface_loads import PROBE_CELLS, SurfaceLoads, cylinder_side

LOADS = ("Fx", "Fy", "Fz", "Mx", "My", "Mz")
SPHERE_SUBDIVISIONS = 4  # an icosphere of 5,120 triangles
CYLINDER_SECTIONS = 256


def _surface(section, body, config):
    """The triangulated surface of the ``[[immersed.body]]`` ``section`` (its shape's own
    mesh, or one made for a sphere or a cylinder along z spanning the periodic z)."""
    import trimesh

    if section.shape == "sphere":
        mesh = trimesh.creation.icosphere(SPHERE_SUBDIVISIONS, radius=section.radius)
        mesh.apply_translation(np.asarray(section.centre, dtype=float))
        return mesh
    if (
        section.shape == "cylinder"
        and not section.hollow
        and np.allclose(np.abs(section.axis), (0.0, 0.0, 1.0))
    ):
        span = float(config.grid.lengths[2])
        centre = (section.centre[0], section.centre[1], 0.5 * span)
        return cylinder_side(centre, section.radius, span, CYLINDER_SECTIONS)
    if section.shape == "surface":
        return body.mesh
    raise ConfigError(
        f"{config.source}: [observers.surface-loads] body {section.name!r}: a surface is "
        f"made for spheres, solid cylinders along z and surface files, not a "
        f"{'hollow ' if section.hollow else ''}{section.shape!r} along {section.axis!r}"
    )


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

    def __init__(self, config, body: str = "", probe_cells: float = PROBE_CELLS):
        found = [section for section in config.immersed.body if section.name == body]
        if len(found) != 1 or config.case.solver != "incompressible":
            raise ConfigError(
                f"{config.source}: [observers.surface-loads] body must name one "
                f"[[immersed.body]] on the incompressible solver, got {body!r}"
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
        mesh = _surface(self.section, body, self.config)
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
