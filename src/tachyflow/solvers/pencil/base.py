"""What the flow solvers on pencils share: the layout of their pieces, their summary and
their phases (the Cartesian :mod:`~tachyflow.solvers.pencil.incompressible` and the cylindrical
:mod:`~tachyflow.solvers.pencil.cylindrical` solver)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tachyflow.io.checkpoint import PieceLayout
from tachyflow.numerics import immersed, reductions
from tachyflow.solvers.base import Solver

INFLOW_PROFILES = ("uniform", "laminar")


@dataclass(frozen=True)
class Inflow:
    """An open x: ``profile`` (``"uniform"``, or ``"laminar"``: the grid's developed
    laminar profile) enters at ``x = 0`` with bulk velocity ``velocity``; a convective
    outflow at ``x = L``."""

    profile: str = "uniform"
    velocity: float = 1.0

    def __post_init__(self):
        if self.profile not in INFLOW_PROFILES:
            raise ValueError(f"inflow profile must be one of {INFLOW_PROFILES}, got "
                             f"{self.profile!r}")
        if not (math.isfinite(self.velocity) and self.velocity > 0):
            raise ValueError(f"inflow velocity must be positive, got {self.velocity!r}")

    @classmethod
    def from_case(cls, config) -> Inflow:
        """The inflow of ``[grid] inflow_profile`` and ``inflow_velocity``."""
        return cls(config.grid.inflow_profile, config.grid.inflow_velocity)

    def axial_profile(self, grid) -> np.ndarray:
        """The streamwise velocity at the cell centres across the flow (y or r), scaled
        so that its discrete flow rate is exactly ``velocity`` times the cross-section."""
        shape = np.ones(grid.shape[1]) if self.profile == "uniform" else grid.laminar_profile()
        return self.velocity * shape / float(np.dot(shape, grid.volume_weights_y))


class PencilSolver(Solver):
    """A :class:`Solver` whose fields are y-pencils of ``self.decomposition``, with a
    ``self.poisson`` (a :class:`~tachyflow.solvers.pencil.poisson.PoissonSolver`) and a
    ``self.timer`` (a :class:`~tachyflow.solvers.phase_clock.PhaseClock` with the phases
    ``implicit``, ``advection`` and ``diffusion``).

    Immersed bodies (:meth:`immerse`) are imposed by direct forcing before every
    projection; ``body_loads`` is then the force and moment (about the origin) of the fluid
    on each body, shape (bodies, 6), averaged over the last step.

    After a :meth:`step`, ``p`` is the step's pressure ``Σ_k α_k φ_k``: the substeps'
    projection potentials weighted as their gradients act on the velocity (each substep
    subtracts ``α_k Δt ∇φ_k``, ``Σ α_k = 1``). With a forced body the potentials differ
    from one another by a few per cent near it, and the last one alone misses the step's
    momentum balance by as much.
    """

    _forcing: tuple = ()
    _pressure_weight: float | None = None  # 1/Δt while a step sums its pressure into p
    _pressure_fresh = False  # p still holds the last step's: the next potential replaces it
    _bulk_rows: np.ndarray | None = None  # Σ_z u per owned (x, y) row, from the divergence
    bodies: tuple = ()
    inflow: Inflow | None = None
    body_loads = np.zeros((0, 6))
    fused = False  # the update before the projection in one pass (a solver's own kernel)
    subgrid = None  # a large-eddy simulation's SubgridStress (_set_up_subgrid)

    def _set_up_subgrid(self, kind, subgrid: tuple | None) -> None:
        """A :class:`~tachyflow.solvers.pencil.subgrid.SubgridStress` of ``kind`` from
        ``(model, constant, van_driest)``, with ν_t among the cell fields (``"nu_t"``) and
        its statistics' columns; nothing for None (a DNS)."""
        if subgrid is None:
            return
        self.subgrid = kind(self, *subgrid)
        self.fields = (*self.fields, "nu_t")
        self.statistics_columns = (
            *self.statistics_columns, "eddy_viscosity_ratio", "max_eddy_viscosity_ratio",
            *(("dynamic_coefficient",) if self.subgrid.model == "dynamic-global" else ()),
        )

    def _eddy_viscosity_field(self, out: np.ndarray | None, cells) -> np.ndarray:
        """``cell_field("nu_t", out, cells)``: ν_t of the last substep."""
        owned = self.subgrid.owned()
        window = owned if cells is None else owned[tuple(cells)]
        if out is None:
            return window.copy()
        out[...] = window
        return out

    def _subgrid_time_step(self, limit: float) -> float:
        """``limit``, or the explicit subgrid stress's if smaller (collective)."""
        return limit if self.subgrid is None else min(limit, self.subgrid.time_step_limit())

    @property
    def overlap(self) -> bool:
        """Whether the Poisson solve's transposes overlap its transforms and tridiagonal
        solves (``PoissonSolver(overlap)``; the same results to round-off). May be
        changed between steps."""
        return self.poisson.overlap

    @overlap.setter
    def overlap(self, value: bool) -> None:
        self.poisson.overlap = bool(value)

    @property
    def progress_calls(self) -> bool:
        """Whether overlapped transposes are tested between stages (MPI progress calls),
        in the Poisson solve and in the solver's own overlapped transposes."""
        return self.poisson.progress_calls

    @progress_calls.setter
    def progress_calls(self, value: bool) -> None:
        self.poisson.progress_calls = bool(value)

    def coordinates(self, component: str):
        """Broadcastable coordinates along axes 0, 1, 2 (x, y, z, or x, r, θ) of this
        rank's points of ``"u"``, ``"v"``, ``"w"`` (each half a cell up along its own
        axis) or ``"p"`` (cell centres)."""
        pencil, grid = self.decomposition.pencils["y"], self.grid
        x_range = slice(pencil.start[0], pencil.stop[0])
        first = grid.centres_x[x_range]
        third = (np.arange(pencil.start[2], pencil.stop[2]) + 0.5) * grid.spacing_z
        second = grid.centres_y
        if component == "u":
            first = grid.faces_x[1:][x_range]
        elif component == "v":
            second = grid.faces_y[1:]
        elif component == "w":
            third = third + 0.5 * grid.spacing_z
        elif component != "p":
            raise ValueError(f"component must be 'u', 'v', 'w' or 'p', got {component!r}")
        return first[:, None, None], second[None, :, None], third[None, None, :]

    def _ghosted_axes(self, component: str):
        """1D coordinates along x, y (r), z (θ) of this rank's ghosted points of
        ``component``, one ghost beyond each end."""
        first, second, third = (np.ravel(axis) for axis in self.coordinates(component))
        pencil = self.decomposition.pencils["y"]
        if pencil.size == 0:
            return first, second, third
        x_range = (pencil.start[0], pencil.stop[0])
        if component == "u":
            first = self.grid.ghosted_faces_x(*x_range)
        else:
            first = self.grid.ghosted_centres_x(*x_range)

        def extended(values, spacing=None):
            before = values[0] - (spacing or values[1] - values[0])
            after = values[-1] + (spacing or values[-1] - values[-2])
            return np.concatenate([[before], values, [after]])

        return (
            first,
            extended(second),
            extended(third, self.grid.spacing_z),
        )

    # -- an open x: inflow and convective outflow ----------------------------------------------

    def _set_up_inflow(self, inflow: Inflow | None, tangential: np.ndarray | float) -> None:
        """Check and keep the inflow of a grid open in x; ``tangential``: the inflow value
        of the third velocity component per row across the flow."""
        grid, decomposition = self.grid, self.decomposition
        if decomposition.periodic[0] != grid.periodic_x:
            raise ValueError(
                f"decomposition periodic in x = {decomposition.periodic[0]} but the grid's "
                f"periodic_x = {grid.periodic_x}"
            )
        if grid.periodic_x != (inflow is None):
            raise ValueError(
                "an inflow needs a grid open in x (periodic_x = False) and such a grid needs "
                f"an inflow; got periodic_x = {grid.periodic_x}, inflow = {inflow!r}"
            )
        if inflow is not None and self.forcing.kind != "none":
            raise ValueError(
                f"forcing must be 'none' with an inflow (it sets the flow rate), got "
                f"{self.forcing.kind!r}"
            )
        self.inflow = inflow
        if inflow is None:
            return
        pencil = decomposition.pencils["y"]
        self._owns_inflow = pencil.start[0] == 0
        self._owns_outflow = pencil.stop[0] == grid.shape[0]
        self._inflow_u = inflow.axial_profile(grid)[:, None]
        self._inflow_w = tangential

    def _apply_inflow_and_outflow(self) -> None:
        """The ghost planes beyond the ends of an open x: the prescribed inflow (u on the
        inflow face, the other components by reflection about their inflow values), and
        zero gradient beyond the outflow (its face u is an unknown of its own)."""
        u, v, w = self.velocity_arrays()
        if self._owns_inflow:
            u[0, 1:-1, :] = self._inflow_u
            v[0] = -v[1]
            w[0, 1:-1, :] = 2.0 * self._inflow_w - w[1, 1:-1, :]
        if self._owns_outflow:
            for field in (u, v, w):
                field[-1] = field[-2]

    def _exchange_pressure(self, pressure: np.ndarray) -> None:
        """The ghosts of ``pressure`` (p or a projection's potential): the halo, and zero
        gradient beyond the ends of an open x."""
        self.halo.exchange(pressure)
        if self.inflow is not None:
            if self._owns_inflow:
                pressure[0] = pressure[1]
            if self._owns_outflow:
                pressure[-1] = pressure[-2]

    def _pressure_part(self, alpha_dt: float) -> tuple[np.ndarray | None, float, bool]:
        """Where and how a projection's potential joins the step's pressure, as the
        gradient pass takes it: p's owned cells, the weight ``α_k = α_k Δt / Δt`` and
        whether p still holds the last step's (then replaced) while a step runs; else no
        part (a projection outside the steps, as of newly immersed bodies, leaves p)."""
        if self._pressure_weight is None:
            return None, 0.0, False
        fresh, self._pressure_fresh = self._pressure_fresh, False
        return self.halo.interior(self.p), alpha_dt * self._pressure_weight, fresh

    def _balance_outflow(self) -> None:
        """Shift the outflow velocity uniformly so the outflow equals the inflow
        (collective)."""
        u = self.velocity_arrays()[0]
        weights = self.grid.volume_weights_y[:, None]
        local = float(np.sum(u[-2, 1:-1, 1:-1] * weights)) if self._owns_outflow else 0.0
        outflow = self.decomposition.sum(local) / self.grid.shape[2]
        if self._owns_outflow:
            u[-2, 1:-1, 1:-1] += self.inflow.velocity - outflow

    def _outflow_terms(self, explicit: np.ndarray) -> None:
        """Replace the streamwise momentum terms on the outflow face by the convective
        outflow condition ``∂u/∂t = -U ∂u/∂x`` (explicit, first-order upwind)."""
        if self._owns_outflow:
            u = self.velocity_arrays()[0]
            explicit[-1] = -self.inflow.velocity * (u[-2, 1:-1, 1:-1] - u[-3, 1:-1, 1:-1])
            explicit[-1] /= self.grid.widths_x[-1]

    def immersed_points(self, component: str) -> immersed.ComponentPoints:
        """Where ``component`` lives on this rank's ghosted piece, in Cartesian
        coordinates (for immersed bodies)."""
        raise NotImplementedError

    def _divergence(self, scale: float = 1.0, rows: np.ndarray | None = None) -> np.ndarray:
        """``scale ∇·u`` at the owned cells; with ``rows`` (one per owned (x, y) row), the
        sums of the streamwise velocity along z of each row written there in the same
        pass."""
        raise NotImplementedError

    def _subtract_pressure_gradient(
        self, factor: float, shift: np.ndarray | None = None, total: np.ndarray | None = None
    ) -> None:
        """``u -= factor ∇p`` on the owned faces; with ``shift`` (one value per owned y
        row), ``u += shift[y]``, and with ``total`` (the owned shape), ``total += factor
        p``, in the same pass."""
        raise NotImplementedError

    def _flow_rate_response(self, alpha_dt: float) -> np.ndarray:
        """The velocity a unit streamwise force adds in a substep, per y row (through the
        implicit wall-normal operator: so the steady state of a laminar flow is the exact
        discrete one)."""
        raise NotImplementedError

    def velocity_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ghosted arrays of the three stored velocity components."""
        raise NotImplementedError

    def immerse(self, bodies) -> None:
        """Impose ``bodies`` (:class:`tachyflow.numerics.immersed.Body`) from now on, and on
        the current velocity (collective: the velocity is projected again)."""
        bodies = tuple(bodies)
        self.bodies = bodies
        self._forcing = tuple(
            immersed.forcing_stencil(bodies, self.immersed_points(name)) for name in "uvw"
        ) if bodies else ()
        # A cell whose every face has its velocity prescribed (inside a body, forced, or a
        # wall) carries a mass source (Kim, Kim & Choi 2001): continuity is not imposed
        # there, so the projection does not push the forced velocity back (second order,
        # not first). A cell with a free face keeps continuity, or that face would drift.
        owned = (slice(1, -1),) * 3
        source = np.ones(self.decomposition.local_shape("y"), dtype=bool)
        for axis, stencil in enumerate(self._forcing):
            marker = self.halo.allocate()
            marker.flat[np.concatenate([stencil.inside, stencil.targets])] = 1.0
            self.halo.exchange(marker)
            if axis == 1 and not self.grid.periodic_y:
                marker[:, 0, :] = marker[:, -2, :] = 1.0  # the walls' faces
            below = list(owned)
            below[axis] = slice(0, -2)
            source &= (marker[owned] > 0) & (marker[tuple(below)] > 0)
        self._fluid_cells = ~source
        self._previous = None
        self._impulse = np.zeros((len(bodies), 6))
        self._project(1.0, restore_flow_rate=False)

    def immerse_case_bodies(self, config) -> None:
        """Impose the case's ``[[immersed.body]]``, if any (collective)."""
        from tachyflow.solvers.pencil import bodies

        found = bodies.from_case(config)
        if found:
            self.immerse(found)
        self._rotor = bodies.rotor_of(config)

    def rotor(self):
        """The case's rotor (:class:`~tachyflow.solvers.base.Rotor`), else None."""
        return getattr(self, "_rotor", None)

    def _continuity_residual(self, divergence: np.ndarray, sources: bool = False) -> np.ndarray:
        """``divergence`` (owned cells) without the mass sources of immersed bodies; with
        ``sources``, the cells with a source share uniformly what the fluid cells' total
        lacks for a solvable Poisson problem (collective then)."""
        if not self._forcing:
            return divergence
        divergence *= self._fluid_cells
        if sources:
            weights = self._cell_weights()
            totals = np.array([np.sum(divergence * weights), np.sum(~self._fluid_cells * weights)])
            excess, volume = self.decomposition.sum_arrays(totals)
            if volume > 0:
                divergence[~self._fluid_cells] = -excess / volume
        return divergence

    def _cell_weights(self) -> np.ndarray:
        """Each owned cell's volume in proportion, broadcastable to the owned cells: the
        y weights, times each x cell's width over the mean where x is stretched."""
        weights = self.grid.volume_weights_y[None, :, None]
        if self.grid.uniform_x:
            return weights
        return self._x_plane_weights()[:, None, None] * weights

    def _x_plane_weights(self) -> np.ndarray:
        """Each owned x plane's width over the mean width (a stretched x's)."""
        pencil = self.decomposition.pencils["y"]
        widths = self.grid.widths_x[pencil.start[0] : pencil.stop[0]]
        return widths * (self.grid.shape[0] / self.grid.lengths[0])

    def project(self) -> None:
        """Make the velocity set now discretely divergence-free (collective): a field
        solenoidal only analytically (random modes sampled on the staggered grid) loses
        what its discrete divergence holds."""
        self._previous = None
        self._project(1.0, restore_flow_rate=False)

    def _project(self, alpha_dt: float, restore_flow_rate: bool = True) -> None:
        """Make the velocity divergence-free (collective): boundaries, immersed bodies and
        the outflow's balance first; the pressure is the projection potential."""
        with self.timer("boundaries"):
            self._boundaries_before_projection()
        if self._forcing:
            with self.timer("immersed"):
                self._impulse += self._force_bodies()
        # The flow-rate force comes from the bulk velocity before the gradient is taken
        # off: the same (x is periodic with it, and an x gradient sums to zero along x),
        # and summed in the divergence's pass, added in the gradient's.
        restore = restore_flow_rate and self.forcing.kind == "flow-rate"
        with self.timer("projection"):
            if self.inflow is not None:
                self._balance_outflow()
            rows = self._bulk_rows_array() if restore else None
            rhs = self._continuity_residual(self._divergence(1.0 / alpha_dt, rows), sources=True)
        with self.timer("poisson"):  # straight into the potential's array (planned there)
            self.poisson.solve(rhs, out=self.halo.interior(self.potential))
        with self.timer("projection"):
            self._exchange_pressure(self.potential)
            shift = self._flow_rate_shift(alpha_dt, rows) if restore else None
            # The potential's gradient, and its part of the step's pressure, in one pass.
            self._subtract_pressure_gradient(alpha_dt, shift)
        with self.timer("boundaries"):
            self._apply_boundaries()

    def _boundaries_before_projection(self) -> None:
        """The ghosts and boundary values the projection's divergence reads (all of them
        here; a solver that took the divergence in its update's pass may need fewer)."""
        self._apply_boundaries()

    def max_divergence(self) -> float:
        """Largest |∇·u| over the fluid cells (not those with an immersed body's mass
        source) (collective)."""
        residual = self._continuity_residual(self._divergence())
        # |r|'s largest without an |r| array (NaN stays NaN: it is both extremes).
        largest = max(residual.max(initial=0.0), -residual.min(initial=0.0))
        return self.decomposition.maximum(float(largest))

    def _force_bodies(self) -> np.ndarray:
        """Impose the bodies on the owned velocity (refreshing the halos); return this
        rank's momentum change (force and moment on the fluid times Δt)."""
        load = sum(
            stencil.apply(values)
            for stencil, values in zip(self._forcing, self.velocity_arrays(), strict=True)
        )
        self._apply_boundaries()
        return load

    def step(self, dt: float) -> None:
        """Advance one time step of size ``dt``: the three substeps of the low-storage RK3
        (``self._substep(dt, stage)``) (collective)."""
        if not dt > 0:
            raise ValueError(f"time step must be positive, got {dt!r}")
        if self._forcing:
            self._impulse[...] = 0.0
        # The step's pressure Σ_k α_k φ_k (non-incremental projection) is summed into p by
        # the substeps' gradient passes, the first replacing the last step's.
        self._pressure_weight, self._pressure_fresh = 1.0 / dt, True
        try:
            for stage in range(3):
                self._substep(dt, stage)
        finally:
            self._pressure_weight = None
        self._exchange_pressure(self.p)
        if self._forcing:
            self.body_loads = -self.decomposition.sum_arrays(self._impulse) / dt
        self.time += dt
        self.steps += 1

    def _bulk_rows_array(self) -> np.ndarray:
        if self._bulk_rows is None:
            self._bulk_rows = np.empty(self.poisson.work.shape[:2])
        return self._bulk_rows

    def _flow_rate_shift(self, alpha_dt: float, rows: np.ndarray) -> np.ndarray:
        """The streamwise velocity, per y row, of the uniform force that brings the bulk
        velocity (from this rank's row sums ``rows``) back to its target (collective). The
        force is kept in ``pressure_gradient`` (``-dp/dx``)."""
        response = self._flow_rate_response(alpha_dt)
        weights = self.grid.volume_weights_y
        mean_response = float(np.dot(response, weights))
        bulk = self._cell_mean(reductions.weighted_rows_total(rows, weights))
        force = (self.forcing.value - bulk) / (alpha_dt * mean_response)
        self.pressure_gradient = force
        return alpha_dt * force * response

    def _cell_mean(self, local: float) -> float:
        """The ranks' sums of y-weighted values over x, y and z, averaged over the cells of
        an x-z plane (collective)."""
        nx, _, nz = self.grid.shape
        return self.decomposition.sum(local) / (nx * nz)

    def _x_weighted(self, reduce, *arrays, ghosted: bool = False) -> float:
        """``reduce(*arrays)``, a y-weighted sum over this rank's piece (owned arrays, or
        ``ghosted`` ones with one ghost layer), with each x plane weighted by its width
        over the mean: on a stretched x one call per owned plane (local)."""
        if self.grid.uniform_x:
            return reduce(*arrays)
        span = 3 if ghosted else 1
        return float(sum(weight * reduce(*(array[i : i + span] for array in arrays))
                         for i, weight in enumerate(self._x_plane_weights())))

    def volume_average(self, values: np.ndarray) -> float:
        """Volume average of a cell-centred owned array (collective)."""
        weights = self.grid.volume_weights_y
        return self._cell_mean(
            self._x_weighted(lambda piece: reductions.y_weighted_sum(piece, weights), values)
        )

    def bulk_velocity(self) -> float:
        """Volume-averaged streamwise velocity (collective)."""
        return self.volume_average(self.halo.interior(self.velocity_arrays()[0]))

    def piece_layout(self) -> PieceLayout:
        """This rank's y-pencil in the global grid."""
        pencil = self.decomposition.pencils["y"]
        return PieceLayout(self.decomposition.global_shape, pencil.start, pencil.shape)

    def restore_interpolated(self, path):
        """Continue from checkpoint ``path`` of another grid of this case (other cells),
        its fields interpolated linearly onto this grid, then projected (collective;
        :mod:`tachyflow.solvers.pencil.regrid`)."""
        from tachyflow.solvers.pencil import regrid

        checkpoint, pieces = regrid.read_onto(self, path)
        self.restore_state(pieces, {"step": checkpoint.step, "time": checkpoint.time,
                                    **checkpoint.scalars})
        self.project()
        return checkpoint

    def layout(self) -> dict:
        """Grid and process grid."""
        return {
            "grid": list(self.decomposition.global_shape),
            "proc_grid": list(self.decomposition.proc_grid),
        }

    def phase_seconds(self) -> dict[str, float]:
        """FFT, transposes, tridiagonal solves (pressure, and the implicit viscous terms
        added to the velocity), advection and diffusion (or, fused, velocity: both, the
        RK3 increments and the implicit viscous terms in one pass), projection (divergence,
        pressure gradient and its halo, flow rate), boundaries (velocity halos, wall
        ghosts) and immersed-body forcing time of the steps so far (this rank)."""
        poisson, own = self.poisson.timer.seconds, self.timer.seconds
        # The fused pass (the whole update before the projection) where the solver has one.
        explicit = ("velocity",) if self.fused else ("advection", "diffusion")
        phases = {
            "fft": poisson["fft"],
            "transposes": poisson["transpose"],
            "tdma": poisson["tdma"] + own["implicit"],
            **{name: own[name] for name in explicit},
            "projection": own["projection"],
            "boundaries": own["boundaries"],
        }
        if self._forcing:
            phases["immersed"] = own["immersed"]
        if "subgrid" in own:
            phases["subgrid"] = own["subgrid"]
        return phases

    def free(self) -> None:
        """Release the Poisson solver's communicators (collective)."""
        self.poisson.free()
