"""The live monitor: a line per statistics record on the run's output while it goes, as
plain flushed lines when piped (a batch job) and above the progress bar on a terminal."""

import os
import pty
import select
import subprocess
import sys
import time

from tests.processes import command_environment

RUN = [sys.executable, "-m", "tachyflow", "run", "taylor-green", "--set", "time.steps=60",
       "--set", "output.statistics_every=10", "--set", "grid.cells=[16, 16, 16]",
       "--fft-planning", "estimate"]


def test_monitor_lines_come_while_a_piped_run_goes(tmp_path):
    process = subprocess.Popen([*RUN, "-o", str(tmp_path / "run")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=command_environment())
    try:
        first = process.stdout.readline()
        running = process.poll() is None  # the line came before the run ended
        rest, errors = process.communicate(timeout=120)
    finally:
        process.kill()
    assert process.returncode == 0, errors
    assert first.startswith("step 10/60 t=") and "kinetic_energy=" in first and "ETA" in first
    assert running
    lines = [first, *rest.splitlines()]
    assert [line.split()[1] for line in lines if line.startswith("step ")] == [
        f"{step}/60" for step in range(10, 70, 10)
    ]
    assert "wall_shear" not in first  # a quantity this case has not is not shown


def test_monitor_lines_show_on_a_terminal_and_quiet_silences_them(tmp_path):
    def on_terminal(*extra):
        leader, follower = pty.openpty()
        process = subprocess.Popen([*RUN, *extra], stdout=follower, stderr=follower,
                                   env=command_environment(), close_fds=True)
        os.close(follower)
        output, deadline = b"", time.monotonic() + 120
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the terminal closed: the run ended
                    break
                if not chunk:
                    break
                output += chunk
            elif process.poll() is not None:
                break
        process.wait(timeout=30)
        os.close(leader)
        return process.returncode, output.decode(errors="replace")

    code, shown = on_terminal("-o", str(tmp_path / "tty"))
    assert code == 0, shown
    assert "step 10/60 t=" in shown and "step 60/60 t=" in shown
    code, quiet = on_terminal("-o", str(tmp_path / "quiet"), "--quiet")
    assert code == 0, quiet
    assert "step 10/60 t=" not in quiet
    assert "kinetic_energy=" in (tmp_path / "quiet" / "log.txt").read_text()
