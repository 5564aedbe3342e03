"""``tachyflow bench poisson``: the pressure solve against an mpi4py-fft round trip."""

from __future__ import annotations

from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import Benchmark, options, register
from tachyflow.commands.bench import report_benchmark


@register
class Poisson(Benchmark):
    name = "bench poisson"
    help = "pressure Poisson solve against an mpi4py-fft round trip"
    description = (
        "Time the FFT/TDMA pressure Poisson solve of a channel grid (x, z periodic, walls in "
        "y) and, when installed, mpi4py-fft's forward+backward real-to-complex FFT of the "
        "same grid on the same process grid."
    )
    results: ClassVar[dict[str, str]] = {"poisson": "tachyflow.bench.poisson"}

    def add_arguments(self, parser):
        options.add_benchmark_options(parser, repeats=10)

    def run(self, args) -> int:
        """``tachyflow bench poisson``."""
        from tachyflow.bench import poisson

        document = poisson.run_poisson_benchmark(
            args.grid,
            args.proc_grid,
            args.repeats,
            args.warmup,
            peer=not args.no_peer,
            comm=runtime.world(),
        )
        return report_benchmark(document, "Poisson solve", args.output)
