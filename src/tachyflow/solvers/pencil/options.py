"""The case tables of the pencil solvers: ``[grid]``, ``[flow]``, ``[immersed]`` for both,
``[cylinder]`` and ``[fan]`` for the cylindrical one, and the checks across them.

Light on purpose (reading a case file imports it, never the kernels): the solvers'
:attr:`~tachyflow.solvers.base.Solver.case_options` are :data:`CARTESIAN` and
:data:`CYLINDRICAL`, which :mod:`tachyflow.solvers.base` also finds without importing the
solvers.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Annotated, Literal

from tachyflow.options import Check, at_least, positive
from tachyflow.solvers.base import (
    CARTESIAN_GRID,
    CHECKPOINTS,
    IMMERSED_BODIES,
    PENCIL_FIELDS,
    ROTOR,
    SolverOptions,
)

# Each solver's initial conditions (solvers/pencil/initial_conditions.py sets them).
CARTESIAN_INITIAL = ("rest", "taylor-green", "poiseuille", "perturbed-channel", "inflow",
                     "isotropic")
CYLINDRICAL_INITIAL = (
    "rest", "hagen-poiseuille", "couette", "solid-body", "perturbed-pipe", "inflow",
)
Positive = Annotated[float, positive]
# A size that must be above zero (said as "> 0" in its error).
Size = Annotated[float, Check(lambda v: v > 0, "> 0")]
Vector = Annotated[tuple[float, float, float], Check(any, "a nonzero vector")]


@dataclass(frozen=True)
class PencilGridSection:
    """``[grid]`` of both pencil solvers: cells, and what bounds x: periodic, or
    ``"inflow-outflow"`` (a profile enters at x = 0 with bulk velocity ``inflow_velocity``,
    no swirl in the inertial frame, and leaves through a convective outflow at the other
    end)."""

    cells: Annotated[tuple[int, int, int], Check(lambda n: n >= 1, "3 positive integers",
                                                 each=True)] = (32, 32, 32)
    x_boundaries: Literal["periodic", "inflow-outflow"] = "periodic"
    inflow_profile: Literal["uniform", "laminar"] = "uniform"  # laminar: developed
    inflow_velocity: Positive = 1.0
    # With x_zone_cells > 0 (an open x only): a uniform band [start, stop] of x with that
    # many cells, the others growing geometrically to the inflow and the outflow.
    x_zone: tuple[float, float] = (0.0, 0.0)
    x_zone_cells: int = 0

    def x_zone_bytes(self) -> int:
        """Bytes a stretched x adds on every rank: the pressure solve's two dense x
        matrices and the decomposition's work (one more while it is computed)."""
        return 3 * 8 * self.cells[0] ** 2 if self.x_zone_cells else 0


@dataclass(frozen=True)
class GridSection(PencilGridSection):
    """``[grid]`` of the Cartesian solver: also the domain's lengths, walls in y, their
    clustering and condition."""

    lengths: Annotated[tuple[float, float, float], Check(lambda v: v > 0, "3 positive lengths",
                       each=True)] = (6.283185307179586,) * 3
    walls: bool = False
    stretching: Annotated[float, at_least(0)] = 0.0
    wall_condition: Literal["no-slip", "slip"] = "no-slip"  # slip: stress-free walls
    core_width: float = 0.0  # with core_cells > 0: a uniform band in the middle of y
    core_cells: int = 0  # its cells; the rest grow geometrically to the walls


@dataclass(frozen=True)
class PencilFlowSection:
    """``[flow]``: fluid, forcing and perturbation of the initial condition."""

    viscosity: Positive = 1e-2
    forcing: Literal["none", "pressure-gradient", "flow-rate"] = "none"
    forcing_value: float = 0.0
    perturbation: Annotated[float, at_least(0)] = 0.0
    seed: int = 0


@dataclass(frozen=True)
class FlowSection(PencilFlowSection):
    """``[flow]`` of the Cartesian solver."""

    initial: Literal[CARTESIAN_INITIAL] = "rest"


@dataclass(frozen=True)
class CylindricalFlowSection(PencilFlowSection):
    """``[flow]`` of the cylindrical solver."""

    initial: Literal[CYLINDRICAL_INITIAL] = "rest"


