"""How `tachyflow run -n 2` ends when the case cannot give everything it asks for: a
normal end with a note, or one line and exit 2 for bad input, never MPI's abort banner."""

import os
import time
from pathlib import Path

import pytest

from tests.cli.test_cli import tachyflow
from tests.parallel.test_acoustics_restart import FAN_NOISE

HERE = Path(__file__).parent


def test_a_run_ending_before_the_acoustics_record_starts_ends_normally(tmp_path):
    case = tmp_path / "fan.toml"
    case.write_text(FAN_NOISE)
    result = tachyflow("run", str(case), "-n", "2", "--steps", "3", "-o", str(tmp_path / "out"),
                       "--fft-planning", "estimate")
    assert result.returncode == 0, result.stderr
    note = "acoustics: no record made: the run ended at step 3, before acoustics.start_step = 6"
    assert note in result.stdout
    assert note in (tmp_path / "out" / "log.txt").read_text()
    assert "error" not in result.stderr.lower(), result.stderr


def failing(*arguments):
    """``tachyflow fail-on ...`` (the plug-in of ``failing_plugin``)."""
    return tachyflow("fail-on", *arguments, timeout=60, env={
        "TACHYFLOW_PLUGINS": "failing_plugin",
        "PYTHONPATH": os.pathsep.join([str(HERE), *filter(None, [os.environ.get("PYTHONPATH")])]),
    })


def error_lines(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()]


def test_a_typo_in_the_case_file_ends_every_rank_with_one_line(tmp_path):
    case = tmp_path / "typo.toml"
    case.write_text("[flow]\nviscosty = 0.1\n")
    for _ in range(3):  # the abort banner came in about one run of three
        result = tachyflow("run", str(case), "-n", "2", "-o", str(tmp_path / "out"), timeout=60)
        assert result.returncode == 2, result.stderr
        assert error_lines(result) == [
            f"tachyflow: error: ConfigError: {case}: unknown key 'flow.viscosty' (known: "
            "forcing, forcing_value, initial, perturbation, seed, viscosity)"
        ], result.stderr


def test_an_acoustics_record_too_short_ends_every_rank_with_one_line(tmp_path):
    case = tmp_path / "fan.toml"
    case.write_text(FAN_NOISE.replace("c0 = 40.0", "c0 = 8.0"))
    result = tachyflow("run", str(case), "-n", "2", "-o", str(tmp_path / "out"),
                       "--fft-planning", "estimate")
    assert result.returncode == 2, result.stderr
    lines = error_lines(result)
    assert len(lines) == 1 and lines[0].startswith(
        "tachyflow: error: ConfigError: acoustics: the record (0.24 of simulated time) is "
        "shorter than the spread of arrival times"), result.stderr


@pytest.mark.parametrize(("error", "code"), [("config", 2), ("runtime", 1)])
def test_an_error_on_every_rank_is_one_line_without_mpi_abort(error, code):
    result = failing("-n", "3", "0", "1", "2", "--error", error)
    assert result.returncode == code, result.stderr
    assert error_lines(result) == [
        f"tachyflow: error: {'ConfigError' if code == 2 else 'RuntimeError'}: {error} error on "
        "the ranks [0, 1, 2]"
    ], result.stderr


def test_an_error_on_one_rank_still_aborts_the_job_quickly():
    started = time.monotonic()
    result = failing("-n", "3", "1", "--error", "runtime")
    assert result.returncode != 0
    assert "tachyflow: error on rank 1: RuntimeError: runtime error on the ranks [1]" in (
        result.stderr)
    assert time.monotonic() - started < 30
