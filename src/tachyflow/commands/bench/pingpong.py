"""``tachyflow bench pingpong``: latency and bandwidth against C and mpi4py.bench."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import Benchmark, options, register, save_results


@register
class PingPong(Benchmark):
    name = "bench pingpong"
    help = "point-to-point latency and bandwidth against C and mpi4py.bench"
    description = (
        "NetPIPE-style ping-pong between ranks 0 and 1 (1 B to --max-size, powers of two and "
        "3 bytes either side), latency and bidirectional bandwidth. With -n, the same command "
        "then runs a C ping-pong built with the runtime's mpicc and `python -m mpi4py.bench "
        "pingpong`, and reports the overhead."
    )
    results: ClassVar[dict[str, str]] = {"pingpong": "tachyflow.bench.pingpong"}
    suite_order = 10

    def add_arguments(self, parser):
        options.add_ranks(parser)
        parser.add_argument(
            "--max-size", type=options.byte_size, default=64 * 2**20,
            help="largest message (default 64MiB)",
        )
        options.add_repeats(parser, 5)
        parser.add_argument("--no-peer", action="store_true", help="do not run the peers")
        options.add_output(parser)

    def suite_stages(self, plan):
        quick = ["--max-size", "1MiB", "--repeats", "2", "--no-peer"] if plan.quick else []
        profile = str(Path(plan.output) / "machine.profile.json")
        measured = str(Path(plan.output) / f"pingpong_{plan.most}ranks.json")
        return [
            ("ping-pong", ["bench", "pingpong", "-n", plan.most, *quick, "-o", plan.output]),
            ("model fit", ["model", "fit", measured, "-o", profile]),
        ]

    def run(self, args) -> int:
        """``tachyflow bench pingpong``: our measurement (inside the MPI job)."""
        from tachyflow.bench import pingpong

        document = pingpong.run_pingpong_benchmark(
            args.max_size, args.repeats, comm=runtime.world()
        )
        if runtime.is_root():
            save_results(document, args.output)
            _print_pingpong(document)
        return 0

    def orchestrate(self, args, arguments) -> int:
        """``tachyflow bench pingpong -n N``: ours under mpiexec, then the peers, then compare."""
        import subprocess
        from pathlib import Path

        from tachyflow.bench import pingpong
        from tachyflow.bench.results import read_results

        code = runtime.relaunch(args.ranks, arguments, nodes=args.nodes)
        if code or args.no_peer:
            return code
        path = Path(args.output) / f"pingpong_{args.ranks}ranks.json"
        document = read_results(path)
        launcher = runtime.launcher(args.ranks, args.nodes)  # the peers run where ours did
        peers = {
            pingpong.C_PEER: lambda: pingpong.run_c_peer(launcher, args.max_size, args.repeats),
            pingpong.MPI4PY_PEER: lambda: pingpong.run_mpi4py_peer(launcher, args.max_size),
        }
        for name, measure in peers.items():
            print(f"measuring peer {name} ...", flush=True)
            try:
                document["peers"].extend(measure())
            except (OSError, subprocess.CalledProcessError) as error:
                document.setdefault("peers_missing", {})[name] = str(error)
        summary = pingpong.compare(document)
        save_results(document, args.output)
        _print_pingpong(document)
        for key, value in summary.items():
            if "overhead" in key:
                shown = f"{value * 1e6:+.3f} us"
            elif key == "peak_bandwidth":
                shown = f"{value / 2**20:.0f} MiB/s"
            elif key == "half_bandwidth_size":
                shown = f"{value} B"
            else:
                shown = f"{value:.3f}x"
            print(f"{key.replace('_', ' ')}: {shown}")
        for name, why in document.get("peers_missing", {}).items():
            print(f"peer {name} not measured: {why}")
        return 0


def _print_pingpong(document: dict) -> None:
    from rich.table import Table

    shown = {1, 8, 64, 1024, 65536, 2**20, 2**24, 2**26}
    table = Table(title=f"ping-pong, {document['mpi']['library']}")
    table.add_column("candidate", no_wrap=True)
    table.add_column("size", justify="right")
    table.add_column("one-way time", justify="right")
    table.add_column("bandwidth", justify="right")
    for entry in document["results"] + document["peers"]:
        if entry["size"] in shown:
            table.add_row(
                entry["name"],
                f"{entry['size']} B",
                f"{entry['median'] * 1e6:.3f} us",
                f"{entry['bandwidth'] / 2**20:.1f} MiB/s",
            )
    runtime.make_console().print(table)