@dataclass(frozen=True)
class LesSection:
    """``[les]``: a large-eddy simulation's subgrid-scale model (both pencil solvers):
    ``model`` "none" (a DNS), "dynamic-global" (Park, Lee, Lee & Choi's, Vreman's form with
    one coefficient for the domain computed each substep), "smagorinsky" (with van
    Driest's damping at walls when ``van_driest``), "vreman" or "wale"; ``constant`` 0
    takes the model's own (C_s = 0.1, c = 0.07, C_w = 0.325: see
    :mod:`tachyflow.numerics.eddy_viscosity` for each one's source; the dynamic model has
    none; ``identity``: the global identity its coefficient comes from, "germano" or
    "equilibrium" of the dissipations); the filter width is the local cell's."""

    model: Literal["none", "dynamic-global", "smagorinsky", "vreman", "wale"] = "none"
    constant: Annotated[float, at_least(0)] = 0.0
    van_driest: bool = True
    identity: Literal["germano", "equilibrium"] = "germano"

    def subgrid(self) -> tuple | None:
        """``(model, constant or None, van_driest, identity)`` for the solver, None for a
        DNS."""
        if self.model == "none":
            return None
        return self.model, self.constant or None, self.van_driest, self.identity


@dataclass(frozen=True)
class IsotropicSection:
    """``[isotropic]``: decaying isotropic turbulence in a periodic box (Cartesian solver).
    ``spectrum``: a table of measured energy spectra, a built-in data set (``cbc-1971``:
    Comte-Bellot & Corrsin's) or a CSV file with a column ``k`` and one ``E<station>`` per
    station; ``stations`` its columns in time order and ``times`` their simulated times
    (the first 0). ``[flow] initial = "isotropic"`` starts from Rogallo's random solenoidal
    field of the first station's spectrum (``seed``: its random numbers); the ``spectra``
    observer writes E(k) at each station beside the measurement. ``length_scale`` and
    ``velocity_scale``: the table's units (its k in 1/length, E in velocity² length) per
    unit length and velocity of the case."""

    spectrum: str = ""
    stations: tuple[str, ...] = ()
    times: tuple[float, ...] = ()
    length_scale: Annotated[float, positive] = 1.0
    velocity_scale: Annotated[float, positive] = 1.0
    seed: Annotated[int, at_least(0)] = 0


@dataclass(frozen=True)
class CylinderSection:
    """``[cylinder]``: the domain of ``solver = "cylindrical"`` (x, r, θ), in a frame
    rotating at ``rotation`` (rad per unit time) about x; wall rotations are the walls'
    angular velocities in the inertial frame (a duct at rest: 0)."""

    length: Positive = 10.0
    radius: float = 1.0
    inner_radius: float = 0.0  # 0: through the axis (a pipe); > 0: an annulus
    sectors: Annotated[int, Check(lambda n: n >= 1, "a positive integer")] = 1  # θ: 2π/sectors
    stretching: Annotated[float, at_least(0)] = 0.0  # tanh clustering of r towards the walls
    clustering: Literal["walls", "axis"] = "walls"  # axis: through the axis only
    rotation: float = 0.0
    inner_wall_rotation: float = 0.0
    outer_wall_rotation: float = 0.0
    outer_wall: Literal["no-slip", "slip"] = "no-slip"  # slip: a far boundary, not a duct
    # 0: the θ viscous terms implicit at every radius; > 0: only for r below it (the core).
    theta_core_radius: Annotated[float, Check(lambda r: r >= 0, ">= 0 (0: θ implicit "
                                              "everywhere)")] = 0.0


@dataclass(frozen=True)
class BodySection:
    """``[[immersed.body]]``: a solid imposed on the flow by direct forcing. ``shape`` is a
    registered body shape (``sphere``, ``cylinder``: infinitely long along ``axis``,
    ``slab``: ``thickness`` across the plane normal to ``axis``, ``surface``: a closed
    triangulated ``file``, scaled then moved by ``offset``, ``fan-rotor``: the blades of
    ``[fan]``, ``designed-rotor``: blades designed from ``[fan_design]``'s duty
    point). ``motion`` is a registered motion: ``rigid``, the body turning at
    ``angular_velocity`` about ``rotation_axis`` through ``rotation_centre`` (in the
    solver's frame: a fan's blades in its rotating frame are at rest), or ``oscillation``
    (Cartesian solver): translation ``oscillation sin(2π f t)`` (an amplitude vector) and
    pitching by ``pitch sin(2π f t + pitch_phase)`` (degrees) about ``pitch_axis`` through
    the moving ``rotation_centre``, at ``frequency`` f."""

    name: str = "body"
    shape: str = "sphere"
    centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    radius: Size = 0.5
    axis: Vector = (0.0, 0.0, 1.0)
    hollow: bool = False  # cylinder: the solid is outside (a duct)
    file: str = ""
    scale: Size = 1.0
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    thickness: Size = 0.1  # slab
    angular_velocity: float = 0.0
    rotation_axis: Vector = (1.0, 0.0, 0.0)
    rotation_centre: tuple[float, float, float] = (0.0, 0.0, 0.0)
    motion: str = "rigid"
    oscillation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    pitch: float = 0.0
    pitch_axis: Vector = (0.0, 0.0, 1.0)
    pitch_phase: float = 0.0
    frequency: float = 0.0


