"""Turbulence statistics: exact for a laminar flow, exact moments of synthetic samples on any
rank count, unchanged by a restart, checked input."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
from mpi4py import MPI
from scipy import stats

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.numerics.moments import Moments
from tachyflow.observers.turbulence import TurbulenceStatistics
from tachyflow.parallel import PencilDecomposition
from tachyflow.simulation import Simulation
from tests.parallel.helpers import SMALL_CHANNEL, shared_folder


@pytest.mark.parallel([1, 2, 3])
def test_a_laminar_channel_has_the_exact_parabola_and_no_fluctuations(tmp_path_factory):
    comm = MPI.COMM_WORLD
    case = config.load("poiseuille").replace("statistics", every=1, start_step=2)
    case = case.replace("time", steps=6).replace("flow", initial="poiseuille")  # steady
    folder = shared_folder(tmp_path_factory, comm)
    run = Simulation(case, folder, comm, planning="estimate")
    run.run()
    observer = next(o for o in run.observers if o.name == "turbulence")
    table, summary = observer._profiles(run.solver.grid)
    run.free()
    height, bulk = case.grid.lengths[1], case.flow.forcing_value
    nu, y = case.flow.viscosity, table["y"]
    if case.flow.forcing == "pressure-gradient":
        bulk = case.flow.forcing_value * height**2 / (12 * nu)
    exact = 6 * bulk * y * (height - y) / height**2
    assert np.abs(table["U"] - exact).max() < 1e-10 * bulk
    for name in ("uu", "vv", "ww", "uv", "pp"):
        assert np.abs(table[name]).max() < 1e-20, name
    assert summary["samples"] == 5 and summary["start_step"] == 2
    assert abs(summary["wall_shear_stress"] - nu * 6 * bulk / height) < 1e-10  # exact slope
    if comm.rank == 0:
        header = (folder / "profiles.csv").read_text().splitlines()[0].split(",")
        assert header[:12] == ["y", "U", "V", "W", "P", "uu", "vv", "ww", "uv", "uw", "vw", "pp"]
        assert {"Re_tau", "Cf", "samples", "start_time", "end_time"} <= set(
            json.loads((folder / "statistics.json").read_text())
        )
        assert (folder / "images" / "profiles.png").exists()


@pytest.mark.parallel([1])
def test_the_poiseuille_case_from_rest_averages_what_is_left_of_its_start_up(tmp_path_factory):
    """The built-in case as shipped (from rest, 400 steps of 0.25), averaged over its last
    100 steps: the parabola minus the time average of the start-up's decaying modes
    ``32 U_max / (n π)³ sin(nπy/H) exp(-ν (nπ/H)² t)`` (n odd), and u_rms their spread in
    time; v and w stay 0."""
    comm = MPI.COMM_WORLD
    case = config.load("poiseuille").replace("statistics", every=1, start_step=300)
    run = Simulation(case, shared_folder(tmp_path_factory, comm), comm, planning="estimate")
    run.run()
    observer = next(o for o in run.observers if o.name == "turbulence")
    table, _ = observer._profiles(run.solver.grid)
    run.free()
    height, nu, gradient = case.grid.lengths[1], case.flow.viscosity, case.flow.forcing_value
    y, times = table["y"][:, None], np.arange(300, 401) * case.time.dt
    u_max = gradient * height**2 / (8 * nu)
    start_up = sum(
        32 * u_max / (n * np.pi) ** 3 * np.sin(n * np.pi * y / height)
        * np.exp(-nu * (n * np.pi / height) ** 2 * times)
        for n in (1, 3, 5, 7)
    )
    parabola = gradient / (2 * nu) * table["y"] * (height - table["y"])
    left = start_up.mean(axis=1)
    assert 1e-5 < left.max() < 1e-4 * u_max  # a transient this test can see
    assert np.abs(parabola - table["U"] - left).max() < 0.02 * left.max()
    assert np.abs(table["u_rms"] - start_up.std(axis=1)).max() < 0.02 * start_up.std(axis=1).max()
    assert table["v_rms"].max() < 1e-12 and table["w_rms"].max() < 1e-12


SHAPE = (6, 5, 8)


def synthetic_samples(count: int):
    """Gaussian samples of u, v, w, p with known means and spreads, u and v correlated."""
    generator = np.random.default_rng(11)
    samples = []
    for _ in range(count):
        noise = generator.standard_normal((4, *SHAPE))
        noise[1] = 0.5 * noise[0] + np.sqrt(0.75) * noise[1]  # <u'v'> = 0.5 σ_u σ_v
        samples.append(np.array([1.0, 0.0, -2.0, 3.0])[:, None, None, None] + noise)
    return samples


@pytest.mark.parallel([1, 2, 3])
def test_synthetic_samples_give_their_moments_on_any_rank_count():
    comm = MPI.COMM_WORLD
    section = config.parse("[statistics]\nevery = 1\n", "s.toml").statistics
    samples = synthetic_samples(25)
    with PencilDecomposition(SHAPE, comm=comm, periodic=(True, False, True)) as pencils:
        piece = pencils.pencils["y"].slices
        grid = StaggeredGrid(SHAPE, (1.0, 2.0, 1.0), periodic_y=False)
        fake = SimpleNamespace(
            decomposition=pencils, grid=grid, steps=0, time=0.0,
            piece_layout=lambda: SimpleNamespace(shape=pencils.local_shape("y")),
        )
        observer = TurbulenceStatistics(section, viscosity=1.0)
        run = SimpleNamespace(solver=fake)
        observer.start(run)
        for index, sample in enumerate(samples):
            fake.cell_field = lambda name, sample=sample: sample["uvwp".index(name)][piece]
            fake.steps, fake.time = index, 0.1 * index
            observer.observe(run)
    moments = observer.moments
    whole = np.stack(samples, axis=1)  # (4, samples, nx, ny, nz): all values per station
    per_station = np.moveaxis(whole, 3, 1).reshape(4, SHAPE[1], -1)
    assert np.allclose(moments.mean, per_station.mean(axis=2), rtol=0, atol=1e-13)
    covariance = moments.covariance()
    for a in range(4):
        for b in range(4):
            direct = np.mean(
                (per_station[a] - per_station[a].mean(axis=1, keepdims=True))
                * (per_station[b] - per_station[b].mean(axis=1, keepdims=True)),
                axis=1,
            )
            assert np.allclose(covariance[a, b], direct, rtol=1e-12, atol=1e-13)
    assert np.allclose(moments.skewness()[:3], stats.skew(per_station[:3], axis=2), atol=1e-11)
    flatness = stats.kurtosis(per_station[:3], axis=2, fisher=False)
    assert np.allclose(moments.flatness()[:3], flatness, atol=1e-11)
    # And within sampling error of what the samples were drawn from (1200 per station).
    n = per_station.shape[2]
    assert np.abs(moments.mean[0] - 1.0).max() < 5 / np.sqrt(n)
    assert np.abs(covariance[0, 1] - 0.5).max() < 5 / np.sqrt(n)
    assert np.abs(moments.mean[2:] - [[-2.0], [3.0]]).max() < 5 / np.sqrt(n)
    assert np.abs(np.diagonal(covariance)[:, :3] - 1.0).max() < 5 * np.sqrt(2 / n)
    assert np.abs(moments.skewness()[:3]).max() < 5 * np.sqrt(6 / n)
    assert np.abs(moments.flatness()[:3] - 3.0).max() < 5 * np.sqrt(24 / n)


def test_merging_in_any_grouping_gives_the_same_moments():
    values = np.random.default_rng(2).standard_normal((2, 3, 40)) ** 3  # skewed

    def batch(chunk):
        mean = chunk.mean(axis=2)
        deviation = chunk - mean[:, :, None]
        powers = np.stack([(deviation**p).sum(axis=2) for p in (2, 3, 4)])
        cross = np.einsum("asn,bsn->abs", deviation, deviation)
        return Moments.of_batch(np.full(3, chunk.shape[2]), mean, powers, cross)

    together = batch(values)
    pieces = Moments.empty(2, 3)
    for start in (0, 7, 19, 33):
        pieces = pieces.merge(batch(values[:, :, start : {0: 7, 7: 19, 19: 33, 33: 40}[start]]))
    for name, array in together.as_arrays().items():
        assert np.allclose(pieces.as_arrays()[name], array, rtol=1e-12, atol=1e-12), name


CHANNEL = (
    SMALL_CHANNEL.replace("steps = 6", "steps = 8").replace("checkpoint_every = 3",
                                                            "checkpoint_every = 4")
    + "[statistics]\nevery = 1\nstart_step = 2\n"
)


@pytest.mark.parallel([1, 2])
@pytest.mark.parametrize("homogeneous", ['["x", "z"]', "[]"], ids=["profiles", "fields"])
def test_statistics_survive_a_restart_unchanged(tmp_path_factory, homogeneous):
    comm = MPI.COMM_WORLD
    case = config.parse(CHANNEL + f"homogeneous = {homogeneous}\n", "c.toml")
    folder = shared_folder(tmp_path_factory, comm)
    straight = Simulation(case, folder / "straight", comm, planning="estimate")
    straight.run()
    straight.free()
    first = Simulation(case, folder / "split", comm, planning="estimate")
    first.run(4)
    first.free()
    second = Simulation(case, folder / "split", comm, restart="latest", planning="estimate")
    second.run()
    second.free()
    if comm.rank != 0:
        return
    names = ["statistics.json", "profiles.csv"]
    if homogeneous == "[]":
        names += [
            f"statistics/fields_vtk/step_00000008/piece_{r:05d}.vtr" for r in range(comm.size)
        ]
    for name in names:
        assert (folder / "split" / name).read_bytes() == (folder / "straight" / name).read_bytes()


def test_bad_statistics_keys_are_refused():
    with pytest.raises(ConfigError, match=r"'statistics.homogeneous' must be"):
        config.parse('[statistics]\nhomogeneous = ["y"]\n', "s.toml")
    with pytest.raises(ConfigError, match=r"'statistics.homogeneous' must be a list"):
        config.parse('[statistics]\nhomogeneous = "x"\n', "s.toml")
    with pytest.raises(ConfigError, match=r"'statistics.start_time' must be >= 0"):
        config.parse("[statistics]\nstart_time = -1.0\n", "s.toml")
    with pytest.raises(ConfigError, match=r"'statistics.output_every' must be >= 0"):
        config.parse("[statistics]\noutput_every = -5\n", "s.toml")
    with pytest.raises(ConfigError, match=r"'statistics.every' must be >= 0"):
        config.parse("[statistics]\nevery = -1\n", "s.toml")
    with pytest.raises(ConfigError, match=r"unknown key 'statistics\.start'"):
        config.parse("[statistics]\nstart = 3\n", "s.toml")


@pytest.mark.parallel([1, 3])
def test_fields_and_profiles_are_written_on_the_output_cadence(tmp_path_factory):
    comm = MPI.COMM_WORLD
    case = config.parse(
        SMALL_CHANNEL.replace("steps = 6", "steps = 8")
        + "[statistics]\nevery = 2\nstart_step = 4\noutput_every = 3\nhomogeneous = []\n",
        "c.toml",
    )
    folder = shared_folder(tmp_path_factory, comm)
    run = Simulation(case, folder, comm, planning="estimate")
    run.run()
    observer = next(o for o in run.observers if o.name == "turbulence")
    # The cells' means averaged over the planes are the profile's means.
    nx, _, nz = case.grid.cells
    planes = run.decomposition.sum_arrays(observer.cells["mean"].sum(axis=(1, 3))) / (nx * nz)
    assert np.allclose(planes, observer.moments.mean, rtol=0, atol=1e-14)
    run.free()
    if comm.rank != 0:
        return
    log = (folder / "log.txt").read_text()
    assert "no samples yet (from step 4" in log  # step 3: an output step before the window
    outputs = sorted(p.name for p in (folder / "statistics" / "fields_vtk").glob("*.pvtr"))
    assert outputs == ["step_00000006.pvtr", "step_00000008.pvtr"]  # output_every, the end
    pieces = (folder / "statistics" / "fields_vtk" / "step_00000008").glob("*.vtr")
    assert len(list(pieces)) == comm.size
    summary = json.loads((folder / "statistics.json").read_text())
    assert (summary["samples"], summary["start_step"], summary["end_step"]) == (3, 4, 8)
    assert summary["Re_tau"] > 0 and summary["Cf"] > 0
    header = (folder / "profiles.csv").read_text().splitlines()[0].split(",")
    assert {"y", "U", "uu", "vv", "ww", "uv", "y_plus", "U_plus"} <= set(header)


@pytest.mark.parallel([1])
def test_without_walls_the_wall_units_are_null(tmp_path_factory):
    comm = MPI.COMM_WORLD
    case = config.load("taylor-green").replace("grid", cells=(8, 8, 8))
    case = case.replace("time", steps=2).replace("statistics", every=1)
    folder = shared_folder(tmp_path_factory, comm)
    run = Simulation(case, folder, comm, planning="estimate")
    run.run()
    run.free()
    summary = json.loads((folder / "statistics.json").read_text())
    assert summary["samples"] == 2
    assert all(summary[key] is None for key in ("u_tau", "Re_tau", "Cf", "Uc_over_Ub"))
    assert (folder / "profiles.csv").read_text().startswith("y,U,V,W,P,uu,vv,ww,uv")


@pytest.mark.parallel([1])
def test_a_restart_without_cell_statistics_cannot_go_on_with_fields(tmp_path_factory):
    comm = MPI.COMM_WORLD
    case = config.parse(CHANNEL + 'homogeneous = ["x", "z"]\n', "c.toml")
    folder = shared_folder(tmp_path_factory, comm)
    first = Simulation(case, folder, comm, planning="estimate")
    first.run(4)
    first.free()
    fields = case.replace("statistics", homogeneous=())
    second = Simulation(fields, folder, comm, restart="latest", planning="estimate")
    with pytest.raises(ConfigError, match=r"statistics\.homogeneous: the checkpoint's run"):
        second.run()
    second.free()


@pytest.mark.parallel([3])
def test_statistics_written_on_two_ranks_continue_on_one_and_three(tmp_path_factory):
    """The running moments and the per-cell statistics move with the checkpoint to another
    rank count: the profiles equal the uninterrupted 2-rank run's to round-off."""
    world = MPI.COMM_WORLD
    case = config.parse(CHANNEL + "homogeneous = []\n", "c.toml")
    folder = shared_folder(tmp_path_factory, world)
    writers = world.Split(0 if world.rank < 2 else MPI.UNDEFINED, world.rank)
    expected = None
    if writers != MPI.COMM_NULL:
        straight = Simulation(case, folder / "straight", writers, planning="estimate")
        straight.run()
        expected = next(o for o in straight.observers if o.name == "turbulence").moments
        straight.free()
        first = Simulation(case, folder / "first", writers, planning="estimate")
        first.run(4)
        first.free()
        writers.Free()
    expected = world.bcast(expected, root=0)
    checkpoint = folder / "first" / "checkpoints" / "step_00000004.ckpt"
    for size in (1, 3):
        ranks = world.Split(0 if world.rank < size else MPI.UNDEFINED, world.rank)
        if ranks == MPI.COMM_NULL:
            continue
        again = Simulation(case, folder / f"again{size}", ranks, restart=checkpoint,
                           planning="estimate")
        again.run()
        moments = next(o for o in again.observers if o.name == "turbulence").moments
        again.free()
        for name, array in expected.as_arrays().items():
            scale = max(np.abs(array).max(), 1e-30)
            assert np.abs(moments.as_arrays()[name] - array).max() <= 1e-10 * scale, name
        ranks.Free()
