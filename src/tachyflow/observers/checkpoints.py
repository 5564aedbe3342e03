"""The checkpoint observer: the state every ``[output] checkpoint_every`` steps and at the end."""

from __future__ import annotations

from tachyflow import observers
from tachyflow.io.checkpoint import write_checkpoint
from tachyflow.observers import Observer, register


@register
class Checkpoints(Observer):
    """Writes ``checkpoints/step_XXXXXXXX.npz`` (the solver's checkpoint state) on its cadence
    and after the last step; the path of the last one is in the run's summary."""

    name = "checkpoints"

    def __init__(self, every: int):
        self.every = every
        self.last = None

    @classmethod
    def from_case(cls, config, options):
        return cls(config.output.checkpoint_every) if observers.structured(config) else None

    def observe(self, run) -> None:
        fields, scalars = run.solver.checkpoint_state()
        if run.root:
            self.last = write_checkpoint(
                run.output / "checkpoints", run.solver.steps, run.solver.time, fields, scalars
            )

    def finish(self, run) -> None:
        self.observe(run)
