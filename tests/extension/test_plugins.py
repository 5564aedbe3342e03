"""Commands and observers registered from outside the package, as users extend tachyflow."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tachyflow import config, observers
from tachyflow.errors import ConfigError
from tachyflow.simulation import Simulation
from tests.processes import command_environment

HERE = Path(__file__).parent
CASE = """
[case]
name = "tiny"
[grid]
cells = [4, 4, 4]
lengths = [6.283185307179586, 6.283185307179586, 6.283185307179586]
[flow]
viscosity = 0.1
initial = "taylor-green"
[time]
steps = 7
dt = 0.01
[output]
statistics_every = 0
checkpoint_every = 0
images_every = 0
[observers.step-log]
every = 3
"""


def tachyflow(*arguments, cwd=None):
    environment = command_environment(TACHYFLOW_PLUGINS="plugin_example")
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(HERE), *filter(None, [environment.get("PYTHONPATH")])]
    )
    return subprocess.run(
        [sys.executable, "-m", "tachyflow", *arguments],
        capture_output=True, text=True, timeout=120, env=environment, cwd=cwd,
    )


def test_a_plug_in_command_has_help_and_runs():
    listed = tachyflow("--help")
    assert listed.returncode == 0 and "greet" in listed.stdout, listed.stderr
    helped = tachyflow("greet", "--help")
    assert helped.returncode == 0 and "--who" in helped.stdout
    ran = tachyflow("greet", "--who", "plug-ins")
    assert ran.returncode == 0 and ran.stdout.strip() == "hello plug-ins"


def test_a_plug_in_observer_runs_on_its_cadence(tmp_path):
    (tmp_path / "case.toml").write_text(CASE)
    result = tachyflow("run", "case.toml", "-o", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "out" / "steps.txt").read_text().split()
    assert lines == ["start", "0", "3", "6", "end"]
    assert "[observers.step-log]" in (tmp_path / "out" / "config.toml").read_text()


def test_an_unknown_plug_in_or_observer_is_refused(tmp_path):
    (tmp_path / "case.toml").write_text(CASE.replace("step-log", "step-logg"))
    result = tachyflow("run", "case.toml", "-o", "out", cwd=tmp_path)
    assert result.returncode == 2 and "[observers.step-logg]: no such observer" in result.stderr
    environment = dict(os.environ, TACHYFLOW_PLUGINS="no_such_plugin_module")
    missing = subprocess.run(
        [sys.executable, "-m", "tachyflow", "--help"], capture_output=True, text=True,
        env=environment, timeout=60,
    )
    assert missing.returncode == 2 and "no_such_plugin_module" in missing.stderr


def test_registering_a_taken_name_is_refused():
    class Clash(observers.Observer):
        name = "statistics"

    observers.registered()
    with pytest.raises(ValueError, match="already registered"):
        observers.register(Clash)


@pytest.mark.slow  # a long run (10 s): make test-slow
def test_statistics_and_log_cost_the_same_late_and_early_in_a_long_run(tmp_path, monkeypatch):
    """20,000 records: the last thousand cost no more than 1.5x the first (appended files)."""
    from tachyflow.observers.statistics import Statistics

    durations = []
    observe = Statistics.observe

    def timed(self, run):
        started = time.perf_counter()
        observe(self, run)
        durations.append(time.perf_counter() - started)

    monkeypatch.setattr(Statistics, "observe", timed)
    case = config.parse(
        CASE.replace("statistics_every = 0", "statistics_every = 1")
        .replace("steps = 7", "steps = 20000")
        .split("[observers.step-log]")[0]
    )
    simulation = Simulation(case, tmp_path, planning="estimate")
    # Time the writing alone: the solver's statistics are the same work every record.
    solver = simulation.solver
    monkeypatch.setattr(solver, "statistics", lambda: dict(FIXED, step=solver.steps))
    simulation.run()
    simulation.free()
    first, last = sum(sorted(durations[:1000])[:900]), sum(sorted(durations[-1000:])[:900])
    assert last < 1.5 * first, (first, last)
    assert len((tmp_path / "stats.csv").read_text().splitlines()) == 20001
    assert len((tmp_path / "log.txt").read_text().splitlines()) == 20002


FIXED = {
    "step": 0, "time": 0.0, "kinetic_energy": 1.0, "dissipation": 0.0, "bulk_velocity": 0.0,
    "max_divergence": 0.0, "pressure_gradient": 0.0,
}


def test_an_observers_table_must_be_a_table():
    with pytest.raises(ConfigError, match=r"\[observers\] holds only tables"):
        config.parse("[observers]\nstep-log = 3\n")


DECAY = """
[case]
name = "decay"
solver = "decay"
[decay]
rate = 2.0
scheme = "euler"
[time]
steps = 5
dt = 0.1
[output]
statistics_every = 1
"""


def test_a_plug_in_solver_reads_its_own_table(tmp_path):
    (tmp_path / "case.toml").write_text(DECAY)
    result = tachyflow("run", "case.toml", "-n", "2", "-o", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    last = (tmp_path / "out" / "stats.csv").read_text().split()[-1].split(",")
    assert float(last[-1]) == pytest.approx(0.8**5, rel=1e-12)
    written = (tmp_path / "out" / "config.toml").read_text()
    assert "[decay]" in written and "[grid]" not in written and "[flow]" not in written


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("[decay]\nrate = 2.0\nhalf_life = 1.0\n", r"unknown key 'decay\.half_life'"),
        ('[decay]\nscheme = "rk4"\n', r"'decay\.scheme' must be one of \('euler', 'exact'\)"),
        ("[decay]\nrate = -1.0\n", r"'decay\.rate' must be positive"),
        ('[decay]\nrate = 30.0\nscheme = "euler"\n', r"'time\.dt' must be < 2 / decay\.rate"),
        ("[grid]\ncells = [4, 4, 4]\n",
         r"unknown section \[grid\] \(solver 'decay' reads .*\[decay\]"),
        ("[statistics]\nevery = 1\n", r"\[statistics\] needs pencil-fields, which solver 'decay'"),
    ],
)
def test_a_plug_in_solver_s_options_are_checked_like_the_built_ins(tmp_path, extra, message):
    base = '[case]\nsolver = "decay"\n[time]\nsteps = 2\ndt = 0.1\n'
    (tmp_path / "case.toml").write_text(base + extra)
    result = tachyflow("run", "case.toml", "-o", "out", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert re.search(message, result.stderr), result.stderr


def test_a_plug_in_pipeline_kind_reads_its_own_keys(tmp_path):
    marker = (
        '[[insitu.pipeline]]\nname = "m"\nkind = "marker"\ntext = "hi"\nrepeat = 2\nevery = 3\n'
    )
    (tmp_path / "case.toml").write_text(CASE.replace("[observers.step-log]\nevery = 3\n", marker))
    result = tachyflow("run", "case.toml", "-o", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (written,) = (tmp_path / "out").rglob("marker_m.txt")
    assert written.read_text().split("\n")[:2] == ["hi hi 3", "hi hi 6"]
    # Its keys are its own: a slice's key is unknown to it, and its own are checked.
    for bad, expected in (('plane = "xy"\n', r"unknown key 'insitu\.pipeline\.plane'"),
                          ("repeat = 0\n", r"'insitu\.pipeline\.repeat' must be >= 1")):
        (tmp_path / "bad.toml").write_text(
            CASE.replace("[observers.step-log]\nevery = 3\n", marker.replace("repeat = 2\n", bad))
        )
        refused = tachyflow("run", "bad.toml", "-o", "bad", cwd=tmp_path)
        assert refused.returncode == 2 and re.search(expected, refused.stderr), refused.stderr
