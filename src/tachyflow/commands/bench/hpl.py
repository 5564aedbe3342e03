"""``tachyflow bench hpl``: High-Performance Linpack, against HPL inside Debian's hpcc."""

from __future__ import annotations

import math
import subprocess
from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import EXIT_FAILURE, Benchmark, options, register, save_results
from tachyflow.errors import ConfigError

# The panel broadcasts (tachyflow.programs.hpl.solver.BROADCASTS), named here so that the
# parser does not import the solver.
BROADCAST_CHOICES = ("binomial", "ring", "two-ring", "scatter-allgather", "native")


def default_grid(ranks: int) -> tuple[int, int]:
    """HPL's advice: the squarest P × Q with P <= Q."""
    rows = max(p for p in range(1, math.isqrt(ranks) + 1) if ranks % p == 0)
    return rows, ranks // rows


@register
class HPL(Benchmark):
    name = "bench hpl"
    help = "High-Performance Linpack (LU with partial pivoting) against HPL inside hpcc"
    description = (
        "Solve HPL's random dense system of order N by LU with partial pivoting on a P x Q "
        "block-cyclic process grid (look-ahead 1, the panel broadcast of your choice from "
        "Kim's 1998 Korea University report, \"Design of communication functions for "
        "high-performance multicomputers\"), check HPL's scaled residual (PASSED when "
        "below 16) and report GFLOP/s as HPL counts them, (2/3 N^3 + 3/2 N^2) / time. With "
        "-n, HPL inside Debian's hpcc then runs on the same N, NB and P x Q. Several --size "
        "values give the GFLOP/s curve against N (the HPL figure of Lee, Hong, Lee & Lee, "
        '"Performance Analysis of Cluster Network Interfaces for Parallel Computing of '
        'Computational Fluid Dynamics"). Exit code 1 when a residual check fails or the '
        "matrix is singular."
    )
    results: ClassVar[dict[str, str]] = {"hpl": "tachyflow.bench.hpl"}
    suite_order = 45

    def add_arguments(self, parser):
        options.add_ranks(parser)
        parser.add_argument(
            "--size", type=options.positive_int_list, default=[2000], metavar="N[,N...]",
            help="order(s) N of the system, comma-separated (default 2000)",
        )
        parser.add_argument(
            "--block", type=options.positive_int, default=192, metavar="NB",
            help="block size NB of the block-cyclic layout (default 192)",
        )
        parser.add_argument(
            "--grid", type=options.proc_grid, default=None, metavar="PxQ",
            help="process grid, P x Q = ranks (default: the squarest with P <= Q)",
        )
        parser.add_argument(
            "--bcast", choices=[*BROADCAST_CHOICES, "all"], default="ring",
            help="panel broadcast along process rows: binomial tree, pipelined ring, two "
            "pipelined rings, scatter + ring allgather, the MPI library's (native), or all "
            "of them in turn (default ring)",
        )
        options.add_repeats(parser, 3)
        parser.add_argument("--no-peer", action="store_true", help="do not run hpcc")
        options.add_output(parser)

    def suite_stages(self, plan):
        sizes = "500" if plan.quick else "1000,2000,4000"
        quick = ["--block", "64", "--repeats", "1", "--no-peer"] if plan.quick else []
        return [
            ("HPL", ["bench", "hpl", "-n", plan.most, "--size", sizes, *quick,
                     "-o", plan.output])
        ]

    def run(self, args) -> int:
        """``tachyflow bench hpl`` inside the MPI job: ours, every size and broadcast."""
        from tachyflow.bench.hpl import run_hpl_benchmark

        comm = runtime.world()
        grid = args.grid or default_grid(comm.Get_size())
        broadcasts = list(BROADCAST_CHOICES) if args.bcast == "all" else [args.bcast]
        try:
            document = run_hpl_benchmark(
                args.size, args.block, grid, broadcasts, args.repeats, comm
            )
        except ValueError as error:
            raise ConfigError(str(error)) from None
        if runtime.is_root():
            # tachyflow ... -n N launches hpcc after this job and replaces this note.
            document["peers_missing"] = {
                "hpcc HPL": "runs only when tachyflow launches the job itself (-n N)"
            }
            json_path, _ = save_results(document, args.output)
            _print(document, document["results"])
            runtime.make_console().print(f"wrote {json_path}")
        return _exit_code(document)

    def orchestrate(self, args, arguments) -> int:
        """``tachyflow bench hpl -n N``: ours under mpiexec, then hpcc, then the ratio."""
        import tempfile
        from pathlib import Path

        from tachyflow.bench.hpl import compare_with_peer
        from tachyflow.bench.peers.hpcc import PEER_NAME, run_hpcc
        from tachyflow.bench.results import read_results

        with tempfile.TemporaryDirectory(prefix="tachyflow-hpl-") as folder:
            code = runtime.relaunch(args.ranks, [*arguments, "-o", folder], nodes=args.nodes)
            found = sorted(Path(folder).glob("hpl_*.json"))
            if not found:
                return code or EXIT_FAILURE
            document = read_results(found[0])
        if args.no_peer:
            document["peers_missing"] = {PEER_NAME: "not requested (--no-peer)"}
        else:
            grid = document["params"]["proc_grid"]
            sizes = sorted({e["n"] for e in document["results"] if not e["singular"]})
            print(f"measuring peer {PEER_NAME} (the whole HPCC suite runs) ...", flush=True)
            try:
                document["peers"] = (
                    run_hpcc(sizes, args.block, grid, args.repeats, args.nodes) if sizes else []
                )
            except (OSError, RuntimeError, ConfigError, subprocess.SubprocessError) as error:
                document["peers_missing"] = {PEER_NAME: str(error)}
            if document["peers"]:
                del document["peers_missing"]
            compare_with_peer(document)
        json_path, _ = save_results(document, args.output)
        _print(document, document["results"] + document["peers"])
        print(f"wrote {json_path}")
        return code or _exit_code(document)


def _exit_code(document: dict) -> int:
    return 0 if all(e["residual_passed"] for e in document["results"]) else EXIT_FAILURE


def _print(document: dict, entries: list[dict]) -> None:
    """A table of ``entries`` (HPL's line per run and its check), the singular ones named
    and the missing peer."""
    from rich.table import Table

    console = runtime.make_console()
    params = document["params"]
    table = Table(
        title=f"HPL, NB={params['block']}, {'x'.join(map(str, params['proc_grid']))} grid, "
        f"{document['mpi']['ranks']} ranks, median of {params['repeats']}"
    )
    for column in ("candidate", "N", "time", "GFLOP/s", "residual", "check", "vs peer"):
        table.add_column(column, justify="left" if column == "candidate" else "right")
    for entry in entries:
        residual = entry.get("residual")
        speedup = entry.get("speedup_vs_peer")
        table.add_row(
            entry["name"],
            str(entry["n"]),
            f"{entry['median']:.3f} s",
            "-" if not entry.get("gflops") else f"{entry['gflops']:.2f}",
            "-" if residual is None else f"{residual:.4g}",
            "SINGULAR" if entry.get("singular")
            else "PASSED" if entry["residual_passed"] else "[red]FAILED[/red]",
            f"{speedup:.2f}x" if speedup else "-",
        )
    console.print(table)
    for entry in entries:
        if entry.get("singular"):
            console.print(
                f"{entry['name']}, N={entry['n']}: the matrix is singular (zero pivot in "
                f"column {entry['zero_pivot_column']})"
            )
    for name, why in document.get("peers_missing", {}).items():
        console.print(f"peer {name} not measured: {why}")
