"""``tachyflow bench npb``: a NAS Parallel Benchmark kernel, verified, against NPB's own."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import ClassVar

from tachyflow import runtime
from tachyflow.commands import EXIT_FAILURE, Benchmark, options, register, save_results
from tachyflow.errors import ConfigError


@register
class NPB(Benchmark):
    name = "bench npb"
    help = "a NAS Parallel Benchmark kernel, verified against NPB's official values"
    description = (
        "Run one NPB 3.4.2 kernel (CG, MG, FT, IS, EP) at a problem class; print NPB's "
        "summary (Mop/s only for a verified run) and write the results JSON. Exit code 1 "
        "when the verification fails."
    )
    results: ClassVar[dict[str, str]] = {"npb": "tachyflow.bench.npb"}
    suite_order = 40

    def add_arguments(self, parser):
        options.add_ranks(parser)
        parser.add_argument("--kernel", required=True, choices=["cg", "mg", "ft", "is", "ep"])
        parser.add_argument(
            "--class", dest="problem_class", default="S",
            help="problem class: S, W, A, B (default S)",
        )
        parser.add_argument(
            "--npb-bin",
            default=None,
            help="folder of NPB's own MPI programs (bin/cg.A.x, ...), run with the same "
            "kernel, class and rank count after ours for the ratio (default: the NPB 3.4 "
            "that `make install-bench` built, when there is one)",
        )
        parser.add_argument(
            "--npb-mpiexec",
            default=None,
            help="launcher of NPB's programs (default: $TACHYFLOW_PEERS_MPIEXEC, else "
            "`mpiexec.mpich -bind-to core`, Debian's MPICH that `make install-bench` uses)",
        )
        options.add_output(parser)

    def suite_stages(self, plan):
        problem_class = "S" if plan.quick else plan.problem_class
        return [
            (f"NPB {kernel.upper()}", ["bench", "npb", "--kernel", kernel, "--class",
                                       problem_class, "-n", plan.most, "-o", plan.output])
            for kernel in ("cg", "mg", "ft", "is", "ep")
        ]

    def run(self, args) -> int:
        """``tachyflow bench npb``."""
        from tachyflow.bench import npb
        from tachyflow.programs.npb.common import report

        try:
            document, result = npb.run_npb_benchmark(
                args.kernel, args.problem_class.upper(), runtime.world()
            )
        except ValueError as error:
            raise ConfigError(str(error)) from None
        if not runtime.is_root():
            return 0
        json_path, _ = save_results(document, args.output)
        console = runtime.make_console()
        console.print(report(result), highlight=False)
        console.print(f"wrote {json_path}")
        return 0 if result.verified else EXIT_FAILURE

    def orchestrate(self, args, arguments) -> int:
        """``tachyflow bench npb -n N``: ours under mpiexec, then NPB's program: the one in
        ``--npb-bin``, else the one `make install-bench` built (else ``peers_missing``)."""
        from tachyflow.bench.peers import builds, npb
        from tachyflow.bench.results import read_results

        if args.npb_bin is not None and not Path(args.npb_bin).is_dir():
            raise ConfigError(f"--npb-bin {args.npb_bin}: no such folder")
        code = runtime.relaunch(args.ranks, arguments, nodes=args.nodes)
        if code:
            return code
        problem_class = args.problem_class.upper()
        path = Path(args.output) / f"npb_{args.kernel}_{problem_class}_{args.ranks}ranks.json"
        document = read_results(path)
        try:
            binaries = args.npb_bin or builds.find("npb")
            peer = npb.run_npb_peer(
                binaries, args.kernel, problem_class, args.ranks, args.npb_mpiexec
            )
        except builds.PeerMissing as missing:
            return _without_peer(document, str(missing), args.output)
        except FileNotFoundError as missing:  # no program for this kernel and class
            return _without_peer(document, str(missing), args.output)
        except (OSError, RuntimeError, subprocess.SubprocessError) as error:
            # e.g. CG, FT, IS and MG need a power-of-two rank count
            return _without_peer(document, str(error), args.output)
        document["peers"].append(peer)
        ours = document["results"][0]
        if ours["verified"] and peer["verified"]:
            ours["speedup_vs_peer"] = ours["mops_total"] / peer["mops_total"]
        save_results(document, args.output)
        print(
            f"NPB {peer['version']} {peer['name']}: {peer['mops_total']:.2f} Mop/s "
            f"({'verified' if peer['verified'] else 'UNVERIFIED'}); tachyflow "
            + (f"{ours['mops_total']:.2f} Mop/s = {ours['speedup_vs_peer']:.2f}x NPB's"
               if "speedup_vs_peer" in ours else "not comparable (a run failed verification)")
        )
        return 0


def _without_peer(document: dict, why: str, output) -> int:
    """Record why NPB's program was not measured, save, say so; exit code 0."""
    document["peers_missing"] = {"NPB": why}
    save_results(document, output)
    print(f"peer NPB not measured: {why}")
    return 0
