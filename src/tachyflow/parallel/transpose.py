"""Pencil transposes: redistribute a 3D array between x-, y- and z-pencils.

An x↔y transpose is an all-to-all among the ``p_row`` ranks of one process-grid column,
a y↔z transpose among the ``p_col`` ranks of one row (Kwon, Park & Choi: ``MPI_Alltoall`` over
sub-communicators, never the world). Each exchange is planned once (counts, displacements,
datatypes, buffers) and afterwards only moves data.

Two ways to move the data are implemented, selectable per :class:`Transposer`:

``"alltoallv"``
    numpy packs each destination's block into one contiguous buffer, ``MPI_Alltoallv``
    moves the buffers, numpy unpacks. Blocks that are already contiguous in the array (a
    split along the first axis) are sent or received in place, without a copy.
``"alltoallw"``
    ``MPI_Alltoallw`` with one subarray datatype per peer (as mpi4py-fft does): the MPI
    library packs and unpacks.

In both, the block a rank keeps for itself is copied directly from input to output, and
an exchange over a single rank (``p_row == 1`` or ``p_col == 1``) is that copy alone, so a
serial decomposition makes no MPI calls.

Pencils hold their axes in the order (x, y, z); a z-slab holds them as (y, x, z)
(``AXES``), so that a transform along x strides over one row of z, not a whole (y, z)
plane. Between the two, blocks travel in the slab's order: the pencil's side permutes
as it packs or unpacks. A receiver takes each block straight into place where it is one
contiguous run of its array, or where its runs are long (``LONG_RUN_BYTES``: through
``MPI_Alltoallw`` with a subarray datatype on the receiving side, which MPI fills as fast
as a contiguous block, with no unpacking pass); sends are packed (MPICH's datatype sends
measured slower than numpy's pack).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import numpy as np

from tachyflow.parallel.pencil import PencilDecomposition, check_orientation
from tachyflow.parallel.shared_memory import SharedArrays, on_one_node

METHODS = ("alltoallv", "alltoallw")
DEFAULT_METHOD = "alltoallv"

# (source, target) -> (communicator attribute, bounds over, scatter axis, gather axis).
# The scatter axis is whole in the source and becomes split; the gather axis is split in
# the source and becomes whole.
_EXCHANGES = {
    ("x", "y"): ("col_comm", "row", 0, 1),
    ("y", "x"): ("col_comm", "row", 1, 0),
    ("y", "z"): ("row_comm", "col", 1, 2),
    ("z", "y"): ("row_comm", "col", 2, 1),
}
# Between the y-pencils of a p_row × 1 grid and z-slabs (x and y whole, z split over the
# same ranks): one exchange over all ranks instead of a pencil transpose to x and back.
_SLAB_EXCHANGES = {
    ("y", "slab"): ("col_comm", "row", 2, 0),
    ("slab", "y"): ("col_comm", "row", 0, 2),
}
_ROUTES = {**_EXCHANGES, **_SLAB_EXCHANGES}
# The logical axes (0 = x, 1 = y, 2 = z) each orientation's arrays hold, slowest first.
AXES = {"x": (0, 1, 2), "y": (0, 1, 2), "z": (0, 1, 2), "slab": (1, 0, 2)}
# A non-contiguous block whose contiguous runs are at least this long is received through
# a datatype rather than unpacked (short runs: numpy unpacks faster than MPICH's engine).
LONG_RUN_BYTES = 16384


def _axis_slice(axis: int, start: int, stop: int) -> tuple[slice, ...]:
    index = [slice(None)] * 3
    index[axis] = slice(int(start), int(stop))
    return tuple(index)


def _contiguous_offset(shape, index: tuple[slice, ...]) -> int | None:
    """Flat offset of the box ``index`` of a C-ordered array of ``shape`` if the box is one
    contiguous run of elements, else None. It is when the axes before its first axis of
    extent > 1 have extent 1 and the axes after it are whole."""
    bounds = [part.indices(extent)[:2] for part, extent in zip(index, shape, strict=True)]
    extents = [stop - start for start, stop in bounds]
    first = next((axis for axis, extent in enumerate(extents) if extent != 1), len(shape))
    if any(extents[axis] != shape[axis] for axis in range(first + 1, len(shape))):
        return None
    return sum(start * math.prod(shape[axis + 1 :]) for axis, (start, _) in enumerate(bounds))


def _run_length(shape, index: tuple[slice, ...]) -> int:
    """Elements in each contiguous run of the box ``index`` of a C-ordered array."""
    extents = [
        len(range(*part.indices(extent))) for part, extent in zip(index, shape, strict=True)
    ]
    run = 1
    for axis in range(len(shape) - 1, -1, -1):
        run *= extents[axis]
        if extents[axis] != shape[axis]:
            break
    return run


@dataclass
class _Buffers:
    send: np.ndarray
    receive: np.ndarray


class _Exchange:
    """The plan of one transpose direction over one sub-communicator, built once."""

    def __init__(
        self,
        decomposition: PencilDecomposition,
        source: str,
        target: str,
        dtype,
        method: str,
        window: tuple[int, int, int] | None,
        local_shape: Callable[[str], tuple[int, ...]],
    ):
        from mpi4py.util import dtlib

        comm_name, over, scatter_axis, gather_axis = _ROUTES[(source, target)]
        self.comm = getattr(decomposition, comm_name)
        self.size = self.comm.Get_size()
        self.me = self.comm.Get_rank()
        self.method = method
        self.dtype = np.dtype(dtype)
        self.mpi_type = dtlib.from_numpy_dtype(self.dtype)
        self.input_shape = local_shape(source)
        self.output_shape = local_shape(target)
        scatter_bounds = decomposition.axis_bounds(scatter_axis, over)
        gather_bounds = decomposition.axis_bounds(gather_axis, over)

        # Block for peer d: the slab of the input in d's piece of the scatter axis. Block
        # from peer s: the slab of the output in s's piece of the gather axis. In a whole
        # y-pencil, within the window (a range of the axis the exchange leaves alone; a
        # window has y-pencils on both sides). Both in their array's axis order.
        def block(axis, start, stop, orientation):
            index = list(_axis_slice(axis, start, stop))
            if window is not None and orientation == "y":
                index[window[0]] = slice(window[1], window[2])
            return tuple(index[logical] for logical in AXES[orientation])

        self.block = block
        # Blocks travel in the slab's axis order between y-pencils and slabs: the pencil's
        # side reorders (packing, unpacking), and a slab receives blocks of long runs.
        wire = AXES["slab"] if "slab" in (source, target) else AXES["y"]
        self.to_wire = tuple(AXES[source].index(logical) for logical in wire)
        self.from_wire = tuple(wire.index(logical) for logical in AXES[target])
        self.wire_of_target = wire_of_target = tuple(
            AXES[target].index(logical) for logical in wire
        )
        self.send_slices = [
            block(scatter_axis, scatter_bounds[d], scatter_bounds[d + 1], source)
            for d in range(self.size)
        ]
        self.receive_slices = [
            block(gather_axis, gather_bounds[s], gather_bounds[s + 1], target)
            for s in range(self.size)
        ]
        self.send_shapes = [
            tuple(np.take(self._slab_shape(self.input_shape, s), self.to_wire))
            for s in self.send_slices
        ]
        self.receive_shapes = [
            tuple(np.take(self._slab_shape(self.output_shape, s), wire_of_target))
            for s in self.receive_slices
        ]
        self.send_counts = np.array([int(np.prod(s)) for s in self.send_shapes], dtype=np.int64)
        self.receive_counts = np.array(
            [int(np.prod(s)) for s in self.receive_shapes], dtype=np.int64
        )
        # The block kept on this rank never goes through MPI.
        self.send_counts[self.me] = 0
        self.receive_counts[self.me] = 0
        self.send_displacements = np.concatenate(([0], np.cumsum(self.send_counts)[:-1]))
        self.receive_displacements = np.concatenate(([0], np.cumsum(self.receive_counts)[:-1]))
        # Blocks that are contiguous runs of the array are sent or received in place.
        send_offsets = [_contiguous_offset(self.input_shape, part) for part in self.send_slices]
        receive_offsets = [
            _contiguous_offset(self.output_shape, part) for part in self.receive_slices
        ]
        identity = (0, 1, 2)
        self.send_in_place = None not in send_offsets and self.to_wire == identity
        self.receive_in_place = None not in receive_offsets and self.from_wire == identity
        if self.send_in_place:
            self.send_displacements = np.array(send_offsets, dtype=np.int64)
        if self.receive_in_place:
            self.receive_displacements = np.array(receive_offsets, dtype=np.int64)
        # A received block of long runs goes through a datatype (not unpacked). Sends are
        # packed: MPICH's datatype sends measured slower here than numpy's pack.
        self.receive_typed = (
            method == "alltoallv"
            and self.size > 1
            and window is None
            and self._long_runs(decomposition, over, target, scatter_axis, gather_axis)
        )
        self.send_arguments = self.receive_arguments = None
        if method == "alltoallw" and self.size > 1:
            self.send_arguments = self._typed_arguments(decomposition, "send")
            self.receive_arguments = self._typed_arguments(decomposition, "receive")
        elif self.receive_typed:
            self.send_arguments = (
                self.send_counts,
                self.send_displacements * self.dtype.itemsize,
                [self.mpi_type] * self.size,
            )
            self.receive_arguments = self._typed_arguments(decomposition, "receive")
        self._free_buffers: list[_Buffers] = []

    @staticmethod
    def _slab_shape(shape, index) -> tuple[int, ...]:
        return tuple(
            len(range(*part.indices(extent))) for part, extent in zip(index, shape, strict=True)
        )

    def _long_runs(self, decomposition, over, target, varying, split) -> bool:
        """Whether the received blocks, in the target's order (the wire's), are on some
        rank not one contiguous run, and on every rank in runs of :data:`LONG_RUN_BYTES` or
        more. From the bounds, which every rank knows (the ranks' outputs differ along
        ``varying``; the blocks split ``split``): the choice picks the collective, so it is
        the same on every rank. A block's runs depend only on the extents, of which the
        bounds hold a few distinct ones (a rank's own block counted too: it only makes
        the choice stricter), not on the rank count."""
        if self.from_wire != (0, 1, 2):
            return False
        position = AXES[target].index(varying)
        varying_extents = set(np.diff(decomposition.axis_bounds(varying, over)).tolist())
        split_extents = set(np.diff(decomposition.axis_bounds(split, over)).tolist())
        scattered = False
        for extent, width in itertools.product(varying_extents, split_extents - {0}):
            shape = list(self.output_shape)
            shape[position] = int(extent)
            part = self.block(split, 0, width, target)
            if 0 in self._slab_shape(shape, part):
                continue
            if _run_length(shape, part) * self.dtype.itemsize < LONG_RUN_BYTES:
                return False
            scattered = scattered or _contiguous_offset(shape, part) is None
        return scattered

    def _typed_arguments(self, decomposition: PencilDecomposition, side: str) -> tuple:
        """``MPI_Alltoallw``'s (counts, displacements, types) of one side: one datatype per
        peer, its block of the input (``side="send"``) or the output, in the wire's order."""
        if side == "send":
            array_shape, slices, counts = self.input_shape, self.send_slices, self.send_counts
            order = self.to_wire
        else:
            array_shape, slices = self.output_shape, self.receive_slices
            counts, order = self.receive_counts, self.wire_of_target
        types = []
        for peer in range(self.size):
            if counts[peer] == 0:
                types.append(self.mpi_type)
                continue
            start = [
                part.indices(extent)[0]
                for part, extent in zip(slices[peer], array_shape, strict=True)
            ]
            shape = self._slab_shape(array_shape, slices[peer])
            types.append(decomposition.subarray(self.dtype, array_shape, shape, start, order))
        return np.minimum(counts, 1), np.zeros(self.size, dtype=np.int64), types

    def _take_buffers(self) -> _Buffers:
        if self._free_buffers:
            return self._free_buffers.pop()
        send = 0 if self.send_in_place else int(self.send_counts.sum())
        receive = (
            0 if self.receive_in_place or self.receive_typed else int(self.receive_counts.sum())
        )
        return _Buffers(send=np.empty(send, self.dtype), receive=np.empty(receive, self.dtype))

    def start(
        self, array: np.ndarray, out: np.ndarray, blocking: bool = False
    ) -> _PendingExchange:
        """Pack, post the all-to-all, copy the local block; return the pending exchange.

        With ``blocking`` the blocking collective is used (MPI may pick a different
        algorithm for it) and the returned exchange only has to be unpacked.
        """
        target = out[self.receive_slices[self.me]]
        local = array[self.send_slices[self.me]].transpose(self.to_wire)
        local = local.transpose(self.from_wire)
        if self.size == 1:
            np.copyto(target, local)
            return _PendingExchange(self, out, None, None)
        buffers = None
        if self.method == "alltoallw":
            send, receive = array, out
        else:
            buffers = self._take_buffers()
            send = array if self.send_in_place else buffers.send
            receive = out if self.receive_in_place or self.receive_typed else buffers.receive
            if send is buffers.send:
                self._pack(array, send)
        if self.send_arguments is not None:  # datatypes
            arguments = ([send, *self.send_arguments], [receive, *self.receive_arguments])
            collective = self.comm.Alltoallw if blocking else self.comm.Ialltoallw
        else:
            arguments = (
                [send, (self.send_counts, self.send_displacements), self.mpi_type],
                [receive, (self.receive_counts, self.receive_displacements), self.mpi_type],
            )
            collective = self.comm.Alltoallv if blocking else self.comm.Ialltoallv
        if blocking:
            np.copyto(target, local)
            collective(*arguments)
            return _PendingExchange(self, out, None, buffers)
        request = collective(*arguments)
        # The local block is copied while the messages are in flight.
        np.copyto(target, local)
        return _PendingExchange(self, out, request, buffers)

    def run(self, array: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Blocking transpose of ``array`` into ``out``."""
        return self.start(array, out, blocking=True).wait()

    def finish(self, out: np.ndarray, buffers: _Buffers | None) -> None:
        """Unpack received blocks (if they were not received in place); recycle buffers."""
        if buffers is None:
            return
        if not (self.receive_in_place or self.receive_typed):
            for peer in range(self.size):
                count = self.receive_counts[peer]
                if count:
                    offset = self.receive_displacements[peer]
                    block = buffers.receive[offset : offset + count]
                    wired = block.reshape(self.receive_shapes[peer])
                    out[self.receive_slices[peer]] = wired.transpose(self.from_wire)
        self._free_buffers.append(buffers)

    def pull(self, arrays: SharedArrays, out: np.ndarray) -> np.ndarray:
        """The exchange by reading every rank's block for this one straight from its
        input in shared memory (``arrays``, one per rank of this communicator): one copy
        of each block (collective)."""
        arrays.publish()
        mine = self.send_slices[self.me]  # this rank's block, in any rank's input
        for peer, source in enumerate(arrays.peers):
            block = source[mine].transpose(self.to_wire).transpose(self.from_wire)
            np.copyto(out[self.receive_slices[peer]], block)
        arrays.release()
        return out

    def _pack(self, array: np.ndarray, send: np.ndarray) -> None:
        for peer in range(self.size):
            count = self.send_counts[peer]
            if count:
                offset = self.send_displacements[peer]
                np.copyto(
                    send[offset : offset + count].reshape(self.send_shapes[peer]),
                    array[self.send_slices[peer]].transpose(self.to_wire),
                )


@dataclass
class _PendingExchange:
    exchange: _Exchange
    out: np.ndarray
    request: object
    buffers: _Buffers | None
    done: bool = field(default=False)

    def wait(self) -> np.ndarray:
        if not self.done:
            if self.request is not None:
                self.request.Wait()
            self.exchange.finish(self.out, self.buffers)
            self.done = True
        return self.out

    def test(self) -> None:
        if self.request is not None and not self.done:
            self.request.Test()  # a completed request becomes MPI.REQUEST_NULL


class TransposeRequest:
    """Handle of a transpose started with :meth:`Transposer.start`.

    :meth:`wait` completes it (collective over the transpose's sub-communicator) and returns
    the output array; the input array must not be modified and the output not read before.
    """

    def __init__(self, pending: _PendingExchange):
        self._pending = pending

    def wait(self) -> np.ndarray:
        """Complete the transpose and return the output array."""
        return self._pending.wait()

    def test(self) -> None:
        """Let MPI advance the transfer (local; the wheel's MPICH moves non-blocking
        collectives only inside MPI calls). The output is valid only after :meth:`wait`."""
        self._pending.test()


def pipelined(
    count: int,
    stages: Sequence[Callable[[int], TransposeRequest | None]],
    progress: bool = False,
    waiting: Callable[[], AbstractContextManager] | None = None,
) -> None:
    """Pass ``count`` items through ``stages`` so that one item's transposes travel while
    another item is computed.

    Stage ``s`` of item ``i`` runs at step ``i + s``, the stages of a step in order; it is
    called as ``stages[s](i)`` after the request that stage ``s - 1`` of item ``i`` returned
    (if any) has been waited for, and returns the request of the transpose it started, or
    None. With three items and three stages (compute and start y→z; wait, compute, start
    z→y; wait, use) item 1 is computed while item 0 travels to the z-pencils, and so on.
    With ``progress`` every pending request is tested after each stage (cheap progress
    calls). ``waiting``, if given, makes the context every wait runs in (a timer).
    Collective as the stages are: every rank of a sub-communicator must run the
    same stages in the same order.
    """
    pending: dict[tuple[int, int], TransposeRequest | None] = {}
    for step in range(count + len(stages) - 1):
        for index, stage in enumerate(stages):
            item = step - index
            if not 0 <= item < count:
                continue
            request = pending.pop((item, index - 1), None)
            if request is not None:
                with waiting() if waiting else nullcontext():
                    request.wait()
            pending[(item, index)] = stage(item)
            if progress:
                for other in pending.values():
                    if other is not None:
                        other.test()
    with waiting() if waiting else nullcontext():
        for request in pending.values():
            if request is not None:
                request.wait()


def _window_pairs(decomposition: PencilDecomposition, window) -> tuple[tuple[str, str], ...]:
    """The transposes that leave the window's axis alone; the window checked."""
    try:
        axis, start, stop = (int(value) for value in window)
    except (TypeError, ValueError):
        raise TypeError(f"window must be (axis, start, stop), got {window!r}") from None
    pairs = {0: (("y", "z"), ("z", "y")), 2: (("x", "y"), ("y", "x"))}.get(axis)
    if pairs is None:
        raise ValueError(f"a window's axis must be 0 (y<->z) or 2 (x<->y), got {axis}")
    extent = decomposition.local_shape(pairs[0][0])[axis]
    if not 0 <= start <= stop <= extent:
        raise ValueError(
            f"window {window!r}: need 0 <= start <= stop <= {extent} (the local extent of "
            f"axis {axis} on rank {decomposition.rank})"
        )
    return pairs


class Transposer:
    """Moves arrays between the x-, y- and z-pencils of a :class:`PencilDecomposition`.

    Parameters
    ----------
    decomposition : PencilDecomposition
        Supplies the communicators, the local shapes and the MPI datatypes.
    dtype : numpy dtype
        Element type of the arrays (real or complex, any precision MPI knows). Arrays of
        another dtype are refused.
    method : {"alltoallv", "alltoallw"}
        How data moves (see the module docstring); ``"alltoallv"``, measured faster here,
        is the default.
    window : (int, int, int), optional
        ``(axis, start, stop)``: move only the local indices ``start:stop`` of ``axis``,
        an axis the transposes leave alone: x-planes (0) between y- and z-pencils, or
        z-planes (2) between y- and x-pencils, which are then the only transposes planned.
        The y-pencil is whole and only its window moves (the rest of an output y-pencil is
        left untouched); the other pencil holds the window alone (shape
        :meth:`local_shape`: ``z_pencil[start:stop]`` of a whole z-pencil, or an x-pencil
        array of its own). Windows of one pencil can travel in separate, overlapping
        transposes (:func:`pipelined`).
    slabs : bool
        Also plan the exchanges between y-pencils and z-slabs (orientation ``"slab"``: x
        and y whole, z split over the ``p_row`` ranks, held as (y, x, z), shape
        :meth:`local_shape`; a ``p_row × 1`` grid only, no
        window): one all-to-all over all ranks reaches an array whose x and y are both
        whole, where going to the x-pencil and back takes two (the pressure solve's x
        transform and y solves in one place). Collective over ``col_comm``, all ranks.
    shared : bool
        With ``slabs``, where every rank is on one node: the slab exchanges read each
        rank's block straight from its input in MPI-3 shared memory (one copy of each
        block, no MPI message; :class:`~tachyflow.parallel.shared_memory.SharedArrays`).
        Their inputs must then be :meth:`shared_array` ``("y")`` and ``("slab")``;
        :meth:`start` completes such an exchange before it returns. Raises ValueError
        where the ranks span nodes. :meth:`free` releases the shared memory.

    Notes
    -----
    Construction is local (the plans need no communication), but collective with
    ``shared`` (it allocates the shared memory). :meth:`transpose` and the
    ``x_to_y``-style shortcuts are collective over the sub-communicator of the exchange
    (the z↔x shortcuts over both), as are :meth:`start` and :meth:`TransposeRequest.wait`.
    Input and output arrays must be C-contiguous with exactly the local shape of their
    orientation; a wrong shape, dtype or layout raises ``ValueError`` or ``TypeError``
    before any communication.
    """

    def __init__(
        self,
        decomposition: PencilDecomposition,
        dtype=np.float64,
        method: str = DEFAULT_METHOD,
        window: tuple[int, int, int] | None = None,
        slabs: bool = False,
        shared: bool = False,
    ):
        if method not in METHODS:
            raise ValueError(f"transpose method must be one of {METHODS}, got {method!r}")
        try:
            self.dtype = np.dtype(dtype)
        except TypeError:
            raise TypeError(f"dtype must be a numpy dtype, got {dtype!r}") from None
        if self.dtype.kind not in "fc":
            raise TypeError(f"transposes move real or complex arrays, got dtype {self.dtype}")
        self.decomposition = decomposition
        self.method = method
        pairs = tuple(_EXCHANGES)
        if window is not None:
            pairs = _window_pairs(decomposition, window)
        if slabs:
            if decomposition.p_col != 1 or window is not None:
                raise ValueError(
                    "z-slabs need a p_row x 1 process grid and no window, got "
                    f"{decomposition.p_row}x{decomposition.p_col}"
                    f"{'' if window is None else f' and window {window!r}'}"
                )
            pairs += tuple(_SLAB_EXCHANGES)
        self.slabs = bool(slabs)
        self.window = None if window is None else tuple(int(value) for value in window)
        self._exchanges = {
            pair: _Exchange(
                decomposition, *pair, self.dtype, method, self.window, self.local_shape
            )
            for pair in pairs
        }
        self._scratch_y: np.ndarray | None = None
        self._shared: dict[str, SharedArrays] = {}
        if not isinstance(shared, bool):
            raise TypeError(f"shared must be True or False, got {shared!r}")
        if shared:
            if not slabs:
                raise ValueError("shared=True pulls the slab exchanges: it needs slabs=True")
            if not on_one_node(decomposition.comm):
                raise ValueError(
                    "shared=True needs every rank on one node (MPI_COMM_TYPE_SHARED); "
                    f"{decomposition.comm.Get_size()} ranks span several"
                )
            self._shared = {
                orientation: SharedArrays(
                    decomposition.col_comm, self.local_shape(orientation), self.dtype
                )
                for orientation in ("y", "slab")
            }

    @property
    def shared(self) -> bool:
        """Whether the slab exchanges pull from the peers' shared memory (see the class)."""
        return bool(self._shared)

    def shared_array(self, orientation: str) -> np.ndarray:
        """This rank's array in shared memory for ``orientation`` (``"y"`` or ``"slab"``):
        with ``shared``, the input a slab exchange reads from."""
        if orientation not in self._shared:
            raise ValueError(
                f"no shared {orientation!r} array: shared=True has a 'y' and a 'slab' one"
            )
        return self._shared[orientation].array

    def free(self) -> None:
        """Release the shared-memory windows, if any (collective over ``col_comm``)."""
        for arrays in self._shared.values():
            arrays.free()
        self._shared = {}

    def _pull(self, array, source: str, target: str, out) -> np.ndarray | None:
        """A slab exchange by reading the peers' shared arrays, where planned; else None."""
        arrays = self._shared.get(source)
        if arrays is None or "slab" not in (source, target):
            return None
        if array.__array_interface__["data"][0] != arrays.array.__array_interface__["data"][0]:
            raise ValueError(
                f"with shared=True the {source}->{target} exchange reads "
                f"shared_array({source!r}); got another array"
            )
        return self._exchanges[(source, target)].pull(arrays, out)

    def local_shape(self, orientation: str) -> tuple[int, ...]:
        """Shape of the ``orientation``-pencil arrays this Transposer moves: the local
        pencil's, or with a window, the window's extent along its axis but in a y-pencil;
        a z-slab's (``"slab"``) where planned."""
        if orientation == "slab" and self.slabs:
            nx, ny, _ = self.decomposition.global_shape
            bounds = self.decomposition.axis_bounds(2, "row")
            row = self.decomposition.row
            return (ny, nx, int(bounds[row + 1] - bounds[row]))
        shape = self.decomposition.local_shape(orientation)
        if self.window is None or orientation == "y":
            return shape
        axis, start, stop = self.window
        return tuple(stop - start if index == axis else n for index, n in enumerate(shape))

    def _check(self, array, orientation: str, role: str) -> None:
        expected = self.local_shape(orientation)
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{role} must be a numpy array, got {type(array).__name__}")
        if array.dtype != self.dtype:
            raise TypeError(
                f"{role} has dtype {array.dtype} but this Transposer moves {self.dtype}"
            )
        if array.shape != expected:
            raise ValueError(
                f"{role} has shape {array.shape} but the local {orientation}-pencil"
                f"{' window' if self.window and orientation != 'y' else ''} on rank "
                f"{self.decomposition.rank} has shape {expected}"
            )
        if not array.flags.c_contiguous:
            raise ValueError(f"{role} must be C-contiguous (use numpy.ascontiguousarray)")

    def _orientation(self, name: str) -> str:
        return name if name == "slab" and self.slabs else check_orientation(name)

    def _prepare(self, array, source, target, out):
        source, target = self._orientation(source), self._orientation(target)
        self._check(array, source, "input array")
        if out is None:
            out = np.empty(self.local_shape(target), dtype=self.dtype)
        else:
            self._check(out, target, "output array")
        return source, target, out

    def transpose(
        self, array: np.ndarray, source: str, target: str, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Return ``array`` (a ``source``-pencil) redistributed as a ``target``-pencil.

        x↔z goes through a y-pencil held by the Transposer. Writes into ``out`` if given.
        """
        source, target, out = self._prepare(array, source, target, out)
        if source == target:
            np.copyto(out, array)
            return out
        if self._pull(array, source, target, out) is not None:
            return out
        if (source, target) in self._exchanges:
            return self._exchanges[(source, target)].run(array, out)
        if self.window is not None:
            raise ValueError(
                f"a Transposer of a window moves {' and '.join(map('->'.join, self._exchanges))}"
                f" only, got {source}->{target}"
            )
        if self._scratch_y is None:
            self._scratch_y = self.decomposition.zeros("y", self.dtype)
        self._exchanges[(source, "y")].run(array, self._scratch_y)
        return self._exchanges[("y", target)].run(self._scratch_y, out)

    def start(
        self, array: np.ndarray, source: str, target: str, out: np.ndarray | None = None
    ) -> TransposeRequest:
        """Begin a transpose between adjacent orientations (x↔y or y↔z) without blocking.

        Returns a :class:`TransposeRequest`; call its ``wait()`` to get the output. Several
        transposes may be in flight at once, each with its own input and output arrays.
        """
        source, target, out = self._prepare(array, source, target, out)
        if (source, target) not in self._exchanges:
            raise ValueError(
                f"start() moves between adjacent orientations (x<->y, y<->z) that this "
                f"Transposer plans, got {source}->{target}"
            )
        exchange = self._exchanges[(source, target)]
        if self._pull(array, source, target, out) is not None:  # done: nothing in flight
            return TransposeRequest(_PendingExchange(exchange, out, None, None, done=True))
        return TransposeRequest(exchange.start(array, out))

    def x_to_y(self, array, out=None):
        """x-pencil to y-pencil (collective over ``col_comm``)."""
        return self.transpose(array, "x", "y", out)

    def y_to_x(self, array, out=None):
        """y-pencil to x-pencil (collective over ``col_comm``)."""
        return self.transpose(array, "y", "x", out)

    def y_to_z(self, array, out=None):
        """y-pencil to z-pencil (collective over ``row_comm``)."""
        return self.transpose(array, "y", "z", out)

    def z_to_y(self, array, out=None):
        """z-pencil to y-pencil (collective over ``row_comm``)."""
        return self.transpose(array, "z", "y", out)

    def x_to_z(self, array, out=None):
        """x-pencil to z-pencil through y (collective over both sub-communicators)."""
        return self.transpose(array, "x", "z", out)

    def z_to_x(self, array, out=None):
        """z-pencil to x-pencil through y (collective over both sub-communicators)."""
        return self.transpose(array, "z", "x", out)
