"""The NAS Parallel Benchmark kernels (NPB 3.4.2), verified against NPB's official values.

``KERNELS`` maps the command-line names to the modules; each module has ``CLASSES`` and
``run(problem_class, comm) -> KernelResult`` (see :mod:`tachyflow.bench.npb.common`).
:func:`run_npb_benchmark` runs one kernel and makes the results document of
``tachyflow bench npb``.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from tachyflow import runtime
from tachyflow.bench.results import new_results
from tachyflow.io.figures import new_subplots, save_figure

KERNELS = {
    "cg": "cg",
    "mg": "mg",
    "ft": "ft",
    "is": "integer_sort",
    "ep": "ep",
}


def kernel_module(name: str):
    """The module of kernel ``name`` (ValueError naming the choices)."""
    if name not in KERNELS:
        raise ValueError(f"kernel must be one of {sorted(KERNELS)}, got {name!r}")
    return importlib.import_module(f"tachyflow.bench.npb.{KERNELS[name]}")


def run_npb_benchmark(kernel: str, problem_class: str, comm=None):
    """Run one kernel at one class (collective): the results document and the result."""
    comm = runtime.world() if comm is None else comm
    module = kernel_module(kernel)
    if problem_class not in module.CLASSES:
        raise ValueError(
            f"class must be one of {sorted(module.CLASSES)} for {kernel.upper()}, got "
            f"{problem_class!r}"
        )
    result = module.run(problem_class, comm)
    document = new_results("npb", {"kernel": kernel, "class": problem_class}, comm)
    document["results"].append(result.to_entry())
    return document, result


def npb_program(binaries, kernel: str, problem_class: str, ranks: int) -> Path:
    """NPB's program for ``kernel`` at ``problem_class`` in the folder ``binaries``.

    NPB 3.4 builds one program per kernel and class, ``<kernel>.<class>.x``, that takes the
    rank count at run time; NPB 3.3 and older built one per rank count too,
    ``<kernel>.<class>.<ranks>``. The first found of these is returned.

    Raises
    ------
    FileNotFoundError
        Neither exists; the message says how to build it.
    """
    names = (f"{kernel}.{problem_class}.x", f"{kernel}.{problem_class}.{ranks}")
    for name in names:
        if (Path(binaries) / name).is_file():
            return Path(binaries) / name
    raise FileNotFoundError(
        f"no NPB program {' or '.join(names)} in {binaries}: `make install-bench` builds NPB "
        f"3.4 (NPB_CLASSES, NPB_KERNELS choose which), or in NPB's MPI folder "
        f"`make {kernel} CLASS={problem_class}` (docs/benchmarks.md)"
    )


def parse_npb_output(text: str) -> dict:
    """Mop/s, seconds, verification and version from the summary an NPB program prints.

    Raises
    ------
    ValueError
        A field is missing (the program failed before its summary).
    """
    import re

    fields = {}
    for key, label in (
        ("mops_total", "Mop/s total"),
        ("seconds", "Time in seconds"),
        ("verification", "Verification"),
    ):
        found = re.search(rf"{label}\s*=\s*(\S+)", text)
        if found is None:
            raise ValueError(f"no '{label} =' in NPB's output")
        fields[key] = found.group(1)
    version = re.search(r"NAS Parallel Benchmarks ([\d.]+)", text)
    return {
        "verified": fields["verification"] == "SUCCESSFUL",
        "median": float(fields["seconds"]),
        "mops_total": float(fields["mops_total"]),
        "version": version.group(1) if version else "unknown",
    }


def run_npb_peer(
    binaries, kernel: str, problem_class: str, ranks: int, mpiexec: str | None = None
) -> dict:
    """Run NPB's own program for the same kernel, class and rank count (built outside the
    repository, see :func:`npb_program`) and read its summary: the peers entry. ``mpiexec``
    starts it; by default the peers' launcher (:func:`tachyflow.bench.peer_builds.launcher`).
    """
    import os
    import subprocess
    import tempfile

    from tachyflow.bench import peer_builds

    program = npb_program(binaries, kernel, problem_class, ranks)
    launch = [mpiexec, "-n", str(ranks)] if mpiexec else peer_builds.launcher(ranks)
    # This NPB 3.4 release checkpoints its iterations (compressed copies of the solution in
    # PROGRAM.TIME.checkpoint/ of the working folder) unless MPI_NO_CHECKPOINT is set: that
    # would time file writes our kernels never make, and litter the caller's folder.
    with tempfile.TemporaryDirectory(prefix="tachyflow-npb-") as scratch:
        completed = subprocess.run(
            [*launch, str(program)],
            capture_output=True,
            text=True,
            timeout=1800,
            cwd=scratch,
            env={**os.environ, "MPI_NO_CHECKPOINT": "1"},
        )
    try:
        if completed.returncode:
            raise ValueError(f"exit {completed.returncode}")
        summary = parse_npb_output(completed.stdout)
    except ValueError as error:
        output = completed.stdout + completed.stderr
        raise RuntimeError(f"{program} failed ({error}): {output[-500:]}") from None
    return {
        "name": f"NPB-{kernel.upper()}.{problem_class}",
        **summary,
        "ranks": ranks,
        "program": str(program),
    }


def stem(document: dict) -> str:
    """File name stem: ``npb_cg_A_2ranks``."""
    params = document["params"]
    return f"npb_{params['kernel']}_{params['class']}_{document['mpi']['ranks']}ranks"


def plot(document: dict, path):
    """Mop/s (total and per process) of the verified runs, and the time split."""
    figure, (rate, split) = new_subplots(1, 2, figsize=(10, 4))
    entries = [e for e in document["results"] if e["verified"]]
    labels = [f"{e['name']} ({e['ranks']} ranks)" for e in entries]
    rate.bar(labels, [e["mops_total"] for e in entries], label="total")
    rate.bar(labels, [e["mops_per_process"] for e in entries], label="per process", alpha=0.6)
    rate.set_ylabel("Mop/s")
    rate.legend(fontsize=8)
    for index, entry in enumerate(document["results"]):
        bottom = 0.0
        for part, seconds in entry.get("timings", {}).items():
            split.bar(index, seconds, bottom=bottom, label=part if index == 0 else None)
            bottom += seconds
    split.set_xticks(range(len(document["results"])), [e["name"] for e in document["results"]])
    split.set_ylabel("seconds (slowest rank)")
    split.legend(fontsize=8)
    figure.suptitle("NAS Parallel Benchmarks (verified runs only carry Mop/s)", fontsize=10)
    return save_figure(figure, path)
