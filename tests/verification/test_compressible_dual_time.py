"""Dual time stepping of the compressible solver's kernels: the isentropic vortex advected
across a periodic, curved grid with physical steps of the second-order backward difference,
each converged tightly by DP-SGS pseudo-time iterations. On a fixed grid the difference
between runs with steps dt, dt/2, dt/4 measures the temporal error alone: it falls at
second order. With huge physical steps a run ends at the steady solution."""

import itertools

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.numerics.compressible.gas import FreeStream, conservative, primitive
from tachyflow.numerics.compressible.metrics import BlockMetrics
from tachyflow.numerics.compressible.residual import FlowDiscretisation
from tachyflow.numerics.compressible.time_integration import DualTimeStepper, ImplicitStepper
from tachyflow.solvers.compressible.solver import CompressibleSolver
from tests.parallel.test_compressible_dual_time import EULER
from tests.verification.test_compressible_vortex import G, periodic_fill, periodic_grid, vortex

CELLS = 16
FINAL_TIME = 1.0
PSEUDO_CFL = 10.0


def dual_time_density(dt: float, inner_tolerance: float = 1e-10):
    """The density after ``FINAL_TIME`` in steps of ``dt``, and the most inner iterations
    and the largest final inner residual drop of any step."""
    metrics = BlockMetrics.from_nodes(*periodic_grid(CELLS), G)
    disc = FlowDiscretisation(metrics, FreeStream(mach=1.0), "roe", "none")
    U = conservative(vortex(metrics.xc, metrics.yc, 0.0))
    periodic_fill(U)
    stepper = ImplicitStepper(disc, sweeps=2, exchange_increment=periodic_fill)
    dual = DualTimeStepper(stepper, 200, inner_tolerance, global_sums=lambda values: values)
    iterations, drops = [], []
    for _ in range(round(FINAL_TIME / dt)):
        dual.step(U, dt, lambda _: PSEUDO_CFL, periodic_fill)
        iterations.append(dual.iterations)
        drops.append(dual.residual_drop)
    return primitive(U)[0][metrics.owned], max(iterations), max(drops)


STEPS = (1 / 16, 1 / 32, 1 / 64)


def temporal_order(steps=STEPS):
    runs = [dual_time_density(dt) for dt in steps]
    differences = [np.sqrt(np.mean((a[0] - b[0]) ** 2)) for a, b in itertools.pairwise(runs)]
    return differences, float(np.log2(differences[0] / differences[1])), runs


def test_dual_time_error_falls_at_second_order_in_dt():
    differences, order, runs = temporal_order()
    for _, iterations, drop in runs:  # every step converged, none stopped at the cap
        assert iterations < 200 and drop <= 1e-10, (iterations, drop)
    assert order > 1.8, (differences, order)


def test_first_step_is_backward_euler_then_bdf2():
    # One step from U^n = the vortex: R*(U) = R(U) + area (U - U^n) / dt; the second
    # step reads U^(n-1) (BDF2). Both converged: R* of the result is small.
    metrics = BlockMetrics.from_nodes(*periodic_grid(8), G)
    disc = FlowDiscretisation(metrics, FreeStream(mach=1.0), "roe", "none")
    U = conservative(vortex(metrics.xc, metrics.yc, 0.0))
    periodic_fill(U)
    dual = DualTimeStepper(ImplicitStepper(disc, 2, periodic_fill), 300, 1e-11, lambda v: v)
    start, dt, owned = U.copy(), 0.1, (slice(None), *metrics.owned)
    dual.step(U, dt, lambda _: PSEUDO_CFL, periodic_fill)
    assert dual.previous is not None and np.array_equal(dual.previous, start)
    euler = disc.residual(U) + metrics.area * (U - start) / dt
    assert np.abs(euler[owned]).max() < 1e-9 * np.abs(disc.residual(start)[owned]).max()
    middle = U.copy()
    dual.step(U, dt, lambda _: PSEUDO_CFL, periodic_fill)
    bdf2 = disc.residual(U) + metrics.area * (3 * U - 4 * middle + start) / (2 * dt)
    assert np.abs(bdf2[owned]).max() < 1e-9 * np.abs(disc.residual(start)[owned]).max()


def main():  # python -m tests.verification.test_compressible_dual_time: the docs' table
    differences, order, runs = temporal_order()
    for dt, (_, iterations, _) in zip(STEPS, runs, strict=True):
        print(f"dt = {dt:.5f}: at most {iterations} inner iterations per step")
    print("differences", " ".join(f"{d:.3e}" for d in differences), f"order {order:.2f}")


if __name__ == "__main__":
    main()


def test_huge_physical_steps_reach_the_steady_solution():
    # With dt -> infinity the backward difference vanishes from the unsteady residual and
    # its diagonal: a few physical steps of dual time stepping (CFL ramp over their
    # pseudo-time iterations) end at the steady solution the pseudo-time iterations alone
    # reach, on a lifting inviscid NACA 0012.
    case = config.load("flat-plate").replace("time", dt=1e6)
    steady = CompressibleSolver.from_case(
        case.replace("compressible", **{**EULER, "time_stepping": "dp-sgs",
                                        "target_residual": 1e-7}), MPI.COMM_SELF
    )
    while not steady.finished():
        steady.step(1.0)
    dual = CompressibleSolver.from_case(
        case.replace("compressible", **{**EULER, "inner_iterations": 400,
                                        "inner_tolerance": 1e-12}), MPI.COMM_SELF
    )
    for _ in range(3):
        dual.step(1e6)
    assert dual.pseudo_iterations == 1200 > steady.steps
    for name in ("CL", "CD", "CM"):
        assert dual.coefficients[name] == pytest.approx(steady.coefficients[name], abs=1e-6)
    assert np.abs(dual.cell_field("rho") - steady.cell_field("rho")).max() < 1e-5
    assert not dual.finished() and dual.cfl_number(1e6) == 0.0
    steady.blocks.free()
    dual.blocks.free()
