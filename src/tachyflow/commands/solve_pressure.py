"""``tachyflow solve-pressure``: a pressure equation on an unstructured mesh."""

from __future__ import annotations

import json
from pathlib import Path

from tachyflow import runtime
from tachyflow.commands import Command, options, register
from tachyflow.errors import ConfigError


def _load_mesh(text: str):
    """A mesh from a file, or a generated box ``box:CELLS`` / ``tet:CELLS`` (rank 0)."""
    from tachyflow.io.mesh import box_mesh, read_mesh

    kind, _, count = text.partition(":")
    try:
        if kind in ("box", "tet") and count:
            return box_mesh(int(count), "hex" if kind == "box" else "tet")
        return read_mesh(text)
    except ValueError as error:  # a count that is not a whole number of boxes, a bad mesh
        raise ConfigError(f"{text!r}: {error}") from None


@register
class SolvePressure(Command):
    name = "solve-pressure"
    help = "solve a pressure (Poisson) equation on an unstructured mesh"
    description = (
        "Solve -lap p = SOURCE with p = 0 on the boundary (two-point flux finite volumes) on "
        "MESH distributed by METIS, with Jacobi-preconditioned CG or BiCGSTAB; write the "
        "solution and the partition as VTU and a summary (iterations, residual, time per "
        "iteration and its split into products, halo, reductions and the rest)."
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
        """``tachyflow solve-pressure``."""
        import numpy as np

        from tachyflow.io.files import replacing
        from tachyflow.parallel import agreement
        from tachyflow.solvers.unstructured import UnstructuredPressureSolver

        comm = runtime.world()
        mesh = agreement.on_root(comm, lambda: _load_mesh(args.mesh))
        solver = UnstructuredPressureSolver(
            comm, mesh, source=args.source, boundary_value=0.0, partition=args.partition,
            diagonal_shift=args.shift, halo=args.halo, reduction=args.reduction,
        )  # fmt: skip
        owned, summary = solver.solve(
            args.solver, rtol=args.tol, max_iterations=args.max_iterations
        )
        solution = solver.gather(owned)
        solver.free()
        if comm.Get_rank() != 0:
            return 0
        folder = Path(args.output)
        folder.mkdir(parents=True, exist_ok=True)
        partition = solver.decomposition.partition.astype(np.int32)
        output = mesh.to_meshio({"p": solution, "rank": partition})
        with replacing(folder / "solution.vtu") as temporary:
            output.write(temporary, file_format="vtu")
        report = {
            "mesh": args.mesh,
            "cells": mesh.n_cells,
            "ranks": comm.Get_size(),
            "method": summary.method,
            "iterations": summary.iterations,
            "residual": summary.residual,
            "seconds": summary.seconds,
            "per_iteration": summary.per_iteration,
            "timings": summary.timings,
            "history": summary.history,
        }
        with replacing(folder / "summary.json") as temporary:
            temporary.write_text(json.dumps(report, indent=2) + "\n")
        console = runtime.make_console()
        console.print(
            f"{summary.method}: {summary.iterations} iterations, residual {summary.residual:.2e}, "
            f"{summary.seconds * 1e3:.1f} ms ({summary.per_iteration * 1e3:.3f} ms per iteration) "
            f"on {comm.Get_size()} rank(s), {mesh.n_cells} cells"
        )
        console.print(
            "time split: "
            + ", ".join(f"{k} {v / summary.seconds:.0%}" for k, v in summary.timings.items())
        )
        console.print(f"wrote {folder / 'solution.vtu'} and {folder / 'summary.json'}")
        return 0