@dataclass(frozen=True)
class ImmersedSection:
    """``[immersed]``: immersed bodies (``[[immersed.body]]``) and the cadence, in steps, of
    their loads in ``forces.csv`` (0: only at the end)."""

    forces_every: Annotated[int, at_least(0)] = 1
    body: tuple[BodySection, ...] = ()


@dataclass(frozen=True)
class FanSection:
    """``[fan]``: the rotor of an axial fan in the cylindrical domain (its hub is
    ``[cylinder] inner_radius``, its duct ``radius``, its speed ``rotation``), made an
    immersed body by ``[[immersed.body]] shape = "fan-rotor"``. Pairs are (root, tip), varied
    linearly; angles in degrees; camber and thickness as fractions of the chord. ``section``
    is ``naca4`` (``camber`` at ``camber_position``) or ``naca65`` (the 65-010 thickness
    form on the a = 1.0 mean line of design lift coefficients ``design_lift``)."""

    blades: int = 5
    tip_clearance: float = 0.02
    position: float = 1.0  # x of the blades' quarter chord
    pressure_planes: tuple[float, float] = (0.5, 1.5)  # x up- and downstream: Δp between
    chord: tuple[float, float] = (0.35, 0.25)
    stagger: tuple[float, float] = (40.0, 56.0)  # from the axis
    camber: tuple[float, float] = (0.04, 0.02)
    camber_position: float = 0.4
    section: str = "naca4"
    design_lift: Annotated[tuple[float, float], Check(
        lambda lift: 0 <= lift <= 3, "two design lift coefficients (root, tip) in [0, 3]",
        each=True)] = (1.0, 0.6)
    thickness: float = 0.08
    sweep: float = 0.0
    stations: int = 12
    points: int = 40
    # "SI": the case's lengths are m, its times s, its velocities m/s and ``density`` the
    # fluid's in kg/m³, so that the fan's outputs are in Pa, N, N·m, W and m³/s (the
    # solver's equations have no units: a consistent set of them is computed as given).
    units: Literal["non-dimensional", "SI"] = "non-dimensional"
    density: Positive = 1.0
    # The time from which fan.json averages (past the start-up); 0: the second half.
    average_from: Annotated[float, at_least(0)] = 0.0


@dataclass(frozen=True)
class FanDesignSection:
    """``[fan_design]``: the duty point a ``shape = "designed-rotor"`` body is designed for
    by the blade-element method (:class:`tachyflow.numerics.fan_design.FanSpecification`,
    ``tachyflow fan design``): ``flow_rate`` (m³/s) and the total-to-static
    ``pressure_rise`` (Pa) of a dimensional case, every section a NACA 4-digit ``section``
    at its angle of attack (degrees, hub to tip: one per section). The rotor's speed,
    diameters, blade count and density are the case's (``[cylinder] rotation``,
    ``inner_radius``, ``radius - [fan] tip_clearance``, ``[fan] blades``, ``density``).
    The defaults are the FAU benchmark fan FAN-01 (Zenger et al., "A benchmark case for
    aerodynamics and aeroacoustics of a low pressure axial fan")."""

    flow_rate: Positive = 1.4
    pressure_rise: Positive = 150.0
    section: str = "4510"
    angles_of_attack: tuple[float, ...] = (8.0, 7.4, 6.8, 6.3, 5.9, 5.5, 5.1, 4.7, 4.3, 4.0)
    volumetric_efficiency: Annotated[float, Check(
        lambda value: 0 < value <= 1, "in (0, 1]")] = 0.95
    hydraulic_efficiency: Annotated[float, Check(
        lambda value: 0 < value <= 1, "in (0, 1]")] = 0.9
    glide_ratio: Annotated[float, Check(lambda value: 0 <= value < 1, "in [0, 1)")] = 0.0
    points: Annotated[int, at_least(8)] = 40


