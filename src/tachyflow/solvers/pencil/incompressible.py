"""Incompressible Navier–Stokes on pencils: fractional step, RK3 + Crank–Nicolson (the method
of Kwon, Park & Choi).

Fields live on a staggered grid as ghosted y-pencils (y whole on every rank), so the
implicit wall-normal viscous terms are tridiagonal solves with no communication; x and z
neighbours come from a :class:`~tachyflow.parallel.HaloExchange`. One time step is three
substeps of the low-storage RK3 of Spalart, Moser & Rogers (as in CaNS), each:

1. explicit terms ``H = -∇·(uu) + ν ∇²_xz u (+ ν ∂²_y u without walls) + forcing``,
2. prediction ``u* = u + Δt (γ H + ρ H_previous) (+ Crank–Nicolson in y with walls)``,
3. projection: ``∇² φ = ∇·u* / (α Δt)`` with the FFT/TDMA :class:`PoissonSolver`, then
   ``u = u* - α Δt ∇φ``; the step's pressure is ``p = Σ_k α_k φ_k``,
4. constant flow rate: a uniform shift of ``u`` restores the bulk velocity.

Walls at ``y = 0`` and ``y = Ly`` are no-slip: ``v = 0`` on the wall faces and ghost
values of ``u`` and ``w`` extrapolated quadratically through the wall value 0, which is
second-order accurate and reproduces a parabolic (Poiseuille) profile exactly. Slip
walls (stress-free, for far boundaries: ``[grid] wall_condition = "slip"``) keep
``v = 0`` and mirror ``u`` and ``w`` (no gradient through the wall).

A cylindrical (x, r, θ) rotating-frame variant (the axial fan of Kwon, Park & Choi) adds
metric factors to the stencils and Coriolis/centrifugal terms to ``H``: see
``docs/architecture.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from tachyflow.numerics import immersed, reductions, stencils, velocity_update
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.numerics.runge_kutta import RK3_ENDS, RK3_GAMMA, RK3_RHO, rk3_increment
from tachyflow.numerics.tdma import FactoredTridiagonal, solve_tridiagonal_lines
from tachyflow.parallel import HaloExchange, PencilDecomposition
from tachyflow.solvers.base import register
from tachyflow.solvers.pencil import options
from tachyflow.solvers.pencil.base import Inflow, PencilSolver
from tachyflow.solvers.pencil.poisson import PoissonSolver
from tachyflow.solvers.pencil.subgrid import CartesianSubgridStress
from tachyflow.solvers.phase_clock import PhaseClock

FORCING = ("none", "pressure-gradient", "flow-rate")
WALL_CONDITIONS = ("no-slip", "slip")


@dataclass(frozen=True)
class Forcing:
    """Mean-flow forcing in x: none, a constant pressure gradient ``-dp/dx = value``, or a
    constant bulk velocity ``value`` (flow rate per unit area)."""

    kind: str = "none"
    value: float = 0.0

    def __post_init__(self):
        if self.kind not in FORCING:
            raise ValueError(f"forcing must be one of {FORCING}, got {self.kind!r}")


@register("incompressible")
class IncompressibleSolver(PencilSolver):
    """Second-order finite-volume incompressible flow solver on a pencil decomposition.

    Parameters
    ----------
    decomposition : PencilDecomposition
        Global shape equal to the grid's; ``periodic[1]`` must match ``grid.periodic_y``.
    grid : StaggeredGrid
        Geometry; walls in y when ``grid.periodic_y`` is False.
    viscosity : float
        Kinematic viscosity ν > 0.
    forcing : Forcing, optional
        Mean-flow forcing in x (none with an inflow).
    inflow : Inflow, optional
        The inflow of a grid open in x (``grid.periodic_x`` false), required there: a
        convective outflow at the other end.
    wall_condition : {"no-slip", "slip"}
        What the walls in y impose on ``u`` and ``w``: no slip, or no stress.
    subgrid : tuple, optional
        ``(model, constant, van_driest)`` of a large-eddy simulation: the eddy-viscosity
        model's stress (:class:`~tachyflow.solvers.pencil.subgrid.SubgridStress`) added to
        the explicit terms, ν_t among the cell fields (``"nu_t"``) and its mean and largest
        ratio to ν in the statistics; the velocity update then runs term by term
        (``fused`` off).
    overlap : bool
        The Poisson solve's transposes overlap its transforms and tridiagonal solves
        (``PoissonSolver(overlap)``; the same result to round-off). The attribute
        ``overlap`` may be changed between steps. Off by default (slower where measured).

    Attributes
    ----------
    fused : bool
        A substep's update of the three components before the projection in one pass:
        explicit terms (advection, viscous terms, forcing), RK3 increments and, with walls,
        the Crank–Nicolson solves in y (:func:`~tachyflow.numerics.velocity_update.
        advance_velocity`), the same values bit for bit as the separate kernels
        (``False``: the reference path). On unless the grid is open in x, where it is
        refused (the outflow condition changes the terms before the increments). May be
        changed between steps.

    Notes
    -----
    Construction and :meth:`step`, :meth:`statistics`, :meth:`stable_time_step` are
    collective over the decomposition's communicator.

    Immersed bodies with a prescribed oscillation
    (:class:`~tachyflow.numerics.immersed.OscillatingMotion`) move: before each step their
    forcing is rebuilt where they are at the step's end (:meth:`PencilSolver.immerse`,
    whose projection leaves the fluid divergence-free around the moved bodies), and each
    substep imposes their velocity at the substep's end. Their ``body_loads`` count the
    momentum that move gives the fluid but not what the bodies' own volumes gain as they
    accelerate: the fluid's force on them (Uhlmann's correction of the forcing's sum,
    taken on the grid's points inside).
    """

    fields = ("u", "v", "w", "p")
    case_options = options.CARTESIAN
    moving_bodies: tuple = ()  # the bodies as given, with their motions
    statistics_columns = (
        "step", "time", "dt", "cfl", "kinetic_energy", "dissipation", "bulk_velocity",
        "wall_shear", "pressure_gradient", "max_divergence",
    )
    # Measured peak RSS of 1-rank runs between 96^3 and 144^3 cells: about 105 bytes per
    # cell held by the distributed fields, FFT buffers and RK3 stages; 300 MB for Python and
    # libraries. Rank 0 gathers no whole field (outputs stream slabs of at most 8 MiB), so
    # it needs only a constant more: matplotlib and the field writer's buffers.
    BYTES_PER_CELL, BASE_BYTES, ROOT_EXTRA_BYTES = 105, 300 * 2**20, 100 * 2**20

    @classmethod
    def memory_per_rank(cls, config, ranks: int) -> tuple[int, int]:
        """Estimated bytes per rank and on rank 0 (see ``BYTES_PER_CELL``)."""
        cells = math.prod(config.grid.cells)
        each = cls.BASE_BYTES + cls.BYTES_PER_CELL * -(-cells // ranks)
        each += config.grid.x_zone_bytes()
        return each, each + cls.ROOT_EXTRA_BYTES

    @classmethod
    def from_case(cls, config, comm, planning: str = "measure") -> IncompressibleSolver:
        """The solver of ``[grid]``, ``[flow]`` and ``[les]``, at ``[flow] initial``, with the
        bodies of ``[immersed]`` (collective)."""
        from tachyflow.solvers.pencil.initial_conditions import set_initial_condition

        grid_config = config.grid
        open_x = grid_config.x_boundaries == "inflow-outflow"
        grid = StaggeredGrid.from_section(grid_config)
        proc_grid = None if config.parallel.proc_grid == (0, 0) else config.parallel.proc_grid
        decomposition = PencilDecomposition(
            grid_config.cells, proc_grid, comm, periodic=(not open_x, not grid_config.walls, True)
        )
        forcing = Forcing(config.flow.forcing, config.flow.forcing_value)
        inflow = Inflow.from_case(config) if open_x else None
        solver = cls(
            decomposition, grid, config.flow.viscosity, forcing, planning=planning,
            inflow=inflow, wall_condition=grid_config.wall_condition,
            overlap="poisson" in config.parallel.overlap, subgrid=config.les.subgrid(),
        )
        set_initial_condition(config, solver)
        solver.immerse_case_bodies(config)
        return solver

    def __init__(
        self,
        decomposition: PencilDecomposition,
        grid: StaggeredGrid,
        viscosity: float,
        forcing: Forcing | None = None,
        planning: str = "measure",
        inflow: Inflow | None = None,
        wall_condition: str = "no-slip",
        overlap: bool = False,
        subgrid: tuple | None = None,
    ):
        if not viscosity > 0:
            raise ValueError(f"viscosity must be positive, got {viscosity!r}")
        if wall_condition not in WALL_CONDITIONS:
            raise ValueError(
                f"wall_condition must be one of {WALL_CONDITIONS}, got {wall_condition!r}"
            )
        self.slip_walls = wall_condition == "slip"
        if decomposition.periodic[1] != grid.periodic_y:
            raise ValueError(
                f"decomposition periodic in y = {decomposition.periodic[1]} but the grid has "
                f"{'no walls' if grid.periodic_y else 'walls'} in y"
            )
        self.decomposition = decomposition
        self.grid = grid
        self.viscosity = float(viscosity)
        self.forcing = forcing or Forcing()
        self._set_up_inflow(inflow, 0.0)
        self.walls = not grid.periodic_y
        self.halo = HaloExchange(decomposition, "y", width=1, corners=True)
        self.u, self.v, self.w, self.p = (self.halo.allocate() for _ in range(4))
        self.potential = self.halo.allocate()  # a projection's, summed into p by the step
        self.poisson = PoissonSolver(
            decomposition, grid, planning=planning, overlap=overlap,
            solution=self.halo.interior(self.potential),
        )
        self.timer = PhaseClock()
        self.metrics = stencils.YMetrics.from_grid(grid)
        pencil = decomposition.pencils["y"]
        # The x spacings of this rank's cells; one dx where x is uniform (the fused pass's).
        self.x_metrics = stencils.XMetrics.from_grid(grid, pencil.start[0], pencil.stop[0])
        self.dx = grid.spacing_x if grid.uniform_x else None
        self.dz = grid.spacing_z
        self.time = 0.0
        self.steps = 0
        self._previous = None
        self.pressure_gradient = (
            self.forcing.value if self.forcing.kind == "pressure-gradient" else 0.0
        )
        self._wall_ghost = self._wall_extrapolation()
        self._implicit_bands = self._viscous_bands() if self.walls else None
        self._implicit_cache: dict[tuple, FactoredTridiagonal] = {}
        self._fused = self.inflow is None
        # Work arrays, kept (fresh large arrays cost page faults every substep): the
        # explicit terms of the owned points (the fused pass overwrites the previous
        # substep's in place; the separate kernels need a second array), the separate
        # kernels' Crank–Nicolson terms (then increments), and the fused pass's planes,
        # each made when first used.
        self._explicit_terms = [
            velocity_update.velocity_terms(decomposition.local_shape("y")), None
        ]
        self._implicit_terms = None
        self._velocity_planes = None
        self._divergence_taken = False  # by the fused pass, for the projection next
        self._z_whole = decomposition.p_col == 1  # z's ghosts are the rank's own images
        self._set_up_subgrid(CartesianSubgridStress, subgrid)
        if self.subgrid is not None:
            self._fused = False

    # -- set-up ------------------------------------------------------------------------------

    def set_velocity(self, u, v, w) -> None:
        """Set the owned velocity values (arrays or callables of the coordinates) (collective)."""
        for name, value in (("u", u), ("v", v), ("w", w)):
            field = getattr(self, name)
            values = value(*self.coordinates(name)) if callable(value) else value
            self.halo.interior(field)[...] = values
        self._previous = None
        self._apply_boundaries()

    def velocity_arrays(self):
        """The ghosted u, v, w."""
        return self.u, self.v, self.w

    def immerse(self, bodies) -> None:
        """Impose ``bodies`` where their motions have them now, and move the moving ones
        at every step (collective)."""
        self.moving_bodies = tuple(bodies)
        super().immerse(body.placed(self.time) for body in self.moving_bodies)

    def step(self, dt: float) -> None:
        """Move the moving bodies to where they are at the step's end, then advance one
        step of ``dt`` (collective)."""
        moving = dt > 0 and any(body.motion.moving for body in self.moving_bodies)
        if moving:
            before = self.bodies
            # (The re-immersion's projection leaves p: its potential is no pressure.)
            super().immerse(body.placed(self.time + dt) for body in self.moving_bodies)
            # What moving the bodies gave the fluid around them, less their own volumes'
            # gain (on the points inside them now): part of this step's loads.
            moved = self._impulse - sum(
                stencil.held_momentum(self.bodies) - stencil.held_momentum(before)
                for stencil in self._forcing
            )
        super().step(dt)
        if moving:
            self.body_loads = self.body_loads - self.decomposition.sum_arrays(moved) / dt

    def immersed_points(self, component: str) -> immersed.ComponentPoints:
        """``component``'s ghosted points (x, y, z) for immersed bodies."""
        axes = self._ghosted_axes(component)
        mesh = np.meshgrid(*axes, indexing="ij")
        steps = tuple(
            np.append(np.diff(axis), axis[-1] - axis[-2]).reshape(shape)
            for axis, shape in zip(axes, ((-1, 1, 1), (1, -1, 1), (1, 1, -1)), strict=True)
        )
        direction = np.zeros((*mesh[0].shape, 3))
        direction[..., "uvw".index(component)] = 1.0
        # A point's control volume across x and y: its cell's width, or for the component
        # on that axis's faces the distance between the centres either side (both differ
        # from the step up a stretched axis).
        grid = self.grid
        extents = grid.centre_distances_y()[1:] if component == "v" else grid.widths_y
        ghosts = (len(axes[1]) - len(extents)) // 2  # none on a rank without cells
        extents = np.pad(extents, ghosts, mode="edge")[None, :, None]
        x_extents = self.x_metrics.gap if component == "u" else self.x_metrics.width
        if len(x_extents) != len(axes[0]):  # a rank without cells
            x_extents = steps[0].ravel()
        return immersed.ComponentPoints(
            np.stack(mesh, axis=-1), steps, direction, 1.0,
            x_extents[:, None, None] * extents * steps[2],
        )

    # -- boundaries --------------------------------------------------------------------------

    def _wall_extrapolation(self):
        """Weights of the ghost value from the first two centres (quadratic through 0 at
        the wall; the first centre mirrored at a slip wall), for the lower and upper
        wall."""
        if self.slip_walls:
            return [(1.0, 0.0), (1.0, 0.0)]
        widths = self.grid.widths_y
        weights = []
        for first, second in ((widths[0], widths[1]), (widths[-1], widths[-2])):
            y0, y1 = 0.5 * first, first + 0.5 * second
            weights.append((-(y0 + y1) / (y1 - y0), 2.0 * y0**2 / (y1 * (y1 - y0))))
        return weights

    def _apply_boundaries(self) -> None:
        """Halo exchange of u, v, w, then the wall conditions on the y ghosts and faces."""
        self.halo.exchange(self.u, self.v, self.w)  # one message per neighbour for the three
        if self.inflow is not None:
            self._apply_inflow_and_outflow()
        if not self.walls:
            return
        (lower_a, lower_b), (upper_a, upper_b) = self._wall_ghost
        for field in (self.u, self.w):
            field[:, 0, :] = lower_a * field[:, 1, :] + lower_b * field[:, 2, :]
            field[:, -1, :] = upper_a * field[:, -2, :] + upper_b * field[:, -3, :]
        self.v[:, 0, :] = 0.0  # lower wall face (ghost row)
        self.v[:, -2:, :] = 0.0  # upper wall face (last owned face) and the ghost above

    def _viscous_bands(self):
        """y bands of ``∂²/∂y²`` for centre fields (u, w) and face fields (v), with walls."""
        widths = self.grid.widths_y
        gaps = self.metrics.gap.ravel()
        gaps_down = self.metrics.gap_down.ravel()
        lower = 1.0 / (widths * gaps_down)
        upper = 1.0 / (widths * gaps)
        diagonal = -(lower + upper)
        (lower_a, lower_b), (upper_a, upper_b) = self._wall_ghost
        # Ghost = a * first + b * second: fold it into the first and last rows.
        diagonal[0] += lower[0] * lower_a
        upper[0] += lower[0] * lower_b
        diagonal[-1] += upper[-1] * upper_a
        lower[-1] += upper[-1] * upper_b
        lower[0] = upper[-1] = 0.0
        centre = (lower, diagonal, upper)
        widths_up = self.metrics.width_up.ravel()
        face_lower = 1.0 / (gaps * widths)
        face_upper = 1.0 / (gaps * widths_up)
        face_diagonal = -(face_lower + face_upper)
        face_lower[0] = 0.0  # v = 0 on the lower wall
        # The last face is the upper wall: an identity row keeps v = 0 there.
        face_lower[-1], face_diagonal[-1], face_upper[-1] = 0.0, 1.0, 0.0
        face_upper[-2] = 0.0
        return centre, (face_lower, face_diagonal, face_upper)

    # -- time stepping -----------------------------------------------------------------------

    def _implicit_operator(self, at_faces: bool, alpha_dt: float) -> FactoredTridiagonal:
        """``I - α Δt ν/2 ∂²_y`` for centre or face fields, factorised (cached per α Δt)."""
        key = (at_faces, alpha_dt)
        operator = self._implicit_cache.get(key)
        if operator is None:
            if len(self._implicit_cache) > 12:  # Δt changes every step when adaptive
                self._implicit_cache.clear()
            lower, diagonal, upper = self._implicit_bands[1 if at_faces else 0]
            factor = -0.5 * alpha_dt * self.viscosity
            implicit_diagonal = 1.0 + factor * diagonal
            if at_faces:
                implicit_diagonal[-1] = 1.0  # identity row: v stays 0 on the upper wall
            operator = FactoredTridiagonal(factor * lower, implicit_diagonal, factor * upper)
            self._implicit_cache[key] = operator
        return operator

    def _explicit_and_implicit_terms(self, first: bool = True):
        """(explicit terms of RK3, wall-normal viscous terms treated by Crank–Nicolson) of
        u, v, w, each one array of shape ``(3, nx, ny, nz)`` (owned points); without walls
        every term is explicit and the implicit ones are zero. ``first``: the step's first
        substep (where a dynamic subgrid model updates its coefficient)."""
        metrics, dx, dz, nu = self.metrics, self.x_metrics, self.dz, self.viscosity
        # Not the array holding the previous substep's terms.
        other = self._explicit_terms[0] is self._previous
        if self._explicit_terms[other] is None:
            self._explicit_terms[other] = np.empty_like(self._explicit_terms[0])
        explicit = self._explicit_terms[other]
        if self._implicit_terms is None:
            self._implicit_terms = np.zeros_like(explicit)
        implicit = self._implicit_terms
        with self.timer("advection"):
            stencils.advection(self.u, self.v, self.w, metrics, dx, dz, out=explicit)
        with self.timer("diffusion"):
            if not self.walls:
                implicit.fill(0.0)  # it holds the last increments
            for index, field in enumerate((self.u, self.v, self.w)):
                stencils.add_viscous(
                    field, metrics, dx, dz, nu, explicit[index], at_faces=index == 1,
                    out_y=implicit[index] if self.walls else None, at_x_faces=index == 0,
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
                implicit[0][-1] = 0.0  # the outflow condition is not diffused
        return explicit, implicit

    @property
    def fused(self) -> bool:
        """Whether a substep's explicit terms and increments are one pass (see the class)."""
        return self._fused

    @fused.setter
    def fused(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"fused must be True or False, got {value!r}")
        if value and self.inflow is not None:
            raise ValueError(
                "fused=True needs a grid periodic in x: the outflow condition changes the "
                "explicit terms before the increments"
            )
        if value and self.subgrid is not None:
            raise ValueError("fused=True has no subgrid stress: a large-eddy simulation "
                             "updates the velocity term by term")
        self._fused = value

    def _advance_fused(self, dt: float, gamma: float, rho: float, alpha_dt: float) -> None:
        """The substep's update of u, v, w before the projection in one pass; its explicit
        terms overwrite the previous substep's."""
        terms = self._previous if rho else self._explicit_terms[0]
        forcing = self.forcing.value if self.forcing.kind == "pressure-gradient" else 0.0
        implicit = None
        if self.walls:
            implicit = (self._implicit_operator(False, alpha_dt),
                        self._implicit_operator(True, alpha_dt))
        if self._velocity_planes is None:
            runs = max(1, min(numba.get_num_threads(), terms.shape[1]))
            self._velocity_planes = velocity_update.velocity_planes(terms.shape[1:], runs)
        # The projection's divergence in the same pass, but where bodies are forced in
        # between (it is of the forced velocity).
        divergence = None if self._forcing else self.poisson.work
        rows = self._bulk_rows_array() if self.forcing.kind == "flow-rate" else None
        with self.timer("velocity"):
            velocity_update.advance_velocity(
                self.u, self.v, self.w, self.metrics, self.dx, self.dz, self.viscosity,
                forcing, dt, gamma, rho, alpha_dt, terms, implicit, self._velocity_planes,
                divergence, 1.0 / alpha_dt, rows, self._z_whole,
            )
        self._previous = terms
        self._divergence_taken = divergence is not None

    def _substep(self, dt: float, stage: int) -> None:
        gamma, rho = RK3_GAMMA[stage], RK3_RHO[stage]
        alpha = gamma + rho
        if self.fused:
            self._advance_fused(dt, gamma, rho, alpha * dt)
        else:
            self._advance_separately(dt, gamma, rho, alpha * dt)
        if any(body.motion.moving for body in self.moving_bodies):
            # Where the substep ends the bodies move at another velocity (their place is
            # that of the step's end: the difference is second order in Δt).
            time = self.time + RK3_ENDS[stage] * dt
            placed = [body.placed(time) for body in self.moving_bodies]
            for stencil in self._forcing:
                stencil.impose_velocity(placed)
        self._project(alpha * dt)

    def _advance_separately(self, dt: float, gamma: float, rho: float, alpha_dt: float) -> None:
        """The substep's update of u, v, w before the projection, term by term (the
        reference of the fused pass; with an open x, the outflow's own update)."""
        explicit, implicit = self._explicit_and_implicit_terms(first=not rho)
        for index, field in enumerate((self.u, self.v, self.w)):
            previous = self._previous[index] if rho else explicit[index]
            increment = rk3_increment(
                dt, gamma, explicit[index], rho, previous, alpha_dt, implicit[index]
            )
            target = self.halo.interior(field)
            if index == 0 and self.inflow is not None and self._owns_outflow:
                outflow = increment[-1].copy()  # not diffused: the outflow condition
                if self.walls:
                    with self.timer("implicit"):
                        self._implicit_operator(False, alpha_dt).solve(increment)
                increment[-1] = outflow
                target += increment
            elif self.walls:
                with self.timer("implicit"):  # the solution added to the field as it comes
                    self._implicit_operator(index == 1, alpha_dt).solve(
                        increment, field, at=(self.halo.width,) * 3
                    )
            else:
                target += increment
        self._previous = explicit

    def _divergence(self, scale: float = 1.0, rows: np.ndarray | None = None) -> np.ndarray:
        """``scale ∇·u`` at the owned cells, in the pressure solve's own array (its
        right-hand side there costs no copy; valid until the next call or solve); with
        ``rows``, the sums of u along z of each owned row there. Right after the fused
        pass took it (:meth:`_advance_fused`, with this ``scale`` and ``rows``), only what
        that pass could not see: the planes beside its runs' ends, and the first z cells
        where z is split."""
        taken, self._divergence_taken = self._divergence_taken, False
        work = self.poisson.work
        if not taken:
            return stencils.divergence(
                self.u, self.v, self.w, self.metrics, self.x_metrics, self.dz, scale, out=work,
                rows=rows,
            )
        # The planes left read u's ghosts below in x (and, z split, w's in z: a whole
        # exchange came first); the first z cells of a split z, the neighbours' ghosts.
        left = velocity_update.planes_left_by_advance(
            work.shape[0], self._velocity_planes.shape[1]
        )
        velocity_update.divergence_of_planes(
            self.u, self.v, self.w, self.metrics, self.dx, self.dz, scale, self.walls,
            self._z_whole, left, work, rows,
        )
        if not self._z_whole:
            column = slice(0, 3)
            stencils.divergence(
                self.u[:, :, column], self.v[:, :, column], self.w[:, :, column],
                self.metrics, self.dx, self.dz, scale, out=work[:, :, :1],
            )
        return work

    def _boundaries_before_projection(self) -> None:
        """All boundaries, but after the fused pass took the divergence where z is whole:
        then only u's ghosts in x (the planes it left read them below; the wall faces'
        v and the periodic images it reads from the owned values)."""
        if self._divergence_taken and self._z_whole:
            self.halo.exchange(self.u, axes=(0,))
        else:
            self._apply_boundaries()

    def _subtract_pressure_gradient(self, factor, shift=None) -> None:
        """``u -= factor ∇φ`` on the owned faces (not the wall faces), ``u += shift[y]``,
        φ's part of the step's pressure (:meth:`_pressure_part`)."""
        stencils.subtract_gradient(
            self.u, self.v, self.w, self.potential, self.metrics, self.x_metrics, self.dz, factor,
            self.walls, shift, *self._pressure_part(factor),
        )

    def _flow_rate_response(self, alpha_dt: float) -> np.ndarray:
        """``(I - α Δt ν/2 ∂²_y)⁻¹ 1`` with walls (uniform without): the force acts like a
        pressure gradient inside the substep, so the steady state of a laminar channel is
        the exact discrete parabola."""
        response = np.ones((1, self.grid.shape[1], 1))
        if self.walls:
            lower, diagonal, upper = self._implicit_bands[0]
            factor = -0.5 * alpha_dt * self.viscosity
            solve_tridiagonal_lines(
                factor * lower, 1.0 + factor * diagonal, factor * upper, response
            )
        return response.ravel()

    # -- diagnostics -------------------------------------------------------------------------

    def _sum(self, value: float) -> float:
        return self.decomposition.sum(value)

    def _max(self, value: float) -> float:
        return self.decomposition.maximum(value)

    def _convective_rate(self) -> float:
        """max over cells of |u|/Δx + |v|/Δy + |w|/Δz (collective)."""
        interior = self.halo.interior
        rate = reductions.convective_rate(
            interior(self.u), interior(self.v), interior(self.w), self.x_metrics.width[1:-1],
            self.grid.widths_y, self.dz,
        )
        return self._max(rate)

    def cfl_number(self, dt: float) -> float:
        """Convective CFL number ``Δt max(|u|/Δx + |v|/Δy + |w|/Δz)`` (collective)."""
        return dt * self._convective_rate()

    def stable_time_step(self, cfl: float = 0.5) -> float:
        """Largest Δt with convective CFL ``cfl`` and explicit viscous stability (collective).

        RK3 is stable up to CFL √3 for advection and down to -2.51 on the real axis for
        the explicit viscous terms (the wall-normal ones are implicit with walls).
        """
        inverse_squares = 1.0 / self.grid.widths_x.min() ** 2 + 1.0 / self.dz**2
        if not self.walls:
            inverse_squares += 1.0 / self.grid.widths_y.min() ** 2
        viscous = self._subgrid_time_step(2.51 / (self.viscosity * 4.0 * inverse_squares))
        convective = self._convective_rate()
        return viscous if convective == 0 else min(cfl / convective, viscous)

    def cell_field(self, name: str, out: np.ndarray | None = None, cells=None) -> np.ndarray:
        """This rank's piece of ``u``, ``v``, ``w`` (averaged from the faces) or ``p`` at
        cell centres, without ghosts (into ``out`` when given); only its cells ``cells``
        (three slices of the piece's own cells) when given."""
        if name not in self.fields:
            raise ValueError(f"field must be one of {self.fields}, got {name!r}")
        if name == "nu_t":
            return self._eddy_viscosity_field(out, cells)
        field = stencils.owned_window(getattr(self, name), cells)
        if out is None:
            out = np.empty(tuple(n - 2 for n in field.shape))
        if name == "p":
            out[...] = field[1:-1, 1:-1, 1:-1]
            return out
        # Each component sits half a cell up along its own axis.
        return stencils.centred_component(field, "uvw".index(name), out)

    def staggered_fields(self) -> tuple[np.ndarray, ...]:
        """u, v, w at their faces and p at the centres, ghosted (local)."""
        return self.u, self.v, self.w, self.p

    def cell_speed(self, out: np.ndarray, cells=None) -> np.ndarray:
        """This rank's ``|u|`` at cell centres, without ghosts, into ``out`` (one pass);
        only its cells ``cells`` when given, as in :meth:`cell_field`."""
        u, v, w = (stencils.owned_window(f, cells) for f in (self.u, self.v, self.w))
        return stencils.centred_speed(u, v, w, out)

    def nonfinite_field(self) -> str | None:
        """``u``, ``v`` or ``w`` if it holds NaN or infinity on this rank, else None."""
        for name in ("u", "v", "w"):
            if not reductions.all_finite(self.halo.interior(getattr(self, name))):
                return name
        return None

    def checkpoint_state(self):
        """This rank's u, v, w, p (y-pencil, without ghosts) and the pressure gradient."""
        pieces = {name: self.halo.interior(getattr(self, name)) for name in "uvwp"}
        return pieces, {"pressure_gradient": self.pressure_gradient}

    def restore_state(self, pieces, scalars) -> None:
        """Continue from this rank's pieces of u, v, w, p (collective)."""
        self.set_velocity(pieces["u"], pieces["v"], pieces["w"])
        self.halo.interior(self.p)[...] = pieces["p"]
        self.time = float(scalars["time"])
        self.steps = int(scalars["step"])
        self.pressure_gradient = float(scalars.get("pressure_gradient", self.pressure_gradient))

    def statistics(self) -> dict:
        """Kinetic energy, dissipation, bulk velocity, wall shear, divergence (collective)."""
        u, v, w = (self.halo.interior(f) for f in (self.u, self.v, self.w))
        weights = self.grid.volume_weights_y
        squares = self._x_weighted(
            lambda *fields: reductions.centred_energy_sum(*fields, weights),
            self.u, self.v, self.w, ghosted=True,
        )
        energy = 0.5 * self._cell_mean(squares)
        # ε = -ν <u·∇²u> (equals ν <|∇u|²> for periodic or no-slip boundaries). Each ∇²u
        # goes into the pressure solve's work array, free between steps.
        laplacian = self.poisson.work
        work = 0.0
        for name, field, owned in (("u", self.u, u), ("v", self.v, v), ("w", self.w, w)):
            laplacian.fill(0.0)
            stencils.add_viscous(
                field, self.metrics, self.x_metrics, self.dz, 1.0, laplacian,
                at_faces=name == "v", at_x_faces=name == "u",
            )
            work += self._cell_mean(self._x_weighted(
                lambda a, b: reductions.y_weighted_dot(a, b, weights), owned, laplacian
            ))
        stats = {
            "step": self.steps,
            "time": self.time,
            "kinetic_energy": energy,
            "dissipation": -self.viscosity * work,
            "bulk_velocity": self.bulk_velocity(),
            "max_divergence": self.max_divergence(),
            "pressure_gradient": self.pressure_gradient,
        }
        if self.walls:
            stats["wall_shear"] = self.wall_shear()
        if self.subgrid is not None:
            stats.update(self.subgrid.statistics())
        return stats

    def wall_shear(self) -> float:
        """ν du/dy at the lower wall, averaged over it (0 at a slip wall; collective)."""
        if self.slip_walls:
            return 0.0  # no stress at a slip wall
        u = self.halo.interior(self.u)
        first = self.grid.widths_y[0]
        # Quadratic fit through the wall: du/dy(0) from the first two centres.
        y0, y1 = 0.5 * first, first + 0.5 * self.grid.widths_y[1]
        slope = (u[:, 0, :] * y1**2 - u[:, 1, :] * y0**2) / (y0 * y1 * (y1 - y0))
        nx, _, nz = self.grid.shape
        return self.viscosity * self._sum(slope.sum()) / (nx * nz)
