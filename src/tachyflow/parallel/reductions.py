"""The few reductions the layers above a decomposition need, on the communicator it owns."""

from __future__ import annotations


class Reductions:
    """Mixin for an object that owns ``self.comm``: sums, maxima and a barrier, so
    solvers and drivers never touch a communicator. Every method is collective."""

    comm = None

    def sum(self, value: float) -> float:
        """Sum of ``value`` over all ranks."""
        from mpi4py import MPI

        return self.comm.allreduce(float(value), op=MPI.SUM)

    def sum_arrays(self, values):
        """Element-wise sum of a float64 array over all ranks (a new array)."""
        import numpy as np
        from mpi4py import MPI

        values = np.ascontiguousarray(values, dtype=np.float64)
        total = np.empty_like(values)
        self.comm.Allreduce(values, total, op=MPI.SUM)
        return total

    def maximum(self, value: float) -> float:
        """Largest ``value`` over all ranks."""
        from mpi4py import MPI

        return self.comm.allreduce(float(value), op=MPI.MAX)

    def all(self, flag: bool) -> bool:
        """True when ``flag`` is true on every rank."""
        from mpi4py import MPI

        return self.comm.allreduce(bool(flag), op=MPI.LAND)

    def barrier(self) -> None:
        """Wait for every rank."""
        self.comm.Barrier()
