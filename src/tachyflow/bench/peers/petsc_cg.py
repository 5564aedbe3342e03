"""PETSc KSPCG + PCJACOBI on a matrix from a file: the peer of tachyflow's distributed CG.

Run by the system Python (Debian's ``python3-petsc4py``) under the MPI launcher PETSc was
built against, as its own process: it must not import tachyflow, whose MPI library is a
different one. Only the standard library, numpy and petsc4py are used.

Input: an ``.npz`` with the scipy CSR arrays ``data``, ``indices``, ``indptr`` and ``shape``
of the global symmetric positive-definite matrix, and ``rhs``. Every rank reads the file
and keeps its contiguous block of rows, split as PETSc splits rows by default. The solve
(zero initial guess, ``atol = 0``) runs once to warm up and then ``--repeats`` times, each
timed from a barrier to the slowest rank. Rank 0 prints one line of JSON.

Options after ``--`` (or any that this script does not know) go to PETSc, so
``-log_view`` or ``-ksp_monitor`` can be added for a closer look.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time
import traceback

import numpy as np

PEER_NAME = "petsc-kspcg-jacobi"
NORMS = ("unpreconditioned", "preconditioned", "natural")
KEYS = ("data", "indices", "indptr", "shape", "rhs")


def parse_arguments(argv: list[str] | None = None) -> tuple[argparse.Namespace, list[str]]:
    """Command line: the matrix file and the solver settings; the rest is for PETSc.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name; ``sys.argv[1:]`` when omitted.

    Returns
    -------
    arguments : argparse.Namespace
        ``matrix``, ``rtol``, ``max_iterations``, ``repeats`` and ``norm``.
    petsc_options : list of str
        Arguments this script does not know, passed to PETSc's options database.
    """
    parser = argparse.ArgumentParser(
        description="Solve A x = b from an .npz file with PETSc KSPCG + PCJACOBI and print "
        "the iteration count and solve times as one line of JSON (rank 0).",
        epilog="Unknown options (e.g. -log_view, -ksp_monitor) are passed to PETSc.",
    )
    parser.add_argument("matrix", help="npz with CSR data, indices, indptr, shape and rhs")
    parser.add_argument(
        "--rtol", type=float, default=1e-8, help="relative tolerance (default: 1e-8)"
    )
    parser.add_argument(
        "--max-iterations",
        type=int,
        default=10000,
        help="iteration limit (default: 10000)",
    )
    parser.add_argument(
        "--repeats", type=int, default=5, help="timed solves after a warm-up (default: 5)"
    )
    parser.add_argument(
        "--norm",
        choices=NORMS,
        default="unpreconditioned",
        help="residual norm the tolerance applies to (default: unpreconditioned, "
        "||b - A x||; PETSc's own default for CG is preconditioned)",
    )
    arguments, petsc_options = parser.parse_known_args(argv)
    if not arguments.rtol > 0:
        parser.error(f"--rtol must be positive, got {arguments.rtol}")
    if arguments.max_iterations < 1:
        parser.error(f"--max-iterations must be at least 1, got {arguments.max_iterations}")
    if arguments.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {arguments.repeats}")
    return arguments, [option for option in petsc_options if option != "--"]


def load_system(path: str) -> dict[str, np.ndarray]:
    """The CSR arrays and right-hand side from ``path``, checked for consistency.

    Raises
    ------
    ValueError
        A key is missing, the matrix is not square, or the arrays disagree in length.
    """
    with np.load(path) as archive:
        missing = [key for key in KEYS if key not in archive.files]
        if missing:
            raise ValueError(
                f"{path}: missing key(s) {', '.join(missing)}; expected {', '.join(KEYS)}"
            )
        system = {key: archive[key] for key in KEYS}
    rows, columns = (int(n) for n in system["shape"])
    if rows != columns:
        raise ValueError(f"{path}: the matrix is {rows}x{columns}, CG needs a square one")
    if system["indptr"].shape != (rows + 1,):
        raise ValueError(
            f"{path}: indptr has {system['indptr'].size} entries, expected {rows + 1}"
        )
    if system["indices"].size != system["data"].size or system["indptr"][-1] != len(
        system["data"]
    ):
        raise ValueError(
            f"{path}: indices ({system['indices'].size}), data ({system['data'].size}) and "
            f"indptr[-1] ({system['indptr'][-1]}) must agree"
        )
    if system["rhs"].shape != (rows,):
        raise ValueError(f"{path}: rhs has shape {system['rhs'].shape}, expected ({rows},)")
    return system


def ownership(rows: int, size: int, rank: int) -> tuple[int, int]:
    """First and one-past-last row of ``rank``: PETSc's default split (PetscSplitOwnership).

    The first ``rows % size`` ranks get one row more, so the blocks match what PETSc would
    choose itself with ``PETSC_DECIDE``.
    """
    base, extra = divmod(rows, size)
    start = rank * base + min(rank, extra)
    return start, start + base + (1 if rank < extra else 0)


def mpi_library_version() -> str:
    """``MPI_Get_library_version`` of the MPI library this process has loaded.

    petsc4py does not expose it and mpi4py may be absent from the system Python, so the
    already loaded ``libmpi`` is looked up in ``/proc/self/maps`` and called with ctypes
    (dlopen of a loaded library returns the same handle, so this is the same library).
    """
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/libmpi" in line}
    except OSError:
        return "unknown"
    for path in sorted(paths):
        if not path.rsplit("/", 1)[-1].startswith(("libmpi.so", "libmpich.so")):
            continue
        try:
            function = ctypes.CDLL(path).MPI_Get_library_version
        except (OSError, AttributeError):
            continue
        # MPICH's MPI_MAX_LIBRARY_VERSION_STRING is 8192, Open MPI's 256: take the larger.
        buffer = ctypes.create_string_buffer(8192)
        length = ctypes.c_int(0)
        if function(buffer, ctypes.byref(length)) == 0:
            return buffer.value.decode(errors="replace").strip()
    return "unknown"


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, start PETSc and run :func:`solve`; abort the job on errors."""
    arguments, petsc_options = parse_arguments(argv)

    # petsc4py must see its options before PETSc is imported, which initialises it.
    import petsc4py

    petsc4py.init([sys.argv[0], *petsc_options])
    from petsc4py import PETSc

    try:
        return solve(arguments, PETSc)
    except Exception:
        # An error on one rank would leave the others waiting in a collective, and a normal
        # exit would run PetscFinalize/MPI_Finalize, which can wait for them too. Leaving
        # at once with a failure status makes mpiexec take the whole job down instead
        # (petsc4py 3.18 offers no MPI_Abort).
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)


