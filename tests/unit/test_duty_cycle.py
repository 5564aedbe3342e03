"""Visualisation in windows: which steps are active, and the cost measured within a run."""

import pytest

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.insitu.duty_cycle import DutyCycle, overhead_at_cadence


def test_pipelines_are_due_only_in_the_first_steps_of_each_cycle():
    cycle = DutyCycle(3, 2)
    assert [step for step in range(1, 13) if cycle.active(step)] == [1, 2, 3, 6, 7, 8, 11, 12]


def feed(cycle: DutyCycle, steps: int, every: int, quiet: float, cost: float) -> None:
    """Iterations of ``quiet`` seconds; an output every ``every`` steps in the windows
    costs ``cost`` more, in the iteration after it."""
    now = 0.0
    for step in range(1, steps + 1):
        outputs = int(cycle.active(step) and step % every == 0)
        cycle.iteration_ended(step, now, bool(outputs))
        now += quiet + cost * outputs


def test_the_cost_of_outputs_is_found_against_the_quiet_steps():
    cycle = DutyCycle(8, 8)
    feed(cycle, 16 * 5, every=2, quiet=0.04, cost=0.01)
    summary = cycle.summary()
    # Five cycles, the first left out (it holds the first output).
    assert len(summary["output_cost"]) == 4
    assert summary["output_cost"] == pytest.approx([0.01] * 4)
    assert summary["quiet_iteration"] == pytest.approx([0.04] * 4)
    # An output every 2 steps at 10 ms each on 40 ms iterations: +12.5 % per iteration.
    assert overhead_at_cadence(summary, 2) == pytest.approx([0.125] * 4)


def test_what_spills_past_the_window_counts_with_it():
    cycle = DutyCycle(4, 8)
    now = 0.0
    for step in range(1, 12 * 4 + 2):
        position = (step - 1) % 12
        outputs = int(position < 4)
        cycle.iteration_ended(step, now, bool(outputs))
        # Each output costs 10 ms at once and slows the two steps after the window by 5 ms
        # (a reader still drawing): 10 + 2 * 5 / 4 = 12.5 ms per output.
        now += 0.04 + 0.01 * outputs + (0.005 if position in (4, 5) else 0.0)
    assert cycle.summary()["output_cost"] == pytest.approx([0.0125] * 3)


def test_bad_windows_are_refused():
    for on, off in ((0, 4), (4, 0), (-1, 2)):
        with pytest.raises(ValueError, match="positive step count"):
            DutyCycle(on, off)
    with pytest.raises(TypeError, match="step count"):
        DutyCycle(2.5, 2)
    case = config.load("taylor-green")
    for windows in ((0, 5), (5, 0), (-2, -2)):
        with pytest.raises(ConfigError, match=r"insitu\.duty_cycle"):
            case.replace("insitu", duty_cycle=windows)
    assert case.replace("insitu", duty_cycle=(40, 40)).insitu.duty_cycle == (40, 40)


def test_a_run_visualises_in_windows_and_reports_their_cost(tmp_path):
    import numpy as np
    from mpi4py import MPI

    from tachyflow.simulation import Simulation

    case = config.parse(
        """
[grid]
cells = [8, 8, 8]
[flow]
initial = "taylor-green"
[time]
steps = 13
dt = 0.05
[insitu]
duty_cycle = [2, 2]
[[insitu.pipeline]]
name = "probes"
kind = "probes"
field = "u"
points = [[1.0, 2.0, 3.0]]
every = 1
""",
        "windows.toml",
    )
    simulation = Simulation(case, tmp_path, MPI.COMM_SELF, planning="estimate")
    try:
        summary = simulation.run()
    finally:
        simulation.free()
    probes = np.loadtxt(tmp_path / "images" / "probes_probes.csv", delimiter=",", ndmin=2)
    assert probes[:, 0].tolist() == [1, 2, 5, 6, 9, 10, 13]
    windows = summary["visualisation"]["duty_cycle"]
    assert (windows["on"], windows["off"]) == (2, 2)
    # Cycles of steps 5-8 and 9-12 (the first holds the first output).
    assert len(windows["output_cost"]) == len(windows["quiet_iteration"]) == 2
    assert all(seconds > 0 for seconds in windows["quiet_iteration"])


def test_a_steady_drift_cancels():
    cycle = DutyCycle(4, 4)
    now = 0.0
    for step in range(1, 8 * 6 + 2):
        outputs = int(cycle.active(step) and step % 2 == 0)
        cycle.iteration_ended(step, now, bool(outputs))
        # Iterations slow down by 1 % a step; an output costs 10 ms.
        now += 0.04 * (1.0 + 0.01 * step) + 0.01 * outputs
    costs = cycle.summary()["output_cost"]
    assert len(costs) == 5
    # The active part sits between the quiet parts: what is left of the drift is its
    # curvature, none here.
    assert costs == pytest.approx([0.01] * 5, rel=1e-9)


def test_the_excess_is_found_step_by_step_after_each_output():
    from tachyflow.insitu.duty_cycle import excess_after_output

    cycle = DutyCycle(10, 6)
    now, lingering = 0.0, 0
    for step in range(1, 16 * 4 + 2):
        output = cycle.active(step) and step % 2 == 0
        cycle.iteration_ended(step, now, output)
        # An output's iteration takes 10 ms more, the one after it 4 ms (a reader drawing);
        # every other iteration, window or not, 5 ms more (statistics on the cadence).
        now += 0.04 + (0.01 if output else 0.0) + (0.004 if lingering else 0.0)
        now += 0.005 if step % 2 else 0.0
        lingering = output
    excess = excess_after_output(cycle.summary(), 2)
    # The quiet half: steps 14, 15 and 16 of each cycle, one with statistics.
    assert excess["quiet_iteration"] == pytest.approx(0.04 + 0.005 / 3)
    # Each place in the cadence against the quiet iterations at the same place.
    assert excess["by_offset"] == pytest.approx([0.01, 0.004])
    assert excess["overhead"] == pytest.approx(0.014 / (2 * (0.04 + 0.005 / 3)))
    # The window's last output lingers into the first of the three steps after it.
    assert excess["after_window"] == pytest.approx(0.004 / 3)
    with pytest.raises(ValueError, match="on and off must be at least 3"):
        excess_after_output({**cycle.summary(), "on": 14, "off": 2}, 2)


def test_outputs_must_fall_alike_in_every_window():
    from tachyflow.bench.insitu import run_insitu_benchmark
    from tachyflow.insitu.duty_cycle import excess_after_output

    cycle = DutyCycle(4, 3)
    feed(cycle, 7 * 4, every=2, quiet=0.04, cost=0.01)
    with pytest.raises(ValueError, match=r"every \(2\) must divide 7"):
        excess_after_output(cycle.summary(), 2)
    for steps, every in ((400, 3), (160, 5)):
        with pytest.raises(ValueError, match="with a duty cycle of 40 \\+ 40 steps"):
            run_insitu_benchmark(1, 16, steps, every, 1, duty_cycle=(40, 40))
    with pytest.raises(ValueError, match="on and off must be at least 9"):
        run_insitu_benchmark(1, 16, 400, 5, 1, duty_cycle=(32, 8))
    # A window too short for an output and the steps after it until the next.
    with pytest.raises(ValueError, match="on and off must be at least 9"):
        run_insitu_benchmark(1, 16, 400, 5, 1, duty_cycle=(5, 35))
