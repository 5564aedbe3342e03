"""``tachyflow solve-pressure``: a shortcut for a ``pressure`` case built from arguments."""

from __future__ import annotations

from tachyflow import runtime
from tachyflow.commands import Command, options, register


@register
class SolvePressure(Command):
    name = "solve-pressure"
    help = "solve a pressure (Poisson) equation on an unstructured mesh"
    description = (
        "Solve -lap p = SOURCE with p = 0 on the boundary (two-point flux finite volumes) on "
        "MESH distributed by METIS, with Jacobi-preconditioned CG or BiCGSTAB; write the "
        "solution and the partition as VTU and a summary (iterations, residual, time per "
        "iteration and its split into products, halo, reductions and the rest). The same as "
        '`tachyflow run` of a case with [case] solver = "pressure" and [mesh] and '
        "[pressure] sections (docs/user-guide.md)."
    )

    def add_arguments(self, parser):
        options.add_ranks(parser)
        parser.add_argument(
            "mesh",
            help="mesh file (Gmsh .msh, .vtu, ... via meshio), or box:CELLS / tet:CELLS for a "
            "generated box of hexahedra or perturbed tetrahedra",
        )
        options.add_krylov_options(parser)
        parser.add_argument(
            "--partition", default="metis", help="metis (default) or a file with one part per cell"
        )
        parser.add_argument(
            "--source", type=float, default=1.0, help="right-hand side (default 1)"
        )
        parser.add_argument(
            "--shift",
            type=float,
            default=0.0,
            help="added to the diagonal (Jeon & Choi's form of the pressure equation: 1)",
        )
        options.add_output(parser)

    def run(self, args) -> int:
        from tachyflow import config as case_files
        from tachyflow.simulation import Simulation

        case = case_files.parse(
            '[case]\nname = "solve-pressure"\nsolver = "pressure"\n[time]\nsteps = 1\n'
            "dt = 1.0\n[output]\nstatistics_every = 1\n",
            "<solve-pressure arguments>",
        )
        case = case.replace("mesh", file=args.mesh, partition=args.partition).replace(
            "pressure", source=args.source, shift=args.shift, method=args.solver, tol=args.tol,
            max_iterations=args.max_iterations, halo=args.halo, reduction=args.reduction,
        )
        simulation = Simulation(case, args.output, runtime.world())
        simulation.run()
        summary = simulation.solver.summary
        cells = simulation.solver.decomposition.global_cells
        ranks = simulation.comm.Get_size()
        simulation.free()
        console = runtime.make_console()
        console.print(
            f"{summary.method}: {summary.iterations} iterations, residual "
            f"{summary.residual:.2e}, {summary.seconds * 1e3:.1f} ms "
            f"({summary.per_iteration * 1e3:.3f} ms per iteration) on {ranks} rank(s), "
            f"{cells} cells"
        )
        console.print(
            "time split: "
            + ", ".join(f"{k} {v / summary.seconds:.0%}" for k, v in summary.timings.items())
        )
        console.print(f"wrote {args.output}/solution.pvtu and {args.output}/summary.json")
        return 0
