"""Collective operations with a choice of algorithm, picked by a cost model when asked.

``bcast``, ``reduce``, ``allreduce``, ``scan``, ``exscan``, ``gather``, ``scatter`` and
``alltoall`` take ``algo``: a name from
:data:`~tachyflow.collectives.algorithms.ALGORITHMS`, ``"native"`` (the MPI library's
call), or ``"auto"``: the algorithm (and segment count), ``native`` included, with the
lowest simulated time under the machine profile (``profile=``: a
:class:`~tachyflow.models.profiles.MachineProfile`, a model object, a built-in profile
name or a profile JSON file; else ``$TACHYFLOW_PROFILE``, else the built-in
``shared-memory`` one), chosen and cached by :mod:`tachyflow.collectives.selection`.
``native`` is modelled as the library's default algorithm; every prediction is scaled by
the profile's calibration when it has one. ``explain=True`` returns ``(result, Choice)``
telling what ran and why. All ranks must pass the same count, dtype, op, root and algo,
and with ``"auto"`` profiles of the same content. The executor's plans and scratch
buffers are kept between calls within a byte budget (:mod:`tachyflow.collectives.plans`).
Every function is collective over ``comm``.
"""

from __future__ import annotations

import numpy as np

from tachyflow.collectives import executor, plans
from tachyflow.collectives.algorithms import ALGORITHMS
from tachyflow.collectives.schedule import result_defined

# Names of the selection module (the cost models and simulator: numba, scipy), loaded on
# first use (PEP 562) so that a command line's algorithm choices do not import them.
_SELECTION = (
    "SIMULATE_UP_TO", "Choice", "choose", "native_equivalent", "schedule_count",
    "segment_count",
)

__all__ = [
    "SIMULATE_UP_TO",
    "Choice",
    "allreduce",
    "alltoall",
    "bcast",
    "choose",
    "exscan",
    "gather",
    "ibcast",
    "native_equivalent",
    "reduce",
    "scan",
    "scatter",
    "schedule_count",
    "segment_count",
]


def __getattr__(name: str):
    if name not in _SELECTION:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from tachyflow.collectives import selection

    return getattr(selection, name)


def _resolve(operation, comm, count, itemsize, root, algo, segments, profile):
    """Check the call and settle ``algo`` = "auto" into an algorithm and segment count."""
    from tachyflow.collectives.selection import Choice, choose

    size = comm.Get_size()
    if not isinstance(root, int | np.integer) or not 0 <= root < size:
        raise ValueError(f"root must be in [0, {size}), got {root!r}")
    if algo != "native" and algo != "auto" and algo not in ALGORITHMS[operation]:
        raise ValueError(
            f"{operation} algorithm must be one of {sorted(ALGORITHMS[operation])}, 'native' "
            f"or 'auto', got {algo!r}"
        )
    if algo != "auto":
        return algo, segments, Choice(algo, segments or 1, "none (chosen by the caller)")
    choice = choose(operation, size, count, itemsize, profile)
    return choice.algorithm, choice.segments, choice


def _check_buffer(buffer, label: str = "buffer") -> None:
    if not isinstance(buffer, np.ndarray) or buffer.ndim != 1 or not buffer.flags.c_contiguous:
        raise TypeError(f"{label} must be a 1D C-contiguous numpy array")


def _plan(operation, comm, elements, root, algo, segments) -> plans.Plan:
    return plans.plan(operation, algo, comm.Get_size(), elements, root, segments, comm.Get_rank())


def _execute(comm, plan: plans.Plan, buffer, op=None):
    """Run a resolved algorithm's plan in place on the executor's buffer."""
    result = executor.run(comm, plan.schedule, buffer, op, plan.steps, plan.scratch)
    plans.PLANS.settle(plan.key)  # its scratch may have grown
    return result


def _output(out, size: int, dtype, label: str = "out") -> np.ndarray:
    """``out`` checked against the result's size and dtype, or a new array."""
    if out is None:
        return np.empty(size, dtype)
    _check_buffer(out, label)
    if out.size != size or out.dtype != dtype:
        raise ValueError(
            f"{label} must hold {size} elements of {np.dtype(dtype)}, got {out.size} of "
            f"{out.dtype}"
        )
    return out


