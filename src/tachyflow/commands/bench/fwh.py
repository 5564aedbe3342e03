"""``tachyflow bench fwh``: the FW-H kernel beside a roofline bound."""

from __future__ import annotations

from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import EXIT_FAILURE, Benchmark, options, register, save_results


@register
class FWH(Benchmark):
    name = "bench fwh"
    help = "FW-H kernel throughput on one core next to a roofline bound"
    description = (
        "Time the FW-H kernel (Farassat 1A with interpolation onto the observer grid) on one "
        "core for a pulsating sphere, and measure in the same run the core's vector FMA and "
        "scalar peaks, its triad bandwidth and its division and square-root throughput: "
        "integrands and panel x observer-time samples per second, the fraction of the "
        "roofline bound and of a division-aware bound."
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
        options.add_repeats(parser, 5)
        options.add_output(parser)

    def run(self, args) -> int:
        """``tachyflow bench fwh``."""
        from tachyflow.bench import fwh

        document = fwh.run_fwh_benchmark(args.panels, args.observers, args.steps, args.repeats)
        console = runtime.make_console()
        if runtime.is_root():
            json_path, png_path = save_results(document, args.output)
            fwh.print_summary(document, console)
            console.print(f"wrote {json_path} and {png_path}")
        if not document["results"][0]["verified"]:
            console.print("[red]the kernel's signals differ from FWHSolver's: not timed[/red]")
            return EXIT_FAILURE
        return 0
