"""``tachyflow bench insitu``: time per step with in situ and in transit visualisation."""

from __future__ import annotations

from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import Benchmark, options, register, save_results


@register
class Insitu(Benchmark):
    name = "bench insitu"
    uses_mpi = False
    help = (
        "time per step with in situ and in transit visualisation (Tsutsumi et al., In "
        "Situ/In Transit Approaches for Post-Processing)"
    )
    description = (
        "Run one Taylor-Green case under several visualisation set-ups (none, in situ, in "
        "transit with Discard or Block and 1-2 fast or slow readers), repeated and "
        'interleaved, as in Tsutsumi et al., "In Situ/In Transit Approaches for '
        'Post-Processing in Large-Scale Numerical Simulation"; report the time per '
        "iteration split into simulation, data transfer and rendering, the overhead over no "
        "visualisation, and staging memory."
    )
    results: ClassVar[dict[str, str]] = {"insitu": "tachyflow.bench.insitu"}

    def add_arguments(self, parser):
        from tachyflow.insitu.options import TRANSIT_PRECISIONS

        parser.add_argument("-n", "--ranks", dest="bench_ranks", default=2,
                            type=options.positive_int,
                            metavar="N", help="ranks of the simulation (default 2)")
        parser.add_argument(
            "--grid", type=options.positive_int, default=64, help="cells per direction"
        )
        parser.add_argument("--steps", type=options.positive_int, default=60, help="steps per run")
        parser.add_argument(
            "--every", type=options.positive_int, default=5, help="steps between pictures"
        )
        parser.add_argument(
            "--repeats", type=options.positive_int, default=3, help="runs per set-up"
        )
        parser.add_argument("--delay", type=options.non_negative_float, default=0.5,
                            help="seconds per step of a slow reader")
        parser.add_argument(
            "--transit-precision",
            choices=tuple(TRANSIT_PRECISIONS),
            default="double",
            help="precision of the values streamed in transit (the case's "
            "[insitu] transit_precision; default double)",
        )
        parser.add_argument(
            "--duty-cycle", nargs=2, type=options.positive_int, default=(0, 0),
            metavar=("ON", "OFF"),
            help="visualise only in windows of ON steps every ON+OFF, and measure the "
            "overhead within each run, window against quiet steps (free of the drift "
            "between runs)",
        )
        parser.add_argument(
            "--timeout", type=options.positive_float, default=600.0, metavar="SECONDS",
            help="longest a run (and each wait of its readers) may take (default 600)",
        )
        parser.add_argument("--variants", nargs="+", default=None, metavar="NAME",
                            help="set-ups to run (default: all)")
        parser.add_argument(
            "--pin-cores",
            dest="pin_processes",  # not the global --pin-cores: this process stays free
            action="store_true",
            help="bind each rank to a core and the readers to the cores left, so that "
            "they never share one where there are enough (e.g. -n 1 on 2 cores)",
        )
        options.add_output(parser)

    def run(self, args) -> int:
        """``tachyflow bench insitu``: launches the runs itself (no MPI in this process)."""
        from rich.table import Table

        from tachyflow.bench import insitu

        console = runtime.make_console()
        document = insitu.run_insitu_benchmark(
            args.bench_ranks, args.grid, args.steps, args.every, args.repeats, args.delay,
            args.variants, args.timeout, progress=console.print, pin=args.pin_processes,
            precision=args.transit_precision, duty_cycle=tuple(args.duty_cycle),
        )
        json_path, png_path = save_results(document, args.output)
        table = Table(title=f"visualisation cost, {args.grid}³, {args.bench_ranks} ranks")
        for column in ("set-up", "per iteration", "overhead", "simulation", "transfer",
                       "rendering", "staging", "readers drew"):
            table.add_column(column, justify="left" if column == "set-up" else "right")
        for entry in document["results"]:
            staging = entry.get("staging_ratio")
            table.add_row(
                entry["name"], f"{entry['median'] * 1e3:.1f} ms", overhead(entry),
                f"{entry['simulation'] * 1e3:.1f} ms", f"{entry['transfer'] * 1e3:.2f} ms",
                f"{entry['rendering'] * 1e3:.2f} ms",
                "" if staging is None else f"{staging:.2f}x step",
                " ".join(map(str, entry.get("drawn", []))),
            )
        console.print(table)
        console.print(
            "overhead: median over rounds of each run against the round's run without "
            "visualisation [quartiles]"
        )
        for entry in document["results"]:
            if "overhead_within_run" in entry:
                low, high = entry["overhead_within_run_quartiles"]
                console.print(
                    f"{entry['name']}: {entry['overhead_within_run']:+.1%} [{low:+.1%}, "
                    f"{high:+.1%}] per iteration at an output every {args.every} steps, "
                    f"measured within the runs ({entry['cycles_measured']} windows against "
                    "the quiet steps around them)"
                )
                steps = ", ".join(f"{value * 1e3:+.1f}" for value in entry["excess_by_offset"])
                console.print(
                    f"  beyond a quiet iteration: the output's iteration and those after it "
                    f"{steps} ms (together {entry['overhead_by_position']:+.1%} per "
                    f"iteration); after a window {entry['excess_after_window'] * 1e3:+.1f} ms "
                    "per iteration"
                )
            if "writer_share" in entry:
                console.print(
                    f"{entry['name']}: the writer takes {entry['writer_share']:.1%} of an "
                    f"iteration once attached (within each run; its first output "
                    f"{entry['writer_first_output'] * 1e3:.0f} ms)"
                )
        console.print(f"wrote {json_path} and {png_path}")
        stopped = document.get("stopped")
        if stopped:
            console.print(
                f"[red]stopped in round {stopped['round']} at {stopped['set_up']}: the "
                f"{stopped['rounds_completed']} complete round(s) are above and saved[/red]"
            )
            console.print(stopped["reason"], markup=False)
            return 130 if stopped["interrupted"] else 1
        return 0


def overhead(entry: dict) -> str:
    """The paired overhead and its quartiles (none for the baseline itself)."""
    low, high = entry["overhead_quartiles"]
    if entry["name"] == "none":
        return f"{entry['overhead']:+.1%}"
    return f"{entry['overhead']:+.1%} [{low:+.1%}, {high:+.1%}]"