def _in_place(operation, comm, buffer, op, root, algo, segments, profile, explain, out=None):
    """bcast and the reductions: bcast changes ``buffer`` in place; the reductions leave
    ``values`` (``buffer``) alone and write ``out`` (a new array when None)."""
    _check_buffer(buffer, "buffer" if operation == "bcast" else "values")
    if operation != "bcast":
        executor.operator(op)
        out = _output(out, buffer.size, buffer.dtype)
    algo, segments, choice = _resolve(
        operation, comm, buffer.size, buffer.itemsize, root, algo, segments, profile
    )
    if algo == "native":
        result = executor.native(comm, operation, buffer, op, root, out)
    else:
        if operation != "bcast":
            out[...] = buffer
        work = buffer if operation == "bcast" else out
        plan = _plan(operation, comm, work.size, root, algo, segments)
        result = _execute(comm, plan, work, op)
        if not result_defined(operation, comm.Get_rank(), root):
            result = None
    return (result, choice) if explain else result


def bcast(
    comm,
    buffer: np.ndarray,
    root: int = 0,
    algo: str = "auto",
    segments: int | None = None,
    profile=None,
    explain: bool = False,
):
    """Broadcast ``buffer`` from ``root`` in place (collective over ``comm``)."""
    return _in_place("bcast", comm, buffer, None, root, algo, segments, profile, explain)


def ibcast(
    comm,
    buffer: np.ndarray,
    root: int = 0,
    algo: str = "auto",
    segments: int | None = None,
    profile=None,
):
    """Start a broadcast of ``buffer`` from ``root`` in place (collective, non-blocking).

    Returns a transfer with ``test()`` (advance; True when done) and ``wait()``; the
    broadcast progresses only inside those calls (``native``: as the MPI library's
    ``MPI_Ibcast`` does), and ``buffer`` must not be touched until it is done.
    """
    _check_buffer(buffer)
    algo, segments, _ = _resolve(
        "bcast", comm, buffer.size, buffer.itemsize, root, algo, segments, profile
    )
    if algo == "native":
        return executor.NativeTransfer(comm.Ibcast(buffer, root=root), buffer)
    plan = _plan("bcast", comm, buffer.size, root, algo, segments)
    return executor.start(
        comm, plan.schedule, buffer, None, plan.steps, plan.scratch,
        on_done=lambda: plans.PLANS.settle(plan.key),
    )


def reduce(
    comm,
    values: np.ndarray,
    op="sum",
    root: int = 0,
    algo: str = "auto",
    profile=None,
    explain: bool = False,
    out: np.ndarray | None = None,
):
    """Reduce ``values`` to ``root``; returns the result there and ``None`` elsewhere.

    ``values`` is left unchanged; ``op`` is sum, prod, min, max or a commutative callable.
    The result goes to ``out`` when given (reused buffers save fresh pages every call;
    the same holds for every function here that takes ``out``).
    """
    return _in_place("reduce", comm, values, op, root, algo, None, profile, explain, out)


def _reduction_to_all(operation: str, summary: str):
    """The public function of a reduction whose result every rank gets (but exscan's
    rank 0)."""

    def collective(
        comm,
        values: np.ndarray,
        op="sum",
        algo: str = "auto",
        segments: int | None = None,
        profile=None,
        explain: bool = False,
        out: np.ndarray | None = None,
    ):
        return _in_place(operation, comm, values, op, 0, algo, segments, profile, explain, out)

    collective.__name__ = collective.__qualname__ = operation
    collective.__doc__ = (
        f"{summary}\n\n    ``values`` is left unchanged; ``op`` is sum, prod, min, max or a "
        "commutative callable; ``segments`` is for the segmented algorithms. Collective."
    )
    return collective


allreduce = _reduction_to_all(
    "allreduce", "Combine ``values`` over all ranks; every rank gets the result (in ``out``)."
)
scan = _reduction_to_all(
    "scan", "Inclusive prefix: rank i gets ``values`` of ranks 0 .. i combined (in ``out``)."
)
exscan = _reduction_to_all(
    "exscan", "Exclusive prefix: rank i > 0 gets ranks 0 .. i-1 combined; rank 0 ``None``."
)


