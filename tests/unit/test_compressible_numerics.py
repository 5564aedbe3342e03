"""Kernels of the compressible solver: flux consistency and conservation, free-stream
preservation on a curved stretched grid, Spalart–Allmaras source, boundary conditions,
and the symmetric Gauss–Seidel relaxation."""

import numpy as np
import pytest

from tachyflow.numerics.compressible import boundaries, fluxes, implicit, turbulence
from tachyflow.numerics.compressible.gas import FreeStream, conservative, primitive
from tachyflow.numerics.compressible.grids import extrapolate_ghost_nodes
from tachyflow.numerics.compressible.metrics import BlockMetrics, wall_distance
from tachyflow.numerics.compressible.residual import FlowDiscretisation
from tachyflow.numerics.compressible.time_integration import ImplicitStepper

G = 2
STATES = [
    np.array([1.0, 0.5, 0.1, 1 / 1.4, 3e-5]),
    np.array([0.8, -0.3, 0.7, 0.6, 1e-5]),
    np.array([1.3, 1.6, -0.2, 0.9, 0.0]),  # supersonic
]


def curved_grid(ni=24, nj=16):
    """A curved, stretched grid (nodes with ghosts)."""
    xi = np.linspace(0, 1, ni + 1)
    eta = (np.exp(2 * np.linspace(0, 1, nj + 1)) - 1) / (np.exp(2) - 1)
    X, E = np.meshgrid(xi, eta, indexing="ij")
    x = X + 0.1 * np.sin(np.pi * E) * (1 + X)
    y = 0.5 * E + 0.08 * np.sin(2 * np.pi * X)
    return extrapolate_ghost_nodes(x, y, G)


@pytest.mark.parametrize("scheme", ["roe", "ausm+up"])
@pytest.mark.parametrize("state", STATES)
def test_flux_of_equal_states_is_the_physical_flux(scheme, state):
    normal = np.array([0.28, -0.96])
    exact = fluxes.euler_flux(state, normal)
    assert np.allclose(fluxes.face_flux(scheme, state, state, normal), exact, atol=1e-14)


@pytest.mark.parametrize("scheme", ["roe", "ausm+up"])
def test_flux_is_conservative_and_rotation_invariant(scheme):
    left, right = STATES[0], STATES[1]
    normal = np.array([0.6, 0.8])
    forward = fluxes.face_flux(scheme, left, right, normal)
    # The same face seen from the other cell: the flux changes sign.
    backward = fluxes.face_flux(scheme, right, left, -normal)
    assert np.allclose(forward, -backward, atol=1e-14)
    # Rotating the frame rotates the momentum flux.
    angle = 0.7
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])

    def rotate(q):
        q = q.copy()
        q[1:3] = rotation @ q[1:3]
        return q

    turned = fluxes.face_flux(scheme, rotate(left), rotate(right), rotation @ normal)
    expected = forward.copy()
    expected[1:3] = rotation @ forward[1:3]
    assert np.allclose(turned, expected, atol=1e-13)


def test_roe_flux_resolves_a_stationary_contact_exactly():
    left = np.array([1.0, 0.0, 0.2, 1.0])
    right = np.array([0.25, 0.0, -0.5, 1.0])
    flux = fluxes.face_flux("roe", left, right, (1.0, 0.0))
    assert np.allclose(flux, [0, 1.0, 0, 0], atol=1e-14)


def test_conversions_round_trip():
    q = np.stack(STATES, axis=1)
    assert np.allclose(primitive(conservative(q)), q)


