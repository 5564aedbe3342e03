"""``tachyflow acoustics``: FW-H noise prediction after the fact, from recorded surface data.

Surface data are an ADIOS2 BP5 series (a ``.bp`` folder, as a run with an ``[acoustics]``
section writes: :mod:`tachyflow.io.surface_series`) or one ``.npz`` file with, per source
time step and panel: ``times`` (nt), ``positions``, ``normals``, ``surface_velocity``
(nt, np, 3), ``areas`` (np), and either the flow values — ``pressure`` (nt, np), and for a
permeable surface ``density`` (nt, np) and ``velocity`` (nt, np, 3) — or the FW-H source
terms ``normal_flux`` (nt, np) and ``load`` (nt, np, 3). The observers file (TOML) names
the medium and the observers::

    c0 = 340.0            # speed of sound (default 340)
    rho0 = 1.225          # density at rest (default 1.0, as in [acoustics]; 1.225 for air in SI)
    permeable = false     # a TOML boolean
    samples = 1024        # observer-time samples (default 1024)
    time_order = 4        # source-time derivatives: 4 (5-step, default) or 2 (3-step)
    interpolation = "cubic"  # between arrivals in observer time: cubic (default) or linear

    [[observer]]
    name = "front"
    position = [10.0, 0.0, 0.0]

    [arc]                 # optional: observers on a circle, for a directivity plot
    radius = 20.0
    plane = "xy"          # xy, xz or yz
    centre = [0.0, 0.0, 0.0]
    start = 0.0           # degrees
    stop = 180.0
    count = 13

Unknown keys (also inside ``[[observer]]`` and ``[arc]``) and values of the wrong type are
refused. Ranks split the panels; the signals are summed over them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tachyflow import runtime
from tachyflow.acoustics.fwh import OBSERVER_BYTES, FWHSignals, FWHSolver, memory_needed
from tachyflow.acoustics.results import arc_observers
from tachyflow.errors import ConfigError
from tachyflow.io.surface_series import read_surface_series
from tachyflow.parallel import agreement

REQUIRED = ("times", "positions", "normals", "areas", "surface_velocity", "pressure")


@dataclass(frozen=True)
class ObserverSetup:
    """What an observers file says."""

    names: list[str]
    positions: np.ndarray
    arc_angles: np.ndarray  # degrees of the arc observers (the last ones), may be empty
    c0: float
    rho0: float
    permeable: bool
    samples: int
    time_order: int
    interpolation: str


def read_observers(path, comm=None) -> ObserverSetup:
    """Parse and check an observers file (:func:`~tachyflow.acoustics.options.
    parse_observers`: the same strict schema and defaults as ``[acoustics]``; ConfigError
    naming the key and file, also when its observers would not fit in memory: decided on
    rank 0 of ``comm`` when given, collective then)."""
    from tachyflow.acoustics.options import parse_observers

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise ConfigError(f"cannot read observers file {str(path)!r}: {error}") from None
    document = parse_observers(text, str(path))
    count = len(document.observer) + (document.arc.count if document.arc.radius > 0 else 0)
    _require(comm, count * OBSERVER_BYTES, f"{path}: {count:,} observers")
    names = [point.name or f"observer-{index}" for index, point in enumerate(document.observer)]
    positions = [list(point.position) for point in document.observer]
    angles = np.zeros(0)
    arc = document.arc
    if arc.radius > 0:
        angles, points = arc_observers(
            arc.radius, arc.plane, arc.start, arc.stop, arc.count, arc.centre
        )
        names += [f"arc-{angle:g}" for angle in angles]
        positions += points.tolist()
    return ObserverSetup(
        names, np.array(positions), angles, document.c0, document.rho0, document.permeable,
        document.samples, document.time_order, document.interpolation,
    )


def check_memory(setup: ObserverSetup, panels: int, source, comm=None) -> None:
    """ConfigError naming ``source`` (the observers file) when predicting ``setup``'s
    observers from ``panels`` panels on ``comm``'s ranks (one node) would not fit in
    memory (:func:`~tachyflow.acoustics.fwh.memory_needed`; collective with ``comm``)."""
    ranks = 1 if comm is None else comm.Get_size()
    count = len(setup.names)
    needed = memory_needed(count, setup.samples, panels, setup.interpolation, ranks)
    _require(comm, needed, f"{source}: {count:,} observers x {setup.samples:,} samples "
             f"from {panels:,} panels on {ranks} rank(s)")


def _require(comm, needed: int, what: str) -> None:
    if comm is None:
        runtime.require_memory(needed, what)
    else:  # the ranks' available memory differs: one decides for all
        agreement.on_root(comm, lambda: runtime.require_memory(needed, what))


def read_surface_data(path, permeable: bool) -> dict:
    """The arrays of a surface-data ``.npz`` or BP5 series (ConfigError naming what is
    missing)."""
    path = Path(path)
    if path.is_dir():
        return read_surface_series(path, permeable)
    try:
        with np.load(path) as data:
            arrays = {key: np.asarray(data[key]) for key in data.files}
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read surface data {str(path)!r}: {error}") from None
    if "load" in arrays:
        needed = [*REQUIRED[:-1], "normal_flux", "load"]
    else:
        needed = [*REQUIRED, *(("density", "velocity") if permeable else ())]
    missing = [key for key in needed if key not in arrays]
    if missing:
        raise ConfigError(f"{path}: missing array(s) {missing} (needed: {needed})")
    return {key: arrays[key] for key in needed}


def predict(solver: FWHSolver, data: dict, share: slice) -> FWHSignals:
    """Signals of the panels ``share`` of ``data`` (collective when the solver has a comm):
    from the flow values by :meth:`FWHSolver.solve`, or from recorded source terms."""
    panels = {
        key: (value if key == "times" else value[share] if key == "areas" else value[:, share])
        for key, value in data.items()
    }
    if "load" not in panels:
        return solver.solve(**panels)
    accumulator = solver.accumulator(panels["areas"])
    accumulator.add(
        panels["times"],
        panels["positions"],
        panels["surface_velocity"],
        panels["normal_flux"],
        panels["load"],
    )
    return accumulator.finish()


def observer_window(data: dict, observers: np.ndarray, c0: float, samples: int) -> np.ndarray:
    """Observer times at which every panel's contribution has arrived and none has ended:
    from the last first arrival to the first last arrival."""
    times, positions = data["times"], data["positions"]
    first = np.linalg.norm(observers[:, None, :] - positions[0][None], axis=2)
    last = np.linalg.norm(observers[:, None, :] - positions[-1][None], axis=2)
    start = times[0] + first.max() / c0
    stop = times[-1] + last.min() / c0
    if not stop > start:
        raise ConfigError(
            f"the record ({times[-1] - times[0]:.3g} s) is shorter than the spread of arrival "
            "times over the surface: no observer time sees every panel; record longer"
        )
    return np.linspace(start, stop, samples)
