"""Numerical fluxes through a face with unit normal ``(nx, ny)``, per unit face length.

Both take the primitive states left and right of the face, ``q = (rho, u, v, p[, nu_tilde])``
(1D arrays), and write the flux of ``(rho, rho u, rho v, rho E[, rho nu_tilde])`` into
``out``. The turbulence variable is a passive scalar carried by the scheme's mass flux
(upwind), so both fluxes stay consistent with the physical flux of the fifth equation.

- :func:`roe_flux`: P. L. Roe's approximate Riemann solver (J. Comput. Phys. 43, 1981) with
  Harten's entropy fix on the acoustic waves: ``|lambda|`` below ``delta = fix (|V| + c)``
  becomes ``(lambda^2 + delta^2) / (2 delta)``.
- :func:`ausm_up_flux`: M.-S. Liou's AUSM+-up ("A sequel to AUSM, Part II: AUSM+-up for all
  speeds", J. Comput. Phys. 214, 2006), with ``K_p = 0.25``, ``K_u = 0.75``, ``sigma = 1``,
  ``beta = 1/8`` and the interface speed of sound from the critical speed of sound.
"""

from __future__ import annotations

import numpy as np

from tachyflow.numerics.compiled import kernel

ROE = 0
AUSM_UP = 1
SCHEMES = {"roe": ROE, "ausm+up": AUSM_UP}


@kernel
def physical_flux(q, nx, ny, gamma, out):  # pragma: no cover - compiled
    """The Euler flux ``F(q) . n`` of primitive state ``q``."""
    rho, u, v, p = q[0], q[1], q[2], q[3]
    vn = u * nx + v * ny
    energy = p / (gamma - 1.0) + 0.5 * rho * (u * u + v * v)
    mass = rho * vn
    out[0] = mass
    out[1] = mass * u + p * nx
    out[2] = mass * v + p * ny
    out[3] = (energy + p) * vn
    for k in range(4, q.shape[0]):
        out[k] = mass * q[k]


@kernel
def roe_flux(qL, qR, nx, ny, gamma, entropy_fix, out):  # pragma: no cover - compiled
    """Roe's flux with Harten's entropy fix (``entropy_fix``: delta over ``|V| + c``)."""
    rL, uL, vL, pL = qL[0], qL[1], qL[2], qL[3]
    rR, uR, vR, pR = qR[0], qR[1], qR[2], qR[3]
    HL = gamma / (gamma - 1.0) * pL / rL + 0.5 * (uL * uL + vL * vL)
    HR = gamma / (gamma - 1.0) * pR / rR + 0.5 * (uR * uR + vR * vR)
    vnL = uL * nx + vL * ny
    vnR = uR * nx + vR * ny
    # Roe averages.
    sL, sR = np.sqrt(rL), np.sqrt(rR)
    w = sL / (sL + sR)
    rho = sL * sR
    u = w * uL + (1.0 - w) * uR
    v = w * vL + (1.0 - w) * vR
    H = w * HL + (1.0 - w) * HR
    q2 = u * u + v * v
    c = np.sqrt(max((gamma - 1.0) * (H - 0.5 * q2), 1e-300))
    vn = u * nx + v * ny
    dr, du, dv, dp = rR - rL, uR - uL, vR - vL, pR - pL
    dvn = vnR - vnL
    delta = entropy_fix * (abs(vn) + c)
    l1 = abs(vn - c)
    l5 = abs(vn + c)
    if l1 < delta:
        l1 = (l1 * l1 + delta * delta) / (2.0 * delta)
    if l5 < delta:
        l5 = (l5 * l5 + delta * delta) / (2.0 * delta)
    l234 = abs(vn)
    a1 = l1 * (dp - rho * c * dvn) / (2.0 * c * c)
    a5 = l5 * (dp + rho * c * dvn) / (2.0 * c * c)
    a2 = l234 * (dr - dp / (c * c))
    a3 = l234 * rho
    # |A| dU, the dissipation.
    d0 = a1 + a2 + a5
    d1 = a1 * (u - c * nx) + a2 * u + a3 * (du - dvn * nx) + a5 * (u + c * nx)
    d2 = a1 * (v - c * ny) + a2 * v + a3 * (dv - dvn * ny) + a5 * (v + c * ny)
    d3 = a1 * (H - c * vn) + a2 * 0.5 * q2 + a3 * (u * du + v * dv - vn * dvn) + a5 * (H + c * vn)
    mL, mR = rL * vnL, rR * vnR
    mass = 0.5 * (mL + mR - d0)
    out[0] = mass
    out[1] = 0.5 * (mL * uL + pL * nx + mR * uR + pR * nx - d1)
    out[2] = 0.5 * (mL * vL + pL * ny + mR * vR + pR * ny - d2)
    out[3] = 0.5 * (mL * HL + mR * HR - d3)
    for k in range(4, qL.shape[0]):
        out[k] = mass * (qL[k] if mass > 0.0 else qR[k])


