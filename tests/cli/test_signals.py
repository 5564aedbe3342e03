"""The job dies with its launcher: signals to `tachyflow ... -n N` reach every rank."""

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.processes import command_environment, interruptible

# One trial in `make test`; ten more, for the races a single trial misses, in test-slow.
TRIALS = [0, *(pytest.param(n, marks=pytest.mark.slow) for n in range(1, 11))]


def launch(folder, stderr=subprocess.DEVNULL):
    """A long Taylor-Green run on 2 ranks writing into ``folder``, in a session of its own."""
    return subprocess.Popen(
        [sys.executable, "-m", "tachyflow", "run", "taylor-green", "-n", "2",
         "--steps", "1000000", "-o", str(folder)],
        env=command_environment(), stdout=subprocess.DEVNULL, stderr=stderr, text=True,
        start_new_session=True, preexec_fn=interruptible,
    )


def processes_writing(folder) -> list[str]:
    found = subprocess.run(["pgrep", "-f", str(folder)], capture_output=True, text=True)
    return found.stdout.split()


def stepping(folder) -> bool:
    """Whether the run has written a row of statistics: its kernels are compiled (a cold
    numba cache compiles them in the first step, which a stop request must wait for)."""
    try:
        return len((folder / "stats.csv").read_text().splitlines()) >= 2
    except FileNotFoundError:
        return False


def wait_until(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("trial", TRIALS)
@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGKILL])
def test_killing_the_launcher_ends_the_whole_job(tmp_path, number, trial):
    folder = tmp_path / f"run-{number.name}-{trial}"
    launcher = launch(folder)
    try:
        assert wait_until(lambda: stepping(folder), 90), "the run never started"
        assert len(processes_writing(folder)) >= 3  # launcher, mpiexec, ranks
        os.kill(launcher.pid, number)
        assert wait_until(lambda: not processes_writing(folder), 60), processes_writing(folder)
    finally:
        if processes_writing(folder):  # the test failed: leave nothing running
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait(timeout=10)


@pytest.mark.parametrize("trial", TRIALS)
@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_ends_every_rank_cleanly_at_the_end_of_a_step(tmp_path, number, trial):
    """SIGTERM (a batch system's warning) writes a checkpoint first; SIGINT just stops."""
    folder = tmp_path / "run"
    launcher = launch(folder, stderr=subprocess.PIPE)
    try:
        assert wait_until(lambda: stepping(folder), 90), "the run never started"
        os.kill(launcher.pid, number)
        _, errors = launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
    assert launcher.returncode == 128 + number, errors
    lines = [line for line in errors.splitlines() if line.startswith("tachyflow:")]
    assert len(lines) == 1 and f"stopped by {number.name} after step" in lines[0], errors
    step = int(lines[0].split("after step ")[1].split(";")[0])
    written = (folder / "checkpoints" / f"step_{step:08d}.ckpt").exists()
    assert written == (number == signal.SIGTERM)
    assert not processes_writing(folder)