@pytest.mark.parametrize("scheme", ["roe", "ausm+up"])
@pytest.mark.parametrize("turbulence_model", ["laminar", "sa"])
def test_free_stream_is_preserved_on_a_curved_stretched_grid(scheme, turbulence_model):
    metrics = BlockMetrics.from_nodes(*curved_grid(), G)
    free_stream = FreeStream(mach=0.5, alpha_degrees=20.0, reynolds=1e3)
    nvar = 5 if turbulence_model == "sa" else 4
    distance = 0.01 + np.abs(metrics.yc) if turbulence_model == "sa" else None
    disc = FlowDiscretisation(metrics, free_stream, scheme, "van-albada", turbulence_model,
                              wall_distance=distance)
    U = conservative(free_stream.primitive(nvar)[:, None, None] * np.ones(metrics.area.shape))
    R = disc.residual(U)
    owned = (slice(None), *metrics.owned)
    flux_scale = np.abs(U[:4]).max() * 1.6 * metrics.sxi.max()
    if turbulence_model == "sa":  # the source of the ambient nu_tilde is not zero near d = 0
        R[4] = 0.0
    assert np.abs(R[owned]).max() < 1e-13 * flux_scale


def test_sa_source_of_ambient_nu_tilde_vanishes_far_from_walls():
    nu = 1e-6
    nt = turbulence.free_stream_nu_tilde(nu, 3.0)
    # Without vorticity, production is zero and the destruction falls as 1/d^2.
    near, far = (turbulence.source_term(1.0, nt, nu, 0.0, d) for d in (1.0, 1e3))
    assert near < 0 and far / near == pytest.approx(1e-6, rel=1e-9)
    assert turbulence.source_term(1.0, nt, nu, 0.0, np.inf) == 0.0
    assert turbulence.source_term(1.0, 0.0, nu, 5.0, 0.1) == 0.0


def test_sa_source_matches_the_model_in_the_log_layer():
    # In the log layer nu_tilde = kappa u_tau d, S = u_tau / (kappa d): production balances
    # destruction plus the cb2 diffusion term (the model's calibration, r = 1, fw = 1).
    u_tau, d, nu = 0.05, 0.01, 1e-10  # chi large: fv1 = 1, fv2 = 0
    nt = turbulence.KAPPA * u_tau * d
    value = turbulence.source_term(1.0, nt, nu, u_tau / (turbulence.KAPPA * d), d,
                                   (turbulence.KAPPA * u_tau) ** 2)
    diffusion = (turbulence.KAPPA * u_tau) ** 2 / turbulence.SIGMA  # div(nt grad nt)/sigma
    production = turbulence.CB1 * u_tau / (turbulence.KAPPA * d) * nt
    assert abs(value + diffusion) < 1e-3 * production


def test_negative_sa_branch_decays_and_diffuses():
    # SA-neg (Allmaras, Johnson, Spalart, ICCFD7-1902): for nt < 0 the source is
    # cb1 Omega nt + cw1 (nt/d)^2, and the diffusion coefficient mu + rho nt fn stays
    # positive: mu at nt = 0, mu + |rho nt| for strongly negative nt (fn -> -1).
    nu, nt, vorticity, d = 1e-5, -2e-5, 3.0, 0.05
    expected = turbulence.CB1 * vorticity * nt + turbulence.CW1 * (nt / d) ** 2
    assert turbulence.source_term(1.0, nt, nu, vorticity, d) == pytest.approx(expected)
    _, coefficient = turbulence.source(1.0, nt, nu, vorticity, d, 0.0)
    assert coefficient >= 0.0
    mu = 1e-5
    assert turbulence.diffusion_coefficient(mu, 0.0) == mu
    assert turbulence.diffusion_coefficient(mu, -1e-12) == pytest.approx(mu)
    for rho_nt in (-1e-7, -1e-5, -1e-3):
        assert turbulence.diffusion_coefficient(mu, rho_nt) > 0.0
    assert turbulence.diffusion_coefficient(mu, -1e-1) == pytest.approx(mu + 1e-1, rel=1e-6)


def test_wall_distance_to_segments():
    segments = np.array([[0.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 1.0]])
    d = wall_distance(np.array([0.5, 2.0, -1.0]), np.array([0.3, 0.5, -1.0]), segments)
    assert np.allclose(d, [0.3, 1.0, np.sqrt(2.0)])


