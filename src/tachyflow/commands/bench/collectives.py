"""``tachyflow bench collectives``: every algorithm of a collective, measured and predicted."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import EXIT_FAILURE, Benchmark, options, register, save_results
from tachyflow.errors import ConfigError


@register
class Collectives(Benchmark):
    name = "bench collectives"
    help = "every algorithm of a collective, measured and predicted"
    description = (
        "Check every algorithm of --op against the MPI library's own call, time them "
        "interleaved at each size, and put the Hockney prediction of the machine profile "
        "beside each measurement."
    )
    results: ClassVar[dict[str, str]] = {"collectives": "tachyflow.bench.collectives"}
    suite_order = 20

    def add_arguments(self, parser):
        from tachyflow.collectives.algorithms import ALGORITHMS

        options.add_ranks(parser)
        parser.add_argument("--op", required=True, choices=sorted(ALGORITHMS))
        parser.add_argument(
            "--algos", default="all",
            help="comma-separated algorithms, or all (default; with native)",
        )
        parser.add_argument(
            "--sizes", default="8B:16MiB",
            help="FIRST:LAST[:FACTOR] (default 8B:16MiB, factor 4)",
        )
        options.add_repeats(parser, 10)
        parser.add_argument(
            "--profile",
            default=None,
            help="machine profile of the predictions (default: $TACHYFLOW_PROFILE, else "
            "shared-memory)",
        )
        parser.add_argument(
            "--no-mpich-algorithms",
            action="store_true",
            help="under MPICH, do not also run MPICH's own algorithms forced one by one",
        )
        options.add_output(parser)

    def suite_stages(self, plan):
        quick = ["--sizes", "8B:64KiB:8", "--repeats", "3", "--no-mpich-algorithms"]
        profile = str(Path(plan.output) / "machine.profile.json")
        return [
            (f"{op} sweep", ["bench", "collectives", "--op", op, "-n", plan.most,
                             *(quick if plan.quick else []), "--profile", profile,
                             "-o", plan.output])
            for op in ("bcast", "allreduce", "alltoall")
        ]

    def run(self, args) -> int:
        """``tachyflow bench collectives``."""
        from tachyflow.bench import collectives

        try:
            sizes = collectives.size_range(args.sizes)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        algorithms = None if args.algos == "all" else args.algos.split(",")
        document = collectives.run_collectives_benchmark(
            args.op, algorithms, sizes, args.repeats, profile=args.profile, comm=runtime.world()
        )
        if not runtime.is_root():
            return 0
        json_path, png_path = save_results(document, args.output)
        _print_collectives(document)
        console = runtime.make_console()
        share = document["summary"]["auto_within_10_percent"]
        if share is not None:
            console.print(
                f"algo='auto' within 10% of the best measured algorithm at {share:.0%} of the "
                "sizes"
            )
        console.print(f"wrote {json_path} and {png_path}")
        failed = [e for e in document["results"] if not e["verified"]]
        return EXIT_FAILURE if failed else 0

    def orchestrate(self, args, arguments) -> int:
        """``tachyflow bench collectives -n N``: ours and native under mpiexec, then, under
        MPICH, one launch per MPICH algorithm forced by its CVARs, merged into the results."""
        import tempfile
        from pathlib import Path

        from tachyflow.bench import collectives
        from tachyflow.bench.results import read_results
        from tachyflow.models.profiles import load_profile

        code = runtime.relaunch(args.ranks, arguments, nodes=args.nodes)
        if code or args.no_mpich_algorithms:
            return code
        path = Path(args.output) / f"collectives_{args.op}_{args.ranks}ranks.json"
        document = read_results(path)
        if "MPICH" not in document["mpi"]["library"]:
            return 0
        model = load_profile(args.profile)
        failed = []
        with tempfile.TemporaryDirectory() as folder:
            for algorithm in collectives.MPICH_ALGORITHMS[args.op]:
                print(f"MPICH's {args.op} forced to {algorithm} ...", flush=True)
                forced_path = Path(folder) / path.name
                errors = Path(folder) / "stderr.txt"
                with errors.open("w") as stderr:
                    code = runtime.relaunch(
                        args.ranks,
                        [*arguments, "--algos", "native", "--no-mpich-algorithms", "-o", folder],
                        collectives.forced_environment(args.op, algorithm),
                        stderr,
                        nodes=args.nodes,
                    )
                text = errors.read_text()
                if code or not forced_path.is_file():
                    failed.append(algorithm)
                    print(f"  failed (exit {code}): {text.strip()[-300:]}")
                    continue
                fell_back = collectives.MPICH_FALLBACK_TEXT in text
                collectives.merge_forced(
                    document, algorithm, read_results(forced_path), fell_back, model
                )
                forced_path.unlink()
                if fell_back:
                    print(
                        "  MPICH fell back to its default for some sizes "
                        f"({algorithm} inapplicable)"
                    )
        json_path, _ = save_results(document, args.output)
        _print_collectives(document)
        print(f"wrote {json_path} (with MPICH's forced algorithms)")
        return EXIT_FAILURE if failed else 0


def _print_collectives(document: dict) -> None:
    """Table of every entry: verified, measured median and the model's prediction."""
    from rich.table import Table

    table = Table(title=f"{document['params']['operation']} on {document['mpi']['ranks']} ranks")
    for column in ("algorithm", "size", "verified", "median", "predicted"):
        table.add_column(column, justify="left" if column == "algorithm" else "right")
    for entry in sorted(document["results"], key=lambda e: e["size"]):
        predicted = entry.get("predicted")
        table.add_row(
            entry["name"],
            f"{entry['size']} B",
            "yes" if entry["verified"] else "[red]FAILED[/red]",
            f"{entry['median'] * 1e6:.2f} us" if entry["verified"] else "-",
            f"{predicted * 1e6:.2f} us" if predicted is not None else "-",
        )
    runtime.make_console().print(table)
