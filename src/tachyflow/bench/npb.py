"""``tachyflow bench npb``: a NAS Parallel Benchmark kernel (:mod:`tachyflow.programs.npb`)
measured, and its results document.

``KERNELS`` maps the command-line names to the kernels' modules; each has ``CLASSES`` and
``run(problem_class, comm) -> KernelResult`` (see :mod:`tachyflow.programs.npb.common`).
:func:`run_npb_benchmark` runs one kernel and makes the results document of
``tachyflow bench npb``; :func:`stem` and :func:`plot` name and draw it. NPB's own programs,
the peer, are run by :mod:`tachyflow.bench.peers.npb`.
"""

from __future__ import annotations

import importlib

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
    return importlib.import_module(f"tachyflow.programs.npb.{KERNELS[name]}")


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
