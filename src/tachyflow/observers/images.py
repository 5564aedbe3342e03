"""The image observer: velocity slices and the statistics history as PNG."""

from __future__ import annotations

from tachyflow import observers
from tachyflow.observers import Observer, register


@register
class Images(Observer):
    """Draws ``images/u_step_XXXXXXXX.png`` (slices of u) and ``images/statistics.png`` every
    ``[output] images_every`` steps and after the last step (rank 0 draws)."""

    name = "images"

    def __init__(self, every: int):
        self.every = every

    @classmethod
    def from_case(cls, config, options):
        return cls(config.output.images_every) if observers.structured(config) else None

    def observe(self, run) -> None:
        solver = run.solver
        u = solver.decomposition.gather_global(solver.cell_field("u"), "y")
        if not run.root:
            return
        from tachyflow.insitu.plots import plot_history, plot_slices

        folder = run.output / "images"
        plot_slices(
            u, solver.grid, solver.steps, solver.time, folder / f"u_step_{solver.steps:08d}.png"
        )
        if run.history:
            plot_history(run.history, folder / "statistics.png")

    def finish(self, run) -> None:
        self.observe(run)
