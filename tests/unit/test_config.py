import typing

import pytest

from tachyflow import config, runtime
from tachyflow.acoustics.options import AcousticsSection, parse_observers
from tachyflow.errors import ConfigError


def test_builtin_cases_load_and_round_trip_through_toml():
    assert {"channel", "poiseuille", "taylor-green"} <= set(config.builtin_cases())
    for name in config.builtin_cases():
        case = config.load(name)
        assert case.case.name == name
        assert config.parse(case.to_toml()) == case


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[flow]\nviscocity = 1.0", "unknown key 'flow.viscocity'"),
        ("[solver]\nx = 1", r"unknown section \[solver\]"),
        ("[flow]\nviscosity = -1.0", "'flow.viscosity' must be positive, got -1.0"),
        ("[grid]\ncells = [4, 4]", "'grid.cells' must be a list of 3 values"),
        ("[grid]\ncells = [4, 0, 4]", "'grid.cells' must be 3 positive integers"),
        ("[time]\nsteps = 1.5", "'time.steps' must be int, got 1.5"),
        ("[grid]\nwalls = 1", "'grid.walls' must be bool, got 1"),
        ("[flow]\nforcing = 'wind'", "'flow.forcing' must be one of"),
        ("[grid]\nstretching = 1.0", "0 without walls"),
        ("[time]\ncfl = 3.0", r"'time.cfl' must be in \(0, max_cfl = 2.0\]"),
        (
            "[insitu]\ntransit_precision = 'half'",
            r"'insitu.transit_precision' must be one of \('single', 'double'\)",
        ),
        (
            "[insitu]\ntransit_threads = 'anywhere'",
            r"'insitu.transit_threads' must be one of \('spare-cores', 'rank'\)",
        ),
        ("[grid\n", "not valid TOML"),
    ],
)
def test_bad_case_files_name_the_key_and_the_file(text, message):
    with pytest.raises(ConfigError, match=message) as error:
        config.parse(text, "my_case.toml")
    assert str(error.value).startswith("my_case.toml: ")


def test_load_reports_unknown_names_and_missing_files(tmp_path):
    with pytest.raises(ConfigError, match="no case named 'chanel': built-in cases are"):
        config.load("chanel")
    with pytest.raises(ConfigError, match="does not exist"):
        config.load(str(tmp_path / "missing.toml"))
    case_file = tmp_path / "mine.toml"
    case_file.write_text("[case]\nname = 'mine'\n[time]\nsteps = 3\n")
    assert config.load(str(case_file)).time.steps == 3


def test_replace_validates_again():
    case = config.load("poiseuille")
    assert case.replace("time", steps=5).time.steps == 5
    with pytest.raises(ConfigError, match=r"time\.steps"):
        case.replace("time", steps=0)


@pytest.mark.parametrize(
    "text, key",
    [
        ("[flow]\nviscosity = inf\n", "flow.viscosity"),
        ("[flow]\nforcing_value = nan\n", "flow.forcing_value"),
        ("[time]\ndt = inf\n", "time.dt"),
        ("[grid]\nlengths = [inf, 1.0, 1.0]\n", "grid.lengths"),
        ("[case]\nsolver = 'pressure'\n[pressure]\ntol = 0.0\n", "pressure.tol"),
    ],
)
def test_non_finite_and_degenerate_values_are_refused_before_computing(text, key):
    with pytest.raises(ConfigError, match=rf"'{key}' must be"):
        config.parse(text, "my_case.toml")


def test_too_few_cells_and_a_folder_as_case_file_are_named(tmp_path):
    with pytest.raises(ConfigError, match=r"'grid\.cells' must be at least 2 cells in y"):
        config.parse("[grid]\ncells = [1, 1, 1]\n")
    with pytest.raises(ConfigError, match="is a folder, not a TOML file"):
        config.load(str(tmp_path))


def test_the_solver_is_named_by_the_case_and_checked():
    assert config.load("pressure-box").case.solver == "pressure"
    expected = r"'case\.solver' must be one of \['compressible', 'cylindrical', 'incompressible'"
    with pytest.raises(ConfigError, match=expected):
        config.parse("[case]\nsolver = 'lbm'\n")


