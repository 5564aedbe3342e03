"""Ffowcs Williams–Hawkings solver against analytic monopole, moving monopole and dipole."""

import itertools

import numpy as np
import pytest

from tachyflow.acoustics import FWHSolver

C0, RHO0 = 340.0, 1.225


def sphere(radius, n_theta, n_phi):
    """Latitude–longitude panels of a sphere: centres, outward normals and exact areas."""
    theta_faces = np.linspace(0.0, np.pi, n_theta + 1)
    phi_faces = np.linspace(0.0, 2.0 * np.pi, n_phi + 1)
    theta = 0.5 * (theta_faces[1:] + theta_faces[:-1])
    phi = 0.5 * (phi_faces[1:] + phi_faces[:-1])
    band = radius**2 * (np.cos(theta_faces[:-1]) - np.cos(theta_faces[1:])) * (2 * np.pi / n_phi)
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


def moving_monopole_case(speed, observers, n_theta, n_phi, radius=1.0):
    """FW-H signals of a permeable sphere carried with the monopole, and the exact p'."""
    width, centre, strength = WIDTH, 6.0 * WIDTH, STRENGTH
    times = np.arange(0.0, 12.0 * width, width / 40.0)
    offsets, normals, areas = sphere(radius, n_theta, n_phi)
    nt = times.size
    carried = np.stack([speed * times, 0.0 * times, 0.0 * times], axis=-1)
    positions = carried[:, None, :] + offsets[None]
    pressure, velocity, _ = monopole_field(positions, times[:, None], speed, strength)
    surface_velocity = np.zeros((nt, areas.size, 3))
    surface_velocity[..., 0] = speed
    distances = np.linalg.norm(observers, axis=1)
    observer_times = np.arange(
        distances.min() / (C0 + speed) - width,
        distances.max() / (C0 - speed) + 14 * width,
        width / 40.0,
    )
    solver = FWHSolver(observers, observer_times, c0=C0, rho0=RHO0, permeable=True)
    signals = solver.solve(
        times,
        positions,
        np.broadcast_to(normals, (nt, *normals.shape)),
        areas,
        surface_velocity,
        pressure,
        density=RHO0 + pressure / C0**2,
        velocity=velocity,
    )
    exact, _, emission = monopole_field(
        observers[:, None, :], observer_times[None, :], speed, strength
    )
    # Compare where every panel's retarded time lies inside the sampled source window.
    covered = np.abs(emission - centre) < 4.0 * width
    return signals, exact, covered


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


def test_monopole_moving_at_mach_03_matches_doppler_shifted_field():
    observers = np.array([[60.0, 0.0, 0.0], [-60.0, 0.0, 0.0], [20.0, 30.0, 0.0]])
    signals, exact, covered = moving_monopole_case(0.3 * C0, observers, 22, 44)
    errors = relative_errors(signals.pressure, exact, covered)
    print("moving monopole errors", errors)
    assert max(errors) < 0.02, errors
    # The motion matters: the stationary-source field misses ahead of the source.
    static = monopole_field(observers[:, None, :], signals.times[None, :], 0.0, STRENGTH)[0]
    assert np.abs(static[0]).max() < 0.5 * np.abs(exact[0]).max()


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


def panel_data(nt=4, npanel=6):
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
    ],
)
def test_bad_solver_parameters_are_named(kwargs, message):
    arguments = {"observers": np.ones((1, 3)) * 10, "observer_times": np.linspace(0, 1, 5)}
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        FWHSolver(**arguments)


def test_permeable_flag_must_be_bool():
    with pytest.raises(TypeError, match="permeable must be a bool, got str"):
        FWHSolver(np.ones((1, 3)), np.linspace(0, 1, 5), permeable="yes")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("pressure", np.zeros((4, 5)), r"pressure must have shape \(4, 6\), got \(4, 5\)"),
        ("positions", np.zeros((3, 6, 3)), r"positions must have shape \(4, 6, 3\)"),
        ("normals", np.ones((4, 6, 3)), "normals must be unit vectors"),
        ("areas", -np.ones(6), "areas must be positive"),
        ("times", np.array([0.0, 2.0, 1.0, 3.0]), "times must be strictly increasing"),
        ("surface_velocity", np.full((4, 6, 3), 400.0), "Mach number must be below 1"),
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
        impermeable.solve(**data, density=np.ones((4, 6)), velocity=np.zeros((4, 6, 3)))
    permeable = FWHSolver(np.full((1, 3), 10.0), np.linspace(0.0, 0.1, 11), permeable=True)
    with pytest.raises(ValueError, match="needs density and velocity"):
        permeable.solve(**data)


def test_observer_on_the_surface_is_rejected():
    data = panel_data()
    observer = data["positions"][0, 2] + 1e-9
    solver = FWHSolver(np.array([[10.0, 0.0, 0.0], observer]), np.linspace(0.0, 0.1, 11))
    with pytest.raises(ValueError, match=r"observer 1 at .* is on the surface"):
        solver.solve(**data)


def test_step_by_step_accumulation_equals_the_whole_record():
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
    solver = FWHSolver(observers, observer_times, c0=C0, rho0=RHO0)
    whole = solver.solve(times, positions, normals, areas, surface_velocity, pressure)
    normal_flux = np.einsum("tpi,tpi->tp", surface_velocity, normals)
    load = pressure[..., None] * normals
    for bounds in ([*range(nt), nt], [0, 2, 3, 10, 11, 12, 30, nt]):
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


def test_accumulator_needs_three_steps_and_increasing_times():
    positions, _, areas = sphere(1.0, 3, 6)
    solver = FWHSolver([[9.0, 0.0, 0.0]], [0.0, 1.0], c0=C0, rho0=RHO0)
    accumulator = solver.accumulator(areas)
    zeros = np.zeros((1, areas.size, 3))
    accumulator.add([0.0], positions[None], zeros, np.zeros((1, areas.size)), zeros)
    with pytest.raises(ValueError, match="at least 3 source steps"):
        accumulator.finish()
    with pytest.raises(ValueError, match="strictly increasing"):
        accumulator.add([0.0], positions[None], zeros, np.zeros((1, areas.size)), zeros)
    with pytest.raises(ValueError, match="normal_flux must have shape"):
        accumulator.add([1.0], positions[None], zeros, np.zeros((1, 2)), zeros)
