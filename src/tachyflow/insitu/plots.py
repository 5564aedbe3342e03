"""Batch images of a run: velocity slices and the statistics history (matplotlib)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tachyflow.io.figures import new_subplots, save_figure
from tachyflow.numerics.grid import StaggeredGrid


def plot_slices(
    xy_plane: np.ndarray, xz_plane: np.ndarray, grid: StaggeredGrid, step: int, time: float, path
) -> Path:
    """Streamwise velocity on the x-y plane of cells ``nz // 2`` (``xy_plane``, shape
    (nx, ny)) and the x-z plane of cells ``ny // 4`` (``xz_plane``, shape (nx, nz))."""
    _, ny, nz = grid.shape
    lx, _, lz = grid.lengths
    x = grid.faces_x[1:]  # u's faces
    z = (np.arange(nz) + 0.5) * grid.spacing_z
    y = grid.centres_y
    figure, axes = new_subplots(2, 1, figsize=(8, 6.5))
    image = axes[0].pcolormesh(x, y, xy_plane.T, shading="auto", cmap="RdBu_r")
    ax, ay, az = grid.axis_names
    axes[0].set_title(f"u on the {ax}-{ay} plane {az} = {z[nz // 2]:.3g}")
    axes[0].set_xlabel(ax)
    axes[0].set_ylabel(ay)
    axes[0].set_aspect("equal")
    figure.colorbar(image, ax=axes[0], shrink=0.8)
    j = ny // 4
    # Cell edges, not centres: an axisymmetric grid has a single cell in θ.
    x_edges = grid.ghosted_centres_x()[1:]
    z_edges = np.arange(nz + 1) * grid.spacing_z
    image = axes[1].pcolormesh(x_edges, z_edges, xz_plane.T, shading="flat", cmap="RdBu_r")
    axes[1].set_title(f"u on the {ax}-{az} plane {ay} = {y[j]:.3g}")
    axes[1].set_xlabel(ax)
    axes[1].set_ylabel(az)
    axes[1].set_aspect("equal")
    axes[1].set_xlim(0, lx)
    axes[1].set_ylim(0, lz)
    figure.colorbar(image, ax=axes[1], shrink=0.8)
    figure.suptitle(f"step {step}, t = {time:.4g}")
    # Fixed margins: a run draws these every few steps, and fitting the layout to the
    # labels would draw each picture twice.
    figure.subplots_adjust(left=0.08, right=0.97, bottom=0.07, top=0.9, hspace=0.4)
    return save_figure(figure, path, dpi=100, tight=False)


def plot_history(history: list[dict], path) -> Path:
    """Kinetic energy, dissipation (or, for solvers that record none, the wall shear), CFL
    and divergence against time (``history``: records, or a run's
    :class:`~tachyflow.simulation.RunHistory`, whose plotted spread it takes)."""
    history = list(history)
    times = [h["time"] for h in history]
    second = "dissipation" if "dissipation" in history[0] else "wall_shear"
    panels = [
        ("kinetic_energy", "kinetic energy", False),
        (second, second.replace("_", " "), False),
        ("cfl", "CFL number", False),
        ("max_divergence", "max |div u|", True),
    ]
    figure, axes = new_subplots(2, 2, figsize=(9, 6), sharex=True)
    for axis, (key, label, logarithmic) in zip(axes.ravel(), panels, strict=True):
        values = [h[key] for h in history]
        axis.plot(times, values, marker="." if len(times) < 30 else None)
        axis.set_ylabel(label)
        if logarithmic and all(v > 0 for v in values):
            axis.set_yscale("log")
        axis.grid(alpha=0.3)
    for axis in axes[1]:
        axis.set_xlabel("time")
    figure.subplots_adjust(left=0.12, right=0.98, bottom=0.09, top=0.97, wspace=0.42, hspace=0.1)
    return save_figure(figure, path, dpi=100, tight=False)
