"""Point distributions for structured grids (MPI-free): Vinokur's tanh stretchings and
the first wall spacing of a y+.

Vinokur's functions (M. Vinokur, "On one-dimensional stretching functions for
finite-difference calculations", J. Comput. Phys. 50, 1983), one-sided (a first interval)
and two-sided (both end intervals), their slopes adjusted until the end intervals are
exactly those asked for; ``refinement`` gives the same function at ``2**r`` times the
intervals, so that the levels of a grid family nest. :func:`wall_spacing_for_yplus`: the
first cell height for a y+ from a turbulent flat plate's skin friction.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq


def _stretching_parameter(b: float) -> float:
    """``delta`` with ``sinh(delta)/delta = b`` (b > 1) or ``sin(delta)/delta = b`` (b < 1)."""
    if b > 1.0:
        upper = 1.0
        while np.sinh(upper) / upper < b:
            upper *= 2.0
        return brentq(lambda d: np.sinh(d) / d - b, 1e-12, upper)
    return brentq(lambda d: np.sin(d) / d - b, 1e-12, np.pi - 1e-12)


def _vinokur_one_sided(xi: np.ndarray, cells: int, first: float) -> np.ndarray:
    """Vinokur's one-sided function with end slope ``first * cells`` at ``xi = 0``."""
    b = 1.0 / (cells * first)
    if abs(b - 1.0) < 1e-12:
        return xi.copy()
    delta = _stretching_parameter(b)
    if b > 1.0:
        return 1.0 + np.tanh(0.5 * delta * (xi - 1.0)) / np.tanh(0.5 * delta)
    return 1.0 + np.tan(0.5 * delta * (xi - 1.0)) / np.tan(0.5 * delta)


def _vinokur_two_sided(xi: np.ndarray, cells: int, first: float, last: float) -> np.ndarray:
    """Vinokur's two-sided function with end slopes ``first * cells``, ``last * cells``."""
    ratio = np.sqrt(last / first)
    b = 1.0 / (cells * np.sqrt(first * last))
    if abs(b - 1.0) < 1e-12:
        u = xi.copy()
    else:
        delta = _stretching_parameter(b)
        if b > 1.0:
            u = 0.5 * (1.0 + np.tanh(delta * (xi - 0.5)) / np.tanh(0.5 * delta))
        else:
            u = 0.5 * (1.0 + np.tan(delta * (xi - 0.5)) / np.tan(0.5 * delta))
    return u / (ratio + (1.0 - ratio) * u)


def _check_fraction(name: str, value: float, cells: int) -> None:
    if not (isinstance(cells, int | np.integer) and cells >= 1):
        raise ValueError(f"cells must be a positive integer, got {cells!r}")
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} spacing must be a fraction in (0, 1) of the length, got {value}")


def one_sided_stretching(cells: int, first: float, refinement: int = 0) -> np.ndarray:
    """Points on [0, 1], ``cells`` intervals, the first exactly ``first`` long.

    Vinokur's one-sided tanh function; its slope parameter is adjusted until the first
    interval (not the end slope) is ``first``. ``refinement`` r returns the same function
    at ``cells * 2**r`` intervals, so every ``2**r``-th point is the ``cells``
    distribution (nested grids).
    """
    _check_fraction("first", first, cells)
    if refinement < 0:
        raise ValueError(f"refinement must be >= 0, got {refinement}")
    end = np.array([0.0, 1.0 / cells])
    slope = first
    for _ in range(100):  # the first interval is monotone in the slope: fixed point
        actual = _vinokur_one_sided(end, cells, slope)[1]
        if abs(actual / first - 1.0) < 1e-12:
            break
        slope = min(slope * first / actual, 0.999999)
    s = _vinokur_one_sided(np.linspace(0.0, 1.0, cells * 2**refinement + 1), cells, slope)
    s[0], s[-1] = 0.0, 1.0
    return s


def two_sided_stretching(cells: int, first: float, last: float, refinement: int = 0) -> np.ndarray:
    """Points on [0, 1], ``cells`` intervals, the first and last exactly as given.

    Vinokur's two-sided function, end slopes adjusted until the end intervals match;
    ``refinement`` as in :func:`one_sided_stretching`.
    """
    _check_fraction("first", first, cells)
    _check_fraction("last", last, cells)
    if refinement < 0:
        raise ValueError(f"refinement must be >= 0, got {refinement}")
    if cells < 2:
        raise ValueError(f"a two-sided distribution needs at least 2 cells, got {cells}")
    ends = np.array([0.0, 1.0 / cells, 1.0 - 1.0 / cells, 1.0])
    slopes = np.array([first, last])
    for _ in range(200):
        s = _vinokur_two_sided(ends, cells, *slopes)
        actual = np.array([s[1] - s[0], s[3] - s[2]])
        error = actual / np.array([first, last])
        if np.all(np.abs(error - 1.0) < 1e-12):
            break
        slopes = slopes / error
    s = _vinokur_two_sided(np.linspace(0.0, 1.0, cells * 2**refinement + 1), cells, *slopes)
    s[0], s[-1] = 0.0, 1.0
    return s


def flat_plate_skin_friction(reynolds: float) -> float:
    """Turbulent flat-plate skin friction, Schlichting's ``(2 log10 Re - 0.65)^-2.3``."""
    if not reynolds > 1e3:
        raise ValueError(f"Reynolds number must be > 1e3 for a turbulent estimate, got {reynolds}")
    return float((2.0 * np.log10(reynolds) - 0.65) ** -2.3)


def wall_spacing_for_yplus(reynolds: float, yplus: float = 1.0, length: float = 1.0) -> float:
    """First cell height giving ``y+ = yplus`` on a flat plate of ``length`` at ``reynolds``.

    ``y+ = dy u_tau / nu`` with ``u_tau = U sqrt(Cf / 2)`` and ``nu = U length / Re``, so
    ``dy = yplus length / (Re sqrt(Cf / 2))``; Cf from :func:`flat_plate_skin_friction`.
    At Re = 6.5e6 and y+ = 1 this is 4.1e-6 chords. The estimate is for the plate's
    average friction: near a transonic airfoil's suction peak y+ runs higher, behind the
    shock lower.
    """
    if not yplus > 0:
        raise ValueError(f"y+ must be positive, got {yplus}")
    cf = flat_plate_skin_friction(reynolds)
    return float(yplus * length / (reynolds * np.sqrt(0.5 * cf)))
