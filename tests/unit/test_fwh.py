"""Ffowcs Williams–Hawkings solver against analytic monopole, moving monopole and dipole."""

import itertools

import numpy as np
import pytest

from tachyflow.acoustics import FWHSolver
from tachyflow.numerics.fwh_kernels import source_derivative

C0, RHO0 = 340.0, 1.225


def sphere(radius, n_theta, n_phi, nodes="midpoint"):
    """Latitude–longitude panels of a sphere: centres, outward normals and areas.

    ``nodes="midpoint"``: bands between equally spaced latitudes, centres at the mid-angles
    and exact band areas, a second-order rule like the panels of a mesh. ``nodes="gauss"``:
    Gauss–Legendre nodes in ``cos(theta)`` with their weights as areas, spectrally accurate
    for smooth fields, so that a hundred or so panels leave a surface error far below the
    time-discretisation error that the harmonic cases measure.
    """
    phi_faces = np.linspace(0.0, 2.0 * np.pi, n_phi + 1)
    phi = 0.5 * (phi_faces[1:] + phi_faces[:-1])
    if nodes == "gauss":
        cosines, weights = np.polynomial.legendre.leggauss(n_theta)
        theta = np.arccos(cosines)
        band = radius**2 * weights * (2 * np.pi / n_phi)
    else:
        theta_faces = np.linspace(0.0, np.pi, n_theta + 1)
        theta = 0.5 * (theta_faces[1:] + theta_faces[:-1])
        heights = np.cos(theta_faces[:-1]) - np.cos(theta_faces[1:])
        band = radius**2 * heights * (2 * np.pi / n_phi)
    tt, pp = np.meshgrid(theta, phi, indexing="ij")
    normals = np.stack(
        [np.sin(tt) * np.cos(pp), np.sin(tt) * np.sin(pp), np.cos(tt)], axis=-1
    ).reshape(-1, 3)
    areas = np.repeat(band, n_phi)
    return radius * normals, normals, areas


def gaussian(t, centre, width, amplitude):
    return amplitude * np.exp(-(((t - centre) / width) ** 2))


WIDTH = 2.0 / C0  # a 2 m pulse, resolved by the ~0.14 m panels of the finer sphere


def STRENGTH(t):
    return gaussian(t, 6.0 * WIDTH, WIDTH, 1e-3)


def monopole_potential(x, t, speed, strength):
    """Potential of a point monopole moving at ``speed`` along x through the origin at t=0.

    ``phi = -Q(tau) / (4 pi r (1 - M_r))`` at the emission time ``tau``; written with
    analytic operations only, so a complex step differentiates it exactly. Returns the
    potential and the emission time.
    """
    d = x - np.stack([speed * t, 0.0 * t, 0.0 * t], axis=-1)
    d2 = np.sum(d * d, axis=-1)
    lag = (speed * d[..., 0] + np.sqrt(speed**2 * d[..., 0] ** 2 + (C0**2 - speed**2) * d2)) / (
        C0**2 - speed**2
    )
    tau = t - lag
    r = C0 * lag
    mach_r = (speed / C0) * (d[..., 0] + speed * lag) / r
    return -strength(tau) / (4.0 * np.pi * r * (1.0 - mach_r)), tau


def monopole_field(x, t, speed, strength, step=1e-20):
    """Linear acoustic pressure, velocity and emission time of the moving monopole."""
    x = np.asarray(x, dtype=complex)
    t = np.asarray(t, dtype=complex)
    phi_t, tau = monopole_potential(x, t + 1j * step, speed, strength)
    pressure = -RHO0 * phi_t.imag / step
    velocity = np.stack(
        [
            monopole_potential(x + 1j * step * np.eye(3)[d], t, speed, strength)[0].imag / step
            for d in range(3)
        ],
        axis=-1,
    )
    return pressure, velocity, tau.real


def uniform_path(speed):
    """Centre and velocity of a sphere moving at ``speed`` along x through the origin at 0."""

    def path(tau):
        zero = 0.0 * tau
        return np.stack([speed * tau, zero, zero], axis=-1), np.stack(
            [speed + zero, zero, zero], axis=-1
        )

    return path


# The two schemes: 3-step derivatives with linear interpolation between arrivals, and
# 5-step derivatives with cubic interpolation (the default).
SECOND_ORDER = {"time_order": 2, "interpolation": "linear"}
FOURTH_ORDER = {"time_order": 4, "interpolation": "cubic"}
SCHEMES = {2: SECOND_ORDER, 4: FOURTH_ORDER}