@kernel
def _m4(mach, sign):  # pragma: no cover - compiled
    """Liou's 4th-degree split Mach number ``M_(4)^(+/-)`` (beta = 1/8)."""
    if abs(mach) >= 1.0:
        return 0.5 * (mach + sign * abs(mach))
    m2 = sign * 0.25 * (mach + sign) ** 2
    m2_other = -sign * 0.25 * (mach - sign) ** 2
    return m2 * (1.0 - sign * 16.0 * 0.125 * m2_other)


@kernel
def _p5(mach, sign, alpha):  # pragma: no cover - compiled
    """Liou's 5th-degree pressure split ``P_(5)^(+/-)``."""
    if abs(mach) >= 1.0:
        return 0.5 * (mach + sign * abs(mach)) / mach
    m2 = sign * 0.25 * (mach + sign) ** 2
    m2_other = -sign * 0.25 * (mach - sign) ** 2
    return m2 * ((sign * 2.0 - mach) - sign * 16.0 * alpha * mach * m2_other)


@kernel
def ausm_up_flux(qL, qR, nx, ny, gamma, mach_cutoff, out):  # pragma: no cover - compiled
    """AUSM+-up; ``mach_cutoff``: the free-stream Mach number of its low-speed scaling."""
    rL, uL, vL, pL = qL[0], qL[1], qL[2], qL[3]
    rR, uR, vR, pR = qR[0], qR[1], qR[2], qR[3]
    HL = gamma / (gamma - 1.0) * pL / rL + 0.5 * (uL * uL + vL * vL)
    HR = gamma / (gamma - 1.0) * pR / rR + 0.5 * (uR * uR + vR * vR)
    vnL = uL * nx + vL * ny
    vnR = uR * nx + vR * ny
    # Interface speed of sound from the critical speed of sound (Liou 2006, eq. 30).
    starL = np.sqrt(2.0 * (gamma - 1.0) / (gamma + 1.0) * HL)
    starR = np.sqrt(2.0 * (gamma - 1.0) / (gamma + 1.0) * HR)
    aL = starL * starL / max(starL, vnL)
    aR = starR * starR / max(starR, -vnR)
    a = min(aL, aR)
    machL, machR = vnL / a, vnR / a
    mean2 = 0.5 * (vnL * vnL + vnR * vnR) / (a * a)
    mo2 = min(1.0, max(mean2, mach_cutoff * mach_cutoff))
    mo = np.sqrt(mo2)
    fa = mo * (2.0 - mo)
    alpha = 3.0 / 16.0 * (-4.0 + 5.0 * fa * fa)
    rho_half = 0.5 * (rL + rR)
    mach = (
        _m4(machL, 1.0)
        + _m4(machR, -1.0)
        - 0.25 / fa * max(1.0 - mean2, 0.0) * (pR - pL) / (rho_half * a * a)
    )
    plus, minus = _p5(machL, 1.0, alpha), _p5(machR, -1.0, alpha)
    p = plus * pL + minus * pR - 0.75 * plus * minus * 2.0 * rho_half * fa * a * (vnR - vnL)
    if mach > 0.0:
        mass = a * mach * rL
        out[0] = mass
        out[1] = mass * uL + p * nx
        out[2] = mass * vL + p * ny
        out[3] = mass * HL
        for k in range(4, qL.shape[0]):
            out[k] = mass * qL[k]
    else:
        mass = a * mach * rR
        out[0] = mass
        out[1] = mass * uR + p * nx
        out[2] = mass * vR + p * ny
        out[3] = mass * HR
        for k in range(4, qL.shape[0]):
            out[k] = mass * qR[k]


@kernel
def numerical_flux(scheme, qL, qR, nx, ny, gamma, parameter, out):  # pragma: no cover
    """The flux of ``scheme`` (:data:`ROE` or :data:`AUSM_UP`); ``parameter`` is Roe's
    entropy fix or AUSM+-up's cut-off Mach number."""
    if scheme == ROE:
        roe_flux(qL, qR, nx, ny, gamma, parameter, out)
    else:
        ausm_up_flux(qL, qR, nx, ny, gamma, parameter, out)


def face_flux(scheme: str, qL, qR, normal, gamma: float = 1.4, parameter: float | None = None):
    """The flux of ``scheme`` ("roe" or "ausm+up") between two primitive states through a
    face of unit normal ``normal`` (for tests and checks; the solver calls the kernels)."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {sorted(SCHEMES)}, got {scheme!r}")
    if parameter is None:
        parameter = 0.1 if scheme == "roe" else 0.3
    qL, qR = np.asarray(qL, float), np.asarray(qR, float)
    out = np.empty_like(qL)
    numerical_flux(SCHEMES[scheme], qL, qR, normal[0], normal[1], gamma, parameter, out)
    return out


def euler_flux(q, normal, gamma: float = 1.4) -> np.ndarray:
    """The physical flux ``F(q) . n`` of primitive ``q``."""
    q = np.asarray(q, float)
    out = np.empty_like(q)
    physical_flux(q, normal[0], normal[1], gamma, out)
    return out
