"""``tachyflow bench io``: checkpoint and field output bandwidth against ``dd``."""

from __future__ import annotations

from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import Benchmark, options, register
from tachyflow.commands.bench import report_benchmark


@register
class InputOutput(Benchmark):
    name = "bench io"
    help = "checkpoint and field write/read bandwidth against dd on the same file system"
    description = (
        "Write the four fields of the grid as a parallel MPI-IO checkpoint, a BP5 field step, "
        "VTK pieces and, as tachyflow did before, gathered on rank 0 into one .npz; read the "
        "checkpoint back both ways; each ends on disk (sync). dd writing and reading the same "
        "bytes on the same file system is measured in the same run, interleaved."
    )
    results: ClassVar[dict[str, str]] = {"io": "tachyflow.bench.io_bandwidth"}
    suite_order = 55

    def add_arguments(self, parser):
        options.add_benchmark_options(parser, repeats=5)
        parser.set_defaults(warmup=1)
        parser.add_argument(
            "--scratch",
            default=None,
            metavar="DIR",
            help="folder on the file system to measure (default: under the current folder)",
        )

    def suite_stages(self, plan):
        return [(f"checkpoint and field I/O, {plan.ranks[-1]} rank(s)",
                 ["bench", "io", "-n", str(plan.ranks[-1]), "--grid", *plan.grid,
                  "--repeats", "3", "-o", plan.output])]

    def run(self, args) -> int:
        """``tachyflow bench io``."""
        from tachyflow.bench import io_bandwidth

        document = io_bandwidth.run_io_benchmark(
            args.grid, args.proc_grid, args.repeats, args.warmup, args.scratch,
            comm=runtime.world(), peer=not args.no_peer,
        )
        code = report_benchmark(document, "checkpoint and field I/O", args.output)
        for entry in document["results"]:
            if entry.get("speedup_vs_peer"):
                peer = "dd read" if entry["name"].endswith("-read") else "dd write"
                runtime.make_console().print(
                    f"{entry['name']}: {entry['bandwidth'] / 2**20:.0f} MiB/s, "
                    f"{entry['speedup_vs_peer']:.2f}x the bandwidth of {peer}"
                )
        return code
