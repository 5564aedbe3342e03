"""The papers' network comparisons, rerun on emulated networks: ``tachyflow bench networks``.

Lee, Hong, Lee and Lee ("Performance Analysis of Cluster Network Interfaces for Parallel
Computing of Computational Fluid Dynamics") ran NetPIPE, HPL, the NAS Parallel Benchmarks
and MPINS2D on Fast Ethernet, Gigabit Ethernet and Myrinet; Jeon and Choi ("Performance
Analysis of the Parallel CUPID Code in Distributed Memory System Based Ethernet and
Infiniband Network") compared Ethernet and InfiniBand on their unstructured pressure solver.
Here the same measurements run, one after another, on shared memory and on each network the
emulated cluster (:mod:`tachyflow.cluster`) can shape, every one as an ordinary ``tachyflow
bench`` command with ``--nodes``; this module names those stages and merges what they wrote
into one ``networks`` results document: per network the ping-pong latency and bandwidth, the
Hockney fit beside the papers' built-in profiles, the allreduce measured against the fitted
model's prediction, NPB kernels, the channel step, the unstructured solver and MPINS2D (the
``rae2822`` case's DP-SGS iterations), each with its slowdown against shared memory.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from tachyflow.bench.results import new_results, read_results
from tachyflow.io.figures import new_subplots, save_figure

SHARED_MEMORY = "shared-memory"  # every rank on one node: the MPI library's own transport
UNSHAPED = "unshaped"  # TCP between emulated nodes, no bandwidth limit
DEFAULT_NETWORKS = (SHARED_MEMORY, UNSHAPED, "1Gbit", "100Mbit")
STAGES = ("pingpong", "allreduce", "npb", "step", "unstructured", "mpins2d")
NPB_KERNELS = ("cg", "mg", "ft", "is", "ep")
# The built-in profiles of Lee et al.'s networks, for the fitted ones to be shown beside.
PAPER_PROFILES = ("fast-ethernet", "gigabit-ethernet", "myrinet-2000")


@dataclass(frozen=True)
class NetworkPlan:
    """What to run on each network: ranks, nodes, sizes, stages, where to write."""

    networks: tuple[str, ...]
    ranks: int
    nodes: int
    stages: tuple[str, ...]
    problem_class: str
    quick: bool
    output: str

    def __post_init__(self):
        if not self.networks:
            raise ValueError("--networks: expected at least one network")
        for network in self.networks:
            bandwidth(network)  # refuses what the cluster could not shape
        unknown = sorted(set(self.stages) - set(STAGES))
        if unknown or not self.stages:
            raise ValueError(
                f"--stages {','.join(self.stages)!r}: expected some of {', '.join(STAGES)}"
            )
        if self.nodes < 2:
            raise ValueError(f"--nodes {self.nodes}: a network needs at least 2 nodes")
        if self.ranks < self.nodes:
            raise ValueError(f"-n {self.ranks}: at least one rank per node ({self.nodes})")

    def folder(self, network: str) -> Path:
        """Where the stages of ``network`` write their results."""
        return Path(self.output) / network

    def profile(self, network: str) -> Path:
        """The machine profile fitted to ``network``'s ping-pong."""
        return self.folder(network) / "machine.profile.json"

    def stages_of(self, network: str) -> list[tuple[str, list[str]]]:
        """``(label, tachyflow arguments)`` of every stage on ``network``, in order."""
        ranks, out = str(self.ranks), str(self.folder(network))
        spread = [] if network == SHARED_MEMORY else ["--nodes", str(self.nodes)]
        problem_class = "S" if self.quick else self.problem_class
        stages = []
        if "pingpong" in self.stages:
            largest = "256KiB" if self.quick else "4MiB"
            pingpong = str(self.folder(network) / f"pingpong_{ranks}ranks.json")
            stages += [
                ("ping-pong", ["bench", "pingpong", "-n", ranks, *spread, "--max-size", largest,
                               "--repeats", "2" if self.quick else "3", "--no-peer", "-o", out]),
                ("model fit", ["model", "fit", pingpong, "-o", str(self.profile(network))]),
            ]
        if "allreduce" in self.stages:
            fitted = "pingpong" in self.stages
            profile = ["--profile", str(self.profile(network))] if fitted else []
            stages.append(
                ("allreduce", ["bench", "collectives", "--op", "allreduce", "-n", ranks, *spread,
                               "--algos", "native,recursive-doubling,ring", "--sizes",
                               "8B:64KiB:8" if self.quick else "8B:4MiB:8", "--repeats",
                               "3", "--no-mpich-algorithms", *profile, "-o", out])
            )
        if "npb" in self.stages:
            stages += [
                (f"NPB {kernel.upper()}", ["bench", "npb", "--kernel", kernel, "--class",
                                           problem_class, "-n", ranks, *spread, "-o", out])
                for kernel in NPB_KERNELS
            ]
        if "step" in self.stages:
            cells = "32" if self.quick else "96"
            stages.append(
                ("channel step", ["bench", "step", "-n", ranks, *spread, "--grid", cells, cells,
                                  cells, "--repeats", "3", "--no-peer", "-o", out])
            )
        if "unstructured" in self.stages:
            cells = "20000" if self.quick else "144000"
            stages.append(
                ("unstructured", ["bench", "unstructured", "--cells", cells, "--ranks", ranks,
                                  *spread, "--petsc-grid", "0", "-o", out])
            )
        if "mpins2d" in self.stages:
            stages.append(
                ("MPINS2D", ["run", "rae2822", "-n", ranks, *spread, "--steps",
                             "20" if self.quick else "200", "-o",
                             str(self.folder(network) / "mpins2d")])
            )
        return stages


