"""Spalart–Allmaras one-equation model, the standard fully turbulent form without the trip
and ``f_t2`` terms ("SA-noft2" of the NASA Turbulence Modeling Resource), conservative:

``d(rho nt)/dt + div(rho u nt) = rho (cb1 St nt - cw1 fw (nt/d)^2)
+ (1/sigma) [div((mu + rho nt) grad nt) + cb2 rho |grad nt|^2]``

(P. R. Spalart, S. R. Allmaras, "A one-equation turbulence model for aerodynamic flows",
AIAA 92-0439), with S-tilde kept positive by the modification of S. R. Allmaras, F. T.
Johnson, P. R. Spalart (ICCFD7-1902, 2012), and their negative branch (SA-neg): where
``nu_tilde < 0`` the source is ``cb1 Omega nt + cw1 (nt/d)^2`` and the diffusion
coefficient ``mu + rho nt fn``, ``fn = (cn1 + chi^3)/(cn1 - chi^3)``, with no eddy
viscosity. Negative values are kept rather than clipped to 0 after each update: clipping
has no steady state where the discrete solution dips below zero (edges of boundary layers
and wakes), and makes the update non-smooth there. The eddy viscosity is
``mu_t = rho max(nt, 0) fv1``.
"""

from __future__ import annotations

from tachyflow.numerics.compiled import kernel

CB1 = 0.1355
CB2 = 0.622
SIGMA = 2.0 / 3.0
KAPPA = 0.41
CW1 = CB1 / KAPPA**2 + (1.0 + CB2) / SIGMA
CW2 = 0.3
CW3 = 2.0
CV1 = 7.1
CV2 = 0.7
CV3 = 0.9
CN1 = 16.0


@kernel
def fv1(chi):  # pragma: no cover - compiled
    chi3 = chi * chi * chi
    return chi3 / (chi3 + CV1**3)


@kernel
def eddy_viscosity_into(U, mu, mut):  # pragma: no cover - compiled
    """``mu_t = rho nt fv1(rho nt / mu)`` in every cell (``U[4] = rho nt``)."""
    ni, nj = mu.shape
    for i in range(ni):
        for j in range(nj):
            rho_nt = max(U[4, i, j], 0.0)
            mut[i, j] = rho_nt * fv1(rho_nt / mu[i, j])


@kernel
def source(rho, nt, nu, vorticity, distance, grad_nt2):  # pragma: no cover - compiled
    """Source of ``rho nt`` per unit volume and its (non-negative) implicit coefficient:
    ``(rho (P - D + cb2/sigma |grad nt|^2), max(dD/dnt - dP/dnt, 0))``."""
    if nt < 0.0:  # SA-neg
        production = CB1 * vorticity * nt
        destruction = -CW1 * nt * nt / (distance * distance)
        implicit = max(-CB1 * vorticity - 2.0 * CW1 * nt / (distance * distance), 0.0)
        return rho * (production - destruction + CB2 / SIGMA * grad_nt2), implicit
    chi = nt / nu
    f1 = fv1(chi)
    fv2 = 1.0 - chi / (1.0 + chi * f1)
    kd2 = KAPPA * KAPPA * distance * distance
    s_bar = nt * fv2 / kd2
    if s_bar >= -CV2 * vorticity:
        s_tilde = vorticity + s_bar
    else:
        s_tilde = vorticity + vorticity * (CV2 * CV2 * vorticity + CV3 * s_bar) / (
            (CV3 - 2.0 * CV2) * vorticity - s_bar
        )
    r = 10.0
    if s_tilde > 0.0:
        r = min(nt / (s_tilde * kd2), 10.0)
    g = r + CW2 * (r**6 - r)
    fw = g * ((1.0 + CW3**6) / (g**6 + CW3**6)) ** (1.0 / 6.0)
    production = CB1 * s_tilde * nt
    destruction = CW1 * fw * nt * nt / (distance * distance)
    implicit = max(2.0 * CW1 * fw * nt / (distance * distance) - CB1 * s_tilde, 0.0)
    return rho * (production - destruction + CB2 / SIGMA * grad_nt2), implicit


@kernel
def diffusion_coefficient(mu, rho_nt):  # pragma: no cover - compiled
    """``mu + rho nt`` (``mu + rho nt fn`` where ``nt < 0``, SA-neg) of the diffusion of
    ``nt``, before the division by sigma."""
    if rho_nt >= 0.0:
        return mu + rho_nt
    chi3 = (rho_nt / mu) ** 3
    return mu + rho_nt * (CN1 + chi3) / (CN1 - chi3)


def source_term(rho, nt, nu, vorticity, distance, grad_nt2=0.0) -> float:
    """:func:`source`'s first value, for checks."""
    return source(float(rho), float(nt), float(nu), float(vorticity), float(distance),
                  float(grad_nt2))[0]


def free_stream_nu_tilde(nu_inf: float, ratio: float = 3.0) -> float:
    """Ambient ``nu_tilde = ratio nu_inf`` (3 to 5 for fully turbulent flow)."""
    if not ratio > 0:
        raise ValueError(f"nu_tilde ratio must be positive, got {ratio!r}")
    return ratio * nu_inf
