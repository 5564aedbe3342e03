"""The options of acoustic predictions: a case's ``[acoustics]`` and the observers file of
``tachyflow acoustics``, with their checks (one schema for the medium and the scheme)."""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from typing import Annotated, Literal

from tachyflow.errors import ConfigError
from tachyflow.options import Check, at_least, check_values, positive, requirement, table

Positive = Annotated[float, positive]
Plane = Literal["xy", "xz", "yz"]
# FW-H source-time derivatives: 3- or 5-step stencils; signals between arrivals.
TimeOrder = Literal[2, 4]
Interpolation = Literal["linear", "cubic"]


@dataclass(frozen=True)
class AcousticsSection:
    """``[acoustics]``: a permeable FW-H surface sampled from the flow as the run goes.

    ``surface = "none"`` (the default) switches it off. The surface is a ``sphere``
    (``centre``, ``radius``, about ``panels`` panels), a ``cylinder`` (``centre``, ``axis``,
    ``radius``, ``length``, ``panels``), a ``box`` (``lower``, ``upper``, ``spacing``), a
    surface ``mesh`` file read with meshio, or the ``blades`` of the solver's rotor
    (solid, rotating: see :mod:`tachyflow.acoustics.rotor`). Observers are points and/or
    an arc (as in the observers file of ``tachyflow acoustics``). ``time_order`` (4 or 2)
    and ``interpolation`` (``cubic`` or ``linear``) choose the FW-H scheme's order: the
    fourth-order default's relative error at 64 steps per period is about 5e-6, the
    second order's 2.4e-3 (docs/acoustics-verification.md).
    """

    surface: Literal["none", "sphere", "box", "cylinder", "mesh", "blades"] = "none"
    centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    radius: Positive = 1.0
    panels: Annotated[int, at_least(8)] = 2000
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    length: Positive = 1.0
    lower: tuple[float, float, float] = (0.0, 0.0, 0.0)
    upper: tuple[float, float, float] = (1.0, 1.0, 1.0)
    spacing: Positive = 0.1
    mesh: str = ""
    every: Annotated[int, at_least(1)] = 1
    start_step: Annotated[int, at_least(0)] = 0  # the record starts at this step
    exchange: Literal["auto", "two-sided", "put", "aggregated-put", "source-put"] = "auto"
    sync: Literal["auto", "lock", "fence", "pscw"] = "auto"
    c0: Positive = 340.0
    rho0: Positive = 1.0
    p0: float = 0.0
    samples: Annotated[int, at_least(8)] = 1024
    time_order: TimeOrder = 4
    interpolation: Interpolation = "cubic"
    duration: Annotated[float, at_least(0)] = 0.0  # simulated time recorded; 0: steps x dt
    observers: tuple[tuple[float, float, float], ...] = ()
    arc_radius: Annotated[float, at_least(0)] = 0.0  # 0: no arc
    arc_plane: Plane = "xy"
    arc_centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    arc_start: float = 0.0
    arc_stop: float = 180.0
    arc_count: Annotated[int, at_least(1)] = 13
    write_surface: bool = True


def check_acoustics(acoustics: AcousticsSection, dt: float, require) -> None:
    """Checks across ``[acoustics]``'s values (``dt``: ``[time] dt``, 0 when adaptive)."""
    if acoustics.surface == "none":
        return
    require(bool(acoustics.observers) or acoustics.arc_radius > 0, "acoustics.observers",
            "at least one observer (or an arc with arc_radius > 0)", acoustics.observers)
    require(acoustics.surface != "mesh" or bool(acoustics.mesh), "acoustics.mesh",
            "a surface mesh file with surface = 'mesh'", acoustics.mesh)
    require(acoustics.surface != "box" or all(
        lo < hi for lo, hi in zip(acoustics.lower, acoustics.upper, strict=True)),
        "acoustics.upper", "above acoustics.lower in every direction", acoustics.upper)
    require(acoustics.duration > 0 or dt > 0, "acoustics.duration",
            "> 0 with an adaptive time step (time.dt = 0): the observer window needs the "
            "simulated time the record will cover", acoustics.duration)


@dataclass(frozen=True)
class ObserverPoint:
    """``[[observer]]`` of an observers file: a named point."""

    name: str = ""
    position: Annotated[tuple[float, float, float], Check(
        math.isfinite, "[x, y, z]", each=True)] = (math.nan, math.nan, math.nan)


@dataclass(frozen=True)
class ArcTable:
    """``[arc]`` of an observers file: ``count`` observers on a circle (0 radius: none)."""

    radius: Annotated[float, at_least(0)] = 0.0
    plane: Plane = "xy"
    centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    start: float = 0.0
    stop: float = 180.0
    count: Annotated[int, at_least(1)] = 13


@dataclass(frozen=True)
class ObserversFile:
    """The observers file of ``tachyflow acoustics``: the medium and the observers, with the
    same keys' defaults as ``[acoustics]`` (``c0``, ``rho0``, ``samples``, ``time_order``,
    ``interpolation``)."""

    c0: Positive = AcousticsSection.c0
    rho0: Positive = AcousticsSection.rho0
    permeable: bool = False
    samples: Annotated[int, at_least(8)] = AcousticsSection.samples
    time_order: TimeOrder = AcousticsSection.time_order
    interpolation: Interpolation = AcousticsSection.interpolation
    observer: tuple[ObserverPoint, ...] = ()
    arc: ArcTable = field(default_factory=ArcTable)


def parse_observers(text: str, source: str) -> ObserversFile:
    """Parse and check an observers file strictly (ConfigError naming the key and file)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{source}: not valid TOML: {error}") from None
    observers = table(ObserversFile, document, "", source)
    check_values(observers, "", source)
    requirement(source)(bool(observers.observer) or observers.arc.radius > 0, "observer",
                        "at least one [[observer]] entry or an [arc] with radius > 0",
                        observers.observer)
    return observers
