"""Phase accounting of the compressible solver: the exclusive phase clock, and the
solver's phases over real iterations."""

import time

import numpy as np
from mpi4py import MPI

from tachyflow import config
from tachyflow.solvers.compressible.solver import PHASES, CompressibleSolver
from tachyflow.solvers.phase_clock import PhaseClock


class ScriptedClock:
    """Returns the given times in turn."""

    def __init__(self, *times):
        self.times = list(times)

    def __call__(self):
        return self.times.pop(0)


def test_nested_phases_are_charged_to_themselves_only():
    # step [0, 10]: exchange [1, 3], inside it nothing; boundaries [4, 5] inside
    # implicit [3.5, 8], which also holds exchange [6, 6.5]
    clock = PhaseClock(ScriptedClock(0.0, 1.0, 3.0, 3.5, 4.0, 5.0, 6.0, 6.5, 8.0, 10.0))
    with clock("other"):
        with clock("exchange"):
            pass
        with clock("implicit"):
            with clock("boundaries"):
                pass
            with clock("exchange"):
                pass
    assert clock.seconds == {"exchange": 2.5, "boundaries": 1.0, "implicit": 3.0,
                             "other": 3.5}
    assert sum(clock.seconds.values()) == 10.0
    clock.reset()
    assert clock.seconds == {}


def test_a_phase_left_by_an_exception_is_still_counted():
    clock = PhaseClock(ScriptedClock(0.0, 2.0))
    try:
        with clock("residual"):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert clock.seconds == {"residual": 2.0}


def test_solver_phases_cover_its_iterations_without_double_counting():
    case = config.load("rae2822").replace(
        "compressible", cells=(56, 16), wake_cells=8, time_stepping="dp-sgs", sweeps=2
    )
    solver = CompressibleSolver.from_case(case, MPI.COMM_WORLD)
    solver.step(1.0)  # compiles the kernels
    solver.clock.reset()
    start = time.perf_counter()
    for _ in range(3):
        solver.step(1.0)
    elapsed = time.perf_counter() - start
    phases = solver.phase_seconds()
    assert tuple(phases) == PHASES
    assert all(np.isfinite(v) and v >= 0 for v in phases.values())
    for phase in ("residual", "implicit", "exchange", "boundaries", "reductions"):
        assert phases[phase] > 0, phase
    # exclusive phases inside the steps cannot add up to more than the steps took
    assert sum(phases.values()) <= elapsed
    solver.blocks.free()
