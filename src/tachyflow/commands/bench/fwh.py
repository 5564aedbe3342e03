"""``tachyflow bench fwh``: the FW-H kernels beside a roofline bound."""

from __future__ import annotations

from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import EXIT_FAILURE, Benchmark, options, register, save_results

# The names of tachyflow.bench.fwh.SCHEMES (that module compiles kernels: not imported to
# parse a command line; a test keeps the two equal).
SCHEME_NAMES = ("fourth", "second")


@register
class FWH(Benchmark):
    name = "bench fwh"
    help = "FW-H kernels' throughput on one core next to a roofline bound"
    description = (
        "Time the FW-H kernels (Farassat 1A with interpolation onto the observer grid) of "
        "both schemes, fourth order with cubic interpolation (the default of FW-H runs) and "
        "second order with linear interpolation, on one core for a pulsating sphere, and "
        "measure in the same run the core's vector FMA and scalar peaks, its triad bandwidth "
        "and its division and square-root throughput: integrands and panel x observer-time "
        "samples per second, the fraction of the roofline bound and of a division-aware bound."
    )
    results: ClassVar[dict[str, str]] = {"fwh": "tachyflow.bench.fwh"}

    def add_arguments(self, parser):
        parser.add_argument(
            "--panels",
            type=options.positive_int,
            default=2000,
            help="sphere panels (default 2000)",
        )
        parser.add_argument(
            "--observers", type=options.positive_int, default=16, help="observers (default 16)"
        )
        parser.add_argument(
            "--steps", type=options.positive_int, default=400, help="source steps (default 400)"
        )
        parser.add_argument(
            "--scheme",
            choices=("all", *SCHEME_NAMES),
            default="all",
            help="the scheme whose kernel is timed: fourth (order 4, cubic interpolation), "
            "second (order 2, linear) or all (default)",
        )
        options.add_repeats(parser, 5)
        options.add_output(parser)

    def run(self, args) -> int:
        """``tachyflow bench fwh``."""
        from tachyflow.bench import fwh

        schemes = SCHEME_NAMES if args.scheme == "all" else (args.scheme,)
        document = fwh.run_fwh_benchmark(
            args.panels, args.observers, args.steps, args.repeats, schemes
        )
        console = runtime.make_console()
        if runtime.is_root():
            json_path, png_path = save_results(document, args.output)
            fwh.print_summary(document, console)
            console.print(f"wrote {json_path} and {png_path}")
        wrong = [entry["name"] for entry in document["results"] if not entry["verified"]]
        if wrong:
            console.print(
                f"[red]the signals of {', '.join(wrong)} differ from FWHSolver's: not timed[/red]"
            )
            return EXIT_FAILURE
        return 0
