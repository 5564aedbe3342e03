"""``tachyflow acoustics``: FW-H noise prediction after the fact, from recorded surface data.

Surface data are one ``.npz`` file with, per source time step and panel: ``times`` (nt),
``positions``, ``normals``, ``surface_velocity`` (nt, np, 3), ``areas`` (np),
``pressure`` (nt, np), and for a permeable surface ``density`` (nt, np) and ``velocity``
(nt, np, 3). The observers file (TOML) names the medium and the observers::

    c0 = 340.0            # m/s
    rho0 = 1.225          # kg/m^3
    permeable = false
    samples = 2048        # observer-time samples

    [[observer]]
    name = "front"
    position = [10.0, 0.0, 0.0]

    [arc]                 # optional: observers on a circle, for a directivity plot
    radius = 20.0
    plane = "xy"          # xy, xz or yz, centred at the origin
    start = 0.0           # degrees
    stop = 180.0
    count = 13

Ranks split the panels; the signals are summed over them.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tachyflow.errors import ConfigError

PLANES = {"xy": (0, 1), "xz": (0, 2), "yz": (1, 2)}
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


def read_observers(path) -> ObserverSetup:
    """Parse and check an observers file (ConfigError naming the key and the file)."""
    path = Path(path)
    try:
        document = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"cannot read observers file {str(path)!r}: {error}") from None
    unknown = set(document) - {"c0", "rho0", "permeable", "samples", "observer", "arc"}
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {sorted(unknown)}")
    names, positions = [], []
    for index, observer in enumerate(document.get("observer", [])):
        position = observer.get("position")
        if not (isinstance(position, list) and len(position) == 3):
            raise ConfigError(f"{path}: observer {index} needs position = [x, y, z]")
        names.append(str(observer.get("name", f"observer-{index}")))
        positions.append([float(v) for v in position])
    angles = np.zeros(0)
    if "arc" in document:
        arc = document["arc"]
        plane = arc.get("plane", "xy")
        if plane not in PLANES:
            raise ConfigError(f"{path}: arc.plane must be one of {sorted(PLANES)}, got {plane!r}")
        count = int(arc.get("count", 13))
        radius = float(arc.get("radius", 0.0))
        if count < 1 or not radius > 0:
            raise ConfigError(f"{path}: arc needs radius > 0 and count >= 1")
        angles = np.linspace(float(arc.get("start", 0.0)), float(arc.get("stop", 180.0)), count)
        first, second = PLANES[plane]
        for angle in angles:
            point = [0.0, 0.0, 0.0]
            point[first] = radius * np.cos(np.radians(angle))
            point[second] = radius * np.sin(np.radians(angle))
            names.append(f"arc-{angle:g}")
            positions.append(point)
    if not positions:
        raise ConfigError(f"{path}: no observers ([[observer]] entries or an [arc])")
    samples = document.get("samples", 2048)
    if not isinstance(samples, int) or samples < 8:
        raise ConfigError(f"{path}: samples must be an integer >= 8, got {samples!r}")
    return ObserverSetup(
        names, np.array(positions), angles, float(document.get("c0", 340.0)),
        float(document.get("rho0", 1.225)), bool(document.get("permeable", False)), samples,
    )  # fmt: skip


def read_surface_data(path, permeable: bool) -> dict:
    """The arrays of a surface-data ``.npz`` (ConfigError naming what is missing)."""
    path = Path(path)
    try:
        with np.load(path) as data:
            arrays = {key: np.asarray(data[key]) for key in data.files}
    except (OSError, ValueError) as error:
        raise ConfigError(f"cannot read surface data {str(path)!r}: {error}") from None
    needed = [*REQUIRED, *(("density", "velocity") if permeable else ())]
    missing = [key for key in needed if key not in arrays]
    if missing:
        raise ConfigError(f"{path}: missing array(s) {missing} (needed: {needed})")
    return {key: arrays[key] for key in needed}


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


def panel_share(panels: int, rank: int, size: int) -> slice:
    """The contiguous panels of ``rank``."""
    bounds = [panels * index // size for index in range(size + 1)]
    return slice(bounds[rank], bounds[rank + 1])
