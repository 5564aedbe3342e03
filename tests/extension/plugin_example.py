"""A plug-in as a user would write one: a command and an observer, registered from outside
tachyflow (imported through $TACHYFLOW_PLUGINS)."""

from tachyflow import observers
from tachyflow.commands import Command, register


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
