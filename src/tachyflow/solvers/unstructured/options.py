"""The case tables of the ``pressure`` solver, ``[mesh]`` and ``[pressure]``.

Light on purpose (reading a case file imports it): the solver's
:attr:`~tachyflow.solvers.base.Solver.case_options` is :data:`PRESSURE`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from tachyflow.options import at_least, finite, inside
from tachyflow.solvers.base import MESH_SOLUTION, SolverOptions


@dataclass(frozen=True)
class MeshSection:
    """``[mesh]``: the unstructured mesh of the ``pressure`` solver and its distribution.

    ``file`` is a mesh file meshio reads (Gmsh ``.msh``, ``.vtu``, ...; relative to the case
    file) or a generated box, ``box:CELLS`` (hexahedra) or ``tet:CELLS`` (perturbed
    tetrahedra). ``partition`` is ``metis`` or a file with the part of every cell.
    """

    file: str = "box:1000"
    partition: str = "metis"


@dataclass(frozen=True)
class PressureSection:
    """``[pressure]``: ``-∇·∇p + shift p = source``, p = 0 on the boundary, and its solver.

    ``method`` is ``cg`` or ``bicgstab`` (Jacobi-preconditioned); ``halo`` is ``p2p`` or
    ``neighborhood``; ``reduction`` the allreduce algorithm of the dot products.
    """

    source: Annotated[float, finite] = 1.0
    shift: Annotated[float, finite] = 0.0
    method: Literal["cg", "bicgstab"] = "cg"
    tol: Annotated[float, inside(0, 1)] = 1e-8
    max_iterations: Annotated[int, at_least(1)] = 10000
    halo: Literal["p2p", "neighborhood"] = "p2p"
    reduction: str = "native"


PRESSURE = SolverOptions(
    {"mesh": MeshSection, "pressure": PressureSection},
    provides=lambda config: frozenset({MESH_SOLUTION}),
)
