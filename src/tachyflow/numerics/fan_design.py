"""Blade-element design of a low-pressure axial fan from its duty point (MPI-free).

The classical method for low-pressure axial fans (T. Carolus, "Ventilatoren", Vieweg +
Teubner; R. A. Wallis, "Axial Flow Fans and Ducts", Wiley; applied to the FAU benchmark fan
by F. Krömer's 2017 dissertation at the Friedrich-Alexander-Universität Erlangen-Nürnberg):
the blade is cut into ``N`` sections from hub to tip, each treated as an airfoil in the
mean relative flow of its velocity triangles. Without inlet swirl and with the swirl of a
free vortex (``r c_u = K``, radial equilibrium then keeps the axial velocity uniform):

- axial velocity ``c_m = Q / (η_vol π (R_t² - R_h²))``: the rotor also passes the leakage
  through the tip gap;
- swirl from Euler's equation, ``Δp_t = ρ η_h u c_u = ρ η_h Ω K``, where the rotor's total
  pressure rise covers the total-to-static rise asked for plus the exit's dynamic pressure,
  axial and swirl, both lost by a rotor-only fan:
  ``Δp_t = Δp_ts + ρ/2 c_m² + ρ/2 <c_u²>`` with the annulus mean
  ``<c_u²> = 2π K² ln(R_t/R_h) / (π (R_t² - R_h²))``, a quadratic in ``K`` (its smaller
  root: the lightly loaded design);
- the relative velocities ``w_1 = (c_m, u)``, ``w_2 = (c_m, u - c_u)`` and their vector
  mean ``w_∞ = (c_m, u - c_u/2)``, angles ``β`` from the circumferential direction;
- the blade-element relation, the tangential momentum the fluid gains through an annulus
  ``dr`` equal to the circumferential component of the ``z`` sections' lift and drag:
  ``z · ½ ρ w_∞² c C_L (sin β_∞ + ε cos β_∞) = ρ c_m 2π r c_u``, hence
  ``C_L σ = 2 (c_u / w_∞) sin β_∞ / (sin β_∞ + ε cos β_∞)`` with the solidity
  ``σ = c z / (2π r)`` and the glide ratio ``ε = C_D / C_L`` (0 by default: the losses are
  in ``η_h``);
- the section's lift from thin-airfoil theory for the NACA 4-digit mean line (Abbott &
  von Doenhoff, "Theory of Wing Sections"), ``C_L = 2π (α - α_0)``, where
  :func:`naca4_zero_lift_angle` gives ``α_0`` in closed form; so ``σ = (C_L σ) / C_L``,
  the chord ``c = 2π r σ / z`` and the stagger (the chord's angle from the circumferential
  direction) ``λ = β_∞ + α``.

:func:`swirl_from_blades` runs the relation the other way (the sections' geometry and a
flow rate give the swirl): a designed rotor analysed back reproduces its duty point.
:class:`BladeSections` stacks sections, designed or given as a table, into watertight
blade surfaces with :mod:`tachyflow.numerics.blades`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from tachyflow.numerics.airfoils import naca4_parameters
from tachyflow.numerics.blades import closed_surface, naca4_outline, stack_loops, wrap_section

#: The FAU benchmark fan FAN-01's angles of attack, hub to tip (degrees; Krömer 2017).
FAU_ANGLES_OF_ATTACK = (8.0, 7.4, 6.8, 6.3, 5.9, 5.5, 5.1, 4.7, 4.3, 4.0)

#: The columns a section table needs (lengths in m, stagger in degrees from the
#: circumferential direction, camber and thickness as fractions of the chord).
SECTION_COLUMNS = ("r", "chord", "stagger", "camber", "thickness", "sweep", "dihedral")


def naca4_zero_lift_angle(camber: float, position: float) -> float:
    """The zero-lift angle ``α_0`` (radians) of the NACA 4-digit mean line of maximum
    ``camber`` at ``position`` (chord fractions), by thin-airfoil theory.

    ``α_0 = (1/π) ∫_0^π (dy_c/dx)(1 - cos θ) dθ`` with ``x = (1 - cos θ)/2``; the mean
    line's slope is ``2f/p² (p - x)`` ahead of ``p`` and ``2f/(1-p)² (p - x)`` behind it,
    and ``(p - x)(1 - cos θ)`` integrates to
    ``G(θ) = (p - ½)(θ - sin θ) + ½ sin θ - θ/4 - sin 2θ / 8``, so
    ``α_0 = (2f/π) [G(θ_p)/p² + (G(π) - G(θ_p))/(1-p)²]``, ``cos θ_p = 1 - 2p``
    (NACA 2412: -2.08°).
    """
    if camber == 0:
        return 0.0
    if not 0 < position < 1:
        raise ValueError(f"a cambered mean line needs a position in (0, 1), got {position!r}")

    def primitive(theta):
        return ((position - 0.5) * (theta - math.sin(theta)) + 0.5 * math.sin(theta)
                - theta / 4 - math.sin(2 * theta) / 8)

    split = math.acos(1 - 2 * position)
    front, back = primitive(split), primitive(math.pi) - primitive(split)
    return 2 * camber / math.pi * (front / position**2 + back / (1 - position) ** 2)


def thin_airfoil_lift(alpha, camber: float, position: float):
    """The lift coefficient ``2π (α - α_0)`` of a NACA 4-digit section at the angle of
    attack ``alpha`` (radians, from the chord)."""
    return 2 * np.pi * (np.asarray(alpha) - naca4_zero_lift_angle(camber, position))


def _positive(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class FanSpecification:
    """What a fan is designed for: its duty point, size, blades and design choices.

    The defaults are the FAU benchmark fan FAN-01 (Zenger et al., "A benchmark case for
    aerodynamics and aeroacoustics of a low pressure axial fan"; design by Krömer 2017).

    Attributes
    ----------
    flow_rate : float
        Q, m³/s.
    pressure_rise : float
        Δp_ts, the total-to-static pressure rise, Pa.
    speed : float
        Rotational speed, rpm.
    tip_diameter, hub_diameter : float
        The blades' tip and root diameters, m.
    blades : int
        Blade count z.
    section : str
        The NACA 4-digit code of every section (camber, its position, thickness).
    angles_of_attack : tuple of float
        α of each section from hub to tip, degrees; their count is the sections'.
    density : float
        ρ, kg/m³.
    volumetric_efficiency, hydraulic_efficiency : float
        η_vol (the rotor passes Q/η_vol) and η_h (Δp_t = ρ η_h u c_u), in (0, 1].
    glide_ratio : float
        ε = C_D/C_L in the blade-element relation (0: drag left to η_h).
    kinematic_viscosity : float
        ν, m²/s, for the sections' chord Reynolds numbers.
    """

    flow_rate: float = 1.4
    pressure_rise: float = 150.0
    speed: float = 1486.0
    tip_diameter: float = 0.495
    hub_diameter: float = 0.2475
    blades: int = 9
    section: str = "4510"
    angles_of_attack: tuple[float, ...] = FAU_ANGLES_OF_ATTACK
    density: float = 1.2
    volumetric_efficiency: float = 0.95
    hydraulic_efficiency: float = 0.9
    glide_ratio: float = 0.0
    kinematic_viscosity: float = 1.5e-5

    def __post_init__(self):
        for name in ("flow_rate", "pressure_rise", "speed", "tip_diameter", "hub_diameter",
                     "density", "kinematic_viscosity"):
            _positive(name, getattr(self, name))
        if not self.hub_diameter < self.tip_diameter:
            raise ValueError(f"hub_diameter must be smaller than tip_diameter, got "
                             f"{self.hub_diameter!r} >= {self.tip_diameter!r}")
        if isinstance(self.blades, bool) or not isinstance(self.blades, int) or self.blades < 1:
            raise ValueError(f"blades must be a positive integer, got {self.blades!r}")
        for name in ("volumetric_efficiency", "hydraulic_efficiency"):
            if not 0 < _positive(name, getattr(self, name)) <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(self, name)!r}")
        if not 0 <= self.glide_ratio < 1:
            raise ValueError(f"glide_ratio must be in [0, 1), got {self.glide_ratio!r}")
        camber, position, _ = naca4_parameters(self.section)
        angles = tuple(self.angles_of_attack)
        if len(angles) < 2:
            raise ValueError(f"angles_of_attack needs one angle per section, >= 2 sections, "
                             f"got {angles!r}")
        zero_lift = math.degrees(naca4_zero_lift_angle(camber, position))
        for alpha in angles:
            # Below the zero-lift angle the section pushes the wrong way; past 20° no
            # section is attached and thin-airfoil theory says nothing.
            if not zero_lift < alpha < 20:
                raise ValueError(f"angles_of_attack must lie between NACA {self.section}'s "
                                 f"zero-lift angle {zero_lift:.2f}° and 20°, got {alpha!r}")

    @property
    def omega(self) -> float:
        """Angular speed, rad/s."""
        return 2 * math.pi * self.speed / 60

    @property
    def radii(self) -> np.ndarray:
        """The sections' radii: evenly spaced from hub to tip, both included."""
        return np.linspace(self.hub_diameter / 2, self.tip_diameter / 2,
                           len(self.angles_of_attack))

    @property
    def annulus(self) -> float:
        """The blades' annulus area, m²."""
        return math.pi * (self.tip_diameter**2 - self.hub_diameter**2) / 4

    def design(self) -> RotorDesign:
        """The rotor by the blade-element method (see the module's equations)."""
        camber, position, thickness = naca4_parameters(self.section)
        hub, tip = self.hub_diameter / 2, self.tip_diameter / 2
        axial = self.flow_rate / (self.volumetric_efficiency * self.annulus)
        # a K² - b K + c = 0: Euler's work against the static rise and the exit's
        # dynamic pressure (axial, and the free vortex's swirl averaged over the annulus).
        a = self.density * math.pi * math.log(tip / hub) / self.annulus
        b = self.density * self.hydraulic_efficiency * self.omega
        c = self.pressure_rise + 0.5 * self.density * axial**2
        discriminant = b * b - 4 * a * c
        if discriminant < 0:
            raise ValueError(
                f"pressure_rise {self.pressure_rise!r} Pa is out of reach at {self.speed!r} "
                f"rpm with these diameters (a free vortex gives at most "
                f"{b * b / (4 * a) - 0.5 * self.density * axial**2:.1f} Pa)"
            )
        swirl_constant = 2 * c / (b + math.sqrt(discriminant))  # the smaller root, stably
        radius = self.radii
        speed = self.omega * radius
        swirl = swirl_constant / radius
        if np.any(swirl >= speed):
            raise ValueError(
                f"pressure_rise {self.pressure_rise!r} Pa needs a swirl c_u >= the blade "
                f"speed u at the hub ({swirl[0]:.2f} >= {speed[0]:.2f} m/s): raise the "
                "speed or the hub diameter"
            )
        relative_swirl = speed - swirl / 2
        mean = np.hypot(axial, relative_swirl)
        beta_mean = np.arctan2(axial, relative_swirl)
        lift_solidity = (2 * swirl / mean * np.sin(beta_mean)
                         / (np.sin(beta_mean) + self.glide_ratio * np.cos(beta_mean)))
        alpha = np.radians(self.angles_of_attack)
        lift = thin_airfoil_lift(alpha, camber, position)
        solidity = lift_solidity / lift
        chord = 2 * np.pi * radius * solidity / self.blades
        return RotorDesign(
            specification=self,
            axial_velocity=axial,
            swirl_constant=swirl_constant,
            total_pressure_rise=b * swirl_constant,
            radius=radius,
            chord=chord,
            stagger=np.degrees(beta_mean + alpha),
            camber=np.full_like(radius, camber),
            camber_position=position or 0.5,  # a symmetric code names none: any will do
            thickness=np.full_like(radius, thickness),
            solidity=solidity,
            lift_coefficient=lift,
            lift_solidity=lift_solidity,
            alpha=np.asarray(self.angles_of_attack, dtype=float),
            beta_in=np.degrees(np.arctan2(axial, speed)),
            beta_out=np.degrees(np.arctan2(axial, speed - swirl)),
            beta_mean=np.degrees(beta_mean),
            blade_speed=speed,
            swirl=swirl,
            mean_relative_velocity=mean,
            reynolds=mean * chord / self.kinematic_viscosity,
        )


@dataclass(frozen=True, eq=False)
class RotorDesign:
    """A designed rotor: per section (hub to tip) its velocity triangles and geometry.

    Lengths in m, velocities in m/s, angles in degrees, ``β`` and the stagger from the
    circumferential direction (the rotor's plane); ``camber`` and ``thickness`` are
    fractions of the chord, the camber line the NACA 4-digit one with its maximum at
    ``camber_position``. ``swirl_constant`` is ``K = r c_u`` (m²/s) and
    ``total_pressure_rise`` Euler's ``ρ η_h Ω K`` (Pa).
    """

    specification: FanSpecification
    axial_velocity: float
    swirl_constant: float
    total_pressure_rise: float
    radius: np.ndarray
    chord: np.ndarray
    stagger: np.ndarray
    camber: np.ndarray
    camber_position: float
    thickness: np.ndarray
    solidity: np.ndarray
    lift_coefficient: np.ndarray
    lift_solidity: np.ndarray
    alpha: np.ndarray
    beta_in: np.ndarray
    beta_out: np.ndarray
    beta_mean: np.ndarray
    blade_speed: np.ndarray
    swirl: np.ndarray
    mean_relative_velocity: np.ndarray
    reynolds: np.ndarray

    def table(self) -> dict[str, np.ndarray]:
        """The design table by column: the section table's columns first (readable back
        by :meth:`BladeSections.from_columns`), then the flow's."""
        zeros = np.zeros_like(self.radius)
        return {
            "r": self.radius, "chord": self.chord, "stagger": self.stagger,
            "camber": self.camber, "thickness": self.thickness, "sweep": zeros,
            "dihedral": zeros, "solidity": self.solidity, "lift_coefficient":
            self.lift_coefficient, "lift_solidity": self.lift_solidity, "alpha": self.alpha,
            "beta1": self.beta_in, "beta2": self.beta_out, "beta_inf": self.beta_mean,
            "u": self.blade_speed, "c_m": np.full_like(self.radius, self.axial_velocity),
            "c_u": self.swirl, "r_c_u": self.radius * self.swirl,
            "w_inf": self.mean_relative_velocity, "reynolds": self.reynolds,
        }

    def sections(self, points: int = 40) -> BladeSections:
        """The designed sections, unswept, stacked on their quarter chords."""
        zeros = np.zeros_like(self.radius)
        return BladeSections(self.radius, self.chord, self.stagger, self.camber,
                             self.thickness, zeros, zeros.copy(), self.camber_position, points)


@dataclass(frozen=True, eq=False)
class BladeSections:
    """A blade's sections from root to tip, stacked into a closed surface.

    Each section is a NACA 4-digit outline of ``camber`` (maximum at ``camber_position``)
    and ``thickness`` (chord fractions), of ``chord`` (m) at ``stagger`` degrees from the
    circumferential direction, its quarter chord on the stacking line ``x = 0, θ = 0``
    shifted by ``sweep`` along the chord (towards the trailing edge) and ``dihedral``
    normal to it (towards the suction side), both in m. The axis is x, the flow goes
    towards +x and the rotor turns towards -θ (θ from y towards z): each leading edge lies
    upstream and at smaller θ than its trailing edge. Between sections the surface is
    ruled (straight lines), so give enough sections for the twist.
    """

    radius: np.ndarray
    chord: np.ndarray
    stagger: np.ndarray
    camber: np.ndarray
    thickness: np.ndarray
    sweep: np.ndarray
    dihedral: np.ndarray
    camber_position: float = 0.5
    points: int = 40  # per side of each section

    def __post_init__(self):
        columns = {}
        for name, column in zip(SECTION_COLUMNS, (self.radius, self.chord, self.stagger,
                                                  self.camber, self.thickness, self.sweep,
                                                  self.dihedral), strict=True):
            column = np.asarray(column, dtype=float)
            if column.ndim != 1 or not np.all(np.isfinite(column)):
                raise ValueError(f"sections' {name} must be a row of finite numbers, got "
                                 f"{column!r}")
            columns[name] = column
        if len({len(column) for column in columns.values()}) != 1 or len(columns["r"]) < 2:
            raise ValueError(f"sections need >= 2 rows and every column as long, got "
                             f"{ {name: len(c) for name, c in columns.items()} }")
        radius = columns["r"]
        if radius[0] <= 0 or np.any(np.diff(radius) <= 0):
            raise ValueError(f"sections' r must be positive and increasing, got {radius}")
        checks = {"chord": (columns["chord"] > 0, "positive"),
                  "stagger": ((columns["stagger"] > 0) & (columns["stagger"] < 90),
                              "in (0, 90) degrees"),
                  "camber": ((columns["camber"] >= 0) & (columns["camber"] < 0.2),
                             "in [0, 0.2)"),
                  "thickness": ((columns["thickness"] > 0) & (columns["thickness"] < 0.5),
                                "in (0, 0.5)")}
        for name, (good, what) in checks.items():
            if not np.all(good):
                raise ValueError(f"sections' {name} must be {what}, got {columns[name]}")
        if not 0 < self.camber_position < 1:
            raise ValueError(f"camber_position must be in (0, 1), got {self.camber_position!r}")
        if isinstance(self.points, bool) or not isinstance(self.points, int) or self.points < 8:
            raise ValueError(f"points per side must be an integer >= 8, got {self.points!r}")
        for name, column in columns.items():
            object.__setattr__(self, "radius" if name == "r" else name, column)

    @classmethod
    def from_columns(cls, columns: Mapping, camber_position: float = 0.5,
                     points: int = 40) -> BladeSections:
        """Sections from a table by column name (:data:`SECTION_COLUMNS`; others are
        ignored), e.g. a CSV's columns or :meth:`RotorDesign.table`."""
        missing = [name for name in SECTION_COLUMNS if name not in columns]
        if missing:
            raise ValueError(f"a section table needs the columns {', '.join(SECTION_COLUMNS)};"
                             f" missing {', '.join(missing)}")
        return cls(*(columns[name] for name in SECTION_COLUMNS),
                   camber_position=camber_position, points=points)

    def loops(self, angle: float = 0.0) -> list[np.ndarray]:
        """Each section's closed loop ``(2 points - 2, 3)``, the stacking line at θ =
        ``angle`` (radians)."""
        return [
            wrap_section(naca4_outline(camber, self.camber_position, thickness, self.points),
                         radius, chord, 90.0 - stagger, angle=angle, sweep=sweep,
                         dihedral=dihedral)
            for radius, chord, stagger, camber, thickness, sweep, dihedral in zip(
                self.radius, self.chord, self.stagger, self.camber, self.thickness,
                self.sweep, self.dihedral, strict=True)
        ]

    def blade(self, angle: float = 0.0):
        """One blade as a checked ``trimesh.Trimesh``: watertight, consistently wound,
        positive volume, normals outward."""
        return closed_surface(*stack_loops(self.loops(angle)), "blade")

    def rotor(self, blades: int):
        """``blades`` blades evenly round the axis, one ``trimesh.Trimesh`` of as many
        closed bodies; ValueError where neighbouring blades would overlap."""
        import trimesh

        if isinstance(blades, bool) or not isinstance(blades, int) or blades < 1:
            raise ValueError(f"blades must be a positive integer, got {blades!r}")
        for radius, loop in zip(self.radius, self.loops(), strict=True):
            developed = np.column_stack([loop[:, 0],
                                         radius * np.arctan2(loop[:, 2], loop[:, 1])])
            neighbour = developed + np.array([0.0, 2 * math.pi * radius / blades])
            if blades > 1 and np.any(_inside(neighbour, developed)):
                raise ValueError(f"{blades} blades overlap at r = {radius:.4g} m: the "
                                 f"sections' solidity is too high there")
        return trimesh.util.concatenate(
            [self.blade(2 * math.pi * k / blades) for k in range(blades)]
        )


def _inside(points: np.ndarray, polygon: np.ndarray) -> np.ndarray:
    """Which of ``points`` (n, 2) lie inside the closed ``polygon`` (k, 2): even-odd rule
    (a ray towards +x crosses its edges an odd number of times)."""
    x, y = points[:, :1], points[:, 1:]
    start, end = polygon, np.roll(polygon, -1, axis=0)
    straddles = (start[:, 1] > y) != (end[:, 1] > y)
    with np.errstate(divide="ignore", invalid="ignore"):  # horizontal edges never straddle
        crossing = start[:, 0] + (y - start[:, 1]) * (end[:, 0] - start[:, 0]) / (
            end[:, 1] - start[:, 1])
    return np.count_nonzero(straddles & (x < crossing), axis=1) % 2 == 1


def swirl_from_blades(sections: BladeSections, blades: int, speed: float,
                      axial_velocity: float, glide_ratio: float = 0.0) -> np.ndarray:
    """The swirl ``c_u`` (m/s) each section gives at ``speed`` (rpm) and the axial velocity
    ``axial_velocity`` (m/s), by the blade-element relation and thin-airfoil lift: the
    ``c_u`` in ``(0, 2u)`` at which ``C_L(λ - β_∞) σ = 2 (c_u/w_∞) sin β_∞ /
    (sin β_∞ + ε cos β_∞)``, ``β_∞ = atan(c_m / (u - c_u/2))`` (no inlet swirl).

    A section whose stagger meets the inflow below its zero-lift angle gives no swirl:
    ValueError.
    """
    from scipy.optimize import brentq

    if isinstance(blades, bool) or not isinstance(blades, int) or blades < 1:
        raise ValueError(f"blades must be a positive integer, got {blades!r}")
    omega = 2 * math.pi * _positive("speed", speed) / 60
    axial = _positive("axial_velocity", axial_velocity)
    swirl = []
    for radius, chord, stagger, camber in zip(sections.radius, sections.chord,
                                              sections.stagger, sections.camber, strict=True):
        u = omega * radius
        known = (u, axial, chord * blades / (2 * math.pi * radius), math.radians(stagger),
                 naca4_zero_lift_angle(camber, sections.camber_position), glide_ratio)
        if _balance(0.0, *known) <= 0:
            raise ValueError(f"the section at r = {radius:.4g} m meets the inflow below its "
                             f"zero-lift angle: it gives no swirl")
        # As c_u -> 2u, β_∞ -> 90° and a stagger below 90° meets the flow at a negative
        # lift against a positive demand: balance < 0, so the root is bracketed.
        swirl.append(brentq(_balance, 0.0, 2 * u * (1 - 1e-12), args=known, xtol=1e-15,
                            rtol=4 * np.finfo(float).eps))
    return np.asarray(swirl)


def _balance(swirl, u, axial, solidity, stagger, zero_lift, glide_ratio) -> float:
    """The section's lift × solidity less what the swirl ``c_u`` needs (stagger and the
    zero-lift angle in radians)."""
    beta = math.atan2(axial, u - swirl / 2)
    lift = 2 * math.pi * (stagger - beta - zero_lift)
    demand = 2 * swirl / math.hypot(axial, u - swirl / 2)
    return lift * solidity - demand * math.sin(beta) / (math.sin(beta)
                                                         + glide_ratio * math.cos(beta))
