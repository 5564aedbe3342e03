"""Ffowcs Williams–Hawkings kernels: Farassat's formulation 1A, source-time-dominant.

For each source time ``tau[k]``, panel ``i`` and observer ``j`` the retarded integrands of
the thickness and loading terms (Farassat 2007, NASA TM-2007-214853, with the permeable
generalisation of Di Francescantonio 1997 / Brentner & Farassat 1998) are evaluated at
the panel centre, together with the time ``t = tau[k] + r / c0`` at which they reach the
observer. A panel's signal is thus known at irregular observer times; it is interpolated
onto the uniform observer grid between consecutive arrivals, linearly
(:func:`accumulate_retarded`) or by the cubic through the two arrivals either side
(:func:`accumulate_retarded_cubic`). Summing the interpolated panel signals is the
surface integral. Interpolating (rather than splitting each value between the two
neighbouring samples) keeps the weights right when the panel moves: arrivals are then
spaced ``(1 - M_r) dtau`` apart, and splatting would scale the signal by ``1 / (1 - M_r)``.

The source-time derivatives are those of the polynomial through the nearest 3 or 5 steps
(:func:`source_derivative`, second or fourth order). The interpolation carries the last
arrivals of each (panel, observer) pair in state arrays, so steps can be fed in any number
of chunks. No MPI here: each rank integrates its own panels and the caller sums the
signals.
"""

from __future__ import annotations

import numpy as np

from tachyflow.numerics.compiled import kernel

DERIVATIVE_ORDERS = (2, 4)
# Arrivals of each (panel, observer) pair the cubic interpolation keeps between steps.
CUBIC_HISTORY = 3


