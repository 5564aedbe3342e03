"""One file shared by every rank of a communicator, each reading and writing its own piece
of global arrays (MPI-IO): what parallel checkpoints are made of.

A piece is a block of a C-order float64 global array; the file view of a subarray
datatype places it, and ``Write_all`` / ``Read_all`` move every rank's piece at once.
Failures surface as OSError naming the file and the errno, on every rank: MPI-IO reports
an error of a collective call (a full disk in ``Write_all``) on some ranks only, and a
rank going on to the next call would wait for the others for ever.
"""

from __future__ import annotations

import errno
import os
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
    :meth:`sync` and :meth:`close` are collective, and each raises OSError on every rank
    when MPI reports an error on any (:mod:`tachyflow.parallel.agreement`).
    """

    def __init__(self, comm, path, mode: str, global_shape, start, shape):
        from mpi4py import MPI

        if mode not in ("w", "r"):
            raise ValueError(f"mode must be 'w' or 'r', got {mode!r}")
        self.comm, self.path, self.shape = comm, Path(path), tuple(shape)
        flags = MPI.MODE_WRONLY | MPI.MODE_CREATE if mode == "w" else MPI.MODE_RDONLY
        self._handle = self._call("open", MPI.File.Open, comm, str(self.path), flags)
        if int(np.prod(self.shape)) == 0:
            self._type = MPI.DOUBLE.Dup().Commit()
        else:
            self._type = MPI.DOUBLE.Create_subarray(
                list(global_shape), list(self.shape), list(start)
            ).Commit()

    def _call(self, what: str, function, *arguments):
        """``function(*arguments)`` on every rank; an MPI error on any rank raised as
        OSError on every rank (collective)."""
        from mpi4py import MPI

        value, problem = None, None
        try:
            value = function(*arguments)
        except MPI.Exception as error:
            problem = self._error(what, error)
        agreement.agree(self.comm, problem)
        return value

    def _error(self, what: str, error) -> OSError:
        """An MPI-IO error as OSError with its errno: that of its class, else the one
        whose text ends MPICH's error stack ("Other I/O error No space left on device"),
        else EIO."""
        from mpi4py import MPI

        classes = {
            MPI.ERR_NO_SPACE: errno.ENOSPC, MPI.ERR_QUOTA: errno.EDQUOT,
            MPI.ERR_ACCESS: errno.EACCES, MPI.ERR_READ_ONLY: errno.EROFS,
            MPI.ERR_NO_SUCH_FILE: errno.ENOENT, MPI.ERR_FILE_EXISTS: errno.EEXIST,
            MPI.ERR_FILE_IN_USE: errno.EBUSY,
        }
        text = error.Get_error_string()
        told = [n for n in sorted(errno.errorcode) if text.endswith(os.strerror(n))]
        code = classes.get(error.Get_error_class()) or (told[0] if told else errno.EIO)
        return OSError(code, f"cannot {what} {self.path}: {os.strerror(code)}")

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
        root = self.comm.Get_rank() == 0
        self._call("write", self._handle.Write_at if root else _nothing, offset, data)

    def size(self) -> int:
        """The file's size in bytes (this rank's call alone)."""
        from mpi4py import MPI

        try:
            return self._handle.Get_size()
        except MPI.Exception as error:
            raise self._error("read", error) from None

    def sync(self) -> None:
        """Make what every rank wrote durable."""
        self._call("sync", self._handle.Sync)

    def close(self) -> None:
        """Close the file and free the view's datatype."""
        if self._handle is not None:
            handle, self._handle = self._handle, None
            self._type.Free()
            self._call("close", handle.Close)

    def __enter__(self) -> CollectiveFile:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        try:
            self.close()
        except OSError:
            if kind is None:  # else the error that ends the block says more
                raise


def _nothing(*arguments) -> None:
    """What ranks other than the root do while it writes alone."""
