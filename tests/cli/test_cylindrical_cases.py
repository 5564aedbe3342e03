"""The cylindrical solver's built-in cases run as every case does, and restart on another
rank count."""

import json

import pytest

from tests.cli.test_cli import tachyflow


@pytest.mark.parametrize("case", ["pipe", "taylor-couette", "rotating-pipe"])
def test_a_cylindrical_case_runs_and_writes_its_statistics(tmp_path, case):
    output = tmp_path / case
    result = tachyflow("run", case, "-n", "2", "--steps", "4", "-o", str(output), timeout=180)
    assert result.returncode == 0, result.stderr
    header, *rows = (output / "stats.csv").read_text().splitlines()
    assert header.split(",")[:4] == ["step", "time", "dt", "cfl"]
    assert {"bulk_velocity", "wall_shear", "outer_torque"} <= set(header.split(","))
    assert rows[-1].split(",")[0] == "4"
    timings = json.loads((output / "timings.json").read_text())
    assert timings["final_statistics"]["max_divergence"] < 1e-10


def test_a_pipe_written_on_two_ranks_continues_on_three(tmp_path):
    output = tmp_path / "pipe"
    first = tachyflow("run", "pipe", "-n", "2", "--steps", "3", "-o", str(output), timeout=180)
    assert first.returncode == 0, first.stderr
    again = tachyflow(
        "run", "pipe", "-n", "3", "--steps", "5", "--restart", "latest", "-o", str(output),
        timeout=180,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    timings = json.loads((output / "timings.json").read_text())
    assert timings["final_step"] == 5 and timings["ranks"] == 3
