"""How `tachyflow run -n 2` ends when the case cannot give everything it asks for: a
normal end with a note, or one line and exit 2 for bad input, never MPI's abort banner."""

from tests.cli.test_cli import tachyflow
from tests.parallel.test_acoustics_restart import FAN_NOISE


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
