"""The subgrid-scale stress of a large-eddy simulation on the Cartesian pencil solver.

:class:`SubgridStress` owns the eddy viscosity ν_t (a ghosted array beside the velocity):
each substep it computes ν_t at the owned cell centres from the velocity
(:mod:`tachyflow.numerics.eddy_viscosity`: Smagorinsky with van Driest's damping, Vreman,
WALE, and Park, Lee, Lee & Choi's dynamic global coefficient of Vreman's form), sets it
to zero inside immersed bodies (the forcing's velocity is no flow to model), fills its
ghosts (periodic images by the halo exchange; at a wall the mirror with
the opposite sign, so that ν_t is zero on the wall's edges) and adds the divergence of
``2 ν_t S_ij`` to the explicit terms of the RK3 substep; the molecular viscosity stays
implicit in y as without a model.
"""

from __future__ import annotations

import math

import numpy as np

from tachyflow.numerics import eddy_viscosity


class SubgridStress:
    """An eddy-viscosity model's stress on one pencil solver's velocity.

    Parameters
    ----------
    solver : IncompressibleSolver
        The solver whose ``halo``, ``grid``, ``metrics``, spacings, ``viscosity``,
        ``walls`` and ``decomposition`` it uses.
    model : str
        One of :data:`tachyflow.numerics.eddy_viscosity.MODELS`.
    constant : float or None
        The model's constant (None: its default, :data:`~tachyflow.numerics.eddy_viscosity.
        CONSTANTS`).
    van_driest : bool
        Smagorinsky's damping near walls (with walls only).

    Notes
    -----
    :meth:`add_to` and :meth:`statistics` are collective over the solver's
    decomposition; :meth:`owned` is local.
    """

    #: The models: the algebraic ones and the dynamic global-coefficient one.
    MODELS = (*eddy_viscosity.MODELS, "dynamic-global")

    def __init__(self, solver, model: str, constant: float | None = None,
                 van_driest: bool = True):
        if model not in self.MODELS:
            raise ValueError(f"model must be one of {self.MODELS}, got {model!r}")
        if constant is not None and not (math.isfinite(constant) and constant >= 0):
            raise ValueError(f"constant must be a number >= 0, got {constant!r}")
        self.model, self.constant = model, constant
        self.solver = solver
        self.nu = solver.halo.allocate()
        self._owned = np.empty(solver.halo.interior(self.nu).shape)
        self._damped = van_driest and model == "smagorinsky" and solver.walls
        # The dynamic model's filtered parts (ghosted), made at its first substep.
        self._parts = None
        self.coefficient = constant  # the dynamic model's C_v of the last substep

    def _damping(self) -> np.ndarray | None:
        """van Driest's factor per owned y row, from the mean friction velocity now."""
        if not self._damped:
            return None
        solver = self.solver
        shear = abs(solver.wall_shear())
        friction = math.sqrt(shear) if shear > 0 else 0.0
        # y is whole in the y-pencils the velocity lives in.
        return eddy_viscosity.van_driest(solver.grid.wall_distances_y, friction,
                                         solver.viscosity)

    def add_to(self, explicit: np.ndarray, fluid: np.ndarray | None = None,
               first: bool = True) -> None:
        """``explicit[a] += ∂_j (2 ν_t S_aj)`` at the owned faces, ν_t from the velocity
        now (collective); ``fluid`` (owned cells, bool) where ν_t is kept, if given. The
        dynamic model's coefficient is computed at the ``first`` substep of each step and
        kept for the other two (as Park et al. update it once a time step)."""
        solver = self.solver
        u, v, w = solver.u, solver.v, solver.w
        if self.model == "dynamic-global":
            if first or self.coefficient is None:
                self.coefficient = self._dynamic_coefficient(fluid)
            model, constant = "vreman", self.coefficient
        else:
            model, constant = self.model, self.constant
        eddy_viscosity.eddy_viscosity(
            u, v, w, solver.metrics, solver.dx, solver.dz, model, self._owned, constant,
            self._damping(),
        )
        if fluid is not None:
            self._owned *= fluid
        solver.halo.interior(self.nu)[...] = self._owned
        solver.halo.exchange(self.nu)
        if solver.walls:
            self.nu[:, 0, :] = -self.nu[:, 1, :]
            self.nu[:, -1, :] = -self.nu[:, -2, :]
        eddy_viscosity.add_stress_divergence(
            u, v, w, self.nu, solver.metrics, solver.dx, solver.dz, explicit
        )

    def _dynamic_coefficient(self, fluid) -> float:
        """Park et al.'s C_v of the velocity now, from sums over every rank (collective)."""
        solver = self.solver
        if self._parts is None:
            self._parts = np.stack([solver.halo.allocate()
                                    for _ in range(eddy_viscosity.PARTS)])
        eddy_viscosity.vreman_parts(solver.u, solver.v, solver.w, solver.metrics, solver.dx,
                                    solver.dz, self._parts)
        solver.halo.exchange(*self._parts)
        # Filtered along x, z and a periodic y: not across walls.
        filtered = (True, not solver.walls, True)
        sums = eddy_viscosity.global_sums(self._parts, solver.metrics, solver.dx, solver.dz,
                                          filtered, fluid)
        numerator, denominator = solver.decomposition.sum_arrays(sums)
        return eddy_viscosity.dynamic_coefficient(numerator, denominator, solver.viscosity)

    def owned(self) -> np.ndarray:
        """ν_t at this rank's cell centres (as of the last substep)."""
        return self._owned

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
