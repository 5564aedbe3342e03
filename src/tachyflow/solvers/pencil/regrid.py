"""Restart onto another grid (``tachyflow run --restart CHECKPOINT --interpolate``): a
pencil solver's checkpoint of one grid interpolated onto the case's.

Each rank reads only the window of the old arrays around its own y-pencil
(:func:`tachyflow.io.checkpoint.read_checkpoint_windows`; checksums verified) and
interpolates each field linearly from its own staggered points to the new ones, axis by
axis (:mod:`tachyflow.numerics.regrid`: periodic axes wrapped, bounded ones extrapolated
from their end intervals). The old grid is the case's with the checkpoint's cells (the
same lengths, stretching and sectors). The interpolated velocity is not divergence-free on
the new grid: the caller projects it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.io.checkpoint import read_checkpoint_windows
from tachyflow.numerics import regrid

# The staggered place of each checkpoint array (q = r u_r lives where v does).
PLACES = {"u": "u", "v": "v", "q": "v", "w": "w", "p": "p"}


def point_axes(grid, place: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The global coordinates along x, y (r) and z (θ) of the points of ``place`` (u, v, w
    or p) on ``grid``."""
    nz = grid.shape[2]
    dz = grid.spacing_z
    x, y, z = grid.centres_x, grid.centres_y, (np.arange(nz) + 0.5) * dz
    if place == "u":
        x = grid.faces_x[1:]
    elif place == "v":
        y = grid.faces_y[1:]
    elif place == "w":
        z = z + 0.5 * dz
    return x, y, z


def read_onto(solver, path):
    """``(checkpoint, pieces)``: checkpoint ``path`` of another grid interpolated onto this
    rank's piece of ``solver``'s grid (collective)."""
    decomposition = solver.decomposition
    pencil = decomposition.pencils["y"]
    lengths = solver.grid.lengths
    periods = [length if periodic else None
               for length, periodic in zip(lengths, decomposition.periodic, strict=True)]
    weights = {}

    def ranges_of(shape):
        """The old index ranges this rank needs, for every place at once."""
        try:
            old = dataclasses.replace(solver.grid, shape=tuple(shape))
        except ValueError as error:
            raise ConfigError(f"--interpolate: the checkpoint's grid {tuple(shape)} does not "
                              f"fit the case's [grid]: {error}") from None
        for place in ("u", "v", "w", "p"):
            new_axes = point_axes(solver.grid, place)
            weights[place] = [
                regrid.axis_weights(old_axis, new_axis[start:stop], period)
                for old_axis, new_axis, start, stop, period in zip(
                    point_axes(old, place), new_axes, pencil.start, pencil.stop, periods,
                    strict=True)
            ]
        found, positions = [], []
        for axis in range(3):
            lower = np.concatenate([weights[place][axis][0] for place in weights])
            upper = np.concatenate([weights[place][axis][1] for place in weights])
            ranges, position = regrid.index_ranges(lower, upper, shape[axis])
            found.append(ranges)
            positions.append(position)
        ranges_of.positions = positions
        return found

    checkpoint, _, windows = read_checkpoint_windows(decomposition.comm, path, ranges_of)
    pieces = {}
    for name, window in windows.items():
        if name not in PLACES:
            raise ConfigError(f"--interpolate: checkpoint {path} holds an array {name!r} this "
                              f"solver does not know")
        axes = [(*weights[PLACES[name]][axis], ranges_of.positions[axis]) for axis in range(3)]
        pieces[name] = regrid.interpolate(window, axes)
    return checkpoint, pieces
