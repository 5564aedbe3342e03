"""The cylindrical (x, r, θ) rotating-frame solver against exact solutions: Hagen–Poiseuille
through the axis, circular Couette flow and its torque, solid-body rotation, the same flow
seen from two frames; second order in r; the same answer on 1, 2 and 3 ranks."""

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.solvers.pencil.cylindrical import CylindricalSolver

AXISYMMETRIC = """
[case]
solver = "cylindrical"
[grid]
cells = [4, {nr}, {nt}]
{grid}
[cylinder]
length = 1.0
radius = 1.0
{geometry}
[flow]
viscosity = 0.1
{flow}
"""


def solver(nr, nt=4, geometry="", flow='initial = "rest"', comm=MPI.COMM_SELF, grid=""):
    text = AXISYMMETRIC.format(nr=nr, nt=nt, geometry=geometry, flow=flow, grid=grid)
    return CylindricalSolver.from_case(config.parse(text, "case.toml"), comm, "estimate")


def run(case, steps, dt):
    for _ in range(steps):
        case.step(dt)
    return case


def test_hagen_poiseuille_through_the_axis_is_second_order():
    gradient, nu = 0.4, 0.1
    errors, shears = [], []
    for nr in (8, 16):
        flow = f'forcing = "pressure-gradient"\nforcing_value = {gradient}\ninitial = "rest"'
        case = run(solver(nr, flow=flow), 300, 0.1)  # ten viscous times: steady
        r = case.grid.centres_y
        exact = gradient * (1 - r**2) / (4 * nu)
        errors.append(np.abs(case.cell_field("u") - exact[None, :, None]).max())
        statistics = case.statistics()
        shears.append(abs(statistics["wall_shear"] - gradient / 2))  # τ_w = G R / 2
        assert statistics["max_divergence"] < 1e-12
        assert np.abs(case.cell_field("v")).max() < 1e-14
        case.free()
    assert 3.6 < errors[0] / errors[1] < 4.4, errors
    assert max(shears) < 1e-7, shears  # centred gradients extrapolated: exact on a parabola


@pytest.mark.parametrize("stretching", [0.0, 1.0])
def test_circular_couette_profile_and_torque_are_second_order(stretching):
    geometry = f"inner_radius = 0.5\ninner_wall_rotation = 1.0\nstretching = {stretching}"
    a = -0.25 / 0.75  # u_θ = a r + b / r with u_θ(0.5) = 0.5, u_θ(1) = 0
    b = (0.5 - a * 0.5) * 0.5
    torque = -4 * np.pi * 0.1 * b  # per unit length, on either cylinder
    profile, torques = [], []
    for nr in (8, 16, 32):
        case = run(solver(nr, geometry=geometry), 200, 0.05)
        r = case.grid.centres_y
        profile.append(np.abs(case.cell_field("w") - (a * r + b / r)[None, :, None]).max())
        statistics = case.statistics()
        torques.append(max(abs(statistics["inner_torque"] - torque),
                           abs(statistics["outer_torque"] - torque)))
        case.free()
    profile_orders = np.log2(np.array(profile[:-1]) / profile[1:])
    torque_orders = np.log2(np.array(torques[:-1]) / torques[1:])
    assert (profile_orders > 1.8).all(), profile
    assert torque_orders[-1] > 1.8 and torques[-1] < 1e-3, torques


def decaying_swirl(nr: int, dt: float, end: float = 0.5):
    """An exact unsteady solution through the axis: u_θ = J1(j r) exp(-ν j² t), j the first
    zero of J1 (no slip at r = 1), ν = 0.1. Returns the computed and the exact u_θ."""
    from scipy.special import j1, jn_zeros

    zero = jn_zeros(1, 1)[0]
    case = solver(nr, nt=8)
    case.set_velocity(0.0, 0.0, lambda x, r, theta: j1(zero * r) + 0 * x + 0 * theta)
    run(case, round(end / dt), dt)
    r = case.grid.centres_y
    exact = j1(zero * r) * np.exp(-0.1 * zero**2 * end)
    computed = case.cell_field("w")
    case.free()
    return computed, exact[None, :, None]


