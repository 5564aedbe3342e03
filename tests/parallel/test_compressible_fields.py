"""Fields of the compressible solver for ParaView: every rank writes its block as a VTK
StructuredGrid piece; read back whole, the points are the C-grid's nodes and the cell data
the solver's fields, on 1, 2 and 3 ranks."""

import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from mpi4py import MPI

from tachyflow import config
from tachyflow.parallel.pieces import gather_small
from tachyflow.simulation import Simulation
from tachyflow.solvers.compressible.grids import build_grid
from tests.parallel.helpers import shared_folder

NACA = {
    "grid": "naca0012", "cells": [48, 12], "wake_cells": 8, "far_field": 8.0,
    "wall_spacing": 2e-3, "mach": 0.5, "alpha": 2.0, "reynolds": 5000.0, "turbulence": "sa",
}


def read_structured_grid(path):
    """Points (ni + 1, nj + 1, 3) and cell arrays (ni, nj) of a .pvts, whole."""
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXML import vtkXMLPStructuredGridReader

    reader = vtkXMLPStructuredGridReader()
    reader.SetFileName(str(path))
    reader.Update()
    grid = reader.GetOutput()
    i0, ni, j0, nj, k0, nk = grid.GetExtent()
    assert i0 == j0 == k0 == nk == 0
    points = vtk_to_numpy(grid.GetPoints().GetData()).reshape(nj + 1, ni + 1, 3)
    cells = grid.GetCellData()
    arrays = {}
    for index in range(cells.GetNumberOfArrays()):
        values = vtk_to_numpy(cells.GetArray(index))
        shape = (nj, ni) if values.ndim == 1 else (nj, ni, values.shape[1])
        arrays[cells.GetArrayName(index)] = np.swapaxes(values.reshape(shape), 0, 1)
    return np.swapaxes(points, 0, 1), arrays


def whole_fields(solver, comm):
    """The solver's cell fields of the whole grid, on rank 0."""
    pieces = {name: solver.cell_field(name) for name in solver.fields}
    gathered = gather_small(comm, (solver.piece_layout(), pieces))
    if gathered is None:
        return None
    whole = {name: np.full(solver.piece_layout().global_shape, np.nan) for name in pieces}
    for layout, piece in gathered:
        cells = tuple(slice(s, s + n) for s, n in zip(layout.start, layout.shape, strict=True))
        for name, values in piece.items():
            whole[name][cells] = values
    return whole


@pytest.mark.parallel([1, 2, 3])
def test_fields_are_structured_grid_pieces_paraview_reads_whole(tmp_path_factory):
    comm = MPI.COMM_WORLD
    folder = shared_folder(tmp_path_factory, comm)
    case = config.load("naca0012").replace("compressible", **NACA)
    case = case.replace("time", steps=5).replace("output", fields_every=2, statistics_every=5)
    simulation = Simulation(case, folder, comm)
    simulation.run()
    expected = whole_fields(simulation.solver, comm)
    simulation.free()
    if comm.rank != 0:
        return
    collection = ElementTree.parse(folder / "fields.pvd").getroot()
    files = [entry.get("file") for entry in collection.iter("DataSet")]
    assert files == [f"fields_vtk/step_{s:08d}.pvts" for s in (2, 4, 5)]
    pieces = sorted((folder / "fields_vtk" / "step_00000005").glob("piece_*.vts"))
    assert len(pieces) == comm.size
    points, arrays = read_structured_grid(folder / files[-1])
    grid = build_grid(case.compressible)
    assert np.array_equal(points[..., 0], grid.x) and np.array_equal(points[..., 1], grid.y)
    assert not points[..., 2].any()
    assert set(arrays) == {"rho", "u", "v", "p", "mach", "nu_tilde", "velocity"}
    for name, values in expected.items():
        assert np.array_equal(arrays[name], values), name
    assert np.array_equal(arrays["velocity"][..., :2], np.stack([expected["u"],
                                                                expected["v"]], -1))
    # The flow has moved off the free stream: the check compares something.
    assert np.ptp(expected["mach"]) > 0.1
