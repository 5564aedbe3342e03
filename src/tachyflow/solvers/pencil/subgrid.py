"""The subgrid-scale stress of a large-eddy simulation on the pencil solvers.

:class:`SubgridStress` owns the eddy viscosity ν_t (a ghosted array beside the velocity):
each substep it computes ν_t at the owned cell centres from the velocity (Smagorinsky
with van Driest's damping, Vreman, WALE, and Park, Lee, Lee & Choi's dynamic global
coefficient of Vreman's form), sets it to zero inside immersed bodies (the forcing's
velocity is no flow to model), fills its ghosts (periodic images by the halo exchange;
at a wall the mirror with the opposite sign, so that ν_t is zero on the wall's edges; at
an open x end a copy) and adds the divergence of ``2 ν_t S_ij`` to the explicit terms of
the RK3 substep; the molecular viscosity stays implicit as without a model. Its two
kinds hold the grid's kernels: :class:`CartesianSubgridStress`
(:mod:`tachyflow.numerics.eddy_viscosity`) and :class:`CylindricalSubgridStress`
(:mod:`tachyflow.numerics.cylindrical_eddy_viscosity`, the frame's rotation added back).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import numpy as np

from tachyflow.numerics import cylindrical_eddy_viscosity, eddy_viscosity

#: RK3's stability bound on the negative real axis (explicit diffusion).
RK3_DIFFUSION_LIMIT = 2.51


class SubgridStress(ABC):
    """An eddy-viscosity model's stress on one pencil solver's velocity (the grid's
    kernels are its subclasses').

    Parameters
    ----------
    solver : PencilSolver
        The solver whose ``halo``, ``grid``, ``metrics``, spacings, ``viscosity``,
        ``velocity_arrays()``, ``inflow`` and ``decomposition`` it uses.
    model : str
        One of :attr:`MODELS`.
    constant : float or None
        The model's constant (None: its default, :data:`~tachyflow.numerics.eddy_viscosity.
        CONSTANTS`).
    van_driest : bool
        Smagorinsky's damping near walls (with walls only).
    identity : {"germano", "equilibrium"}
        The global identity of the dynamic model's coefficient
        (:func:`~tachyflow.numerics.eddy_viscosity.dynamic_coefficient`).

    Notes
    -----
    :meth:`add_to`, :meth:`statistics` and :meth:`time_step_limit` are collective over the
    solver's decomposition; :meth:`owned` is local.
    """

    #: The models: the algebraic ones and the dynamic global-coefficient one.
    MODELS = (*eddy_viscosity.MODELS, "dynamic-global")

    def __init__(self, solver, model: str, constant: float | None = None,
                 van_driest: bool = True, identity: str = "germano"):
        if model not in self.MODELS:
            raise ValueError(f"model must be one of {self.MODELS}, got {model!r}")
        if identity not in eddy_viscosity.IDENTITIES:
            raise ValueError(f"identity must be one of {eddy_viscosity.IDENTITIES}, got "
                             f"{identity!r}")
        self.identity = identity
        if constant is not None and not (math.isfinite(constant) and constant >= 0):
            raise ValueError(f"constant must be a number >= 0, got {constant!r}")
        self.model, self.constant = model, constant
        self.solver = solver
        self.nu = solver.halo.allocate()
        self._owned = np.empty(solver.halo.interior(self.nu).shape)
        self._damped = van_driest and model == "smagorinsky" and self.has_walls()
        # The dynamic model's filtered parts (ghosted), made at its first substep.
        self._parts = None
        self.coefficient = constant  # the dynamic model's C_v of the last substep
        pencil = solver.decomposition.pencils["y"]
        open_x = solver.inflow is not None
        self._x_ends = (open_x and pencil.start[0] == 0,
                        open_x and pencil.stop[0] == solver.grid.shape[0])
        # Σ_m 4/Δ_m² of each owned row, for the explicit stress's time-step limit.
        widths = self.cell_widths()
        self._inverse_squares = 4.0 * np.sum(1.0 / widths**2, axis=1)

    # -- the grid's kernels (the subclasses') ------------------------------------------------

    @abstractmethod
    def has_walls(self) -> bool:
        """Whether the grid has walls in y (r) for van Driest's damping."""

    @abstractmethod
    def cell_widths(self) -> np.ndarray:
        """The cells' three widths per owned y (r) row, shape ``(ny, 3)``."""

    @abstractmethod
    def wall_shear(self) -> float:
        """The mean wall shear stress now, for van Driest's damping (collective)."""

    @abstractmethod
    def compute(self, model: str, constant: float | None, damping, out) -> None:
        """ν_t of ``model`` at the owned centres into ``out``."""

    @abstractmethod
    def parts(self, parts: np.ndarray) -> None:
        """The dynamic model's parts at the owned centres into ``parts``."""

    @abstractmethod
    def sums(self, parts: np.ndarray, fluid) -> np.ndarray:
        """This rank's shares of the dynamic model's two global sums."""

    @abstractmethod
    def mirror_walls(self, nu: np.ndarray) -> None:
        """ν_t's ghosts beyond the walls in y (r): the opposite sign (zero on the walls)."""

    @abstractmethod
    def add_divergence(self, nu: np.ndarray, explicit: np.ndarray) -> None:
        """``explicit += ∇·(2 ν_t S)`` at the owned faces."""

    # -- the substep -------------------------------------------------------------------------

    def _damping(self) -> np.ndarray | None:
        """van Driest's factor per owned y row, from the mean friction velocity now."""
        if not self._damped:
            return None
        shear = abs(self.wall_shear())
        friction = math.sqrt(shear) if shear > 0 else 0.0
        # y is whole in the y-pencils the velocity lives in.
        return eddy_viscosity.van_driest(self.solver.grid.wall_distances_y, friction,
                                         self.solver.viscosity)

    def add_to(self, explicit: np.ndarray, fluid: np.ndarray | None = None,
               first: bool = True) -> None:
        """``explicit[a] += (∇·(2 ν_t S))_a`` at the owned faces, ν_t from the velocity
        now (collective); ``fluid`` (owned cells, bool) where ν_t is kept, if given. The
        dynamic model's coefficient is computed at the ``first`` substep of each step and
        kept for the other two (as Park et al. update it once a time step)."""
        solver = self.solver
        if self.model == "dynamic-global":
            if first or self.coefficient is None:
                self.coefficient = self._dynamic_coefficient(fluid)
            model, constant = "vreman", self.coefficient
        else:
            model, constant = self.model, self.constant
        self.compute(model, constant, self._damping(), self._owned)
        if fluid is not None:
            self._owned *= fluid
        solver.halo.interior(self.nu)[...] = self._owned
        solver.halo.exchange(self.nu)
        self.mirror_walls(self.nu)
        if self._x_ends[0]:
            self.nu[0] = self.nu[1]
        if self._x_ends[1]:
            self.nu[-1] = self.nu[-2]
        self.add_divergence(self.nu, explicit)

    def _dynamic_coefficient(self, fluid) -> float:
        """Park et al.'s C_v of the velocity now, from sums over every rank (collective)."""
        solver = self.solver
        if self._parts is None:
            self._parts = np.stack([solver.halo.allocate()
                                    for _ in range(eddy_viscosity.PARTS)])
        self.parts(self._parts)
        solver.halo.exchange(*self._parts)
        sums = solver.decomposition.sum_arrays(self.sums(self._parts, fluid))
        return eddy_viscosity.dynamic_coefficient(sums, solver.viscosity, self.identity)

    def owned(self) -> np.ndarray:
        """ν_t at this rank's cell centres (as of the last substep)."""
        return self._owned

    def time_step_limit(self) -> float:
        """The largest Δt at which RK3 keeps the explicit subgrid stress of the last ν_t
        stable, ``2.51 / max(ν_t Σ_m 4/Δ_m²)`` over the cells (inf before the first
        substep; collective)."""
        owned = self._owned
        largest = owned.max(axis=(0, 2), initial=0.0) if owned.size else np.zeros(1)
        rate = float(np.max(largest * self._inverse_squares, initial=0.0)) if owned.size else 0
        rate = self.solver.decomposition.maximum(rate)
        return RK3_DIFFUSION_LIMIT / rate if rate > 0 else math.inf

    def statistics(self) -> dict:
        """The volume mean and the largest ν_t / ν (collective)."""
        solver = self.solver
        largest = solver.decomposition.maximum(float(self._owned.max(initial=0.0)))
        statistics = {
            "eddy_viscosity_ratio": solver.volume_average(self._owned) / solver.viscosity,
            "max_eddy_viscosity_ratio": largest / solver.viscosity,
        }
        if self.model == "dynamic-global":
            statistics["dynamic_coefficient"] = self.coefficient
        return statistics


class CartesianSubgridStress(SubgridStress):
    """:class:`SubgridStress` on the Cartesian staggered grid: the dynamic model's test
    filter along x, z and a periodic y (not across walls)."""

    def has_walls(self) -> bool:
        return self.solver.walls

    def cell_widths(self) -> np.ndarray:
        solver = self.solver
        width = solver.grid.widths_y
        # The narrowest x cell for every row: the time-step limit's (conservative) share.
        dx = solver.grid.widths_x.min()
        return np.stack([np.full_like(width, dx), width, np.full_like(width, solver.dz)],
                        axis=1)

    def wall_shear(self) -> float:
        return self.solver.wall_shear()

    def compute(self, model, constant, damping, out) -> None:
        solver = self.solver
        eddy_viscosity.eddy_viscosity(*solver.velocity_arrays(), solver.metrics, solver.x_metrics,
                                      solver.dz, model, out, constant, damping)

    def parts(self, parts) -> None:
        solver = self.solver
        eddy_viscosity.vreman_parts(*solver.velocity_arrays(), solver.metrics, solver.x_metrics,
                                    solver.dz, parts)

    def sums(self, parts, fluid) -> np.ndarray:
        solver = self.solver
        filtered = (True, not solver.walls, True)
        return eddy_viscosity.global_sums(parts, solver.metrics, solver.x_metrics, solver.dz,
                                          filtered, fluid)

    def mirror_walls(self, nu) -> None:
        if self.solver.walls:
            nu[:, 0, :] = -nu[:, 1, :]
            nu[:, -1, :] = -nu[:, -2, :]

    def add_divergence(self, nu, explicit) -> None:
        solver = self.solver
        eddy_viscosity.add_stress_divergence(*solver.velocity_arrays(), nu, solver.metrics,
                                             solver.x_metrics, solver.dz, explicit)


class CylindricalSubgridStress(SubgridStress):
    """:class:`SubgridStress` on the cylindrical grid of the rotating-frame solver: ν_t of
    the inertial velocity gradient (the same in any frame), the dynamic model's test filter
    along x and θ; van Driest's damping from the distance to the nearest wall and the outer
    wall's friction velocity (of its whole stress, axial and azimuthal)."""

    def __init__(self, solver, *options):
        self.rows = cylindrical_eddy_viscosity.CylindricalRows(solver.metrics,
                                                               solver.grid.through_axis)
        super().__init__(solver, *options)

    def has_walls(self) -> bool:
        return True

    def cell_widths(self) -> np.ndarray:
        solver, grid = self.solver, self.solver.grid
        width = grid.widths_y
        dx = grid.widths_x.min()  # (as on the Cartesian grid)
        return np.stack([np.full_like(width, dx), width, grid.centres_y * solver.dt_theta],
                        axis=1)

    def wall_shear(self) -> float:
        # The outer wall's stress, axial and azimuthal (a swirling flow's is both).
        axial, _, torque = self.solver._wall_stresses()
        return math.hypot(axial, torque / (2 * math.pi * self.solver.grid.radius**2))

    def compute(self, model, constant, damping, out) -> None:
        solver = self.solver
        cylindrical_eddy_viscosity.eddy_viscosity(
            *solver.velocity_arrays(), self.rows, solver.x_metrics, solver.dt_theta,
            solver.rotation, model, out, constant, damping)

    def parts(self, parts) -> None:
        solver = self.solver
        cylindrical_eddy_viscosity.vreman_parts(
            *solver.velocity_arrays(), self.rows, solver.x_metrics, solver.dt_theta,
            solver.rotation, parts)

    def sums(self, parts, fluid) -> np.ndarray:
        solver = self.solver
        return cylindrical_eddy_viscosity.global_sums(
            parts, self.rows, solver.x_metrics, solver.dt_theta, (True, False, True), fluid)

    def mirror_walls(self, nu) -> None:
        nu[:, -1, :] = -nu[:, -2, :]  # the outer wall (no-slip or slip: no stress on it)
        if self.solver.grid.through_axis:  # never weighted (r = 0): finite
            nu[:, 0, :] = nu[:, 1, :]
        else:
            nu[:, 0, :] = -nu[:, 1, :]

    def add_divergence(self, nu, explicit) -> None:
        solver = self.solver
        cylindrical_eddy_viscosity.add_stress_divergence(
            *solver.velocity_arrays(), nu, self.rows, solver.x_metrics, solver.dt_theta, explicit)
