"""``tachyflow bench noise-exchange``: Kwon, Park & Choi's one-sided noise-source gathering.

A sphere of about ``points`` panels (:func:`tachyflow.acoustics.surfaces.sphere`) sits in
the middle of a periodic box; its panels are integrated by contiguous shares of ranks
(:func:`tachyflow.parallel.pieces.panel_share`), while the flow (a smooth analytic
field on the staggered grid, ghosts filled by the halo exchange) lives on y-pencils. Every
variant of :class:`~tachyflow.parallel.noise_exchange.NoiseSourceExchange` — two-sided,
and each one-sided method (Type A ``put``, Type B ``aggregated-put``, Type C
``source-put``) under each synchronisation (``lock``, ``fence``, ``pscw``) — is checked
to give bit for bit the two-sided baseline's source terms, then timed interleaved with
the others (:func:`~tachyflow.bench.harness.time_interleaved`: the slowest rank's time
per exchange).

Reported like the paper: the breakdown of an exchange into packing, communication,
unpacking copies and source computation (Fig. 6; per phase, the median over samples of
the slowest rank's time), the messages and bytes each rank sends and receives (Table 1),
the speedups of Type B over Type A and of Type C over Type B (the slower one's median
time over the faster one's; the paper's 1.74× and 2.97×), and each variant's speedup over
the two-sided baseline.
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from tachyflow import runtime
from tachyflow.acoustics.sources import PermeableSourceTerms
from tachyflow.acoustics.surfaces import sphere
from tachyflow.bench.harness import time_interleaved
from tachyflow.bench.results import new_results, summarize
from tachyflow.io.figures import new_subplots, save_figure
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.parallel import HaloExchange, PencilDecomposition
from tachyflow.parallel.noise_exchange import (
    AUTO_METHOD,
    AUTO_SYNC,
    METHODS,
    PHASES,
    SYNC_MODES,
    NoiseSourceExchange,
)
from tachyflow.parallel.pieces import panel_share

BENCHMARK = "noise-exchange"
BASELINE = "two-sided"
# Kwon, Park & Choi's speedups: Type B 1.74x faster than Type A, Type C 2.97x faster than Type B
# (each the slower variant's time over the faster one's).
SEED_RATIOS = {"B_over_A": 1.74, "C_over_B": 2.97}
TYPES = {"put": "A", "aggregated-put": "B", "source-put": "C"}
LENGTH = 1.0  # side of the periodic box
RADIUS = 0.3  # of the sphere, centred in the box
STATISTICS = ("messages_sent", "messages_received", "bytes_sent", "bytes_received")


def variants() -> list[tuple[str, str, str]]:
    """``(name, method, sync)`` of every variant, the two-sided baseline first."""
    found = [(BASELINE, BASELINE, SYNC_MODES[0])]
    for method in METHODS:
        if method != BASELINE:
            found += [(f"{method}/{sync}", method, sync) for sync in SYNC_MODES]
    return found


def _flow(decomposition: PencilDecomposition, grid: StaggeredGrid, halo: HaloExchange):
    """Ghosted u, v, w, p of a smooth periodic field at their staggered positions."""
    pencil = decomposition.pencils["y"]
    dx, dz = grid.spacing_x, grid.spacing_z
    x = (np.arange(pencil.start[0], pencil.stop[0]) + 0.5)[:, None, None] * dx
    y = grid.centres_y[None, :, None]
    z = (np.arange(pencil.start[2], pencil.stop[2]) + 0.5)[None, None, :] * dz
    wave = 2.0 * np.pi / LENGTH
    values = (
        np.sin(wave * (x + 0.5 * dx)) * np.cos(wave * y) * np.cos(wave * z),
        -np.cos(wave * x) * np.sin(wave * grid.faces_y[None, 1:, None]) * np.cos(wave * z),
        np.cos(wave * x) * np.cos(wave * y) * np.sin(wave * (z + 0.5 * dz)),
        0.25 * (np.cos(2 * wave * x) + np.cos(2 * wave * y)) * np.cos(wave * z),
    )
    fields = []
    for value in values:
        field = halo.allocate()
        halo.interior(field)[...] = value
        fields.append(halo.exchange(field))
    return fields


def run_noise_exchange_benchmark(
    points: int = 20000, global_shape=(64, 64, 64), repeats: int = 10, warmup: int = 2, comm=None
) -> dict:
    """Verify and time every variant of the noise-source exchange (collective over ``comm``).

    Parameters
    ----------
    points : int
        Wanted surface points (the cube-sphere has ``6 m²`` panels, the nearest count).
    global_shape : (int, int, int)
        Cells of the periodic box.
    repeats, warmup : int
        Timed samples and untimed exchanges per variant.
    comm : mpi4py.MPI.Intracomm, optional
        Ranks of the flow; ``COMM_WORLD`` by default.

    Returns
    -------
    dict
        The results document (see the module notes).
    """
    comm = runtime.world() if comm is None else comm
    grid = StaggeredGrid(tuple(global_shape), (LENGTH,) * 3, periodic_y=True)
    decomposition = PencilDecomposition(grid.shape, comm=comm, periodic=True)
    halo = HaloExchange(decomposition, "y", width=1, corners=True)
    surface = sphere((0.5 * LENGTH,) * 3, RADIUS * LENGTH, points)
    panels = surface.panels
    destination = np.empty(panels, dtype=np.int64)
    for rank in range(comm.Get_size()):
        destination[panel_share(panels, rank, comm.Get_size())] = rank
    params = {
        "points_requested": points,
        "points": panels,
        "global_shape": list(grid.shape),
        "proc_grid": list(decomposition.proc_grid),
        "repeats": repeats,
        "warmup": warmup,
        "surface": f"cube-sphere, radius {RADIUS} in a periodic box of side {LENGTH}",
        "destinations": "contiguous panel shares",
        "auto": {"method": AUTO_METHOD, "sync": AUTO_SYNC},
    }
    document = new_results(BENCHMARK, params, comm)
    fields = _flow(decomposition, grid, halo)
    exchanges, phases = {}, {}
    surface_points = (surface.centres, surface.normals, destination)
    for name, method, sync in variants():
        exchanges[name] = NoiseSourceExchange(
            decomposition,
            grid,
            halo,
            *surface_points,
            method=method,
            sync=sync,
            sources=PermeableSourceTerms(),
        )
        phases[name] = []
    baseline = exchanges[BASELINE].exchange(*fields)
    verified = {
        name: comm.allreduce(bool(np.array_equal(exchange.exchange(*fields), baseline)), MPI.LAND)
        for name, exchange in exchanges.items()
    }

    def timed(name):
        exchange, record = exchanges[name], phases[name]

        def run():
            exchange.exchange(*fields)
            record.append([exchange.timings[phase] for phase in PHASES])

        return run

    samples = time_interleaved(
        {name: timed(name) for name in exchanges if verified[name]},
        comm,
        repeats,
        warmup,
        description="noise-source exchanges",
    )
    for name, method, sync in variants():
        exchange = exchanges[name]
        entry = {"name": name, "method": method, "sync": sync, "verified": verified[name]}
        entry["statistics_per_rank"] = comm.allgather(exchange.statistics)
        if verified[name]:
            entry.update(summarize(samples[name]))
            # Per phase and sample, the slowest rank; the warm-up exchanges come first.
            slowest = np.array(phases[name][-repeats:])
            comm.Allreduce(MPI.IN_PLACE, slowest, op=MPI.MAX)
            entry["breakdown"] = {
                phase: float(np.median(slowest[:, column])) for column, phase in enumerate(PHASES)
            }
        document["results"].append(entry)
        exchange.free()
    decomposition.free()
    document["summary"] = summary(document)
    return document


def summary(document: dict) -> dict:
    """Speedups over two-sided, the paper's speedups per sync mode, the fastest variant."""
    medians = {e["name"]: e["median"] for e in document["results"] if e["verified"]}
    for entry in document["results"]:
        if entry["verified"] and BASELINE in medians:
            entry["speedup_vs_two_sided"] = medians[BASELINE] / entry["median"]
    ratios = {}
    for sync in SYNC_MODES:
        a, b, c = (medians.get(f"{method}/{sync}") for method in TYPES)
        ratios[sync] = {
            "B_over_A": a / b if a and b else None,
            "C_over_B": b / c if b and c else None,
        }
    fastest = min(medians, key=medians.get) if medians else None
    return {"ratios": ratios, "seed_ratios": SEED_RATIOS, "fastest": fastest}