def carried_sphere_case(
    field, path, times, observers, radius, n_theta, n_phi, nodes="midpoint", scheme=FOURTH_ORDER
):
    """FW-H signals of a permeable sphere carried along ``path`` around a point source.

    ``field(x, t)`` gives the exact p', u and the source's emission time; ``path(tau)`` the
    sphere's centre and velocity. The sphere translates without turning, so the normals
    are fixed and every panel moves with the centre. Returns the signals, the exact p' and
    where to compare: a panel is within ``radius`` of the source, so its emission time
    differs from the source's by at most ``radius / (c0 - |v|)``; samples whose panels all
    emit inside the record are complete.
    """
    offsets, normals, areas = sphere(radius, n_theta, n_phi, nodes)
    nt = times.size
    centre, velocity = path(times)
    positions = centre[:, None, :] + offsets[None]
    pressure, flow, _ = field(positions, times[:, None])
    reach = np.linalg.norm(observers, axis=1).max() + np.linalg.norm(centre, axis=1).max()
    observer_times = np.arange(times[0], times[-1] + (reach + radius) / C0, times[1] - times[0])
    solver = FWHSolver(observers, observer_times, c0=C0, rho0=RHO0, permeable=True, **scheme)
    signals = solver.solve(
        times,
        positions,
        np.broadcast_to(normals, (nt, *normals.shape)),
        areas,
        np.broadcast_to(velocity[:, None, :], positions.shape),
        pressure,
        density=RHO0 + pressure / C0**2,
        velocity=flow,
    )
    exact, _, emission = field(observers[:, None, :], observer_times[None, :])
    margin = radius / (C0 - np.linalg.norm(velocity, axis=-1).max())
    covered = (emission > times[0] + margin) & (emission < times[-1] - margin)
    return signals, exact, covered


PULSE_TIMES = np.arange(0.0, 12.0 * WIDTH, WIDTH / 40.0)


def moving_monopole_case(
    speed,
    observers,
    n_theta,
    n_phi,
    strength=STRENGTH,
    times=PULSE_TIMES,
    nodes="midpoint",
    scheme=FOURTH_ORDER,
):
    """The sphere of radius 1 carried with a monopole moving at ``speed`` along x."""

    def field(x, t):
        return monopole_field(x, t, speed, strength)

    return carried_sphere_case(
        field, uniform_path(speed), times, observers, 1.0, n_theta, n_phi, nodes, scheme
    )


def relative_l2(signal, exact, covered):
    """Per observer, the relative L2 error over the compared samples."""
    return [
        np.linalg.norm(s[c] - e[c]) / np.linalg.norm(e[c])
        for s, e, c in zip(signal, exact, covered, strict=True)
    ]


# Time-harmonic sources: wavenumber K (a 2.5 m wavelength) and its period.
K = 2.5
OMEGA = K * C0
PERIOD = 2.0 * np.pi / OMEGA


def harmonic_times(per_period, periods=6):
    """A record of ``periods`` periods, sampled ``per_period`` times per period."""
    return np.arange(periods * per_period + 1) * (PERIOD / per_period)


def harmonic_strength(tau):
    return 1e-3 * np.sin(OMEGA * tau)


def static(tau):
    """A fixed sphere about the origin."""
    return 0.0 * tau[..., None] + np.zeros(3), 0.0 * tau[..., None] + np.zeros(3)


def harmonic_field(x, t, amplitude, axis=None):
    """p', u and emission time of the potential ``phi = Re[A e^{i w t} F]``, closed form.

    ``F = e^{-ikr} / r`` is the monopole and ``F = axis . grad(e^{-ikr} / r)`` the dipole
    along the unit vector ``axis``; linear acoustics gives ``p' = -rho0 dphi/dt`` and
    ``u = grad phi``. With ``f = e^{-ikr} / r``: ``f' = -(ik + 1/r) f`` and
    ``f'' = (2/r^2 + 2ik/r - k^2) f``, so the dipole's ``grad F = f'' cos r_hat +
    f' / r (axis - cos r_hat)`` with ``cos = axis . r_hat``.
    """
    r = np.linalg.norm(x, axis=-1)
    r_hat = x / r[..., None]
    f = np.exp(-1j * K * r) / r
    f1 = -(1j * K + 1.0 / r) * f
    wave = amplitude * np.exp(1j * OMEGA * t)
    if axis is None:
        phi = wave * f
        grad = (wave * f1)[..., None] * r_hat
    else:
        f2 = (2.0 / r**2 + 2j * K / r - K**2) * f
        cos = r_hat @ axis
        phi = wave * f1 * cos
        grad = (wave * f2 * cos)[..., None] * r_hat + (wave * f1 / r)[..., None] * (
            axis - cos[..., None] * r_hat
        )
    return (-1j * OMEGA * RHO0 * phi).real, grad.real, t - r / C0


# Pulsating sphere of radius R0 whose surface moves at U0 cos(wt); kR0 = 0.5.
R0, U0 = 0.2, 1e-3


