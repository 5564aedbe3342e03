"""Immersed bodies from a case file: ``[[immersed.body]]`` tables, ``forces.csv`` and its
plot, restarts, and clear errors for bad bodies."""

import csv
import shutil

import pytest

from tests.cli.test_cli import tachyflow

COUETTE = """
[case]
name = "couette-immersed"
solver = "incompressible"
[grid]
cells = [32, 32, 1]
lengths = [2.6, 2.6, 0.08125]
[flow]
viscosity = 0.1
initial = "rest"
[time]
steps = {steps}
[output]
checkpoint_every = 20
[immersed]
forces_every = 10
[[immersed.body]]
name = "rotor"
shape = "cylinder"
centre = [1.3, 1.3, 0.0]
radius = 0.5
angular_velocity = 1.0
rotation_axis = [0, 0, 1]
rotation_centre = [1.3, 1.3, 0.0]
[[immersed.body]]
name = "{second}"
shape = "{shape}"
centre = [1.3, 1.3, 0.0]
radius = 1.0
hollow = true
"""


def rows(path):
    with path.open(newline="") as table:
        return list(csv.DictReader(table))


def test_a_case_with_bodies_writes_their_loads_and_restarts(tmp_path):
    case = tmp_path / "couette.toml"
    case.write_text(COUETTE.format(steps=40, second="stator", shape="cylinder"))
    whole, halves = tmp_path / "whole", tmp_path / "halves"
    result = tachyflow("run", str(case), "-n", "2", "-o", str(whole), timeout=180)
    assert result.returncode == 0, result.stderr
    # The finished run's folder goes on again from its step-20 checkpoint, on 3 ranks: the
    # rows after it are written anew.
    shutil.copytree(whole, halves)
    checkpoint = halves / "checkpoints" / "step_00000020.ckpt"
    result = tachyflow("run", str(case), "-n", "3", "--restart", str(checkpoint),
                       "-o", str(halves), timeout=180)
    assert result.returncode == 0, result.stderr
    table = rows(whole / "forces.csv")
    assert [int(row["step"]) for row in table] == [10, 20, 30, 40]
    assert {"rotor_Mz", "stator_Mz", "rotor_Fx"} <= set(table[0])
    # The fluid drags on the turning rotor (negative torque) and drives the stator.
    assert float(table[-1]["rotor_Mz"]) < 0 < float(table[-1]["stator_Mz"])
    assert (whole / "images" / "forces.png").is_file()
    restarted = rows(halves / "forces.csv")
    assert [row["step"] for row in restarted] == [row["step"] for row in table]
    assert float(restarted[-1]["rotor_Mz"]) == pytest.approx(float(table[-1]["rotor_Mz"]), 1e-9)


@pytest.mark.parametrize(
    "second, shape, message",
    [
        ("stator", "cube", "immersed.body 'stator' shape' must be one of"),
        ("rotor", "cylinder", "bodies with distinct names"),
    ],
)
def test_bad_bodies_are_named_in_one_line(tmp_path, second, shape, message):
    case = tmp_path / "bad.toml"
    case.write_text(COUETTE.format(steps=2, second=second, shape=shape))
    result = tachyflow("run", str(case), "-o", str(tmp_path / "out"), timeout=60)
    assert result.returncode == 2
    assert message in result.stderr


def test_the_axial_fan_case_writes_its_performance(tmp_path):
    from importlib import resources

    text = (resources.files("tachyflow") / "cases" / "axial-fan.toml").read_text()
    assert "start_step = 400" in text
    case = tmp_path / "fan.toml"  # the noise record from step 10 of 60
    case.write_text(text.replace("start_step = 400", "start_step = 10"))
    output = tmp_path / "fan"
    result = tachyflow("run", str(case), "-n", "2", "--steps", "60", "-o", str(output),
                       timeout=300)
    assert result.returncode == 0, result.stderr
    import json

    performance = json.loads((output / "fan.json").read_text())
    assert performance["flow_coefficient"] == pytest.approx(0.25)
    assert performance["blade_passing_frequency"] == pytest.approx(5 * 4 / (2 * 3.141592653589793))
    assert performance["torque"] > 0  # the motor drives the rotor
    table = rows(output / "forces.csv")
    assert [int(row["step"]) for row in table] == list(range(2, 61, 2))
    assert {"thrust", "torque", "pressure_rise", "rotor_Mx"} <= set(table[0])
    assert (output / "images" / "fan.png").is_file()
    noise = json.loads((output / "acoustics" / "summary.json").read_text())
    assert noise["window"][0] > 10 * 0.004  # it began at step 10
    assert set(noise["observers"]) == {"observer-0", "observer-1", "observer-2"}
    assert noise["blade_passing_frequency"] == pytest.approx(
        performance["blade_passing_frequency"]
    )
    assert (output / "acoustics" / "signals.csv").is_file()
    # Restarted from its last checkpoint, with no step left to take: the same performance
    # (the records travel in the checkpoint; this ended in IndexError, issue 45).
    result = tachyflow("run", str(case), "-n", "2", "--steps", "60", "--restart",
                       str(output / "checkpoints" / "step_00000060.ckpt"), "-o", str(output),
                       timeout=300)
    assert result.returncode == 0, result.stderr
    again = json.loads((output / "fan.json").read_text())
    assert again.pop("units") == performance.pop("units") == "non-dimensional"
    assert again == pytest.approx(performance, rel=1e-12)


