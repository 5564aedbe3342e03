"""Decompositions and data movement: pencils, transposes, halo exchanges, 2D blocks.

This layer owns every communicator and MPI datatype; numerical kernels never see MPI.
"""

from tachyflow.parallel.halo import HaloExchange
from tachyflow.parallel.pencil import (
    Pencil,
    PencilDecomposition,
    choose_process_grid,
    parse_proc_grid,
    process_grids,
    split_bounds,
)
from tachyflow.parallel.sparse_gather import NoiseSourceExchange
from tachyflow.parallel.structured_blocks import StructuredBlocks
from tachyflow.parallel.transpose import Transposer, TransposeRequest, pipelined

__all__ = [
    "HaloExchange",
    "NoiseSourceExchange",
    "Pencil",
    "PencilDecomposition",
    "StructuredBlocks",
    "TransposeRequest",
    "Transposer",
    "choose_process_grid",
    "parse_proc_grid",
    "pipelined",
    "process_grids",
    "split_bounds",
]
