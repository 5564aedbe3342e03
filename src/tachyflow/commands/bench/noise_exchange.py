"""``tachyflow bench noise-exchange``: one-sided gathering of FW-H noise sources."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import EXIT_FAILURE, Benchmark, options, register


@register
class NoiseExchange(Benchmark):
    name = "bench noise-exchange"
    help = (
        "one-sided gathering of FW-H noise sources, Types A, B, C of Kwon, Park & Choi "
        "(noise prediction in an axial fan)"
    )
    description = (
        "Gather the FW-H source terms of a sphere of surface points from the flow's y-pencils "
        'with every variant of Kwon, Park & Choi, "Optimization of Parallel Code for Noise '
        'Prediction in an Axial Fan Using MPI One-Sided Communication" (two-sided; MPI_Put '
        "per point, aggregated per target, or source terms computed where the flow lives; "
        "lock, fence and PSCW synchronisation), check they agree bit for bit and time them "
        "interleaved: breakdown per phase, messages per rank, the paper's speedups."
    )
    results: ClassVar[dict[str, str]] = {"noise-exchange": "tachyflow.bench.noise_exchange"}

    def add_arguments(self, parser):
        options.add_ranks(parser)
        parser.add_argument(
            "--points",
            type=options.positive_int,
            default=20000,
            help="surface points (default 20000)",
        )
        parser.add_argument(
            "--grid",
            nargs=3,
            type=options.positive_int,
            default=[64, 64, 64],
            metavar=("NX", "NY", "NZ"),
            help="cells of the periodic box (default 64^3)",
        )
        options.add_repeats(parser, 10)
        parser.add_argument(
            "--warmup",
            type=options.non_negative_int,
            default=2,
            help="untimed exchanges per variant first (default 2)",
        )
        options.add_output(parser)

    def run(self, args) -> int:
        """``tachyflow bench noise-exchange``."""
        from tachyflow.bench import noise_exchange
        from tachyflow.bench.results import write_json

        document = noise_exchange.run_noise_exchange_benchmark(
            args.points, args.grid, args.repeats, args.warmup, comm=runtime.world()
        )
        console = runtime.make_console()
        if runtime.is_root():
            stem = Path(args.output) / noise_exchange.stem(document)
            json_path = write_json(stem.with_suffix(".json"), document)
            png_path = noise_exchange.plot(document, stem.with_suffix(".png"))
            noise_exchange.print_summary(document, console)
            console.print(f"wrote {json_path} and {png_path}")
        failed = [e["name"] for e in document["results"] if not e["verified"]]
        if failed:
            console.print(f"[red]results differ from two-sided for {', '.join(failed)}[/red]")
            return EXIT_FAILURE
        return 0
