"""The low-storage three-stage Runge–Kutta scheme of Spalart, Moser & Rogers (1991), as
in CaNS and the solvers of Kwon, Park & Choi: coefficients and the fused increment.

Substep ``k`` advances ``u`` by ``Δt (γ_k H_k + ρ_k H_{k-1})`` of the explicit terms and
``α_k Δt`` of the Crank–Nicolson terms, ``α_k = γ_k + ρ_k`` (Σ α_k = 1).
"""

from __future__ import annotations

from numba import prange

from tachyflow.numerics.compiled import kernel

RK3_GAMMA = (8.0 / 15.0, 5.0 / 12.0, 3.0 / 4.0)
RK3_RHO = (0.0, -17.0 / 60.0, -5.0 / 12.0)
# Where each substep ends, a fraction of the step: the cumulative sums of γ + ρ.
RK3_ENDS = (8.0 / 15.0, 2.0 / 3.0, 1.0)


@kernel(error_model="numpy", parallel=True)
def _rk3_increment(dt, gamma, explicit, rho, previous, alpha_dt, implicit):  # pragma: no cover
    flat_explicit, flat_previous = explicit.ravel(), previous.ravel()
    flat_implicit = implicit.ravel()
    for index in prange(flat_implicit.size):
        flat_implicit[index] = (
            dt * (gamma * flat_explicit[index] + rho * flat_previous[index])
            + alpha_dt * flat_implicit[index]
        )


def rk3_increment(dt, gamma, explicit, rho, previous, alpha_dt, implicit):
    """``Δt (γ explicit + ρ previous) + α Δt implicit`` of an RK3 substep in one pass, into
    ``implicit`` (C-contiguous arrays of one shape); returns it."""
    if not (explicit.flags.c_contiguous and previous.flags.c_contiguous
            and implicit.flags.c_contiguous):
        raise ValueError("rk3_increment needs C-contiguous arrays")
    if explicit.shape != implicit.shape or previous.shape != implicit.shape:
        raise ValueError(f"shapes differ: {explicit.shape}, {previous.shape}, {implicit.shape}")
    _rk3_increment(
        float(dt), float(gamma), explicit, float(rho), previous, float(alpha_dt), implicit
    )
    return implicit
