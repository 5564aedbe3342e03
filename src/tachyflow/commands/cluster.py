"""``tachyflow cluster up|down|status``: emulated nodes with shaped links on this machine."""

from __future__ import annotations

import json

from tachyflow import runtime
from tachyflow.commands import Command, register, register_group

register_group(
    "cluster",
    "emulated cluster nodes on this machine (network namespaces, shaped links)",
    "Make, inspect and remove emulated nodes: Linux network namespaces on a bridge with "
    "links shaped by tc, so that `tachyflow ... -n R --nodes K` runs MPI over TCP between "
    "them. Needs root or CAP_NET_ADMIN.",
)


@register
class ClusterUp(Command):
    name = "cluster up"
    help = "make N emulated nodes (idempotent)"
    description = (
        "Make N network namespaces tachyflow-node0.. with addresses 10.231.0.1.. on a bridge, "
        "links shaped to --bandwidth (HTB on both ends) and, where the kernel has netem, "
        "delayed by --latency (without netem: an error, nothing made; the cost models add "
        "latency instead)."
    )
    uses_mpi = False

    def add_arguments(self, parser):
        parser.add_argument("--nodes", type=int, required=True, metavar="N", help="node count")
        parser.add_argument(
            "--bandwidth",
            default="none",
            metavar="RATE",
            help="link rate: 100Mbit, 1Gbit, 10Gbit, ... or none (default none: unshaped)",
        )
        parser.add_argument(
            "--latency",
            default="none",
            metavar="TIME",
            help="one-way delay between nodes, e.g. 50us or 1ms (needs netem in the kernel; "
            "default none)",
        )

    def run(self, args) -> int:
        from tachyflow import cluster

        state, made = cluster.up(args.nodes, args.bandwidth, args.latency)
        console = runtime.make_console()
        network = state.bandwidth or "unshaped links"
        if state.latency:
            network += f", {state.latency} latency"
        console.print(
            f"{'made' if made else 'already up'}: {state.nodes} nodes "
            f"({', '.join(state.addresses)}), {network}; run with -n R --nodes K"
        )
        return 0


@register
class ClusterDown(Command):
    name = "cluster down"
    help = "remove the emulated nodes (also after a crash)"
    description = "Remove every namespace, veth and bridge the emulated cluster made."
    uses_mpi = False

    def run(self, args) -> int:
        from tachyflow import cluster

        removed = cluster.down()
        runtime.make_console().print(
            f"removed {', '.join(removed)}" if removed else "no emulated cluster was up"
        )
        return 0


@register
class ClusterStatus(Command):
    name = "cluster status"
    help = "show the emulated nodes, their addresses and links (JSON)"
    description = "Print what is up: nodes, addresses, bandwidth, and stale leftovers."
    uses_mpi = False

    def run(self, args) -> int:
        from tachyflow import cluster

        print(json.dumps(cluster.status(), indent=2))
        return 0
