"""Ghost-cell boundary conditions on the sides of a block (numpy; O(boundary) work).

A side is ``"i_low"``, ``"i_high"``, ``"j_low"`` or ``"j_high"``; a condition acts on the
cells ``start:stop`` along it (padded indices; default: the owned ones). Every condition
fills both ghost layers; layer ``k`` outside mirrors layer ``k`` inside.

- :func:`wall`: adiabatic no-slip wall: density and energy mirrored, momentum and
  ``rho nu_tilde`` reversed (zero on the wall face; the wall-face temperature gradient is
  zero).
- :func:`slip_wall`: symmetry plane or inviscid wall: the normal momentum reversed.
- :func:`far_field`: characteristic condition with the Riemann invariants
  ``V_n +- 2c/(gamma-1)`` normal to the face: outgoing from inside, incoming from the
  exterior state, entropy and tangential velocity from the upwind side.
- :func:`outflow`: the ends of H- and C-grids: exterior pressure, or zero gradient when
  supersonic, where the flow leaves; :func:`far_field` where it enters.
- :func:`point_vortex_state`: the exterior state of a far field corrected by the
  compressible point vortex of the lift (J. L. Thomas, M. D. Salas, AIAA J. 24, 1986).
"""

from __future__ import annotations

import numpy as np

from tachyflow.numerics.compressible.metrics import BlockMetrics

SIDES = ("i_low", "i_high", "j_low", "j_high")


def side_view(array: np.ndarray, side: str) -> np.ndarray:
    """A view of a padded cell array ``(..., NI, NJ)`` whose last axis runs from the side
    inwards and whose second-last runs along it."""
    if side == "j_low":
        return array
    if side == "j_high":
        return array[..., ::-1]
    if side == "i_low":
        return array.swapaxes(-1, -2)
    if side == "i_high":
        return array[..., ::-1, :].swapaxes(-1, -2)
    raise ValueError(f"side must be one of {SIDES}, got {side!r}")