def pulsating_sphere_pressure(r, t):
    """The issue's closed form, written out independently of harmonic_field."""
    phase = K * (R0 - r + C0 * t)
    amplitude = RHO0 * C0 * K * U0 * R0**2 / (1.0 + (K * R0) ** 2)
    return amplitude * (K * R0 * np.cos(phase) - np.sin(phase)) / r


def pulsating_sphere_field(x, t):
    # u_r = A f'(r) e^{iwt} equals U0 e^{iwt} on r = R0 for this A.
    return harmonic_field(x, t, -U0 * R0**2 * np.exp(1j * K * R0) / (1.0 + 1j * K * R0))


DIPOLE_AXIS = np.array([1.0, 2.0, 2.0]) / 3.0


def dipole_field(x, t):
    return harmonic_field(x, t, U0 * R0**3, DIPOLE_AXIS)


def retarded_field(x, t, path, strength, step=1e-20):
    """p', u and emission time of a point monopole on any subsonic ``path``, by Newton.

    The emission time solves ``g(tau) = t - tau - |x - y(tau)| / c0 = 0``; ``g' = -(1 - M_r)``
    is negative, so the root is unique and Newton's ``tau += g / (1 - M_r)`` converges from
    ``t - |x - y(t)| / c0``. The potential ``phi = -Q(tau) / (4 pi r (1 - M_r))`` is then
    differentiated by complex steps in t and x, taken through the Newton iterations: they
    converge for the complex parts too, giving the implicit derivatives of tau.
    """
    x = np.asarray(x, dtype=complex)
    t = np.asarray(t, dtype=complex)
    shape = np.broadcast_shapes(x.shape[:-1], t.shape)
    # Four problems at once: a complex step along x, y, z, then along t.
    shifts = [(1j * step * np.eye(3)[axis], 0.0) for axis in range(3)]
    shifts.append((np.zeros(3), 1j * step))
    xs = np.stack([np.broadcast_to(x + dx, (*shape, 3)) for dx, _ in shifts])
    ts = np.stack([np.broadcast_to(t + dt, shape) for _, dt in shifts])
    tau = ts - np.linalg.norm(xs - path(ts)[0], axis=-1) / C0
    for _ in range(50):
        y, v = path(tau)
        d = xs - y
        r = np.sqrt(np.sum(d * d, axis=-1))
        doppler = 1.0 - np.sum(d * v, axis=-1) / (C0 * r)
        change = (ts - tau - r / C0) / doppler
        tau = tau + change
        if np.abs(change.real).max() < 1e-13 * PERIOD and np.abs(change.imag).max() < 1e-13 * step:
            break
    else:
        raise AssertionError("Newton's method did not converge")
    y, v = path(tau)
    d = xs - y
    r = np.sqrt(np.sum(d * d, axis=-1))
    phi = -strength(tau) / (4.0 * np.pi * r * (1.0 - np.sum(d * v, axis=-1) / (C0 * r)))
    velocity = np.stack([phi[axis].imag / step for axis in range(3)], axis=-1)
    return -RHO0 * phi[3].imag / step, velocity, tau[3].real


def circle_path(radius, omega):
    """A point on a circle about the z axis (complex times allowed, for complex steps)."""

    def path(tau):
        angle = omega * tau
        zero = 0.0 * tau
        centre = radius * np.stack([np.cos(angle), np.sin(angle), zero], axis=-1)
        velocity = radius * omega * np.stack([-np.sin(angle), np.cos(angle), zero], axis=-1)
        return centre, velocity

    return path


def relative_errors(signal, exact, covered):
    return [
        np.abs(s[c] - e[c]).max() / np.abs(e[c]).max()
        for s, e, c in zip(signal, exact, covered, strict=True)
    ]


OBSERVERS = np.array(
    [[5.0, 0.0, 0.0], [0.0, 0.0, 20.0], [-12.0, 9.0, 0.0], [60.0, 60.0, 70.0], [0.0, -100.0, 0.0]]
)


def test_stationary_pulsating_monopole_matches_within_one_percent_and_converges():
    coarse, exact, covered = moving_monopole_case(0.0, OBSERVERS, 11, 22)
    fine, _, _ = moving_monopole_case(0.0, OBSERVERS, 22, 44)
    coarse_errors = relative_errors(coarse.pressure, exact, covered)
    fine_errors = relative_errors(fine.pressure, exact, covered)
    print("monopole errors", coarse_errors, fine_errors)
    assert max(fine_errors) < 0.01, fine_errors
    assert max(fine_errors) < 0.5 * max(coarse_errors), (coarse_errors, fine_errors)
    # A pulsating sphere radiates through both terms: neither alone gives the field.
    assert max(relative_errors(fine.thickness, exact, covered)) > 0.1


