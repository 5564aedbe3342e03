"""``tachyflow bench fan``: the axial fan's step and the cost of its noise per exchange."""

from __future__ import annotations

from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import Benchmark, options, register
from tachyflow.commands.bench import report_benchmark


@register
class Fan(Benchmark):
    name = "bench fan"
    help = "the axial fan's time step and its noise's cost per exchange method"
    description = (
        "Time the built-in axial-fan case's RK3 step and one noise sample of its rotating "
        "blades (exchange plus FW-H integration) with each exchange method (two-sided, "
        "put, aggregated-put, source-put: Kwon, Park & Choi's Types), interleaved, after "
        "warm-up steps; report each method's cost as a fraction of a step and the phases "
        "of a sample (pack, communication, unpack, source, integration). Then predict, from "
        "this run's costs and a machine profile, the time per step and speed-up at the "
        "paper's scales (flow only: 1.6e9 cells on 256-6,144 ranks; flow and noise: 46e6 "
        "cells and 67,000 sources on 16-128 ranks, per exchange Type) beside its measured "
        "speed-ups (results JSON model.scaling, plot STEM_scaling.png; docs/fan-scaling.md)."
    )
    results: ClassVar[dict[str, str]] = {"fan": "tachyflow.bench.fan"}
    suite_order = 52

    def add_arguments(self, parser):
        options.add_benchmark_options(parser, repeats=5, grid=(48, 24, 24))
        parser.add_argument(
            "--profile",
            help="network of the scaling prediction: a built-in profile (default "
            "infiniband-qdr, the paper's InfiniBand QDR, typical values) or a JSON file "
            "written by `tachyflow model fit`",
        )
        parser.add_argument(
            "--core-speed",
            type=options.positive_float,
            default=1.0,
            help="how much faster a modelled core computes than this machine's (default 1; "
            "the paper's 2009 Nehalem cores were slower, its Fortran faster than Python)",
        )
        parser.add_argument(
            "--ranks-per-link",
            type=options.positive_int,
            default=1,
            help="ranks sharing a node's network link in the prediction (default 1; the "
            "paper's Tachyon2 had 8 cores per node)",
        )

    def suite_stages(self, plan):
        return [(f"axial fan, {plan.ranks[-1]} rank(s)",
                 ["bench", "fan", "-n", str(plan.ranks[-1]), "--repeats", "3",
                  "-o", plan.output])]

    def run(self, args) -> int:
        """``tachyflow bench fan``."""
        from tachyflow.bench import fan
        from tachyflow.bench.fan_model import DEFAULT_PROFILE
        from tachyflow.models.profiles import resolve_profile

        # Not a parser default: the model's module would slow every command line's parsing.
        # A bad profile fails here, before the timing.
        profile = resolve_profile(args.profile or DEFAULT_PROFILE)
        document = fan.run_fan_benchmark(
            args.grid, args.proc_grid, args.repeats, args.warmup, comm=runtime.world(),
            profile=profile, core_speed=args.core_speed, ranks_per_link=args.ranks_per_link,
        )
        code = report_benchmark(document, "axial fan", args.output)
        model = document.get("model")
        if model:
            console = runtime.make_console()
            console.print(f"flow step {model['step_seconds'] * 1e3:.1f} ms")
            for method, fraction in model["noise_fraction_of_step"].items():
                split = ", ".join(
                    f"{k} {v * 1e3:.2f} ms"
                    for k, v in model["noise_phases_per_sample"][method].items()
                )
                console.print(f"noise, {method}: {fraction:.2f} of a step ({split})")
            _print_scaling(console, model["scaling"])
        return code


def _print_scaling(console, scaling: dict) -> None:
    """The predicted speed-ups beside the paper's."""
    profile = scaling["profile"]
    console.print(
        f"scaling model ({profile['name']} profile, core speed x{scaling['core_speed']:g}, "
        f"{scaling['ranks_per_link']} rank(s) per link; "
        f"{scaling['measured']['seconds_per_cell'] * 1e6:.3g} us per cell and step measured):"
    )
    lines = [("flow only", scaling["flow"])]
    lines += [(f"flow + noise, Type {kind}", series) for kind, series in scaling["noise"].items()]
    for label, series in lines:
        paper = series["paper"]
        console.print(
            f"  {label}: {paper['predicted']:.1f}x at {paper['ranks']} vs {paper['base']} ranks "
            f"(ideal {paper['ranks'] / paper['base']:g}x; paper {paper['value']:g}x; ratio "
            f"{paper['predicted_over_paper']:.2f})"
        )
    for kind, entry in scaling["type_speedup_over_A"].items():
        console.print(
            f"  noise sample, Type {kind} over Type A at {entry['ranks']} ranks: "
            f"{entry['predicted']:.2f}x (paper {entry['paper']:g}x)"
        )