def test_boundary_conditions_fill_ghosts():
    metrics = BlockMetrics.from_nodes(*curved_grid(8, 6), G)
    free_stream = FreeStream(mach=0.4, alpha_degrees=5.0)
    q = free_stream.primitive()[:, None, None] * np.ones(metrics.area.shape)
    q[1] += 0.05 * np.sin(metrics.xc)
    U = conservative(q)
    boundaries.wall(U, "j_low", G)
    Q = primitive(U)
    # No slip: the wall-face velocity (mean of mirror cells) is zero.
    assert np.allclose(Q[1:3, G:-G, G - 1] + Q[1:3, G:-G, G], 0)
    assert np.allclose(Q[3, G:-G, G - 2], Q[3, G:-G, G + 1])
    boundaries.slip_wall(U, metrics, "j_high")
    nx, ny, _ = boundaries.outward_normals(metrics, "j_high")
    Q = primitive(U)
    normal = lambda j: Q[1, G:-G, j] * nx[G:-G] + Q[2, G:-G, j] * ny[G:-G]  # noqa: E731
    assert np.allclose(normal(-G - 1) + normal(-G), 0)
    # Far field with the free stream outside and inside: the ghosts hold the free stream.
    U = conservative(free_stream.primitive()[:, None, None] * np.ones(metrics.area.shape))
    expected = U.copy()
    for side in boundaries.SIDES:
        U[:, :G] = U[:, -G:] = U[:, :, :G] = U[:, :, -G:] = 2.0
        boundaries.far_field(U, metrics, side, free_stream.primitive())
        view, reference = boundaries.side_view(U, side), boundaries.side_view(expected, side)
        assert np.allclose(view[:, G:-G, :G], reference[:, G:-G, :G], atol=1e-14)


def test_point_vortex_state_is_isentropic_and_decays():
    free_stream = FreeStream(mach=0.5, alpha_degrees=2.0)
    x, y = np.array([50.0, 1e6]), np.array([20.0, 0.0])
    state = boundaries.point_vortex_state(free_stream, x, y, 0.8)
    entropy = state[3] / state[0] ** 1.4
    assert np.allclose(entropy, 1 / 1.4)
    assert np.allclose(state[:, 1], free_stream.primitive(), atol=1e-6)
    assert not np.allclose(state[:, 0], free_stream.primitive(), atol=1e-4)


def _linear_system_residual(U, R, dU, diagonal, lam_i, lam_j, m):
    """``D dU + sum 0.5 (dF - lambda dU_nb) + R`` in the owned cells, in numpy."""
    out = diagonal * dU + R
    for dim, (sx, sy, lam) in enumerate(((m.sxi, m.syi, lam_i), (m.sxj, m.syj, lam_j))):
        for shift, sign in ((1, 1.0), (-1, -1.0)):
            nb = np.roll(U, -shift, axis=1 + dim)
            dnb = np.roll(dU, -shift, axis=1 + dim)
            face = slice(1, None) if shift == 1 else slice(None, -1)
            nx = sign * (sx[face] if dim == 0 else sx[:, face])
            ny = sign * (sy[face] if dim == 0 else sy[:, face])
            lam_face = lam[face] if dim == 0 else lam[:, face]

            def flux(w, nx=nx, ny=ny):
                q = primitive(w)
                vn = q[1] * nx + q[2] * ny
                return np.array([w[0] * vn, w[1] * vn + q[3] * nx, w[2] * vn + q[3] * ny,
                                 (w[3] + q[3]) * vn])

            out += 0.5 * (flux(nb + dnb) - flux(nb) - lam_face * dnb)
    return out[:, G:-G, G:-G]