def bandwidth(network: str) -> str | None:
    """The ``cluster up --bandwidth`` of ``network`` (None: unshaped or shared memory)."""
    if network in (SHARED_MEMORY, UNSHAPED):
        return None
    from tachyflow.cluster import parse_bandwidth

    label, _ = parse_bandwidth(network)
    return label


def _documents(folder: Path) -> dict[str, list[dict]]:
    """Results documents in ``folder`` by benchmark."""
    found: dict[str, list[dict]] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            document = read_results(path)
        except ValueError:
            continue
        found.setdefault(document["benchmark"], []).append(document)
    return found


def _pingpong(documents: list[dict]) -> dict:
    latency = [e for e in documents[0]["results"] if e["mode"] == "latency"]
    small = min((e for e in latency if e["size"] >= 8), key=lambda e: e["size"])
    peak = max(latency, key=lambda e: e["bandwidth"])
    return {
        "latency": small["median"],
        "latency_size": small["size"],
        "peak_bandwidth": peak["bandwidth"],
        "peak_bandwidth_size": peak["size"],
        "curve": [[e["size"], e["median"]] for e in latency],
    }


def _fit(path: Path) -> dict | None:
    from tachyflow.models.profiles import load_profile

    if not path.exists():
        return None
    model = load_profile(str(path))
    return {"alpha": model.alpha, "beta": model.beta, "bandwidth": 1.0 / model.beta}


def _allreduce(documents: list[dict]) -> list[dict]:
    rows = []
    for entry in documents[0]["results"]:
        if entry.get("verified") and "predicted" in entry:
            rows.append(
                {
                    "algorithm": entry["name"],
                    "size": entry["size"],
                    "measured": entry["median"],
                    "predicted": entry["predicted"],
                    "measured_over_predicted": entry["median"] / entry["predicted"],
                }
            )
    return rows


