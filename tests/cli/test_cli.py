"""End-to-end runs of the commands users type, each in its own process."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tachyflow.collectives.algorithms import ALGORITHMS
from tests.processes import command_environment

BIN = Path(sys.executable).parent


def tachyflow(*arguments, timeout=120, env=None):
    return subprocess.run(
        [sys.executable, "-m", "tachyflow", *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=command_environment(**(env or {})),
    )


def test_help_lists_the_commands():
    result = tachyflow("--help")
    assert result.returncode == 0
    for command in ("info", "bench", "report"):
        assert command in result.stdout
    assert tachyflow("bench", "transpose", "--help").returncode == 0
    assert "usage" in tachyflow("bench", "transpose", "--help").stdout


def test_info_reports_mpi_and_versions():
    result = tachyflow("info", "--json")
    assert result.returncode == 0, result.stderr
    details = json.loads(result.stdout)
    assert details["ranks"] == 1
    assert "MPI" in details["mpi_library"] or "mpi" in details["mpi_library"].lower()
    assert details["packages"]["mpi4py"] is not None


def test_dash_n_self_launches_under_mpiexec():
    result = tachyflow("info", "-n", "2", "--json")
    assert result.returncode == 0, result.stderr
    details = json.loads(result.stdout)  # rank 0 alone printed
    assert details["ranks"] == 2
    assert details["ranks_per_node"] == 2


def test_bench_transpose_and_report_end_to_end(tmp_path):
    result = tachyflow(
        "bench",
        "transpose",
        "-n",
        "2",
        "--grid",
        "16",
        "12",
        "8",
        "--repeats",
        "3",
        "--warmup",
        "1",
        "-o",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert "tachyflow-alltoallv" in result.stdout
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["transpose_16x12x8_2x1_float64.json", "transpose_16x12x8_2x1_float64.png"]
    document = json.loads((tmp_path / written[0]).read_text())
    assert document["mpi"]["ranks"] == 2
    assert all(entry["verified"] for entry in document["results"])
    report = tachyflow("report", str(tmp_path))
    assert report.returncode == 0, report.stderr
    assert "data:image/png;base64," in (tmp_path / "report.html").read_text()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ("bench", "transpose", "-n", "2", "--proc-grid", "3x1", "--grid", "4", "4", "4"),
            "proc_grid 3x1 has 3 ranks but the communicator has 2",
        ),
        (("bench", "transpose", "--grid", "0", "4", "4"), "expected a positive integer"),
        (("bench", "transpose", "--proc-grid", "two"), "ROWSxCOLS"),
        (("report", "/nonexistent/folder"), "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_code_two(arguments, message):
    started = time.monotonic()
    result = tachyflow(*arguments, timeout=60)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert message in result.stderr
    error_lines = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(error_lines) == 1, result.stderr
    assert time.monotonic() - started < 30


def test_exception_on_one_rank_aborts_the_whole_job_quickly():
    script = (
        "from tachyflow import runtime\n"
        "comm = runtime.world()\n"
        "try:\n"
        "    if comm.rank == 1:\n"
        "        raise RuntimeError('only rank 1 fails')\n"
        "    comm.Barrier()\n"
        "except Exception as error:\n"
        "    runtime.abort_on_exception(error)\n"
    )
    started = time.monotonic()
    result = subprocess.run(
        [str(BIN / "mpiexec"), "-n", "3", sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, MPIEXEC_TIMEOUT="50"),
    )
    assert result.returncode != 0
    assert "tachyflow: error on rank 1: RuntimeError: only rank 1 fails" in result.stderr
    assert time.monotonic() - started < 30


def test_bench_poisson_end_to_end(tmp_path):
    result = tachyflow(
        "bench",
        "poisson",
        "-n",
        "2",
        "--grid",
        "12",
        "10",
        "8",
        "--repeats",
        "2",
        "--warmup",
        "1",
        "-o",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "poisson_12x10x8_2x1.json").read_text())
    ours = document["results"][0]
    assert ours["name"] == "tachyflow-poisson" and ours["verified"]
    assert ours["max_error"] < 1e-10
    # Overlapped transposes against blocking ones, in the same run.
    overlapped = document["results"][1]
    assert overlapped["name"] == "tachyflow-poisson-overlapped" and overlapped["verified"]
    assert document["overlap"]["speedup"] == ours["median"] / overlapped["median"]
    assert "overlapped transposes:" in result.stdout


def test_run_writes_the_output_folder_and_restarts(tmp_path):
    output = tmp_path / "poiseuille"
    result = tachyflow("run", "poiseuille", "-n", "2", "--steps", "20", "-o", str(output))
    assert result.returncode == 0, result.stderr
    assert "time per step" in result.stdout and "transposes" in result.stdout
    for name in (
        "config.toml",
        "log.txt",
        "stats.csv",
        "timings.json",
        "images/statistics.png",
        "checkpoints/step_00000020.ckpt",
    ):
        assert (output / name).exists(), name
    timings = json.loads((output / "timings.json").read_text())
    assert timings["steps"] == 20 and timings["ranks"] == 2
    assert set(timings["phases"]) == {
        "fft",
        "transposes",
        "tdma",
        "velocity",  # advection, diffusion, RK3 increments and implicit solves in one pass
        "projection",
        "boundaries",
        "other",
    }
    # Set-up and the first step (compiling) are rows of their own; the phases are the rest.
    assert timings["set_up"] > 0 and 0 < timings["first_step"] <= timings["wall_time"]
    steps_after_first = timings["wall_time"] - timings["first_step"]
    assert sum(timings["phases"].values()) >= steps_after_first * (1 - 1e-9)
    # --steps is the last step: the restarted run goes on from 20 to 25, and the history
    # before the checkpoint is kept.
    again = tachyflow(
        "run", "poiseuille", "--steps", "25", "-o", str(output), "--restart", "latest"
    )
    assert again.returncode == 0, again.stderr
    assert json.loads((output / "timings.json").read_text())["final_step"] == 25
    steps = [int(line.split(",")[0]) for line in (output / "stats.csv").read_text().split()[1:]]
    assert steps == [10, 20, 25]
    # The same command again has nothing left to do and adds no record.
    done = tachyflow(
        "run", "poiseuille", "--steps", "25", "-o", str(output), "--restart", "latest"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((output / "timings.json").read_text())["steps"] == 0
    assert (output / "stats.csv").read_text().count("\n") == 4


def test_run_with_a_bad_case_file_fails_in_one_line(tmp_path):
    case_file = tmp_path / "bad.toml"
    case_file.write_text("[flow]\nviscosity = -0.1\n")
    result = tachyflow("run", str(case_file), "-n", "2", timeout=60)
    assert result.returncode == 2
    assert f"{case_file}: 'flow.viscosity' must be positive, got -0.1" in result.stderr
    error_lines = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(error_lines) == 1, result.stderr


def test_bench_step_end_to_end(tmp_path):
    result = tachyflow(
        "bench",
        "step",
        "-n",
        "2",
        "--grid",
        "8",
        "8",
        "6",
        "--repeats",
        "2",
        "--warmup",
        "1",
        "--les",
        "vreman",
        "-o",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert "memory-traffic bound" in result.stdout
    les = json.loads((tmp_path / "step_8x8x6_2x1.json").read_text())["les"]
    assert les["model"] == "vreman" and les["verified"]
    assert set(les["ratios"]) == {"dns (fused)", "dns (separate kernels)"}
    assert les["ratio"] == les["ratios"]["dns (fused)"] > 0
    assert "LES (vreman) step" in result.stdout
    document = json.loads((tmp_path / "step_8x8x6_2x1.json").read_text())
    entry = document["results"][0]
    assert entry["name"] == "tachyflow-step"
    assert entry["verified"] and entry["ratio_to_memory_bound"] > 0
    overlapped = document["results"][1]
    assert overlapped["name"] == "tachyflow-step-overlapped" and overlapped["verified"]
    assert document["overlap"]["speedup"] == entry["median"] / overlapped["median"]
    fused = document["fused"]  # the fused velocity update against the separate kernels
    assert len(fused["fused"]["samples"]) == len(fused["separate kernels"]["samples"]) == 2
    ratio = fused["separate kernels"]["median"] / fused["fused"]["median"]
    assert fused["speedup"] == pytest.approx(ratio)
    assert "fused velocity update:" in result.stdout
    pencils = document["results"][3]  # the pressure solve's z-slabs off, on the 2x1 grid
    assert pencils["name"] == "tachyflow-step-pencil-transposes" and pencils["verified"]
    assert document["slabs"]["speedup"] == pencils["median"] / entry["median"]
    assert "z-slabs in the pressure solve:" in result.stdout
    assert document["model"]["copies_per_step"] == 12
    # The bound is timed in the steps' rounds: the ratio is the median of the rounds'.
    bound = document["model"]["memory_bound"]["samples"]
    rounds = [step / copies for step, copies in zip(entry["samples"], bound, strict=True)]
    assert entry["ratio_to_memory_bound"] == pytest.approx(np.median(rounds))
    assert entry["ratio_of_medians"] == pytest.approx(entry["median"] / np.median(bound))
    assert all(e["name"] != "memory bound" for e in document["results"])
    assert {"fft", "velocity", "projection", "boundaries"} <= set(document["phases"])
    assert all(seconds >= 0 for seconds in document["phases"].values())
    fastest = document["phases_fastest"]
    assert fastest.keys() == document["phases"].keys()
    assert all(0 <= fastest[name] <= document["phases"][name] for name in fastest)
    assert "phases per step (slowest rank / fastest rank):" in result.stdout
    beyond = document["beyond_step"]  # the iteration's checks and a statistics record
    assert set(beyond) == {"checks", "statistics"}
    assert all(len(e["samples"]) == 2 and e["field_reads"] > 0 for e in beyond.values())
    assert "beyond the step: checks" in result.stdout
    passes = document["model"]["pass_seconds"]
    assert set(passes) == {"read", "write", "copy"} and all(t > 0 for t in passes.values())
    assert entry["field_reads"] == pytest.approx(entry["median"] / passes["read"])
    assert "one pass over a rank's field, every rank at once: read" in result.stdout


def test_model_predict_and_simulate_agree_for_the_pipelined_broadcast():
    arguments = (
        "--op",
        "bcast",
        "--algo",
        "pipeline",
        "-P",
        "6144",
        "--size",
        "1MiB",
        "--profile",
        "sp2",
    )
    predicted = tachyflow("model", "predict", *arguments)
    assert predicted.returncode == 0, predicted.stderr
    assert (
        "segments 2214" in predicted.stdout
    )  # sqrt((P-2) n beta / alpha) of Kim's 1998 Korea University report
    simulated = tachyflow("model", "simulate", *arguments)
    assert simulated.returncode == 0, simulated.stderr
    times = {
        line.split()[0]: float(line.split()[2])
        for line in (predicted.stdout + simulated.stdout).splitlines()
        if line.split()[1:2] == ["time"]
    }
    # 2^20 B do not split into 2214 equal pieces: the simulator sees the uneven ones.
    assert times["simulated"] == pytest.approx(times["predicted"], rel=1e-3)
    checked = tachyflow(
        "model",
        "simulate",
        "--op",
        "allreduce",
        "--algo",
        "ring",
        "-P",
        "100",
        "--size",
        "1KiB",
        "--check",
    )
    assert "every rank ends with the right data" in checked.stdout


def test_model_fit_reads_osu_output_and_writes_a_usable_profile(tmp_path):
    table = tmp_path / "osu_latency.txt"
    rows = "\n".join(
        f"{size} {2.0 + size / 8000.0:.6f}"
        for size in (1, 8, 64, 512, 4096, 32768, 262144, 1048576)
    )
    table.write_text(f"# OSU MPI Latency Test\n# Size Latency (us)\n{rows}\n")
    result = tachyflow("model", "fit", str(table), "-o", str(tmp_path / "mine.json"))
    assert result.returncode == 0, result.stderr
    assert "alpha = 2 us" in result.stdout and "8 GB/s" in result.stdout
    predicted = tachyflow(
        "model",
        "predict",
        "--op",
        "bcast",
        "--algo",
        "binomial",
        "-P",
        "8",
        "--size",
        "8000B",
        "--profile",
        str(tmp_path / "mine.json"),
    )
    assert "predicted time 9.00 us" in predicted.stdout  # 3 rounds of (2 + 1) us
    bad = tachyflow("model", "fit", str(tmp_path / "missing.txt"))
    assert bad.returncode == 2 and "does not exist" in bad.stderr
    assert "LogGP not fitted: the measurements have no PRTT" in result.stdout
    no_loggp = tachyflow("model", "fit", str(table), "--model", "loggp")
    assert no_loggp.returncode == 2 and "no LogGP fit" in no_loggp.stderr


def test_bench_pingpong_measures_the_peers_and_fits_a_profile(tmp_path):
    result = tachyflow(
        "bench",
        "pingpong",
        "-n",
        "2",
        "--max-size",
        "256KiB",  # enough sizes above the noise for a positive beta on a busy machine
        "--repeats",
        "2",
        "-o",
        str(tmp_path),
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "pingpong_2ranks.json").read_text())
    peers = {e["name"] for e in document["peers"]}
    assert peers == {"c-pingpong", "mpi4py.bench"}, document.get("peers_missing")
    assert "small_message_overhead_vs_c-pingpong" in document["summary"]
    assert 1 <= document["summary"]["half_bandwidth_size"] <= 262144
    assert (tmp_path / "pingpong_2ranks.png").stat().st_size > 1000
    fit = tachyflow(
        "model", "fit", str(tmp_path / "pingpong_2ranks.json"), "-o", str(tmp_path / "here.json")
    )
    assert fit.returncode == 0, fit.stderr
    profile = json.loads((tmp_path / "here.json").read_text())["model"]
    assert 0 < profile["alpha"] < 1e-3
    assert [r["size"] for r in document["prtt"]] == [4**k for k in range(10)]
    # On a loaded machine the per-byte cost G of small messages can drown in noise, so the
    # LogGP fit may be refused (a negative G); either way it must say so.
    assert "LogGP: L = " in fit.stdout or "LogGP not fitted: " in fit.stdout


def test_bench_collectives_checks_times_and_predicts_every_algorithm(tmp_path):
    result = tachyflow(
        "bench",
        "collectives",
        "--op",
        "bcast",
        "-n",
        "3",
        "--sizes",
        "8B:512B:8",
        "--repeats",
        "2",
        "--no-mpich-algorithms",
        "-o",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "collectives_bcast_3ranks.json").read_text())
    names = {e["name"] for e in document["results"]}
    assert names == {*ALGORITHMS["bcast"], "native"}
    assert all(e["verified"] for e in document["results"])
    assert all(e["predicted"] > 0 for e in document["results"])
    assert {e["size"] for e in document["results"]} == {8, 64, 512}
    profile = tmp_path / "machine.profile.json"
    profile.write_text(json.dumps({"model": {"model": "hockney", "alpha": 1e-6, "beta": 1e-9}}))
    results = str(tmp_path / "collectives_bcast_3ranks.json")
    calibrated = tachyflow("model", "calibrate", str(profile), results)
    assert calibrated.returncode == 0, calibrated.stderr
    table = json.loads(profile.read_text())["calibration"]["bcast"]["3"]
    assert set(table) == {*ALGORITHMS["bcast"], "native"}
    for points in table.values():
        assert [size for size, _ in points] == [8, 64, 512] and all(r > 0 for _, r in points)
    refused = tachyflow("model", "calibrate", str(profile), str(profile))
    assert refused.returncode == 2 and "is not a" in refused.stderr
    bad = tachyflow("bench", "collectives", "--op", "bcast", "--sizes", "8B")
    assert bad.returncode == 2 and "8B:16MiB" in bad.stderr


@pytest.mark.slow  # make test keeps a quicker run of the command
def test_bench_collectives_adds_mpich_forced_algorithms_checked_against_the_exact_result(
    tmp_path,
):
    sizes = ("--sizes", "64B:4KiB:64", "--repeats", "2", "-o", str(tmp_path))
    result = tachyflow("bench", "collectives", "--op", "alltoall", "-n", "2", *sizes)
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads((tmp_path / "collectives_alltoall_2ranks.json").read_text())
    forced = [e for e in document["results"] if e["name"].startswith("mpich:")]
    assert {e["name"] for e in forced} == {"mpich:brucks", "mpich:k_brucks", "mpich:pairwise",
                                           "mpich:scattered"}
    assert {e["size"] for e in forced} == {64, 4096}
    assert all(e["verified"] and e["median"] > 0 for e in forced)
    pairwise = [e for e in forced if e["name"] == "mpich:pairwise"]
    assert all(e["modelled_as"] == "pairwise" and e["predicted"] > 0 for e in pairwise)


def test_solve_pressure_writes_the_solution_and_a_summary(tmp_path):
    from tachyflow.io.vtk_files import read_cell_data

    result = tachyflow("solve-pressure", "tet:1500", "-n", "2", "-o", str(tmp_path))
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["cells"] == 1500 and summary["ranks"] == 2 and summary["residual"] < 1e-8
    assert set(summary["timings"]) == {"matvec", "halo", "reductions", "other"}
    written = read_cell_data(tmp_path / "solution.pvtu")
    pressure = written["p"]
    assert pressure.size == 1500 and pressure.min() > 0  # -lap p = 1, p = 0 on the walls
    assert set(written["rank"].tolist()) == {0, 1}
    missing = tachyflow("solve-pressure", str(tmp_path / "nothing.msh"), "-n", "2")
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    odd = tachyflow("solve-pressure", "tet:1001")
    assert odd.returncode == 2 and "nearest counts" in odd.stderr


def test_bench_unstructured_measures_every_rank_count(tmp_path):
    result = tachyflow(
        "bench", "unstructured", "--cells", "1000,2197", "--ranks", "1,2", "--repeats", "1",
        "--petsc-grid", "0", "-o", str(tmp_path), timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads((tmp_path / "unstructured_hex.json").read_text())
    entries = {(e["name"], e["ranks"]): e for e in document["results"]}
    assert set(entries) == {(f"box-hex-{c}", r) for c in (1000, 2197) for r in (1, 2)}
    for (name, _), entry in entries.items():
        assert entry["iterations"] == entries[(name, 1)]["iterations"]  # rank independent
        assert entry["speedup"] > 0 and 0 <= entry["communication_share"] <= 1
    assert (tmp_path / "unstructured_hex.png").is_file()


def test_bench_npb_refuses_unknown_classes_and_kernels():
    unknown = tachyflow("bench", "npb", "--kernel", "ep", "--class", "Z")
    assert unknown.returncode == 2 and "class must be one of" in unknown.stderr
    kernel = tachyflow("bench", "npb", "--kernel", "bt")
    assert kernel.returncode == 2 and "invalid choice" in kernel.stderr


def test_bench_io_checks_every_writer_and_compares_with_dd(tmp_path):
    scratch = tmp_path / "scratch"
    result = tachyflow(
        "bench", "io", "-n", "2", "--grid", "12", "10", "8", "--repeats", "2",
        "--scratch", str(scratch), "-o", str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "io_12x10x8_2x1.json").read_text())
    names = {entry["name"]: entry for entry in document["results"]}
    assert set(names) == {
        "mpiio-checkpoint-write", "bp5-fields-write", "vtk-pieces-write", "gather-npz-write",
        "mpiio-checkpoint-read", "whole-npz-read",
    }
    assert all(entry["verified"] and entry["bandwidth"] > 0 for entry in names.values())
    assert [peer["name"] for peer in document["peers"]] == ["dd-write", "dd-read"]
    assert document["params"]["bytes"] == 4 * 12 * 10 * 8 * 8
    assert names["mpiio-checkpoint-write"]["speedup_vs_peer"] > 0
    assert (tmp_path / "io_12x10x8_2x1.png").exists()
    assert list(scratch.iterdir()) == []  # the scratch files are removed


@pytest.mark.slow  # minutes: every benchmark's quick stage, each also tested on its own
def test_bench_suite_quick_builds_one_report_with_every_stage(tmp_path):
    import base64
    import re

    result = tachyflow("bench", "suite", "--quick", "-o", str(tmp_path), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    page = (tmp_path / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(images) >= 10  # every stage's plot is in the page
    assert all(base64.b64decode(image)[:8] == b"\x89PNG\r\n\x1a\n" for image in images)
    for name in ("pingpong", "collectives", "transpose", "npb", "step", "unstructured", "scaling",
                 "io"):
        assert name in page, name


def test_acoustics_predicts_a_dipole_from_recorded_surface_data(tmp_path):
    import numpy as np

    from tests.unit.test_fwh import sphere

    centres, normals, areas = sphere(0.1, 12, 24)  # a rigid sphere of radius 0.1 m
    times = np.arange(400) * 1e-4
    load = 50.0 * np.sin(2 * np.pi * 500.0 * times)  # Pa, a dipole along z: p = P(t) cos θ
    steps, panels = times.size, areas.size
    np.savez(
        tmp_path / "surface.npz",
        times=times,
        positions=np.broadcast_to(centres, (steps, panels, 3)),
        normals=np.broadcast_to(normals, (steps, panels, 3)),
        areas=areas,
        surface_velocity=np.zeros((steps, panels, 3)),
        pressure=load[:, None] * normals[None, :, 2],
    )
    (tmp_path / "observers.toml").write_text(
        'samples = 256\n[[observer]]\nname = "above"\nposition = [0.0, 0.0, 5.0]\n'
        '[arc]\nradius = 5.0\nplane = "xz"\nstart = 0.0\nstop = 90.0\ncount = 4\n'
    )
    out = tmp_path / "noise"
    surface, observers = str(tmp_path / "surface.npz"), str(tmp_path / "observers.toml")
    result = tachyflow("acoustics", surface, "--observers", observers, "-n", "2", "-o", str(out))
    assert result.returncode == 0, result.stderr
    levels = [float(line.split("OASPL ")[1].split()[0]) for line in result.stdout.splitlines()
              if "OASPL" in line]
    # cos θ directivity: silent in the equator plane (x axis), loudest on the z axis
    assert levels[1] < levels[2] < levels[3] < levels[4] and abs(levels[0] - levels[4]) < 0.1
    for name in ("signals.csv", "spectra.csv", "bands.csv", "spectra.png", "directivity.png"):
        assert (out / name).is_file(), name
    missing = tachyflow("acoustics", surface, "--observers", str(tmp_path / "none.toml"))
    assert missing.returncode == 2 and "cannot read observers file" in missing.stderr

    # The same surface as a BP5 series of source terms (what a run records) gives the
    # same signals.
    from tachyflow.io.surface_series import SurfaceSeriesWriter

    writer = SurfaceSeriesWriter(tmp_path / "surface.bp", areas)
    for step, moment in enumerate(times):
        writer.write(
            moment,
            {
                "positions": centres,
                "normals": normals,
                "surface_velocity": np.zeros((panels, 3)),
                "normal_flux": np.zeros(panels),
                "load": load[step] * normals[:, 2:3] * normals,
            },
        )
    writer.close()
    series = tachyflow(
        "acoustics", str(tmp_path / "surface.bp"), "--observers", observers, "-o",
        str(tmp_path / "series"),
    )
    assert series.returncode == 0, series.stderr
    expected = np.loadtxt(out / "signals.csv", delimiter=",")
    found = np.loadtxt(tmp_path / "series" / "signals.csv", delimiter=",")
    np.testing.assert_allclose(found, expected, rtol=1e-9, atol=1e-12 * np.abs(expected).max())


def test_ranks_pinned_to_cores_on_request():
    cores = sorted(os.sched_getaffinity(0))
    result = tachyflow("info", "-n", "2", "--pin-cores", "--json")
    assert result.returncode == 0, result.stderr
    details = json.loads(result.stdout)
    assert details["pinning"] == "core"
    assert details["cores_per_rank"] == [[cores[0]], [cores[1 % len(cores)]]]
    free = json.loads(tachyflow("info", "-n", "2", "--json").stdout)
    assert free["pinning"] == "none" and free["cores_per_rank"] is None
    bad = tachyflow("info", "-n", "2", env={"TACHYFLOW_PIN": "socket"})
    assert bad.returncode == 2 and "expected one of ('none', 'core')" in bad.stderr


def test_threads_per_rank_on_request():
    cores = sorted(os.sched_getaffinity(0))
    # Without -n: a rank of its own, so that numba starts with the threads.
    result = tachyflow("info", "--threads", "2", "--pin-cores", "--json")
    assert result.returncode == 0, result.stderr
    details = json.loads(result.stdout)
    assert details["threads_per_rank"] == 2 and details["mpi_thread_level"] == "multiple"
    assert details["cores_per_rank"] == [sorted({cores[0], cores[1 % len(cores)]})]
    assert json.loads(tachyflow("info", "--json").stdout)["threads_per_rank"] == 1
    bad = tachyflow("info", "-n", "1", env={"TACHYFLOW_THREADS": "two"})
    assert bad.returncode == 2 and "expected a positive integer" in bad.stderr
    # Under a launcher that did not start numba with the threads: refused, saying why.
    short = tachyflow("info", "-n", "1", env={"TACHYFLOW_THREADS": "2", "NUMBA_NUM_THREADS": "1"})
    assert short.returncode == 2 and "numba was started with 1" in short.stderr
