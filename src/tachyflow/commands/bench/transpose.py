"""``tachyflow bench transpose``: pencil transposes against mpi4py-fft."""

from __future__ import annotations

from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import Benchmark, options, register
from tachyflow.commands.bench import report_benchmark


@register
class Transpose(Benchmark):
    name = "bench transpose"
    help = "pencil transposes against mpi4py-fft"
    description = (
        "Time x->y->z->y->x round trips of pencil transposes with every tachyflow method and, "
        "when installed, mpi4py-fft's Alltoallw transfers on the same grid and process grid."
    )
    results: ClassVar[dict[str, str]] = {"transpose": "tachyflow.bench.transpose"}
    suite_order = 30

    def add_arguments(self, parser):
        from tachyflow.parallel.transpose import METHODS

        options.add_benchmark_options(parser, repeats=20)
        parser.add_argument(
            "--dtype", default="float64", choices=["float64", "float32", "complex128", "complex64"]
        )
        parser.add_argument(
            "--method",
            default="all",
            choices=[*METHODS, "all"],
            help="tachyflow transpose method(s) to time (default all)",
        )

    def suite_stages(self, plan):
        arguments = ["bench", "transpose", "-n", plan.most, "--grid", *plan.grid]
        return [("transpose", [*arguments, "--repeats", plan.repeats, "-o", plan.output])]

    def run(self, args) -> int:
        """``tachyflow bench transpose``."""
        from tachyflow.bench import transpose
        from tachyflow.parallel.transpose import METHODS

        methods = METHODS if args.method == "all" else (args.method,)
        document = transpose.run_transpose_benchmark(
            args.grid,
            args.proc_grid,
            args.dtype,
            methods,
            args.repeats,
            args.warmup,
            peer=not args.no_peer,
            comm=runtime.world(),
        )
        return report_benchmark(document, "round trip x→y→z→y→x", args.output)
