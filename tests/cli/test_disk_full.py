"""A disk that fills during a 2-rank run: every rank stops together with one line naming
the file and the errno. A checkpoint keeps the last whole one (it hung before: MPI-IO
reported the full disk on one rank, which left the collective writes); images, statistics
and the log, written by rank 0, ended the job through MPI_Abort with no file named."""

import os
import re
import subprocess
import time

import pytest

from tests.cli.test_cli import tachyflow
from tests.parallel.test_acoustics_restart import SPHERE_NOISE

# 24³ cells: a checkpoint of 447 kB, two of them fit on a 1 MiB disk, not a third.
SMALL = ("--set", "grid.cells=[24,24,24]", "--set", "output.checkpoint_every=5",
         "--set", "output.fields_every=0", "--fft-planning", "estimate")


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs mounted for the test (root only), unmounted after it."""
    folder = tmp_path / "disk"
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def test_a_full_disk_during_a_checkpoint_ends_every_rank_keeping_the_last_one(
    small_disk, tmp_path
):
    output = small_disk / "out"
    started = time.monotonic()
    result = tachyflow("run", "taylor-green", "-n", "2", "--steps", "20", "-o", str(output),
                       *SMALL, timeout=120)
    assert time.monotonic() - started < 100
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    folder = output / "checkpoints"
    assert lines == [
        f"tachyflow: error (on rank 0): OSError: [Errno 28] cannot write "
        f"{folder / '.step_00000015.ckpt.partial'}: No space left on device; checkpoint "
        f"step_00000015.ckpt not written, the newest whole one kept: "
        f"{folder / 'step_00000010.ckpt'}"
    ], result.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["step_00000005.ckpt",
                                                       "step_00000010.ckpt"]
    again = tachyflow("run", "taylor-green", "--steps", "11", "-o", str(tmp_path / "again"),
                      "--restart", str(folder / "step_00000010.ckpt"), *SMALL)
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize(
    ("room", "outputs", "written"),
    [
        (147456, ("output.images_every=1",), r"images/u_step_\d{8}\.png"),
        (16384, ("output.images_every=0", "output.statistics_every=1"), r"(stats\.csv|log\.txt)"),
    ],
    ids=["images", "statistics"],
)
def test_a_full_disk_under_rank_0s_outputs_ends_every_rank_in_one_line(
    small_disk, room, outputs, written
):
    """The disk is filled but for ``room`` bytes before the run."""
    free = os.statvfs(small_disk)
    (small_disk / "ballast").write_bytes(bytes(free.f_bavail * free.f_frsize - room))
    output = small_disk / "out"
    settings = [item for setting in outputs for item in ("--set", setting)]
    result = tachyflow("run", "taylor-green", "-n", "2", "--steps", "300", "-o", str(output),
                       "--set", "grid.cells=[16,16,16]", "--set", "output.checkpoint_every=0",
                       "--set", "output.fields_every=0", *settings, "--fft-planning", "estimate",
                       timeout=120)
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    pattern = (rf"tachyflow: error \(on rank 0\): OSError: \[Errno 28\] cannot write "
               rf"{re.escape(str(output))}/{written}: No space left on device")
    assert re.fullmatch(pattern, lines[0]), lines[0]


def test_a_full_disk_under_the_acoustics_surface_series_ends_every_rank(small_disk, tmp_path):
    """ADIOS2's exception (coloured, several lines, ``errno = 28``) becomes the one error
    line; ADIOS2 still warns at exit that the series was not closed."""
    case = tmp_path / "sphere.toml"
    case.write_text(SPHERE_NOISE.replace("checkpoint_every = 5", "checkpoint_every = 0"))
    free = os.statvfs(small_disk)
    (small_disk / "ballast").write_bytes(bytes(free.f_bavail * free.f_frsize - 80 * 1024))
    output = small_disk / "out"
    result = tachyflow("run", str(case), "-n", "2", "-o", str(output), "--fft-planning",
                       "estimate", timeout=120)
    assert result.returncode == 1, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("tachyflow:")]
    assert errors == [
        f"tachyflow: error (on rank 0): OSError: [Errno 28] cannot write "
        f"{output / 'acoustics' / 'surface.bp'}: No space left on device"
    ], result.stderr
    assert "Abort(" not in result.stderr
