"""``tachyflow bench step``: the channel time step against a memory-traffic bound."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import EXIT_FAILURE, Benchmark, options, register, save_results
from tachyflow.commands.bench import report_benchmark


@register
class Step(Benchmark):
    name = "bench step"
    help = "time per step of the turbulent channel against a memory-traffic bound"
    description = (
        "Time single RK3 steps of the built-in channel case on the given grid after warm-up "
        "steps, and measure in the same run the memory-traffic bound of a step (np.copyto "
        "passes over a rank's fields). With -n N, CaNS (built by `make install-bench`) then "
        "runs the same channel, grid, process grid and time step as its own MPI job."
    )
    # The suite merges the step results of several rank counts into a scaling result.
    results: ClassVar[dict[str, str]] = {
        "step": "tachyflow.bench.step",
        "scaling": "tachyflow.bench.scaling",
    }
    suite_order = 50

    def add_arguments(self, parser):
        options.add_benchmark_options(parser, repeats=5)
        options.add_les_option(parser)

    def suite_stages(self, plan):
        return [
            (f"flow step, {r} rank(s)", ["bench", "step", "-n", str(r), "--grid", *plan.grid,
                                         "--repeats", "3", "--no-peer", "-o", plan.output])
            for r in plan.ranks
        ]

    def orchestrate(self, args, arguments) -> int | None:
        """``-n N``: ours under mpiexec, then CaNS on the same case, and the ratio."""
        from tachyflow.bench.peers import cans
        from tachyflow.bench.results import read_results

        if args.no_peer or getattr(args, "nodes", None) is not None:
            return None
        with tempfile.TemporaryDirectory(prefix="tachyflow-step-") as folder:
            code = runtime.relaunch(args.ranks, [*arguments, "-o", folder])
            found = sorted(Path(folder).glob("step_*.json"))
            if not found:
                return code or EXIT_FAILURE
            document = read_results(found[0])
        print(f"measuring peer {cans.PEER_NAME} on the same case ...", flush=True)
        cans.measure_beside(document, args.ranks)
        json_path, _ = save_results(document, args.output)
        ours = document["results"][0]
        for peer in document["peers"]:
            print(
                f"{peer['name']}: {peer['median'] * 1e3:.2f} ms per step "
                f"({'verified' if peer['verified'] else 'UNVERIFIED'}); tachyflow "
                + (f"{ours['median'] * 1e3:.2f} ms = {ours['speedup_vs_peer']:.2f}x faster"
                   if "speedup_vs_peer" in ours else "not comparable (a check failed)")
            )
        for name, why in document.get("peers_missing", {}).items():
            print(f"peer {name} not measured: {why}")
        print(f"wrote {json_path}")
        return code

    def run(self, args) -> int:
        """``tachyflow bench step``."""
        from tachyflow.bench import step
        from tachyflow.bench.peers import cans

        document = step.run_step_benchmark(
            args.grid, args.proc_grid, args.repeats, args.warmup, comm=runtime.world(),
            les=args.les,
        )
        if not args.no_peer:
            document["peers_missing"] = {cans.PEER_NAME: cans.NOT_BESIDE}
        code = report_benchmark(document, "channel time step", args.output)
        bound = document["model"]["memory_bound"]["median"]
        for entry in document["results"]:
            if entry["verified"]:
                runtime.make_console().print(
                    f"memory-traffic bound {bound * 1e3:.2f} ms per step: {entry['name']} "
                    f"takes {entry['ratio_to_memory_bound']:.1f}x the bound (median of the "
                    f"rounds' ratios; {entry['ratio_of_medians']:.1f}x of the medians)"
                )
        passes = document["model"]["pass_seconds"]
        runtime.make_console().print(
            f"one pass over a rank's field, every rank at once: read {passes['read'] * 1e3:.2f}"
            f" ms, write {passes['write'] * 1e3:.2f} ms, copy {passes['copy'] * 1e3:.2f} ms; "
            + ", ".join(
                f"{entry['name']} = {entry['field_reads']:.0f} reads"
                for entry in document["results"]
                if "field_reads" in entry
            )
        )
        if "fused" in document:
            fused = document["fused"]
            runtime.make_console().print(
                f"fused velocity update: {fused['fused']['median'] * 1e3:.1f} ms per step, the "
                f"separate kernels {fused['separate kernels']['median'] * 1e3:.1f} ms "
                f"({fused['speedup']:.2f}x; same run, interleaved)"
            )
        if "les" in document:
            from tachyflow.bench.les import describe

            runtime.make_console().print(describe(document["les"]))
        if "beyond_step" in document:
            _print_list(
                "beyond the step: ",
                (
                    f"{name} {entry['median'] * 1e3:.2f} ms ({entry['field_reads']:.0f} reads)"
                    for name, entry in document["beyond_step"].items()
                ),
                " (checks every iteration, statistics every statistics_every steps)",
            )
        if "phases" in document:
            fastest = document["phases_fastest"]
            _print_list(
                "phases per step (slowest rank / fastest rank): ",
                (
                    f"{k} {v * 1e3:.2f} / {fastest[k] * 1e3:.2f} ms"
                    for k, v in document["phases"].items()
                ),
            )
        return code


def _print_list(prefix: str, items, suffix: str = "") -> None:
    """One console line: ``prefix``, the items joined by commas, ``suffix``."""
    runtime.make_console().print(prefix + ", ".join(items) + suffix)