# The issue asks for a relative L2 error <= 1e-3 at 64 source steps per period. The
# second-order scheme's time error for a harmonic sampled every dtau is (w dtau)^2 / 4 (see
# time_error): 2.4e-3 at 64 steps, so it meets the 1e-3 from about 100 steps; the
# fourth-order scheme's, 7 (w dtau)^4 / 144, is 4.5e-6 at 64 steps. The harmonic cases run
# both at 64 and 128 steps. The second-order one is held to the predicted time error at 64
# (the surface, the physics and the motion terms adding less than 15 % to it) and to the
# issue's 1e-3 at 128; the fourth-order one to 1.15 times its time error plus the surface's
# quadrature error (below 1e-5 with these Gauss panels), far inside the 1e-3, at both.
ISSUE_BOUND = 1e-3
SURFACE_ERROR = 1e-5
SURFACE = dict(radius=0.5, n_theta=8, n_phi=16, nodes="gauss")
FIXED_OBSERVERS = np.array(
    [[1.5, 0.0, 0.0], [0.0, 0.0, 3.0], [-2.0, 1.5, 0.5], [20.0, 25.0, 30.0], [0.0, -60.0, 10.0]]
)


def time_error(per_period, order):
    """Leading relative error of a scheme for a harmonic sampled per_period times a period.

    Second order: the 3-point central derivative scales a harmonic by ``sin(w dtau) /
    (w dtau) ~ 1 - (w dtau)^2 / 6``; interpolating linearly between arrivals at a fraction s
    of a step scales it by ``1 - s (1 - s) (w dtau)^2 / 2``, ``1 - (w dtau)^2 / 12`` over the
    panels' spread of s. The far field consists of the differentiated terms alone, so it has
    both. Fourth order: the 5-point derivative scales it by ``(8 sin x - sin 2x) / 6x ~ 1 -
    x^4 / 30`` (``x = w dtau``), the cubic through the arrivals -1, 0, 1, 2 at s by ``1 -
    (s + 1) s (1 - s) (2 - s) x^4 / 24``, ``1 - 11 x^4 / 720`` over s; together
    ``7 x^4 / 144``.
    """
    x = 2.0 * np.pi / per_period
    return x**2 / 4.0 if order == 2 else 7.0 * x**4 / 144.0


def harmonic_errors(signals, exact, covered, per_period):
    """Relative L2 errors of p' per observer, each over at least three whole periods."""
    assert np.all(covered.sum(axis=1) >= 3 * per_period), covered.sum(axis=1)
    return relative_l2(signals.pressure, exact, covered)


def harmonic_bound(per_period, order):
    if order == 4:
        return 1.15 * time_error(per_period, 4) + SURFACE_ERROR
    return ISSUE_BOUND if per_period >= 128 else 1.15 * time_error(per_period, 2)


HARMONIC_CASES = [(n, order) for order in (2, 4) for n in (64, 128)]


def test_pulsating_sphere_field_is_the_issue_closed_form():
    # p from the potential is the issue's formula, and the derived u is radial and equal to
    # the wall's U0 cos(wt) on r = R0: the surface data are those of the pulsating sphere.
    rng = np.random.default_rng(7)
    directions = rng.normal(size=(20, 3))
    directions /= np.linalg.norm(directions, axis=1)[:, None]
    t = rng.uniform(0.0, 3.0 * PERIOD, 20)
    for r in (R0, 0.5, 7.0):
        pressure, velocity, _ = pulsating_sphere_field(r * directions, t)
        exact = pulsating_sphere_pressure(r, t)
        np.testing.assert_allclose(pressure, exact, rtol=0, atol=1e-12 * np.abs(exact).max())
        radial = np.einsum("ni,ni->n", velocity, directions)
        np.testing.assert_allclose(velocity, radial[:, None] * directions, rtol=0, atol=1e-12 * U0)
    on_wall = pulsating_sphere_field(R0 * directions, t)[1]
    np.testing.assert_allclose(
        np.einsum("ni,ni->n", on_wall, directions), U0 * np.cos(OMEGA * t), rtol=0, atol=1e-12 * U0
    )


@pytest.mark.parametrize(("per_period", "order"), HARMONIC_CASES)
def test_pulsating_sphere_through_permeable_sphere(per_period, order):
    times = harmonic_times(per_period)
    signals, exact, covered = carried_sphere_case(
        pulsating_sphere_field, static, times, FIXED_OBSERVERS, **SURFACE, scheme=SCHEMES[order]
    )
    # The reference is the issue's formula itself, not the potential that fed the surface.
    distances = np.linalg.norm(FIXED_OBSERVERS, axis=1)[:, None]
    exact = pulsating_sphere_pressure(distances, signals.times[None, :])
    errors = harmonic_errors(signals, exact, covered, per_period)
    print("pulsating sphere", per_period, order, errors, time_error(per_period, order))
    assert max(errors) <= harmonic_bound(per_period, order), errors


