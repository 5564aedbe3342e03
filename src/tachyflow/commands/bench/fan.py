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
        "of a sample (pack, communication, unpack, source, integration)."
    )
    results: ClassVar[dict[str, str]] = {"fan": "tachyflow.bench.fan"}
    suite_order = 52

    def add_arguments(self, parser):
        options.add_benchmark_options(parser, repeats=5, grid=(48, 24, 24))

    def suite_stages(self, plan):
        return [(f"axial fan, {plan.ranks[-1]} rank(s)",
                 ["bench", "fan", "-n", str(plan.ranks[-1]), "--repeats", "3",
                  "-o", plan.output])]  # fmt: skip

    def run(self, args) -> int:
        """``tachyflow bench fan``."""
        from tachyflow.bench import fan

        document = fan.run_fan_benchmark(
            args.grid, args.proc_grid, args.repeats, args.warmup, comm=runtime.world()
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
        return code
