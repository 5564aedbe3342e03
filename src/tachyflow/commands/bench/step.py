"""``tachyflow bench step``: the channel time step against a memory-traffic bound."""

from __future__ import annotations

from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import Benchmark, options, register
from tachyflow.commands.bench import report_benchmark


@register
class Step(Benchmark):
    name = "bench step"
    help = "time per step of the turbulent channel against a memory-traffic bound"
    description = (
        "Time single RK3 steps of the built-in channel case on the given grid after warm-up "
        "steps, and measure in the same run the memory-traffic bound of a step (np.copyto "
        "passes over a rank's fields)."
    )
    # The suite merges the step results of several rank counts into a scaling result.
    results: ClassVar[dict[str, str]] = {
        "step": "tachyflow.bench.step",
        "scaling": "tachyflow.bench.scaling",
    }
    suite_order = 50

    def add_arguments(self, parser):
        options.add_benchmark_options(parser, repeats=5)

    def suite_stages(self, plan):
        return [
            (f"flow step, {r} rank(s)", ["bench", "step", "-n", str(r), "--grid", *plan.grid,
                                         "--repeats", "3", "--no-peer", "-o", plan.output])
            for r in plan.ranks
        ]  # fmt: skip

    def run(self, args) -> int:
        """``tachyflow bench step``."""
        from tachyflow.bench import step

        document = step.run_step_benchmark(
            args.grid, args.proc_grid, args.repeats, args.warmup, comm=runtime.world()
        )
        code = report_benchmark(document, "channel time step", args.output)
        bound = document["model"]["memory_bound"]["median"]
        for entry in document["results"]:
            if entry["verified"]:
                runtime.make_console().print(
                    f"memory-traffic bound {bound * 1e3:.2f} ms per step: the step takes "
                    f"{entry['ratio_to_memory_bound']:.1f}x the bound"
                )
        return code
