"""The one solver interface, and the registry that names solvers in case files.

A case file says which solver runs it (``[case] solver = "incompressible"``); ``tachyflow
run`` builds it with :meth:`Solver.from_case` of :func:`solver_class` and drives it through
:class:`Solver` alone, so the time loop, the observers (statistics, checkpoints, images,
fields, visualisation, acoustics) and the commands work for every solver. A new solver is
one module that subclasses :class:`Solver` and registers it by name
(``@register("name")``), as PETSc names its KSP types; a plug-in (:mod:`tachyflow.plugins`)
can register one from outside tachyflow. A solver declares the case tables it reads and
the capabilities it provides (:class:`SolverOptions`, :attr:`Solver.case_options`);
observers declare the capabilities they need.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.registry import Registry

# Built-in solvers: name -> (the module that registers it, the light module holding its
# case options): the solver's module is imported on first use, so that reading a case file
# never imports a solver's kernels.
BUILTIN = {
    "incompressible": ("tachyflow.solvers.pencil.incompressible",
                       "tachyflow.solvers.pencil.options:CARTESIAN"),
    "pressure": ("tachyflow.solvers.unstructured.pressure_case",
                 "tachyflow.solvers.unstructured.options:PRESSURE"),
    "cylindrical": ("tachyflow.solvers.pencil.cylindrical",
                    "tachyflow.solvers.pencil.options:CYLINDRICAL"),
    "compressible": ("tachyflow.solvers.compressible.solver",
                     "tachyflow.solvers.compressible.options:COMPRESSIBLE"),
}

# Capabilities: what a solver offers the run's observers and commands (PyFR's "systems").
#: Cell-centred fields on pencils of a structured grid (``decomposition``, ``grid``,
#: ``halo``, ``cell_field``): images, field series, in situ visualisation, acoustics.
PENCIL_FIELDS = "pencil-fields"
#: Cell fields on a Cartesian grid (x, y, z): what a permeable FW-H surface samples.
CARTESIAN_GRID = "cartesian-grid"
#: Immersed bodies and their loads (:meth:`Solver.body_loads`, :meth:`Solver.bodies`).
IMMERSED_BODIES = "immersed-bodies"
#: A rotor among the bodies (:meth:`Solver.rotor`, :meth:`Solver.section_pressures`,
#: :meth:`Solver.section_flow`).
ROTOR = "rotor"
#: Fields of a 2D curvilinear block per rank (:meth:`Solver.node_field`, node coordinates).
BLOCK_FIELDS = "block-fields"
#: Wall surfaces with force coefficients (:meth:`Solver.wall_surface`).
WALL_SURFACES = "wall-surfaces"
#: A solution on an unstructured mesh (``mesh``, ``mesh_name``).
MESH_SOLUTION = "mesh-solution"
#: Checkpoints and restarts (:meth:`Solver.checkpoint_state` and its pair).
CHECKPOINTS = "checkpoints"


@dataclass(frozen=True)
class Rotor:
    """A rotor among a solver's immersed bodies: what forces, performance and noise read of
    a fan, from one place (:meth:`Solver.rotor`).

    Attributes
    ----------
    body : int
        Its row in :attr:`Solver.body_loads` and its index in :attr:`Solver.bodies`.
    blades : int
        Blades of the whole rotor.
    sectors : int
        The computed sector is ``1 / sectors`` of the rotor (its loads count that often).
    rotation : float
        Angular velocity about x (the frame turns with the rotor).
    radius, hub_radius : float
        The duct's and the hub's radii.
    pressure_planes : tuple of float
        x of the planes up- and downstream between which the pressure rise is taken.
    inflow_velocity : float
        The bulk velocity through the annulus.
    density : float
        The fluid's density (the solver's pressure is per unit density).
    units : str
        ``"SI"`` when the case is dimensional (m, s, kg/m³), else ``"non-dimensional"``.
    """

    body: int
    blades: int
    sectors: int
    rotation: float
    radius: float
    hub_radius: float
    pressure_planes: tuple[float, float]
    inflow_velocity: float
    density: float = 1.0
    units: str = "non-dimensional"


@dataclass(frozen=True)
class SolverOptions:
    """What a solver reads of a case file, and what it offers the case's observers.

    Parameters
    ----------
    tables : mapping of str to type
        The case tables the solver owns (``[grid]``, ``[compressible]``, ``[mysolver]``...),
        each an options dataclass (:mod:`tachyflow.options`); a missing table takes its
        defaults. Only these and the shared sections are read from the case.
    check : callable, optional
        ``check(config, require)``: the checks across values, ``require(condition, key,
        expectation, value)`` raising the error that names the key.
    provides : callable, optional
        ``provides(config) -> frozenset`` of the capabilities (the names above) this
        solver offers for the case; none by default.
    """

    tables: Mapping[str, type] = field(default_factory=dict)
    check: Callable | None = None
    provides: Callable = lambda config: frozenset()


class Solver:
    """What the run driver and observers may use of a solver.

    Attributes
    ----------
    steps : int
        Steps taken since the initial condition.
    time : float
        Simulated time.
    decomposition
        The object that owns the solver's communicators and offers ``sum``, ``maximum``,
        ``all``, ``barrier``, ``gather_global`` and ``scatter_global``.
    grid
        The geometry that outputs draw and write on (cell faces and centres).
    fields : tuple of str
        Names of the fields :meth:`cell_field` gives.

    Notes
    -----
    :meth:`from_case`, :meth:`step`, :meth:`statistics`, :meth:`stable_time_step`,
    :meth:`finished`,
    :meth:`cfl_number`, :meth:`checkpoint_state`, :meth:`restore_state` and :meth:`free`
    are collective over the solver's communicator; :meth:`cell_field` is local.
    """

    name: ClassVar[str]
    fields: ClassVar[tuple[str, ...]] = ()
    # The case tables the solver reads and the capabilities it provides.
    case_options: ClassVar[SolverOptions] = SolverOptions()
    statistics_columns: ClassVar[tuple[str, ...]] = ("step", "time")
    steps: int
    time: float

    @classmethod
    def memory_per_rank(cls, config, ranks: int) -> tuple[int, int] | None:
        """Bytes the case needs on each rank and on rank 0 (which may gather more), before
        anything is allocated; None when the solver cannot tell."""
        return None

    @classmethod
    def from_case(cls, config, comm, planning: str = "measure") -> Solver:
        """Build the solver of a case and set its initial condition (collective)."""
        raise NotImplementedError

    def step(self, dt: float) -> None:
        """Advance one time step of size ``dt``."""
        raise NotImplementedError

    def stable_time_step(self, cfl: float) -> float:
        """The largest stable ``dt`` at CFL number ``cfl``."""
        raise NotImplementedError

    def cfl_number(self, dt: float) -> float:
        """The CFL number of a step of size ``dt``."""
        raise NotImplementedError

    def cell_field(self, name: str) -> np.ndarray:
        """This rank's piece of field ``name`` at cell centres, without ghosts."""
        raise NotImplementedError

    def nonfinite_field(self) -> str | None:
        """The name of a field holding NaN or infinity on this rank, else None (local)."""
        for name in self.fields:
            if not np.isfinite(self.cell_field(name)).all():
                return name
        return None

    def finished(self) -> bool:
        """True once the solver has reached its goal (a steady solver's target residual):
        the run then ends after this step. Collective in effect: it must return the same
        on every rank (decide it on reduced values)."""
        return False

    def statistics(self) -> dict:
        """Global diagnostics of the current state (the columns of ``stats.csv``)."""
        raise NotImplementedError

    def checkpoint_state(self) -> tuple[dict[str, np.ndarray], dict[str, float]]:
        """This rank's pieces of the fields a restart needs, laid out as
        :meth:`piece_layout` says, and the scalars (besides step and time) it needs."""
        raise NotImplementedError

    def piece_layout(self):
        """Where this rank's pieces (:meth:`checkpoint_state`, :meth:`cell_field`) lie in
        the global arrays: a :class:`tachyflow.io.checkpoint.PieceLayout`."""
        raise NotImplementedError

    def restore_state(self, pieces: dict[str, np.ndarray], scalars: dict) -> None:
        """Continue from this rank's pieces of a checkpoint and its scalars (``step`` and
        ``time`` among them), on any number of ranks."""
        raise NotImplementedError

    def restore_interpolated(self, path):
        """Continue from checkpoint ``path`` of another grid, interpolated onto this
        solver's (collective); returns the checkpoint's description. ConfigError for a
        solver that restarts only on its own grid."""
        raise ConfigError(f"--interpolate: solver {type(self).__name__} restarts only on the "
                          "grid it wrote")

    def layout(self) -> dict:
        """How the problem is laid out (grid, process grid, cells), for the run's summary."""
        return {}

    def phase_seconds(self) -> dict[str, float]:
        """Wall time per phase of the steps so far (this rank)."""
        return {}

    def free(self) -> None:
        """Release communicators and plans."""

    # -- capabilities: what a solver offers when its case_options provide them --------
    # pencil-fields: ``halo`` (the HaloExchange of its ghosted fields) and these two.

    def staggered_fields(self) -> tuple[np.ndarray, ...]:
        """The velocity components and the pressure as ghosted arrays in :attr:`halo`'s
        layout, at their staggered places (the second is the radial velocity on a
        cylindrical grid; capability ``pencil-fields``; local)."""
        raise NotImplementedError

    def cell_speed(self, out: np.ndarray, cells) -> np.ndarray:
        """|u| at the cell centres of ``cells`` of this rank's piece, into ``out``
        (capability ``pencil-fields``; local)."""
        raise NotImplementedError

    # immersed-bodies: ``bodies`` (the immersed bodies, in the case's order) and
    # ``body_loads`` (each body's force and moment, an array (bodies, 6), equal on every
    # rank).

    def rotor(self) -> Rotor | None:
        """The rotor among the bodies (capability ``rotor``), else None (local)."""
        return None

    def section_pressures(self, positions) -> np.ndarray:
        """The area-averaged pressure on the cross-sections at x = ``positions``
        (capability ``rotor``; collective)."""
        raise NotImplementedError

    def section_flow(self, positions) -> dict[str, np.ndarray]:
        """Area-averaged static pressure (``pressure``), mass-averaged total pressure in
        the inertial frame (``total_pressure``) and area-averaged axial velocity
        (``axial_velocity``) on the cross-sections at x = ``positions`` (capability
        ``rotor``; collective)."""
        raise NotImplementedError

    def node_coordinates(self) -> tuple[np.ndarray, np.ndarray]:
        """This rank's block's node coordinates x, y (capability ``block-fields``;
        local)."""
        raise NotImplementedError

    def node_field(self, name: str) -> np.ndarray:
        """Field ``name`` at this rank's block's nodes (capability ``block-fields``;
        local)."""
        raise NotImplementedError

    def wall_surface(self) -> dict | None:
        """The walls' pressure and skin-friction coefficients along them, on rank 0
        (capability ``wall-surfaces``; collective)."""
        raise NotImplementedError

    def aerodynamic_summary(self) -> dict:
        """The walls' force coefficients and the iteration's state (capability
        ``wall-surfaces``; collective)."""
        raise NotImplementedError

    # mesh-solution: ``mesh`` (this rank's piece of the unstructured mesh), ``mesh_name``
    # and ``summary`` (the last solve's).


