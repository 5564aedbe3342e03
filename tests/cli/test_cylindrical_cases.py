"""The cylindrical solver's built-in cases run as every case does, and restart on another
rank count."""

import csv
import json
import shutil
from importlib import resources

import numpy as np
import pytest

from tests.cli.test_cli import tachyflow


@pytest.mark.parametrize(
    "case", ["pipe", "taylor-couette", "rotating-pipe", "pipe-entrance", "sphere"]
)
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
    if case == "sphere":  # axisymmetric: the drag only; the transverse loads cancel
        with (output / "forces.csv").open(newline="") as table:
            loads = list(csv.DictReader(table))[-1]
        assert float(loads["sphere_Fx"]) > 0
        assert all(float(loads[f"sphere_{k}"]) == 0 for k in ("Fy", "Fz", "My", "Mz"))


def test_an_open_pipe_restarted_on_another_rank_count_continues_where_it_stopped(tmp_path):
    """A pipe written on 2 ranks continues on 3. With inflow and convective outflow the
    outflow velocity is part of the checkpoint, so 40 steps on 2 ranks continued on 3 from
    the checkpoint of step 20 end where the 2 ranks did (to round-off: sums in another
    order)."""
    whole, halves = tmp_path / "whole", tmp_path / "halves"
    text = (resources.files("tachyflow") / "cases" / "pipe-entrance.toml").read_text()
    assert "checkpoint_every = 300" in text
    case = tmp_path / "pipe.toml"
    case.write_text(text.replace("checkpoint_every = 300", "checkpoint_every = 20"))
    common = ("run", str(case), "--steps", "40")
    result = tachyflow(*common, "-n", "2", "-o", str(whole), timeout=180)
    assert result.returncode == 0, result.stderr
    shutil.copytree(whole, halves)
    checkpoint = halves / "checkpoints" / "step_00000020.ckpt"
    result = tachyflow(*common, "-n", "3", "--restart", str(checkpoint), "-o", str(halves),
                       timeout=180)
    assert result.returncode == 0, result.stderr
    last = [np.array((folder / "stats.csv").read_text().splitlines()[-1].split(","), float)
            for folder in (whole, halves)]
    assert last[0][0] == last[1][0] == 40
    assert np.allclose(last[0], last[1], rtol=1e-11, atol=1e-13)
    timings = json.loads((halves / "timings.json").read_text())
    assert timings["final_step"] == 40 and timings["ranks"] == 3


def test_bench_cylindrical_step_times_both_solvers_and_records_the_ratio(tmp_path):
    result = tachyflow(
        "bench", "cylindrical-step", "-n", "2", "--grid", "8", "6", "8", "--repeats", "2",
        "--warmup", "1", "--les", "wale", "-o", str(tmp_path), timeout=240,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "cylindrical-step_8x6x8_2x1.json").read_text())
    assert [entry["name"] for entry in document["results"]] == [
        "tachyflow-cylindrical-step",  # θ solves overlapped, then its other variants
        "tachyflow-cylindrical-step-blocking",
        "tachyflow-cylindrical-step-overlapped-progress-calls",
    ]
    assert document["overlap"]["speedup"] > 0
    assert [entry["name"] for entry in document["peers"]] == ["tachyflow-cartesian-step"]
    model = document["model"]
    assert model["ratio_to_cartesian"] > 0
    assert set(model["phases_per_step"]) == {"pipe", "channel"}
    assert "fft" in model["phases_per_step"]["pipe"]
    les = document["les"]  # the pipe's LES step against its DNS step, interleaved
    assert les["model"] == "wale" and les["verified"] and les["goal"] == 1.25
    steps = les["steps"]
    assert set(steps) == {"dns", "les (wale)"}
    assert les["ratio"] == pytest.approx(steps["les (wale)"]["median"] / steps["dns"]["median"])
    assert 0 < les["subgrid_share"] < 1
    assert "LES (wale) step" in result.stdout


def test_pipe_fields_are_a_cylinder_in_cartesian_points_for_paraview(tmp_path):
    from vtkmodules.vtkIOXML import vtkXMLPStructuredGridReader

    output = tmp_path / "pipe"
    result = tachyflow("run", "pipe", "-n", "2", "--steps", "2", "-o", str(output), timeout=180)
    assert result.returncode == 0, result.stderr
    assert len(list((output / "fields_vtk" / "step_00000002").glob("piece_*.vts"))) == 2
    reader = vtkXMLPStructuredGridReader()
    reader.SetFileName(str(output / "fields_vtk" / "step_00000002.pvts"))
    reader.Update()
    dataset = reader.GetOutput()
    assert dataset.GetNumberOfCells() == 64 * 32 * 48
    bounds = dataset.GetBounds()  # x from 0 to 10; y and z across the unit circle
    assert bounds == pytest.approx((0.0, 10.0, -1.0, 1.0, -1.0, 1.0), abs=1e-12)
    cells = dataset.GetCellData()
    assert cells.GetArray("u").GetRange()[1] > 1.0
    # The Cartesian velocity vector has the speed of the three components.
    from vtkmodules.util.numpy_support import vtk_to_numpy

    velocity = vtk_to_numpy(cells.GetArray("velocity"))
    speed = np.sqrt(sum(vtk_to_numpy(cells.GetArray(n)) ** 2 for n in "uvw"))
    assert velocity.shape == (64 * 32 * 48, 3)
    assert np.allclose(np.linalg.norm(velocity, axis=1), speed, rtol=1e-12, atol=1e-14)
    assert np.array_equal(velocity[:, 0], vtk_to_numpy(cells.GetArray("u")))
