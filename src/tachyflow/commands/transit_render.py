"""``tachyflow transit-render``: readers that draw a run's in-transit pipelines."""

from __future__ import annotations

from tachyflow import runtime
from tachyflow.commands import Command, options, register


@register
class TransitRender(Command):
    name = "transit-render"
    help = "draw a run's in-transit pipelines in separate processes"
    description = (
        "Attach to the ADIOS2 SST streams of the run writing RUN_DIR (before it starts, while "
        "it runs, or again later) and draw the pipelines of its case file whose mode is "
        "'transit' at the steps the run marks due, into RUN_DIR/transit-images. Ends with the "
        "run; Ctrl-C detaches and the run goes on. With -n M, M readers share the pipelines."
    )

    def add_arguments(self, parser):
        options.add_ranks(parser)
        parser.add_argument("run_dir", metavar="RUN_DIR", help="output folder of the run")
        parser.add_argument(
            "--timeout", type=options.positive_float, default=None,
            help="seconds to wait for the run and for each step (default: no limit)",
        )
        parser.add_argument(
            "--delay", type=options.non_negative_float, default=0.0,
            help="extra seconds per step (stands for a slow reader)",
        )
        parser.add_argument(
            "--receive-only", action="store_true",
            help="take every step and draw nothing: what streaming costs the run without "
            "the drawing (benchmarks)",
        )
        parser.add_argument("-o", "--output", default=None, help="folder of the pictures")

    def run(self, args) -> int:
        """``tachyflow transit-render``: one reader per rank."""
        from tachyflow import config
        from tachyflow.insitu.transit_render import render_in_transit

        comm = runtime.world()
        summary = render_in_transit(
            args.run_dir, config.load, comm.Get_rank(), comm.Get_size(), args.timeout,
            args.delay, args.output, draw=not args.receive_only,
        )
        print(
            f"reader {summary['reader']}: {summary['steps']} steps, {summary['drawn']} pictures, "
            f"{summary['skipped']} skipped, end: {summary['end']}",
            flush=True,
        )
        return 0