@pytest.mark.parametrize(("per_period", "order"), HARMONIC_CASES)
def test_harmonic_dipole_through_permeable_sphere(per_period, order):
    signals, exact, covered = carried_sphere_case(
        dipole_field, static, harmonic_times(per_period), FIXED_OBSERVERS, **SURFACE,
        scheme=SCHEMES[order],
    )
    errors = harmonic_errors(signals, exact, covered, per_period)
    print("dipole", per_period, order, errors, time_error(per_period, order))
    assert max(errors) <= harmonic_bound(per_period, order), errors
    # On a permeable surface both terms carry the field (u_n feeds the thickness term too):
    # the comparison tests their sum, neither alone is near.
    for part in (signals.thickness, signals.loading):
        assert min(relative_l2(part, exact, covered)) > 0.1


@pytest.mark.parametrize("field", [pulsating_sphere_field, dipole_field])
@pytest.mark.parametrize(("order", "least_ratio"), [(2, 3.5), (4, 12.0)])
def test_time_refinement_converges_at_the_scheme_order(field, order, least_ratio):
    # On a fixed surface whose quadrature error is negligible, halving the step divides the
    # error by 2^order (4 or 16); 3.5 and 12 leave room for the surface error and the spread
    # of interpolation phases.
    errors = []
    for per_period in (16, 32, 64):
        case = carried_sphere_case(
            field, static, harmonic_times(per_period), FIXED_OBSERVERS, **SURFACE,
            scheme=SCHEMES[order],
        )
        errors.append(max(harmonic_errors(*case, per_period)))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    print("refinement", order, errors, ratios, np.log2(ratios))
    assert np.all(ratios >= least_ratio), (errors, ratios)


@pytest.mark.parametrize(("per_period", "order"), HARMONIC_CASES)
def test_convected_harmonic_monopole_at_mach_03(per_period, order):
    # Ahead, behind, to the side, and near.
    observers = np.array([[60.0, 0, 0], [-60.0, 0, 0], [20.0, 30.0, 0], [5.0, -3.0, 4.0]])
    signals, exact, covered = moving_monopole_case(
        0.3 * C0, observers, 8, 16, harmonic_strength, harmonic_times(per_period), "gauss",
        SCHEMES[order],
    )
    errors = harmonic_errors(signals, exact, covered, per_period)
    print("convected monopole", per_period, order, errors, time_error(per_period, order))
    assert max(errors) <= harmonic_bound(per_period, order), errors
    # The motion matters: the field of the source at rest is nowhere near.
    static_field = monopole_field(
        observers[:, None, :], signals.times[None, :], 0.0, harmonic_strength
    )[0]
    assert min(relative_l2(static_field, exact, covered)) > 0.5


def test_newton_reference_reproduces_the_closed_form_convected_monopole():
    # The rotating case's reference solves the retarded-time equation numerically; on a
    # straight path it must give the closed-form field of monopole_field.
    x = np.array([[60.0, 0.0, 0.0], [-60.0, 0.0, 0.0], [20.0, 30.0, 0.0], [0.3, 0.2, -0.1]])
    t = np.linspace(0.0, 0.2, 7)
    for speed in (0.0, 0.3 * C0, 0.5 * C0):
        closed = monopole_field(x[:, None], t[None], speed, harmonic_strength)
        newton = retarded_field(x[:, None], t[None], uniform_path(speed), harmonic_strength)
        for a, b in zip(closed, newton, strict=True):
            np.testing.assert_allclose(b, a, rtol=0, atol=1e-12 * np.abs(a).max())


@pytest.mark.parametrize(("per_period", "order"), HARMONIC_CASES)
def test_rotating_monopole_matches_newton_retarded_time_reference(per_period, order):
    # A monopole on a circle of radius 1 at tip Mach 0.5; the permeable sphere around it is
    # carried along the circle without turning, its data the exact field of the moving source.
    path = circle_path(1.0, 0.5 * C0)

    def field(x, t):
        return retarded_field(x, t, path, harmonic_strength)

    observers = np.array(
        [[3.0, 0, 0], [0, -8.0, 0], [-20.0, 10.0, 0], [0, 0, 5.0], [10.0, 10.0, 10.0]]
    )
    signals, exact, covered = carried_sphere_case(
        field, path, harmonic_times(per_period), observers, 0.25, 8, 16, "gauss", SCHEMES[order]
    )
    errors = harmonic_errors(signals, exact, covered, per_period)
    print("rotating monopole", per_period, order, errors, time_error(per_period, order))
    assert max(errors) <= harmonic_bound(per_period, order), errors
    # The rotation matters: in the plane of the circle, the same source held at its centre is
    # far off (on the axis the distance is constant and only a delay and 1/r would differ).
    at_rest = monopole_field(
        observers[:, None, :], signals.times[None, :], 0.0, harmonic_strength
    )[0]
    assert min(relative_l2(at_rest[:3], exact[:3], covered[:3])) > 0.5


