"""The pressure equation on an unstructured mesh, distributed with METIS (Jeon & Choi).

:class:`UnstructuredPressureSolver` partitions the mesh held by rank 0, gives every rank
the geometry of its own cells and faces, assembles each rank's matrix rows (two-point
flux finite volumes, :mod:`tachyflow.numerics.finite_volume`) in local numbering —
interior cells, boundary cells, then the halo — and solves with Jacobi-preconditioned CG
or BiCGSTAB (:mod:`tachyflow.numerics.krylov`). The matrix–vector product starts the
halo exchange, multiplies the owned columns while the halo travels, then adds the halo
columns of the boundary rows; the dot products go through :mod:`tachyflow.collectives`
(``native`` by default, any allreduce algorithm on request), fused in pairs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tachyflow import collectives
from tachyflow.collectives.algorithms import ALGORITHMS
from tachyflow.errors import ConfigError
from tachyflow.numerics import finite_volume, krylov
from tachyflow.parallel import agreement
from tachyflow.parallel.unstructured import HALO_MODES, UnstructuredDecomposition

METHODS = {"cg": krylov.conjugate_gradient, "bicgstab": krylov.bicgstab}


@dataclass
class SolveSummary:
    """Outcome of :meth:`UnstructuredPressureSolver.solve` (the same on every rank).

    ``timings`` splits the solve's wall time (slowest rank) into ``matvec`` (local
    products), ``halo`` (starting and completing the exchange), ``reductions`` and
    ``other`` (vector updates, preconditioner, bookkeeping).
    """

    method: str
    iterations: int
    residual: float
    seconds: float
    history: list[float] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def per_iteration(self) -> float:
        """Seconds per iteration."""
        return self.seconds / max(self.iterations, 1)


def _cell_count(mesh) -> int:
    if not hasattr(mesh, "n_cells"):
        raise TypeError(f"mesh must be an UnstructuredMesh on the root rank, got {mesh!r}")
    return mesh.n_cells


def _evaluate(value, points: np.ndarray, size: int, label: str) -> np.ndarray:
    """A callable of positions, a number, or an array of ``size`` values."""
    if callable(value):
        result = np.asarray(value(points), dtype=float)
    else:
        result = np.asarray(value, dtype=float)
    result = np.broadcast_to(result, (size,)) if result.ndim == 0 else result
    if result.shape != (size,):
        raise ConfigError(f"{label} must give {size} values, got shape {result.shape}")
    return result


class UnstructuredPressureSolver:
    """``-∇·∇p = f`` on an unstructured mesh, distributed over ``comm`` (collective).

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
    mesh : tachyflow.io.mesh.UnstructuredMesh or None
        The whole mesh on ``root`` (None elsewhere).
    source : callable, float or array
        ``f``: a function of cell centres ``(n, 3) -> (n,)``, a number, or per-cell values.
    boundary_value : callable, float or array
        Dirichlet value ``g`` on the boundary faces (of face centres).
    neumann : callable or None
        Which boundary faces are Neumann instead: ``neumann(centres, normals) -> bool``;
        their outward normal derivative is ``boundary_flux``.
    boundary_flux : callable, float or array
        ``∂p/∂n`` on the Neumann faces (of face centres).
    partition : "metis", array or path
        See :class:`~tachyflow.parallel.unstructured.UnstructuredDecomposition`.
    diagonal_shift : float
        Added to the diagonal (Jeon & Choi's ``1 + Σ CC`` form is 1).
    halo : "p2p" or "neighborhood"
        How the halo moves (persistent point-to-point, or a neighbourhood collective).
    reduction : str
        Allreduce algorithm of the dot products: ``native`` or one of
        :data:`tachyflow.collectives.algorithms.ALGORITHMS["allreduce"]`.
    """

    def __init__(
        self,
        comm,
        mesh,
        source=0.0,
        boundary_value=0.0,
        neumann: Callable | None = None,
        boundary_flux=0.0,
        partition="metis",
        diagonal_shift: float = 0.0,
        halo: str = "p2p",
        reduction: str = "native",
        root: int = 0,
    ):
        if halo not in HALO_MODES:
            raise ConfigError(f"halo must be one of {HALO_MODES}, got {halo!r}")
        choices = ["native", *ALGORITHMS["allreduce"]]
        if reduction not in choices:
            raise ConfigError(f"reduction must be one of {choices}, got {reduction!r}")
        self.comm, self.halo_mode, self.reduction = comm, halo, reduction
        on_root = comm.Get_rank() == root
        cells = agreement.on_root(comm, lambda: _cell_count(mesh), root, share=True)
        self.decomposition = decomposition = UnstructuredDecomposition(
            comm, cells, mesh.face_cells if on_root else None, partition, root
        )
        global_data = agreement.on_root(
            comm,
            lambda: self._global_data(mesh, source, boundary_value, neumann, boundary_flux),
            root,
        )
        local = self._local_data(global_data, decomposition)
        owned, size = decomposition.owned, decomposition.cells.size
        matrix = finite_volume.assemble_rows(
            owned, size, decomposition.face_cells, local["faces"], local["boundary_cells"],
            local["dirichlet"], diagonal_shift,
        )
        self.rhs = finite_volume.right_hand_side(
            owned, local["volumes"], local["source"], local["boundary_cells"],
            local["dirichlet"], local["values"], local["areas"], local["fluxes"],
        )
        self.matrix = matrix
        self.owned_columns = matrix[:, :owned].tocsr()
        self.halo_columns = matrix[decomposition.interior :, owned:].tocsr()
        self.inverse_diagonal = 1.0 / matrix.diagonal()[:owned]
        self.centroids = local["centroids"]
        self._halo = None
        self._sums = np.empty(3)
        self.timings = dict.fromkeys(("matvec", "halo", "reductions"), 0.0)

    @staticmethod
    def _global_data(mesh, source, boundary_value, neumann, boundary_flux) -> dict:
        """Per-cell and per-face data of the whole mesh (on root)."""
        centroids = mesh.centroids
        faces = finite_volume.face_transmissibilities(
            centroids, mesh.face_cells, mesh.face_areas, mesh.face_normals
        )
        boundary = finite_volume.boundary_transmissibilities(
            centroids, mesh.boundary_cells, mesh.boundary_areas, mesh.boundary_normals,
            mesh.boundary_centroids,
        )
        count = mesh.boundary_cells.size
        is_neumann = np.zeros(count, dtype=bool)
        if neumann is not None:
            is_neumann = np.asarray(
                neumann(mesh.boundary_centroids, mesh.boundary_normals), dtype=bool
            )
        values = _evaluate(boundary_value, mesh.boundary_centroids, count, "boundary_value")
        fluxes = _evaluate(boundary_flux, mesh.boundary_centroids, count, "boundary_flux")
        return {
            "centroids": centroids,
            "volumes": mesh.volumes,
            "source": _evaluate(source, centroids, mesh.n_cells, "source"),
            "faces": faces,
            "boundary_cells": mesh.boundary_cells,
            "dirichlet": np.where(is_neumann, 0.0, boundary),
            "values": np.where(is_neumann, 0.0, values),
            "areas": np.where(is_neumann, mesh.boundary_areas, 0.0),
            "fluxes": np.where(is_neumann, fluxes, 0.0),
        }

    @staticmethod
    def _local_data(data, decomposition: UnstructuredDecomposition) -> dict:
        """This rank's share of :meth:`_global_data` (collective)."""
        local = {
            "centroids": decomposition.scatter(data and data["centroids"]),
            "volumes": decomposition.scatter(data and data["volumes"], owned_only=True),
            "source": decomposition.scatter(data and data["source"], owned_only=True),
            "faces": decomposition.select(data and data["faces"], decomposition.faces),
        }
        # Boundary faces of the owned cells: rank 0 knows which; every rank maps them.
        chosen = decomposition.owned_items(data and data["boundary_cells"])
        cells = decomposition.select(data and data["boundary_cells"], chosen)
        local["boundary_cells"] = decomposition.local_index(cells)
        for key in ("dirichlet", "values", "areas", "fluxes"):
            local[key] = decomposition.select(data and data[key], chosen)
        return local

    def _matvec(self, vector: np.ndarray) -> np.ndarray:
        """``A v`` for the owned rows; ``vector`` holds owned then halo entries."""
        if self._halo is None or self._halo.vector is not vector:
            if self._halo is not None:
                self._halo.free()
            self._halo = self.decomposition.halo(vector, self.halo_mode)
        owned, interior = self.decomposition.owned, self.decomposition.interior
        started = time.perf_counter()
        self._halo.start()
        sent = time.perf_counter()
        result = self.owned_columns @ vector[:owned]  # overlaps the exchange
        computed = time.perf_counter()
        self._halo.wait()
        arrived = time.perf_counter()
        result[interior:] += self.halo_columns @ vector[owned:]
        finished = time.perf_counter()
        self.timings["halo"] += (sent - started) + (arrived - computed)
        self.timings["matvec"] += (computed - sent) + (finished - arrived)
        return result

    def _reduce(self, partial: np.ndarray) -> np.ndarray:
        started = time.perf_counter()
        out = self._sums[: partial.size]
        collectives.allreduce(self.comm, partial, "sum", self.reduction, out=out)
        self.timings["reductions"] += time.perf_counter() - started
        return out.copy()

    def solve(
        self,
        method: str = "cg",
        rtol: float = 1e-8,
        atol: float = 0.0,
        max_iterations: int = 10_000,
    ) -> tuple[np.ndarray, SolveSummary]:
        """Solve; returns this rank's owned values and the :class:`SolveSummary`
        (collective). Raises :class:`~tachyflow.errors.ConvergenceError` on every rank
        when the tolerance is not reached."""
        if method not in METHODS:
            raise ConfigError(f"method must be one of {sorted(METHODS)}, got {method!r}")
        self.timings = dict.fromkeys(self.timings, 0.0)
        self.decomposition.barrier()
        started = time.perf_counter()
        solution, result = METHODS[method](
            self._matvec, self.rhs, self.inverse_diagonal, self._reduce,
            capacity=self.decomposition.cells.size, rtol=rtol, atol=atol,
            max_iterations=max_iterations,
        )
        elapsed = time.perf_counter() - started
        parts = np.array([elapsed, *self.timings.values()])
        slowest = self.decomposition.slowest(parts)  # the split of the rank that took longest
        timings = dict(zip(self.timings, slowest[1:].tolist(), strict=True))
        timings["other"] = max(slowest[0] - sum(timings.values()), 0.0)
        summary = SolveSummary(
            method, result.iterations, result.residual, float(slowest[0]), result.history,
            timings,
        )
        return solution, summary

    def gather(self, owned_values: np.ndarray):
        """The solution of every cell on rank 0 (None elsewhere; collective)."""
        return self.decomposition.gather(owned_values)

    def free(self) -> None:
        """Release the halo exchange's requests and communicator (collective)."""
        if self._halo is not None:
            self._halo.free()
            self._halo = None
