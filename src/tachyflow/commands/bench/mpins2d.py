"""``tachyflow bench mpins2d``: the RAE 2822 case's iterations, LU-SGS against DP-SGS."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import EXIT_FAILURE, Benchmark, options, register, save_results
from tachyflow.commands.bench import report_benchmark
from tachyflow.errors import ConfigError


@register
class MPINS2D(Benchmark):
    name = "bench mpins2d"
    help = "the RAE 2822 case (MPINS2D): time per iteration and to a residual, LU-SGS vs DP-SGS"
    description = (
        'The MPINS2D case of Lee, Hong, Lee & Lee, "Performance Analysis of Cluster Network '
        'Interfaces for Parallel Computing of Computational Fluid Dynamics" (RAE 2822, '
        "M 0.73, alpha 2.79, Re 6.5e6, SA) on a grid level of your choice: the time per "
        "iteration of LU-SGS and DP-SGS (medians, interleaved, after warm-up), each "
        "one's phases per iteration (residual, implicit sweeps, exchange, boundaries, "
        "loads, reductions; the slowest rank's), and each one's iterations and seconds "
        "from the free stream to a density residual (--to-residual). The peer, SU2, runs "
        "on the same grid and conditions to the same residual when a SU2_CFD binary is "
        "named by $TACHYFLOW_SU2 (the binary or its folder) or $SU2_HOME/bin (with -n N)."
    )
    results: ClassVar[dict[str, str]] = {"mpins2d": "tachyflow.bench.mpins2d"}
    suite_order = 47

    def add_arguments(self, parser):
        options.add_ranks(parser)
        parser.add_argument(
            "--cells", type=options.positive_int, nargs=2, default=None, metavar=("NI", "NJ"),
            help="grid cells (default the case's 280 x 64; 140 32 is the next coarser "
            "level); NI even, the wake keeping its share",
        )
        parser.add_argument("--proc-grid", type=options.proc_grid, default=None,
                            metavar="PIxPJ", help="block grid (default: chosen)")
        options.add_repeats(parser, 5)
        parser.add_argument(
            "--warmup", type=options.positive_int, default=20,
            help="untimed iterations of each method first, at least 5 (default 20)",
        )
        parser.add_argument(
            "--iterations", type=options.positive_int, default=5,
            help="iterations per timed sample (default 5)",
        )
        parser.add_argument(
            "--to-residual", type=options.non_negative_float, default=1e-3, metavar="R",
            help="run each method from the free stream to this relative density residual "
            "(default 1e-3; 0 skips)",
        )
        parser.add_argument(
            "--max-iterations", type=options.positive_int, default=3000,
            help="iteration limit of the runs to the residual (default 3000)",
        )
        parser.add_argument("--no-peer", action="store_true", help="do not run SU2")
        options.add_output(parser)

    def suite_stages(self, plan):
        if plan.quick:
            sizes = ["--cells", "70", "16", "--repeats", "3", "--warmup", "10",
                     "--to-residual", "1e-2", "--max-iterations", "500"]
        else:
            sizes = ["--cells", "140", "32", "--to-residual", "1e-4"]
        return [(f"MPINS2D, {plan.most} rank(s)",
                 ["bench", "mpins2d", "-n", plan.most, *sizes, "-o", plan.output])]

    def run(self, args) -> int:
        """``tachyflow bench mpins2d`` inside the MPI job: ours."""
        from tachyflow.bench.mpins2d import PEER_NAME, find_su2, run_mpins2d_benchmark

        if args.to_residual >= 1:
            raise ConfigError(f"--to-residual must be below 1, got {args.to_residual}")
        try:
            document = run_mpins2d_benchmark(
                args.cells, args.proc_grid, args.repeats, args.warmup, args.iterations,
                args.to_residual, args.max_iterations, comm=runtime.world(),
            )
        except ValueError as error:
            raise ConfigError(str(error)) from None
        binary, why = find_su2()
        if args.no_peer:
            why = "not requested (--no-peer)"
        elif binary is not None:
            # tachyflow bench mpins2d -n N runs SU2 after this job and replaces this note.
            why = f"{binary} runs only when tachyflow launches the job itself (-n N)"
        document["peers_missing"] = {PEER_NAME: why}
        code = report_benchmark(document, "MPINS2D iterations", args.output)
        if runtime.is_root():
            _print_runs(document)
        return code

    def orchestrate(self, args, arguments) -> int:
        """``tachyflow bench mpins2d -n N``: ours under mpiexec, then SU2 when found."""
        from tachyflow.bench import mpins2d
        from tachyflow.bench.results import read_results
        from tachyflow.solvers.compressible.grids import build_grid

        binary, _ = mpins2d.find_su2()
        if binary is None or args.no_peer or not args.to_residual:
            return None  # nothing to add to the job's own results
        with tempfile.TemporaryDirectory(prefix="tachyflow-mpins2d-") as folder:
            code = runtime.relaunch(args.ranks, [*arguments, "-o", folder], nodes=args.nodes)
            found = sorted(Path(folder).glob("mpins2d_*.json"))
            if not found:
                return code or EXIT_FAILURE
            document = read_results(found[0])
        section = mpins2d.case_at(args.cells).compressible
        with tempfile.TemporaryDirectory(prefix="tachyflow-su2-") as folder:
            print(f"measuring peer {mpins2d.PEER_NAME} ({binary}) ...", flush=True)
            try:
                document["peers"] = [mpins2d.run_su2(
                    binary, section, build_grid(section), args.ranks, folder,
                    args.to_residual, args.max_iterations,
                )]
                document.pop("peers_missing", None)
            except (OSError, RuntimeError, KeyError, ValueError) as error:
                document["peers_missing"] = {mpins2d.PEER_NAME: str(error)}
        mpins2d.compare_with_peer(document)
        json_path, _ = save_results(document, args.output)
        _print_runs(document)
        print(f"wrote {json_path}")
        return code


def _print_runs(document: dict) -> None:
    """Phases per iteration and the runs to the residual, one line each."""
    console = runtime.make_console()
    for entry in document["results"]:
        phases = entry.get("phases_per_iteration")
        if phases:
            split = ", ".join(f"{k} {v * 1e3:.2f}" for k, v in phases.items())
            console.print(f"{entry['method']}: {entry['seconds_per_iteration'] * 1e3:.2f} ms "
                          f"per iteration ({split} ms)")
    for entry in document["results"] + document["peers"]:
        run = entry.get("to_residual")
        if run:
            console.print(
                f"{entry['name']}: {'reached' if run['reached'] else 'did not reach'} "
                f"{run['target']:g} in {run['iterations']} iterations, {run['seconds']:.1f} s "
                f"(residual {run['density_residual']:.3g}); CL {run['CL']:.4f}, "
                f"CD {run['CD']:.5f}, CM {run['CM']:.4f}"
            )