def stem(document: dict) -> str:
    """File name stem: ``noise-exchange_20184points_2ranks``."""
    return f"{BENCHMARK}_{document['params']['points']}points_{document['mpi']['ranks']}ranks"


def _per_rank(entry: dict, key: str) -> list[int]:
    return [rank[key] for rank in entry["statistics_per_rank"]]


def plot(document: dict, path):
    """Stacked breakdown per variant (Kwon, Park & Choi's Fig. 6) and messages per rank
    (their Table 1)."""
    entries = [e for e in document["results"] if e["verified"]]
    figure, (times, messages) = new_subplots(
        1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 2]}
    )
    names = [e["name"] for e in entries]
    positions = np.arange(len(entries))
    bottom = np.zeros(len(entries))
    for phase in PHASES:
        heights = np.array([e["breakdown"][phase] * 1e3 for e in entries])
        times.bar(positions, heights, bottom=bottom, label=phase)
        bottom += heights
    totals = np.array([e["median"] * 1e3 for e in entries])
    times.plot(positions, totals, "k_", markersize=18, label="median exchange")
    # The two-sided baseline can be two orders of magnitude slower: the axis is cut above
    # the one-sided variants and taller bars carry their value.
    one_sided = [i for i, e in enumerate(entries) if e["method"] != BASELINE]
    if one_sided:
        top = 1.3 * max(max(totals[i], bottom[i]) for i in one_sided)
        times.set_ylim(0, top)
        for position, total in zip(positions, totals, strict=True):
            if total > top:
                label = f"{total:.0f} ms ↑"
                times.annotate(label, (position, 0.95 * top), ha="center", fontsize=8)
    times.set_xticks(positions, names, rotation=50, ha="right", fontsize=8)
    times.set_ylabel("time per exchange [ms] (slowest rank, median)")
    times.legend(fontsize=8)
    times.grid(axis="y", alpha=0.3)
    ranks = document["mpi"]["ranks"]
    width = 0.8 / max(ranks, 1)
    for rank in range(ranks):
        sent = [_per_rank(e, "messages_sent")[rank] for e in entries]
        offset = (rank - (ranks - 1) / 2) * width
        messages.bar(positions + offset, sent, width, label=f"rank {rank}")
    messages.set_xticks(positions, names, rotation=50, ha="right", fontsize=8)
    messages.set_yscale("symlog")
    most = max((max(_per_rank(e, "messages_sent")) for e in entries), default=1)
    messages.set_ylim(0, 3 * max(most, 1))
    messages.set_ylabel("messages (puts) sent per exchange")
    messages.legend(fontsize=8)
    messages.grid(axis="y", alpha=0.3)
    params = document["params"]
    figure.suptitle(
        f"Noise-source exchange: {params['points']} surface points, "
        f"{'×'.join(map(str, params['global_shape']))} grid, {ranks} ranks",
        fontsize=10,
    )
    return save_figure(figure, path)