# The widest cell spacing over the narrowest that a grid may have: beyond it the
# operators' coefficients lose every digit (a length of 1e-300 ran to NaN at step 0).
SPACING_RATIO = 1e8


def _check_spacings(require, spacings: dict) -> None:
    """The cell spacings along each axis (key: the option that sets it) no more than
    :data:`SPACING_RATIO` apart."""
    narrowest = min(spacings, key=spacings.get)
    widest = max(spacings.values())
    require(widest <= SPACING_RATIO * spacings[narrowest], narrowest,
            f"cells at most {SPACING_RATIO:.0e} times narrower along one axis than along "
            f"another (spacings {', '.join(f'{v:.3g}' for v in spacings.values())})",
            spacings[narrowest])


def _check_open_x(config, require) -> None:
    grid, flow, statistics = config.grid, config.flow, config.statistics
    if grid.x_boundaries == "inflow-outflow":
        require(flow.forcing == "none", "flow.forcing",
                '"none" with an inflow (the inflow sets the flow rate)', flow.forcing)
        require(statistics.every == 0 or "x" not in statistics.homogeneous,
                "statistics.homogeneous", "[] or without x when x has an inflow and an outflow",
                list(statistics.homogeneous))


def _check_bodies(config, require, oscillations: bool) -> None:
    from tachyflow.solvers.pencil import bodies  # the registered shapes and motions

    names = [body.name for body in config.immersed.body]
    require(len(set(names)) == len(names), "immersed.body", "bodies with distinct names", names)
    for body in config.immersed.body:
        key = f"immersed.body '{body.name}'"
        require(body.shape in bodies.shapes(), f"{key} shape", f"one of {bodies.shapes()}",
                body.shape)
        require(body.motion in bodies.motions(), f"{key} motion",
                f"one of {bodies.motions()}", body.motion)
        if body.motion == "oscillation":
            require(oscillations, f"{key} motion", "'rigid' with the cylindrical solver "
                    "(bodies oscillate on the Cartesian one)", body.motion)
            require(math.isfinite(body.frequency) and body.frequency > 0,
                    f"{key} frequency", "> 0 with an oscillation", body.frequency)
            require(body.angular_velocity == 0, f"{key} angular_velocity",
                    "0 with an oscillation (pitch instead)", body.angular_velocity)
        bodies.shape_class(body.shape).check(body, config, require)


def check_cartesian(config, require) -> None:
    """Checks across the Cartesian solver's values."""
    grid = config.grid
    require(grid.walls or grid.stretching == 0, "grid.stretching",
            "0 without walls (a periodic y is uniform)", grid.stretching)
    require(grid.cells[1] >= (2 if grid.walls else 3), "grid.cells",
            "at least 2 cells in y with walls, 3 with a periodic y", grid.cells)
    require(grid.wall_condition == "no-slip" or grid.walls, "grid.wall_condition",
            "'no-slip' unless walls = true", grid.wall_condition)
    if grid.core_cells:
        require(grid.walls and grid.stretching == 0, "grid.core_cells",
                "0 unless walls = true and stretching = 0", grid.core_cells)
        require(0 < grid.core_width < grid.lengths[1], "grid.core_width",
                f"in (0, lengths[1] = {grid.lengths[1]})", grid.core_width)
        outer = grid.cells[1] - grid.core_cells
        require(grid.core_cells > 0 and outer > 0 and outer % 2 == 0, "grid.core_cells",
                f"positive, leaving an even positive number of the {grid.cells[1]} cells "
                "in y outside the core", grid.core_cells)
        spacing = grid.core_width / grid.core_cells
        require(outer // 2 * spacing <= 0.5 * (grid.lengths[1] - grid.core_width),
                "grid.core_cells", "enough for the core to be finer than the cells outside "
                "it (their widths grow from the core's spacing)", grid.core_cells)
    cells = grid.cells
    _check_spacings(require, {f"grid.lengths[{axis}] / cells[{axis}]":
                              grid.lengths[axis] / cells[axis] for axis in range(3)})
    if grid.x_zone_cells:
        _check_x_zone(config, require, grid.lengths[0], "lengths[0]")
    _check_open_x(config, require)
    _check_bodies(config, require, oscillations=True)
    _check_isotropic(config, require)


