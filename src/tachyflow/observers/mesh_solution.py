"""The mesh-solution observer: an unstructured solver's solution as VTU, and its summary."""

from __future__ import annotations

import json

import numpy as np

from tachyflow import observers
from tachyflow.io.files import replacing
from tachyflow.observers import Observer, register


@register
class MeshSolution(Observer):
    """After the last step of a solver without a structured grid: ``solution.vtu`` (the
    solution and the partition, cell data) and ``summary.json`` (mesh, ranks, iterations,
    residual, time per iteration and its split)."""

    name = "mesh-solution"

    @classmethod
    def from_case(cls, config, options):
        return None if observers.structured(config) else cls()

    def finish(self, run) -> None:
        solver = run.solver
        solution = solver.gather_solution()
        if not run.root:
            return
        partition = solver.decomposition.partition.astype(np.int32)
        mesh = solver.mesh.to_meshio({"p": solution, "rank": partition})
        with replacing(run.output / "solution.vtu") as temporary:
            mesh.write(temporary, file_format="vtu")
        summary = solver.summary
        report = {
            "mesh": solver.mesh_name,
            "cells": solver.mesh.n_cells,
            "ranks": run.comm.Get_size(),
            "method": summary.method,
            "iterations": summary.iterations,
            "residual": summary.residual,
            "seconds": summary.seconds,
            "per_iteration": summary.per_iteration,
            "timings": summary.timings,
            "history": summary.history,
        }
        with replacing(run.output / "summary.json") as temporary:
            temporary.write_text(json.dumps(report, indent=2) + "\n")
