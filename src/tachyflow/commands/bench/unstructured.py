"""``tachyflow bench unstructured``: strong scaling of the unstructured pressure solver."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import Benchmark, options, register, save_results


@register
class Unstructured(Benchmark):
    name = "bench unstructured"
    help = (
        "strong scaling of the unstructured pressure solver (Jeon & Choi, Performance "
        "Analysis of the Parallel CUPID Code)"
    )
    description = (
        "Solve -lap p = 1 on generated boxes of the given cell counts at each rank count (one "
        "launch each): speedup, efficiency, communication share and memory per rank beside "
        'Table 2 of Jeon & Choi, "Performance Analysis of the Parallel CUPID Code in '
        'Distributed Memory System Based Ethernet and Infiniband Network"; with '
        "--petsc-grid, also the N^3 7-point Laplacian against PETSc's KSPCG + PCJACOBI on the "
        "same matrix."
    )
    results: ClassVar[dict[str, str]] = {"unstructured": "tachyflow.bench.unstructured"}
    suite_order = 60

    def add_arguments(self, parser):
        parser.add_argument(
            "-n",
            "--ranks",
            type=options.positive_int_list,
            default=[1, 2, 3],
            help="rank counts, comma-separated (default 1,2,3)",
        )
        parser.add_argument(
            "--nodes",
            type=options.positive_int,
            default=None,
            metavar="K",
            help="spread the ranks over K nodes of the emulated cluster (`tachyflow cluster up`)",
        )
        parser.add_argument(
            "--cells",
            type=options.positive_int_list,
            default=[53280, 144000, 288305, 1472000],
            help="cells of each box (default Jeon & Choi's 53280,144000,288305,1472000)",
        )
        parser.add_argument("--kind", choices=["hex", "tet"], default="hex", help="cell shape")
        parser.add_argument(
            "--petsc-grid",
            type=options.non_negative_int,
            default=64,
            help="N of the N^3 Laplacian also solved by PETSc (default 64; 0: skip)",
        )
        options.add_krylov_options(parser)
        options.add_repeats(parser, 3)
        options.add_output(parser)

    def suite_stages(self, plan):
        cells = "20000" if plan.quick else "144000,288305"
        ranks = ",".join(map(str, plan.ranks))
        return [
            ("unstructured scaling", ["bench", "unstructured", "--cells", cells, "--ranks",
                                      ranks, "--petsc-grid", "0", "-o", plan.output])
        ]

    def run(self, args) -> int:
        """``tachyflow bench unstructured`` under a launcher: one rank count."""
        from tachyflow.bench import unstructured
        from tachyflow.bench.results import write_json

        comm = runtime.world()
        document = unstructured.run_unstructured_benchmark(
            args.cells, args.kind, args.repeats, args.tol, args.solver, args.halo, args.reduction,
            args.petsc_grid or None, comm,
        )
        if runtime.is_root():
            write_json(
                Path(args.output) / f"unstructured_{args.kind}_{comm.Get_size()}ranks.json",
                document,
            )
        return 0

    def orchestrate(self, args, arguments) -> int:
        """One launch per rank count, PETSc on the Laplacian, then the merged study."""
        import tempfile

        from rich.table import Table

        from tachyflow.bench import unstructured
        from tachyflow.bench.peers import petsc
        from tachyflow.bench.results import read_results

        documents = []
        with tempfile.TemporaryDirectory() as folder:
            for ranks in args.ranks:
                print(f"{ranks} rank(s) ...", flush=True)
                code = runtime.relaunch(
                    ranks, [*arguments, "--ranks", str(ranks), "-o", folder], nodes=args.nodes
                )
                if code:
                    return code
                path = Path(folder) / f"unstructured_{args.kind}_{ranks}ranks.json"
                documents.append(read_results(path))
            peers = []
            if args.petsc_grid:
                matrix, rhs = unstructured.laplacian_system(args.petsc_grid)
                system = Path(folder) / "laplacian.npz"
                petsc.save_system(system, matrix, rhs)
                for ranks in args.ranks:
                    try:
                        peer = petsc.run_petsc_peer(system, ranks, rtol=args.tol)
                    except (OSError, subprocess.CalledProcessError) as error:
                        print(f"PETSc not measured at {ranks} rank(s): {error}")
                        continue
                    peers.append({**peer, "name": peer.get("peer", "petsc"), "verified": True})
        document = unstructured.merge(documents, peers)
        json_path, png_path = save_results(document, args.output)
        table = Table(title=f"Jacobi-CG, {args.kind} boxes (Jeon & Choi)")
        for column in ("mesh", "ranks", "iterations", "time", "per iteration", "speedup",
                       "efficiency", "comm share", "arrays/rank", "paper (serial)"):
            table.add_column(column, justify="left" if column == "mesh" else "right")
        for entry in document["results"]:
            if not entry["verified"]:
                table.add_row(entry["name"], "", "[red]did not converge[/red]")
                continue
            table.add_row(
                entry["name"], str(entry["ranks"]), str(entry["iterations"]),
                f"{entry['median'] * 1e3:.1f} ms", f"{entry['per_iteration'] * 1e3:.3f} ms",
                f"{entry.get('speedup', float('nan')):.2f}x",
                f"{entry.get('efficiency', float('nan')):.0%}",
                f"{entry['communication_share']:.0%}",
                f"{entry['solver_arrays_per_rank'] / 2**20:.1f} MiB",
                f"{entry['seed_memory_mb']} MB" if "seed_memory_mb" in entry else "",
            )
        console = runtime.make_console()
        console.print(table)
        for peer in peers:
            ours = next(
                e for e in document["results"]
                if e["name"] == unstructured.LAPLACIAN and e["ranks"] == peer["ranks"]
            )
            console.print(
                f"{args.petsc_grid}^3 Laplacian on {peer['ranks']} rank(s): PETSc "
                f"{peer['iterations']} iterations, {peer['per_iteration'] * 1e3:.3f} ms per "
                f"iteration; tachyflow {ours['iterations']} iterations, "
                f"{ours['per_iteration'] * 1e3:.3f} ms "
                f"({ours['speedup_vs_peer']:.2f}x PETSc's speed)"
            )
        console.print(f"wrote {json_path} and {png_path}")
        return 0