def restartable(cls: type[Solver]) -> bool:
    """True when solver class ``cls`` writes checkpoints and restarts from them (it
    implements :meth:`Solver.checkpoint_state`, and with it ``piece_layout`` and
    ``restore_state``)."""
    return cls.checkpoint_state is not Solver.checkpoint_state


_SOLVERS = Registry("solver", Solver)


def register(name: str):
    """Class decorator: register a :class:`Solver` subclass under ``name``."""
    return _SOLVERS.named(name)


def names() -> list[str]:
    """Names of the solvers a case may ask for."""
    from tachyflow import plugins

    plugins.load()
    return sorted(set(BUILTIN) | set(_SOLVERS.classes()))


def solver_class(name: str) -> type[Solver]:
    """The solver registered as ``name``."""
    if name not in _SOLVERS and name in BUILTIN:
        importlib.import_module(BUILTIN[name][0])
    if name not in _SOLVERS:
        raise ConfigError(f"case.solver must be one of {names()}, got {name!r}")
    return _SOLVERS[name]


def solver_options(name: str) -> SolverOptions:
    """The case options of solver ``name``, without importing a built-in solver's module."""
    if name in BUILTIN and name not in _SOLVERS:
        module, attribute = BUILTIN[name][1].split(":")
        return getattr(importlib.import_module(module), attribute)
    return solver_class(name).case_options
