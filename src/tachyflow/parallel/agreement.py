"""Collective agreement on errors: the one way tachyflow decides, across ranks, that
something failed, and raises the same error on every rank.

A check whose inputs differ between ranks (a file read on rank 0, a callback run on the
rank that owns a piece, a field that is finite on some ranks only) must not raise on some
ranks alone: the others would wait forever in their next collective. Wrap the local work
in :func:`collectively` (or pass what went wrong to :func:`agree`): every rank then learns,
in one small reduction, whether any rank failed, and all raise the error of the
lowest-numbered failing rank.

An error raised this way carries ``error.agreed_rank`` (the rank it came from); the
command-line entry point reads it to print the error once and end every rank with the
same exit code, without ``MPI_Abort``.

This module moves data and computes nothing else; it never imports a solver.
"""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Callable, Iterator

AGREED_RANK = "agreed_rank"


def agreed_rank(error: BaseException) -> int | None:
    """The rank an agreed error came from, or None for an error raised on one rank."""
    return getattr(error, AGREED_RANK, None)


def _portable(error: BaseException) -> BaseException:
    """``error`` itself if it survives pickling, else a RuntimeError saying what it was."""
    try:
        copy = pickle.loads(pickle.dumps(error))
    except Exception:
        copy = None
    if type(copy) is not type(error) or str(copy) != str(error):
        return RuntimeError(f"{type(error).__name__}: {error}")
    return error


def agree(comm, problem: BaseException | None) -> None:
    """Raise on every rank if any rank has a ``problem`` (collective over ``comm``).

    Parameters
    ----------
    comm : mpi4py.MPI.Comm
        The ranks that must agree. Every rank calls, with ``None`` where all went well.
    problem : BaseException or None
        What went wrong on this rank.

    Raises
    ------
    Exception
        The problem of the lowest-numbered failing rank, on every rank: the original object
        there (traceback kept), an unpickled copy elsewhere (a RuntimeError naming the type
        when the error cannot be pickled). Its ``agreed_rank`` attribute names that rank.
    """
    size = comm.Get_size()
    if size == 1:
        first = 0 if problem is not None else 1
    else:
        from mpi4py import MPI

        first = comm.allreduce(comm.Get_rank() if problem is not None else size, op=MPI.MIN)
    if first == size:
        return
    if size > 1:
        mine = _portable(problem) if comm.Get_rank() == first else None
        shared = comm.bcast(mine, root=first)
        error = problem if comm.Get_rank() == first else shared
    else:
        error = problem
    setattr(error, AGREED_RANK, first)
    if error is problem:
        raise error
    raise error from None


@contextlib.contextmanager
def collectively(comm, catch: type[BaseException] | tuple = Exception) -> Iterator[None]:
    """Run a block whose failure on any rank is raised on every rank (collective on exit).

    Every rank enters and leaves the block; an exception of type ``catch`` inside it is
    held until the end of the block, where :func:`agree` raises it (or the lowest failing
    rank's) everywhere. Exceptions of other types pass through unchanged.

    Examples
    --------
    >>> with collectively(comm):                        # doctest: +SKIP
    ...     piece = read_my_piece(path)                 # may fail on some ranks only
    """
    problem = None
    try:
        yield
    except catch as error:
        problem = error
    agree(comm, problem)


def on_root(comm, compute: Callable, root: int = 0, share: bool = False):
    """``compute()`` on ``root`` only (collective): what it returns there (and on every rank
    with ``share``), None elsewhere. Any exception it raises is raised on every rank."""
    value, problem = None, None
    if comm.Get_rank() == root:
        try:
            value = compute()
        except Exception as error:
            problem = error
    agree(comm, problem)
    if not share or comm.Get_size() == 1:
        return value if comm.Get_rank() == root else None
    return comm.bcast(value, root=root)
