"""CaNS beside ``tachyflow bench step``: the same channel, grid, process grid and Δt.

CaNS (Costa, "A FFT-based finite-difference solver for massively-parallel direct numerical
simulations of turbulent flows"; Fortran, 2DECOMP&FFT) is built by ``make install-bench``
and run by the command outside MPI, as its own job on as many ranks, right after ours. It
is given an ``input.nml`` made from the channel case: walls in CaNS's z (ours are in y, so
y and z swap), the same tanh wall clustering (CaNS's ``gr`` is twice our ``stretching``),
viscosity, constant flow rate, a fixed Δt (ours), implicit wall-normal diffusion as ours,
z-aligned pencils (the wall-normal direction whole on each rank, as ours in y-pencils) on
the same ``p_row × p_col`` grid, and no output. CaNS times every step itself
(``is_timing``); the slowest rank's times after the warm-up steps are the samples. The
divergence check on the last step (excluded from the samples) verifies the run.
"""

from __future__ import annotations

import math
import os
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

from tachyflow import runtime
from tachyflow.bench.peers import builds

PEER_NAME = "CaNS"
DIVERGENCE_TOLERANCE = 1e-9
NAMELIST = """&dns
ng(1:3) = {nx}, {nz}, {ny}
l(1:3) = {lx!r}, {lz!r}, {ly!r}
gtype = 1, gr = {gr!r}
cfl = 0.95, dtmax = 1.e5, dt_f = {dt!r}
visci = {visci!r}
inivel = 'poi'
is_wallturb = T
nstep = {steps}, time_max = 1.e9, tw_max = 1.e9
stop_type(1:3) = T, F, F
restart = F, is_overwrite_save = T, nsaves_max = 0
icheck = {steps}, iout0d = 0, iout1d = 0, iout2d = 0, iout3d = 0, isave = 0
cbcvel(0:1,1:3,1) = 'P','P',  'P','P',  'D','D'
cbcvel(0:1,1:3,2) = 'P','P',  'P','P',  'D','D'
cbcvel(0:1,1:3,3) = 'P','P',  'P','P',  'D','D'
cbcpre(0:1,1:3)   = 'P','P',  'P','P',  'N','N'
bcvel(0:1,1:3,1) =  0.,0.,   0.,0.,   0.,0.
bcvel(0:1,1:3,2) =  0.,0.,   0.,0.,   0.,0.
bcvel(0:1,1:3,3) =  0.,0.,   0.,0.,   0.,0.
bcpre(0:1,1:3)   =  0.,0.,   0.,0.,   0.,0.
bforce(1:3) = 0., 0., 0.
is_forced(1:3) = T, F, F
velf(1:3) = {bulk!r}, 0., 0.
dims(1:2) = {p_row}, {p_col}, ipencil_axis = 3
/

&numerics
is_impdiff = T, is_impdiff_1d = T
is_poisson_dtdma = F
/

&other_options
is_debug = F, is_timing = T
/

&io
io_backend = 'mpiio'
/
"""
_STEP_TIMES = re.compile(r"Average, minimum & maximum elapsed time:\s*\n\s*(\S+)\s+(\S+)\s+(\S+)")
_DIVERGENCE = re.compile(r"Velocity divergence norms: Mean =\s*(\S+)\s*\|\s*Maximum =\s*(\S+)")


def input_namelist(
    shape, lengths, stretching, viscosity, bulk_velocity, dt, steps, proc_grid
) -> str:
    """CaNS's ``input.nml`` for our channel (walls in our y), ``steps`` steps of ``dt``.

    Raises
    ------
    ValueError
        ``steps`` below 2 (the last step checks the divergence and is not a sample) or a
        non-positive ``dt``/``viscosity``.
    """
    if not isinstance(steps, int) or steps < 2:
        raise ValueError(f"CaNS needs at least 2 steps, got {steps!r}")
    if not (dt > 0 and viscosity > 0):
        raise ValueError(f"dt and viscosity must be positive, got {dt!r} and {viscosity!r}")
    (nx, ny, nz), (lx, ly, lz) = shape, lengths
    return NAMELIST.format(
        nx=nx, ny=ny, nz=nz, lx=float(lx), ly=float(ly), lz=float(lz),
        gr=2.0 * float(stretching), dt=float(dt), visci=1.0 / float(viscosity),
        bulk=float(bulk_velocity), steps=steps, p_row=proc_grid[0], p_col=proc_grid[1],
    )