def summarise(network: str, folder: Path) -> dict:
    """What the stages wrote for ``network``: one summary."""
    documents = _documents(folder)
    summary: dict = {"network": network, "bandwidth_limit": bandwidth(network)}
    if "pingpong" in documents:
        summary["pingpong"] = _pingpong(documents["pingpong"])
        summary["mpi"] = documents["pingpong"][0]["mpi"]
    fit = _fit(folder / "machine.profile.json")
    if fit is not None:
        summary["fit"] = fit
    if "collectives" in documents:
        summary["allreduce"] = _allreduce(documents["collectives"])
    if "npb" in documents:
        summary["npb"] = {
            d["params"]["kernel"]: {
                "class": d["params"]["class"],
                "seconds": d["results"][0]["median"],
                "mops": d["results"][0]["mops_total"],
                "verified": d["results"][0]["verified"],
            }
            for d in documents["npb"]
        }
    if "step" in documents:
        entry = next(e for e in documents["step"][0]["results"] if e["name"] == "tachyflow-step")
        summary["step"] = {
            "seconds": entry["median"],
            "verified": entry["verified"],
            "grid": documents["step"][0]["params"]["global_shape"],
        }
    if "unstructured" in documents:
        entries = [e for e in documents["unstructured"][0]["results"] if e["verified"]]
        summary["unstructured"] = [
            {
                "mesh": e["name"],
                "ranks": e["ranks"],
                "per_iteration": e["per_iteration"],
                "communication_share": e["communication_share"],
            }
            for e in entries
        ]
    run = folder / "mpins2d" / "timings.json"
    if run.exists():
        timings = json.loads(run.read_text())
        summary["mpins2d"] = {
            "seconds_per_iteration": timings["time_per_step"]["median"],
            "cells": timings["cells"],
            "iterations": timings["steps"],
        }
        summary.setdefault("mpi", timings.get("mpi"))
    if "mpi" not in summary:
        first = next((docs[0] for docs in documents.values() if docs[0].get("mpi")), None)
        summary["mpi"] = None if first is None else first["mpi"]
    return summary


def _measurements(summary: dict) -> dict[str, tuple[float, bool]]:
    """Every timed quantity of one network: name -> (seconds, verified)."""
    found = {}
    if "pingpong" in summary:
        ping = summary["pingpong"]
        found[f"ping-pong {ping['latency_size']} B"] = (ping["latency"], True)
    for kernel, run in summary.get("npb", {}).items():
        found[f"NPB {kernel.upper()}.{run['class']}"] = (run["seconds"], run["verified"])
    if "step" in summary:
        found["channel step"] = (summary["step"]["seconds"], summary["step"]["verified"])
    for entry in summary.get("unstructured", []):
        found[f"Jacobi-CG iteration, {entry['mesh']}"] = (entry["per_iteration"], True)
    if "mpins2d" in summary:
        found["MPINS2D iteration"] = (summary["mpins2d"]["seconds_per_iteration"], True)
    return found


def merge(plan: NetworkPlan, summaries: list[dict]) -> dict:
    """One ``networks`` results document from the summaries of every network."""
    from tachyflow.models.profiles import builtin_profiles

    document = new_results(
        "networks",
        {
            "networks": list(plan.networks),
            "ranks": plan.ranks,
            "nodes": plan.nodes,
            "stages": list(plan.stages),
            "class": "S" if plan.quick else plan.problem_class,
            "quick": plan.quick,
        },
        None,
    )
    document["mpi"] = next((s["mpi"] for s in summaries if s.get("mpi")), None)
    document["networks"] = summaries
    profiles = builtin_profiles()
    document["paper_profiles"] = {
        name: {"alpha": profiles[name].alpha, "bandwidth": 1.0 / profiles[name].beta}
        for name in PAPER_PROFILES
    }
    reference = next((s for s in summaries if s["network"] == SHARED_MEMORY), None)
    base = {} if reference is None else _measurements(reference)
    slowdowns: dict[str, dict[str, float]] = {}
    for summary in summaries:
        for name, (seconds, verified) in _measurements(summary).items():
            entry = {
                "name": f"{summary['network']}: {name}",
                "network": summary["network"],
                "measurement": name,
                "median": seconds,
                "verified": verified,
            }
            if name in base and base[name][0] > 0 and verified:
                entry["slowdown_vs_shared_memory"] = seconds / base[name][0]
                slowdowns.setdefault(summary["network"], {})[name] = entry[
                    "slowdown_vs_shared_memory"
                ]
            document["results"].append(entry)
        for row in summary.get("allreduce", []):
            document["results"].append(
                {
                    "name": f"{summary['network']}: allreduce {row['algorithm']} {row['size']} B",
                    "network": summary["network"],
                    "measurement": f"allreduce {row['algorithm']}",
                    "median": row["measured"],
                    "predicted": row["predicted"],
                    "measured_over_predicted": row["measured_over_predicted"],
                    "verified": True,
                }
            )
    document["summary"] = _trends(summaries, slowdowns)
    return document


