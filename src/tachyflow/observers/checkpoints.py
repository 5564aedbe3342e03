"""The checkpoint observer: the state every ``[output] checkpoint_every`` steps and at the end."""

from __future__ import annotations

from tachyflow.io.checkpoint import write_checkpoint
from tachyflow.observers import Observer, register
from tachyflow.solvers.base import CHECKPOINTS


@register
class Checkpoints(Observer):
    """Writes ``checkpoints/step_XXXXXXXX.ckpt`` on its cadence and after the last step: the
    solver's state and every observer's (:meth:`Observer.checkpoint_state`), each rank its
    own pieces (:mod:`tachyflow.io.checkpoint`); keeps the newest ``[output]
    checkpoints_kept``. The path of the last one is in the run's summary."""

    name = "checkpoints"
    needs = frozenset({CHECKPOINTS})

    def __init__(self, every: int, keep: int = 2):
        self.every = every
        self.keep = keep
        self.last = None

    @classmethod
    def from_case(cls, config, options):
        if not cls.applies(config):
            return None
        return cls(config.output.checkpoint_every, config.output.checkpoints_kept)

    def observe(self, run) -> None:
        solver = run.solver
        pieces, scalars = solver.checkpoint_state()
        pieces, replicated = dict(pieces), {}
        for observer in run.observers:
            state = observer.checkpoint_state(run)
            if state is not None:
                prefix = f"observer/{observer.name}/"
                pieces.update({prefix + k: v for k, v in state.pieces.items()})
                replicated.update({prefix + k: v for k, v in state.replicated.items()})
        self.last = write_checkpoint(
            run.comm,
            run.output / "checkpoints",
            solver.steps,
            solver.time,
            pieces,
            solver.piece_layout(),
            scalars,
            replicated,
            keep=self.keep,
        )

    def finish(self, run) -> None:
        self.observe(run)