def parse_log(text: str) -> dict:
    """Per-step times (slowest rank, s) and the last divergence norms from CaNS's output."""
    divergence = _DIVERGENCE.findall(text)
    return {
        "step_times": [float(maximum) for _, _, maximum in _STEP_TIMES.findall(text)],
        "max_divergence": float(divergence[-1][1]) if divergence else None,
        "finished": "*** Fim ***" in text,
    }


def peer_entry(log: dict, warmup: int) -> dict:
    """The ``peers`` entry of a CaNS run: samples after ``warmup`` steps, last step excluded.

    Raises
    ------
    RuntimeError
        Too few timed steps (CaNS stopped early).
    """
    samples = log["step_times"][warmup:-1]
    if not samples:
        raise RuntimeError(
            f"CaNS printed {len(log['step_times'])} step times, fewer than the "
            f"{warmup} warm-up steps + 2 needed"
        )
    divergence = log["max_divergence"]
    verified = (
        log["finished"]
        and divergence is not None
        and divergence < DIVERGENCE_TOLERANCE
        and all(math.isfinite(s) for s in samples)
    )
    return {
        "name": PEER_NAME,
        "verified": bool(verified),
        "max_divergence": divergence,
        "samples": samples,
        "median": statistics.median(samples),
        "min": min(samples),
        "mean": statistics.fmean(samples),
        "max": max(samples),
    }


def run_cans(
    ranks: int, namelist: str, warmup: int, program: Path | None = None, timeout: float = 1800
) -> dict:
    """Run CaNS on ``ranks`` ranks with ``namelist`` in a scratch folder; its peers entry.

    Raises
    ------
    tachyflow.bench.peers.builds.PeerMissing
        CaNS is not built.
    RuntimeError
        CaNS failed; the message has the end of its output.
    """
    program = builds.find("cans") if program is None else Path(program)
    with tempfile.TemporaryDirectory(prefix="tachyflow-cans-") as folder:
        Path(folder, "input.nml").write_text(namelist)
        Path(folder, "data").mkdir()
        completed = subprocess.run(
            [*builds.launcher(ranks), str(program)],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**runtime.ONE_THREAD_PER_RANK, **os.environ},
        )
    output = completed.stdout + completed.stderr
    if completed.returncode:
        raise RuntimeError(f"CaNS failed (exit {completed.returncode}): {output[-800:]}")
    return {**peer_entry(parse_log(output), warmup), "ranks": ranks, "program": str(program)}


NOT_BESIDE = "runs as its own MPI job after ours when started by `tachyflow bench step -n N`"


def measure_beside(document: dict, ranks: int) -> dict:
    """Run CaNS on the case of a ``bench step`` results document and compare (not MPI).

    Appends CaNS's entry to ``document["peers"]``, sets ``speedup_vs_peer`` on our verified
    results and CaNS's ``ratio_to_memory_bound``; on failure records why in
    ``peers_missing`` instead. Returns ``document``.
    """
    from tachyflow import config

    params = document["params"]
    case = config.load("channel")
    missing = document.setdefault("peers_missing", {})
    try:
        namelist = input_namelist(
            params["global_shape"],
            case.grid.lengths,
            case.grid.stretching,
            case.flow.viscosity,
            case.flow.forcing_value,
            params["dt"],
            params["warmup"] + params["repeats"] + 1,
            params["proc_grid"],
        )
        entry = run_cans(ranks, namelist, params["warmup"])
    except (builds.PeerMissing, RuntimeError, OSError, subprocess.SubprocessError) as error:
        missing[PEER_NAME] = str(error)
        return document
    missing.pop(PEER_NAME, None)
    if not missing:
        del document["peers_missing"]
    bound = document.get("model", {}).get("memory_bound", {}).get("median")
    if bound and entry["verified"]:
        entry["ratio_to_memory_bound"] = entry["median"] / bound
    document["peers"].append(entry)
    for result in document["results"]:
        if result["verified"] and entry["verified"]:
            result["speedup_vs_peer"] = entry["median"] / result["median"]
    return document
