"""``tachyflow bench unstructured``: Jeon & Choi's strong-scaling study of the pressure solver.

Under one launch (one rank count) :func:`run_unstructured_benchmark` builds each box mesh
of the requested cell counts on rank 0, distributes it with METIS, and times repeated
Jacobi-CG solves of ``-∇²p = 1`` with ``p = 0`` on the walls: time per solve and per
iteration, iterations, the split into local products, halo exchange, reductions and the
rest, and memory per rank (the solver's matrix and vectors, and the process's peak
resident size, which includes the whole mesh on rank 0 and Python itself).
The command line runs one launch per rank count, then merges them
(:func:`merge`): speedup and efficiency against one rank, communication share, and the
memory column of Jeon & Choi's Table 2 beside ours. With ``--petsc-grid N`` every launch
also solves the N³ 7-point Laplacian, and PETSc's KSPCG + PCJACOBI solves the same
matrix as a separate process (:mod:`tachyflow.bench.peers.petsc`) for the ratio.
"""

from __future__ import annotations

import resource

import numpy as np
from mpi4py import MPI

from tachyflow import runtime
from tachyflow.bench.results import new_results
from tachyflow.errors import ConvergenceError
from tachyflow.io.figures import new_subplots, save_figure
from tachyflow.io.mesh_generators import box_hex_mesh, box_mesh
from tachyflow.numerics import finite_volume
from tachyflow.solvers.unstructured.solver import UnstructuredPressureSolver

# Jeon & Choi, Table 2: memory of the serial code per problem size (MB).
SEED_MEMORY_MB = {53280: 20, 144000: 40, 288305: 120, 1472000: 480}
LAPLACIAN = "laplacian"


def _peak_memory_bytes() -> int:
    """This process's peak resident size (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _measure(comm, name, mesh, cells, repeats, rtol, method, halo, reduction) -> dict:
    """Set up the solver on ``mesh`` (rank 0) and time ``repeats`` solves (collective)."""
    solver = UnstructuredPressureSolver(
        comm, mesh, source=1.0, boundary_value=0.0, halo=halo, reduction=reduction
    )
    solver.solve(method, rtol=rtol)  # warm-up: plans, pages, caches
    summaries = []
    for _ in range(repeats):
        summaries.append(solver.solve(method, rtol=rtol)[1])
    arrays = solver.matrix.data.nbytes + solver.matrix.indices.nbytes
    arrays += solver.matrix.indptr.nbytes + 12 * solver.decomposition.cells.size * 8
    solver.free()
    seconds = [s.seconds for s in summaries]
    median = summaries[int(np.argsort(seconds)[len(seconds) // 2])]
    communication = median.timings["halo"] + median.timings["reductions"]
    return {
        "name": name,
        "cells": cells,
        "verified": True,
        "ranks": comm.Get_size(),
        "method": method,
        "iterations": median.iterations,
        "residual": median.residual,
        "samples": seconds,
        "median": float(np.median(seconds)),
        "min": float(np.min(seconds)),
        "per_iteration": float(np.median(seconds)) / max(median.iterations, 1),
        "timings": median.timings,
        "communication_share": communication / median.seconds,
        "memory_per_rank": comm.allreduce(_peak_memory_bytes(), op=MPI.MAX),
        "solver_arrays_per_rank": comm.allreduce(arrays, op=MPI.MAX),
    }


def run_unstructured_benchmark(
    cells=(53280, 144000),
    kind: str = "hex",
    repeats: int = 3,
    rtol: float = 1e-8,
    method: str = "cg",
    halo: str = "p2p",
    reduction: str = "native",
    laplacian: int | None = None,
    comm=None,
) -> dict:
    """Solve on every mesh size at this launch's rank count (collective)."""
    comm = runtime.world() if comm is None else comm
    params = {
        "cells": list(cells),
        "kind": kind,
        "repeats": repeats,
        "rtol": rtol,
        "method": method,
        "halo": halo,
        "reduction": reduction,
        "laplacian": laplacian,
        "problem": "-lap p = 1 in the box, p = 0 on the walls; two-point flux finite volumes",
    }
    document = new_results("unstructured", params, comm)
    work = [(f"box-{kind}-{count}", count, lambda c=count: box_mesh(c, kind)) for count in cells]
    if laplacian:
        shape = (laplacian,) * 3
        work.append((LAPLACIAN, laplacian**3, lambda: box_hex_mesh(shape)))
    for name, count, build in work:
        mesh = build() if comm.Get_rank() == 0 else None
        try:
            entry = _measure(comm, name, mesh, count, repeats, rtol, method, halo, reduction)
        except ConvergenceError as error:
            entry = {"name": name, "cells": count, "verified": False, "error": str(error)}
        document["results"].append(entry)
    return document


