"""The ``compressible`` solver: 2D compressible Navier–Stokes / RANS on a structured grid,
after MPINS2D of B.-S. Lee, J.-W. Hong, S. Lee, D. H. Lee, "Performance Analysis of
Cluster Network Interfaces for Parallel Computing of Computational Fluid Dynamics" (RAE 2822
on a 281 x 65 C-grid, DP-SGS, density residual to 1e-7).

Cell-centred finite volumes (:mod:`tachyflow.numerics.compressible`): Roe or AUSM+-up
fluxes of MUSCL states, second-order viscous fluxes, Spalart–Allmaras; steady flows by
LU-SGS or DP-SGS pseudo-time iterations (one run step = one iteration; the run ends when
the density residual reaches ``[compressible] target_residual`` relative to the first
iteration), unsteady ones by SSP-RK3 or by dual time stepping (``dual-lu-sgs``,
``dual-dp-sgs``: one run step = one physical step of the second-order backward difference,
solved by up to ``inner_iterations`` pseudo-time iterations). The grid is cut into blocks
by a structured block decomposition (``exchange`` of ghost cells, the wake cut included;
physical sides from ``boundary_sides``); each step alternates the block kernels with exchanges.

Boundaries: ``j = 0`` is the wall on the grid's wall range (adiabatic no-slip, or slip
when inviscid), a symmetry plane elsewhere unless it is the wake cut; the outer boundary is
a characteristic far field (the free stream, or with ``vortex_correction`` the free stream
plus the point vortex of the current lift); the ``i`` ends are outflows (the free-stream
pressure where the flow leaves, the characteristic far field where it enters).

Outputs besides the loads (:mod:`tachyflow.observers.aerodynamics`): checkpoints of the
owned cells in the global ``(ni, nj)`` layout (:meth:`CompressibleSolver.checkpoint_state`,
read back on any rank count), and each block's nodes and node values
(:meth:`CompressibleSolver.node_coordinates`, :meth:`CompressibleSolver.node_field`) for
the fields and pictures of :mod:`tachyflow.observers.block_fields` and
:mod:`tachyflow.observers.block_images`.
"""

from __future__ import annotations

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.io.checkpoint import PieceLayout
from tachyflow.numerics.compressible import boundaries
from tachyflow.numerics.compressible.gas import FreeStream, conservative
from tachyflow.numerics.compressible.metrics import BlockMetrics, wall_distance
from tachyflow.numerics.compressible.residual import FlowDiscretisation
from tachyflow.numerics.compressible.surface import force_coefficients, wall_faces
from tachyflow.numerics.compressible.time_integration import (
    DualTimeStepper,
    ImplicitStepper,
    ssp_rk3_step,
)
from tachyflow.parallel import pieces
from tachyflow.solvers.base import Solver, register
from tachyflow.solvers.compressible.grids import build_grid
from tachyflow.solvers.compressible.options import COMPRESSIBLE
from tachyflow.solvers.phase_clock import PhaseClock

EQUATIONS = ("rho", "rhou", "rhov", "rhoE", "rho_nt")
# Residuals are relative to the largest of the first iterations: the very first can be
# round-off, when the free stream the run starts from already satisfies an equation (the
# continuity equation next to a flat plate).
REFERENCE_ITERATIONS = 5
# Where each primitive field is in the solver's primitive variables Q.
PRIMITIVES = {"rho": 0, "u": 1, "v": 2, "p": 3, "nu_tilde": 4}
COEFFICIENTS = ("CL", "CD", "CM", "CL_p", "CL_f", "CD_p", "CD_f", "CM_p", "CM_f")
# What phase_seconds() reports: the residual (fluxes, viscous terms, source), the implicit
# relaxation (spectral radii, local time steps, the SGS sweeps and the update), the ghost
# exchanges (state and DP-SGS increments), the physical boundary conditions, the wall loads
# (Cp, Cf, forces of this block) and the global reductions (residual norms, loads).
PHASES = ("residual", "implicit", "exchange", "boundaries", "loads", "reductions")