def outward_normals(metrics: BlockMetrics, side: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit outward normals ``nx, ny`` and lengths of the boundary faces along ``side``
    (one per cell along it, padded)."""
    g = metrics.ghosts
    if side == "j_low":
        sx, sy = -metrics.sxj[:, g], -metrics.syj[:, g]
    elif side == "j_high":
        sx, sy = metrics.sxj[:, -g - 1], metrics.syj[:, -g - 1]
    elif side == "i_low":
        sx, sy = -metrics.sxi[g, :], -metrics.syi[g, :]
    elif side == "i_high":
        sx, sy = metrics.sxi[-g - 1, :], metrics.syi[-g - 1, :]
    else:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    length = np.hypot(sx, sy)
    return sx / length, sy / length, length


def face_midpoints(metrics: BlockMetrics, side: str) -> tuple[np.ndarray, np.ndarray]:
    """Midpoints of the boundary faces along ``side`` (padded)."""
    g = metrics.ghosts
    x = side_view(metrics.x, side)[..., g]
    y = side_view(metrics.y, side)[..., g]
    return 0.5 * (x[:-1] + x[1:]), 0.5 * (y[:-1] + y[1:])


def _range(view: np.ndarray, g: int, start, stop) -> slice:
    return slice(g if start is None else start, view.shape[-2] - g if stop is None else stop)


def wall(U, side: str, g: int = 2, start=None, stop=None) -> None:
    """Adiabatic no-slip wall on ``side``."""
    view = side_view(U, side)
    along = _range(view, g, start, stop)
    for k in range(g):
        inside, ghost = view[:, along, g + k], view[:, along, g - 1 - k]
        ghost[...] = inside
        ghost[1:3] = -inside[1:3]
        if U.shape[0] > 4:
            ghost[4] = -inside[4]


def slip_wall(U, metrics: BlockMetrics, side: str, start=None, stop=None) -> None:
    """Symmetry plane / slip wall on ``side``."""
    g = metrics.ghosts
    view = side_view(U, side)
    along = _range(view, g, start, stop)
    nx, ny, _ = outward_normals(metrics, side)
    nx, ny = nx[along], ny[along]
    for k in range(g):
        inside, ghost = view[:, along, g + k], view[:, along, g - 1 - k]
        ghost[...] = inside
        normal = inside[1] * nx + inside[2] * ny
        ghost[1] = inside[1] - 2.0 * normal * nx
        ghost[2] = inside[2] - 2.0 * normal * ny


def far_field(U, metrics: BlockMetrics, side: str, exterior, gamma: float = 1.4,
              start=None, stop=None) -> None:
    """Characteristic far field on ``side``; ``exterior``: primitive state(s) outside,
    ``(nvar,)`` or ``(nvar, cells along)`` for the cells ``start:stop``."""
    g = metrics.ghosts
    view = side_view(U, side)
    along = _range(view, g, start, stop)
    nx, ny, _ = outward_normals(metrics, side)
    nx, ny = nx[along], ny[along]
    inside = view[:, along, g]
    rho_i = inside[0]
    u_i, v_i = inside[1] / rho_i, inside[2] / rho_i
    p_i = (gamma - 1.0) * (inside[3] - 0.5 * rho_i * (u_i**2 + v_i**2))
    exterior = np.asarray(exterior, float)
    if exterior.ndim == 1:
        exterior = exterior[:, None] * np.ones(u_i.shape)
    rho_e, u_e, v_e, p_e = exterior[:4]
    c_i, c_e = np.sqrt(gamma * p_i / rho_i), np.sqrt(gamma * p_e / rho_e)
    vn_i, vn_e = u_i * nx + v_i * ny, u_e * nx + v_e * ny
    outgoing = vn_i + 2.0 * c_i / (gamma - 1.0)
    incoming = vn_e - 2.0 * c_e / (gamma - 1.0)
    # Supersonic: every characteristic from one side.
    supersonic_in = vn_e <= -c_e
    supersonic_out = vn_i >= c_i
    outgoing = np.where(supersonic_in, vn_e + 2.0 * c_e / (gamma - 1.0), outgoing)
    incoming = np.where(supersonic_out, vn_i - 2.0 * c_i / (gamma - 1.0), incoming)
    vn = 0.5 * (outgoing + incoming)
    c = 0.25 * (gamma - 1.0) * (outgoing - incoming)
    inflow = vn < 0
    entropy = np.where(inflow, p_e / rho_e**gamma, p_i / rho_i**gamma)
    ut = np.where(inflow, u_e - vn_e * nx, u_i - vn_i * nx)
    vt = np.where(inflow, v_e - vn_e * ny, v_i - vn_i * ny)
    rho = (c**2 / (gamma * entropy)) ** (1.0 / (gamma - 1.0))
    p = rho * c**2 / gamma
    u, v = ut + vn * nx, vt + vn * ny
    state = np.empty_like(inside)
    state[0] = rho
    state[1] = rho * u
    state[2] = rho * v
    state[3] = p / (gamma - 1.0) + 0.5 * rho * (u**2 + v**2)
    if U.shape[0] > 4:
        state[4] = rho * np.where(inflow, exterior[4], inside[4] / rho_i)
    for k in range(g):
        view[:, along, g - 1 - k] = state


def outflow(U, metrics: BlockMetrics, side: str, exterior, gamma: float = 1.4, start=None,
            stop=None) -> None:
    """The ends of an H- or C-grid: where the adjacent cell flows out subsonically, the
    exterior pressure with density and velocity extrapolated (a boundary layer or wake
    leaves undisturbed); where it flows out supersonically, zero gradient; where it flows
    in, :func:`far_field`."""
    g = metrics.ghosts
    far_field(U, metrics, side, exterior, gamma, start, stop)
    view = side_view(U, side)
    along = _range(view, g, start, stop)
    nx, ny, _ = outward_normals(metrics, side)
    inside = view[:, along, g]
    rho = inside[0]
    u, v = inside[1] / rho, inside[2] / rho
    p = (gamma - 1.0) * (inside[3] - 0.5 * rho * (u**2 + v**2))
    vn = u * nx[along] + v * ny[along]
    leaving = vn >= 0
    supersonic = vn**2 >= gamma * p / rho
    p_exit = np.asarray(exterior, float)[3]
    p_ghost = np.where(supersonic, p, p_exit)
    state = inside.copy()
    state[3] = p_ghost / (gamma - 1.0) + 0.5 * rho * (u**2 + v**2)
    for k in range(g):
        ghost = view[:, along, g - 1 - k]
        ghost[:, leaving] = state[:, leaving]


def point_vortex_state(free_stream, x, y, lift_coefficient: float, chord: float = 1.0,
                       centre=(0.25, 0.0), nvar: int = 4) -> np.ndarray:
    """Primitive far-field states at points ``(x, y)`` with the compressible point vortex
    of circulation ``0.5 |V| chord CL`` at ``centre`` added (isentropic, same total
    enthalpy)."""
    gamma, mach = free_stream.gamma, free_stream.mach
    if mach >= 1:
        raise ValueError(f"the point-vortex correction needs a subsonic free stream, M = {mach}")
    alpha = np.radians(free_stream.alpha_degrees)
    u_inf, v_inf = free_stream.velocity
    dx, dy = np.asarray(x, float) - centre[0], np.asarray(y, float) - centre[1]
    r, theta = np.hypot(dx, dy), np.arctan2(dy, dx)
    circulation = 0.5 * mach * chord * lift_coefficient
    beta = np.sqrt(1.0 - mach**2)
    strength = circulation * beta / (2.0 * np.pi * r * (1.0 - (mach * np.sin(theta - alpha)) ** 2))
    u = u_inf + strength * np.sin(theta)
    v = v_inf - strength * np.cos(theta)
    c2 = 1.0 + 0.5 * (gamma - 1.0) * (mach**2 - u**2 - v**2)
    rho = c2 ** (1.0 / (gamma - 1.0))
    state = np.empty((nvar, *r.shape))
    state[0], state[1], state[2], state[3] = rho, u, v, rho * c2 / gamma
    if nvar > 4:
        state[4] = free_stream.primitive(nvar)[4]
    return state
