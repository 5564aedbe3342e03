"""The one solver interface, and the registry that names solvers in case files.

A case file says which solver runs it (``[case] solver = "incompressible"``); ``tachyflow
run`` builds it with :func:`build` and drives it through :class:`Solver` alone, so the time
loop, the observers (statistics, checkpoints, images, fields, visualisation, acoustics)
and the commands work for every solver. A new solver is one module that subclasses
:class:`Solver` and registers it by name (``@register("name")``), as PETSc names its KSP
types; a plug-in (:mod:`tachyflow.plugins`) can register one from outside tachyflow.
"""

from __future__ import annotations

import importlib
from typing import ClassVar

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.registry import Registry

# Built-in solvers: name -> module that registers it (imported on first use, so that reading
# a case file never imports a solver's kernels).
BUILTIN = {
    "incompressible": "tachyflow.solvers.pencil.incompressible",
    "pressure": "tachyflow.solvers.unstructured.pressure_case",
    "cylindrical": "tachyflow.solvers.pencil.cylindrical",
    "compressible": "tachyflow.solvers.compressible.solver",
}


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
    # True for solvers on a structured (pencil) grid: what images, field series, in situ
    # visualisation and acoustics sample from.
    structured: ClassVar[bool] = True
    # The coordinates of a structured grid: "cartesian" (x, y, z) or "cylindrical" (x, r, θ).
    coordinate_system: ClassVar[str] = "cartesian"
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

    def layout(self) -> dict:
        """How the problem is laid out (grid, process grid, cells), for the run's summary."""
        return {}

    def phase_seconds(self) -> dict[str, float]:
        """Wall time per phase of the steps so far (this rank)."""
        return {}

    def free(self) -> None:
        """Release communicators and plans."""


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
        importlib.import_module(BUILTIN[name])
    if name not in _SOLVERS:
        raise ConfigError(f"case.solver must be one of {names()}, got {name!r}")
    return _SOLVERS[name]
