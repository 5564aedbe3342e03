"""Loads on a wall side of a block: pressure and friction per wall face, and their sums.

Per face: ``Cp = (p - p_inf) / q_inf`` with the wall pressure of the adjacent cell (the wall
condition mirrors it) and the wall shear ``tau = mu_w (V_t) / d_n`` from the tangential
velocity of the adjacent cell at its distance ``d_n`` from the wall (the no-slip velocity
profile is linear to second order there, and exactly so for Blasius' profile, whose
curvature vanishes at the wall). ``Cf`` is ``tau . t / q_inf`` with ``t`` the unit face
tangent oriented towards +x: positive where the wall shear points downstream.

The force on the body is ``sum ((p - p_inf) n - tau) S`` with ``n`` the fluid's outward
normal (into the body); coefficients use ``q_inf = M^2 / 2`` and the chord; the moment is
about ``moment_centre``, positive nose-up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tachyflow.numerics.compressible.boundaries import face_midpoints, outward_normals, side_view
from tachyflow.numerics.compressible.gas import sutherland


@dataclass(frozen=True)
class WallFaces:
    """Per-face wall data of one block side (the faces ``start:stop`` along it)."""

    x: np.ndarray
    y: np.ndarray
    cp: np.ndarray
    cf: np.ndarray
    pressure_force: np.ndarray  # (2, faces): (Fx, Fy) / q_inf
    friction_force: np.ndarray


def wall_faces(Q, metrics, side: str, free_stream, start=None, stop=None) -> WallFaces:
    """Pressure and friction on the wall faces ``start:stop`` along ``side``."""
    g = metrics.ghosts
    view = side_view(Q, side)
    along = slice(g if start is None else start, view.shape[-2] - g if stop is None else stop)
    inside = view[:, along, g]
    nx, ny, length = (a[along] for a in outward_normals(metrics, side))
    xf, yf = (a[along] for a in face_midpoints(metrics, side))
    xc, yc = side_view(metrics.xc, side)[along, g], side_view(metrics.yc, side)[along, g]
    q_inf = free_stream.dynamic_pressure
    cp = (inside[3] - free_stream.pressure) / q_inf
    # Distance of the cell centroid from the wall face, and its tangential velocity.
    normal_distance = np.abs((xc - xf) * nx + (yc - yf) * ny)
    u, v = inside[1], inside[2]
    normal_velocity = u * nx + v * ny
    ut, vt = u - normal_velocity * nx, v - normal_velocity * ny
    if free_stream.viscosity > 0:
        temperature = free_stream.gamma * inside[3] / inside[0]
        mu = sutherland(temperature, free_stream.viscosity, free_stream.sutherland_constant)
    else:
        mu = np.zeros_like(ut)
    tau_x, tau_y = mu * ut / normal_distance, mu * vt / normal_distance
    tx, ty = -ny, nx
    flip = np.where(tx < 0, -1.0, 1.0)
    tx, ty = tx * flip, ty * flip
    cf = (tau_x * tx + tau_y * ty) / q_inf
    pressure_force = np.array([cp * nx * length, cp * ny * length])
    friction_force = np.array([tau_x * length, tau_y * length]) / q_inf
    return WallFaces(xf, yf, cp, cf, pressure_force, friction_force)


def force_coefficients(faces: WallFaces, alpha_degrees: float, chord: float = 1.0,
                       moment_centre=(0.25, 0.0)) -> dict:
    """``CL, CD, CM`` and their pressure (``_p``) and friction (``_f``) parts of the faces
    (sums over a block; add the dictionaries of several blocks part by part)."""
    alpha = np.radians(alpha_degrees)
    result = {}
    for part, force in (("p", faces.pressure_force), ("f", faces.friction_force)):
        fx, fy = force
        moment = -((faces.x - moment_centre[0]) * fy - (faces.y - moment_centre[1]) * fx)
        fx, fy = float(fx.sum()), float(fy.sum())
        result[f"CD_{part}"] = (fx * np.cos(alpha) + fy * np.sin(alpha)) / chord
        result[f"CL_{part}"] = (-fx * np.sin(alpha) + fy * np.cos(alpha)) / chord
        result[f"CM_{part}"] = float(moment.sum()) / chord**2
    for name in ("CL", "CD", "CM"):
        result[name] = result[f"{name}_p"] + result[f"{name}_f"]
    return result
