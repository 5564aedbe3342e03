"""Airfoil sections, chord 1 from the leading edge (MPI-free).

NACA 4-digit (analytic, sharp or open trailing edge), the RAE 2822 from the table of Cook,
McDonald & Firmin (AGARD AR-138, 1979) shipped in ``tachyflow/data/airfoils/rae2822.dat``
(its header says where the numbers come from), and the NACA 65-series compressor-blade
section: the 65-010 thickness form from the ordinates of Abbott & von Doenhoff, "Theory of
Wing Sections" (Appendix I; NACA Report 824), shipped in
``tachyflow/data/airfoils/naca65-010.dat``, on the a = 1.0 mean line of a design lift
coefficient (their Appendix II, analytic). :class:`SurfaceSpline` places points on a
section by arc length. The C-grids round them are :mod:`tachyflow.numerics.airfoil_grids`;
the fan's blades, :mod:`tachyflow.numerics.blades`, stack them.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.special import xlogy

# Coefficient of x^4 in the NACA thickness polynomial: 0.1015 leaves the published finite
# trailing edge, 0.1036 closes it (the usual modification for a sharp edge).
_NACA_A4 = {False: 0.1015, True: 0.1036}


@dataclass(frozen=True)
class AirfoilSection:
    """One airfoil section, chord 1 from the leading edge ``(0, 0)``.

    Attributes
    ----------
    name : str
    upper, lower : ndarray (n, 2)
        Surface points from the leading edge to the trailing edge, ``x`` increasing.
    """

    name: str
    upper: np.ndarray
    lower: np.ndarray

    def thickness(self, x) -> np.ndarray:
        """Distance between the surfaces at chord stations ``x`` (linear in the table)."""
        upper = np.interp(x, self.upper[:, 0], self.upper[:, 1])
        lower = np.interp(x, self.lower[:, 0], self.lower[:, 1])
        return upper - lower

    def max_thickness(self) -> tuple[float, float]:
        """``(thickness, x)`` of the thickest station, from the spline of the surface."""
        spline = SurfaceSpline(self)
        x = np.linspace(0.0, 1.0, 20001)
        upper = spline.surface_y(x, "upper")
        lower = spline.surface_y(x, "lower")
        k = int(np.argmax(upper - lower))
        return float(upper[k] - lower[k]), float(x[k])

    @property
    def trailing_edge_gap(self) -> float:
        """Distance between the upper and lower trailing-edge points."""
        return float(np.hypot(*(self.upper[-1] - self.lower[-1])))

    def loop(self) -> np.ndarray:
        """Points from the lower trailing edge round the leading edge to the upper one."""
        return np.concatenate([self.lower[::-1], self.upper[1:]])


def naca4(code: str, points: int = 201, closed_trailing_edge: bool = True) -> AirfoilSection:
    """A NACA 4-digit section (e.g. ``"0012"``, ``"2412"``).

    Parameters
    ----------
    code : str
        Four digits: camber in % chord, its position in tenths, thickness in % chord.
    points : int
        Points per surface, cosine-spaced in ``x`` (clustered at both edges).
    closed_trailing_edge : bool
        Use the x^4 coefficient 0.1036 that closes the trailing edge (C-grids need a sharp
        edge); False keeps the published 0.1015 and a gap of about 0.25 % of the thickness.
    """
    camber, position, thickness = naca4_parameters(code)
    if not isinstance(points, int | np.integer) or points < 3:
        raise ValueError(f"points per surface must be an integer >= 3, got {points!r}")
    upper, lower = naca4_surfaces(camber, position, thickness, int(points), closed_trailing_edge)
    return AirfoilSection(f"NACA {code}", upper, lower)


def naca4_parameters(code: str) -> tuple[float, float, float]:
    """``(camber, position, thickness)`` as chord fractions of the NACA 4-digit ``code``
    (``"4510"``: 4 % camber at 50 % of the chord, 10 % thick); ValueError for a code that
    is not one."""
    if not (isinstance(code, str) and len(code) == 4 and code.isdigit()):
        raise ValueError(f"NACA 4-digit code must be four digits like '0012', got {code!r}")
    camber, position, thickness = int(code[0]) / 100, int(code[1]) / 10, int(code[2:]) / 100
    if thickness <= 0:
        raise ValueError(f"NACA {code} has zero thickness")
    if camber > 0 and not 0 < position < 1:
        raise ValueError(f"NACA {code}: a cambered section needs the camber position 1-9")
    return camber, position, thickness


def naca4_surfaces(
    camber: float, position: float, thickness: float, points: int, closed_trailing_edge=True
) -> tuple[np.ndarray, np.ndarray]:
    """Upper and lower surfaces ``(points, 2)`` of a NACA 4-digit section of maximum
    ``camber`` at ``position`` of the chord and ``thickness`` (chord fractions), from the
    leading to the trailing edge, cosine-spaced; the thickness laid off normal to the mean
    line. The trailing edge is closed exactly with ``closed_trailing_edge``."""
    x = 0.5 * (1.0 - np.cos(np.linspace(0.0, np.pi, points)))
    half = (
        5.0
        * thickness
        * (
            0.2969 * np.sqrt(x)
            - 0.1260 * x
            - 0.3516 * x**2
            + 0.2843 * x**3
            - _NACA_A4[bool(closed_trailing_edge)] * x**4
        )
    )
    mean = np.zeros_like(x)
    slope = np.zeros_like(x)
    if camber > 0:
        front = x < position
        mean = np.where(
            front,
            camber / position**2 * (2 * position * x - x**2),
            camber / (1 - position) ** 2 * (1 - 2 * position + 2 * position * x - x**2),
        )
        slope = np.where(
            front,
            2 * camber / position**2 * (position - x),
            2 * camber / (1 - position) ** 2 * (position - x),
        )
    angle = np.arctan(slope)
    upper = np.column_stack([x - half * np.sin(angle), mean + half * np.cos(angle)])
    lower = np.column_stack([x + half * np.sin(angle), mean - half * np.cos(angle)])
    if closed_trailing_edge:
        upper[-1, 1] = lower[-1, 1] = mean[-1]  # exactly sharp, not 1e-17 apart
    return upper, lower


# Leading-edge radius of the NACA 65-010 thickness form, a fraction of the chord (the table's).
_NACA65_010_NOSE_RADIUS = 0.00687


def naca65_010_ordinates() -> np.ndarray:
    """The published NACA 65-010 half-thickness ordinates, ``(26, 2)``: ``x/c, y_t/c``."""
    text = resources.files("tachyflow").joinpath("data/airfoils/naca65-010.dat").read_text()
    return np.loadtxt(text.splitlines(), comments="#") / 100.0


def naca65_010_half_thickness(x) -> np.ndarray:
    """The NACA 65-010 half thickness at chord stations ``x`` in [0, 1]: a cubic spline of the
    published ordinates in ``sqrt(x)``, in which the round nose is regular, its slope at the
    leading edge set by the published nose radius ``ρ`` (``y_t -> sqrt(2 ρ x)``)."""
    table = naca65_010_ordinates()
    spline = CubicSpline(
        np.sqrt(table[:, 0]),
        table[:, 1],
        bc_type=((1, np.sqrt(2 * _NACA65_010_NOSE_RADIUS)), "not-a-knot"),
    )
    return spline(np.sqrt(np.clip(x, 0.0, 1.0)))


def a10_mean_line(x, design_lift: float) -> tuple[np.ndarray, np.ndarray]:
    """The NACA a = 1.0 mean line (uniform load along the chord) of ``design_lift`` c_li at
    chord stations ``x``: ``y_c = -c_li / (4π) [(1 - x) ln(1 - x) + x ln x]`` and its slope
    ``c_li / (4π) ln((1 - x) / x)`` (infinite at both ends)."""
    x = np.asarray(x, dtype=float)
    factor = design_lift / (4 * np.pi)
    mean = -factor * (xlogy(1 - x, 1 - x) + xlogy(x, x))
    with np.errstate(divide="ignore", invalid="ignore"):  # ±inf at the edges; 0 uncambered
        slope = np.where(factor == 0, 0.0, factor * (np.log(1 - x) - np.log(x)))
    return mean, slope


def naca65_surfaces(design_lift: float, thickness: float, points: int):
    """Upper and lower surfaces ``(points, 2)`` of the NACA 65-series section of design lift
    coefficient ``design_lift`` (the a = 1.0 mean line) and ``thickness`` (chord fraction;
    the 65-010 form scaled by ``thickness / 0.10``), from the leading to the trailing edge,
    cosine-spaced, the thickness laid off normal to the mean line. Sharp at the trailing
    edge, as the table is; a 65-(12)10 is ``naca65_surfaces(1.2, 0.10, n)``."""
    x = 0.5 * (1.0 - np.cos(np.linspace(0.0, np.pi, points)))
    half = naca65_010_half_thickness(x) * (thickness / 0.10)
    mean, slope = a10_mean_line(x, design_lift)
    angle = np.arctan(slope)
    upper = np.column_stack([x - half * np.sin(angle), mean + half * np.cos(angle)])
    lower = np.column_stack([x + half * np.sin(angle), mean - half * np.cos(angle)])
    upper[[0, -1]] = lower[[0, -1]] = [[0.0, 0.0], [1.0, 0.0]]  # exactly closed at both ends
    return upper, lower


def rae2822() -> AirfoilSection:
    """The RAE 2822 section: 65 stations per surface from AGARD AR-138 (see the data file)."""
    text = resources.files("tachyflow").joinpath("data/airfoils/rae2822.dat").read_text()
    table = np.loadtxt(text.splitlines(), comments="#")
    return AirfoilSection(
        "RAE 2822",
        np.column_stack([table[:, 0], table[:, 1]]),
        np.column_stack([table[:, 0], table[:, 2]]),
    )


class SurfaceSpline:
    """Cubic spline through a section's points, parameterised by arc length.

    The loop runs from the lower trailing edge round the leading edge to the upper
    trailing edge; :attr:`leading_edge` is the arc length at the leading-edge point and
    :attr:`length` the whole loop's.
    """

    def __init__(self, section: AirfoilSection, samples: int = 8001):
        loop = section.loop()
        chord_length = np.concatenate([[0.0], np.cumsum(np.hypot(*np.diff(loop, axis=0).T))])
        self._spline = CubicSpline(chord_length, loop, axis=0)
        # Re-measure the arc length on the spline itself so that points placed by
        # arc length land where asked, then invert the map by interpolation.
        parameter = np.linspace(0.0, chord_length[-1], samples)
        arc = np.concatenate(
            [[0.0], np.cumsum(np.hypot(*np.diff(self._spline(parameter), axis=0).T))]
        )
        self._parameter, self._arc = parameter, arc
        self.length = float(arc[-1])
        self.leading_edge = float(np.interp(chord_length[len(section.lower) - 1], parameter, arc))

    def points(self, arc_length) -> np.ndarray:
        """Points ``(n, 2)`` at the given arc lengths along the loop."""
        return self._spline(np.interp(arc_length, self._arc, self._parameter))

    def surface_y(self, x, side: str) -> np.ndarray:
        """``y`` of the upper or lower surface at chord stations ``x`` (dense sampling)."""
        if side == "lower":
            arc = np.linspace(0.0, self.leading_edge, 4001)[::-1]
        else:
            arc = np.linspace(self.leading_edge, self.length, 4001)
        points = self.points(arc)
        return np.interp(x, points[:, 0], points[:, 1])