def test_a_decaying_swirl_is_second_order_in_space_and_in_time():
    """Second order in r, θ (space) and in time: the radial and azimuthal viscous terms are
    Crank–Nicolson (as in Kwon, Park & Choi), which bounds RK3's third order to second."""
    space = [np.abs(np.subtract(*decaying_swirl(nr, 0.005))).max() for nr in (8, 16)]
    assert 3.6 < space[0] / space[1] < 4.4, space
    reference, _ = decaying_swirl(16, 0.0025)
    time = [np.abs(decaying_swirl(16, dt)[0] - reference).max() for dt in (0.1, 0.05)]
    assert 3.6 < time[0] / time[1] < 4.4, time


def test_solid_body_rotation_is_kept_exactly_with_the_axis_inside():
    geometry = "outer_wall_rotation = 1.0"
    case = solver(10, nt=12, geometry=geometry, flow='initial = "solid-body"')
    run(case, 40, 0.05)
    r = case.grid.centres_y
    assert np.abs(case.cell_field("w") - r[None, :, None]).max() < 1e-13
    assert np.abs(case.cell_field("v")).max() < 1e-13
    assert np.abs(case.cell_field("u")).max() < 1e-13
    case.free()


def test_a_spin_up_seen_from_the_rotating_frame_is_the_inertial_one_transformed():
    """A pipe whose wall starts turning at ω = 1 (fluid at rest): computed in the inertial
    frame, and in the frame turning with the wall (the wall at rest, the fluid at -ω r)."""
    inertial = solver(10, nt=12, geometry="outer_wall_rotation = 1.0")
    rotating = solver(10, nt=12, geometry="outer_wall_rotation = 1.0\nrotation = 1.0")
    rotating.set_velocity(0.0, 0.0, lambda x, r, theta: -r + 0 * x + 0 * theta)
    run(inertial, 30, 0.05)
    run(rotating, 30, 0.05)
    r = inertial.grid.centres_y
    transformed = rotating.cell_field("w") + r[None, :, None]
    assert np.abs(inertial.cell_field("w")).max() > 0.5  # it did spin up
    assert np.abs(inertial.cell_field("w") - transformed).max() < 1e-13
    inertial.free()
    rotating.free()


PIPE = """
[case]
solver = "cylindrical"
[grid]
cells = [12, 9, 10]
{grid}
[cylinder]
length = 4.0
radius = 1.0
stretching = 1.0
{geometry}
[flow]
viscosity = 0.002
{forcing}
initial = "perturbed-pipe"
perturbation = 0.3
seed = 3
{parallel}
"""
FLOW_RATE = 'forcing = "flow-rate"\nforcing_value = 1.0'
OPEN_X = 'x_boundaries = "inflow-outflow"\ninflow_profile = "laminar"'


@pytest.mark.parallel([1, 2, 3])
@pytest.mark.parametrize(
    "geometry, forcing, split_x, grid",
    [
        ("", FLOW_RATE, False, ""),
        ("rotation = 0.5\nsectors = 2", FLOW_RATE, False, ""),
        ("theta_core_radius = 0.5", FLOW_RATE, False, ""),
        ("rotation = 0.5", "", False, OPEN_X),
        ("rotation = 0.5", "", True, OPEN_X),
        ("rotation = 0.5", "", True, OPEN_X + "\nx_zone = [1.0, 2.0]\nx_zone_cells = 6"),
    ],
    ids=["pipe", "sector", "theta-core", "inflow-outflow", "inflow-outflow-split-x",
         "inflow-outflow-x-zone"],
)
def test_a_perturbed_pipe_gives_the_same_flow_on_any_rank_count(geometry, forcing, split_x, grid):
    world = MPI.COMM_WORLD
    results = []
    for comm in (MPI.COMM_SELF, world):
        parallel = f"[parallel]\nproc_grid = [{comm.size}, 1]" if split_x else ""
        text = PIPE.format(geometry=geometry, forcing=forcing, parallel=parallel, grid=grid)
        case = CylindricalSolver.from_case(config.parse(text, "pipe.toml"), comm, "estimate")
        for _ in range(5):
            case.step(0.02)
        statistics = case.statistics()
        assert statistics["max_divergence"] < 1e-12
        assert abs(statistics["bulk_velocity"] - 1.0) < 1e-12
        gathered = [case.decomposition.gather_global(case.cell_field(n), "y") for n in "uvwp"]
        results.append(gathered)
        case.free()
        case.decomposition.free()
    if world.rank == 0:
        for serial, parallel in zip(*results, strict=True):
            assert np.abs(serial - parallel).max() < 1e-12 * max(np.abs(serial).max(), 1.0)
        assert np.abs(results[0][1]).max() > 1e-3  # the perturbations are there


