"""``tachyflow bench collectives``: every algorithm of one operation, measured and predicted.

For each message size (float64 buffers; the size is one rank's vector, or one rank's
block for gather, scatter and alltoall), every schedule algorithm of the operation and
the MPI library's ``native`` call are first checked against the exact result on every
rank (:func:`reference`, as OSU's ``-c``), then timed interleaved. Segmented algorithms
run with the model's segment count, as ``algo="auto"`` would. Beside each measurement:
the simulator's prediction under the machine profile (not calibrated, so that a
calibration can be made from it: :func:`calibration`), and which algorithm ``algo="auto"``
would pick — ``summary.auto_within_10_percent`` is the share of sizes where that pick's
measured time is within 10 % of the best measured one (ours or native).

Under MPICH the command line also runs MPICH's own algorithms, forced one per launch
(:data:`MPICH_ALGORITHMS`, :func:`forced_environment`), and merges their ``native`` times
as ``mpich:<name>`` entries (:func:`merge_forced`).
"""

from __future__ import annotations

import numpy as np

from tachyflow import collectives, runtime
from tachyflow.bench.harness import Candidate, measure
from tachyflow.bench.results import new_results
from tachyflow.collectives.algorithms import ALGORITHMS, SEGMENTED, build
from tachyflow.collectives.simulator import simulate
from tachyflow.io.figures import new_subplots, save_figure
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


# MPICH 5's algorithms for each operation (MPIR_CVAR_<OP>_INTRA_ALGORITHM values that run
# on one node; "smp" needs several nodes and "nb" is the non-blocking call).
MPICH_ALGORITHMS = {
    "bcast": [
        "binomial",
        "scatter_recursive_doubling_allgather",
        "scatter_ring_allgather",
        "tree",
        "pipelined_tree",
    ],
    "reduce": ["binomial", "reduce_scatter_gather"],
    "allreduce": [
        "recursive_doubling",
        "recursive_multiplying",
        "reduce_scatter_allgather",
        "tree",
        "recexch",
        "ring",
        "k_reduce_scatter_allgather",
    ],
    "scan": ["recursive_doubling"],
    "exscan": ["recursive_doubling"],
    "gather": ["binomial"],
    "scatter": ["binomial"],
    "alltoall": ["brucks", "k_brucks", "pairwise", "scattered"],
}
# What MPICH prints (MPIR_CVAR_COLLECTIVE_FALLBACK=print) when a forced algorithm cannot
# run for the arguments and it falls back to its default selection.
MPICH_FALLBACK_TEXT = "cannot be applied"


def forced_environment(operation: str, algorithm: str) -> dict[str, str]:
    """Environment variables making MPICH run ``algorithm`` for ``operation``'s calls."""
    return {
        "MPIR_CVAR_DEVICE_COLLECTIVES": "none",
        f"MPIR_CVAR_{operation.upper()}_INTRA_ALGORITHM": algorithm,
        "MPIR_CVAR_COLLECTIVE_FALLBACK": "print",
    }


# MPICH's algorithms that are ours under another name: their prediction is our schedule's.
MPICH_EQUIVALENTS = {
    "binomial": "binomial",
    "scatter_ring_allgather": "scatter-ring",
    "reduce_scatter_gather": "rabenseifner",
    "reduce_scatter_allgather": "rabenseifner",
    "recursive_doubling": "recursive-doubling",
    "ring": "ring",
    "pairwise": "pairwise",
    "brucks": "bruck",
    "scattered": "linear-nonblocking",
}


def merge_forced(
    document: dict, algorithm: str, forced: dict, fell_back: bool, model=None
) -> None:
    """Add the ``native`` entries of a launch with ``algorithm`` forced to ``document``,
    predicted (without the executor's overhead) when one of our schedules is the same
    algorithm."""
    operation, size = document["params"]["operation"], document["mpi"]["ranks"]
    label = f"mpich:{algorithm}"
    ours = MPICH_EQUIVALENTS.get(algorithm)
    for entry in forced["results"]:
        if entry["name"] != "native":
            continue
        merged = {**entry, "name": label, "forced": True, "fell_back": fell_back}
        merged.pop("predicted", None)
        merged.pop("modelled_as", None)
        if ours in ALGORITHMS[operation] and model is not None:
            count = entry["size"] // ITEMSIZE
            elements = collectives.schedule_count(operation, size, count)
            schedule = build(operation, ours, size, elements)
            merged["predicted"] = simulate(schedule, model, ITEMSIZE, software_overhead=False).time
            merged["modelled_as"] = ours
        document["results"].append(merged)
    document["params"]["algorithms"].append(label)


