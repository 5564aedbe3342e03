"""``tachyflow bench hpl``: High-Performance Linpack, ours against Debian's HPCC.

:func:`run_hpl_benchmark` solves HPL's random system (:mod:`tachyflow.programs.hpl.solver`)
for each order N and panel broadcast, times factorisation plus solve as HPL does (slowest
rank, median of the repeats), checks HPL's scaled residual and makes the results
document; :mod:`tachyflow.bench.peers.hpcc` runs HPL inside Debian's ``hpcc`` on the same
N, NB and P × Q, and :func:`compare_with_peer` sets the ratio. GFLOP/s are HPL's:
``(2/3 N³ + 3/2 N²) / time`` (:func:`hpl_flops`).
"""

from __future__ import annotations

import itertools
import re
from functools import partial

from tachyflow.bench.results import new_results, summarize
from tachyflow.io.figures import new_subplots, save_figure

# HPL's pass mark for the scaled residual.
RESIDUAL_THRESHOLD = 16.0


def hpl_flops(n: int) -> float:
    """Floating-point operations HPL credits to solving a system of order ``n``."""
    return 2.0 / 3.0 * n**3 + 1.5 * n**2


def run_hpl_benchmark(
    sizes, block: int, grid_shape, broadcasts, repeats: int, comm, seed: int = 42,
    matrix=None,
) -> dict:
    """Solve HPL's system for every order in ``sizes`` with every panel broadcast in
    ``broadcasts`` on a ``grid_shape`` = (P, Q) grid of ``comm`` (collective): the
    results document, one entry per (broadcast, N). ``matrix(rows, columns, out)`` fills
    a piece of ``[A | b]`` (default: HPL's random matrix number ``seed``).

    A singular matrix is a result, not an error: its entry has ``singular`` true, the
    column of the first zero pivot, no GFLOP/s and a failed check.

    Raises
    ------
    ValueError
        A size or block below 1, P × Q not the number of ranks, an unknown broadcast, or
        repeats below 1 (on every rank alike).
    """
    from mpi4py import MPI

    from tachyflow.numerics.lu import random_block
    from tachyflow.parallel.process_grid import ProcessGrid
    from tachyflow.programs.hpl.solver import BROADCASTS, DistributedLU

    if repeats < 1:
        raise ValueError(f"repeats must be a positive integer, got {repeats!r}")
    unknown = [b for b in broadcasts if b not in BROADCASTS]
    if unknown or not broadcasts:
        raise ValueError(f"broadcasts must be among {sorted(BROADCASTS)}, got {broadcasts!r}")
    rows, cols = grid_shape
    grid = ProcessGrid(comm, rows, cols)
    matrix = matrix or partial(random_block, seed=seed)
    params = {
        "sizes": [int(n) for n in sizes],
        "block": block,
        "proc_grid": [rows, cols],
        "broadcasts": list(broadcasts),
        "repeats": repeats,
        "seed": seed,
        "look_ahead": 1,
    }
    document = new_results("hpl", params, comm)
    try:
        for n in sizes:
            solver = DistributedLU(grid, n, block, broadcasts[0])
            samples = {b: [] for b in broadcasts}
            checks = {b: [] for b in broadcasts}
            zero_pivot, measured = -1, broadcasts
            # Broadcasts interleaved repeat by repeat: a change of load hits them alike.
            for _, broadcast in itertools.product(range(repeats), broadcasts):
                solver.broadcast = broadcast
                solver.generate(matrix)
                grid.barrier()
                started = MPI.Wtime()
                zero_pivot = solver.factor()
                x = solver.solve() if zero_pivot < 0 else None
                samples[broadcast].append(comm.allreduce(MPI.Wtime() - started, op=MPI.MAX))
                if zero_pivot >= 0:  # the same matrix for every broadcast: stop
                    measured = [broadcast]
                    break
                checks[broadcast].append(solver.residual(matrix, x))
            document["results"] += [
                _entry(n, block, (rows, cols), b, samples[b], checks[b], zero_pivot)
                for b in measured
            ]
            del solver  # its matrix before the next one's
    finally:
        grid.free()
    return document


def _entry(n, block, grid_shape, broadcast, samples, checks, zero_pivot) -> dict:
    timing = summarize(samples)
    singular = zero_pivot >= 0
    residual = max((c["residual"] for c in checks), default=None)
    passed = not singular and residual is not None and residual < RESIDUAL_THRESHOLD
    return {
        "name": f"tachyflow {broadcast}",
        "broadcast": broadcast,
        "n": int(n),
        "nb": int(block),
        "proc_grid": list(grid_shape),
        "verified": passed,
        "singular": singular,
        "zero_pivot_column": int(zero_pivot) if singular else None,
        "residual": residual,
        "residual_passed": passed,
        "gflops": None if singular else hpl_flops(n) / timing["median"] / 1e9,
        "checks": checks,
        **timing,
    }


def compare_with_peer(document: dict) -> None:
    """Set ``speedup_vs_peer`` (our GFLOP/s over the peer's at the same N) on every result
    that has a peer measured at its N."""
    peers = {p["n"]: p for p in document["peers"] if p.get("gflops")}
    for entry in document["results"]:
        peer = peers.get(entry["n"])
        if peer and entry["gflops"]:
            entry["speedup_vs_peer"] = entry["gflops"] / peer["gflops"]


def stem(document: dict) -> str:
    """File name stem: ``hpl_1x2_2ranks``, with the emulated network when there is one
    (``hpl_1x2_2ranks_1gbit``)."""
    params, mpi = document["params"], document["mpi"]
    grid = "x".join(map(str, params["proc_grid"]))
    network = mpi.get("network", "shared memory")
    suffix = "" if network == "shared memory" else "_" + re.sub(r"\W+", "", network.lower())
    return f"hpl_{grid}_{mpi['ranks']}ranks{suffix}"


def plot(document: dict, path):
    """GFLOP/s against N for every broadcast and the peer (HPL's figure of Lee, Hong, Lee
    & Lee, "Performance Analysis of Cluster Network Interfaces for Parallel Computing of
    Computational Fluid Dynamics")."""
    figure, axes = new_subplots(figsize=(7, 4.5))
    series: dict[str, list] = {}
    for entry in document["results"] + document["peers"]:
        if entry.get("gflops") and entry.get("residual_passed"):
            series.setdefault(entry["name"], []).append((entry["n"], entry["gflops"]))
    for name, points in series.items():
        points.sort()
        style = "--s" if any(name == p["name"] for p in document["peers"]) else "-o"
        axes.plot(*zip(*points, strict=True), style, label=name)
    params, mpi = document["params"], document["mpi"]
    axes.set_xlabel("N")
    axes.set_ylabel("GFLOP/s (HPL's count, residual passed)")
    axes.set_title(
        f"HPL, NB={params['block']}, {'x'.join(map(str, params['proc_grid']))} grid, "
        f"{mpi['ranks']} ranks, {mpi.get('network', 'shared memory')}",
        fontsize=10,
    )
    axes.grid(alpha=0.3)
    if series:
        axes.legend(fontsize=8)
    return save_figure(figure, path)