def _trends(summaries: list[dict], slowdowns: dict[str, dict[str, float]]) -> dict:
    """The papers' lessons, as measured: which NPB kernel a network hurts most, how far the
    fitted model's allreduce predictions are off, and the fitted start-up and bandwidth."""
    trends: dict = {}
    for summary in summaries:
        network = summary["network"]
        kernels = {
            name: value for name, value in slowdowns.get(network, {}).items()
            if name.startswith("NPB ")
        }
        row: dict = {}
        if kernels and network != SHARED_MEMORY:
            worst = max(kernels, key=kernels.get)
            row["most_sensitive_npb_kernel"] = worst
            row["its_slowdown"] = kernels[worst]
        if "MPINS2D iteration" in slowdowns.get(network, {}) and network != SHARED_MEMORY:
            row["mpins2d_slowdown"] = slowdowns[network]["MPINS2D iteration"]
        ratios = [r["measured_over_predicted"] for r in summary.get("allreduce", [])]
        if ratios:
            logs = sorted(abs(math.log(r)) for r in ratios)
            row["allreduce_model_error_median"] = math.exp(logs[len(logs) // 2]) - 1.0
        if "fit" in summary:
            row["fitted_latency"] = summary["fit"]["alpha"]
            row["fitted_bandwidth"] = summary["fit"]["bandwidth"]
        if "pingpong" in summary:
            row["measured_latency"] = summary["pingpong"]["latency"]
            row["measured_peak_bandwidth"] = summary["pingpong"]["peak_bandwidth"]
        trends[network] = row
    return trends


def stem(document: dict) -> str:
    """File name stem: ``networks_2ranks_2nodes``."""
    params = document["params"]
    return f"networks_{params['ranks']}ranks_{params['nodes']}nodes"


def plot(document: dict, path):
    """Ping-pong curves per network (the NetPIPE figure) beside the papers' networks, and
    each measurement's slowdown against shared memory."""
    figure, (curves, bars) = new_subplots(1, 2, figsize=(12, 4.5))
    for summary in document["networks"]:
        if "pingpong" not in summary:
            continue
        sizes, times = zip(*summary["pingpong"]["curve"], strict=True)
        curves.loglog(sizes, [s / t / 1e6 for s, t in zip(sizes, times, strict=True)],
                      marker=".", label=summary["network"])
    for name, profile in document.get("paper_profiles", {}).items():
        curves.axhline(profile["bandwidth"] / 1e6, linestyle=":", linewidth=1, color="grey")
        curves.annotate(f"{name} (Lee et al.)", (1, profile["bandwidth"] / 1e6), fontsize=7,
                        color="grey", va="bottom")
    curves.set_xlabel("message size [B]")
    curves.set_ylabel("one-way bandwidth [MB/s]")
    curves.set_title("ping-pong (NetPIPE)", fontsize=10)
    if curves.get_legend_handles_labels()[0]:
        curves.legend(fontsize=8)
    networks = [s["network"] for s in document["networks"] if s["network"] != SHARED_MEMORY]
    measurements = sorted(
        {e["measurement"] for e in document["results"] if "slowdown_vs_shared_memory" in e}
    )
    width = 0.8 / max(len(networks), 1)
    for index, network in enumerate(networks):
        values = {
            e["measurement"]: e["slowdown_vs_shared_memory"]
            for e in document["results"]
            if e["network"] == network and "slowdown_vs_shared_memory" in e
        }
        bars.bar(
            [m + index * width for m in range(len(measurements))],
            [values.get(name, float("nan")) for name in measurements],
            width=width,
            label=network,
        )
    bars.set_xticks(
        [m + 0.4 - width / 2 for m in range(len(measurements))], measurements, rotation=30,
        ha="right", fontsize=7,
    )
    bars.set_yscale("log")
    bars.axhline(1.0, color="black", linewidth=0.8)
    bars.set_ylabel("time / time on shared memory")
    bars.set_title("what each network costs", fontsize=10)
    if networks:
        bars.legend(fontsize=8)
    figure.tight_layout()
    return save_figure(figure, path)
