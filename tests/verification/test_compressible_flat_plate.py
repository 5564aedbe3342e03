"""The compressible solver on the laminar flat plate: skin friction against Blasius'
``Cf = 0.664 / sqrt(Re_x)``, and the run's outputs (convergence.csv, summary.json,
surface.csv) and its stop at the target residual."""

import csv
import json

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.errors import ConfigError
from tachyflow.simulation import Simulation


def run_flat_plate(folder, **values):
    case = config.load("flat-plate").replace("compressible", **values)
    run = Simulation(case, folder, MPI.COMM_SELF)
    try:
        summary = run.run()
    finally:
        run.free()
    return case, summary


def blasius_ratio(folder, reynolds, low, high):
    with (folder / "surface.csv").open() as table:
        rows = list(csv.DictReader(table))
    x = np.array([float(row["x/c"]) for row in rows])
    cf = np.array([float(row["Cf"]) for row in rows])
    inside = (x > low) & (x < high)
    return x[inside], cf[inside] * np.sqrt(reynolds * x[inside]) / 0.664


def test_laminar_flat_plate_skin_friction_is_blasius_and_the_run_stops_converged(tmp_path):
    case, summary = run_flat_plate(tmp_path, cells=(48, 24), target_residual=7e-4)
    x, ratio = blasius_ratio(tmp_path, case.compressible.reynolds, 0.1, 0.8)
    assert len(x) > 15
    assert np.abs(ratio - 1).max() < 0.02, dict(zip(x.round(3), ratio.round(4), strict=True))
    result = json.loads((tmp_path / "summary.json").read_text())
    assert result["converged"] and result["iterations"] == summary["final_step"]
    assert result["iterations"] < case.time.steps  # stopped at the target, not the limit
    assert result["conditions"]["mach"] == case.compressible.mach
    # The plate's drag is friction; Blasius' total: 1.328 / sqrt(Re_L) from x = 0 to 1.
    assert result["CD_f"] == pytest.approx(1.328 / np.sqrt(1e5), rel=0.05)
    assert abs(result["CD_p"]) < 1e-12
    with (tmp_path / "convergence.csv").open() as table:
        rows = list(csv.DictReader(table))
    assert {"iteration", "density_residual", "CL", "CD", "CM"} <= set(rows[0])
    assert int(rows[-1]["iteration"]) == result["iterations"]
    assert float(rows[-1]["density_residual"]) <= 7e-4
    assert (tmp_path / "stats.csv").read_text().splitlines()[0].count("CD_f") == 1


@pytest.mark.slow
def test_the_built_in_flat_plate_converges_within_one_percent_of_blasius(tmp_path):
    case, summary = run_flat_plate(tmp_path)  # 64 x 32 cells, to a density residual of 1e-5
    assert summary["final_step"] < case.time.steps
    x, ratio = blasius_ratio(tmp_path, case.compressible.reynolds, 0.1, 0.8)
    assert np.abs(ratio - 1).max() < 0.01, dict(zip(x.round(3), ratio.round(4), strict=True))


def test_compressible_case_options_are_checked():
    case = config.load("flat-plate")
    for key, value, match in (
        ("scheme", "hllc", "compressible.scheme"),
        ("time_stepping", "euler", "compressible.time_stepping"),
        ("cells", (2, 40), "compressible.cells"),
        ("grid", "naca9999x", "compressible.grid"),
        ("turbulence", "k-omega", "compressible.turbulence"),
        ("cfl_start", 100.0, "compressible.cfl_start"),
    ):
        with pytest.raises(ConfigError, match=match):
            case.replace("compressible", **{key: value})


@pytest.mark.slow
def test_turbulent_flat_plate_skin_friction_follows_coles_fernholz():
    # Spalart–Allmaras, fully turbulent from the leading edge, Re = 5e6 per unit length,
    # y+ about 1 at the wall: Cf against the Coles–Fernholz relation
    # Cf = 2 (ln(Re_theta) / 0.41 + 5)^-2 at the local momentum-thickness Reynolds number.
    from tachyflow import runtime
    from tachyflow.solvers.compressible.solver import CompressibleSolver

    reynolds, mach = 5e6, 0.4
    case = config.load("flat-plate").replace(
        "compressible", cells=(64, 48), wall_spacing=5e-6, reynolds=reynolds,
        turbulence="sa", target_residual=1e-4,
    )
    solver = CompressibleSolver.from_case(case, runtime.world())
    while not solver.finished() and solver.steps < 4000:
        solver.step(1.0)
    assert solver.finished()
    rho, u = solver.cell_field("rho"), solver.cell_field("u")
    m = solver.metrics
    nodes = m.y[m.owned[0], 2:-2]
    heights = nodes[:, 1:] - nodes[:, :-1]
    x = m.xc[m.owned][:, 0]
    cf = solver.wall_surface()["Cf"]
    upstream = len(x) - len(cf)
    for i in range(len(x)):
        if not 0.3 < x[i] < 0.9:
            continue
        edge = int(np.argmax(u[i] >= 0.995 * u[i].max()))
        profile = rho[i, : edge + 1] * u[i, : edge + 1] / (rho[i, edge] * u[i, edge])
        theta = np.sum(profile * (1 - u[i, : edge + 1] / u[i, edge]) * heights[i, : edge + 1])
        re_theta = reynolds * theta * u[i, edge] / mach
        coles_fernholz = 2 * (np.log(re_theta) / 0.41 + 5.0) ** -2
        assert abs(cf[i - upstream] / coles_fernholz - 1) < 0.05, (x[i], re_theta)


def test_tachyflow_run_flat_plate_writes_the_aerodynamic_outputs(tmp_path):
    from tests.cli.test_cli import tachyflow

    result = tachyflow("run", "flat-plate", "--steps", "20", "-o", str(tmp_path / "run"))
    assert result.returncode == 0, result.stderr
    assert "flat-plate (compressible): 20 steps" in result.stdout
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["iterations"] == 20 and not summary["converged"]
    rows = (tmp_path / "run" / "convergence.csv").read_text().splitlines()
    assert rows[0].startswith("iteration,density_residual") and len(rows) == 21
