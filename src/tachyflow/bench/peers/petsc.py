"""PETSc KSPCG + PCJACOBI, run as a separate process: the peer of tachyflow's distributed CG.

PETSc comes from the system (Debian: ``apt-get install python3-petsc4py``), built against
the system Open MPI, while tachyflow runs on the MPICH wheel in its virtual environment.
The two MPI libraries cannot share a process, so the peer never runs inside ours: the
matrix is saved to an ``.npz`` file (:func:`save_system`) and ``petsc_cg.py`` (beside
this module) is started with the system Python under the system ``mpiexec``
(:func:`run_petsc_peer`), in an environment stripped of the virtual environment and of
any launcher variables, so that neither side picks up the other's MPI.

This module imports neither petsc4py nor mpi4py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

PEER_NAME = "petsc-kspcg-jacobi"
INSTALL_HINT = (
    "install the PETSc peer with the system package manager: "
    "apt-get install python3-petsc4py openmpi-bin (it runs with the system python3 and "
    "Open MPI, outside tachyflow's virtual environment)"
)
NORMS = ("unpreconditioned", "preconditioned", "natural")
SYSTEM_PYTHON = "/usr/bin/python3"
# Debian installs the PETSc builds here; /usr/lib/petsc, the default that petsc4py.pth
# falls back to, is an alternatives link that only the -dev packages create, so without
# them petsc4py is importable only with PETSC_DIR naming one of these.
PETSC_BUILDS = Path("/usr/lib/petscdir")
# Variables by which a launcher tells a process it is an MPI rank, or configures the MPI
# library of the launching process: passed on, they would make the peer's Open MPI (or,
# from inside an Open MPI job, our MPICH) join or mimic the wrong job.
MPI_VARIABLE_PREFIXES = ("PMI_", "PMIX_", "HYDRA_", "MPICH_", "MPIR_", "I_MPI_", "SLURM_")
OPEN_MPI_KEPT_PREFIXES = ("OMPI_MCA_", "OMPI_ALLOW_")
STDERR_TAIL_LINES = 40


class PeerFailedError(subprocess.CalledProcessError):
    """The PETSc peer exited with an error; the message carries the tail of its stderr."""

    def __str__(self) -> str:
        tail = (self.stderr or "").strip()
        return f"{super().__str__()}\nstderr (last lines):\n{tail}" if tail else super().__str__()


def _virtual_environment_roots() -> list[Path]:
    roots = []
    if sys.prefix != sys.base_prefix:
        roots.append(Path(sys.prefix).resolve())
    if os.environ.get("VIRTUAL_ENV"):
        roots.append(Path(os.environ["VIRTUAL_ENV"]).resolve())
    return roots


def _inside(entry: str, roots: list[Path]) -> bool:
    path = Path(entry).resolve()
    return any(path == root or root in path.parents for root in roots)


def clean_environment() -> dict[str, str]:
    """``os.environ`` without the virtual environment and without MPI launcher variables.

    ``PATH`` and ``LD_LIBRARY_PATH`` lose their entries inside the virtual environment
    (whose ``bin`` holds MPICH's ``mpiexec`` and whose libraries are MPICH's);
    ``PYTHONPATH``, ``PYTHONHOME`` and ``VIRTUAL_ENV`` are dropped so that the system
    Python sees only its own packages.

    Returns
    -------
    dict of str to str
        The environment for the peer's processes.
    """
    from tachyflow.runtime import LAUNCHER_VARIABLES

    roots = _virtual_environment_roots()
    environment = {}
    for name, value in os.environ.items():
        if name in LAUNCHER_VARIABLES or name in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV"):
            continue
        if name.startswith(MPI_VARIABLE_PREFIXES):
            continue
        if name.startswith("OMPI_") and not name.startswith(OPEN_MPI_KEPT_PREFIXES):
            continue
        environment[name] = value
    for name in ("PATH", "LD_LIBRARY_PATH"):
        if name in environment:
            kept = [e for e in environment[name].split(os.pathsep) if e and not _inside(e, roots)]
            if kept:
                environment[name] = os.pathsep.join(kept)
            else:
                del environment[name]
    environment.setdefault("PATH", os.defpath)
    return environment


def _petsc_dir_candidates(environment: dict[str, str]) -> list[str | None]:
    """``PETSC_DIR`` values to try: as given, unset, then the real 32-bit-index builds.

    tachyflow's matrices are real with fewer than 2³¹ rows, so complex and 64-bit-index
    builds are left out; the newest version comes first.
    """
    candidates: list[str | None] = [environment.get("PETSC_DIR"), None]
    if PETSC_BUILDS.is_dir():
        preferred = PETSC_BUILDS / "petsc-real"
        builds = sorted(PETSC_BUILDS.glob("petsc3*/*-real"), reverse=True)
        candidates += [str(p) for p in (preferred, *builds) if p.is_dir()]
    unique = []
    for candidate in candidates:
        if candidate not in unique:
            unique.append(candidate)
    return unique


def _imports_petsc4py(python: str, environment: dict[str, str]) -> bool:
    try:
        return (
            subprocess.run(
                [python, "-c", "import petsc4py"],
                env=environment,
                capture_output=True,
                timeout=60,
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


@lru_cache(maxsize=8)
def _petsc_environment(python: str) -> dict[str, str] | None:
    """The clean environment in which ``python`` imports petsc4py, or None if none does."""
    base = clean_environment()
    for petsc_dir in _petsc_dir_candidates(base):
        environment = {k: v for k, v in base.items() if k != "PETSC_DIR"}
        if petsc_dir is not None:
            environment["PETSC_DIR"] = petsc_dir
        if _imports_petsc4py(python, environment):
            return environment
    return None


def find_petsc() -> tuple[str, str] | None:
    """The system Python that imports petsc4py and the system ``mpiexec``, or None.

    The first ``python3`` on the cleaned ``PATH`` (which may be a pyenv shim) and then
    ``/usr/bin/python3`` are tried; ``mpiexec.openmpi`` is preferred over ``mpiexec``
    because Debian's petsc4py is built against Open MPI and ``mpiexec`` is an
    alternatives link that may name MPICH's launcher.

    Returns
    -------
    tuple of (str, str) or None
        ``(python, mpiexec)``, absolute paths; None when either is missing.
    """
    path = clean_environment()["PATH"]
    mpiexec = shutil.which("mpiexec.openmpi", path=path) or shutil.which("mpiexec", path=path)
    if mpiexec is None:
        return None
    pythons = [shutil.which("python3", path=path), SYSTEM_PYTHON]
    for python in dict.fromkeys(p for p in pythons if p and os.access(p, os.X_OK)):
        if _petsc_environment(python) is not None:
            return python, mpiexec
    return None


def save_system(path: str | os.PathLike, matrix, rhs) -> Path:
    """Write ``matrix`` (CSR) and ``rhs`` to the ``.npz`` that ``petsc_cg.py`` reads.

    The file is written under a temporary name in the same folder and then renamed over
    ``path``, so a reader never sees a half-written file and an interrupted write leaves
    any previous file intact.

    Parameters
    ----------
    path : str or path-like
        Destination; its folder is created if needed.
    matrix : scipy.sparse matrix or array
        Square, symmetric, real; converted to CSR with sorted, summed indices (the
        caller's object is not modified).
    rhs : array_like
        Right-hand side, one entry per row.

    Returns
    -------
    pathlib.Path
        The written file.

    Raises
    ------
    ValueError
        ``matrix`` is not square, real or symmetric, or ``rhs`` has the wrong length or
        non-finite entries.
    """
    import scipy.sparse

    csr = scipy.sparse.csr_matrix(matrix, copy=True)
    if csr.shape[0] != csr.shape[1]:
        raise ValueError(f"matrix must be square for CG, got shape {csr.shape}")
    if np.iscomplexobj(csr.data):
        raise ValueError("matrix must be real: the PETSc peer uses a real-valued build")
    csr.sum_duplicates()
    csr.sort_indices()
    data = np.asarray(csr.data, dtype=np.float64)
    if not np.isfinite(data).all():
        raise ValueError("matrix has non-finite entries")
    asymmetry = abs(csr - csr.T).max() if csr.nnz else 0.0
    if asymmetry > 1e-12 * (abs(data).max(initial=0.0)):
        raise ValueError(f"matrix must be symmetric for CG: max |A - Aᵀ| = {asymmetry:.3g}")
    right = np.asarray(rhs, dtype=np.float64).reshape(-1)
    if right.shape != (csr.shape[0],):
        raise ValueError(f"rhs has {right.size} entries, the matrix has {csr.shape[0]} rows")
    if not np.isfinite(right).all():
        raise ValueError("rhs has non-finite entries")
    # 32-bit indices whenever they fit: PETSc's default build uses 32-bit PetscInt, and
    # the file is half the size.
    index_type = np.int32 if max(csr.nnz, csr.shape[0]) < 2**31 else np.int64
    destination = Path(path)
    destination.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent
    )
    try:
        # mkstemp creates the file 0600; give it the mode an ordinary open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(handle, 0o666 & ~umask)
        with os.fdopen(handle, "wb") as stream:
            np.savez(
                stream,
                data=data,
                indices=csr.indices.astype(index_type),
                indptr=csr.indptr.astype(index_type),
                shape=np.asarray(csr.shape, dtype=np.int64),
                rhs=right,
            )
        os.replace(temporary, destination)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return destination


def _is_open_mpi(mpiexec: str, environment: dict[str, str]) -> bool:
    try:
        version = subprocess.run(
            [mpiexec, "--version"], env=environment, capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in version.stdout + version.stderr or "OpenRTE" in version.stdout


def _launcher_command(
    mpiexec: str, ranks: int, environment: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """``mpiexec -n ranks`` with the flags Open MPI needs here, and the environment."""
    command = [mpiexec, "-n", str(ranks)]
    environment = dict(environment)
    if _is_open_mpi(mpiexec, environment):
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            # Open MPI refuses to run as root (containers, CI) unless told twice.
            environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
            environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        if cores is not None and ranks > cores:
            # Open MPI counts one slot per core and refuses more ranks than slots.
            command.append("--oversubscribe")
    return command, environment


def run_petsc_peer(
    matrix_path: str | os.PathLike,
    ranks: int,
    rtol: float = 1e-8,
    max_iterations: int = 10000,
    repeats: int = 5,
    timeout: float = 600,
    *,
    norm: str = "unpreconditioned",
    petsc_options: tuple[str, ...] = (),
) -> dict:
    """Solve the system in ``matrix_path`` with PETSc KSPCG + PCJACOBI on ``ranks`` ranks.

    Parameters
    ----------
    matrix_path : str or path-like
        An ``.npz`` written by :func:`save_system`.
    ranks : int
        MPI processes for the system ``mpiexec``.
    rtol : float, optional
        Relative tolerance on the residual norm chosen by ``norm``; ``atol`` is 0.
    max_iterations : int, optional
        Iteration limit.
    repeats : int, optional
        Timed solves, after one untimed warm-up.
    timeout : float, optional
        Seconds before the peer is killed.
    norm : {"unpreconditioned", "preconditioned", "natural"}, optional
        Residual norm of the convergence test. ``unpreconditioned`` (``||b - A x||``)
        matches tachyflow's CG; ``preconditioned`` is PETSc's default for KSPCG.
    petsc_options : tuple of str, optional
        Extra PETSc options, e.g. ``("-log_view",)``; their output goes to stdout/stderr
        of the peer and is ignored here apart from the JSON line.

    Returns
    -------
    dict
        The peer's JSON document: ``peer``, ``petsc``, ``mpi``, ``ranks``, ``rows``,
        ``nonzeros``, ``iterations``, ``converged``, ``residual`` (``||b - A x|| / ||b||``),
        ``times``, ``median`` and ``per_iteration`` (seconds), among others.

    Raises
    ------
    OSError
        PETSc's petsc4py or the system ``mpiexec`` is not installed (with the install
        hint).
    FileNotFoundError
        ``matrix_path`` does not exist.
    ValueError
        An argument is out of range.
    subprocess.CalledProcessError
        The peer failed (:class:`PeerFailedError`, whose message has its stderr tail).
    subprocess.TimeoutExpired
        The peer ran longer than ``timeout``.
    RuntimeError
        The peer exited normally but printed no JSON result.
    """
    if ranks < 1:
        raise ValueError(f"ranks must be at least 1, got {ranks}")
    if not rtol > 0:
        raise ValueError(f"rtol must be positive, got {rtol}")
    if max_iterations < 1 or repeats < 1:
        raise ValueError(
            f"max_iterations and repeats must be at least 1, got {max_iterations}, {repeats}"
        )
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {', '.join(NORMS)}, got {norm!r}")
    found = find_petsc()
    if found is None:
        raise OSError(f"PETSc peer not available: no petsc4py or no mpiexec; {INSTALL_HINT}")
    python, mpiexec = found
    matrix = Path(matrix_path).resolve()
    if not matrix.is_file():
        raise FileNotFoundError(f"matrix file {matrix} does not exist; write it with save_system")
    environment = _petsc_environment(python)
    if environment is None:  # found moments ago; only a concurrent uninstall gets here
        raise OSError(f"{python} no longer imports petsc4py; {INSTALL_HINT}")
    launcher, environment = _launcher_command(mpiexec, ranks, environment)
    with resources.as_file(resources.files("tachyflow.bench.peers") / "petsc_cg.py") as script:
        command = [
            *launcher,
            python,
            str(script),
            str(matrix),
            "--rtol",
            repr(float(rtol)),
            "--max-iterations",
            str(int(max_iterations)),
            "--repeats",
            str(int(repeats)),
            "--norm",
            norm,
            *(["--", *petsc_options] if petsc_options else []),
        ]
        completed = subprocess.run(
            command,
            env=environment,
            capture_output=True,
            text=True,
            timeout=timeout,
            # The peer's working folder is irrelevant, but not the repository: keeps
            # Python from putting a checkout's src on sys.path by accident.
            cwd=matrix.parent,
        )
    tail = "\n".join(completed.stderr.splitlines()[-STDERR_TAIL_LINES:])
    if completed.returncode != 0:
        raise PeerFailedError(completed.returncode, command, completed.stdout, tail)
    for line in reversed(completed.stdout.splitlines()):
        if line.startswith("{"):
            try:
                document = json.loads(line)
            except json.JSONDecodeError:
                continue
            if document.get("peer") == PEER_NAME:
                return document
    raise RuntimeError(
        f"the PETSc peer printed no result line; stdout:\n{completed.stdout[-2000:]}\n"
        f"stderr:\n{tail}"
    )
