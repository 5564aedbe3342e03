"""Ffowcs Williams–Hawkings kernels: Farassat's formulation 1A, source-time-dominant.

For each source time ``tau[k]``, panel ``i`` and observer ``j`` the retarded integrands of
the thickness and loading terms (Farassat 2007, NASA TM-2007-214853, with the permeable
generalisation of Di Francescantonio 1997 / Brentner & Farassat 1998) are evaluated at
the panel centre, together with the time ``t = tau[k] + r / c0`` at which they reach the
observer. A panel's signal is thus known at irregular observer times; it is linearly
interpolated onto the uniform observer grid between consecutive source steps. Summing
the interpolated panel signals is the surface integral. Interpolating (rather than
splitting each value between the two neighbouring samples) keeps the weights right when
the panel moves: arrivals are then spaced ``(1 - M_r) dtau`` apart, and splatting would
scale the signal by ``1 / (1 - M_r)``.

The interpolation carries the last arrival of each (panel, observer) pair in state
arrays, so steps can be fed in any number of chunks. No MPI here: each rank integrates
its own panels and the caller sums the signals.
"""

from __future__ import annotations

import numba
import numpy as np


def source_derivative(values: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Derivative along the source time (axis 0), second order everywhere.

    Central differences inside and one-sided second-order differences at the two ends,
    valid on non-uniform steps.

    Parameters
    ----------
    values : numpy.ndarray
        Samples, source time along axis 0 (at least three steps).
    times : numpy.ndarray
        Strictly increasing source times, shape ``(values.shape[0],)``.

    Returns
    -------
    numpy.ndarray
        ``d values / d tau``, same shape as ``values``.
    """
    return np.gradient(values, times, axis=0, edge_order=2)


@numba.njit(cache=True)
def accumulate_retarded(  # pragma: no cover
    tau,
    positions,
    areas,
    normal_flux,
    normal_flux_rate,
    load,
    load_rate,
    mach,
    mach_rate,
    observers,
    c0,
    rho0,
    min_distance,
    grid_start,
    grid_step,
    last_arrival,
    last_thickness,
    last_loading,
    has_last,
    thickness,
    loading,
    bad,
):
    """Add the panels' interpolated formulation-1A signals to the observer grid.

    Parameters
    ----------
    tau : numpy.ndarray
        Source times of this chunk, shape ``(nt,)``, continuing the previous chunk.
    positions, load, load_rate, mach, mach_rate : numpy.ndarray
        Panel centres ``y``, loading vector ``L``, its source-time derivative, ``v_s / c0``
        and its derivative; shape ``(nt, np, 3)``.
    areas : numpy.ndarray
        Panel areas, shape ``(np,)``.
    normal_flux, normal_flux_rate : numpy.ndarray
        ``U_n`` and ``d U_n / d tau`` (which is ``U̇_n + U_ṅ``), shape ``(nt, np)``.
    observers : numpy.ndarray
        Observer positions, shape ``(m, 3)``.
    c0, rho0 : float
        Ambient sound speed and density.
    min_distance : numpy.ndarray
        Per panel, the smallest allowed source–observer distance, shape ``(np,)``.
    grid_start, grid_step : float
        Uniform observer grid ``t_q = grid_start + q * grid_step``.
    last_arrival, last_thickness, last_loading : numpy.ndarray
        Per (panel, observer), the previous step's arrival time and integrands (already
        multiplied by the area), shape ``(np, m)``; updated in place.
    has_last : numpy.ndarray
        Boolean ``(np, m)``: whether the state holds a previous step; updated in place.
    thickness, loading : numpy.ndarray
        Observer signals ``p'_T`` and ``p'_L``, shape ``(m, nq)``; added to in place.
    bad : numpy.ndarray
        Integer ``(3,)``; set to ``(k, i, j)`` and the loop stops when an observer is
        closer than ``min_distance`` to a panel centre (left untouched otherwise).
    """
    nt, npanel, _ = positions.shape
    nobs = observers.shape[0]
    nq = thickness.shape[1]
    inv4pi = 1.0 / (4.0 * np.pi)
    # Reciprocals once: divisions were the kernel's bottleneck (bench fwh: 1.25x faster).
    inv_c0 = 1.0 / c0
    inv_step = 1.0 / grid_step
    for k in range(nt):
        for i in range(npanel):
            m0, m1, m2 = mach[k, i, 0], mach[k, i, 1], mach[k, i, 2]
            m_sq = m0 * m0 + m1 * m1 + m2 * m2
            l0, l1, l2 = load[k, i, 0], load[k, i, 1], load[k, i, 2]
            l_m = l0 * m0 + l1 * m1 + l2 * m2
            weight = areas[i] * inv4pi
            for j in range(nobs):
                d0 = observers[j, 0] - positions[k, i, 0]
                d1 = observers[j, 1] - positions[k, i, 1]
                d2 = observers[j, 2] - positions[k, i, 2]
                r = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
                if r < min_distance[i]:
                    bad[0], bad[1], bad[2] = k, i, j
                    return
                inv_r = 1.0 / r
                r0, r1, r2 = d0 * inv_r, d1 * inv_r, d2 * inv_r
                m_r = m0 * r0 + m1 * r1 + m2 * r2
                dm_r = mach_rate[k, i, 0] * r0 + mach_rate[k, i, 1] * r1 + mach_rate[k, i, 2] * r2
                l_r = l0 * r0 + l1 * r1 + l2 * r2
                dl_r = load_rate[k, i, 0] * r0 + load_rate[k, i, 1] * r1 + load_rate[k, i, 2] * r2
                doppler = 1.0 / (1.0 - m_r)
                doppler2 = doppler * doppler
                motion = r * dm_r + c0 * (m_r - m_sq)
                inv_r2 = inv_r * inv_r
                p_t = rho0 * normal_flux_rate[k, i] * doppler2 * inv_r + (
                    rho0 * normal_flux[k, i] * motion * doppler2 * doppler * inv_r2
                )
                p_l = (
                    dl_r * doppler2 * inv_c0 * inv_r
                    + (l_r - l_m) * doppler2 * inv_r2
                    + l_r * motion * doppler2 * doppler * inv_c0 * inv_r2
                )
                p_t *= weight
                p_l *= weight
                arrival = tau[k] + r * inv_c0
                if has_last[i, j]:
                    t_a = last_arrival[i, j]
                    inv_span = 1.0 / (arrival - t_a)
                    q_lo = max(int(np.ceil((t_a - grid_start) * inv_step)), 0)
                    q_hi = min(int(np.ceil((arrival - grid_start) * inv_step)), nq)
                    for q in range(q_lo, q_hi):
                        s = (grid_start + q * grid_step - t_a) * inv_span
                        thickness[j, q] += last_thickness[i, j] + s * (p_t - last_thickness[i, j])
                        loading[j, q] += last_loading[i, j] + s * (p_l - last_loading[i, j])
                last_arrival[i, j] = arrival
                last_thickness[i, j] = p_t
                last_loading[i, j] = p_l
                has_last[i, j] = True
