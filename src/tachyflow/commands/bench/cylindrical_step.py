"""``tachyflow bench cylindrical-step``: the cylindrical solver's step against the Cartesian."""

from __future__ import annotations

from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import Benchmark, options, register
from tachyflow.commands.bench import report_benchmark


@register
class CylindricalStep(Benchmark):
    name = "bench cylindrical-step"
    help = "time per step of the cylindrical (pipe) solver against the Cartesian one"
    description = (
        "Time single RK3 steps of the built-in pipe case (x, r, θ) and of the channel case on "
        "the same grid and process grid, interleaved, after warm-up steps; report the ratio "
        "(goal <= 1.3) and each solver's phases per step."
    )
    results: ClassVar[dict[str, str]] = {"cylindrical-step": "tachyflow.bench.cylindrical_step"}
    suite_order = 51

    def add_arguments(self, parser):
        options.add_benchmark_options(parser, repeats=5)
        options.add_les_option(parser)

    def suite_stages(self, plan):
        return [(f"cylindrical step, {plan.ranks[-1]} rank(s)",
                 ["bench", "cylindrical-step", "-n", str(plan.ranks[-1]), "--grid", *plan.grid,
                  "--repeats", "3", "-o", plan.output])]

    def run(self, args) -> int:
        """``tachyflow bench cylindrical-step``."""
        from tachyflow.bench import cylindrical_step

        document = cylindrical_step.run_cylindrical_step_benchmark(
            args.grid, args.proc_grid, args.repeats, args.warmup, comm=runtime.world(),
            les=args.les,
        )
        code = report_benchmark(document, "cylindrical time step", args.output)
        model = document.get("model")
        if model:
            console = runtime.make_console()
            console.print(
                f"cylindrical / Cartesian time per step: {model['ratio_to_cartesian']:.2f} "
                "(goal <= 1.3)"
            )
            for name, phases in model["phases_per_step"].items():
                split = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in phases.items())
                console.print(f"{name}: {split}")
        if "les" in document:
            from tachyflow.bench.les import describe

            runtime.make_console().print(describe(document["les"]))
        return code