def _check_x_zone(config, require, length: float, name: str) -> None:
    grid = config.grid
    start, stop = grid.x_zone
    require(grid.x_boundaries == "inflow-outflow", "grid.x_zone_cells",
            '0 unless x_boundaries = "inflow-outflow" (a periodic x is uniform)',
            grid.x_zone_cells)
    require(0 <= start < stop <= length, "grid.x_zone",
            f"[start, stop] with 0 <= start < stop <= {name} = {length}", list(grid.x_zone))
    outer = grid.cells[0] - grid.x_zone_cells
    sides = (start > 0) + (stop < length)
    require(0 < grid.x_zone_cells and outer >= sides and (sides or not outer),
            "grid.x_zone_cells", f"positive, leaving at least a cell of the {grid.cells[0]} "
            "in x on each side of the zone that is not at an end", grid.x_zone_cells)
    spacing = (stop - start) / grid.x_zone_cells
    require(outer * spacing <= length - (stop - start) + 1e-12 * length,
            "grid.x_zone_cells", "enough for the zone to be finer than the cells outside it "
            "(their widths grow from the zone's spacing)", grid.x_zone_cells)


def _check_isotropic(config, require) -> None:
    isotropic = config.isotropic
    wanted = config.flow.initial == "isotropic"
    require(bool(isotropic.spectrum) or not wanted, "isotropic.spectrum",
            "a data set or file for flow.initial = 'isotropic'", isotropic.spectrum)
    if not isotropic.spectrum:
        return
    times = isotropic.times
    require(len(isotropic.stations) >= 1, "isotropic.stations", "at least one station",
            isotropic.stations)
    require(len(times) == len(isotropic.stations), "isotropic.times",
            f"one time per station ({len(isotropic.stations)})", times)
    require(not times or (times[0] == 0 and all(b > a for a, b in itertools.pairwise(times))),
            "isotropic.times", "increasing from 0", times)
    require(not config.grid.walls, "grid.walls", "false for [isotropic] (a periodic box)",
            config.grid.walls)


def check_cylindrical(config, require) -> None:
    """Checks across the cylindrical solver's values."""
    cylinder = config.cylinder
    require(0 <= cylinder.inner_radius < cylinder.radius, "cylinder.inner_radius",
            f"in [0, radius = {cylinder.radius})", cylinder.inner_radius)
    require(cylinder.clustering == "walls" or cylinder.inner_radius == 0,
            "cylinder.clustering", "'walls', or 'axis' with inner_radius = 0",
            cylinder.clustering)
    require(config.grid.cells[1] >= 3, "grid.cells", "at least 3 cells in r", config.grid.cells)
    cells = config.grid.cells
    _check_spacings(require, {
        "cylinder.length / cells[0]": cylinder.length / cells[0],
        "(cylinder.radius - inner_radius) / cells[1]":
            (cylinder.radius - cylinder.inner_radius) / cells[1],
        "cylinder.radius 2π / (sectors cells[2])":
            cylinder.radius * 2 * math.pi / (cylinder.sectors * cells[2]),
    })
    if config.grid.x_zone_cells:
        _check_x_zone(config, require, cylinder.length, "cylinder.length")
    _check_open_x(config, require)
    _check_bodies(config, require, oscillations=False)


def _provides(config, *grid: str) -> frozenset[str]:
    from tachyflow.solvers.pencil import bodies

    found = {PENCIL_FIELDS, CHECKPOINTS, *grid}
    if config.immersed.body:
        found.add(IMMERSED_BODIES)
    if any(bodies.shape_class(body.shape).rotor for body in config.immersed.body):
        found.add(ROTOR)
    return frozenset(found)


_SHARED = {"immersed": ImmersedSection}
CARTESIAN = SolverOptions(
    {"grid": GridSection, "flow": FlowSection, "les": LesSection,
     "isotropic": IsotropicSection, **_SHARED}, check_cartesian,
    lambda config: _provides(config, CARTESIAN_GRID),
)
CYLINDRICAL = SolverOptions(
    {"grid": PencilGridSection, "flow": CylindricalFlowSection, "cylinder": CylinderSection,
     "fan": FanSection, "fan_design": FanDesignSection, "les": LesSection, **_SHARED},
    check_cylindrical, _provides,
)
