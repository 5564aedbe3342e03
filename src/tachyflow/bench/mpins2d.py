"""``tachyflow bench mpins2d``: the MPINS2D case's iterations, LU-SGS against DP-SGS.

The case is the built-in ``rae2822`` (B.-S. Lee, J.-W. Hong, S. Lee, D. H. Lee,
"Performance Analysis of Cluster Network Interfaces for Parallel Computing of
Computational Fluid Dynamics": RAE 2822, M = 0.73, α = 2.79°, Re = 6.5 × 10⁶, SA) on a
chosen grid level. For each relaxation (``lu-sgs``: one symmetric sweep pair; ``dp-sgs``:
the case's sweep pairs with the increment exchanged between them):

- **time per iteration**: after warm-up iterations (which also pass the residual's
  reference iterations), samples of ``iterations`` iterations, the two methods
  interleaved sample by sample; a method is verified when its residuals are finite and
  the density residual has fallen below its reference;
- **phases per iteration** over the timed iterations, the slowest rank's: residual
  (fluxes), implicit sweeps, exchange (halo), boundaries, loads, reductions;
- **time to a residual**: a fresh run of each method from the free stream until the
  density residual reaches ``to_residual`` (or ``max_iterations``), its iterations,
  seconds and CL, CD, CM.

The peer, SU2 (``SU2_CFD``), is in neither PyPI nor Debian: it is run only where a binary
is named by ``$TACHYFLOW_SU2`` (the binary or its folder) or ``$SU2_HOME/bin``, on the same
grid (written as an SU2 mesh) and conditions, to the same relative density residual
(:func:`run_su2`); otherwise ``peers_missing`` says why.
"""

from __future__ import annotations

import csv
import math
import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

from tachyflow import config, runtime
from tachyflow.bench.harness import Candidate, measure
from tachyflow.bench.peers import builds
from tachyflow.bench.plots import file_stem, plot_samples
from tachyflow.bench.results import new_results
from tachyflow.solvers.compressible.solver import CompressibleSolver

CASE = "rae2822"
METHODS = ("lu-sgs", "dp-sgs")
PEER_NAME = "SU2"


def case_at(cells=None, proc_grid=None, method: str = "dp-sgs"):
    """The ``rae2822`` case with ``cells = (ni, nj)`` (default the case's; the wake keeps
    its share of ``ni``), ``proc_grid`` and the relaxation ``method``."""
    case = config.load(CASE)
    section = case.compressible
    values = {"time_stepping": method}
    if cells is not None:
        ni, nj = (int(n) for n in cells)
        wake = section.wake_cells * ni / section.cells[0]
        if ni % 2 or wake != int(wake):
            raise ValueError(
                f"cells must keep the case's wake share ({section.wake_cells} of "
                f"{section.cells[0]} i cells) in whole cells, got ni = {ni}"
            )
        values.update(cells=(ni, nj), wake_cells=int(wake))
    case = case.replace("compressible", **values)
    if proc_grid is not None:
        case = case.replace("parallel", proc_grid=tuple(proc_grid))
    return case


def _solver(case, comm) -> CompressibleSolver:
    return CompressibleSolver.from_case(case, comm)


def _healthy(solver: CompressibleSolver) -> bool:
    """Finite residuals, the density residual fallen below its reference (every rank holds
    the same global norms)."""
    return bool(np.isfinite(solver.norms).all()) and solver.density_residual < 1.0


