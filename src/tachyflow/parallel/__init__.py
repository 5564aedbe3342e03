"""Decompositions and data movement: pencils, transposes, halo exchanges, 2D blocks.

This layer owns every communicator and MPI datatype; numerical kernels never see MPI.
The names below load their module on first use (PEP 562), so that importing one module
of the layer (a command line's choices, say) does not import them all.
"""

import importlib

_MODULES = {
    "HaloExchange": "halo",
    "NoiseSourceExchange": "noise_exchange",
    "Pencil": "pencil",
    "PencilDecomposition": "pencil",
    "StructuredBlocks": "structured_blocks",
    "TransposeRequest": "transpose",
    "Transposer": "transpose",
    "choose_process_grid": "pencil",
    "parse_proc_grid": "pencil",
    "pipelined": "transpose",
    "process_grids": "pencil",
    "sleeping_barrier": "idle",
    "split_bounds": "pencil",
}

__all__ = sorted(_MODULES)


def __getattr__(name: str):
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