def test_impermeable_dipole_sphere_is_pure_loading_and_matches_compact_dipole():
    radius, width = 0.1, 3.0 / C0
    times = np.arange(0.0, 12.0 * width, width / 40.0)
    centres, normals, areas = sphere(radius, 22, 44)
    nt = times.size
    amplitude = gaussian(times, 6.0 * width, width, 50.0)
    pressure = 1e5 + amplitude[:, None] * normals[None, :, 0]
    observers = np.array([[2.0, 0.0, 0.0], [-6.0, 8.0, 0.0], [3.0, 3.0, -30.0]])
    distances = np.linalg.norm(observers, axis=1)
    observer_times = np.arange(0.0, 12.0 * width + distances.max() / C0, width / 40.0)
    solver = FWHSolver(observers, observer_times, c0=C0, rho0=RHO0, p0=1e5)
    signals = solver.solve(
        times,
        np.broadcast_to(centres, (nt, *centres.shape)),
        np.broadcast_to(normals, (nt, *normals.shape)),
        areas,
        np.zeros((nt, areas.size, 3)),
        pressure,
    )
    assert np.all(signals.thickness == 0.0)
    # Net force on the fluid, F_x = P(t) 4 pi a^2 / 3, radiating as a compact dipole.
    tau = observer_times[None, :] - distances[:, None] / C0
    force = gaussian(tau, 6.0 * width, width, 50.0) * 4.0 * np.pi * radius**2 / 3.0
    force_rate = -2.0 * (tau - 6.0 * width) / width**2 * force
    cosine = (observers[:, 0] / distances)[:, None]
    exact = cosine * (force_rate / (C0 * distances[:, None]) + force / distances[:, None] ** 2)
    exact /= 4.0 * np.pi
    covered = np.abs(tau - 6.0 * width) < 4.0 * width
    errors = relative_errors(signals.loading, exact, covered)
    print("dipole errors", errors)
    assert max(errors) < 0.01, errors


def ellipsoid(semi_axes, n_theta, n_phi):
    """Latitude–longitude panels of an ellipsoid: centres, outward normals, areas."""
    theta_faces = np.linspace(0.0, np.pi, n_theta + 1)
    phi_faces = np.linspace(0.0, 2.0 * np.pi, n_phi + 1)
    theta = 0.5 * (theta_faces[1:] + theta_faces[:-1])
    phi = 0.5 * (phi_faces[1:] + phi_faces[:-1])
    tt, pp = np.meshgrid(theta, phi, indexing="ij")
    a, b, c = semi_axes
    centres = np.stack([a * np.sin(tt) * np.cos(pp), b * np.sin(tt) * np.sin(pp), c * np.cos(tt)])
    d_theta = np.stack(
        [a * np.cos(tt) * np.cos(pp), b * np.cos(tt) * np.sin(pp), -c * np.sin(tt)], axis=-1
    )
    d_phi = np.stack([-a * np.sin(tt) * np.sin(pp), b * np.sin(tt) * np.cos(pp), 0 * tt], axis=-1)
    cross = np.cross(d_theta, d_phi)
    norm = np.linalg.norm(cross, axis=-1)
    areas = norm * (np.pi / n_theta) * (2.0 * np.pi / n_phi)
    return (
        np.moveaxis(centres, 0, -1).reshape(-1, 3),
        (cross / norm[..., None]).reshape(-1, 3),
        areas.reshape(-1),
    )


