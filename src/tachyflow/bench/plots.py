"""Plots made from results documents alone, so runs from a cluster can be re-plotted here."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tachyflow.io.figures import new_subplots, save_figure


def file_stem(document: dict, *extra: str) -> str:
    """``BENCHMARK_128x128x128_2x1[_EXTRA...]``: the results file name of a grid benchmark."""
    params = document["params"]
    parts = [
        document["benchmark"],
        "x".join(map(str, params["global_shape"])),
        "x".join(map(str, params["proc_grid"])),
        *extra,
    ]
    return "_".join(parts)


def grid_title(document: dict, what: str) -> str:
    """``WHAT, 128×128×128, 2 ranks (2×1 grid)``: the plot title of a grid benchmark."""
    params = document["params"]
    shape = "×".join(map(str, params["global_shape"]))
    grid = "×".join(map(str, params["proc_grid"]))
    return f"{what}, {shape}, {document['mpi']['ranks']} ranks ({grid} grid)"


def plot_samples(
    document: dict, path, title: str, xlabel: str, peer_name: str | None = None
) -> Path:
    """Box plot of the timing samples of every verified result and peer (ms)."""
    entries = [
        e
        for e in document["results"] + document["peers"]
        if e.get("verified", True) and e.get("samples")
    ]
    figure, axes = new_subplots(figsize=(7.5, 1.3 + 0.7 * max(len(entries), 1)))
    if entries:
        axes.boxplot(
            [np.array(e["samples"]) * 1e3 for e in entries],
            orientation="horizontal",
            tick_labels=[e["name"] for e in entries],
        )
        for row, entry in enumerate(entries, start=1):
            label = f"median {entry['median'] * 1e3:.2f} ms"
            if "speedup_vs_peer" in entry and peer_name:
                label += f", {entry['speedup_vs_peer']:.2f}x faster than {peer_name}"
            axes.annotate(label, (entry["median"] * 1e3, row + 0.3), ha="center", fontsize=8)
    axes.set_xlabel(xlabel)
    axes.set_title(title, fontsize=10)
    axes.grid(axis="x", alpha=0.3)
    return save_figure(figure, path)
