"""What the flow solvers on pencils share: the layout of their pieces, their summary and
their phases (the Cartesian :mod:`~tachyflow.solvers.incompressible` and the cylindrical
:mod:`~tachyflow.solvers.cylindrical` solver)."""

from __future__ import annotations

import numpy as np

from tachyflow.io.checkpoint import PieceLayout
from tachyflow.solvers.base import Solver


class PencilSolver(Solver):
    """A :class:`Solver` whose fields are y-pencils of ``self.decomposition``, with a
    ``self.poisson`` (a :class:`~tachyflow.solvers.poisson.PoissonSolver`) and a
    ``self.timer`` (a :class:`~tachyflow.solvers.poisson.PhaseTimer` with the phases
    ``implicit``, ``advection`` and ``diffusion``)."""

    def coordinates(self, component: str):
        """Broadcastable coordinates along axes 0, 1, 2 (x, y, z, or x, r, θ) of this
        rank's points of ``"u"``, ``"v"``, ``"w"`` (each half a cell up along its own
        axis) or ``"p"`` (cell centres)."""
        pencil, grid = self.decomposition.pencils["y"], self.grid
        first = (np.arange(pencil.start[0], pencil.stop[0]) + 0.5) * grid.spacing_x
        third = (np.arange(pencil.start[2], pencil.stop[2]) + 0.5) * grid.spacing_z
        second = grid.centres_y
        if component == "u":
            first = first + 0.5 * grid.spacing_x
        elif component == "v":
            second = grid.faces_y[1:]
        elif component == "w":
            third = third + 0.5 * grid.spacing_z
        elif component != "p":
            raise ValueError(f"component must be 'u', 'v', 'w' or 'p', got {component!r}")
        return first[:, None, None], second[None, :, None], third[None, None, :]

    def step(self, dt: float) -> None:
        """Advance one time step of size ``dt``: the three substeps of the low-storage RK3
        (``self._substep(dt, stage)``) (collective)."""
        if not dt > 0:
            raise ValueError(f"time step must be positive, got {dt!r}")
        for stage in range(3):
            self._substep(dt, stage)
        self.time += dt
        self.steps += 1

    def _add_flow_rate_force(self, alpha_dt: float, response: np.ndarray) -> None:
        """Add the uniform streamwise force that brings the bulk velocity back to its target
        (collective): ``response`` is the velocity a unit force adds in the substep (through
        the implicit wall-normal operator), shape ``(1, ny, 1)``. The force is kept in
        ``pressure_gradient`` (``-dp/dx``)."""
        mean_response = float(np.dot(response.ravel(), self.grid.volume_weights_y))
        force = (self.forcing.value - self.bulk_velocity()) / (alpha_dt * mean_response)
        self.halo.interior(self.u)[...] += alpha_dt * force * response
        self.pressure_gradient = force

    def piece_layout(self) -> PieceLayout:
        """This rank's y-pencil in the global grid."""
        pencil = self.decomposition.pencils["y"]
        return PieceLayout(self.decomposition.global_shape, pencil.start, pencil.shape)

    def layout(self) -> dict:
        """Grid and process grid."""
        return {
            "grid": list(self.decomposition.global_shape),
            "proc_grid": list(self.decomposition.proc_grid),
        }

    def phase_seconds(self) -> dict[str, float]:
        """FFT, transposes, tridiagonal solves (pressure and implicit viscous terms),
        advection and diffusion time of the steps so far (this rank)."""
        poisson = self.poisson.timer.seconds
        return {
            "fft": poisson["fft"],
            "transposes": poisson["transpose"],
            "tdma": poisson["tdma"] + self.timer.seconds["implicit"],
            "advection": self.timer.seconds["advection"],
            "diffusion": self.timer.seconds["diffusion"],
        }

    def free(self) -> None:
        """Release the Poisson solver's communicators (collective)."""
        self.poisson.free()
