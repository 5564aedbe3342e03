"""``tachyflow sweep``: every combination of some values, each an ordinary run; killed and
started again it runs only the points left and gives the same ``sweep.csv``."""

import csv
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.cli.test_cli import tachyflow
from tests.processes import command_environment

SWEEP = ["sweep", "taylor-green", "--vary", "flow.viscosity=0.01,0.02,0.04",
         "--set", "time.steps=12", "--set", "grid.cells=[12, 12, 12]",
         "--set", "output.statistics_every=6", "--plot", "kinetic_energy"]
POINTS = ("viscosity=0.01", "viscosity=0.02", "viscosity=0.04")


def table(folder):
    with (folder / "sweep.csv").open(newline="") as rows:
        return list(csv.DictReader(rows))


def test_a_killed_sweep_goes_on_with_the_points_left(tmp_path):
    whole = tmp_path / "whole"
    result = tachyflow(*SWEEP, "-o", str(whole), timeout=300)
    assert result.returncode == 0, result.stderr
    expected = table(whole)
    assert [row["flow.viscosity"] for row in expected] == ["0.01", "0.02", "0.04"]
    assert (whole / "sweep.png").is_file()
    assert all((whole / point / "config.toml").is_file() for point in POINTS)
    # Plotted against a result instead of the varied key (every point done: nothing runs).
    (whole / "sweep.png").unlink()
    against = tachyflow(*SWEEP, "--against", "time", "-o", str(whole), timeout=120)
    assert against.returncode == 0, against.stderr
    assert (whole / "sweep.png").is_file()
    unknown = tachyflow(*SWEEP, "--against", "no_such_result", "-o", str(whole), timeout=120)
    assert unknown.returncode == 2
    assert "--against no_such_result: no such result at point(s) [1, 2, 3]" in unknown.stderr

    cut = tmp_path / "cut"
    process = subprocess.Popen([sys.executable, "-m", "tachyflow", *SWEEP, "-o", str(cut)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=command_environment(), start_new_session=True)
    deadline = time.monotonic() + 240
    while not (cut / POINTS[1] / "timings.json").is_file():
        assert process.poll() is None and time.monotonic() < deadline, "no second point"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the sweep and the third point's run
    process.wait()
    finished = {point: (cut / point / "timings.json").stat().st_mtime for point in POINTS[:2]}
    resumed = tachyflow(*SWEEP, "-o", str(cut), timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{POINTS[0]} (done)" in resumed.stdout and f"{POINTS[1]} (done)" in resumed.stdout
    assert {point: (cut / point / "timings.json").stat().st_mtime for point in POINTS[:2]} \
        == finished
    rows = table(cut)
    assert [list(row) for row in rows] == [list(row) for row in expected]
    for row, reference in zip(rows, expected, strict=True):
        for key, value in reference.items():
            if value and value != "nan":
                assert float(row[key]) == pytest.approx(float(value), rel=1e-9), key


def test_bad_variations_are_refused_before_anything_runs(tmp_path):
    result = tachyflow("sweep", "taylor-green", "--vary", "viscosity", "-o", str(tmp_path))
    assert result.returncode == 2 and "must be SECTION.KEY=V1,V2" in result.stderr
    result = tachyflow("sweep", "taylor-green", "--vary", "flow.viscosity=0.01,-1",
                       "-o", str(tmp_path / "bad"))
    assert result.returncode == 2 and "'flow.viscosity' must be positive" in result.stderr
    assert not (tmp_path / "bad" / "viscosity=0.01").exists()