def difference_weights(times: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Weights of the first derivative of the interpolating polynomial through ``order + 1``
    consecutive source times, at each time.

    Row ``k`` uses the times ``starts[k] .. starts[k] + order``: centred on ``k`` inside,
    the first or last ``order + 1`` times at the ends (one-sided, the same order). Valid on
    non-uniform steps.

    Parameters
    ----------
    times : numpy.ndarray
        Strictly increasing times, shape ``(nt,)`` with ``nt > order``.
    order : int
        2 or 4.

    Returns
    -------
    starts : numpy.ndarray
        First time of each row's stencil, shape ``(nt,)``.
    weights : numpy.ndarray
        ``d/dtau`` at ``times[k]`` is ``sum_a weights[k, a] f[starts[k] + a]``; shape
        ``(nt, order + 1)``.
    """
    if order not in DERIVATIVE_ORDERS:
        raise ValueError(f"order must be one of {DERIVATIVE_ORDERS}, got {order!r}")
    width, count = order + 1, times.size
    if count < width:
        raise ValueError(f"a derivative of order {order} needs {width} times, got {count}")
    rows = np.arange(count)
    starts = np.clip(rows - order // 2, 0, count - width)
    # Offsets of the stencil's times from the row's own: d[k, a] = t[starts + a] - t[k].
    offsets = times[starts[:, None] + np.arange(width)] - times[:, None]
    weights = np.empty((count, width))
    for a in range(width):
        # L_a(t) = prod_{b != a} (t - t_b) / prod_{b != a} (t_a - t_b), so L_a'(t_k) is the
        # sum over b != a of prod_{c != a, b} (t_k - t_c), over the same denominator.
        others = [b for b in range(width) if b != a]
        denominator = np.prod([offsets[:, a] - offsets[:, b] for b in others], axis=0)
        slope = sum(np.prod([-offsets[:, c] for c in others if c != b], axis=0) for b in others)
        weights[:, a] = slope / denominator
    return starts, weights


def source_derivative(values: np.ndarray, times: np.ndarray, order: int) -> np.ndarray:
    """Derivative along the source time (axis 0), of second or fourth order everywhere.

    Central differences inside and one-sided ones of the same order at the ends (see
    :func:`difference_weights`), valid on non-uniform steps.

    Parameters
    ----------
    values : numpy.ndarray
        Samples, source time along axis 0 (at least ``order + 1`` steps).
    times : numpy.ndarray
        Strictly increasing source times, shape ``(values.shape[0],)``.
    order : int
        2 (3-point stencils) or 4 (5-point stencils).

    Returns
    -------
    numpy.ndarray
        ``d values / d tau``, same shape as ``values``.
    """
    starts, weights = difference_weights(times, order)
    trailing = (slice(None),) + (None,) * (values.ndim - 1)
    rate = np.zeros(values.shape)
    for a in range(order + 1):
        rate += weights[:, a][trailing] * values[starts + a]
    return rate


@kernel
def _panel(
    k, i, normal_flux, normal_flux_rate, load, load_rate, mach, mach_rate, areas
):  # pragma: no cover
    """Panel ``i``'s data at step ``k`` as scalars: ``M``, ``Ṁ``, ``L``, ``L̇``, ``U_n``,
    ``U̇_n``, ``|M|²``, ``L·M`` and the area over 4π. Scalars, so that the per-observer
    :func:`_integrand` takes no arrays: array arguments cost reference counting on every
    call, which made the kernels five times slower."""
    m0, m1, m2 = mach[k, i, 0], mach[k, i, 1], mach[k, i, 2]
    l0, l1, l2 = load[k, i, 0], load[k, i, 1], load[k, i, 2]
    return (
        m0, m1, m2, mach_rate[k, i, 0], mach_rate[k, i, 1], mach_rate[k, i, 2],
        l0, l1, l2, load_rate[k, i, 0], load_rate[k, i, 1], load_rate[k, i, 2],
        normal_flux[k, i], normal_flux_rate[k, i], m0 * m0 + m1 * m1 + m2 * m2,
        l0 * m0 + l1 * m1 + l2 * m2, areas[i] * (0.25 / np.pi),
    )


@kernel
def _integrand(d0, d1, d2, panel, c0, inv_c0, rho0):  # pragma: no cover
    """Distance, thickness and loading integrands (times the area) of a panel (as
    :func:`_panel` gives it) for the observer at ``d`` from its centre."""
    m0, m1, m2, dm0, dm1, dm2, l0, l1, l2, dl0, dl1, dl2, u_n, du_n, m_sq, l_m, weight = panel
    r = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    inv_r = 1.0 / r
    r0, r1, r2 = d0 * inv_r, d1 * inv_r, d2 * inv_r
    m_r = m0 * r0 + m1 * r1 + m2 * r2
    dm_r = dm0 * r0 + dm1 * r1 + dm2 * r2
    l_r = l0 * r0 + l1 * r1 + l2 * r2
    dl_r = dl0 * r0 + dl1 * r1 + dl2 * r2
    doppler = 1.0 / (1.0 - m_r)
    doppler2 = doppler * doppler
    motion = r * dm_r + c0 * (m_r - m_sq)
    inv_r2 = inv_r * inv_r
    p_t = rho0 * du_n * doppler2 * inv_r + rho0 * u_n * motion * doppler2 * doppler * inv_r2
    p_l = (
        dl_r * doppler2 * inv_c0 * inv_r
        + (l_r - l_m) * doppler2 * inv_r2
        + l_r * motion * doppler2 * doppler * inv_c0 * inv_r2
    )
    return r, p_t * weight, p_l * weight


@kernel
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
    """Add the panels' linearly interpolated formulation-1A signals to the observer grid.

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
    # Reciprocals once: divisions were the kernel's bottleneck (bench fwh: 1.25x faster).
    inv_c0 = 1.0 / c0
    inv_step = 1.0 / grid_step
    for k in range(nt):
        for i in range(npanel):
            panel = _panel(k, i, normal_flux, normal_flux_rate, load, load_rate, mach,
                           mach_rate, areas)
            y0, y1, y2 = positions[k, i, 0], positions[k, i, 1], positions[k, i, 2]
            for j in range(nobs):
                d0, d1, d2 = observers[j, 0] - y0, observers[j, 1] - y1, observers[j, 2] - y2
                r, p_t, p_l = _integrand(d0, d1, d2, panel, c0, inv_c0, rho0)
                if r < min_distance[i]:
                    bad[0], bad[1], bad[2] = k, i, j
                    return
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


@kernel
def _add_polynomial(  # pragma: no cover
    thickness, loading, j, nodes, thickness_values, loading_values, lower, cubic, grid_start,
    grid_step,
):
    """Add to observer ``j``'s samples in ``[nodes[lower], nodes[lower + 1])`` the
    polynomials through the values at the four ``nodes`` (``cubic``) or at the first three
    (quadratic)."""
    x0, x1, x2, x3 = nodes
    inv_step = 1.0 / grid_step
    q_lo = max(int(np.ceil((nodes[lower] - grid_start) * inv_step)), 0)
    q_hi = min(int(np.ceil((nodes[lower + 1] - grid_start) * inv_step)), thickness.shape[1])
    if q_hi <= q_lo:
        return
    # Lagrange's basis l_a(t) = s_a prod_{b != a} (t - x_b); the quadratic leaves x3 out
    # (its factor is 1, its basis 0).
    f0, f1, f2 = (x0 - x3, x1 - x3, x2 - x3) if cubic else (1.0, 1.0, 1.0)
    s0 = 1.0 / ((x0 - x1) * (x0 - x2) * f0)
    s1 = 1.0 / ((x1 - x0) * (x1 - x2) * f1)
    s2 = 1.0 / ((x2 - x0) * (x2 - x1) * f2)
    s3 = 1.0 / ((x3 - x0) * (x3 - x1) * (x3 - x2)) if cubic else 0.0
    for q in range(q_lo, q_hi):
        t = grid_start + q * grid_step
        e0, e1, e2 = t - x0, t - x1, t - x2
        e3 = t - x3 if cubic else 1.0
        w0, w1, w2, w3 = s0 * e1 * e2 * e3, s1 * e0 * e2 * e3, s2 * e0 * e1 * e3, s3 * e0 * e1 * e2
        thickness[j, q] += (
            w0 * thickness_values[0] + w1 * thickness_values[1]
            + w2 * thickness_values[2] + w3 * thickness_values[3]
        )
        loading[j, q] += (
            w0 * loading_values[0] + w1 * loading_values[1]
            + w2 * loading_values[2] + w3 * loading_values[3]
        )


@kernel
def accumulate_retarded_cubic(  # pragma: no cover
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
    past_arrival,
    past_thickness,
    past_loading,
    arrivals,
    thickness,
    loading,
    bad,
):
    """Add the panels' formulation-1A signals to the observer grid, interpolated by cubics.

    Between a pair's arrivals ``t_n`` and ``t_{n+1}`` the signal is the cubic through the
    arrivals ``n-1 .. n+2`` (fourth order; arrivals are uneven on a moving panel), added
    once ``t_{n+2}`` has come; the first interval takes the quadratic through the first
    three arrivals, and :func:`finish_retarded_cubic` the last one likewise.

    Parameters
    ----------
    tau, positions, areas, normal_flux, normal_flux_rate, load, load_rate, mach, mach_rate,
    observers, c0, rho0, min_distance, grid_start, grid_step, thickness, loading, bad
        As for :func:`accumulate_retarded`.
    past_arrival, past_thickness, past_loading : numpy.ndarray
        Per (panel, observer), the last three arrival times and integrands (times the
        area), oldest first, shape ``(np, m, 3)``; updated in place.
    arrivals : numpy.ndarray
        Integer ``(np, m)``: how many arrivals the pair has had; updated in place.
    """
    nt, npanel, _ = positions.shape
    nobs = observers.shape[0]
    inv_c0 = 1.0 / c0
    past_t, past_p, past_l = past_arrival, past_thickness, past_loading
    for k in range(nt):
        for i in range(npanel):
            panel = _panel(k, i, normal_flux, normal_flux_rate, load, load_rate, mach,
                           mach_rate, areas)
            y0, y1, y2 = positions[k, i, 0], positions[k, i, 1], positions[k, i, 2]
            for j in range(nobs):
                d0, d1, d2 = observers[j, 0] - y0, observers[j, 1] - y1, observers[j, 2] - y2
                r, p_t, p_l = _integrand(d0, d1, d2, panel, c0, inv_c0, rho0)
                if r < min_distance[i]:
                    bad[0], bad[1], bad[2] = k, i, j
                    return
                arrival = tau[k] + r * inv_c0
                t0, t1, t2 = past_t[i, j, 0], past_t[i, j, 1], past_t[i, j, 2]
                a0, a1, a2 = past_p[i, j, 0], past_p[i, j, 1], past_p[i, j, 2]
                b0, b1, b2 = past_l[i, j, 0], past_l[i, j, 1], past_l[i, j, 2]
                before = arrivals[i, j]
                # The interval from the last but one arrival to the last: the cubic through
                # those either side, or, from the first arrival, the quadratic through three.
                if before >= 3:
                    _add_polynomial(thickness, loading, j, (t0, t1, t2, arrival),
                                    (a0, a1, a2, p_t), (b0, b1, b2, p_l), 1, True, grid_start,
                                    grid_step)
                elif before == 2:
                    _add_polynomial(thickness, loading, j, (t1, t2, arrival, 0.0),
                                    (a1, a2, p_t, 0.0), (b1, b2, p_l, 0.0), 0, False, grid_start,
                                    grid_step)
                past_t[i, j, 0], past_t[i, j, 1], past_t[i, j, 2] = t1, t2, arrival
                past_p[i, j, 0], past_p[i, j, 1], past_p[i, j, 2] = a1, a2, p_t
                past_l[i, j, 0], past_l[i, j, 1], past_l[i, j, 2] = b1, b2, p_l
                arrivals[i, j] = before + 1


@kernel
def finish_retarded_cubic(  # pragma: no cover
    past_arrival, past_thickness, past_loading, arrivals, grid_start, grid_step, thickness,
    loading,
):
    """Add each pair's last interval, the quadratic through its last three arrivals (pairs
    with fewer than three arrivals add nothing); arguments as for
    :func:`accumulate_retarded_cubic`."""
    npanel, nobs = arrivals.shape
    past_t, past_p, past_l = past_arrival, past_thickness, past_loading
    for i in range(npanel):
        for j in range(nobs):
            if arrivals[i, j] >= 3:
                nodes = (past_t[i, j, 0], past_t[i, j, 1], past_t[i, j, 2], 0.0)
                thickness_values = (past_p[i, j, 0], past_p[i, j, 1], past_p[i, j, 2], 0.0)
                loading_values = (past_l[i, j, 0], past_l[i, j, 1], past_l[i, j, 2], 0.0)
                _add_polynomial(thickness, loading, j, nodes, thickness_values, loading_values,
                                1, False, grid_start, grid_step)
