"""Observers: everything a run does besides stepping the solver, one protocol and a registry.

Statistics, checkpoints, images, fields, in situ / in transit visualisation and acoustics
are observers. The run driver (:class:`tachyflow.simulation.Simulation`) builds, from the
case, every registered observer that the case turns on, calls :meth:`Observer.start`
once, :meth:`Observer.observe` after every step on which :meth:`Observer.due` holds, and
:meth:`Observer.finish` after the last step. Observers see the run through its public
attributes (``config``, ``comm``, ``output``, ``root``, ``observers``, ``solver`` — the
:class:`~tachyflow.solvers.base.Solver` interface only —, ``history``, ``dt``, ``cfl``,
``step_seconds``, ``log``).

A user's own observer is a subclass registered with :func:`register` (from a plug-in,
:mod:`tachyflow.plugins`); the case turns it on with a table ``[observers.NAME]`` whose
keys are passed to its constructor. See docs/extending.md.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.registry import Registry

# Built-in observers, in the order they observe a step (statistics first: images and the
# live viewer show the history it records). Imported on first use.
BUILTIN = (
    "tachyflow.observers.statistics",
    "tachyflow.observers.settled",
    "tachyflow.observers.bodies",
    "tachyflow.observers.cylinder_wake",
    "tachyflow.observers.surface_loads",
    "tachyflow.observers.fan",
    "tachyflow.observers.turbulence",
    "tachyflow.observers.spectra",
    "tachyflow.observers.checkpoints",
    "tachyflow.observers.images",
    "tachyflow.observers.fields",
    "tachyflow.observers.block_fields",
    "tachyflow.observers.block_images",
    "tachyflow.observers.visualisation",
    "tachyflow.observers.acoustics",
    "tachyflow.observers.mesh_solution",
    "tachyflow.observers.aerodynamics",
)


@dataclass
class ObserverState:
    """What an observer keeps across a restart, carried in every checkpoint.

    Attributes
    ----------
    replicated : dict of str to ndarray
        Small arrays equal on every rank (running averages over homogeneous directions,
        counters); rank 0's are written.
    pieces : dict of str to ndarray
        This rank's cell-centred piece of a distributed field, laid out as
        ``solver.cell_field`` (the y-pencil of ``solver.decomposition``); written as one
        global array, so a restart on another rank count gets its own pieces back.
    """

    replicated: dict[str, np.ndarray] = field(default_factory=dict)
    pieces: dict[str, np.ndarray] = field(default_factory=dict)


class Observer:
    """Something a run does on a cadence of steps.

    Subclasses set ``name`` and implement :meth:`from_case` (the observer the case asks
    for, or None when it asks for none); ``every`` is the cadence in steps (0: only at
    start and finish). :meth:`start`, :meth:`observe` and :meth:`finish` are collective:
    every rank calls them on the same steps.
    """

    name: ClassVar[str]
    every: int = 0
    # Whether the constructor takes the case first: ``cls(config, **options)``.
    needs_config: ClassVar[bool] = False
    #: The capabilities of the case's solver this observer needs
    #: (:mod:`tachyflow.solvers.base`: ``"pencil-fields"``, ``"rotor"``, ...).
    needs: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def applies(cls, config) -> bool:
        """Whether the case's solver provides what this observer needs."""
        return cls.needs <= config.provides

    @classmethod
    def require_needs(cls, config, what: str, extra: frozenset[str] = frozenset()) -> None:
        """Refuse ``what`` (the table that turns this observer on) when the case's solver
        lacks a capability this observer needs (with ``extra``: what ``what`` adds),
        naming what is missing."""
        missing = sorted((cls.needs | extra) - config.provides)
        if missing:
            raise ConfigError(
                f"{config.source}: {what} needs {', '.join(missing)}, which solver "
                f"{config.case.solver!r} does not provide for this case (it provides "
                f"{', '.join(sorted(config.provides)) or 'nothing'})"
            )

    @classmethod
    def from_case(cls, config, options: dict | None) -> Observer | None:
        """The observer of a case; ``options`` is its ``[observers.NAME]`` table, if any."""
        if options is None:
            return None
        cls.require_needs(config, f"[observers.{cls.name}]")
        try:
            return cls(config, **options) if cls.needs_config else cls(**options)
        except TypeError as error:
            raise ConfigError(f"[observers.{cls.name}]: {error}") from None

    def due(self, step: int) -> bool:
        """True when :meth:`observe` runs after ``step``."""
        return bool(self.every) and step % self.every == 0

    def start(self, run) -> None:
        """Before the first step (after a restart: from the restored state)."""

    def observe(self, run) -> None:
        """After a step on which :meth:`due` holds."""

    def finish(self, run) -> None:
        """After the last step."""

    def close(self, run) -> None:
        """After a run stopped early (a stop signal): leave files whole, write no more."""

    def checkpoint_state(self, run) -> ObserverState | None:
        """What a restart needs to continue this observer, written into every checkpoint
        (collective); None: nothing."""
        return None

    def restore_state(self, run, state: ObserverState) -> None:
        """Continue from the state a checkpoint kept (collective; called before
        :meth:`start`, only when the checkpoint holds a state of this observer)."""

    def summary(self) -> dict | None:
        """What the run's ``timings.json`` records of this observer, if anything."""
        return None


_OBSERVERS = Registry("observer", Observer)


def register(cls: type[Observer]) -> type[Observer]:
    """Class decorator: make ``cls`` an observer that cases can turn on by its ``name``."""
    return _OBSERVERS.add(cls)


def registered() -> dict[str, type[Observer]]:
    """Every observer class by name, built-ins first, then plug-ins'."""
    from tachyflow import plugins

    for module in BUILTIN:
        importlib.import_module(module)
    plugins.load()
    # Built-ins in BUILTIN's order whatever imported them first, then plug-ins'.
    rank = {module: index for index, module in enumerate(BUILTIN)}
    ordered = sorted(_OBSERVERS.classes().items(),
                     key=lambda item: rank.get(item[1].__module__, len(rank)))
    return dict(ordered)


def build(config) -> list[Observer]:
    """The observers a case turns on, in observing order."""
    classes = registered()
    tables = dict(config.observers)
    unknown = sorted(set(tables) - set(classes))
    if unknown:
        raise ConfigError(
            f"{config.source}: [observers.{unknown[0]}]: no such observer; registered: "
            f"{sorted(classes)}"
        )
    found = []
    for name, cls in classes.items():
        observer = cls.from_case(config, tables.get(name))
        if observer is not None:
            found.append(observer)
    return found