def calibration(documents: list[dict], model) -> dict:
    """``{(operation, ranks): {algorithm: [[bytes, measured / predicted], ...]}}`` of every
    algorithm of ours and of the library's own call (``native``, predicted as its default
    algorithm without the executor's overhead) in collectives results, under ``model``."""
    table = {}
    for document in documents:
        operation, size = document["params"]["operation"], document["mpi"]["ranks"]
        for entry in document["results"]:
            name = entry["name"]
            if not entry["verified"] or name.startswith("mpich:"):
                continue
            count = entry["size"] // ITEMSIZE
            elements = collectives.schedule_count(operation, size, count)
            if name == "native":
                equivalent = collectives.native_equivalent(operation, entry["size"], size, count)
                schedule = build(operation, equivalent, size, elements)
            else:
                segments = entry.get("segments") if name in SEGMENTED else None
                schedule = build(operation, name, size, elements, 0, segments)
            predicted = simulate(
                schedule, model, ITEMSIZE, software_overhead=name != "native"
            ).time
            points = table.setdefault((operation, size), {}).setdefault(name, {})
            points[entry["size"]] = entry["median"] / predicted
    return {
        key: {name: [[s, points[s]] for s in sorted(points)] for name, points in names.items()}
        for key, names in table.items()
    }


def _caller(comm, operation: str, algorithm: str, values: np.ndarray, segments):
    """A function making one collective call on buffers prepared here, outside the timed
    region and reused by every call (as OSU does); it returns the result (None where MPI
    defines none). A broadcast reuses its buffer: the root's data never changes."""
    size, rank = comm.Get_size(), comm.Get_rank()
    if operation == "bcast":
        buffer = values.copy()
        return lambda: collectives.bcast(comm, buffer, 0, algorithm, segments)
    if operation in ("gather", "alltoall"):
        out = np.empty(size * values.size, values.dtype)
        if operation == "gather":
            return lambda: collectives.gather(comm, values, 0, algorithm, out=out)
        send = np.tile(values, size)
        return lambda: collectives.alltoall(comm, send, algorithm, out=out)
    out = np.empty_like(values)
    if operation == "scatter":
        whole = np.tile(values, size) if rank == 0 else None
        return lambda: collectives.scatter(comm, whole, out, 0, algorithm)
    if operation == "reduce":
        return lambda: collectives.reduce(comm, values, "sum", 0, algorithm, out=out)
    function = getattr(collectives, operation)
    return lambda: function(comm, values, "sum", algorithm, segments, out=out)


def _values(count: int, rank: int) -> np.ndarray:
    """Rank ``rank``'s input: integers in float64, so sums are exact."""
    return np.arange(count, dtype=np.float64) * (rank + 1) + 1.0


def reference(operation: str, count: int, size: int, rank: int):
    """The exact result of ``operation`` on :func:`_values` at ``rank``, computed without
    MPI (None where MPI defines none), so every algorithm, MPICH's forced ones included, is
    checked against the right answer rather than against another implementation."""
    every = [_values(count, other) for other in range(size)]
    if operation in ("bcast", "scatter"):
        return every[0]
    if operation == "reduce":
        return np.sum(every, axis=0) if rank == 0 else None
    if operation == "allreduce":
        return np.sum(every, axis=0)
    if operation == "scan":
        return np.sum(every[: rank + 1], axis=0)
    if operation == "exscan":
        return np.sum(every[:rank], axis=0) if rank > 0 else None
    if operation == "gather":
        return np.concatenate(every) if rank == 0 else None
    return np.concatenate(every)  # alltoall: block i comes from rank i


def _candidate(comm, operation, algorithm, values, expected, segments) -> Candidate:
    call = _caller(comm, operation, algorithm, values, segments)
    result = call()
    if result is None or expected is None:
        verified = result is None and expected is None
    else:
        verified = bool(np.allclose(result, expected, rtol=1e-12, atol=0))
    return Candidate(algorithm, call, verified)


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
        values = _values(count, comm.Get_rank())
        elements = collectives.schedule_count(operation, size, count)
        segments = {
            name: collectives.segment_count(operation, name, size, elements * ITEMSIZE, model)
            for name in names
        }
        expected = reference(operation, count, size, comm.Get_rank())
        candidates = [
            _candidate(comm, operation, name, values, expected, segments[name]) for name in names
        ]
        part = {"results": [], "peers": []}
        measure(part, candidates, comm, repeats, warmup, f"{operation} {nbytes} B")
        for entry in part["results"]:
            entry["size"] = count * ITEMSIZE
            if entry["name"] == "native":  # modelled as the library's default algorithm
                equivalent = collectives.native_equivalent(
                    operation, count * ITEMSIZE, size, count
                )
                schedule = build(operation, equivalent, size, elements)
                entry["modelled_as"] = equivalent
            else:
                schedule = build(
                    operation, entry["name"], size, elements, 0, segments[entry["name"]]
                )
            entry["segments"] = segments.get(entry["name"]) or 1  # the algorithm's parameter
            entry["predicted"] = simulate(
                schedule, model, ITEMSIZE, software_overhead=entry["name"] != "native"
            ).time
            document["results"].append(entry)
        choice = collectives.choose(
            operation, size, count, ITEMSIZE, model if profile is None else profile
        )
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
    figure, axis = new_subplots(figsize=(8, 5))
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
        f"{params['profile']['model']} prediction ({params['profile']['name']} profile)",
        fontsize=10,
    )
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=8)
    return save_figure(figure, path)
