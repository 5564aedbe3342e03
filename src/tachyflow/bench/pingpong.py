"""``tachyflow bench pingpong``: point-to-point latency and bandwidth (the NetPIPE study
of Lee, Hong, Lee & Lee).

Sizes are NetPIPE's: every power of two from 1 B to the maximum and 3 bytes either side.
Iteration counts fall with size as in OSU (many round trips for small messages, at least
10 for large ones); each size gets a warm-up, then ``repeats`` samples of its iterations.
``latency`` is half a round trip between ranks 0 and 1; ``bibw`` has both ranks send to
each other at once (bidirectional bandwidth = 2 m / time). Other ranks wait. Both reuse
one buffer, as OSU does, so large messages stay in cache; ``cold`` (from 64 KiB) is the
ping-pong again with every round trip on the next slot of a 128 MiB arena, so that data
come from memory as in an application's collectives (NetPIPE's cache invalidation) —
``tachyflow model fit`` prefers these times where they exist.

Peers, measured by the same command as separate launches when it self-launches with
``-n``: a C ping-pong built with the runtime's ``mpicc`` (``peers/pingpong.c``, the same
plan of sizes and iterations) and ``python -m mpi4py.bench pingpong``.

The same run records Netgauge's PRTT round trips (:mod:`tachyflow.bench.loggp`) under
``prtt``, from which ``tachyflow model fit`` fits a LogGP model beside the Hockney one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

import numpy as np

from tachyflow.bench import loggp
from tachyflow.bench.results import new_results, summarize
from tachyflow.io.figures import new_subplots, save_figure

BYTES_PER_SAMPLE = 64 * 2**20
# ... but no more than about this long per sample: on a slow link (100 Mbit/s) 64 MiB per
# sample made the sweep last an hour.
SECONDS_PER_SAMPLE = 0.25
MIN_ITERATIONS = 10
MODES = ("latency", "bibw", "cold")
COLD_FROM = 64 * 2**10  # below this, messages are latency-bound and the cache is moot
ARENA = 128 * 2**20  # larger than any last-level cache here
C_PEER = "c-pingpong"
MPI4PY_PEER = "mpi4py.bench"


def netpipe_sizes(largest: int) -> list[int]:
    """Powers of two up to ``largest`` and 3 bytes either side (NetPIPE's perturbation)."""
    sizes = set()
    power = 1
    while power <= largest:
        sizes.update(s for s in (power - 3, power, power + 3) if 1 <= s <= largest)
        power *= 2
    return sorted(sizes)


def iterations_for(size: int) -> int:
    """Round trips per sample: about 64 MiB moved, between 10 and 1000."""
    return int(min(1000, max(MIN_ITERATIONS, BYTES_PER_SAMPLE // max(size, 1))))


def iterations_within(loops: int, seconds_per_loop: float) -> int:
    """``loops``, cut so that a sample lasts about ``SECONDS_PER_SAMPLE`` (at least 10)."""
    if seconds_per_loop <= 0:
        return loops
    return max(MIN_ITERATIONS, min(loops, int(SECONDS_PER_SAMPLE / seconds_per_loop)))


def _persistent_requests(comm, buffer: np.ndarray, incoming: np.ndarray, mode: str):
    """Persistent requests of one size, in the order this rank uses them.

    Persistent requests skip mpi4py's per-call buffer parsing: the Python loop costs about
    0.4 µs less per message than ``comm.Send``/``comm.Recv`` here, close to C.
    """
    rank = comm.Get_rank()
    partner = 1 - rank
    if mode == "latency":
        send, receive = comm.Send_init(buffer, partner, 1), comm.Recv_init(buffer, partner, 1)
        return [send, receive] if rank == 0 else [receive, send]
    return [comm.Recv_init(incoming, partner, 2), comm.Send_init(buffer, partner, 2)]


def _timer(comm, requests, mode: str):
    """A function timing ``loops`` iterations: seconds per one-way message (latency) or
    per exchange (bibw)."""
    from mpi4py import MPI

    def latency(loops: int) -> float:
        comm.Barrier()
        start = MPI.Wtime()
        first, second = requests
        for _ in range(loops):
            first.Start()
            first.Wait()
            second.Start()
            second.Wait()
        return (MPI.Wtime() - start) / loops / 2.0

    def bidirectional(loops: int) -> float:
        comm.Barrier()
        start = MPI.Wtime()
        for _ in range(loops):
            MPI.Prequest.Startall(requests)
            MPI.Request.Waitall(requests)
        return (MPI.Wtime() - start) / loops

    return latency if mode == "latency" else bidirectional


def _cold_timer(comm, size: int, outgoing: np.ndarray, incoming: np.ndarray):
    """A function timing ``loops`` one-way messages (half round trips) on rotating slots."""
    from mpi4py import MPI

    rank = comm.Get_rank()
    slots = max(2, min(outgoing.size, incoming.size) // size)

    def cold(loops: int) -> float:
        comm.Barrier()
        start = MPI.Wtime()
        for index in range(loops):
            at = (index % slots) * size
            send, receive = outgoing[at : at + size], incoming[at : at + size]
            if rank == 0:
                comm.Send(send, 1, 3)
                comm.Recv(receive, 1, 3)
            else:
                comm.Recv(receive, 0, 3)
                comm.Send(send, 0, 3)
        return (MPI.Wtime() - start) / loops / 2.0

    return cold


def local_costs(repeats: int = 5, nbytes: int = 64 * 2**20) -> dict:
    """Seconds per byte to combine (``a += b``) and to copy a message-sized array in memory
    (γ and δ of the cost model; arrays larger than the caches, median of ``repeats``)."""
    import time

    a = np.ones(nbytes // 8)
    b = np.ones(nbytes // 8)
    combine, copy = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        np.add(a, b, out=a)
        combine.append(time.perf_counter() - start)
        start = time.perf_counter()
        np.copyto(a, b)
        copy.append(time.perf_counter() - start)
    return {
        "gamma": float(np.median(combine)) / nbytes,
        "delta": float(np.median(copy)) / nbytes,
    }


def executor_step_overhead(comm, steps: int = 2000) -> float:
    """Seconds per step that tachyflow's collective executor adds to the MPI calls it makes
    (σ of the cost model; collective over ``comm``, a pair of ranks): steps of an
    8-byte exchange between its two ranks run by the executor, less the same exchanges made
    with persistent requests, medians of 5. The MPI library's own collectives do not pay
    it."""
    import time

    from mpi4py import MPI

    from tachyflow.collectives import executor
    from tachyflow.collectives.schedule import Schedule, split, step

    size, rank = comm.Get_size(), comm.Get_rank()

    def generate():
        for _ in range(steps):
            yield step([0, 1], [1, 0], 0, 1, False, 0, size)

    schedule = Schedule("bcast", "exchange", size, 1, 0, split(1, 1), generate)
    plan, buffer, scratch = executor.plan(schedule, rank), np.zeros(1), {}
    requests = [comm.Recv_init(np.zeros(1), 1 - rank, 5), comm.Send_init(buffer, 1 - rank, 5)]

    def by_executor():
        executor.run(comm, schedule, buffer, None, plan, scratch)

    def by_requests():
        for _ in range(steps):
            MPI.Prequest.Startall(requests)
            MPI.Request.Waitall(requests)

    medians = []
    for run in (by_executor, by_requests):
        run()
        timings = []
        for _ in range(5):
            comm.Barrier()
            start = time.perf_counter()
            run()
            timings.append((time.perf_counter() - start) / steps)
        medians.append(float(np.median(timings)))
    for request in requests:
        request.Free()
    return comm.bcast(max(medians[0] - medians[1], 0.0), root=0)


def run_pingpong_benchmark(
    largest: int = 64 * 2**20, repeats: int = 5, modes=MODES, comm=None
) -> dict:
    """Measure every size and mode; the results document (collective, needs 2 ranks)."""
    from mpi4py import MPI

    from tachyflow.parallel import sleeping_barrier

    comm = MPI.COMM_WORLD if comm is None else comm
    if comm.Get_size() < 2:
        raise ValueError(f"ping-pong needs at least 2 ranks, got {comm.Get_size()}")
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    sizes = netpipe_sizes(largest)
    params = {
        "largest": largest,
        "repeats": repeats,
        "modes": list(modes),
        "sizes": len(sizes),
        "pairs": "ranks 0 and 1",
        "prtt_n": loggp.TRAIN,
        "prtt_tests": loggp.TESTS,
    }
    document = new_results("pingpong", params, comm)
    # Ranks 0 and 1 measure on a communicator of their own; the others sleep meanwhile,
    # so that where ranks outnumber cores they do not spin on the pair's cores.
    pair = comm.Split(0 if comm.Get_rank() < 2 else MPI.UNDEFINED, comm.Get_rank())
    if pair != MPI.COMM_NULL:
        _measure_pair(pair, document, sizes, modes, repeats, largest)
        pair.Free()
    sleeping_barrier(comm)
    return comm.bcast(document, root=0)


def _measure_pair(comm, document: dict, sizes, modes, repeats: int, largest: int) -> None:
    """Fill ``document`` with every size and mode, PRTT records and local costs (collective
    over the pair ``comm``)."""
    from tachyflow.runtime import progress_bar

    storage = np.zeros(largest, dtype=np.uint8)
    incoming = np.zeros(largest, dtype=np.uint8)
    if "cold" in modes:
        arena_out = np.ones(max(ARENA, 2 * largest), dtype=np.uint8)
        arena_in = np.ones_like(arena_out)
    plan = [(mode, size) for mode in modes for size in sizes]
    plan = [(mode, size) for mode, size in plan if mode != "cold" or size >= COLD_FROM]
    with progress_bar("ping-pong", len(plan)) as advance:
        for mode, size in plan:
            requests = []
            if mode == "cold":
                timer = _cold_timer(comm, size, arena_out, arena_in)
            else:
                requests = _persistent_requests(comm, storage[:size], incoming[:size], mode)
                timer = _timer(comm, requests, mode)
            loops = iterations_for(size)
            warm = timer(loops // 10 + 1)  # seconds per message, or per exchange (bibw)
            per_loop = warm if mode == "bibw" else 2.0 * warm
            loops = comm.bcast(iterations_within(loops, per_loop), root=0)
            samples = [comm.bcast(timer(loops), root=0) for _ in range(repeats)]
            for request in requests:
                request.Free()
            entry = {
                "name": f"tachyflow-{mode}",
                "mode": mode,
                "size": size,
                "iterations": loops,
                "verified": True,
                **summarize(samples),
            }
            moved = 2 * size if mode == "bibw" else size
            entry["bandwidth"] = moved / entry["median"]
            document["results"].append(entry)
            advance(1)
    document["prtt"] = loggp.measure_prtt(comm, loggp.prtt_sizes(largest))
    costs = local_costs() if comm.Get_rank() == 0 else None
    document["local_costs"] = {
        **comm.bcast(costs, root=0),
        "sigma": executor_step_overhead(comm),
    }


# -- peers (run by the launching process, outside MPI) ---------------------------------------


def _plan_file(folder: Path, largest: int) -> Path:
    plan = folder / "plan.txt"
    plan.write_text("".join(f"{s} {iterations_for(s)}\n" for s in netpipe_sizes(largest)))
    return plan


def run_c_peer(launcher: list[str], largest: int, repeats: int) -> list[dict]:
    """Build the C ping-pong with the runtime's mpicc and run it with ``launcher`` (the
    command up to the program: ``mpiexec -n 2``, or across emulated nodes); its results
    entries."""
    from tachyflow.runtime import find_mpiexec

    mpiexec = find_mpiexec()
    mpicc = Path(mpiexec).with_name("mpicc")
    if not mpicc.exists():
        raise FileNotFoundError(f"no mpicc beside {mpiexec} to build the C ping-pong")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        source = folder / "pingpong.c"
        source.write_text(
            (resources.files("tachyflow.bench") / "peers" / "pingpong.c").read_text()
        )
        subprocess.run(
            [str(mpicc), "-O2", "-o", str(folder / "pingpong"), str(source)],
            check=True,
            capture_output=True,
        )
        output = subprocess.run(
            [
                *launcher,
                str(folder / "pingpong"),
                str(_plan_file(folder, largest)),
                str(repeats),
            ],
            check=True,
            capture_output=True,
            text=True,
            env=_clean_environment(),
        ).stdout
    samples: dict[int, list[float]] = {}
    for line in output.splitlines():
        size, seconds = line.split()
        samples.setdefault(int(size), []).append(float(seconds))
    return [
        {
            "name": C_PEER,
            "mode": "latency",
            "size": size,
            "verified": True,
            **summarize(values),
            "bandwidth": size / float(np.median(values)),
        }
        for size, values in sorted(samples.items())
    ]


def run_mpi4py_peer(launcher: list[str], largest: int) -> list[dict]:
    """``python -m mpi4py.bench pingpong`` (powers of two, its own iteration counts), run
    with ``launcher``."""
    output = subprocess.run(
        [
            *launcher,
            sys.executable,
            "-m",
            "mpi4py.bench",
            "pingpong",
            "-m",
            "1",
            "-n",
            str(largest),
            "--no-header",
        ],
        check=True,
        capture_output=True,
        text=True,
        env=_clean_environment(),
    ).stdout
    entries = []
    for line in output.splitlines():
        match = re.match(r"\s*(\d+)\s+[\d.]+\s+\|\s+([\d.e+-]+)", line)
        if match:
            size, seconds = int(match.group(1)), float(match.group(2))
            entries.append(
                {
                    "name": MPI4PY_PEER,
                    "mode": "latency",
                    "size": size,
                    "verified": True,
                    "samples": [seconds],
                    "median": seconds,
                    "min": seconds,
                    "bandwidth": size / seconds,
                    "statistic": "mean reported by mpi4py.bench",
                }
            )
    return entries


def _clean_environment() -> dict:
    from tachyflow.runtime import LAUNCHER_VARIABLES

    return {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}


def compare(document: dict) -> dict:
    """Overhead against the C ping-pong, speed against mpi4py.bench, peak bandwidth and
    the half-bandwidth point (smallest size reaching half the peak) into ``summary``."""
    ours = {e["size"]: e for e in document["results"] if e["mode"] == "latency"}
    summary = {}
    for peer_name in (C_PEER, MPI4PY_PEER):
        peer = {e["size"]: e for e in document["peers"] if e["name"] == peer_name}
        common = sorted(set(ours) & set(peer))
        small = [s for s in common if s <= 64]
        large = [s for s in common if s >= 2**20]
        if small:
            summary[f"small_message_overhead_vs_{peer_name}"] = float(
                np.median([ours[s]["median"] - peer[s]["median"] for s in small])
            )
        if large:
            summary[f"large_message_bandwidth_ratio_vs_{peer_name}"] = float(
                np.median([ours[s]["bandwidth"] / peer[s]["bandwidth"] for s in large])
            )
    if ours:
        sizes = sorted(ours)
        peak = max(ours[s]["bandwidth"] for s in sizes)
        summary["peak_bandwidth"] = peak
        summary["half_bandwidth_size"] = next(s for s in sizes if ours[s]["bandwidth"] >= peak / 2)
    document["summary"] = summary
    return summary


def stem(document: dict) -> str:
    """File name stem: ``pingpong_2ranks``."""
    return f"pingpong_{document['mpi']['ranks']}ranks"


def plot(document: dict, path):
    """Latency and bandwidth against size, log axes, ours and the peers."""
    figure, (latency_axis, bandwidth_axis) = new_subplots(1, 2, figsize=(11, 4.2))
    series = {}
    for entry in document["results"] + document["peers"]:
        series.setdefault(entry["name"], []).append(entry)
    for name, entries in series.items():
        entries.sort(key=lambda e: e["size"])
        sizes = [e["size"] for e in entries]
        if entries[0]["mode"] in ("latency", "cold"):
            latency_axis.loglog(sizes, [e["median"] * 1e6 for e in entries], label=name)
        bandwidth_axis.loglog(sizes, [e["bandwidth"] / 2**20 for e in entries], label=name)
    latency_axis.set_xlabel("message size [B]")
    latency_axis.set_ylabel("one-way latency [µs]")
    bandwidth_axis.set_xlabel("message size [B]")
    bandwidth_axis.set_ylabel("bandwidth [MiB/s]")
    for axis in (latency_axis, bandwidth_axis):
        axis.grid(alpha=0.3, which="both")
        axis.legend(fontsize=8)
    figure.suptitle(f"Ping-pong, {document['mpi']['library']}", fontsize=10)
    return save_figure(figure, path)