def test_bad_cylindrical_input_is_refused():
    with pytest.raises(ValueError, match="1 \\(axisymmetric\\) or >= 3 cells in θ"):
        solver(8, nt=2)
    with pytest.raises(ConfigError, match=r"'flow\.initial' must be one of \('rest', 'hagen"):
        solver(8, flow='initial = "taylor-green"')
    with pytest.raises(ConfigError, match=r"cylinder.inner_radius"):
        solver(8, geometry="inner_radius = 2.0")


# Linear stability of circular Couette flow, radius ratio 0.5, outer cylinder at rest:
# Re_c = Ω_i r_i d / ν = 68.19 at the axial wavenumber k_c d = 3.16 (Recktenwald, Lücke &
# Müller 1993, Taylor vortex formation in axial through-flow: linear and weakly nonlinear
# analysis).
CRITICAL_REYNOLDS, CRITICAL_WAVENUMBER = 68.19, 3.16
TAYLOR_COUETTE = """
[case]
solver = "cylindrical"
[grid]
cells = [16, 24, 1]
[cylinder]
length = {length}
radius = 2.0
inner_radius = 1.0
inner_wall_rotation = 1.0
[flow]
viscosity = {viscosity}
initial = "couette"
perturbation = 0.001
seed = 2
"""


def taylor_vortex_growth_rate(reynolds: float) -> float:
    """Growth rate of an axisymmetric disturbance of one critical wavelength (gap d = 1)."""
    text = TAYLOR_COUETTE.format(length=2 * np.pi / CRITICAL_WAVENUMBER, viscosity=1.0 / reynolds)
    case = CylindricalSolver.from_case(config.parse(text, "tc.toml"), MPI.COMM_SELF, "estimate")
    times, energies = [], []
    for step in range(3000):
        case.step(0.1)
        if step >= 1500 and step % 100 == 0:  # after the transient of the other modes
            times.append(case.time)
            energies.append(np.mean(case.cell_field("v") ** 2))
    case.free()
    return 0.5 * np.polyfit(times, np.log(energies), 1)[0]


def test_taylor_vortices_appear_within_two_percent_of_the_critical_reynolds_number():
    below, above = 0.98 * CRITICAL_REYNOLDS, 1.02 * CRITICAL_REYNOLDS
    decay, growth = taylor_vortex_growth_rate(below), taylor_vortex_growth_rate(above)
    assert decay < 0 < growth, (decay, growth)
    onset = below + (above - below) * -decay / (growth - decay)
    assert abs(onset / CRITICAL_REYNOLDS - 1) < 0.02, onset


def test_acoustics_on_a_cylindrical_grid_is_refused_until_it_is_supported(tmp_path):
    from tachyflow.simulation import Simulation

    text = AXISYMMETRIC.format(nr=8, nt=4, geometry="", flow='initial = "rest"', grid="")
    acoustics = (
        '[acoustics]\nsurface = "sphere"\nradius = 0.3\nduration = 1.0\n'
        "observers = [[5.0, 0.0, 0.0]]\n"
    )
    case = config.parse(text + acoustics, "a.toml")
    with pytest.raises(ConfigError, match=r"\[acoustics\] surface = 'sphere' needs "
                       r"cartesian-grid, which solver 'cylindrical' does not provide"):
        Simulation(case, tmp_path, MPI.COMM_SELF, planning="estimate").run(1)


def advective_work(cells) -> float:
    """The net work of the advective terms on a divergence-free, wall-bounded pipe flow
    (0 for the continuous equations): Σ u·(-u·∇u) over the staggered volumes."""
    from tachyflow.numerics import cylindrical_stencils

    text = PIPE.format(geometry="", forcing=FLOW_RATE, parallel="", grid="").replace(
        "cells = [12, 9, 10]", f"cells = {list(cells)}"
    )
    text = text.replace('forcing = "flow-rate"', 'forcing = "none"')
    case = CylindricalSolver.from_case(config.parse(text, "p.toml"), MPI.COMM_SELF, "estimate")
    hu, hq, hw = cylindrical_stencils.advection(
        case.u, case.q, case.w, case.metrics, case.grid.spacing_x, case.dt_theta, 0.0
    )
    grid, owned = case.grid, (slice(1, -1),) * 3
    r, widths = grid.centres_y[None, :, None], grid.widths_y[None, :, None]
    faces = grid.faces_y[1:][None, :, None]
    gaps = np.append(np.diff(grid.centres_y), 0.5 * grid.widths_y[-1])[None, :, None]
    u, q, w = case.u[owned], case.q[owned], case.w[owned]
    work = (
        (u * hu * r * widths).sum()
        + (q * hq / faces * gaps)[:, :-1].sum()  # u_r (hq / r) on r-faces, r Δr volumes
        + (w * hw * r * widths).sum()
    )
    case.free()
    return abs(work) * case.grid.spacing_x * case.dt_theta


