"""Incompressible Navier–Stokes in a rotating cylindrical frame (x, r, θ), on the pencils of
the Cartesian solver: the flow solver of the axial fan of Kwon, Park & Choi.

The fields live on a :class:`~tachyflow.numerics.cylindrical_grid.CylindricalGrid` as
ghosted y-pencils (r whole on every rank), with the unknowns of Verzicco & Orlandi (1996):
``u`` (axial), ``q = r u_r`` and ``w`` (azimuthal), stencils in
:mod:`~tachyflow.numerics.cylindrical_stencils`. A time step is three substeps of the
low-storage RK3 of the Cartesian solver, each:

1. explicit terms: advection, Coriolis, the axial viscous terms and the viscous couplings
   of ``u_r`` and ``u_θ`` (``∓ (2/r²) ∂/∂θ``), forcing;
2. Crank–Nicolson for the radial and azimuthal viscous terms, factorised (Akselvoll &
   Moin): a tridiagonal solve along r on the y-pencils, then a cyclic one along θ on the
   z-pencils (the θ direction is implicit everywhere, not only in a core region, since
   ``r Δθ`` vanishes at the axis);
3. projection with the FFT (x, θ) / TDMA (r) :class:`PoissonSolver`, which inverts the
   discrete divergence of the discrete gradient, so the velocity is divergence-free to
   round-off;
4. constant flow rate: a uniform axial force restores the bulk velocity.

Walls: no-slip at the outer radius and at the hub of an annulus, each turning at its own
angular velocity in the inertial frame (``-Ω r`` relative to a frame turning at ``Ω``).
The axis needs only ``ω_x`` there, from the circulation of the first ring of cells.

In x the domain is periodic, or open (:class:`Inflow`): a prescribed profile enters at
``x = 0`` and the axial velocity leaves through a convective outflow at ``x = L``,
``∂u/∂t + U ∂u/∂x = 0`` with ``U`` the bulk velocity (advanced by the same RK3), ``u_r``
and ``u_θ`` with zero gradient there. Before every projection a uniform correction of the
outflow velocity makes the outflow equal the inflow (so the Poisson problem, with zero
pressure gradient at both ends, is solvable); the boundary faces are not projected.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Collection

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.numerics import cylindrical_stencils as stencils
from tachyflow.numerics import immersed, reductions
from tachyflow.numerics import stencils as cartesian_stencils
from tachyflow.numerics.cylindrical_grid import CylindricalGrid
from tachyflow.numerics.runge_kutta import RK3_GAMMA, RK3_RHO, rk3_increment
from tachyflow.numerics.tdma import FactoredPeriodicDiffusion, FactoredTridiagonal
from tachyflow.parallel import HaloExchange, PencilDecomposition, Transposer
from tachyflow.parallel.transpose import TransposeRequest, pipelined
from tachyflow.solvers.base import register
from tachyflow.solvers.pencil import options
from tachyflow.solvers.pencil.base import Inflow, PencilSolver
from tachyflow.solvers.pencil.incompressible import Forcing
from tachyflow.solvers.pencil.poisson import PoissonSolver
from tachyflow.solvers.pencil.subgrid import CylindricalSubgridStress
from tachyflow.solvers.phase_clock import PhaseClock

# Where its transposes may overlap computation ([parallel] overlap).
OVERLAP_PLACES = ("poisson", "theta")


@register("cylindrical")
class CylindricalSolver(PencilSolver):
    """Incompressible flow in a pipe or annulus, in a frame rotating about its axis.

    Parameters
    ----------
    decomposition : PencilDecomposition
        Over the grid's (x, r, θ) shape, periodic in x and θ.
    grid : CylindricalGrid
        Geometry.
    viscosity : float
        Kinematic viscosity ν > 0.
    rotation : float
        Angular velocity Ω of the frame about x.
    wall_rotation : (float, float)
        Angular velocities of the inner (hub; ignored through the axis) and outer walls in
        the inertial frame.
    forcing : Forcing, optional
        Axial mean-flow forcing (none with an inflow).
    inflow : Inflow, optional
        The inflow of a grid open in x (``grid.periodic_x`` false), required there.
    outer_wall : {"no-slip", "slip"}
        The outer wall: no slip (turning at its rotation), or stress-free (a far boundary).
    theta_core_radius : float
        0: the azimuthal viscous terms are implicit at every radius; > 0: only in the core
        ``r < theta_core_radius`` (Akselvoll & Moin's split, where ``r Δθ`` is small) and
        explicit beyond, where the time step allows it.
    overlap : collection of {"theta", "poisson"}
        Where transposes overlap computation. ``"theta"``: the θ solves (``p_col > 1``),
        one component travelling between y- and z-pencils while another is computed, the
        same results bit for bit (attribute ``theta_overlap``); ``"poisson"``: the Poisson
        solve's (``PoissonSolver(overlap)``, attribute ``overlap``), the same to
        round-off. Both attributes may be changed between steps; ``progress_calls``
        (False) makes MPI test the pending transfers between stages.
    subgrid : tuple, optional
        ``(model, constant, van_driest)`` of a large-eddy simulation: the eddy-viscosity
        model's stress (:class:`~tachyflow.solvers.pencil.subgrid.CylindricalSubgridStress`)
        added to the explicit terms, ν_t among the cell fields (``"nu_t"``) and its mean
        and largest ratio to ν in the statistics.

    Notes
    -----
    Construction, :meth:`step`, :meth:`statistics`, :meth:`stable_time_step`,
    :meth:`set_velocity`, :meth:`restore_state` and :meth:`free` are collective.
    ``cell_field("v")`` is the radial velocity ``u_r``, ``"w"`` the azimuthal one.
    """

    fields = ("u", "v", "w", "p")
    case_options = options.CYLINDRICAL
    statistics_columns = (
        "step", "time", "dt", "cfl", "kinetic_energy", "bulk_velocity", "wall_shear",
        "inner_torque", "outer_torque", "pressure_gradient", "max_divergence",
    )
    # As the Cartesian solver, with the three θ-pencils of the pipelined θ solves.
    BYTES_PER_CELL, BASE_BYTES = 156, 300 * 2**20

    @classmethod
    def memory_per_rank(cls, config, ranks: int) -> tuple[int, int]:
        """Estimated bytes per rank and on rank 0."""
        each = cls.BASE_BYTES + cls.BYTES_PER_CELL * -(-math.prod(config.grid.cells) // ranks)
        each += config.grid.x_zone_bytes()
        return each, each + 100 * 2**20

    @classmethod
    def from_case(cls, config, comm, planning: str = "measure") -> CylindricalSolver:
        """The solver of ``[grid] cells``, ``[cylinder]``, ``[flow]``, ``[les]`` and
        ``[immersed]`` (collective)."""
        cylinder, flow = config.cylinder, config.flow
        open_x = config.grid.x_boundaries == "inflow-outflow"
        grid = CylindricalGrid(
            config.grid.cells,
            cylinder.length,
            cylinder.radius,
            cylinder.inner_radius,
            cylinder.sectors,
            cylinder.stretching,
            periodic_x=not open_x,
            clustering=cylinder.clustering,
            x_zone=(*config.grid.x_zone, config.grid.x_zone_cells)
            if config.grid.x_zone_cells else None,
        )
        proc_grid = None if config.parallel.proc_grid == (0, 0) else config.parallel.proc_grid
        decomposition = PencilDecomposition(
            config.grid.cells, proc_grid, comm, periodic=(not open_x, False, True)
        )
        solver = cls(
            decomposition,
            grid,
            flow.viscosity,
            cylinder.rotation,
            (cylinder.inner_wall_rotation, cylinder.outer_wall_rotation),
            Forcing(flow.forcing, flow.forcing_value),
            planning=planning,
            inflow=Inflow.from_case(config) if open_x else None,
            theta_core_radius=cylinder.theta_core_radius,
            outer_wall=cylinder.outer_wall,
            overlap=tuple(config.parallel.overlap),
            subgrid=config.les.subgrid(),
        )
        _set_initial_condition(config, solver)
        solver.immerse_case_bodies(config)
        return solver

    def __init__(
        self,
        decomposition: PencilDecomposition,
        grid: CylindricalGrid,
        viscosity: float,
        rotation: float = 0.0,
        wall_rotation: tuple[float, float] = (0.0, 0.0),
        forcing: Forcing | None = None,
        planning: str = "measure",
        inflow: Inflow | None = None,
        theta_core_radius: float = 0.0,
        outer_wall: str = "no-slip",
        overlap: Collection[str] = ("theta",),
        subgrid: tuple | None = None,
    ):
        if not viscosity > 0:
            raise ValueError(f"viscosity must be positive, got {viscosity!r}")
        if grid.shape[2] == 2:
            raise ValueError("a cylindrical grid needs 1 (axisymmetric) or >= 3 cells in θ")
        if tuple(decomposition.global_shape) != tuple(grid.shape):
            raise ValueError(
                f"decomposition shape {decomposition.global_shape} differs from grid shape "
                f"{grid.shape}"
            )
        if outer_wall not in ("no-slip", "slip"):
            raise ValueError(f"outer_wall must be 'no-slip' or 'slip', got {outer_wall!r}")
        self.slip_outer = outer_wall == "slip"
        self.decomposition = decomposition
        self.grid = grid
        self.viscosity = float(viscosity)
        self.rotation = float(rotation)
        inner, outer = (float(value) for value in wall_rotation)
        # Wall speeds in the rotating frame: u_θ = (ω_wall - Ω) r.
        self.wall_speed = ((inner - self.rotation) * grid.inner_radius,
                           (outer - self.rotation) * grid.radius)
        self.forcing = forcing or Forcing()
        # No swirl in the inertial frame: u_θ = -Ω r in the frame.
        self._set_up_inflow(inflow, -self.rotation * grid.centres_y[:, None])
        self.halo = HaloExchange(decomposition, "y", width=1, corners=True)
        self.transposer = Transposer(decomposition, np.float64)
        if isinstance(overlap, str) or not set(overlap) <= set(OVERLAP_PLACES):
            raise ValueError(
                f"overlap must be a collection of {OVERLAP_PLACES} names, got {overlap!r}"
            )
        self.theta_overlap = "theta" in overlap
        self.u, self.q, self.w, self.p = (self.halo.allocate() for _ in range(4))
        self.potential = self.halo.allocate()  # a projection's, summed into p by the step
        self.poisson = PoissonSolver(
            decomposition, grid, self.transposer, planning=planning,
            overlap="poisson" in overlap, solution=self.halo.interior(self.potential),
        )
        self.timer = PhaseClock()
        self.metrics = stencils.RadialMetrics.from_grid(grid)
        pencil = decomposition.pencils["y"]
        # The x spacings of this rank's cells (uniform or refined round a zone).
        self.x_metrics = cartesian_stencils.XMetrics.from_grid(
            grid, pencil.start[0], pencil.stop[0]
        )
        self.dt_theta = grid.spacing_z
        self.time = 0.0
        self.steps = 0
        self._previous = None
        self.pressure_gradient = (
            self.forcing.value if self.forcing.kind == "pressure-gradient" else 0.0
        )
        # Work arrays of the owned points, kept (fresh large arrays cost page faults every
        # substep): the explicit terms of this substep and of the previous one, in turn,
        # the implicit terms (then the increments).
        owned = decomposition.local_shape("y")
        self._explicit_terms = (np.empty((3, *owned)), np.empty((3, *owned)))
        self._implicit_terms = np.empty((3, *owned))
        self._bands = stencils.radial_bands(grid, self.slip_outer)
        self._implicit_cache: dict[tuple, tuple] = {}
        # Radii of the θ-lines on this rank's z-pencil: of u and w, of q (for the θ solves).
        z_pencil = decomposition.pencils["z"]
        rows = slice(z_pencil.start[1], z_pencil.stop[1])
        self._theta_radii = (grid.centres_y[rows], grid.faces_y[1:][rows])
        self.theta_whole = decomposition.p_col == 1
        if not (math.isfinite(theta_core_radius) and theta_core_radius >= 0):
            raise ValueError(f"theta_core_radius must be >= 0, got {theta_core_radius!r}")
        nr = grid.shape[1]
        self.core_rows = (
            int(np.count_nonzero(grid.centres_y < theta_core_radius)) if theta_core_radius
            else nr
        )
        rows = np.arange(z_pencil.start[1], z_pencil.stop[1])
        self._theta_implicit = rows < self.core_rows
        self._theta_lines = (
            None if self.theta_whole else tuple(decomposition.zeros("z") for _ in range(3))
        )
        self._set_up_subgrid(CylindricalSubgridStress, subgrid)

    # -- set-up ------------------------------------------------------------------------------

    def set_velocity(self, u, v, w) -> None:
        """Set the owned axial, radial and azimuthal velocity (arrays or callables of the
        coordinates x, r, θ), then project it to be divergence-free (collective)."""
        for name, target, value in (("u", self.u, u), ("v", self.q, v), ("w", self.w, w)):
            coordinates = self.coordinates(name)
            values = value(*coordinates) if callable(value) else value
            values = np.broadcast_to(values, self.decomposition.local_shape("y"))
            self.halo.interior(target)[...] = values * (coordinates[1] if name == "v" else 1)
        self._previous = None
        self._project(1.0, restore_flow_rate=False)

    def velocity_arrays(self):
        """The ghosted u, q = r u_r, w."""
        return self.u, self.q, self.w

    def immersed_points(self, component: str) -> immersed.ComponentPoints:
        """``component``'s ghosted points (x, r cos θ, r sin θ) for immersed bodies: ``v``
        stands for ``q = r u_r``."""
        x, r, theta = np.meshgrid(*self._ghosted_axes(component), indexing="ij")
        zero, one = np.zeros_like(x), np.ones_like(x)
        cos, sin = np.cos(theta), np.sin(theta)
        points = np.stack([x, r * cos, r * sin], axis=-1)
        direction = {
            "u": np.stack([one, zero, zero], axis=-1),
            "v": np.stack([zero, cos, sin], axis=-1),
            "w": np.stack([zero, -sin, cos], axis=-1),
        }[component]
        radial = np.diff(r, axis=1, append=2 * r[:, -1:] - r[:, -2:-1])
        along = np.diff(x, axis=0, append=2 * x[-1:] - x[-2:-1]) if x.size else x
        steps = (along, radial, np.abs(r) * self.grid.spacing_z)
        scale = np.abs(r) if component == "v" else 1.0
        # The control volume along x: a cell, or for u (on x-faces) centre to centre.
        extent = self.x_metrics.gap if component == "u" else self.x_metrics.width
        extent = extent[:, None, None] if len(extent) == x.shape[0] else along
        volume = extent * radial * steps[2]
        return immersed.ComponentPoints(points, steps, direction, scale, volume)

    def step(self, dt: float) -> None:
        """Advance one time step (collective). On an axisymmetric grid (one cell in θ, the
        whole revolution) a body's radial forcing acts all round the axis: its transverse
        force and the moments about the transverse axes cancel, and are set to zero rather
        than read from the one θ cell's direction."""
        super().step(dt)
        if self.grid.shape[2] == 1 and len(self.body_loads):
            self.body_loads[:, [1, 2, 4, 5]] = 0.0  # Fy, Fz, My, Mz

    # -- boundaries --------------------------------------------------------------------------

    def _apply_boundaries(self) -> None:
        """Halo exchange in x and θ, the inflow and outflow values of an open x, then the
        wall and axis values in r."""
        self.halo.exchange(self.u, self.q, self.w)  # one message per neighbour for the three
        if self.inflow is not None:
            self._apply_inflow_and_outflow()
        inner, outer = self.wall_speed
        u, q, w = self.u, self.q, self.w
        if self.slip_outer:  # stress-free: no gradient of u nor of u_θ / r
            centre = self.metrics.centre[0, :, 0]  # the ghost's mirrored across the wall
            u[:, -1, :] = u[:, -2, :]
            w[:, -1, :] = w[:, -2, :] * centre[-1] / centre[-2]
        else:
            u[:, -1, :] = -u[:, -2, :]  # no axial slip at the outer wall
            w[:, -1, :] = 2.0 * outer - w[:, -2, :]
        q[:, 0, :] = 0.0  # no flux through the axis or the hub
        q[:, -2:, :] = 0.0  # the outer wall face and the ghost beyond it
        if self.grid.through_axis:  # values across the axis are never weighted: keep finite
            u[:, 0, :] = u[:, 1, :]
            w[:, 0, :] = w[:, 1, :]
        else:
            u[:, 0, :] = -u[:, 1, :]
            w[:, 0, :] = 2.0 * inner - w[:, 1, :]

    def _axis_vorticity(self):
        """``ω_x`` on the axis per owned x index (None for an annulus) (collective)."""
        if not self.grid.through_axis:
            return None
        ring = self.halo.interior(self.w)[:, 0, :].sum(axis=1)
        total = self.decomposition.sum_across("y", 2, ring)
        mean = total / self.grid.shape[2]
        return stencils.axis_vorticity(mean, self.metrics)

    # -- time stepping -----------------------------------------------------------------------

    def _explicit_and_implicit_terms(self, first: bool = True):
        """(explicit terms of RK3, viscous terms treated by Crank–Nicolson) of u, q, w, each
        one array of shape ``(3, nx, nr, nθ)`` (owned points). ``first``: the step's first
        substep (where a dynamic subgrid model updates its coefficient)."""
        # Not the array holding the previous substep's terms.
        explicit = self._explicit_terms[self._explicit_terms[0] is self._previous]
        with self.timer("advection"):
            stencils.advection(
                self.u, self.q, self.w, self.metrics, self.x_metrics, self.dt_theta, self.rotation,
                out=explicit,
            )
        with self.timer("diffusion"):
            implicit = stencils.add_viscous(
                self.u, self.q, self.w, self.metrics, self.x_metrics, self.dt_theta,
                self._axis_vorticity(), self.core_rows, self.viscosity, explicit,
                self._implicit_terms,
            )
        if self.subgrid is not None:
            with self.timer("subgrid"):
                self.subgrid.add_to(explicit, self._fluid_cells if self._forcing else None,
                                    first)
        if self.forcing.kind == "pressure-gradient":
            explicit[0] += self.forcing.value
        if self.inflow is not None:
            self._outflow_terms(explicit[0])
            if self._owns_outflow:
                implicit[0][-1] = 0.0
        return explicit, implicit

    def _radial_operators(self, alpha_dt: float):
        """``I - α Δt ν/2 L_r`` of u, q and w, factorised (cached per α Δt)."""
        key = ("r", alpha_dt)
        operators = self._implicit_cache.get(key)
        if operators is None:
            factor = -0.5 * alpha_dt * self.viscosity
            operators = []
            for index, (lower, diagonal, upper) in enumerate(self._bands):
                implicit_diagonal = 1.0 + factor * diagonal
                lower, upper = factor * lower, factor * upper
                if index == 1:  # q on the outer wall face stays 0: an identity row
                    implicit_diagonal[-1], lower[-1] = 1.0, 0.0
                operators.append(FactoredTridiagonal(lower, implicit_diagonal, upper))
            operators = self._cache_operators(key, tuple(operators))
        return operators

    def _theta_operators(self, alpha_dt: float):
        """``I - α Δt ν/2 (1/r²) ∂²_θ`` of u, q and w on this rank's z-pencil rows, cyclic,
        the identity beyond the core; factorised (cached per α Δt; u and w share one)."""
        key = ("θ", alpha_dt)
        operators = self._implicit_cache.get(key)
        if operators is None:
            centres, faces = (
                FactoredPeriodicDiffusion(
                    np.where(
                        self._theta_implicit,
                        0.5 * alpha_dt * self.viscosity / (radii**2 * self.dt_theta**2),
                        0.0,
                    ),
                    self.grid.shape[2],
                )
                for radii in self._theta_radii
            )
            operators = (centres, faces, centres)
            operators = self._cache_operators(key, operators)
        return operators

    def _cache_operators(self, key, operators):
        """Keep ``operators`` under ``key``; returns them."""
        if len(self._implicit_cache) > 24:  # Δt changes every step when adaptive
            self._implicit_cache.clear()
        self._implicit_cache[key] = operators
        return operators

    def _substep(self, dt: float, stage: int) -> None:
        gamma, rho = RK3_GAMMA[stage], RK3_RHO[stage]
        alpha = gamma + rho
        explicit, implicit = self._explicit_and_implicit_terms(first=not rho)
        operators = self._radial_operators(alpha * dt)
        theta_operators = self._theta_operators(alpha * dt) if self.grid.shape[2] >= 3 else None
        fields = (self.u, self.q, self.w)
        outflows = [None, None, None]

        def radially_solved(index: int) -> np.ndarray:
            """The RK3 increment of component ``index`` after the radial implicit solve."""
            previous = self._previous[index] if rho else explicit[index]
            increment = rk3_increment(
                dt, gamma, explicit[index], rho, previous, alpha * dt, implicit[index]
            )
            if index == 1:
                increment[:, -1, :] = 0.0  # the outer wall face
            if index == 0 and self.inflow is not None and self._owns_outflow:
                outflows[0] = increment[-1].copy()  # not diffused: the outflow condition
            with self.timer("implicit"):
                operators[index].solve(increment)
            return increment

        def add(index: int) -> None:
            if outflows[index] is not None:
                implicit[index][-1] = outflows[index]
            self.halo.interior(fields[index])[...] += implicit[index]

        if theta_operators is None:
            for index in range(3):
                radially_solved(index)
                add(index)
        elif self.theta_whole:
            for index in range(3):
                increment = radially_solved(index)
                with self.timer("implicit"):
                    theta_operators[index].solve(increment)
                add(index)
        else:
            self._solve_theta_on_z_pencils(radially_solved, theta_operators, implicit, add)
        self._previous = explicit
        self._project(alpha * dt)

    def _solve_theta_on_z_pencils(self, radially_solved, operators, increments, add) -> None:
        """Each component: its radially solved increment to the z-pencils, the θ solve
        there, back into ``increments`` on the y-pencil, then ``add`` (collective over the
        row communicator).

        With ``theta_overlap`` a component's transposes travel while the next one is computed
        (:func:`~tachyflow.parallel.transpose.pipelined`); the arithmetic is the same.
        """
        lines, transposer = self._theta_lines, self.transposer

        def to_z(index: int) -> TransposeRequest:
            return transposer.start(radially_solved(index), "y", "z", out=lines[index])

        def solve_and_back(index: int) -> TransposeRequest:
            with self.timer("implicit"):
                operators[index].solve(lines[index])
            return transposer.start(lines[index], "z", "y", out=increments[index])

        if self.theta_overlap:
            pipelined(3, (to_z, solve_and_back, add), progress=self.progress_calls)
            return
        for index in range(3):
            transposer.transpose(radially_solved(index), "y", "z", out=lines[index])
            with self.timer("implicit"):
                operators[index].solve(lines[index])
            transposer.transpose(lines[index], "z", "y", out=increments[index])
            add(index)

    def _divergence(self, scale: float = 1.0, rows: np.ndarray | None = None) -> np.ndarray:
        """``scale ∇·u`` at the owned cells, in the pressure solve's own array (its
        right-hand side there costs no copy; valid until the next call or solve); with
        ``rows``, the sums of u along θ of each owned row there."""
        return stencils.divergence(
            self.u, self.q, self.w, self.metrics, self.x_metrics, self.dt_theta, scale,
            out=self.poisson.work, rows=rows,
        )

    def _subtract_pressure_gradient(self, factor, shift=None) -> None:
        """``u -= factor ∇φ`` on the owned faces, ``u += shift[r]``, φ's part of the step's
        pressure (:meth:`_pressure_part`)."""
        stencils.subtract_gradient(
            self.u, self.q, self.w, self.potential, self.metrics, self.x_metrics, self.dt_theta,
            factor, shift, *self._pressure_part(factor),
        )

    def _flow_rate_response(self, alpha_dt: float) -> np.ndarray:
        """The axial velocity a unit force adds in a substep, as a pressure gradient would
        act (through the implicit radial operator), so a laminar steady state is the exact
        discrete one."""
        response = np.ones((1, self.grid.shape[1], 1))
        self._radial_operators(alpha_dt)[0].solve(response)
        return response.ravel()

    # -- diagnostics -------------------------------------------------------------------------

    def staggered_fields(self) -> tuple[np.ndarray, ...]:
        """u, q (= r u_r), w at their faces and p at the centres, ghosted (local)."""
        return self.u, self.q, self.w, self.p

    def section_pressures(self, positions) -> np.ndarray:
        """Area-averaged pressure over the cross-sections of cells nearest each x in
        ``positions`` (collective)."""
        pencil = self.decomposition.pencils["y"]
        weights = self.grid.volume_weights_y[:, None]
        pressure = self.halo.interior(self.p)
        sums = np.zeros(len(positions))
        for index, position in enumerate(positions):
            cell = min(int(np.searchsorted(self.grid.faces_x, position, side="right")) - 1,
                       self.grid.shape[0] - 1)
            if pressure.size and pencil.start[0] <= cell < pencil.stop[0]:
                sums[index] = np.sum(pressure[cell - pencil.start[0]] * weights)
        return self.decomposition.sum_arrays(sums) / self.grid.shape[2]

    def section_flow(self, positions) -> dict[str, np.ndarray]:
        """On the cross-sections of cells nearest each x in ``positions`` (collective):
        ``pressure``, the area-averaged static pressure (the solver's reduced pressure of a
        turning frame with the centrifugal part ``Ω² r² / 2`` added back);
        ``total_pressure``, the mass-averaged total pressure in the inertial frame
        (``p + |c|² / 2``, ``c`` the velocity with the frame's ``Ω r`` added to its swirl);
        ``axial_velocity``, the area-averaged u. Kinematic (per unit density)."""
        pencil = self.decomposition.pencils["y"]
        weights = self.grid.volume_weights_y[:, None]
        radii = self.grid.centres_y[:, None]
        sums = np.zeros((len(positions), 3))
        for index, position in enumerate(positions):
            cell = min(int(np.searchsorted(self.grid.faces_x, position, side="right")) - 1,
                       self.grid.shape[0] - 1)
            if not (self.halo.interior(self.p).size
                    and pencil.start[0] <= cell < pencil.stop[0]):
                continue
            local = cell - pencil.start[0]
            plane = (slice(local, local + 1), slice(0, pencil.shape[1]),
                     slice(0, pencil.shape[2]))
            u, v, w, p = (self.cell_field(name, cells=plane)[0] for name in "uvwp")
            static = p + 0.5 * (self.rotation * radii) ** 2
            swirl = w + self.rotation * radii
            total = static + 0.5 * (u * u + v * v + swirl * swirl)
            sums[index] = [np.sum(static * weights), np.sum(u * weights),
                           np.sum(u * total * weights)]
        static, flux, total = (self.decomposition.sum_arrays(sums.ravel()).reshape(sums.shape)
                               / self.grid.shape[2]).T
        return {"pressure": static, "axial_velocity": flux, "total_pressure": total / flux}

    def _convective_rate(self) -> float:
        """max of |u|/Δx + |u_r|/Δr + |u_θ|/(r Δθ) over the cells (collective)."""
        rate = stencils.convective_rate(
            self.u, self.q, self.w, self.grid.centres_y, self.grid.widths_y, self.x_metrics,
            self.dt_theta,
        )
        return self.decomposition.maximum(rate)

    def nonfinite_field(self) -> str | None:
        """``u``, ``v`` (from ``q = r u_r``), ``w`` or ``p`` if it holds NaN or infinity on
        this rank's owned cells, else None (local; one pass each, no temporaries)."""
        interior = (slice(1, -1),) * 3
        for name, values in (("u", self.u), ("v", self.q), ("w", self.w), ("p", self.p)):
            if not reductions.all_finite(values[interior]):
                return name
        return None

    def cfl_number(self, dt: float) -> float:
        """Convective CFL number of a step of size ``dt`` (collective)."""
        return dt * self._convective_rate()

    def _viscous_limit(self, core_rows: int) -> float:
        """Largest stable Δt of the viscous terms with the radial ones implicit and the
        azimuthal ones implicit on the first ``core_rows`` rows: the explicit axial second
        derivative, the θ couplings (largest at the first ring) and the θ second derivative
        from the first row beyond the core."""
        first = self.grid.centres_y[0]
        rate = self.viscosity * (4.0 / self.grid.widths_x.min() ** 2
                                 + 4.0 / (first**2 * self.dt_theta))
        if core_rows < self.grid.shape[1]:
            inner = self.grid.centres_y[core_rows]
            rate += self.viscosity * 4.0 / (inner * self.dt_theta) ** 2
        return 2.51 / rate

    def viscous_time_steps(self, core_radius: float = 0.5) -> dict[str, float]:
        """The viscous time-step limits of this grid: every term explicit, θ implicit
        only for ``r < core_radius × radius``, θ implicit everywhere, and as this solver
        runs (its own core)."""
        grid, nu = self.grid, self.viscosity
        first, widths = grid.centres_y[0], grid.widths_y
        explicit = (4 / grid.widths_x.min() ** 2 + 4 / widths.min() ** 2
                    + 4 / (first * self.dt_theta) ** 2)
        core = int(np.count_nonzero(grid.centres_y < core_radius * grid.radius))
        return {
            "fully_explicit": 2.51 / (nu * explicit),
            "theta_implicit_in_core": self._viscous_limit(core),
            "theta_implicit_everywhere": self._viscous_limit(grid.shape[1]),
            "this_solver": self._viscous_limit(self.core_rows),
            "core_radius": core_radius * grid.radius,
        }

    def stable_time_step(self, cfl: float = 0.5) -> float:
        """Largest Δt with convective CFL ``cfl`` and stable explicit viscous terms
        (:meth:`_viscous_limit` of this solver's core)."""
        viscous = self._subgrid_time_step(self._viscous_limit(self.core_rows))
        convective = self._convective_rate()
        return viscous if convective == 0 else min(cfl / convective, viscous)

    def cell_field(self, name: str, out: np.ndarray | None = None, cells=None) -> np.ndarray:
        """This rank's ``u`` (axial), ``v`` (radial), ``w`` (azimuthal) velocity or ``p`` at
        cell centres, without ghosts (into ``out`` when given); only its cells ``cells``
        (three slices of the piece's own cells) when given."""
        if name not in self.fields:
            raise ValueError(f"field must be one of {self.fields}, got {name!r}")
        if name == "nu_t":
            return self._eddy_viscosity_field(out, cells)
        face_values = self.q if name == "v" else getattr(self, name)
        field = cartesian_stencils.owned_window(face_values, cells)
        if out is None:
            out = np.empty(tuple(n - 2 for n in field.shape))
        if name == "p":
            out[...] = field[1:-1, 1:-1, 1:-1]
            return out
        if name == "v":  # q = r u_r
            radii = self.grid.centres_y[cells[1] if cells else slice(None)]
            return cartesian_stencils.centred_component(field, 1, out, radii)
        return cartesian_stencils.centred_component(field, "uvw".index(name), out)

    def cell_speed(self, out: np.ndarray, cells=None) -> np.ndarray:
        """This rank's ``|u|`` at cell centres, without ghosts, into ``out`` (one pass);
        only its cells ``cells`` when given, as in :meth:`cell_field`."""
        radii = self.grid.centres_y[cells[1] if cells else slice(None)]
        u, q, w = (cartesian_stencils.owned_window(f, cells) for f in (self.u, self.q, self.w))
        return cartesian_stencils.centred_speed(u, q, w, out, 1.0 / radii)

    def _wall_stresses(self) -> tuple[float, float, float]:
        """Mean axial wall shear at the outer wall and the torques per unit length on the
        inner and outer walls (over the whole circle) (collective).

        Each is taken where the scheme's gradients are centred, on the two faces nearest the
        wall, and extrapolated linearly to it: second order (a one-sided gradient at the
        wall is only first order next to the linear wall ghost).
        """
        grid, nu = self.grid, self.viscosity
        nx, _, nt = grid.shape
        u, w = self.halo.interior(self.u), self.halo.interior(self.w)
        r, faces = grid.centres_y, grid.faces_y

        def at_wall(values, rows, wall, power=0):
            """``ν r^power d(values)/dr`` on the two faces between ``rows`` (3 centres from
            the wall inwards), extrapolated linearly to the wall."""
            on_faces = []
            for near, far in itertools.pairwise(rows):
                face = faces[max(near, far)]
                slope = (values[:, far, :] - values[:, near, :]) / (r[far] - r[near])
                on_faces.append((face, face**power * slope))
            (fa, first), (fb, second) = on_faces
            return nu * (first + (first - second) * (wall - fa) / (fa - fb))

        # Torque per length on the whole circle: 2π r² τ_rθ = 2π ν r³ ∂(u_θ / r)/∂r, the
        # quantity that is uniform across a steady Couette flow.
        angular = w / r[None, :, None]
        nr = grid.shape[1]
        outer_rows = (nr - 1, nr - 2, nr - 3)
        shear = -at_wall(u, outer_rows, grid.radius)  # the fluid's drag on the wall, along x
        outer_torque = 2 * np.pi * at_wall(angular, outer_rows, grid.radius, power=3)
        totals = [shear.sum(), outer_torque.sum(), 0.0]
        if not grid.through_axis:
            inner_torque = 2 * np.pi * at_wall(angular, (0, 1, 2), grid.inner_radius, power=3)
            totals[2] = inner_torque.sum()
        shear, outer_mean, inner_mean = (
            self.decomposition.sum(float(value)) / (nx * nt) for value in totals
        )
        return shear, inner_mean, outer_mean

    def statistics(self) -> dict:
        """Kinetic energy, bulk velocity, wall shear, torques, divergence (collective)."""
        grid = self.grid
        squares = self._x_weighted(
            lambda *fields: reductions.centred_energy_sum(*fields, grid.volume_weights_y,
                                                          grid.centres_y),
            self.u, self.q, self.w, ghosted=True,
        )
        shear, inner_torque, outer_torque = self._wall_stresses()
        return {
            "step": self.steps,
            "time": self.time,
            "kinetic_energy": 0.5 * self._cell_mean(squares),
            "bulk_velocity": self.bulk_velocity(),
            "wall_shear": shear,
            "inner_torque": inner_torque,
            "outer_torque": outer_torque,
            "pressure_gradient": self.pressure_gradient,
            "max_divergence": self.max_divergence(),
            **(self.subgrid.statistics() if self.subgrid is not None else {}),
        }

    # -- checkpoints and layout ----------------------------------------------------------------

    def checkpoint_state(self):
        """This rank's u, q = r u_r, w, p (y-pencil, without ghosts) and the forcing."""
        pieces = {
            name: self.halo.interior(field)
            for name, field in (("u", self.u), ("q", self.q), ("w", self.w), ("p", self.p))
        }
        return pieces, {"pressure_gradient": self.pressure_gradient}

    def restore_state(self, pieces, scalars) -> None:
        """Continue from this rank's pieces (collective)."""
        for name, field in (("u", self.u), ("q", self.q), ("w", self.w), ("p", self.p)):
            self.halo.interior(field)[...] = pieces[name]
        self._previous = None
        self._apply_boundaries()
        self._exchange_pressure(self.p)
        self.time = float(scalars["time"])
        self.steps = int(scalars["step"])
        self.pressure_gradient = float(scalars.get("pressure_gradient", self.pressure_gradient))


def _set_initial_condition(config, solver: CylindricalSolver) -> None:
    """``[flow] initial`` of a cylindrical case (analytic: rank-independent)."""
    flow, cylinder = config.flow, config.cylinder
    radius, inner = cylinder.radius, cylinder.inner_radius
    viscosity = flow.viscosity
    if config.grid.x_boundaries == "inflow-outflow":
        bulk = config.grid.inflow_velocity
    elif flow.forcing == "flow-rate":
        bulk = flow.forcing_value
    elif flow.forcing == "pressure-gradient" and inner == 0:
        bulk = flow.forcing_value * radius**2 / (8.0 * viscosity)
    else:
        bulk = 0.0

    def laminar(x, r, theta):  # Hagen–Poiseuille: 2 U_b (1 - r²/R²)
        return 2.0 * bulk * (1.0 - r**2 / radius**2) + 0 * x + 0 * theta

    if flow.initial == "rest":
        solver.set_velocity(0.0, 0.0, 0.0)
    elif flow.initial == "hagen-poiseuille":
        solver.set_velocity(laminar, 0.0, 0.0)
    elif flow.initial == "inflow":  # the inflow everywhere, at rest in the inertial frame
        if solver.inflow is None:
            raise ConfigError(f"{config.source}: flow.initial = 'inflow' needs "
                              "grid.x_boundaries = 'inflow-outflow'")
        profile = solver.inflow.axial_profile(solver.grid)[None, :, None]
        solver.set_velocity(profile, 0.0, lambda x, r, theta: -cylinder.rotation * r + 0 * x)
    elif flow.initial == "solid-body":  # turning with the outer wall, in the frame
        omega = cylinder.outer_wall_rotation - cylinder.rotation
        solver.set_velocity(0.0, 0.0, lambda x, r, theta: omega * r + 0 * x + 0 * theta)
    elif flow.initial == "couette":  # the exact circular Couette flow between the walls
        w_in, w_out = solver.wall_speed
        a = (w_out * radius - w_in * inner) / (radius**2 - inner**2)
        b = (w_in - a * inner) * inner
        swirl = _perturbed(config, lambda x, r, theta: a * r + b / r + 0 * x + 0 * theta, 2)
        solver.set_velocity(_perturbed(config, 0.0, 0), _perturbed(config, 0.0, 1), swirl)
    elif flow.initial == "perturbed-pipe":  # the laminar profile and random-phase waves
        solver.set_velocity(
            _perturbed(config, laminar, 0), _perturbed(config, 0.0, 1), _perturbed(config, 0.0, 2)
        )


def _perturbed(config, base, component: int):
    """``base`` (a number or a function of x, r, θ) plus ``[flow] perturbation`` times
    random-phase waves (``[flow] seed``), zero at the walls and regular at the axis; the
    same waves on every rank."""
    flow, cylinder = config.flow, config.cylinder
    if flow.perturbation == 0:
        return base
    rng = np.random.default_rng(flow.seed)
    modes = [(k, m, *rng.uniform(0, 2 * np.pi, 3)) for k in range(1, 4) for m in range(1, 4)]
    scale = flow.forcing_value if flow.forcing == "flow-rate" else 1.0
    amplitude = flow.perturbation * max(scale, 1.0) / len(modes) ** 0.5
    inner, outer = cylinder.inner_radius, cylinder.radius

    def field(x, r, theta):
        envelope = (4 * (r - inner) * (outer - r) / (outer - inner) ** 2) ** 2
        total = base(x, r, theta) if callable(base) else base
        for k, m, *phases in modes:
            wave = 2 * np.pi * k * x / cylinder.length + m * cylinder.sectors * theta
            total = total + amplitude * envelope * np.cos(wave + phases[component])
        return total

    return field
