"""``tachyflow bench suite``: characterise a cluster in one job, then one report."""

from __future__ import annotations

import time
from pathlib import Path

from tachyflow.commands import (
    EXIT_FAILURE,
    Command,
    SuitePlan,
    benchmarks,
    options,
    register,
    results_modules,
    save_results,
)
from tachyflow.commands.bench import run_stages
from tachyflow.errors import ConfigError


def suite_stages(plan: SuitePlan) -> list[tuple[str, list[str]]]:
    """The commands of ``tachyflow bench suite``, in order: (label, arguments)."""
    ordered = sorted(benchmarks().values(), key=lambda command: command.suite_order)
    return [stage for command in ordered for stage in command.suite_stages(plan)]


@register
class Suite(Command):
    name = "bench suite"
    uses_mpi = False
    help = "characterise a cluster in one job: network, collectives, NPB, solvers, report"
    description = (
        "Run, one after another, the suite stages of every benchmark: ping-pong and the model "
        "fit; the collectives sweep for bcast, allreduce and alltoall; the transpose "
        "benchmark; every NPB kernel at --class; strong-scaling series of the flow solver "
        "time step and of the unstructured pressure solver over --ranks; then `tachyflow "
        "report` builds one HTML page from the results. --quick keeps every stage small (a "
        "few minutes on 2 cores). A stage that fails is reported and the suite goes on."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "-n",
            "--ranks",
            type=options.positive_int_list,
            default=[1, 2],
            help="rank counts of the scaling series; the largest runs the other stages "
            "(default 1,2)",
        )
        parser.add_argument(
            "--class", dest="problem_class", default="A", help="NPB class (default A)"
        )
        parser.add_argument("--quick", action="store_true", help="small sizes everywhere, class S")
        options.add_output(parser)

    def run(self, args) -> int:
        """The suite starts its own jobs: refuse to run inside one."""
        raise ConfigError(
            "`tachyflow bench suite` launches a job per stage: run it outside mpiexec/srun (on "
            "a cluster, inside an allocation, from the batch script itself)"
        )

    def orchestrate(self, args, arguments) -> int:
        """Every stage as its own command, then the report."""
        from tachyflow.bench.report import write_report

        failed = []
        started = time.perf_counter()
        plan = SuitePlan(tuple(args.ranks), args.problem_class.upper(), args.quick, args.output)
        run_stages(suite_stages(plan), failed)
        steps = sorted(Path(args.output).glob("step_*.json"))
        if len(steps) > 1:  # the flow solver's series, as one strong-scaling result
            from tachyflow.bench import scaling
            from tachyflow.bench.results import read_results

            try:
                save_results(scaling.merge([read_results(path) for path in steps]), args.output)
            except ValueError as error:
                failed.append(f"flow solver scaling ({error})")
        page = write_report(args.output, None, results_modules())
        minutes = (time.perf_counter() - started) / 60
        print(f"suite finished in {minutes:.1f} min; report: {page}")
        for line in failed:
            print(f"stage failed: {line}")
        return EXIT_FAILURE if failed else 0
