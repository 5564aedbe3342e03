"""Ideal gas in the solver's non-dimensional variables, and Sutherland's viscosity.

Non-dimensionalisation: free-stream density and speed of sound are 1, so
``p = rho T / gamma`` (``T_inf = 1``), ``c_p = 1 / (gamma - 1)`` and the free-stream
molecular viscosity is ``M / Re`` (Reynolds number per unit length).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tachyflow.numerics.compiled import kernel

GAMMA = 1.4
PRANDTL = 0.72
PRANDTL_TURBULENT = 0.9
SUTHERLAND_KELVIN = 110.4


def primitive(U: np.ndarray, gamma: float = GAMMA) -> np.ndarray:
    """Primitive variables ``(rho, u, v, p[, nu_tilde])`` of conservative ``U``."""
    Q = np.empty_like(U)
    rho = U[0]
    Q[0] = rho
    Q[1] = U[1] / rho
    Q[2] = U[2] / rho
    Q[3] = (gamma - 1.0) * (U[3] - 0.5 * rho * (Q[1] ** 2 + Q[2] ** 2))
    if U.shape[0] > 4:
        Q[4] = U[4] / rho
    return Q


def conservative(Q: np.ndarray, gamma: float = GAMMA) -> np.ndarray:
    """Conservative variables of primitive ``Q = (rho, u, v, p[, nu_tilde])``."""
    U = np.empty_like(Q)
    rho = Q[0]
    U[0] = rho
    U[1] = rho * Q[1]
    U[2] = rho * Q[2]
    U[3] = Q[3] / (gamma - 1.0) + 0.5 * rho * (Q[1] ** 2 + Q[2] ** 2)
    if Q.shape[0] > 4:
        U[4] = rho * Q[4]
    return U


@kernel
def primitive_into(U, Q, gamma):  # pragma: no cover - compiled
    """:func:`primitive` into ``Q`` (every cell, ghosts included)."""
    nvar, ni, nj = U.shape
    for i in range(ni):
        for j in range(nj):
            rho = U[0, i, j]
            u = U[1, i, j] / rho
            v = U[2, i, j] / rho
            Q[0, i, j] = rho
            Q[1, i, j] = u
            Q[2, i, j] = v
            Q[3, i, j] = (gamma - 1.0) * (U[3, i, j] - 0.5 * rho * (u * u + v * v))
            if nvar > 4:
                Q[4, i, j] = U[4, i, j] / rho


@kernel
def sutherland(T, mu_inf, s):  # pragma: no cover - compiled
    """Sutherland's law ``mu = mu_inf T^1.5 (1 + s) / (T + s)``, ``s = 110.4 K / T_inf``."""
    return mu_inf * T * np.sqrt(T) * (1.0 + s) / (T + s)


@dataclass(frozen=True)
class FreeStream:
    """Free-stream conditions in non-dimensional form.

    Parameters
    ----------
    mach : float
        Free-stream Mach number (> 0).
    alpha_degrees : float
        Angle of attack.
    reynolds : float
        Reynolds number per unit length; 0 for inviscid flow.
    temperature_kelvin : float
        Free-stream temperature (Sutherland's law).
    nu_tilde_ratio : float
        Free-stream ``nu_tilde / nu`` of Spalart–Allmaras (3 for fully turbulent flow).
    """

    mach: float
    alpha_degrees: float = 0.0
    reynolds: float = 0.0
    temperature_kelvin: float = 288.15
    nu_tilde_ratio: float = 3.0
    gamma: float = GAMMA

    def __post_init__(self):
        if not self.mach > 0:
            raise ValueError(f"mach must be positive, got {self.mach!r}")
        if not self.reynolds >= 0:
            raise ValueError(f"reynolds must be >= 0 (0: inviscid), got {self.reynolds!r}")
        if not self.temperature_kelvin > 0:
            raise ValueError(
                f"temperature_kelvin must be positive, got {self.temperature_kelvin!r}"
            )

    @property
    def velocity(self) -> tuple[float, float]:
        alpha = np.radians(self.alpha_degrees)
        return self.mach * float(np.cos(alpha)), self.mach * float(np.sin(alpha))

    @property
    def pressure(self) -> float:
        return 1.0 / self.gamma

    @property
    def viscosity(self) -> float:
        """Free-stream molecular viscosity ``M / Re`` (0: inviscid)."""
        return self.mach / self.reynolds if self.reynolds > 0 else 0.0

    @property
    def sutherland_constant(self) -> float:
        return SUTHERLAND_KELVIN / self.temperature_kelvin

    @property
    def dynamic_pressure(self) -> float:
        return 0.5 * self.mach**2

    def primitive(self, nvar: int = 4) -> np.ndarray:
        """``(rho, u, v, p[, nu_tilde])`` of the free stream."""
        u, v = self.velocity
        values = [1.0, u, v, self.pressure]
        if nvar > 4:
            from tachyflow.numerics.compressible.turbulence import free_stream_nu_tilde

            values.append(free_stream_nu_tilde(self.viscosity, self.nu_tilde_ratio))
        return np.array(values)
