"""A plug-in as a user would write one: a command, an observer, a solver with a case table
of its own and a pipeline kind with keys of its own, registered from outside tachyflow
(imported through $TACHYFLOW_PLUGINS)."""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from tachyflow import observers
from tachyflow.commands import Command, register
from tachyflow.insitu.options import PipelineSection
from tachyflow.insitu.pipelines import Pipeline, register_pipeline
from tachyflow.options import at_least, positive
from tachyflow.parallel.reductions import Reductions
from tachyflow.solvers.base import Solver, SolverOptions
from tachyflow.solvers.base import register as register_solver


@register
class Greet(Command):
    name = "greet"
    help = "say hello from a plug-in"
    uses_mpi = False

    def add_arguments(self, parser):
        parser.add_argument("--who", default="world", help="whom to greet")

    def run(self, args) -> int:
        print(f"hello {args.who}")
        return 0


@observers.register
class StepLog(observers.Observer):
    """Appends the step number to a file on its cadence, and 'end' when the run finishes."""

    name = "step-log"

    def __init__(self, every: int = 1, file: str = "steps.txt"):
        self.every = every
        self.file = file

    def _write(self, run, text: str) -> None:
        if run.root:
            with (run.output / self.file).open("a") as out:
                out.write(text + "\n")

    def start(self, run):
        self._write(run, f"start {run.solver.steps}")

    def observe(self, run):
        self._write(run, str(run.solver.steps))

    def finish(self, run):
        self._write(run, "end")


@dataclass(frozen=True)
class DecayOptions:
    """``[decay]``: dy/dt = -rate y from y = start, on every rank."""

    rate: Annotated[float, positive] = 1.0
    start: float = 1.0
    scheme: Literal["euler", "exact"] = "exact"


def _check_decay(config, require):
    require(config.decay.scheme == "exact" or config.time.dt * config.decay.rate < 2,
            "time.dt", f"< 2 / decay.rate = {2 / config.decay.rate} with scheme = 'euler'",
            config.time.dt)


class _Ranks(Reductions):
    """The decomposition of a solver without a grid: the ranks' reductions."""

    def __init__(self, comm):
        self.comm = comm.Dup()

    def free(self):
        self.comm.Free()


@register_solver("decay")
class Decay(Solver):
    """A plug-in solver with a table of its own: exponential decay of one value."""

    fields = ()
    statistics_columns = ("step", "time", "y")
    case_options = SolverOptions({"decay": DecayOptions}, _check_decay)

    def __init__(self, options, comm):
        self.options, self.decomposition = options, _Ranks(comm)
        self.y, self.steps, self.time = options.start, 0, 0.0

    @classmethod
    def from_case(cls, config, comm, planning="measure"):
        return cls(config.decay, comm)

    def step(self, dt):
        rate = self.options.rate
        self.y *= math.exp(-rate * dt) if self.options.scheme == "exact" else 1 - rate * dt
        self.steps, self.time = self.steps + 1, self.time + dt

    def stable_time_step(self, cfl):
        return cfl / self.options.rate

    def cfl_number(self, dt):
        return dt * self.options.rate

    def statistics(self):
        return {"step": self.steps, "time": self.time, "y": self.y}


@dataclass(frozen=True)
class MarkerSection(PipelineSection):
    """A ``marker`` entry: a line of ``text`` into ``marker_<name>.txt`` each time."""

    text: str = "here"
    repeat: Annotated[int, at_least(1)] = 1


@register_pipeline("marker")
class MarkerPipeline(Pipeline):
    """A plug-in pipeline kind with keys of its own; reads no field."""

    options = MarkerSection

    def __init__(self, section, grid, start_time=0.0):
        super().__init__(section, grid, start_time)
        self.fields = ()

    def draw(self, renderer, whole, folder, step, time, history):
        path = Path(folder) / f"marker_{self.name}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as out:
            out.write(" ".join([self.section.text] * self.section.repeat) + f" {step}\n")
        return path