@pytest.mark.parametrize(
    "text, message",
    [
        ('[[observer]]\nposition = [1.0, 0.0, 0.0]\ncolour = "red"\n', r"'observer\.colour'"),
        (
            'permeable = "no"\n[[observer]]\nposition = [1.0, 0.0, 0.0]\n',
            "'permeable' must be bool",
        ),
        ('c0 = "fast"\n[[observer]]\nposition = [1.0, 0.0, 0.0]\n', "'c0' must be float"),
        ("[arc]\nradius = 2.0\nplane = 'ab'\n", r"'arc\.plane' must be one of"),
        ("[arc]\nradius = 2.0\nspokes = 3\n", r"unknown key 'arc\.spokes'"),
        ("samples = 4\n[arc]\nradius = 2.0\n", "'samples' must be >= 8"),
        ("time_order = 3\n[arc]\nradius = 2.0\n", r"'time_order' must be one of \(2, 4\)"),
        ("interpolation = 'spline'\n[arc]\nradius = 2.0\n", "'interpolation' must be one of"),
        ("c0 = 340.0\n", "at least one"),
    ],
)
def test_observers_files_are_read_as_strictly_as_case_files(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_observers(text, "observers.toml")


def test_observers_files_and_the_acoustics_section_share_their_defaults():
    observers = parse_observers("[[observer]]\nposition = [1, 2, 3]\n", "o.toml")
    section = AcousticsSection()
    assert (observers.c0, observers.rho0, observers.samples) == (
        section.c0, section.rho0, section.samples,
    )
    assert observers.observer[0].position == (1.0, 2.0, 3.0) and not observers.permeable
    assert (observers.time_order, observers.interpolation) == (4, "cubic")
    assert (section.time_order, section.interpolation) == (4, "cubic")


@pytest.mark.parametrize(
    "text, message",
    [
        ("[acoustics]\ntime_order = 6\n", r"'acoustics\.time_order' must be one of \(2, 4\)"),
        ("[acoustics]\ntime_order = 'high'\n", r"'acoustics\.time_order' must be one of"),
        ("[acoustics]\ninterpolation = 'spline'\n", r"'acoustics\.interpolation' must be one"),
        ("[acoustics]\nderivative_order = 4\n", r"unknown key 'acoustics\.derivative_order'"),
    ],
)
def test_the_fwh_scheme_keys_are_checked_even_with_acoustics_off(text, message):
    with pytest.raises(ConfigError, match=message):
        config.parse(text, "case.toml")
    second = config.parse("[acoustics]\ntime_order = 2\ninterpolation = 'linear'\n")
    assert (second.acoustics.time_order, second.acoustics.interpolation) == (2, "linear")
    # The parser's choices are the solver's.
    from tachyflow.acoustics import fwh
    from tachyflow.numerics import fwh_kernels

    hints = typing.get_type_hints(AcousticsSection)
    assert typing.get_args(hints["interpolation"]) == fwh.INTERPOLATIONS
    assert typing.get_args(hints["time_order"]) == fwh_kernels.DERIVATIVE_ORDERS


def test_a_case_too_large_for_the_node_is_refused_before_allocating(monkeypatch):
    from tachyflow import simulation
    from tachyflow.solvers.pencil.incompressible import IncompressibleSolver

    monkeypatch.setattr(runtime, "available_memory", lambda: 8 * 2**30)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    fits = config.parse("[grid]\ncells = [64, 64, 64]\n", "small.toml")
    simulation._check_memory(IncompressibleSolver, fits, 2)
    spread = config.parse("[grid]\ncells = [512, 512, 512]\n", "big.toml")
    with pytest.raises(ConfigError, match=r"need about .* GiB on each of 1 rank.*, 4 ranks"):
        simulation._check_memory(IncompressibleSolver, spread, 1)
    # Rank 0 gathers no whole field, so even 4096³ fits on enough such nodes.
    huge = config.parse("[grid]\ncells = [4096, 4096, 4096]\n", "huge.toml")
    with pytest.raises(ConfigError, match=r"on nodes like this one \(2 cores\), 2048 ranks"):
        simulation._check_memory(IncompressibleSolver, huge, 4)
    monkeypatch.setattr(runtime, "available_memory", lambda: 2**29)  # less than 2 ranks
    with pytest.raises(ConfigError, match="no rank count fits on nodes like this one"):
        simulation._check_memory(IncompressibleSolver, fits, 2)


def test_slip_walls_need_walls_and_the_incompressible_solver():
    slip = config.parse('[grid]\nwalls = true\nwall_condition = "slip"\n')
    assert slip.grid.wall_condition == "slip"
    for text in (
        '[grid]\nwall_condition = "slip"\n',  # no walls
        '[grid]\nwalls = true\nwall_condition = "free"\n',
    ):
        with pytest.raises(ConfigError, match=r"grid\.wall_condition"):
            config.parse(text)
    # The cylindrical solver's [grid] has no walls: its outer wall is [cylinder] outer_wall.
    with pytest.raises(ConfigError, match=r"unknown key 'grid\.walls'"):
        config.parse('[case]\nsolver = "cylindrical"\n[grid]\nwalls = true\n')


def test_set_overrides_are_typed_and_checked_like_the_file():
    case = config.load("naca0012", ["compressible.alpha=4", "time.steps=20", "case.name=polar"])
    assert (case.compressible.alpha, case.time.steps, case.case.name) == (4.0, 20, "polar")
    assert config.parse(case.to_toml()) == case  # the run's config.toml records them
    for override, message in (
        ("compressible.alfa=4", r"unknown key 'compressible\.alfa'"),
        ("compressible.alpha=fast", r"'compressible\.alpha' must be float, got 'fast'"),
        ("time.steps=0", r"'time\.steps' must be a positive integer"),
        ("grid.cells=[4, 4, 4]", r"unknown section \[grid\] \(solver 'compressible'"),
        ("steps=3", r"--set 'steps=3' must be SECTION\.KEY=VALUE"),
    ):
        with pytest.raises(ConfigError, match=message) as error:
            config.load("naca0012", [override])
        assert str(error.value).startswith("naca0012 (built-in): ")


@pytest.mark.parametrize(("case", "override", "key"), [
    ("channel", "grid.lengths=[1e-300, 2.0, 3.14]", r"grid\.lengths\[0\] / cells\[0\]"),
    ("pipe", "cylinder.length=1e-300", r"cylinder\.length / cells\[0\]"),
])
def test_cells_whose_spacings_lose_every_digit_are_refused(case, override, key):
    """A length of 1e-300 ran to NaN at step 0 (issue 45): refused naming the option."""
    with pytest.raises(ConfigError, match=f"'{key}' must be cells at most 1e\\+08 times"):
        config.load(case, [override])
