"""The image observer draws each step once: a run ending on its cadence does not draw its
last step again at the finish, unless the statistics history grew meanwhile."""

from types import SimpleNamespace

import numpy as np
from mpi4py import MPI

from tachyflow.insitu import plots
from tachyflow.io.checkpoint import PieceLayout
from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.observers.images import Images


def test_the_last_step_is_drawn_once_and_again_only_with_new_statistics(tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(plots, "plot_slices", lambda *args: drawn.append(("u", args[3])))
    monkeypatch.setattr(plots, "plot_history", lambda history, path: drawn.append(len(history)))
    grid = StaggeredGrid((4, 5, 6), (1.0, 1.0, 1.0))
    solver = SimpleNamespace(
        grid=grid, steps=3, time=0.3,
        cell_field=lambda name: np.zeros(grid.shape),
        piece_layout=lambda: PieceLayout(grid.shape, (0, 0, 0), grid.shape),
    )
    run = SimpleNamespace(
        solver=solver, comm=MPI.COMM_SELF, root=True, output=tmp_path, history=[{}]
    )
    images = Images(every=3)
    images.observe(run)
    images.finish(run)  # the run ended on the cadence: nothing new to draw
    assert drawn == [("u", 3), 1]
    run.history.append({})  # statistics recorded after the pictures: drawn again
    images.finish(run)
    assert drawn == [("u", 3), 1, ("u", 3), 2]
