"""``tachyflow bench networks``: the papers' network comparisons on emulated networks."""

from __future__ import annotations

import time
from typing import ClassVar

from tachyflow.commands import (
    EXIT_FAILURE,
    Benchmark,
    options,
    register,
    results_modules,
    save_results,
)
from tachyflow.commands.bench import run_stages
from tachyflow.errors import ConfigError


@register
class Networks(Benchmark):
    name = "bench networks"
    uses_mpi = False
    help = "rerun the papers' network comparisons on shared memory and emulated networks"
    description = (
        "For shared memory and each emulated network (`tachyflow cluster up` is run for each "
        "bandwidth, so this needs root or CAP_NET_ADMIN), run the ping-pong (the NetPIPE "
        "figure of Lee, Hong, Lee & Lee) and its Hockney fit, the allreduce against the "
        "fitted model's prediction, NPB CG/MG/FT/IS/EP, the channel time step, the "
        "unstructured pressure solver (Jeon & Choi) and MPINS2D (the rae2822 case's DP-SGS "
        "iterations) with the ranks spread over --nodes; then "
        "one networks results document (every measurement's slowdown against shared memory, "
        "the papers' network profiles beside the fitted ones) and an HTML report. The "
        "cluster is taken down at the end. Latency is not emulated (no netem in this "
        "kernel): the networks differ by bandwidth."
    )
    results: ClassVar[dict[str, str]] = {"networks": "tachyflow.bench.networks"}

    def add_arguments(self, parser):
        from tachyflow.bench.networks import DEFAULT_NETWORKS, STAGES

        parser.add_argument(
            "-n", "--ranks", type=options.positive_int, default=2,
            help="ranks of every stage (default 2)",
        )
        parser.add_argument(
            "--nodes", type=options.positive_int, default=2,
            help="emulated nodes the ranks are spread over (default 2)",
        )
        parser.add_argument(
            "--networks",
            default=",".join(DEFAULT_NETWORKS),
            help="comma-separated: shared-memory, unshaped (TCP, no limit) or a bandwidth "
            f"such as 1Gbit, 100Mbit (default {','.join(DEFAULT_NETWORKS)})",
        )
        parser.add_argument(
            "--stages",
            default=",".join(STAGES),
            help=f"comma-separated subset of {','.join(STAGES)} (default all)",
        )
        parser.add_argument(
            "--class", dest="problem_class", default="S", help="NPB class (default S)"
        )
        parser.add_argument("--quick", action="store_true", help="small sizes everywhere")
        options.add_output(parser)

    def run(self, args) -> int:
        """The stages start jobs of their own: refuse to run inside one."""
        raise ConfigError(
            "`tachyflow bench networks` launches a job per stage and network: run it outside "
            "mpiexec/srun"
        )

    def orchestrate(self, args, arguments) -> int:
        """Every stage on every network, the merged document, then the report."""
        from tachyflow import cluster
        from tachyflow.bench import networks
        from tachyflow.bench.report import write_report

        try:
            plan = networks.NetworkPlan(
                tuple(filter(None, args.networks.split(","))), args.ranks, args.nodes,
                tuple(filter(None, args.stages.split(","))), args.problem_class.upper(),
                args.quick, args.output,
            )
        except ValueError as error:
            raise ConfigError(str(error)) from None
        started = time.perf_counter()
        failed, summaries = [], []
        try:
            for network in plan.networks:
                if network != networks.SHARED_MEMORY:
                    print(f"== {network}: tachyflow cluster up --nodes {plan.nodes}", flush=True)
                    try:
                        cluster.up(plan.nodes, networks.bandwidth(network))
                    except cluster.ClusterError as error:
                        failed.append(f"{network}: {error}")
                        continue
                plan.folder(network).mkdir(parents=True, exist_ok=True)
                run_stages(plan.stages_of(network), failed, prefix=f"{network}, ")
                summaries.append(networks.summarise(network, plan.folder(network)))
        finally:
            if any(network != networks.SHARED_MEMORY for network in plan.networks):
                cluster.down()
        if not summaries:
            for line in failed:
                print(f"failed: {line}")
            return EXIT_FAILURE
        document = networks.merge(plan, summaries)
        json_path, png_path = save_results(document, args.output)
        _print_trends(document)
        page = write_report(args.output, None, results_modules())
        minutes = (time.perf_counter() - started) / 60
        print(f"networks finished in {minutes:.1f} min: {json_path}, {png_path}, {page}")
        for line in failed:
            print(f"failed: {line}")
        return EXIT_FAILURE if failed else 0


def _print_trends(document: dict) -> None:
    from rich.table import Table

    from tachyflow import runtime

    table = Table(title="networks (slowdown against shared memory)")
    for column in ("network", "latency", "peak bandwidth", "fitted", "most hurt NPB kernel",
                   "MPINS2D", "allreduce model off by"):
        table.add_column(column, justify="left" if column == "network" else "right")
    for network, row in document["summary"].items():
        fitted = (
            f"{row['fitted_latency'] * 1e6:.1f} us, {row['fitted_bandwidth'] / 1e6:.1f} MB/s"
            if "fitted_latency" in row else ""
        )
        table.add_row(
            network,
            f"{row['measured_latency'] * 1e6:.1f} us" if "measured_latency" in row else "",
            f"{row['measured_peak_bandwidth'] / 1e6:.1f} MB/s"
            if "measured_peak_bandwidth" in row else "",
            fitted,
            f"{row['most_sensitive_npb_kernel']} ({row['its_slowdown']:.1f}x)"
            if "most_sensitive_npb_kernel" in row else "",
            f"{row['mpins2d_slowdown']:.2f}x" if "mpins2d_slowdown" in row else "",
            f"{row['allreduce_model_error_median']:.0%}"
            if "allreduce_model_error_median" in row else "",
        )
    runtime.make_console().print(table)
