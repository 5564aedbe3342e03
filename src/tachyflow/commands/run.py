"""``tachyflow run``: a case from its configuration to its output folder."""

from __future__ import annotations

from tachyflow import runtime
from tachyflow.commands import Command, options, register


def _case_names() -> list[str]:
    from tachyflow.config import builtin_cases

    return builtin_cases()


@register
class Run(Command):
    name = "run"
    help = "run a flow case"

    @property
    def description(self) -> str:
        return (
            "Run a case: a built-in one by name (" + ", ".join(_case_names()) + ") or a case "
            "file (TOML). Writes config.toml, log.txt, stats.csv, timings.json, checkpoints/ "
            "and images/ into the output folder."
        )

    def add_arguments(self, parser):
        parser.add_argument("case", help="built-in case name or path to a .toml case file")
        options.add_ranks(parser)
        parser.add_argument(
            "-o", "--output", default=None, help="output folder (default runs/CASE_NAME)"
        )
        parser.add_argument(
            "--steps",
            type=options.positive_int,
            default=None,
            metavar="LAST",
            help="the last step (default: the case's [time] steps); a restarted run goes on "
            "to it, so the same command finishes the case, and a larger LAST extends it",
        )
        parser.add_argument(
            "--proc-grid",
            type=options.proc_grid,
            default=None,
            metavar="ROWSxCOLS",
            help="process grid (default: the case's, else chosen automatically)",
        )
        from tachyflow.numerics.fft import PLANNING

        parser.add_argument(
            "--fft-planning",
            choices=sorted(PLANNING),
            default="measure",
            help="FFTW's planning effort (default measure: plans chosen by timing them, so "
            "two runs may differ in the last digits; estimate gives bit-for-bit repeatable "
            "runs and restarts)",
        )
        parser.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="SECTION.KEY=VALUE",
            dest="overrides",
            help="change one value of the case, checked as the file's (repeatable; e.g. "
            "--set compressible.alpha=4 --set time.steps=2000); the run's config.toml "
            "records the result",
        )
        parser.add_argument(
            "--quiet", action="store_true",
            help="no monitor line per statistics record (they stay in log.txt and stats.csv)",
        )
        parser.add_argument(
            "--restart",
            default=None,
            metavar="CHECKPOINT",
            help="continue from a checkpoint (.ckpt, written on any rank count), or 'latest' "
            "in the output folder",
        )
        parser.add_argument(
            "--interpolate", action="store_true",
            help="with --restart: the checkpoint is of another grid of the case (other "
            "cells, e.g. a coarser run): interpolate its fields onto the case's grid (pencil "
            "solvers); the observers start afresh",
        )

    def run(self, args) -> int:
        """``tachyflow run``."""
        from pathlib import Path

        from rich.table import Table

        from tachyflow import config as case_files
        from tachyflow.simulation import Simulation

        config = case_files.load(args.case, args.overrides)
        if args.quiet:
            config = config.replace("output", monitor=False)
        if args.proc_grid is not None:
            config = config.replace("parallel", proc_grid=args.proc_grid)
        output = Path(args.output or Path("runs") / config.case.name)
        simulation = Simulation(
            config, output, runtime.world(), restart=args.restart, planning=args.fft_planning,
            interpolate=args.interpolate,
        )
        last = config.time.steps if args.steps is None else args.steps
        summary = simulation.run(max(last - simulation.solver.steps, 0))
        simulation.free()
        console = runtime.make_console()
        layout = (
            f"{'x'.join(map(str, summary['proc_grid']))} grid), "
            f"{'x'.join(map(str, summary['grid']))} cells"
            if "grid" in summary
            else f"{summary.get('cells')} cells)"
        )
        console.print(
            f"{config.case.name} ({config.case.solver}): {summary['steps']} steps on "
            f"{summary['ranks']} ranks ({layout}"
        )
        table = Table()
        table.add_column("phase")
        table.add_column("time", justify="right")
        table.add_column("share", justify="right")
        # Set-up and the first step (compiling the kernels) apart: the phases are the rest.
        total = summary["set_up"] + summary["wall_time"]
        rows = {"set-up": summary["set_up"], "first step (compiling)": summary["first_step"],
                **summary["phases"]}
        for phase, seconds in rows.items():
            share = seconds / total if total else 0.0
            table.add_row(phase, f"{seconds:.3f} s", f"{100 * share:.1f} %")
        table.add_row("total", f"{total:.3f} s", "100 %")
        console.print(table)
        final = summary["final_statistics"]
        shown = ", ".join(
            f"{name.replace('_', ' ')} {final[name]:.6g}"
            for name in ("kinetic_energy", "max_divergence", "iterations", "residual")
            if name in final
        )
        console.print(
            f"time per step {summary['time_per_step']['median']:.4f} s (median), simulated time "
            f"{summary['final_time']:.4g}, {shown}"
        )
        written = (
            [p.name for p in sorted(output.iterdir()) if p.name[0] != "."]
            if runtime.is_root()
            else []
        )
        console.print(f"outputs in {output}/ ({', '.join(written)})")
        return 0