def print_summary(document: dict, console) -> None:
    """The breakdown and traffic as a rich table, then the speedups (on ``console``)."""
    from rich.table import Table

    params = document["params"]
    table = Table(
        title=f"noise-source exchange, {params['points']} points, "
        f"{'x'.join(map(str, params['global_shape']))} grid, {document['mpi']['ranks']} ranks, "
        f"{params['repeats']} repeats (ms, slowest rank)"
    )
    headers = ("variant", "median", "pack", "comm", "unpack", "source", "msgs/rank", "KiB/rank",
               "B/msg", "vs 2-sided")
    for column in headers:
        if column == "variant":
            table.add_column(column, no_wrap=True, min_width=20)
        else:
            table.add_column(column, justify="right")
    for entry in document["results"]:
        if not entry["verified"]:
            table.add_row(entry["name"], "[red]FAILED[/red]", *["-"] * (len(headers) - 2))
            continue
        sent = _per_rank(entry, "messages_sent")
        sent_bytes = _per_rank(entry, "bytes_sent")
        table.add_row(
            entry["name"],
            f"{entry['median'] * 1e3:.2f}",
            *(f"{entry['breakdown'][phase] * 1e3:.2f}" for phase in PHASES),
            "/".join(map(str, sent)),
            "/".join(f"{b / 1024:.0f}" for b in sent_bytes),
            f"{sum(sent_bytes) / max(sum(sent), 1):.0f}",
            f"{entry.get('speedup_vs_two_sided', float('nan')):.2f}x",
        )
    console.print(table)
    seed = document["summary"]["seed_ratios"]
    for sync, ratio in document["summary"]["ratios"].items():
        parts = [
            f"{label} {value:.2f}x (paper {seed[key]:.2f}x)"
            for key, label in (("B_over_A", "B over A"), ("C_over_B", "C over B"))
            if (value := ratio[key]) is not None
        ]
        console.print(f"{sync}: " + ", ".join(parts))
    console.print(
        f"fastest: {document['summary']['fastest']}; method='auto' is "
        f"{params['auto']['method']}/{params['auto']['sync']}"
    )
