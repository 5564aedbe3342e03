"""The MPINS2D case: RAE 2822 at M = 0.73, alpha = 2.79 deg, Re = 6.5e6 (SA, DP-SGS) run
until the density residual has fallen by seven orders, as B.-S. Lee, J.-W. Hong, S. Lee,
D. H. Lee, "Performance Analysis of Cluster Network Interfaces for Parallel Computing of
Computational Fluid Dynamics" ran it; the loads against the measurement of AGARD AR-138
case 9 and the upper-surface shock read from Cp.

Long (an hour or more on one core): ``make test-slow``. The rank-count check is in
``tests/parallel/test_compressible_rae2822.py``."""

import csv
import json

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.simulation import Simulation

# P. H. Cook, M. A. McDonald, M. C. P. Firmin, "Aerofoil RAE 2822 - Pressure Distributions,
# and Boundary Layer and Wake Measurements", AGARD AR-138 (1979), case 9 (M = 0.730, alpha
# corrected 2.79 deg, Re = 6.5e6, as the AFOSR-HTTM/Stanford transcription, case 8621, gives
# it): the loads and the shock position as measured.
CASE_9_CL, CASE_9_CD = 0.803, 0.0168
CASE_9_SHOCK = (0.50, 0.65)  # x/c of the upper-surface shock


def run_case(folder, comm, **values):
    """Run the case (collective); rank 0 returns its summary.json, the others None."""
    case = config.load("rae2822")
    if values:
        case = case.replace("compressible", **values)
    run = Simulation(case, folder, comm)
    try:
        run.run()
    finally:
        run.free()
    return json.loads((folder / "summary.json").read_text()) if comm.rank == 0 else None


def upper_surface_shock(folder) -> float:
    """x/c of the steepest pressure rise (largest dCp/dx) on the upper surface."""
    with (folder / "surface.csv").open() as table:
        rows = list(csv.DictReader(table))
    x = np.array([float(row["x/c"]) for row in rows])
    cp = np.array([float(row["Cp"]) for row in rows])
    upper = np.arange(len(x)) >= int(np.argmin(x))  # grid order: lower TE, LE, upper TE
    x, cp = x[upper], cp[upper]
    inside = (x[1:] > 0.2) & (x[:-1] < 0.9)
    rise = np.where(inside, np.diff(cp) / np.diff(x), 0.0)
    k = int(np.argmax(rise))
    return 0.5 * (x[k] + x[k + 1])


@pytest.mark.slow
def test_rae2822_converges_seven_orders_to_the_measured_loads_and_shock(tmp_path):
    summary = run_case(tmp_path, MPI.COMM_SELF)
    assert summary["converged"] and summary["density_residual"] <= 1e-7
    assert summary["CL"] == pytest.approx(CASE_9_CL, rel=0.02)
    assert summary["CD"] == pytest.approx(CASE_9_CD, rel=0.05)
    assert CASE_9_SHOCK[0] < upper_surface_shock(tmp_path) < CASE_9_SHOCK[1]