def laplacian_system(grid: int):
    """The N³ 7-point Laplacian of the benchmark (matrix and right-hand side), serially:
    what PETSc is given to solve."""
    mesh = box_hex_mesh((grid,) * 3)
    faces = finite_volume.face_transmissibilities(
        mesh.centroids, mesh.face_cells, mesh.face_areas, mesh.face_normals
    )
    boundary = finite_volume.boundary_transmissibilities(
        mesh.centroids, mesh.boundary_cells, mesh.boundary_areas, mesh.boundary_normals,
        mesh.boundary_centroids,
    )
    n = mesh.n_cells
    matrix = finite_volume.assemble_rows(
        n, n, mesh.face_cells, faces, mesh.boundary_cells, boundary
    )
    rhs = finite_volume.right_hand_side(
        n, mesh.volumes, np.ones(n), mesh.boundary_cells, boundary, np.zeros(boundary.size)
    )
    return matrix, rhs


def merge(documents: list[dict], peers: list[dict]) -> dict:
    """One document from the launches at each rank count: speedup and efficiency against
    the one-rank time of the same mesh, the paper's memory beside ours, PETSc's ratio."""
    merged = dict(documents[0])
    merged["params"] = {**merged["params"], "ranks": [d["mpi"]["ranks"] for d in documents]}
    results = [entry for document in documents for entry in document["results"]]
    serial = {e["name"]: e["median"] for e in results if e["verified"] and e["ranks"] == 1}
    for entry in results:
        if not entry["verified"]:
            continue
        if entry["name"] in serial:
            entry["speedup"] = serial[entry["name"]] / entry["median"]
            entry["efficiency"] = entry["speedup"] / entry["ranks"]
        if entry["cells"] in SEED_MEMORY_MB and entry["name"] != LAPLACIAN:
            entry["seed_memory_mb"] = SEED_MEMORY_MB[entry["cells"]]
        for peer in peers:
            if entry["name"] == LAPLACIAN and peer.get("ranks") == entry["ranks"]:
                entry["petsc_iterations"] = peer["iterations"]
                entry["speedup_vs_peer"] = peer["per_iteration"] / entry["per_iteration"]
    merged["results"] = results
    merged["peers"] = peers
    return merged


def stem(document: dict) -> str:
    """File name stem: ``unstructured_hex``."""
    return f"unstructured_{document['params']['kind']}"


def plot(document: dict, path):
    """Speedup, communication share and memory per rank against rank count."""
    figure, (speed, share, memory) = new_subplots(1, 3, figsize=(14, 4.2))
    names = sorted({e["name"] for e in document["results"] if e["verified"]})
    ranks = sorted({e["ranks"] for e in document["results"]})
    for name in names:
        entries = sorted(
            (e for e in document["results"] if e["name"] == name and e["verified"]),
            key=lambda e: e["ranks"],
        )
        x = [e["ranks"] for e in entries]
        if all("speedup" in e for e in entries):
            speed.plot(x, [e["speedup"] for e in entries], marker="o", label=name)
        share.plot(x, [100 * e["communication_share"] for e in entries], marker="o", label=name)
        arrays = [e["solver_arrays_per_rank"] / 2**20 for e in entries]
        memory.plot(x, arrays, marker="o", label=name)
        if "seed_memory_mb" in entries[0]:
            memory.axhline(entries[0]["seed_memory_mb"], linestyle=":", color="grey")
    speed.plot(ranks, ranks, linestyle="--", color="grey", label="ideal")
    speed.set_ylabel("speedup over 1 rank")
    share.set_ylabel("halo + reductions [% of solve]")
    memory.set_ylabel("solver arrays per rank [MiB] (dotted: Jeon & Choi, serial)")
    for axis in (speed, share, memory):
        axis.set_xlabel("ranks")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    figure.suptitle("Jacobi-CG on unstructured boxes (Jeon & Choi's study)", fontsize=10)
    return save_figure(figure, path)