def test_advection_does_no_net_work_to_second_order():
    """Consistency of the conservative cylindrical advection (curvature terms included):
    the kinetic energy it moves sums to zero as the grid is refined, at second order."""
    coarse, fine = advective_work((8, 9, 10)), advective_work((16, 18, 20))
    assert coarse / fine > 3.5, (coarse, fine)


@pytest.mark.parametrize(
    "overrides",
    [(), ("grid.cells=[72, 16, 1]", "grid.x_zone=[0.0, 14.0]", "grid.x_zone_cells=56")],
    ids=["uniform-x", "x-zone"],
)
def test_a_developing_pipe_flow_reaches_its_length_of_durst_et_al(overrides):
    """The built-in ``pipe-entrance`` case (a uniform inflow at Re_D = 100, a convective
    outflow 12 D downstream): the flow leaving is Hagen–Poiseuille, and the centre velocity
    reaches 99 % of its developed value at the length of the correlation of Durst, Ray,
    Ünsal & Bayoumi (2005), L/D = (0.619^1.6 + (0.0567 Re)^1.6)^(1/1.6), within 2 %. Also
    on 72 cells in x instead of 96: the case's spacing over the first 7 D, 16 cells growing
    to the outflow (their ratio rising to 1.12)."""
    case = config.load("pipe-entrance", overrides)
    pipe = CylindricalSolver.from_case(case, MPI.COMM_SELF, "estimate")
    for _ in range(case.time.steps):
        pipe.step(pipe.stable_time_step(case.time.cfl))
    statistics = pipe.statistics()
    assert statistics["max_divergence"] < 1e-12
    assert abs(statistics["bulk_velocity"] - 1.0) < 1e-12
    x = pipe.grid.centres_x
    r = pipe.grid.centres_y
    u = pipe.cell_field("u")[:, :, 0]
    developed = 2.0 * (1.0 - r**2)
    assert np.abs(u[-1] - developed).max() < 0.02  # second order, 16 cells in r
    centre = u[:, 0]  # the first ring, r = 0.04 R
    first = int(np.argmax(centre >= 0.99 * centre[-1]))
    crossing = np.interp(
        0.99 * centre[-1], centre[first - 1 : first + 1], x[first - 1 : first + 1]
    )
    reynolds = 2.0 / case.flow.viscosity
    correlation = (0.619**1.6 + (0.0567 * reynolds) ** 1.6) ** (1 / 1.6)
    assert abs(crossing / 2.0 - correlation) < 0.02 * correlation, (crossing / 2.0, correlation)


def test_an_inflow_needs_an_open_x_and_no_forcing():
    flow = 'initial = "rest"\nforcing = "flow-rate"\nforcing_value = 1.0'
    with pytest.raises(ConfigError, match=r"flow\.forcing"):
        solver(8, grid='x_boundaries = "inflow-outflow"', flow=flow)
    with pytest.raises(ConfigError, match=r"grid\.x_boundaries"):
        solver(8, grid='x_boundaries = "open"')
    with pytest.raises(ConfigError, match=r"grid\.inflow_velocity"):
        solver(8, grid='x_boundaries = "inflow-outflow"\ninflow_velocity = -1.0')
    case = solver(8, grid='x_boundaries = "inflow-outflow"')
    with pytest.raises(ValueError, match="an inflow needs a grid open in x"):
        CylindricalSolver(case.decomposition, case.grid, 0.1)


def axial_mode(core: float, nr: int = 16, nt: int = 16):
    """u = J2(j r) cos 2θ e^(-ν j² t) (j the first zero of J2: no slip at r = 1) with no
    radial or azimuthal velocity: an exact solution (nothing advects it, no pressure)
    whose θ second derivative is not zero. Returns the case at t = 0."""
    from scipy.special import jn, jn_zeros

    zero = jn_zeros(2, 1)[0]
    case = solver(nr, nt=nt, geometry=f"theta_core_radius = {core}")
    case.set_velocity(lambda x, r, theta: jn(2, zero * r) * np.cos(2 * theta) + 0 * x, 0.0, 0.0)
    return case, zero


