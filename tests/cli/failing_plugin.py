"""A plug-in command that fails on chosen ranks, for the tests of how a job ends
(imported through $TACHYFLOW_PLUGINS)."""

from tachyflow import runtime
from tachyflow.commands import Command, register
from tachyflow.commands.options import add_ranks
from tachyflow.errors import ConfigError


@register
class FailOn(Command):
    name = "fail-on"
    help = "raise on some ranks; the others wait in a barrier"

    def add_arguments(self, parser):
        add_ranks(parser)
        parser.add_argument("ranks_failing", type=int, nargs="+", help="the ranks that raise")
        parser.add_argument("--error", choices=("config", "runtime"), default="config")

    def run(self, args) -> int:
        comm = runtime.world()
        if comm.Get_rank() in args.ranks_failing:
            kind = ConfigError if args.error == "config" else RuntimeError
            raise kind(f"{args.error} error on the ranks {args.ranks_failing}")
        comm.Barrier()
        return 0