def test_the_fau_fan_case_reports_its_performance_in_si_units(tmp_path):
    """``fan-fau`` on a small grid: the designed rotor runs on 2 ranks and ``fan.json``
    has the flow rate, pressure rises, torque, power and efficiencies in SI units."""
    import json
    import math

    output = tmp_path / "fau"
    result = tachyflow("run", "fan-fau", "-n", "2", "--steps", "10", "--set",
                       "grid.cells=[32, 16, 12]", "--set", "grid.x_zone_cells=16",
                       "-o", str(output), timeout=300)
    assert result.returncode == 0, result.stderr
    fan = json.loads((output / "fan.json").read_text())
    assert fan["flow_rate"] == pytest.approx(9.444 * math.pi * (0.25**2 - 0.12375**2))
    assert fan["blade_passing_frequency"] == pytest.approx(222.9, abs=0.05)
    assert fan["units"] == "SI"
    assert fan["density"] == 1.2
    assert fan["power"] == pytest.approx(fan["torque"] * 155.6136, rel=1e-12)
    assert fan["efficiency_ts"] == pytest.approx(
        fan["flow_rate"] * fan["total_to_static"] / fan["power"], rel=1e-9)
    assert fan["torque"] > 0  # the motor drives the rotor
    assert "total_to_static" in rows(output / "forces.csv")[0]
    # The monitor line shows the fan's own quantities beside the solver's.
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("step 10/10")]
    assert " dp_ts=" in line and " power=" in line


@pytest.mark.parametrize(
    "change, message",
    [
        (('x_boundaries = "inflow-outflow"', 'x_boundaries = "periodic"'),
         "'grid.x_boundaries' must be \"inflow-outflow\" with a fan"),
        (("blades = 5", "blades = 7"), "'fan.blades' must be a positive multiple"),
        (("position = 1.0", "position = 2.0"), "'fan.pressure_planes' must be one plane up-"),
        (("thickness = 0.08", 'thickness = 0.08\nsection = "naca66"'),
         "'fan.section' must be one of ['naca4', 'naca65'], got 'naca66'"),
    ],
)
def test_a_bad_fan_is_named_in_one_line(tmp_path, change, message):
    from importlib import resources

    text = (resources.files("tachyflow") / "cases" / "axial-fan.toml").read_text()
    assert change[0] in text
    case = tmp_path / "fan.toml"
    case.write_text(text.replace(change[0], change[1]).replace(
        'initial = "inflow"', 'initial = "rest"'))
    result = tachyflow("run", str(case), "-o", str(tmp_path / "out"), timeout=60)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr


def test_bench_fan_times_the_step_and_each_way_of_moving_the_noise_sources(tmp_path):
    result = tachyflow("bench", "fan", "-n", "2", "--grid", "24", "12", "12", "--repeats",
                       "2", "-o", str(tmp_path), timeout=240)
    assert result.returncode == 0, result.stderr
    import json

    (path,) = tmp_path.glob("fan_*.json")
    document = json.loads(path.read_text())
    names = {entry["name"]: entry for entry in document["results"] + document["peers"]}
    for method in ("two-sided", "put", "aggregated-put", "source-put"):
        assert names[f"tachyflow-fan-noise-{method}"]["verified"]
        phases = document["model"]["noise_phases_per_sample"][method]
        assert set(phases) == {"pack", "communication", "unpack", "source", "integration"}
    assert document["model"]["step_seconds"] > 0