@pytest.mark.parametrize("state", STATES)
def test_flux_jacobian_matches_finite_differences(state):
    w = conservative(state)
    nx, ny = 0.6, -1.3
    jacobian = np.empty((5, 5))
    implicit.flux_jacobian(w, nx, ny, 1.4, jacobian)
    h = 1e-6
    for k in range(5):
        plus, minus, f_plus, f_minus = w.copy(), w.copy(), np.empty(5), np.empty(5)
        plus[k] += h
        minus[k] -= h
        implicit.conservative_flux(plus, nx, ny, 1.4, f_plus)
        implicit.conservative_flux(minus, nx, ny, 1.4, f_minus)
        assert np.allclose(jacobian[:, k], (f_plus - f_minus) / (2 * h), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("kernel", ["sgs_sweeps", "line_sgs_sweeps"])
def test_symmetric_gauss_seidel_solves_the_implicit_system(kernel):
    # Point sweeps evaluate the neighbours' flux changes exactly; line sweeps linearise
    # those along j (flux Jacobians), which differs by the square of the small increment.
    metrics = BlockMetrics.from_nodes(*curved_grid(10, 8), G)
    free_stream = FreeStream(mach=0.5, alpha_degrees=10.0)
    rng = np.random.default_rng(1)
    q = free_stream.primitive()[:, None, None] * (1 + 0.02 * rng.random((4, *metrics.area.shape)))
    U = conservative(q)
    disc = FlowDiscretisation(metrics, free_stream)
    R = disc.residual(U)
    disc.spectral_radii()
    lam_i, lam_j = disc.implicit_radii()
    dt = disc.local_time_step(5.0)
    diagonal = implicit.diagonal(metrics.area, dt, lam_i, lam_j)
    dU = np.zeros_like(U)
    no_cut = np.full(metrics.area.shape, -1, dtype=np.int64)
    sizes = []
    for sweeps in (1, 6):
        dU[...] = 0.0
        getattr(implicit, kernel)(U, R, dU, diagonal, disc.source_implicit, lam_i, lam_j,
                                  metrics.sxi, metrics.syi, metrics.sxj, metrics.syj, no_cut, G,
                                  1.4, sweeps)
        sizes.append(np.abs(_linear_system_residual(U, R, dU, diagonal, lam_i, lam_j,
                                                    metrics)).max())
    tolerance, gain = (1e-4, 1e-2) if kernel == "sgs_sweeps" else (1e-3, 5e-2)
    assert sizes[1] < tolerance * np.abs(R[:, G:-G, G:-G]).max()
    assert sizes[1] < gain * sizes[0]


def periodic_fill(U):
    """Ghost cells of a single periodic block (test exchange)."""
    U[:, :G], U[:, -G:] = U[:, -2 * G : -G], U[:, G : 2 * G]
    U[:, :, :G], U[:, :, -G:] = U[:, :, -2 * G : -G], U[:, :, G : 2 * G]


@pytest.mark.parametrize(("sweeps", "line_implicit"), [(1, False), (3, False), (2, True)])
def test_implicit_steps_converge_a_steady_flow(sweeps, line_implicit):
    # A channel of slip walls with characteristic inflow and outflow, from a perturbed
    # uniform flow: the steady state is uniform; the residual must fall by six orders.
    n = 16
    xi = np.arange(-G, n + G + 1) / n
    x, y = np.meshgrid(xi, xi * 0.5, indexing="ij")
    metrics = BlockMetrics.from_nodes(x, y, G)
    free_stream = FreeStream(mach=0.3)
    q = free_stream.primitive()[:, None, None] * np.ones(metrics.area.shape)
    q[0] += 0.05 * np.sin(2 * np.pi * metrics.xc) * np.sin(np.pi * metrics.yc / 0.5)
    U = conservative(q)

    def fill(state):
        for side in ("i_low", "i_high"):
            boundaries.far_field(state, metrics, side, free_stream.primitive())
        for side in ("j_low", "j_high"):
            boundaries.slip_wall(state, metrics, side)

    fill(U)
    disc = FlowDiscretisation(metrics, free_stream, "roe", "van-albada")
    stepper = ImplicitStepper(disc, sweeps, exchange_increment=None, line_implicit=line_implicit)
    first = None
    for _ in range(800):
        R = stepper.step(U, 100.0, fill)
        size = np.sqrt(np.mean(R[0, G:-G, G:-G] ** 2))
        first = first or size
        if size < 1e-6 * first:
            break
    assert size < 1e-6 * first, size / first
    assert np.allclose(primitive(U)[:, G:-G, G:-G], free_stream.primitive()[:, None, None],
                       atol=1e-6)
