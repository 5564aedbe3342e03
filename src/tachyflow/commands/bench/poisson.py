"""``tachyflow bench poisson``: the pressure solve against 2DECOMP&FFT and mpi4py-fft."""

from __future__ import annotations

import os
import tempfile
from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import Benchmark, options, register
from tachyflow.commands.bench import report_benchmark


@register
class Poisson(Benchmark):
    name = "bench poisson"
    help = "pressure Poisson solve against 2DECOMP&FFT and an mpi4py-fft round trip"
    description = (
        "Time the FFT/TDMA pressure Poisson solve of a channel grid (x, z periodic, walls in "
        "y) and, interleaved with it on the same grid and process grid: 2DECOMP&FFT's "
        "Poisson solve and r2c/c2r round trip (built by `make install-bench`; its own MPI "
        "job, started with -n N) and mpi4py-fft's forward+backward real-to-complex FFT."
    )
    results: ClassVar[dict[str, str]] = {"poisson": "tachyflow.bench.poisson"}

    def add_arguments(self, parser):
        options.add_benchmark_options(parser, repeats=10)

    def orchestrate(self, args, arguments) -> int | None:
        """``-n N``: start 2DECOMP&FFT's driver on N ranks beside ours, when it is built."""
        from tachyflow.bench.peers import builds, decomp

        if args.no_peer or getattr(args, "nodes", None) is not None:
            return None
        try:
            program = builds.find("2decomp-fft")
        except builds.PeerMissing:
            return None  # the ranks record why
        with tempfile.TemporaryDirectory(prefix="tachyflow-2decomp-") as folder:
            job = decomp.start(args.ranks, folder, program)
            try:
                return runtime.relaunch(
                    args.ranks, arguments, {decomp.FOLDER_VARIABLE: folder}
                )
            finally:
                decomp.stop(job)

    def run(self, args) -> int:
        """``tachyflow bench poisson``."""
        from tachyflow.bench import poisson
        from tachyflow.bench.peers import decomp

        document = poisson.run_poisson_benchmark(
            args.grid,
            args.proc_grid,
            args.repeats,
            args.warmup,
            peer=not args.no_peer,
            comm=runtime.world(),
            decomp_folder=os.environ.get(decomp.FOLDER_VARIABLE),
        )
        return report_benchmark(document, "Poisson solve", args.output)
