"""The image observer: velocity slices and the statistics history as PNG."""

from __future__ import annotations

from tachyflow.observers import Observer, register
from tachyflow.parallel import agreement
from tachyflow.parallel.pieces import gather_plane
from tachyflow.solvers.base import PENCIL_FIELDS


@register
class Images(Observer):
    """Draws ``images/u_step_XXXXXXXX.png`` (slices of u) and ``images/statistics.png`` every
    ``[output] images_every`` steps and after the last step (rank 0 draws the planes it
    gathered)."""

    name = "images"
    needs = frozenset({PENCIL_FIELDS})

    def __init__(self, every: int):
        self.every = every
        self._drawn = None  # (step, rows of history) of the last pictures drawn

    @classmethod
    def from_case(cls, config, options):
        return cls(config.output.images_every) if cls.applies(config) else None

    def observe(self, run) -> None:
        solver = run.solver
        # The same on every rank; a run ending on the cadence would draw its last step twice.
        drawn = (solver.steps, len(run.history))
        if drawn == self._drawn:
            return
        self._drawn = drawn
        u, layout = solver.cell_field("u"), solver.piece_layout()
        _, ny, nz = layout.global_shape
        # Only the two planes drawn travel to rank 0, never the whole field.
        planes = [
            gather_plane(run.comm, u, layout.start, layout.global_shape, axis, index)
            for axis, index in ((2, nz // 2), (1, ny // 4))
        ]

        def draw() -> None:
            from tachyflow.insitu.plots import plot_history, plot_slices

            folder = run.output / "images"
            path = folder / f"u_step_{solver.steps:08d}.png"
            plot_slices(*planes, solver.grid, solver.steps, solver.time, path)
            if run.history:
                plot_history(run.history, folder / "statistics.png")

        # Rank 0 draws; a failure (a full disk) ends every rank here, together.
        agreement.on_root(run.comm, draw)

    def finish(self, run) -> None:
        self.observe(run)