def axial_mode_error(core: float, nr: int = 16, end: float = 0.2, steps: int = 40) -> float:
    from scipy.special import jn

    case, zero = axial_mode(core, nr, nt=nr)
    run(case, steps, end / steps)
    x, r, theta = case.coordinates("u")
    exact = jn(2, zero * r) * np.cos(2 * theta) * np.exp(-0.1 * zero**2 * end) + 0 * x
    error = np.abs(case.halo.interior(case.u) - exact).max()
    case.free()
    return error


def test_theta_implicit_only_in_the_core_keeps_the_order_and_its_time_step():
    """Akselvoll & Moin's split: the azimuthal viscous terms implicit only for r < R/2.
    The same answer to the scheme's order, second order in space (4.35e-3, 1.16e-3 at
    16, 32 cells in r and θ); the time step it allows is the explicit limit at the core's
    edge, many times the fully explicit one."""
    everywhere = axial_mode_error(0.0)
    split = [axial_mode_error(0.5, nr) for nr in (16, 32)]
    assert split[1] < 1.2 * everywhere
    assert 3.4 < split[0] / split[1] < 4.6, split
    case, _ = axial_mode(0.5)
    allowed = case.stable_time_step()
    nu, first = case.viscosity, case.grid.centres_y[0]
    widths = case.grid.widths_y
    explicit = 2.51 / (
        nu * (4 / case.grid.spacing_x**2 + 4 / widths.min() ** 2
              + 4 / (first * case.dt_theta) ** 2)
    )
    assert allowed > 2 * explicit  # the gain over a fully explicit step (2.6x on this grid)
    # The explicit θ diffusion beyond the core is what it says: stable below its limit at
    # the core's edge, unstable above (this mode, uniform in x, has no θ couplings, which
    # set `allowed`).
    edge = case.grid.centres_y[case.core_rows]
    limit = 2.51 / (nu * 4 / (edge * case.dt_theta) ** 2)
    run(case, 300, 0.8 * limit)
    assert np.abs(case.halo.interior(case.u)).max() < 1.0  # stable, decaying
    unstable, _ = axial_mode(0.5)
    run(unstable, 300, 1.5 * limit)
    assert not np.abs(unstable.halo.interior(unstable.u)).max() < 1.0
    implicit, _ = axial_mode(0.0)  # θ implicit everywhere: that step is stable
    run(implicit, 300, 1.5 * limit)
    assert np.abs(implicit.halo.interior(implicit.u)).max() < 1.0


def test_a_uniform_stream_past_a_slip_wall_stays_uniform():
    """A stress-free outer wall (`outer_wall = "slip"`, a far boundary) leaves a uniform
    inflow uniform: no boundary layer grows on it."""
    text = AXISYMMETRIC.format(
        nr=12, nt=8, grid='x_boundaries = "inflow-outflow"', geometry='outer_wall = "slip"\n'
        "stretching = 1.0", flow='initial = "rest"',
    ).replace("cells = [4,", "cells = [16,")
    case = CylindricalSolver.from_case(config.parse(text, "stream.toml"), MPI.COMM_SELF)
    run(case, 50, 0.02)
    assert np.abs(case.halo.interior(case.u) - 1.0).max() < 1e-12
    assert np.abs(case.halo.interior(case.w)).max() < 1e-12
    with pytest.raises(ConfigError, match=r"cylinder\.outer_wall"):
        solver(8, geometry='outer_wall = "free"')


def test_non_finite_fields_are_named_and_the_cfl_number_is_that_of_the_centred_velocities():
    case = solver(8, nt=8)
    rng = np.random.default_rng(5)
    for array in (case.u, case.q, case.w):
        array[...] = rng.standard_normal(array.shape)
    r = case.grid.centres_y[None, :, None]
    expected = (
        0.3
        * (
            np.abs(case.cell_field("u")) / case.grid.spacing_x
            + np.abs(case.cell_field("v")) / case.grid.widths_y[None, :, None]
            + np.abs(case.cell_field("w")) / (r * case.dt_theta)
        ).max()
    )
    assert case.cfl_number(0.3) == pytest.approx(expected, rel=1e-14)
    assert case.nonfinite_field() is None
    for name, array in (("v", case.q), ("p", case.p), ("w", case.w)):
        array[2, 3, 4] = np.nan
        assert case.nonfinite_field() == name
        array[2, 3, 4] = 0.0
    case.free()
