"""In transit end to end: a reader started before the run draws what the run marks due."""

import json
import subprocess
import sys

import numpy as np
import pytest

from tachyflow import config
from tests.cli.test_cli import tachyflow
from tests.processes import command_environment

CASE = """
[grid]
cells = [16, 16, 16]
lengths = [6.283185307179586, 6.283185307179586, 6.283185307179586]
[flow]
viscosity = 0.01
initial = "taylor-green"
[time]
steps = 12
dt = 0.05
[insitu]
width = 160
height = 120
queue_full_policy = "Block"
queue_limit = 8
reserve_queue_limit = 4
transit_precision = "single"
"""
# Slices of u on planes z = 1 and z = 4, each drawn by the ranks and by a reader.
SLICE = """
[[insitu.pipeline]]
name = "{name}"
kind = "slice"
field = "u"
plane = "xy"
position = {position}
range = [-1.0, 1.0]
every = {every}
mode = "{mode}"
"""
CASE += "".join(
    SLICE.format(name=name, position=position, every=every, mode=mode)
    for name, position, every, mode in [
        ("slice-here", 1.0, 6, "insitu"),
        ("slice-there", 1.0, 3, "transit"),
        ("deep-here", 4.0, 6, "insitu"),
        ("deep-there", 4.0, 6, "transit"),
    ]
)


def test_reader_started_first_draws_every_due_step_like_in_situ(tmp_path):
    # The writer never waits for a reader: a warm 16^3 run writes its 12 steps in about
    # 10 ms, before the reader can attach. The reserve keeps all four due steps for it.
    from PIL import Image

    (tmp_path / "case.toml").write_text(CASE)
    run_dir = tmp_path / "run"
    reader = subprocess.Popen(
        [sys.executable, "-m", "tachyflow", "transit-render", str(run_dir), "--timeout", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=command_environment(),
    )
    try:
        run = tachyflow("run", str(tmp_path / "case.toml"), "-n", "2", "-o", str(run_dir))
        output, _ = reader.communicate(timeout=90)
    finally:
        reader.kill()
    assert run.returncode == 0, run.stderr[-2000:]
    assert reader.returncode == 0, output
    summary = json.loads((run_dir / "transit-render-0.json").read_text())
    assert summary["end"] == "end of stream" and summary["skipped"] == 0
    drawn = sorted(path.name for path in (run_dir / "transit-images").glob("*.png"))
    assert drawn == [f"deep-there_{step:08d}.png" for step in (6, 12)] + [
        f"slice-there_{step:08d}.png" for step in (3, 6, 9, 12)
    ]
    # The reader's picture of a step is the ranks' own picture of it, pixel for pixel
    # but for the title (and the few pixels single precision moves across a colour bin).
    # At step 12 u travels on the layers from one plane to the other, and each slice is
    # cut out of them.
    for name in ("slice", "deep"):
        here = np.asarray(Image.open(run_dir / "images" / f"{name}-here_00000012.png"))
        there = np.asarray(Image.open(run_dir / "transit-images" / f"{name}-there_00000012.png"))
        body = slice(20, None)  # below the title line
        assert np.mean(np.any(here[body] != there[body], axis=-1)) < 1e-3, name
    timings = json.loads((run_dir / "timings.json").read_text())["visualisation"]
    assert timings["transfer"] > 0 and timings["step_bytes"] == 16**3 * 4  # single precision
    outputs = timings["transit_output"]  # the first (the reader attaching) and the others
    assert outputs["count"] == 4 and outputs["first"] > 0 and outputs["steady"] > 0
    assert outputs["first"] + outputs["steady"] <= timings["prepare"] + timings["transfer"]
    manifest = json.loads((run_dir / "transit" / "manifest.json").read_text())
    assert np.dtype(manifest["dtype"]) == np.float32


def test_a_second_reader_of_the_same_index_into_the_same_folder_is_refused(tmp_path):
    from tachyflow.insitu.transit_render import render_in_transit
    from tachyflow.io.locks import FolderInUseError, RunFolderLock

    pictures = tmp_path / "pictures"
    first = RunFolderLock(pictures, ".tachyflow-transit-reader-0.lock", "transit-render reader 0")
    with pytest.raises(FolderInUseError, match="in use by a live transit-render reader 0"):
        render_in_transit(tmp_path / "run", config.load, 0, 1, timeout=1, output=pictures)
    assert not (tmp_path / "run").exists()  # refused before attaching or writing anything
    first.release()


def test_a_receiving_reader_takes_every_step_and_draws_nothing(tmp_path):
    (tmp_path / "case.toml").write_text(CASE.replace("steps = 12", "steps = 6"))
    run_dir = tmp_path / "run"
    reader = subprocess.Popen(
        [sys.executable, "-m", "tachyflow", "transit-render", str(run_dir), "--timeout", "60",
         "--receive-only"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=command_environment(),
    )
    try:
        run = tachyflow("run", str(tmp_path / "case.toml"), "-o", str(run_dir))
        output, _ = reader.communicate(timeout=90)
    finally:
        reader.kill()
    assert run.returncode == 0, run.stderr[-2000:]
    assert "reader 0: 2 steps, 0 pictures, 0 skipped, end: end of stream" in output, output
    assert not list((run_dir / "transit-images").glob("*.png"))
