"""``tachyflow bench collectives``: every algorithm of one operation, measured and predicted.

For each message size (float64 buffers), every schedule algorithm of the operation and the
MPI library's ``native`` call are first checked against ``native``'s result on every rank
(as OSU's ``-c``), then timed interleaved. Beside each measurement: the simulator's
prediction under the machine profile, and which algorithm ``algo="auto"`` would pick —
``summary.auto_within_10_percent`` is the share of sizes where that pick's measured time
is within 10 % of the best measured one (ours or native).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tachyflow import collectives, runtime
from tachyflow.bench.harness import Candidate, measure
from tachyflow.bench.results import new_results
from tachyflow.collectives.algorithms import ALGORITHMS, build
from tachyflow.collectives.simulator import simulate
from tachyflow.io.files import replacing
from tachyflow.models.profiles import load_profile
from tachyflow.units import parse_byte_size

ITEMSIZE = 8


def size_range(text: str) -> list[int]:
    """``8B:16MiB`` (powers of 4 from 8 B to 16 MiB) or ``8B:16MiB:2`` (a factor of 2)."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise ValueError(f"sizes must look like 8B:16MiB or 8B:16MiB:2, got {text!r}")
    low, high = parse_byte_size(parts[0]), parse_byte_size(parts[1])
    factor = int(parts[2]) if len(parts) == 3 else 4
    if low < 1 or high < low or factor < 2:
        raise ValueError(f"sizes need 1 <= first <= last and a factor >= 2, got {text!r}")
    sizes = []
    size = low
    while size <= high:
        sizes.append(size)
        size *= factor
    return sizes


def _call(comm, operation: str, algorithm: str, values: np.ndarray):
    """One collective call; the result (None off the root for reduce)."""
    if operation == "bcast":
        return collectives.bcast(comm, values.copy(), 0, algorithm)
    if operation == "reduce":
        return collectives.reduce(comm, values, "sum", 0, algorithm)
    return collectives.allreduce(comm, values, "sum", algorithm)


def _candidate(comm, operation: str, algorithm: str, values: np.ndarray, expected) -> Candidate:
    result = _call(comm, operation, algorithm, values)
    if result is None or expected is None:
        verified = result is None and expected is None
    else:
        verified = bool(np.allclose(result, expected, rtol=1e-12, atol=0))
    return Candidate(algorithm, lambda: _call(comm, operation, algorithm, values), verified)


def run_collectives_benchmark(
    operation: str,
    algorithms=None,
    sizes=(8, 1024, 2**20),
    repeats: int = 10,
    warmup: int = 2,
    profile=None,
    comm=None,
) -> dict:
    """Measure and predict every algorithm at every size (collective over ``comm``)."""
    comm = runtime.world() if comm is None else comm
    if operation not in ALGORITHMS:
        raise ValueError(f"operation must be one of {sorted(ALGORITHMS)}, got {operation!r}")
    names = [*ALGORITHMS[operation], "native"] if algorithms is None else list(algorithms)
    for name in names:
        if name != "native" and name not in ALGORITHMS[operation]:
            raise ValueError(
                f"{operation} algorithm must be one of "
                f"{sorted(ALGORITHMS[operation])} or 'native', got {name!r}"
            )
    model = load_profile(profile)
    size = comm.Get_size()
    params = {
        "operation": operation,
        "algorithms": names,
        "sizes": list(sizes),
        "repeats": repeats,
        "warmup": warmup,
        "profile": model.to_dict(),
        "dtype": "float64",
    }
    document = new_results("collectives", params, comm)
    within = []
    for nbytes in sizes:
        count = max(1, nbytes // ITEMSIZE)
        values = np.arange(count, dtype=np.float64) * (comm.Get_rank() + 1) + 1.0
        expected = _call(comm, operation, "native", values)
        candidates = [_candidate(comm, operation, name, values, expected) for name in names]
        part = {"results": [], "peers": []}
        measure(part, candidates, comm, repeats, warmup, f"{operation} {nbytes} B")
        for entry in part["results"]:
            entry["size"] = count * ITEMSIZE
            if entry["name"] != "native":
                schedule = build(operation, entry["name"], size, count, 0)
                entry["predicted"] = simulate(schedule, model, ITEMSIZE).time
            document["results"].append(entry)
        choice = collectives.choose(operation, size, count, ITEMSIZE, model)
        timed = {e["name"]: e["median"] for e in part["results"] if e["verified"]}
        if choice.algorithm in timed:
            within.append(timed[choice.algorithm] <= 1.1 * min(timed.values()))
    document["summary"] = {
        "auto_within_10_percent": float(np.mean(within)) if within else None,
        "sizes_compared": len(within),
    }
    return document


def stem(document: dict) -> str:
    """File name stem: ``collectives_allreduce_3ranks``."""
    return f"collectives_{document['params']['operation']}_{document['mpi']['ranks']}ranks"


def plot(document: dict, path):
    """Time against size per algorithm: measured (solid) and predicted (dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 5))
    for name in document["params"]["algorithms"]:
        entries = sorted(
            (e for e in document["results"] if e["name"] == name and e["verified"]),
            key=lambda e: e["size"],
        )
        if not entries:
            continue
        sizes = [e["size"] for e in entries]
        (line,) = axis.loglog(sizes, [e["median"] * 1e6 for e in entries], marker="o", label=name)
        if "predicted" in entries[0]:
            axis.loglog(
                sizes,
                [e["predicted"] * 1e6 for e in entries],
                linestyle="--",
                color=line.get_color(),
                label=f"{name} (model)",
            )
    params = document["params"]
    axis.set_xlabel("message size [B]")
    axis.set_ylabel("time [µs]")
    axis.set_title(
        f"{params['operation']} on {document['mpi']['ranks']} ranks; dashed: "
        f"Hockney prediction ({params['profile']['name']} profile)",
        fontsize=10,
    )
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=8)
    figure.tight_layout()
    with replacing(path) as temporary:
        figure.savefig(temporary, dpi=110, format="png")
    plt.close(figure)
    return Path(path)