def run_mpins2d_benchmark(
    cells=None,
    proc_grid=None,
    repeats=5,
    warmup=20,
    iterations=5,
    to_residual=1e-3,
    max_iterations=3000,
    comm=None,
) -> dict:
    """Time both relaxations' iterations and, with ``to_residual`` (0: skip), their runs
    to that density residual (collective). Returns the results document."""
    comm = runtime.world() if comm is None else comm
    for name, value in (("repeats", repeats), ("iterations", iterations)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not isinstance(warmup, int) or warmup < 5:
        raise ValueError(f"warmup must be an integer >= 5 (the residual's reference), "
                         f"got {warmup!r}")
    if not (to_residual == 0 or 0 < to_residual < 1):
        raise ValueError(f"to_residual must be 0 (skip) or in (0, 1), got {to_residual!r}")
    cases = {method: case_at(cells, proc_grid, method) for method in METHODS}
    solvers = {method: _solver(case, comm) for method, case in cases.items()}
    for solver in solvers.values():
        for _ in range(warmup):
            solver.step(1.0)
    first = solvers[METHODS[0]]
    section = cases["dp-sgs"].compressible
    params = {
        "case": CASE,
        "global_shape": list(section.cells),
        "proc_grid": list(first.blocks.proc_grid),
        "dtype": "float64",
        "repeats": repeats,
        "warmup": warmup,
        "iterations_per_sample": iterations,
        "sweeps": {"lu-sgs": 1, "dp-sgs": section.sweeps},
        "wake_cells": section.wake_cells,
        "to_residual": to_residual,
        "max_iterations": max_iterations,
        "conditions": first.aerodynamic_summary()["conditions"],
    }
    document = new_results("mpins2d", params, comm)

    def iterate(solver):
        return lambda: [solver.step(1.0) for _ in range(iterations)]

    candidates = [
        Candidate(f"tachyflow-{method}", iterate(solver), _healthy(solver),
                  details={"method": method})
        for method, solver in solvers.items()
    ]
    before = {method: solver.steps for method, solver in solvers.items()}
    for solver in solvers.values():
        solver.clock.reset()
    measure(document, candidates, comm, repeats, 0, f"MPINS2D {section.cells[0]}x"
            f"{section.cells[1]}, {iterations} iterations")
    for entry in document["results"]:
        solver = solvers[entry["method"]]
        done = max(solver.steps - before[entry["method"]], 1)
        if entry["verified"]:
            entry["seconds_per_iteration"] = entry["median"] / iterations
            entry["phases_per_iteration"] = {
                phase: solver.blocks.maximum(seconds) / done
                for phase, seconds in solver.phase_seconds().items()
            }
        entry["density_residual"] = solver.density_residual
    for solver in solvers.values():
        solver.blocks.free()
    if to_residual:
        for entry in document["results"]:
            entry["to_residual"] = run_to_residual(
                cases[entry["method"]], comm, to_residual, max_iterations
            )
    return document


def run_to_residual(case, comm, target: float, max_iterations: int) -> dict:
    """A run of ``case`` from the free stream until its density residual reaches
    ``target`` (collective): iterations, the slowest rank's seconds, whether it got
    there, the final residual and the loads."""
    solver = _solver(case, comm)
    comm.Barrier()
    start = MPI.Wtime()
    while solver.steps < max_iterations:
        solver.step(1.0)
        if solver.steps >= 5 and solver.density_residual <= target:
            break
        if not np.isfinite(solver.norms).all():
            break
    seconds = comm.allreduce(MPI.Wtime() - start, op=MPI.MAX)
    summary = solver.aerodynamic_summary()
    solver.blocks.free()
    return {
        "target": target,
        "iterations": solver.steps,
        "seconds": seconds,
        "reached": bool(solver.density_residual <= target),
        "density_residual": summary["density_residual"],
        **{name: summary[name] for name in ("CL", "CD", "CM")},
    }


# -- the SU2 peer -------------------------------------------------------------------------


def find_su2(environment=None) -> tuple[Path | None, str]:
    """The ``SU2_CFD`` binary named by ``$TACHYFLOW_SU2`` (the binary or its folder) or
    ``$SU2_HOME/bin``, else built by ``make install-bench`` in the peers build folder, else
    on ``PATH``; ``(None, why)`` when there is none."""
    environment = os.environ if environment is None else environment
    places = []
    if environment.get("TACHYFLOW_SU2"):
        named = Path(environment["TACHYFLOW_SU2"])
        places.append(named / "SU2_CFD" if named.is_dir() else named)
    if environment.get("SU2_HOME"):
        places.append(Path(environment["SU2_HOME"]) / "bin" / "SU2_CFD")
    places.append(builds.build_folder(environment) / builds.PROGRAMS["su2"][0])
    on_path = shutil.which("SU2_CFD", path=environment.get("PATH"))
    places += [Path(on_path)] if on_path else []
    for place in places:
        if place.is_file() and os.access(place, os.X_OK):
            return place, ""
    looked = ", ".join(str(p) for p in places) or "no $TACHYFLOW_SU2, $SU2_HOME or PATH entry"
    return None, (
        f"no SU2_CFD binary ({looked}): SU2 is in neither PyPI nor Debian; put its source "
        f"archive (SU2-*.tar.gz) in ${builds.SOURCES_VARIABLE} and run `make "
        "install-bench`, or set $TACHYFLOW_SU2 to a binary or $SU2_HOME to its prefix"
    )


def su2_config(section, mesh: str, target: float, max_iterations: int) -> str:
    """An SU2 (v7/v8) configuration of the ``[compressible]`` section's case: RANS with
    SA, Roe with MUSCL and van Albada, implicit Euler pseudo time at the case's CFL, until
    the density residual relative to its first iterations reaches ``target``."""
    lines = {
        "SOLVER": "RANS" if section.turbulence == "sa" else "NAVIER_STOKES",
        "KIND_TURB_MODEL": "SA" if section.turbulence == "sa" else "NONE",
        "MATH_PROBLEM": "DIRECT",
        "RESTART_SOL": "NO",
        "MACH_NUMBER": repr(section.mach),
        "AOA": repr(section.alpha),
        "FREESTREAM_TEMPERATURE": repr(section.temperature),
        "REYNOLDS_NUMBER": repr(section.reynolds),
        "REYNOLDS_LENGTH": "1.0",
        "REF_ORIGIN_MOMENT_X": "0.25",
        "REF_ORIGIN_MOMENT_Y": "0.0",
        "REF_ORIGIN_MOMENT_Z": "0.0",  # SU2 8 refuses an X and Y without a Z
        "REF_LENGTH": "1.0",
        "REF_AREA": "1.0",
        "MARKER_HEATFLUX": "( airfoil, 0.0 )",
        "MARKER_FAR": "( farfield )",
        "MARKER_MONITORING": "( airfoil )",
        "NUM_METHOD_GRAD": "GREEN_GAUSS",
        "CFL_NUMBER": repr(section.cfl),
        "CONV_NUM_METHOD_FLOW": "ROE",
        "MUSCL_FLOW": "YES",
        "SLOPE_LIMITER_FLOW": "VAN_ALBADA_EDGE",
        "CONV_NUM_METHOD_TURB": "SCALAR_UPWIND",
        "TIME_DISCRE_FLOW": "EULER_IMPLICIT",
        "TIME_DISCRE_TURB": "EULER_IMPLICIT",
        "LINEAR_SOLVER": "FGMRES",
        "LINEAR_SOLVER_PREC": "LU_SGS",
        "ITER": str(max_iterations),
        "CONV_FIELD": "REL_RMS_DENSITY",
        "CONV_RESIDUAL_MINVAL": repr(math.log10(target)),
        "CONV_STARTITER": "5",
        "MESH_FILENAME": mesh,
        "MESH_FORMAT": "SU2",
        "CONV_FILENAME": "history",
        "TABULAR_FORMAT": "CSV",
        "HISTORY_OUTPUT": "( ITER, RMS_RES, REL_RMS_RES, AERO_COEFF )",
        "OUTPUT_FILES": "( RESTART )",
    }
    return "".join(f"{key}= {value}\n" for key, value in lines.items())


def read_su2_history(path) -> dict:
    """The last row of an SU2 ``history.csv``: iterations, the relative density residual
    (SU2 writes its log10, column ``relrms[Rho]``) and CL, CD and CM (SU2's CMz is
    positive nose-down, about +z: CM = -CMz, positive nose-up as ours)."""
    with open(path, newline="") as handle:
        rows = [
            {key.strip().strip('"'): value.strip() for key, value in row.items()}
            for row in csv.DictReader(handle)
        ]
    if not rows:
        raise RuntimeError(f"{path} has no iterations")
    last = rows[-1]
    return {
        "iterations": int(float(last["Inner_Iter"])) + 1,
        "density_residual": 10.0 ** float(last["relrms[Rho]"]),
        "CL": float(last["CL"]),
        "CD": float(last["CD"]),
        "CM": -float(last["CMz"]),
    }


def run_su2(binary, section, grid, ranks: int, folder, target: float, max_iterations: int):
    """Run SU2 on ``grid`` (written as an SU2 mesh) and the section's conditions on
    ``ranks`` processes in ``folder`` until ``target``; returns its peers entry (seconds
    of the whole run, iterations, residual, loads)."""
    from tachyflow.io.plot3d import write_su2

    folder = Path(folder)
    write_su2(folder / "mesh.su2", grid)
    (folder / "case.cfg").write_text(su2_config(section, "mesh.su2", target, max_iterations))
    command = [str(binary), "case.cfg"]
    if ranks > 1:
        # SU2 is built with Debian's MPICH (peers/build.sh): its launcher, as for the other
        # peers (`mpiexec` on PATH may be Open MPI's).
        command = [*builds.launcher(ranks), *command]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        # SU2 prints its errors on stdout; stderr holds only MPI_Abort's line.
        output = (done.stdout[-800:] + done.stderr[-300:]).strip()
        raise RuntimeError(f"SU2_CFD failed ({done.returncode}): {output}")
    history = read_su2_history(folder / "history.csv")
    return {
        "name": PEER_NAME,
        "verified": bool(np.isfinite(history["density_residual"])),
        "binary": str(binary),
        "to_residual": {
            "target": target,
            "seconds": seconds,
            "reached": bool(history["density_residual"] <= target),
            **history,
        },
    }


def compare_with_peer(document: dict) -> None:
    """Each of our runs to the residual against the peer's: time ratio, CL and CD
    differences (ours less the peer's)."""
    peer = next((p for p in document["peers"] if p.get("verified")), None)
    if peer is None:
        return
    theirs = peer["to_residual"]
    for entry in document["results"]:
        ours = entry.get("to_residual")
        if ours and ours["reached"] and theirs["reached"]:
            entry["speedup_vs_peer_to_residual"] = theirs["seconds"] / ours["seconds"]
        if ours:
            entry["CL_minus_peer"] = ours["CL"] - theirs["CL"]
            entry["CD_minus_peer"] = ours["CD"] - theirs["CD"]


def stem(document: dict) -> str:
    """File name stem: ``mpins2d_140x32_2x1``."""
    return file_stem(document)


def plot(document: dict, path):
    """Box plot of the time per sample of each method."""
    params = document["params"]
    shape = "x".join(map(str, params["global_shape"]))
    title = (
        f"MPINS2D (RAE 2822) {shape}, {document['mpi']['ranks']} ranks: "
        f"{params['iterations_per_sample']} iterations"
    )
    return plot_samples(document, path, title, "time [ms]")
