"""The mesh-solution observer: an unstructured solver's solution as VTU, and its summary."""

from __future__ import annotations

import json

import numpy as np

from tachyflow.io.files import replacing
from tachyflow.observers import Observer, register
from tachyflow.parallel import agreement
from tachyflow.parallel.pieces import gather_small, scatter_small
from tachyflow.solvers.base import MESH_SOLUTION


@register
class MeshSolution(Observer):
    """After the last step of a solver without a structured grid: ``solution.pvtu`` (each
    rank writes its own cells, with the solution, the rank and the cell's number in the
    mesh as cell data, to
    ``solution/piece_RRRRR.vtu``; no rank gathers the solution) and ``summary.json``
    (mesh, ranks, iterations, residual, time per iteration and its split)."""

    name = "mesh-solution"
    needs = frozenset({MESH_SOLUTION})

    @classmethod
    def from_case(cls, config, options):
        return cls() if cls.applies(config) else None

    def finish(self, run) -> None:
        solver, comm = run.solver, run.comm
        decomposition, rank = solver.decomposition, comm.Get_rank()
        owned = decomposition.cells[: decomposition.owned]
        # The mesh is read on rank 0: it cuts every rank's piece of the geometry (cells in
        # increasing number), and each rank adds its own values and writes its piece.
        pieces = None
        if run.root:
            partition = decomposition.partition
            pieces = [
                solver.mesh.piece(np.flatnonzero(partition == part)) if count else None
                for part, count in enumerate(np.bincount(partition, minlength=comm.size))
            ]
        piece = scatter_small(comm, pieces)
        with agreement.collectively(comm, OSError):
            if piece is not None:
                order = np.argsort(owned)
                values = {
                    "p": solver.cell_field("p")[order],
                    "rank": np.full(owned.size, rank, np.int32),
                    "cell": owned[order].astype(np.int64),  # the cell's number in the mesh
                }
                bounds = np.cumsum([len(block.data) for block in piece.cells])[:-1]
                piece.cell_data = {k: np.split(v, bounds) for k, v in values.items()}
                with replacing(run.output / "solution" / f"piece_{rank:05d}.vtu") as temporary:
                    piece.write(temporary, file_format="vtu")
        counts = gather_small(run.comm, int(owned.size))
        if not run.root:
            return
        with replacing(run.output / "solution.pvtu") as temporary:
            temporary.write_text(_collection(counts))
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


def _collection(counts: list[int]) -> str:
    """The ``.pvtu`` listing the pieces of the ranks that own cells."""
    pieces = "".join(
        f'    <Piece Source="solution/piece_{rank:05d}.vtu"/>\n'
        for rank, count in enumerate(counts)
        if count
    )
    return (
        '<?xml version="1.0"?>\n<VTKFile type="PUnstructuredGrid" version="0.1" '
        'byte_order="LittleEndian" header_type="UInt32">\n'
        '  <PUnstructuredGrid GhostLevel="0">\n'
        '    <PPoints>\n      <PDataArray type="Float64" NumberOfComponents="3"/>\n'
        "    </PPoints>\n"
        '    <PCellData>\n      <PDataArray type="Float64" Name="p"/>\n'
        '      <PDataArray type="Int32" Name="rank"/>\n'
        '      <PDataArray type="Int64" Name="cell"/>\n    </PCellData>\n'
        f"{pieces}  </PUnstructuredGrid>\n</VTKFile>\n"
    )
