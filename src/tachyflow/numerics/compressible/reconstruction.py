"""MUSCL reconstruction of primitive variables to the faces, along grid lines.

At the face between cells ``k-1`` and ``k`` the left state is
``q[k-1] + 0.5 * slope(q[k-1] - q[k-2], q[k] - q[k-1])`` and the right state
``q[k] - 0.5 * slope(q[k] - q[k-1], q[k+1] - q[k])`` with a limited slope:

- ``none``: the unlimited central slope (Fromm's scheme, kappa = 0), for smooth flows;
- ``van-albada``: G. D. van Albada, B. van Leer, W. W. Roberts (1982),
  ``(a (b^2 + e) + b (a^2 + e)) / (a^2 + b^2 + 2 e)`` with ``e = 1e-6``: differences below
  about 1e-3 (of variables of order one in these units) are left unlimited, so that clipping
  smooth extrema cannot stall a steady iteration, while shocks (differences of order 0.1)
  are limited;
- ``minmod``: the smaller slope when both have one sign, else 0.

A face whose reconstructed density or pressure is not positive falls back to the cell
values (first order) there. The Spalart–Allmaras variable is not reconstructed: its
convection is first-order upwind, as is usual for the model. With ``e = 1e-6`` the van
Albada slope of a field of order 1e-4 would be the unlimited central one, whose
overshoots at the edges of boundary layers and wakes make negative values.
"""

from __future__ import annotations

from tachyflow.numerics.compiled import kernel

NONE = 0
VAN_ALBADA = 1
MINMOD = 2
FIRST_ORDER = 3
LIMITERS = {"none": NONE, "van-albada": VAN_ALBADA, "minmod": MINMOD, "first-order": FIRST_ORDER}

_EPSILON = 1e-6


@kernel
def limited_slope(behind, ahead, limiter):  # pragma: no cover - compiled
    """The slope of a cell from its one-sided differences ``behind`` and ``ahead``."""
    if limiter == VAN_ALBADA:
        return (behind * (ahead * ahead + _EPSILON) + ahead * (behind * behind + _EPSILON)) / (
            behind * behind + ahead * ahead + 2.0 * _EPSILON
        )
    if limiter == MINMOD:
        if behind * ahead <= 0.0:
            return 0.0
        return behind if abs(behind) < abs(ahead) else ahead
    if limiter == NONE:
        return 0.5 * (behind + ahead)
    return 0.0


@kernel
def face_states(q0, q1, q2, q3, limiter, left, right):  # pragma: no cover - compiled
    """Left and right states at the face between ``q1`` and ``q2`` (four cells in a row,
    1D arrays of primitives) into ``left`` and ``right``. Variables after the four of the
    mean flow (the turbulence model's) are carried first order."""
    nvar = q0.shape[0]
    for k in range(4, nvar):
        left[k] = q1[k]
        right[k] = q2[k]
    for k in range(min(nvar, 4)):
        left[k] = q1[k] + 0.5 * limited_slope(q1[k] - q0[k], q2[k] - q1[k], limiter)
        right[k] = q2[k] - 0.5 * limited_slope(q2[k] - q1[k], q3[k] - q2[k], limiter)
    if left[0] <= 0.0 or left[3] <= 0.0 or right[0] <= 0.0 or right[3] <= 0.0:
        for k in range(nvar):
            left[k] = q1[k]
            right[k] = q2[k]