def gather(
    comm, piece: np.ndarray, root: int = 0, algo: str = "auto", profile=None,
    explain: bool = False, out: np.ndarray | None = None,
):
    """Concatenate every rank's ``piece`` (same size everywhere) at ``root``, in rank order;
    returns the array of P pieces there (``out`` when given) and ``None`` elsewhere."""
    _check_buffer(piece, "piece")
    size, rank, count = comm.Get_size(), comm.Get_rank(), piece.size
    algo, segments, choice = _resolve(
        "gather", comm, count, piece.itemsize, root, algo, None, profile
    )
    result = _output(out, size * count, piece.dtype) if rank == root else None
    if algo == "native":
        executor.native(comm, "gather", piece, root=root, out=result)
    else:
        plan = _plan("gather", comm, size * count, root, algo, segments)
        work = plan.workspace(piece.dtype)
        relative = (rank - root) % size
        work[relative * count : (relative + 1) * count] = piece
        _execute(comm, plan, work)
        if rank == root:  # pieces lie by rank relative to the root: rotate to rank order
            split_at = (size - root) * count
            result[root * count :] = work[:split_at]
            result[: root * count] = work[split_at:]
    return (result, choice) if explain else result


def scatter(
    comm, pieces, out: np.ndarray, root: int = 0, algo: str = "auto", profile=None,
    explain: bool = False,
):
    """Hand piece i of ``pieces`` (read at ``root`` only: P pieces of ``out.size``
    elements, in rank order) to rank i, which receives it in ``out``; returns ``out``.

    A ``pieces`` of the wrong size or dtype raises on the root.
    """
    _check_buffer(out, "out")
    size, rank, count = comm.Get_size(), comm.Get_rank(), out.size
    algo, segments, choice = _resolve(
        "scatter", comm, count, out.itemsize, root, algo, None, profile
    )
    if rank == root:
        _check_buffer(pieces, "pieces")
        if pieces.size != size * count or pieces.dtype != out.dtype:
            raise ValueError(
                f"pieces must hold {size} x {count} elements of {out.dtype} (the size of out "
                f"on every rank), got {pieces.size} of {pieces.dtype}"
            )
    if algo == "native":
        executor.native(comm, "scatter", pieces if rank == root else None, root=root, out=out)
    else:
        plan = _plan("scatter", comm, size * count, root, algo, segments)
        work = plan.workspace(out.dtype)
        if rank == root:  # lay the pieces out by rank relative to the root
            split_at = (size - root) * count
            work[:split_at] = pieces[root * count :]
            work[split_at:] = pieces[: root * count]
        _execute(comm, plan, work)
        relative = (rank - root) % size
        out[...] = work[relative * count : (relative + 1) * count]
    return (out, choice) if explain else out


def alltoall(
    comm, send: np.ndarray, algo: str = "auto", profile=None, explain: bool = False,
    out: np.ndarray | None = None,
):
    """Personalised exchange: block j of ``send`` (P equal blocks) goes to rank j; returns
    the P blocks received, block i from rank i (in ``out`` when given)."""
    _check_buffer(send, "send")
    size, rank = comm.Get_size(), comm.Get_rank()
    if send.size % size:
        raise ValueError(f"send must hold {size} equal blocks, got {send.size} elements")
    count = send.size // size
    result = _output(out, send.size, send.dtype)
    algo, segments, choice = _resolve(
        "alltoall", comm, count, send.itemsize, 0, algo, None, profile
    )
    if algo == "native":
        executor.native(comm, "alltoall", send, out=result)
    else:
        plan = _plan("alltoall", comm, 2 * send.size, 0, algo, segments)
        work = plan.workspace(send.dtype)
        work[: send.size] = send
        _execute(comm, plan, work)
        own = slice(rank * count, (rank + 1) * count)
        work[send.size :][own] = send[own]  # a rank's block for itself is not sent
        result[...] = work[send.size :]
    return (result, choice) if explain else result
