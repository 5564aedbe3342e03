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
from tachyflow.io.figures import pyplot, save_figure

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


def run_npb_peer(binaries, kernel: str, problem_class: str, ranks: int, mpiexec: str) -> dict:
    """Run NPB's own program for the same kernel, class and rank count (built outside the
    repository, NPB's ``bin/<kernel>.<class>.<ranks>`` naming) and read its summary."""
    import re
    import subprocess

    program = Path(binaries) / f"{kernel}.{problem_class}.{ranks}"
    if not program.is_file():
        raise FileNotFoundError(
            f"no NPB program {program}: build it with `make {kernel} CLASS={problem_class} "
            f"NPROCS={ranks}` in NPB's MPI directory (docs/benchmarks.md)"
        )
    completed = subprocess.run(
        [mpiexec, "-n", str(ranks), str(program)], capture_output=True, text=True, timeout=1800
    )
    text = completed.stdout
    fields = {
        key: re.search(rf"{label}\s*=\s*(\S+)", text)
        for key, label in (
            ("mops_total", "Mop/s total"),
            ("seconds", "Time in seconds"),
            ("verification", "Verification"),
        )
    }
    if completed.returncode or not all(fields.values()):
        raise RuntimeError(f"{program} failed (exit {completed.returncode}): {text[-500:]}")
    verified = fields["verification"].group(1) == "SUCCESSFUL"
    return {
        "name": f"NPB-{kernel.upper()}.{problem_class}",
        "verified": verified,
        "ranks": ranks,
        "median": float(fields["seconds"].group(1)),
        "mops_total": float(fields["mops_total"].group(1)),
        "program": str(program),
        "version": re.search(r"NAS Parallel Benchmarks ([\d.]+)", text).group(1)
        if "NAS Parallel Benchmarks" in text
        else "unknown",
    }


def stem(document: dict) -> str:
    """File name stem: ``npb_cg_A_2ranks``."""
    params = document["params"]
    return f"npb_{params['kernel']}_{params['class']}_{document['mpi']['ranks']}ranks"


def plot(document: dict, path):
    """Mop/s (total and per process) of the verified runs, and the time split."""
    plt = pyplot()

    figure, (rate, split) = plt.subplots(1, 2, figsize=(10, 4))
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
