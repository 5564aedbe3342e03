"""One file shared by every rank of a communicator, each reading and writing its own piece
of global arrays (MPI-IO): what parallel checkpoints are made of.

A piece is a block of a C-order float64 global array; the file view of a subarray
datatype places it, and ``Write_all`` / ``Read_all`` move every rank's piece at once.
Failures surface as OSError naming the file (agree on them above: see
:mod:`tachyflow.parallel.agreement`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tachyflow.parallel import agreement


class CollectiveFile:
    """``path`` opened by every rank of ``comm`` (collective), with this rank's piece of
    any global array of ``global_shape`` at ``start``, of ``shape`` (which may be empty).

    Parameters
    ----------
    mode : {"w", "r"}
        Create (or overwrite) for writing, or read.

    Notes
    -----
    Construction, :meth:`write_piece`, :meth:`read_piece`, :meth:`write_on_root`,
    :meth:`sync` and :meth:`close` are collective. Opening fails with OSError on every
    rank; the other methods raise OSError where MPI reports an error.
    """

    def __init__(self, comm, path, mode: str, global_shape, start, shape):
        from mpi4py import MPI

        if mode not in ("w", "r"):
            raise ValueError(f"mode must be 'w' or 'r', got {mode!r}")
        self.comm, self.path, self.shape = comm, Path(path), tuple(shape)
        flags = MPI.MODE_WRONLY | MPI.MODE_CREATE if mode == "w" else MPI.MODE_RDONLY
        handle, problem = None, None
        try:
            handle = MPI.File.Open(comm, str(self.path), flags)
        except MPI.Exception as error:
            problem = OSError(f"cannot open {self.path}: {error.Get_error_string()}")
        agreement.agree(comm, problem)
        self._handle = handle
        if int(np.prod(self.shape)) == 0:
            self._type = MPI.DOUBLE.Dup().Commit()
        else:
            self._type = MPI.DOUBLE.Create_subarray(
                list(global_shape), list(self.shape), list(start)
            ).Commit()

    def _call(self, what: str, function, *arguments):
        from mpi4py import MPI

        try:
            return function(*arguments)
        except MPI.Exception as error:
            raise OSError(f"cannot {what} {self.path}: {error.Get_error_string()}") from None

    def write_piece(self, offset: int, piece: np.ndarray) -> None:
        """Write this rank's piece of the global array starting at byte ``offset``."""
        from mpi4py import MPI

        self._call("write", self._handle.Set_view, offset, MPI.DOUBLE, self._type)
        self._call("write", self._handle.Write_all, np.ascontiguousarray(piece, np.float64))

    def read_piece(self, offset: int) -> np.ndarray:
        """This rank's piece of the global array starting at byte ``offset``."""
        from mpi4py import MPI

        piece = np.empty(self.shape)
        self._call("read", self._handle.Set_view, offset, MPI.DOUBLE, self._type)
        self._call("read", self._handle.Read_all, piece)
        return piece

    def write_on_root(self, offset: int, data: bytes | None) -> None:
        """Write ``data`` (rank 0's; ignored elsewhere) at byte ``offset``."""
        from mpi4py import MPI

        self._call("write", self._handle.Set_view, 0, MPI.BYTE, MPI.BYTE)
        if self.comm.Get_rank() == 0:
            self._call("write", self._handle.Write_at, offset, data)

    def size(self) -> int:
        """The file's size in bytes."""
        return self._call("read", self._handle.Get_size)

    def sync(self) -> None:
        """Make what every rank wrote durable."""
        self._call("sync", self._handle.Sync)

    def close(self) -> None:
        """Close the file and free the view's datatype."""
        if self._handle is not None:
            self._handle.Close()
            self._type.Free()
            self._handle = None

    def __enter__(self) -> CollectiveFile:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