def solve(arguments: argparse.Namespace, PETSc) -> int:
    """Build the matrix, solve ``1 + repeats`` times, print the JSON line on rank 0."""
    comm = PETSc.COMM_WORLD
    rank, size = comm.getRank(), comm.getSize()
    system = load_system(arguments.matrix)
    rows = int(system["shape"][0])
    start, stop = ownership(rows, size, rank)
    indptr = system["indptr"]
    first, last = int(indptr[start]), int(indptr[stop])
    local_indptr = (indptr[start : stop + 1] - first).astype(PETSc.IntType)
    local_indices = system["indices"][first:last].astype(PETSc.IntType)
    local_data = system["data"][first:last].astype(PETSc.ScalarType)
    local_rows = stop - start

    # createAIJ with csr= preallocates exactly from the row structure (no mallocs during
    # assembly); giving the local sizes explicitly pins the split computed above.
    matrix = PETSc.Mat().createAIJ(
        size=((local_rows, rows), (local_rows, rows)),
        csr=(local_indptr, local_indices, local_data),
        comm=comm,
    )
    matrix.assemble()
    solution, rhs = matrix.createVecs()
    rhs.setArray(system["rhs"][start:stop].astype(PETSc.ScalarType))
    rhs_norm = rhs.norm()
    if rhs_norm == 0:
        raise ValueError(f"{arguments.matrix}: rhs is zero, relative residuals are undefined")
    del system

    ksp = PETSc.KSP().create(comm=comm)
    ksp.setOperators(matrix)
    ksp.setType(PETSc.KSP.Type.CG)
    ksp.getPC().setType(PETSc.PC.Type.JACOBI)
    ksp.setTolerances(rtol=arguments.rtol, atol=0.0, max_it=arguments.max_iterations)
    ksp.setNormType(getattr(PETSc.KSP.NormType, arguments.norm.upper()))
    ksp.setInitialGuessNonzero(False)
    ksp.setFromOptions()
    ksp.setUp()

    # One entry per rank: the slowest rank's time is this vector's maximum, which avoids
    # needing mpi4py in the system Python.
    slowest = PETSc.Vec().createMPI((1, size), comm=comm)
    times, iterations = [], []
    for repeat in range(1 + arguments.repeats):
        solution.set(0.0)
        comm.barrier()
        began = time.perf_counter()
        ksp.solve(rhs, solution)
        elapsed = time.perf_counter() - began
        slowest.setValue(rank, elapsed)
        slowest.assemble()
        if repeat:  # repeat 0 is the warm-up
            times.append(slowest.max()[1])
            iterations.append(ksp.getIterationNumber())

    reason = ksp.getConvergedReason()
    residual = matrix.createVecLeft()
    matrix.mult(solution, residual)
    residual.aypx(-1.0, rhs)
    reasons = {
        value: name
        for name, value in vars(PETSc.KSP.ConvergedReason).items()
        if isinstance(value, int)
    }
    median = statistics.median(times)
    document = {
        "peer": PEER_NAME,
        "petsc": ".".join(str(part) for part in PETSc.Sys.getVersion()),
        "mpi": mpi_library_version(),
        "ranks": size,
        "rows": rows,
        "nonzeros": int(matrix.getInfo(PETSc.Mat.InfoType.GLOBAL_SUM)["nz_used"]),
        "rtol": arguments.rtol,
        "norm": arguments.norm,
        "iterations": iterations[-1],
        "iterations_all_repeats": sorted(set(iterations)),
        "converged": reason > 0,
        "converged_reason": reasons.get(reason, str(reason)),
        "residual": residual.norm() / rhs_norm,
        # The norm the tolerance was applied to, absolute: with --norm preconditioned it
        # is ||B r||, not comparable with "residual".
        "ksp_residual_norm": ksp.getResidualNorm(),
        "times": times,
        "median": median,
        "per_iteration": median / max(iterations[-1], 1),
    }
    if rank == 0:
        print(json.dumps(document), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