def test_rotating_body_is_silent_on_its_axis_but_not_off_it():
    # A rigid body spinning about z looks the same at every instant from the z axis, so
    # its thickness noise there is steady, hence zero; in the rotation plane it is not.
    omega = 0.3 * C0  # tip Mach 0.3 for the unit semi-axis
    period = 2.0 * np.pi / omega
    times = np.arange(0.0, 2.0 * period, period / 200.0)
    centres, normals, areas = ellipsoid((1.0, 0.5, 0.3), 24, 48)
    angle = omega * times
    rotation = np.zeros((times.size, 3, 3))
    rotation[:, 0, 0] = rotation[:, 1, 1] = np.cos(angle)
    rotation[:, 0, 1], rotation[:, 1, 0] = -np.sin(angle), np.sin(angle)
    rotation[:, 2, 2] = 1.0
    positions = np.einsum("tij,pj->tpi", rotation, centres)
    moving_normals = np.einsum("tij,pj->tpi", rotation, normals)
    velocity = np.cross(np.array([0.0, 0.0, omega]), positions)
    observers = np.array([[0.0, 0.0, 10.0], [0.0, 0.0, 0.0], [10.0, 0.0, 0.0]])
    observer_times = np.linspace(12.0 / C0, times[-1] + 8.0 / C0, 300)
    signals = FWHSolver(observers, observer_times, c0=C0, rho0=RHO0).solve(
        times, positions, moving_normals, areas, velocity, np.zeros(velocity.shape[:2])
    )
    assert np.all(np.isfinite(signals.thickness))
    assert np.all(signals.loading == 0.0)
    in_plane = np.abs(signals.thickness[2]).max()
    assert in_plane > 1e-3
    assert np.abs(signals.thickness[:2]).max() < 1e-2 * in_plane


def panel_data(nt=5, npanel=6):
    centres, normals, areas = sphere(1.0, 2, 3)
    times = np.arange(nt) * 1e-3
    return dict(
        times=times,
        positions=np.broadcast_to(centres, (nt, npanel, 3)),
        normals=np.broadcast_to(normals, (nt, npanel, 3)),
        areas=areas,
        surface_velocity=np.zeros((nt, npanel, 3)),
        pressure=np.zeros((nt, npanel)),
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"c0": 0.0}, "c0 must be a positive"),
        ({"c0": -340.0}, "c0 must be a positive"),
        ({"rho0": float("nan")}, "rho0 must be a positive"),
        ({"observers": np.zeros((3, 2))}, r"observers must have shape \(m, 3\)"),
        ({"observer_times": np.array([0.0, 1.0, 3.0])}, "uniformly spaced"),
        ({"time_order": 3}, r"time_order must be one of \(2, 4\), got 3"),
        ({"interpolation": "spline"}, r"interpolation must be one of .*'spline'"),
    ],
)
def test_bad_solver_parameters_are_named(kwargs, message):
    arguments = {"observers": np.ones((1, 3)) * 10, "observer_times": np.linspace(0, 1, 5)}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        FWHSolver(**arguments)


def test_permeable_flag_must_be_bool_and_time_order_an_int():
    with pytest.raises(TypeError, match="permeable must be a bool, got str"):
        FWHSolver(np.ones((1, 3)), np.linspace(0, 1, 5), permeable="yes")
    with pytest.raises(TypeError, match="time_order must be an int, got float"):
        FWHSolver(np.ones((1, 3)), np.linspace(0, 1, 5), time_order=4.0)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("pressure", np.zeros((5, 5)), r"pressure must have shape \(5, 6\), got \(5, 5\)"),
        ("positions", np.zeros((4, 6, 3)), r"positions must have shape \(5, 6, 3\)"),
        ("normals", np.ones((5, 6, 3)), "normals must be unit vectors"),
        ("areas", -np.ones(6), "areas must be positive"),
        ("times", np.array([0.0, 2.0, 1.0, 3.0, 4.0]), "times must be strictly increasing"),
        ("times", np.arange(4.0), r"at least 5 steps \(time_order 4\)"),
        ("surface_velocity", np.full((5, 6, 3), 400.0), "Mach number must be below 1"),
    ],
)
def test_bad_surface_data_are_named(field, value, message):
    data = panel_data()
    data[field] = value
    solver = FWHSolver(np.full((1, 3), 10.0), np.linspace(0.0, 0.1, 11))
    with pytest.raises(ValueError, match=message):
        solver.solve(**data)


def test_permeable_data_must_match_the_surface_kind():
    data = panel_data()
    impermeable = FWHSolver(np.full((1, 3), 10.0), np.linspace(0.0, 0.1, 11))
    with pytest.raises(ValueError, match="only used on a permeable surface"):
        impermeable.solve(**data, density=np.ones((5, 6)), velocity=np.zeros((5, 6, 3)))
    permeable = FWHSolver(np.full((1, 3), 10.0), np.linspace(0.0, 0.1, 11), permeable=True)
    with pytest.raises(ValueError, match="needs density and velocity"):
        permeable.solve(**data)


def test_observer_on_the_surface_is_rejected():
    data = panel_data()
    observer = data["positions"][0, 2] + 1e-9
    solver = FWHSolver(np.array([[10.0, 0.0, 0.0], observer]), np.linspace(0.0, 0.1, 11))
    with pytest.raises(ValueError, match=r"observer 1 at .* is on the surface"):
        solver.solve(**data)