def _blocks(comm, ni: int, nj: int, wake_cells: int, proc_grid):
    from tachyflow.parallel.structured_blocks import StructuredBlocks

    proc_grid = None if tuple(proc_grid) == (0, 0) else tuple(proc_grid)
    try:
        return StructuredBlocks(comm, ni, nj, ghosts=2, wake_cut=wake_cells, proc_grid=proc_grid)
    except ValueError as error:
        raise ConfigError(f"[parallel] proc_grid: {error}") from None


def _segment_tuple(segment) -> tuple[str, str, int, int]:
    if isinstance(segment, tuple):
        return segment
    return segment.side, segment.kind, segment.start, segment.stop


@register("compressible")
class CompressibleSolver(Solver):
    """``[case] solver = "compressible"``: one block of the grid per rank.

    Parameters
    ----------
    blocks
        The block decomposition (``StructuredBlocks``); owns the
        communicator.
    grid
        The global grid (:func:`tachyflow.solvers.compressible.grids.build_grid`).
    section : CompressibleSection
        ``[compressible]`` of the case.

    Notes
    -----
    Construction, :meth:`step`, :meth:`statistics`, :meth:`stable_time_step`,
    :meth:`cfl_number`, :meth:`wall_surface`, :meth:`aerodynamic_summary`,
    :meth:`checkpoint_state` and :meth:`restore_state` are collective; :meth:`cell_field`,
    :meth:`node_field`, :meth:`node_coordinates` and :meth:`piece_layout` are local.
    """

    # No pencil grid: the pencil solvers' images, field series and in situ pipelines do not
    # apply; node_coordinates() and node_field() serve the block-fields and block-images
    # observers instead.
    case_options = COMPRESSIBLE
    statistics_columns = (
        "step", "time", "dt", "cfl", "pseudo_cfl", "density_residual",
        *(f"residual_{name}" for name in EQUATIONS[1:]), *COEFFICIENTS,
        "inner_iterations", "inner_residual_drop",
    )

    @classmethod
    def from_case(cls, config, comm, planning: str = "measure") -> CompressibleSolver:
        section = config.compressible
        try:
            grid = build_grid(section)
        except ValueError as error:
            raise ConfigError(f"{config.source}: [compressible] grid: {error}") from None
        if grid.cells != tuple(section.cells):
            raise ConfigError(f"{config.source}: grid {section.grid!r} has {grid.cells} cells, "
                              f"not compressible.cells = {section.cells}")
        ni, nj = grid.cells
        blocks = _blocks(comm, ni, nj, grid.wake_cells, config.parallel.proc_grid)
        return cls(blocks, grid, section)

    def __init__(self, blocks, grid, section):
        self.decomposition = self.blocks = blocks
        self.section = section
        self.grid = None  # no pencil geometry for the pencil-grid outputs
        self.steps, self.time = 0, 0.0
        self.free_stream = FreeStream(
            section.mach, section.alpha, section.reynolds, section.temperature,
            section.nu_tilde_ratio,
        )
        self.dual = section.time_stepping.startswith("dual-")
        self.steady = section.time_stepping in ("lu-sgs", "dp-sgs")
        self.clock = PhaseClock()
        g = 2
        x, y = blocks.node_piece(grid.x, grid.y)
        self.metrics = metrics = BlockMetrics.from_nodes(x, y, g)
        self.offset = (blocks.i_range.start - g, blocks.j_range.start - g)
        self.segments = self._classify(blocks.boundary_sides(), grid.wall)
        turbulent = section.turbulence == "sa"
        distance = self._wall_distance() if turbulent else None
        self.discretisation = FlowDiscretisation(
            metrics, self.free_stream, section.scheme, section.limiter, section.turbulence,
            wall_distance=distance, entropy_fix=section.entropy_fix,
        )
        self.nvar = self.discretisation.nvar
        self.fields = ("rho", "u", "v", "p", "mach", *(("nu_tilde",) if turbulent else ()))
        sweeps = section.sweeps if section.time_stepping.endswith("dp-sgs") else 1
        self.stepper = ImplicitStepper(
            self.discretisation,
            sweeps,
            self._exchange,
            self._cut_partners(),
            line_implicit=section.line_implicit,
        )
        self.dual_stepper = DualTimeStepper(
            self.stepper, section.inner_iterations, section.inner_tolerance, self._sum
        )
        # Pseudo-time iterations so far: the CFL ramp of dual time stepping runs over them.
        self.pseudo_iterations = 0
        self._far_field = self._far_field_points()
        self.U = conservative(self.free_stream.primitive(self.nvar)[:, None, None]
                              * np.ones(metrics.area.shape))
        self.coefficients = dict.fromkeys(COEFFICIENTS, 0.0)
        self.ghost_lift = 0.0  # the lift of the point vortex in the ghosts (see fill_ghosts)
        self.fill_ghosts(self.U)
        self.first_norms = None
        self.norms = np.full(self.nvar, np.nan)
        self.pseudo_cfl = 0.0

    # -- set-up ----------------------------------------------------------------------------

    def _classify(self, sides, wall) -> list[tuple[str, str, int, int, int, int]]:
        """Physical segments as ``(side, kind, start, stop, fill_start, fill_stop)`` in local
        padded indices (the owned faces; the cells the condition fills), in the order they
        are applied: the j sides, then the i sides. ``j_low`` outside the
        grid's wall range is a symmetry plane. A segment reaching the block's edge where
        the grid goes on with the same kind is extended over the ghost cells there (and a
        j segment at a physical i side too, which the i side then overwrites), so that the
        corner ghosts, which the exchange leaves alone, hold boundary values."""
        g = 2
        ni, nj = self.section.cells

        def kind_at(side: str, index: int) -> str | None:
            if index < 0 or index >= (ni if side.startswith("j") else nj):
                return "beyond"
            if side != "j_low":
                return "farfield" if side == "j_high" else "outflow"
            if wall[0] <= index < wall[1]:
                return "wall"
            inside_cut = index < self.blocks.wake_cut or index >= ni - self.blocks.wake_cut
            return "wake" if inside_cut else "symmetry"

        segments = []
        for side, kind, start, stop in map(_segment_tuple, sides):
            pieces = [(kind, start, stop)]
            if kind == "wall":
                pieces = [
                    ("wall", max(start, wall[0]), min(stop, wall[1])),
                    ("symmetry", start, min(stop, wall[0])),
                    ("symmetry", max(start, wall[1]), stop),
                ]
            along = self.blocks.i_range if side.startswith("j") else self.blocks.j_range
            shift = self.offset[0] if side.startswith("j") else self.offset[1]
            for piece, a, b in pieces:
                if a >= b or piece == "wake":
                    continue
                fill_a = (
                    a - g if a == along.start and kind_at(side, a - 1) in (piece, "beyond") else a
                )
                fill_b = b + g if b == along.stop and kind_at(side, b) in (piece, "beyond") else b
                segments.append((side, piece, *(n - shift for n in (a, b, fill_a, fill_b))))
        return sorted(segments, key=lambda segment: segment[0].startswith("i"))

    def _cut_partners(self) -> np.ndarray:
        """For the first owned row next to the wake cut: the padded i index of the cell
        across the cut where that cell is in this block (so the sweeps couple the two
        sides directly), -1 elsewhere."""
        g, blocks = 2, self.blocks
        partner = np.full(self.metrics.area.shape, -1, dtype=np.int64)
        ni, cut = self.section.cells[0], blocks.wake_cut
        if blocks.j_range.start != 0 or cut == 0:
            return partner
        for i in blocks.i_range:
            across = ni - 1 - i
            if (i < cut or i >= ni - cut) and across in blocks.i_range:
                partner[i - blocks.i_range.start + g, g] = across - blocks.i_range.start + g
        return partner

    def _wall_distance(self) -> np.ndarray:
        """Distance of each cell centre to the nearest wall face of any block."""
        local = []
        m = self.metrics
        for side, kind, start, stop, *_ in self.segments:
            if kind == "wall":
                x = boundaries.side_view(m.x, side)[start : stop + 1, m.ghosts]
                y = boundaries.side_view(m.y, side)[start : stop + 1, m.ghosts]
                local.append(np.stack([x[:-1], y[:-1], x[1:], y[1:]], axis=1))
        mine = np.concatenate(local) if local else np.zeros((0, 4))
        everyone = pieces.allgather_small(self.blocks.comm, mine)  # O(wall faces): small
        return wall_distance(m.xc, m.yc, np.concatenate(everyone))

    def _far_field_points(self) -> dict:
        points = {}
        for side, kind, _, _, start, stop in self.segments:
            if kind in ("farfield", "outflow"):
                x, y = boundaries.face_midpoints(self.metrics, side)
                points[(side, start)] = (x[start:stop], y[start:stop])
        return points

    # -- boundary conditions and exchange ----------------------------------------------------

    def fill_ghosts(self, U: np.ndarray, lift: float | None = None) -> None:
        """The block exchange, then the boundary conditions of the physical sides, j sides
        first (collective). With ``vortex_correction`` the far field holds the point vortex
        of ``lift`` (default: the current CL), kept as :attr:`ghost_lift`: the ghosts a
        step leaves depend on it, and a restart must fill them alike."""
        self._exchange(U)
        viscous = self.discretisation.viscous
        lift = self.coefficients["CL"] if lift is None else lift
        self.ghost_lift = lift if self.section.vortex_correction else 0.0
        with self.clock("boundaries"):
            self._apply_conditions(U, viscous, self.ghost_lift)

    def _exchange(self, array: np.ndarray) -> None:
        with self.clock("exchange"):
            self.blocks.exchange(array)

    def _sum(self, values: np.ndarray) -> np.ndarray:
        with self.clock("reductions"):
            return self.blocks.sum(values)

    def _apply_conditions(self, U, viscous: bool, lift: float) -> None:
        m, fs, g = self.metrics, self.free_stream, 2
        for side, kind, _, _, start, stop in self.segments:
            if kind == "wall" and viscous:
                boundaries.wall(U, side, g, start, stop)
            elif kind in ("wall", "symmetry"):
                boundaries.slip_wall(U, m, side, start, stop)
            else:  # far field and the i ends
                if lift != 0.0:
                    x, y = self._far_field[(side, start)]
                    state = boundaries.point_vortex_state(fs, x, y, lift, nvar=self.nvar)
                else:
                    state = fs.primitive(self.nvar)
                condition = boundaries.outflow if kind == "outflow" else boundaries.far_field
                condition(U, m, side, state, fs.gamma, start, stop)

    # -- the Solver interface ----------------------------------------------------------------

    def step(self, dt: float) -> None:
        """One pseudo-time iteration (LU-SGS, DP-SGS), one SSP-RK3 step of ``dt`` or one
        dual-time step of ``dt`` (its pseudo-time iterations timed as ``implicit``, their
        residuals included)."""
        if self.steady:
            self.pseudo_cfl = self._ramped_cfl(self.steps)
            with self.clock("residual"):
                residual = self.discretisation.residual(self.U)
            with self.clock("implicit"):
                self.stepper.step(self.U, self.pseudo_cfl, self.fill_ghosts, residual)
        elif self.dual:
            with self.clock("implicit"):
                residual = self.dual_stepper.step(self.U, dt, self._inner_cfl, self.fill_ghosts)
            self.pseudo_iterations += self.dual_stepper.iterations
        else:
            with self.clock("residual"):  # the three stages' residuals and updates
                self.U, residual = ssp_rk3_step(self.U, dt, self.discretisation, self.fill_ghosts)
        self._record_norms(residual)
        self.coefficients = self._force_coefficients()
        self.steps += 1
        self.time += dt

    def _ramped_cfl(self, iteration: int) -> float:
        """The pseudo-time CFL number of pseudo-time iteration ``iteration`` of the run."""
        s = self.section
        if s.cfl_ramp == 0 or iteration >= s.cfl_ramp:
            return s.cfl
        return s.cfl_start * (s.cfl / s.cfl_start) ** (iteration / s.cfl_ramp)

    def _inner_cfl(self, inner: int) -> float:
        """Dual time stepping: the ramp runs over the run's pseudo-time iterations."""
        self.pseudo_cfl = self._ramped_cfl(self.pseudo_iterations + inner)
        return self.pseudo_cfl

    def _record_norms(self, residual: np.ndarray) -> None:
        """Global L2 norms of ``R / area`` per equation, and the reference they are measured
        against: the largest of the first :data:`REFERENCE_ITERATIONS` iterations."""
        m = self.metrics
        owned = (slice(None), *m.owned)
        rates = residual[owned] / m.area[m.owned]
        with self.clock("reductions"):
            sums = self.blocks.sum(np.append(np.sum(rates**2, axis=(1, 2)), rates[0].size))
        self.norms = np.sqrt(sums[:-1] / sums[-1])
        if self.steps < REFERENCE_ITERATIONS:
            reference = self.norms if self.first_norms is None else self.first_norms
            self.first_norms = np.maximum(reference, self.norms)

    def _force_coefficients(self) -> dict:
        with self.clock("loads"):
            Q = self.discretisation.primitives(self.U)
            names, values = [], []
            for side, kind, start, stop, *_ in self.segments:
                if kind == "wall":
                    faces = wall_faces(Q, self.metrics, side, self.free_stream, start, stop)
                    part = force_coefficients(faces, self.free_stream.alpha_degrees)
                    names = list(part)
                    values.append([part[name] for name in names])
            names = names or [*COEFFICIENTS]
            local = np.sum(values, axis=0) if values else np.zeros(len(names))
        with self.clock("reductions"):
            total = self.blocks.sum(local)
        return dict(zip(names, (float(v) for v in total), strict=True))

    @property
    def density_residual(self) -> float:
        """Density residual relative to the first iterations' (NaN before them)."""
        if self.first_norms is None:
            return float("nan")
        return float(self.norms[0] / self.first_norms[0])

    def finished(self) -> bool:
        """Steady runs end once the density residual reaches the target; unsteady ones
        (SSP-RK3, dual time) run their steps."""
        return (
            self.steady
            and self.steps >= REFERENCE_ITERATIONS
            and self.density_residual <= self.section.target_residual
        )

    def stable_time_step(self, cfl: float) -> float:
        """SSP-RK3: the smallest local time step at ``cfl`` (collective); steady runs: 1,
        one unit of pseudo time per iteration (their CFL is ``pseudo_cfl``)."""
        if self.steady:
            return 1.0
        return cfl * self._unit_cfl_step()

    def _unit_cfl_step(self) -> float:
        disc = self.discretisation
        disc.update_state(self.U)
        disc.spectral_radii()
        local = disc.local_time_step(1.0)[self.metrics.owned].min()
        return -self.blocks.max(-float(local))

    def cfl_number(self, dt: float) -> float:
        """The CFL number of an SSP-RK3 step; 0 for pseudo-time iterations and dual time
        steps, implicit and unbounded (their CFL, ``pseudo_cfl``, is local)."""
        return dt / self._unit_cfl_step() if self.section.time_stepping == "rk3" else 0.0

    def _derived(self, Q: np.ndarray, name: str) -> np.ndarray:
        """Field ``name`` of :attr:`fields` from primitive variables ``Q`` (any shape)."""
        if name not in self.fields:
            raise ValueError(f"field must be one of {self.fields}, got {name!r}")
        if name == "mach":
            return np.hypot(Q[1], Q[2]) / np.sqrt(self.free_stream.gamma * Q[3] / Q[0])
        return np.array(Q[PRIMITIVES[name]])

    def cell_field(self, name: str) -> np.ndarray:
        """This block's ``name`` (one of :attr:`fields`) at its cell centres, shape
        ``(ni_loc, nj_loc)``."""
        Q = self.discretisation.primitives(self.U)
        return self._derived(Q[(slice(None), *self.metrics.owned)], name)

    def node_field(self, name: str) -> np.ndarray:
        """This block's ``name`` at its nodes, shape ``(ni_loc + 1, nj_loc + 1)``: the
        primitive variables averaged over the four cells round each node (ghosts
        included: across block edges and the wake cut the neighbours' cells, at walls the
        mirrored states, so the velocity at a no-slip wall is zero), then ``name`` of
        them. For pictures; the state is unchanged."""
        Q = self.discretisation.primitives(self.U)
        g = self.metrics.ghosts
        ni, nj = self.blocks.block_shape
        corners = [Q[:, g - 1 + a : g + ni + a, g - 1 + b : g + nj + b] for a in (0, 1)
                   for b in (0, 1)]
        return self._derived(0.25 * (corners[0] + corners[1] + corners[2] + corners[3]), name)

    def node_coordinates(self) -> tuple[np.ndarray, np.ndarray]:
        """This block's node coordinates ``x, y``, shape ``(ni_loc + 1, nj_loc + 1)``."""
        g = self.metrics.ghosts
        ni, nj = self.blocks.block_shape
        return tuple(
            np.array(c[g : g + ni + 1, g : g + nj + 1]) for c in (self.metrics.x, self.metrics.y)
        )

    def piece_layout(self) -> PieceLayout:
        """This block's cells in the ``(ni, nj)`` grid."""
        blocks = self.blocks
        return PieceLayout((blocks.ni, blocks.nj), (blocks.i_range.start, blocks.j_range.start),
                           blocks.block_shape)

    def checkpoint_state(self):
        """This block's conserved variables (``rho`` ... ``rho_nt``, owned cells) and the
        scalars the next iterations read: the force coefficients (the far field's point
        vortex, the statistics), the lift in the ghosts, the pseudo-time CFL of the last
        iteration and the residual norms, the first iterations' included (what the
        relative residual and :meth:`finished` measure against). The CFL ramp follows
        from the step. Dual time stepping adds the previous time level ``U^(n-1)``
        (``previous_rho`` ...; absent before the first step), the pseudo-time iterations
        so far (its CFL ramp) and the last step's inner iterations and residual drop."""
        owned, names = self.metrics.owned, EQUATIONS[: self.nvar]
        pieces = {name: np.ascontiguousarray(self.U[k][owned]) for k, name in enumerate(names)}
        first = np.full(self.nvar, np.nan) if self.first_norms is None else self.first_norms
        scalars = {
            **self.coefficients,
            "ghost_lift": self.ghost_lift,
            "pseudo_cfl": self.pseudo_cfl,
            **{f"norm_{name}": v for name, v in zip(names, self.norms, strict=True)},
            **{f"first_norm_{name}": v for name, v in zip(names, first, strict=True)},
        }
        if self.dual:
            dual = self.dual_stepper
            if dual.previous is not None:
                pieces.update({f"previous_{name}": np.ascontiguousarray(dual.previous[k][owned])
                               for k, name in enumerate(names)})
            scalars.update(pseudo_iterations=self.pseudo_iterations,
                           inner_iterations=dual.iterations,
                           inner_residual_drop=dual.residual_drop)
        return pieces, scalars

    def restore_state(self, pieces, scalars) -> None:
        """Continue from this block's pieces of a checkpoint, on any number of ranks
        (collective): the ghosts are filled as the step that wrote it left them, so the
        iterations go on as if never interrupted (bitwise, on the same block layout). A
        dual-time run restarted from a checkpoint without a previous time level (a steady
        or SSP-RK3 run's) starts with a backward Euler step; other runs ignore one."""
        names = EQUATIONS[: self.nvar]
        previous_names = [f"previous_{name}" for name in names]
        if set(pieces) - set(previous_names) != set(names):
            raise ConfigError(
                f"the checkpoint holds {sorted(pieces)}, the {self.nvar} variables of this "
                f"case (turbulence = {self.section.turbulence!r}) are {list(names)}"
            )
        owned = self.metrics.owned
        for k, name in enumerate(names):
            self.U[k][owned] = pieces[name]
        self.dual_stepper.previous = None
        if self.dual and previous_names[0] in pieces:
            previous = self.dual_stepper.previous = np.zeros_like(self.U)
            for k, name in enumerate(previous_names):
                previous[k][owned] = pieces[name]
        self.pseudo_iterations = int(scalars.get("pseudo_iterations", 0))
        self.dual_stepper.iterations = int(scalars.get("inner_iterations", 0))
        self.dual_stepper.residual_drop = float(scalars.get("inner_residual_drop", np.nan))
        self.coefficients = {name: float(scalars[name]) for name in COEFFICIENTS}
        self.steps, self.time = int(scalars["step"]), float(scalars["time"])
        self.pseudo_cfl = float(scalars["pseudo_cfl"])
        self.norms = np.array([float(scalars[f"norm_{n}"]) for n in names])
        first = np.array([float(scalars[f"first_norm_{n}"]) for n in names])
        self.first_norms = None if np.isnan(first).all() else first
        self.fill_ghosts(self.U, lift=float(scalars["ghost_lift"]))

    def statistics(self) -> dict:
        """Residuals relative to the first iteration (every equation), the force
        coefficients (pressure and friction parts) of the current state and, with dual
        time stepping, the last step's pseudo-time iterations and the drop of their
        residual (0 and NaN otherwise)."""
        relative = np.full(len(EQUATIONS), np.nan)
        if self.first_norms is not None:
            relative[: self.nvar] = self.norms / self.first_norms
        return {
            "step": self.steps,
            "time": self.time,
            "pseudo_cfl": self.pseudo_cfl,
            "inner_iterations": self.dual_stepper.iterations,
            "inner_residual_drop": self.dual_stepper.residual_drop,
            "density_residual": float(relative[0]),
            **{
                f"residual_{name}": float(v)
                for name, v in zip(EQUATIONS[1:], relative[1:], strict=True)
            },
            **self.coefficients,
        }

    def wall_surface(self) -> dict | None:
        """Per wall face, in ``i`` order: ``x/c``, ``y/c``, ``Cp`` and ``Cf``, on rank 0
        (None elsewhere) (collective)."""
        Q = self.discretisation.primitives(self.U)
        rows = []
        for side, kind, start, stop, *_ in self.segments:
            if kind == "wall":
                faces = wall_faces(Q, self.metrics, side, self.free_stream, start, stop)
                index = np.arange(start, stop) + self.offset[0]
                rows.append(np.stack([index, faces.x, faces.y, faces.cp, faces.cf], axis=1))
        mine = np.concatenate(rows) if rows else np.zeros((0, 5))
        gathered = pieces.gather_small(self.blocks.comm, mine)
        if gathered is None:
            return None
        table = np.concatenate(gathered)
        table = table[np.argsort(table[:, 0], kind="stable")]
        return {"x/c": table[:, 1], "y/c": table[:, 2], "Cp": table[:, 3], "Cf": table[:, 4]}

    def aerodynamic_summary(self) -> dict:
        """Coefficients, iterations, convergence and conditions (equal on every rank)."""
        s = self.section
        return {
            **self.coefficients,
            "iterations": self.steps,
            "converged": bool(self.finished()),
            "density_residual": self.density_residual,
            "target_residual": s.target_residual,
            "conditions": {
                "grid": s.grid, "grid_file": s.grid_file, "cells": list(s.cells),
                "mach": s.mach, "alpha": s.alpha,
                "reynolds": s.reynolds, "temperature": s.temperature, "scheme": s.scheme,
                "limiter": s.limiter, "turbulence": s.turbulence,
                "time_stepping": s.time_stepping,
            },
        }

    def phase_seconds(self) -> dict[str, float]:
        """Seconds of the steps so far per phase of :data:`PHASES` (this rank), each
        exclusive of the phases inside it (the exchanges and boundary conditions inside
        the implicit step are theirs, not its)."""
        return {phase: float(self.clock.seconds.get(phase, 0.0)) for phase in PHASES}

    def layout(self) -> dict:
        """Grid, block grid and cells."""
        ni, nj = self.section.cells
        return {"grid": [ni, nj], "proc_grid": list(self.blocks.proc_grid), "cells": ni * nj}
