"""The job dies with its launcher: signals to `tachyflow ... -n N` reach every rank."""

import os
import signal
import subprocess
import sys
import time

import pytest


def launch(folder):
    environment = dict(os.environ)
    for name in ("PMI_SIZE", "PMI_RANK", "PMI_FD", "PMI_PORT", "_PYTEST_MPI_CHILD_PROCESS"):
        environment.pop(name, None)
    return subprocess.Popen(
        [sys.executable, "-m", "tachyflow", "run", "taylor-green", "-n", "2",
         "--steps", "1000000", "-o", str(folder)],
        env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip


def processes_writing(folder) -> list[str]:
    found = subprocess.run(["pgrep", "-f", str(folder)], capture_output=True, text=True)
    return found.stdout.split()


def wait_until(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGKILL])
def test_killing_the_launcher_ends_the_whole_job(tmp_path, number):
    folder = tmp_path / f"run-{number.name}"
    launcher = launch(folder)
    try:
        assert wait_until(lambda: (folder / "log.txt").exists(), 60), "the run never started"
        assert len(processes_writing(folder)) >= 3  # launcher, mpiexec, ranks
        os.kill(launcher.pid, number)
        assert wait_until(lambda: not processes_writing(folder), 20), processes_writing(folder)
    finally:
        if processes_writing(folder):  # the test failed: leave nothing running
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait(timeout=10)