@pytest.mark.parametrize("order", [2, 4])
@pytest.mark.parametrize("interpolation", ["linear", "cubic"])
def test_step_by_step_accumulation_equals_the_whole_record(order, interpolation):
    """A run feeds steps as they come: one at a time or in uneven chunks, the signals
    equal those of the whole record at once (same differences, same integration)."""
    rng = np.random.default_rng(3)
    positions0, normals0, areas = sphere(1.0, 6, 12)
    times = np.cumsum(rng.uniform(0.8, 1.2, 40)) * WIDTH / 20.0
    nt, npanel = times.size, areas.size
    angle = 40.0 * times  # a slowly rotating sphere, so positions and normals move
    rotation = np.zeros((nt, 3, 3))
    rotation[:, 0, 0] = rotation[:, 1, 1] = np.cos(angle)
    rotation[:, 0, 1], rotation[:, 1, 0] = -np.sin(angle), np.sin(angle)
    rotation[:, 2, 2] = 1.0
    positions = np.einsum("tij,pj->tpi", rotation, positions0)
    normals = np.einsum("tij,pj->tpi", rotation, normals0)
    surface_velocity = np.gradient(positions, times, axis=0)
    pressure = STRENGTH(times)[:, None] * (1.0 + normals[..., 2])
    observers = np.array([[8.0, 1.0, 0.5], [0.0, 0.0, 9.0]])
    observer_times = np.linspace(times[0] + 7.0 / C0, times[-1] + 8.0 / C0, 300)
    solver = FWHSolver(
        observers, observer_times, c0=C0, rho0=RHO0, time_order=order, interpolation=interpolation
    )
    whole = solver.solve(times, positions, normals, areas, surface_velocity, pressure)
    normal_flux = np.einsum("tpi,tpi->tp", surface_velocity, normals)
    load = pressure[..., None] * normals
    for bounds in ([*range(nt), nt], [0, 2, 3, 10, 11, 12, 30, nt], [0, 4, 5, 9, 36, nt]):
        accumulator = solver.accumulator(areas)
        for start, stop in itertools.pairwise(bounds):
            rows = slice(start, stop)
            accumulator.add(
                times[rows], positions[rows], surface_velocity[rows], normal_flux[rows], load[rows]
            )
        parts = accumulator.finish()
        assert np.abs(whole.pressure).max() > 0
        np.testing.assert_allclose(parts.thickness, whole.thickness, rtol=0, atol=1e-15 * npanel)
        np.testing.assert_allclose(parts.loading, whole.loading, rtol=0, atol=1e-15 * npanel)


@pytest.mark.parametrize("order", [2, 4])
def test_accumulator_needs_a_stencil_of_steps_and_increasing_times(order):
    positions, _, areas = sphere(1.0, 3, 6)
    solver = FWHSolver([[9.0, 0.0, 0.0]], [0.0, 1.0], c0=C0, rho0=RHO0, time_order=order)
    accumulator = solver.accumulator(areas)
    zeros = np.zeros((1, areas.size, 3))
    for step in range(order):
        accumulator.add([float(step)], positions[None], zeros, np.zeros((1, areas.size)), zeros)
    with pytest.raises(ValueError, match=f"at least {order + 1} source steps"):
        accumulator.finish()
    with pytest.raises(ValueError, match="strictly increasing"):
        accumulator.add([0.0], positions[None], zeros, np.zeros((1, areas.size)), zeros)
    with pytest.raises(ValueError, match="normal_flux must have shape"):
        accumulator.add([1.0], positions[None], zeros, np.zeros((1, 2)), zeros)


@pytest.mark.parametrize("order", [2, 4])
def test_source_derivative_is_exact_for_polynomials_of_its_order_on_uneven_steps(order):
    rng = np.random.default_rng(11)
    times = np.cumsum(rng.uniform(0.5, 1.5, 12))
    coefficients = rng.normal(size=(order + 1, 2))
    values = np.polynomial.polynomial.polyval(times, coefficients).T
    exact = np.polynomial.polynomial.polyval(
        times, np.polynomial.polynomial.polyder(coefficients)
    ).T
    rate = source_derivative(values, times, order)
    np.testing.assert_allclose(rate, exact, rtol=0, atol=1e-9 * np.abs(exact).max())
    # One degree more is not exact, at the ends nor inside.
    beyond = times ** (order + 1)
    error = source_derivative(beyond, times, order) - (order + 1) * times**order
    assert np.abs(error[[0, times.size // 2, -1]]).min() > 1e-6


@pytest.mark.parametrize("order", [2, 4])
def test_source_derivative_converges_at_its_order(order):
    errors = []
    for steps in (20, 40, 80):
        times = np.linspace(0.0, 1.0, steps + 1)
        error = source_derivative(np.sin(3.0 * times), times, order) - 3.0 * np.cos(3.0 * times)
        errors.append(np.abs(error).max())
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(rates > order - 0.2), rates
