"""In transit: a run's fields streamed with ADIOS2 SST to separate reader processes.

Layout of ``RUN_DIR/transit/``::

    manifest.json     what a reader needs before attaching (written by rank 0, atomically)
    stream-<g>.sst    SST contact file of aggregator g's stream (exists while it is open)
    stream-<g>.lock   locked by the live writer of stream g (see below); never removed

Writer (:class:`TransitWriter`, collective). The ``adios2`` wheel has no MPI, so the ranks
are split into ``aggregators`` groups of contiguous ranks; each group's first rank gathers
the group's pieces with mpi4py and writes them into its own SST stream, one block per
piece (the global ``(nx, ny, nz)`` array with the piece's start and shape). Pieces travel
one field at a time through at most two piece-sized buffers that rotate (the receive of
the next piece overlaps the copy of the current one into SST), so what the aggregator
stages is SST's own copy of the step plus those buffers: ``1 + 2 * piece / group data``
times the group's data, e.g. 1.25 for four fields and two ranks per group. An aggregator
without members keeps one buffer (for its own strided pieces: SST's ``Put`` reads memory
as contiguous whatever the strides), and a pair that would exceed half the group's data
is cut to one. A gather of the whole group first (``Gatherv``) would stage two copies:
SST's ``Put`` always copies (measured: one copy with the BP5 marshalling, two with FFS),
so the gathered copy would be pure overhead. Measured peak RSS beyond the step's data,
64³ cells, four fields, two ranks: 1.33 times the group's data with one aggregator, 1.40
with two (each alone with strided pieces), 1.15 with two and contiguous pieces; about
0.7 MB of it is SST's own bookkeeping, whatever the size.

Every step of a stream holds ``step`` (int64), ``time`` (float64), ``content`` (a JSON
string: writer id, aggregator count, group, the fields and the pipelines of this step)
and the blocks of those fields. Static metadata (grid, lengths, ``faces_y``, names, dtype)
is in the manifest rather than in ADIOS attributes: SST sends an attribute only with the
step in which it was defined, so a reader that attaches later never sees it (measured).

SST settings: ``RendezvousReaderCount = 0`` (the run never waits for a reader),
``QueueLimit``, ``QueueFullPolicy`` (``Block``: lossless, a slow reader slows the run;
``Discard``: monitoring, ``EndStep`` never waits and steps a slow reader has not taken are
dropped), ``ReserveQueueLimit`` (steps kept for readers that attach later). Measured with
this wheel (ADIOS2 2.12, EVPath data plane only):

- A late reader attaches when the writer finishes its next step, and then receives the
  newest ``reserve_queue_limit`` steps counting that one, i.e. ``reserve_queue_limit - 1``
  written before it attached.
- ``ReserveQueueLimit >= QueueLimit`` breaks SST: with ``Discard`` every new step is
  dropped once the reserve fills the queue, with ``Block`` the writer blocks forever even
  without readers. With a single slot beside the reserve, a reader attaching to two
  ``Discard`` streams once received nothing more from the first: SST kept a step it had
  not delivered to that reader, so the queue stayed full and every new step was dropped.
  The writer therefore requires ``queue_limit >= reserve_queue_limit + 2``.
- A reader opens the streams one after the other (the binding holds the interpreter lock
  during an open, so threads cannot overlap them) and each open lasts until its writer's
  next step or two. Meanwhile the streams already open fill their queues; with ``Block``
  a full one stops its aggregator, hence the whole run, and the open waiting for another
  aggregator's step never completes: run and reader wait for each other forever. With
  ``Block`` the reader therefore empties the open streams after each open but the last
  (it has read nothing yet; a late reader then starts after its first open rather than
  with the reserve), and ``Block`` with several streams requires ``queue_limit >=
  reserve_queue_limit + ATTACH_STEPS`` (6: about three steps were written during one
  open at 20 steps a second on a loaded two-core machine). A run writing much faster
  than that could still stall while a reader attaches: use ``Discard`` where readers
  come and go.
- A reader killed with SIGKILL once attached drops its connection; the writer notices at
  once and goes on (a ``Block`` writer waiting for it is released). A reader that dies
  while it attaches, between registering with a writer and that writer's next step,
  crashes the writer at that step (TCP control; ENet hangs it instead): SST keeps the
  reader's connection without a reference until then (``cp_writer.c``,
  ``queueReaderRegisterMsgAndNotify``). Nothing on the writer's side can prevent it;
  :class:`TransitReader` holds SIGTERM, SIGHUP, SIGQUIT and SIGINT back while it
  attaches, so only SIGKILL (or a crash) in that window is fatal.
- Closing a writer waits until the readers attached to it have released the steps they
  were sent (SST has no timeout for this); a reader killed releases them at once.
- Control messages use TCP sockets (``ControlTransport=sockets``). ENet makes the
  writer's step at which a reader attaches cheaper (1-5 ms instead of 40-90 ms, see
  :mod:`tachyflow.insitu.monitor`), but with ENet a reader that died while attaching
  hangs the writer for good rather than crashing it, and attaching to a contact file
  left by a killed writer has crashed readers. Data travels over EVPath
  (``DataTransport=WAN``), the only data plane of the wheel (RDMA, UCX, MPI fall back to
  it). Readers do not take data before asking (``SpeculativePreloadMode=OFF``): lockstep
  skips steps, which would then have been sent for nothing.
- The contact file starts with the address of the writer's stream in its memory, which
  the writer dereferences unchecked when a reader queries it: a reader must never use a
  contact file left by a dead writer. A reader attaches only to streams whose lock is
  held by a writer that has recorded itself in it after opening (:func:`writer_alive`).
- EVPath seeds each process's CManager ID with ``getpid() + time(NULL)`` and reuses any
  open connection to a CManager with the ID it is asked to reach, whatever its address
  (``cm.c``, ``CMinternal_get_conn``). Two aggregators whose pid and opening second
  add up alike (ranks with consecutive pids opening either side of a second's turn, or
  equal pids on two nodes) get one ID; a reader attached to the first then sends its
  queries for the second stream to the first writer, which dereferences a stream
  address of another process and crashes (seen a few times in a hundred test runs).
  The writer reads every stream's ID back from its contact file after opening and
  opens clashing streams again in a later second, hence with another seed; a reader
  refuses to attach to streams that share an ID.

One writer per stream: SST itself lets a second writer replace the contact file of a live
one without any error, and a killed writer leaves its contact file behind. Each
aggregator holds an exclusive ``flock`` on ``stream-<g>.lock`` (holding its pid and host)
while it writes; the system drops the lock when the process ends, however it ends. A
writer that finds the lock held raises :class:`StreamInUseError` naming the holder; a
writer that gets the lock removes a contact file left by a dead writer and takes over.
The lock is per open file, so a second writer in the same process is refused as well.
File systems without ``flock`` (some network mounts) skip the check.

Reader (:class:`TransitReader`). Opens every stream named in the manifest and steps them
in lockstep: a step is returned only when every stream has delivered it (the writer's
step index, which counts the writer's steps, is the same for one ``write`` on every
stream). With ``Discard`` each aggregator drops steps on its own, so streams may deliver
different steps; the reader then releases the steps of the streams that are behind the
newest one any stream holds and begins the next step there, until all hold the same
index. Steps only some streams had are counted in :attr:`TransitReader.skipped`. Since
the reader drains all streams at the same pace their queues fill alike and drops mostly
coincide; with ``Block`` nothing is dropped and lockstep never skips after the first
step (streams attached at different writes start at different steps).
"""

from __future__ import annotations

import base64
import fcntl
import itertools
import json
import math
import os
import re
import signal
import socket
import time as clock
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path

import numpy as np

from tachyflow.errors import TachyflowError
from tachyflow.io.files import replacing

FOLDER = "transit"
MANIFEST = "manifest.json"
FORMAT = "tachyflow-transit"
QUEUE_FULL_POLICIES = ("Block", "Discard")
# Variables every step carries; field names must differ from them.
STEP_VARIABLES = ("step", "time", "content")
# ADIOS colours its exception messages for terminals.
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
TRANSPORT_PARAMETERS = {"ControlTransport": "sockets", "DataTransport": "WAN"}
# Readers take a stream's lock for a moment to test it (writer_alive): a writer starting
# meanwhile retries this long before it calls the stream busy.
LOCK_PATIENCE = 1.0
# Seconds between looks at the manifest and locks while a reader waits for a writer.
ATTACH_POLL = 0.1
# BeginStep waits in slices this long so that a reader stays interruptible.
BEGIN_STEP_SLICE = 1.0
# Queue slots needed beside the reserve: with none SST wedges (measured); with one, a
# reader attaching to two Discard streams once received nothing more from the first
# (SST kept a step it never delivered to that reader, and dropped every new one).
QUEUE_HEADROOM = 2
# Steps a writer may write while a reader opens one stream (about three measured at 20
# steps a second on a loaded two-core machine, with margin): with Block and several
# streams, the queue must hold them beside the reserve (see _check_queue).
ATTACH_STEPS = 6
# Opening rounds before the writer gives up giving every stream its own CManager ID.
OPEN_ATTEMPTS = 5
# SST's own wait for a contact file once its lock says the writer is alive: the writer
# locks just before it opens the stream, so the file follows within moments.
OPEN_TIMEOUT_SECONDS = 5


class StreamInUseError(TachyflowError, RuntimeError):
    """A transit stream already has a live writer (another run writes to the same folder)."""


@dataclass(frozen=True)
class WriteTiming:
    """Wall time of one :meth:`TransitWriter.write` on one rank, in seconds.

    Attributes
    ----------
    step : int
        The step written.
    check : float
        Agreeing on the input over all ranks (one small allreduce).
    transfer : float
        Moving pieces to the aggregator: sending (members) or waiting for receives
        (aggregators).
    put : float
        Copying the pieces into SST (aggregators).
    end_step : float
        ``EndStep`` (aggregators): publishing the step; waits for a slow reader only with
        ``Block`` and a full queue.
    """

    step: int
    check: float
    transfer: float
    put: float
    end_step: float

    @property
    def total(self) -> float:
        """The whole write."""
        return self.check + self.transfer + self.put + self.end_step


def transit_folder(run_dir) -> Path:
    """``RUN_DIR/transit``: manifest, streams, contact files and locks."""
    return Path(run_dir) / FOLDER


def _lock_path(stream: Path) -> Path:
    return stream.with_name(stream.name + ".lock")


def _contact_path(stream: Path) -> Path:
    return stream.with_name(stream.name + ".sst")


def _reason(error: Exception) -> str:
    return ANSI_ESCAPE.sub("", str(error)).strip()


def writer_alive(stream) -> bool | None:
    """Whether a live writer holds the lock of ``stream`` (a path without ``.sst``) and has
    opened it.

    False without a lock file, with nobody holding it or while its writer is still opening
    the stream; None when the file system has no locks (then nobody can tell).
    """
    try:
        descriptor = os.open(_lock_path(Path(stream)), os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return os.fstat(descriptor).st_size > 0  # the writer's details: its stream is open
    except OSError:
        return None
    finally:
        os.close(descriptor)  # also drops the shared lock, if taken
    return False


class _StreamLock:
    """The exclusive lock a writer holds on ``stream-<g>.lock`` while it lives."""

    def __init__(self, stream: Path):
        path = _lock_path(stream)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        patience = clock.monotonic() + LOCK_PATIENCE
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if clock.monotonic() < patience:
                    clock.sleep(0.05)
                    continue
                os.close(descriptor)
                raise StreamInUseError(
                    f"{stream} already has a live writer ({_holder(path)}); stop that run "
                    "or write to another run directory"
                ) from None
            except OSError:  # no locks on this file system: nothing to hold
                os.close(descriptor)
                self._descriptor = None
                return
        # Empty until publish(): the details of a dead writer must not vouch for its
        # contact file, which the new writer is about to replace.
        os.ftruncate(descriptor, 0)
        self._descriptor = descriptor

    def publish(self) -> None:
        """Record this process as the writer, once its contact file is in place."""
        if self._descriptor is not None:
            holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": clock.time()}
            os.write(self._descriptor, json.dumps(holder).encode())

    def release(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


def _holder(path: Path) -> str:
    try:
        text = path.read_text()
        if not text:
            return "it is still opening its stream"
        holder = json.loads(text)
        since = clock.strftime("%Y-%m-%d %H:%M:%S", clock.localtime(holder["since"]))
        return f"pid {holder['pid']} on {holder['host']}, since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "its details are unreadable"


def _check_names(fields) -> tuple[str, ...]:
    if isinstance(fields, str) or not isinstance(fields, Sequence):
        raise TypeError(f"fields must be a sequence of field names, got {fields!r}")
    names = tuple(fields)
    for name in names:
        if not isinstance(name, str) or not name or "/" in name or name in STEP_VARIABLES:
            raise ValueError(
                f"field names must be non-empty strings without '/' other than "
                f"{', '.join(STEP_VARIABLES)}; got {name!r} in {names!r}"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"field names must be distinct, got {names!r}")
    return names


def _check_count(value, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")
    return int(value)


def _check_queue(queue_limit, policy, reserve, aggregators: int) -> tuple[int, str, int]:
    queue_limit = _check_count(queue_limit, "queue_limit", 1)
    reserve = _check_count(reserve, "reserve_queue_limit", 0)
    if policy not in QUEUE_FULL_POLICIES:
        raise ValueError(f"queue_full_policy must be one of {QUEUE_FULL_POLICIES}, got {policy!r}")
    if queue_limit < reserve + QUEUE_HEADROOM:
        raise ValueError(
            f"queue_limit ({queue_limit}) must be at least reserve_queue_limit + "
            f"{QUEUE_HEADROOM} ({reserve + QUEUE_HEADROOM}): with less room beside the "
            "reserve SST drops every new step (Discard) or blocks forever (Block)"
        )
    if policy == "Block" and aggregators > 1 and queue_limit < reserve + ATTACH_STEPS:
        raise ValueError(
            f"with Block and {aggregators} aggregators, queue_limit ({queue_limit}) must be at "
            f"least reserve_queue_limit + {ATTACH_STEPS} ({reserve + ATTACH_STEPS}): while a "
            "reader opens one stream the others fill their queues, and a full queue would "
            "stop the run before the reader has opened them all"
        )
    return queue_limit, policy, reserve


def _lookup3(data: bytes) -> int:
    """Bob Jenkins' ``hashlittle`` (lookup3.c) with seed 0: how EVPath's attribute library
    (ATL) turns an attribute name into its atom."""
    mask = 0xFFFFFFFF

    def rotate(x: int, k: int) -> int:
        return ((x << k) | (x >> (32 - k))) & mask

    def words(block: bytes) -> tuple[int, int, int]:
        return tuple(int.from_bytes(block[i : i + 4], "little") for i in (0, 4, 8))

    a = b = c = (0xDEADBEEF + len(data)) & mask
    rest = data
    while len(rest) > 12:
        x, y, z = words(rest[:12])
        a, b, c = (a + x) & mask, (b + y) & mask, (c + z) & mask
        for shift_a, shift_b, shift_c in ((4, 6, 8), (16, 19, 4)):
            a = ((a - c) & mask) ^ rotate(c, shift_a)
            c = (c + b) & mask
            b = ((b - a) & mask) ^ rotate(a, shift_b)
            a = (a + c) & mask
            c = ((c - b) & mask) ^ rotate(b, shift_c)
            b = (b + a) & mask
        rest = rest[12:]
    if not rest:
        return c
    x, y, z = words(rest + bytes(12 - len(rest)))
    a, b, c = (a + x) & mask, (b + y) & mask, (c + z) & mask
    c = ((c ^ b) - rotate(b, 14)) & mask
    a = ((a ^ c) - rotate(c, 11)) & mask
    b = ((b ^ a) - rotate(a, 25)) & mask
    c = ((c ^ b) - rotate(b, 16)) & mask
    a = ((a ^ c) - rotate(c, 4)) & mask
    b = ((b ^ a) - rotate(a, 14)) & mask
    return ((c ^ b) - rotate(b, 24)) & mask


CMANAGER_ID_ATOM = _lookup3(b"CM_CMANAGER_ID")


def _cmanager_id(contact: Path) -> int | None:
    """The EVPath CManager ID in an SST contact file, or None when there is none to read.

    The file ends with ``<stream address>:<base64 ATL attribute list>``; the list is a
    4-byte header and 8-byte entries (atom, value; little-endian).
    """
    try:
        encoded = contact.read_text().strip().rsplit(":", 1)[1]
        attributes = base64.b64decode(encoded, validate=True)
    except (OSError, IndexError, ValueError):
        return None
    for offset in range(4, len(attributes) - 7, 8):
        atom, value = (
            int.from_bytes(attributes[i : i + 4], "little") for i in (offset, offset + 4)
        )
        if atom == CMANAGER_ID_ATOM:
            return value
    return None


def _clashing(identities) -> set[int]:
    """Indices whose (not None) identity equals an earlier one's."""
    seen, clashes = set(), set()
    for index, identity in enumerate(identities):
        if identity is not None and identity in seen:
            clashes.add(index)
        seen.add(identity)
    return clashes


def _agree(comm, problem) -> None:
    """Raise on every rank if any rank has a ``(error class, message)`` problem."""
    problems = [entry for entry in comm.allgather(problem) if entry is not None]
    if problems:
        kind = next((k for k, _ in problems if k is StreamInUseError), problems[0][0])
        raise kind("; ".join(dict.fromkeys(message for _, message in problems)))


def _node_count(comm) -> int:
    """Number of shared-memory nodes among the ranks of ``comm`` (collective)."""
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    leaders = comm.allreduce(int(node.Get_rank() == 0), op=MPI.SUM)
    node.Free()
    return leaders


class TransitWriter:
    """Streams fields of a running simulation to in-transit readers (ADIOS2 SST).

    Parameters
    ----------
    decomposition : PencilDecomposition
        The run's decomposition; its ``orientation`` pencils are the pieces written.
    run_dir : path
        Output folder of the run; the streams live in ``RUN_DIR/transit``.
    fields : sequence of str
        Names of the fields a step may carry (a step carries any subset of them).
    grid : StaggeredGrid, optional
        Geometry, recorded in the manifest (lengths, y faces, stretching).
    aggregators : int, optional
        Number of groups of contiguous ranks, each writing one stream through its first
        rank; at most the number of ranks. Default: one per shared-memory node.
    queue_limit : int
        Steps SST queues per stream for its readers, the reserve included (at least
        ``reserve_queue_limit + 2``; ``+ 6`` with ``Block`` and several aggregators).
    queue_full_policy : {"Discard", "Block"}
        What a full queue does: drop the new step for the readers (the run never waits,
        for monitoring) or wait for the slowest reader (lossless output).
    reserve_queue_limit : int
        Steps kept for readers that attach later, counting the one at which they attach.
    dtype : numpy dtype
        Type of the fields' values.
    orientation : {"y", "x", "z"}
        Pencil orientation of the pieces given to :meth:`write`.

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range (on every rank alike).
    StreamInUseError
        A stream of ``run_dir`` has a live writer (on every rank).

    Notes
    -----
    Construction, :meth:`write` and :meth:`close` are collective over the decomposition's
    communicator. The writer uses a duplicate of it, so its messages never mix with the
    solver's. ``timings`` holds a :class:`WriteTiming` per write of this rank.
    """

    def __init__(
        self,
        decomposition,
        run_dir,
        fields: Sequence[str],
        *,
        grid=None,
        aggregators: int | None = None,
        queue_limit: int = 4,
        queue_full_policy: str = "Discard",
        reserve_queue_limit: int = 2,
        dtype=np.float64,
        orientation: str = "y",
    ):
        from tachyflow.parallel.pencil import PencilDecomposition, check_orientation, split_bounds

        if not isinstance(decomposition, PencilDecomposition):
            raise TypeError(f"decomposition must be a PencilDecomposition, got {decomposition!r}")
        if not isinstance(run_dir, str | os.PathLike):
            raise TypeError(f"run_dir must be a path, got {run_dir!r}")
        self.fields = _check_names(fields)
        self.dtype = np.dtype(dtype)
        if self.dtype.kind not in "iufc":
            raise ValueError(f"dtype must be a numeric type, got {self.dtype}")
        self.orientation = check_orientation(orientation)
        if grid is not None and tuple(grid.shape) != decomposition.global_shape:
            raise ValueError(
                f"grid shape {tuple(grid.shape)} differs from the decomposition's "
                f"{decomposition.global_shape}"
            )
        size = decomposition.size
        if aggregators is None:
            aggregators = _node_count(decomposition.comm)
        self.aggregators = _check_count(aggregators, "aggregators", 1)
        if self.aggregators > size:
            raise ValueError(f"aggregators must be at most the {size} ranks, got {aggregators}")
        self.queue_limit, self.queue_full_policy, self.reserve_queue_limit = _check_queue(
            queue_limit, queue_full_policy, reserve_queue_limit, self.aggregators
        )
        self.folder = transit_folder(run_dir)
        self.global_shape = decomposition.global_shape
        self.timings: list[WriteTiming] = []

        self._comm = decomposition.comm.Dup()
        rank = self._comm.Get_rank()
        bounds = split_bounds(size, self.aggregators)
        self.group = int(np.searchsorted(bounds, rank, side="right")) - 1
        self._group_ranks = range(int(bounds[self.group]), int(bounds[self.group + 1]))
        self._aggregator_rank = self._group_ranks[0]
        self.is_aggregator = rank == self._aggregator_rank
        self._pencils = decomposition.all_pencils(self.orientation)
        self._rank = rank
        piece_sizes = [self._pencils[r].size for r in self._group_ranks]
        #: Bytes of all fields of this rank's group in one step.
        self.step_bytes = sum(piece_sizes) * self.dtype.itemsize * len(self.fields)
        largest = max(piece_sizes)
        # Two rotating buffers overlap receiving with copying into SST; one when nothing is
        # received (only strided pieces of the aggregator's own pass through it) or when
        # two would stage more than half the group's data beyond SST's own copy.
        receives = any(piece_sizes[1:])
        halved = 4 * largest <= len(self.fields) * sum(piece_sizes)
        self._slot_count = 2 if receives and halved else 1
        self._slot_elements = largest
        self._slots: list[np.ndarray] = []
        self._copy: np.ndarray | None = None  # a member's contiguous copy of a strided piece
        self._last_step: int | None = None
        self._lock: _StreamLock | None = None
        self._adios = self._io = self._engine = None
        self._variables: dict[str, object] = {}
        self.writer_id = self._comm.bcast(uuid.uuid4().hex if rank == 0 else None)
        self.stream = self.folder / f"stream-{self.group}"

        try:
            _agree(self._comm, self._lock_stream() if self.is_aggregator else None)
            self._open_streams()
            _agree(self._comm, self._write_manifest(grid, bounds) if rank == 0 else None)
        except (StreamInUseError, OSError, RuntimeError):
            self._release_stream()
            self._comm.Free()
            self._comm = None
            raise

    @classmethod
    def for_case(cls, section, solver, output) -> TransitWriter:
        """The writer of a case's ``[insitu]`` transit pipelines (collective).

        The fields are those the transit pipelines draw; ``aggregators`` is capped at the
        number of ranks so that one case file runs on any number of them.
        """
        from tachyflow.insitu.pipelines import Pipeline

        names = dict.fromkeys(
            name
            for entry in section.pipeline
            if entry.mode == "transit"
            for name in Pipeline(entry, solver.grid).fields
        )
        decomposition = solver.decomposition
        return cls(
            decomposition,
            output,
            tuple(names),
            grid=solver.grid,
            aggregators=min(section.aggregators, decomposition.size),
            queue_limit=section.queue_limit,
            queue_full_policy=section.queue_full_policy,
            reserve_queue_limit=section.reserve_queue_limit,
        )

    # -- opening ------------------------------------------------------------------------

    def _lock_stream(self):
        """Take this aggregator's stream; a ``(class, message)`` problem or None."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._lock = _StreamLock(self.stream)
        except StreamInUseError as error:
            return StreamInUseError, str(error)
        except OSError as error:
            return OSError, f"cannot create the transit stream {self.stream}: {error}"
        # We hold the lock, so a contact file still there was left by a dead writer:
        # remove it before a reader trusts it.
        _contact_path(self.stream).unlink(missing_ok=True)
        return None

    def _open_streams(self) -> None:
        """Open every aggregator's stream, each with an EVPath CManager ID of its own
        (collective; raises on every rank when that fails)."""
        for _ in range(OPEN_ATTEMPTS):
            problem = None
            if self.is_aggregator and self._engine is None:
                problem = self._open_sst()
            _agree(self._comm, problem)
            identity = _cmanager_id(_contact_path(self.stream)) if self.is_aggregator else None
            clashes = _clashing(self._comm.allgather(identity))
            if not clashes:
                if self._lock is not None:
                    self._lock.publish()
                return
            # The later of two clashing streams opens again in a later second, hence with
            # another seed; earlier ones keep theirs (rank 0 may host other SST streams,
            # such as the monitor's, which share its CManager).
            if self._rank in clashes:
                self._close_sst()
            clock.sleep(1.0 + 0.05 - math.modf(clock.time())[0])
        raise RuntimeError(
            f"could not give the {self.aggregators} transit streams distinct EVPath CManager "
            f"IDs in {OPEN_ATTEMPTS} attempts (ranks {sorted(clashes)} kept clashing)"
        )

    def _open_sst(self):
        """Open this aggregator's SST stream; a ``(class, message)`` problem or None."""
        import adios2.bindings as adios

        try:
            self._adios = adios.ADIOS()
            self._io = self._adios.DeclareIO(f"transit-writer-{self.group}")
            self._io.SetEngine("SST")
            self._io.SetParameters(
                {
                    "RendezvousReaderCount": "0",
                    "QueueLimit": str(self.queue_limit),
                    "QueueFullPolicy": self.queue_full_policy,
                    "ReserveQueueLimit": str(self.reserve_queue_limit),
                    "MarshalMethod": "BP5",
                    **TRANSPORT_PARAMETERS,
                }
            )
            zero = np.zeros(1, dtype=self.dtype)
            shape = list(self.global_shape)
            for name in self.fields:
                self._variables[name] = self._io.DefineVariable(
                    name, zero, shape, [0, 0, 0], shape, False
                )
            self._variables["step"] = self._io.DefineVariable("step", np.zeros(1, np.int64))
            self._variables["time"] = self._io.DefineVariable("time", np.zeros(1, np.float64))
            self._variables["content"] = self._io.DefineVariable("content")
            self._engine = self._io.Open(str(self.stream), adios.Mode.Write)
        except (RuntimeError, ValueError) as error:
            return RuntimeError, f"cannot open the SST stream {self.stream}: {_reason(error)}"
        return None

    def _close_sst(self) -> None:
        """Close the SST stream and drop every ADIOS object: SST frees the process's
        CManager with its last stream, and the next open creates a new one."""
        if self._engine is not None:
            self._engine.Close()
            self._engine = None
        self._variables.clear()
        self._adios = self._io = None

    def _write_manifest(self, grid, bounds):
        """Rank 0: the manifest readers start from; a ``(class, message)`` problem or None."""
        manifest = {
            "format": FORMAT,
            "version": 1,
            "writer_id": self.writer_id,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "created": clock.time(),
            "ranks": self._comm.Get_size(),
            "aggregators": self.aggregators,
            "groups": [[int(a), int(b)] for a, b in itertools.pairwise(bounds)],
            "streams": [f"stream-{g}" for g in range(self.aggregators)],
            "fields": list(self.fields),
            "dtype": self.dtype.str,
            "global_shape": list(self.global_shape),
            "orientation": self.orientation,
            "queue_limit": self.queue_limit,
            "queue_full_policy": self.queue_full_policy,
            "reserve_queue_limit": self.reserve_queue_limit,
            "grid": None
            if grid is None
            else {
                "lengths": [float(length) for length in grid.lengths],
                "faces_y": [float(face) for face in grid.faces_y],
                "stretching": float(grid.stretching),
            },
        }
        try:
            with replacing(self.folder / MANIFEST) as temporary:
                temporary.write_text(json.dumps(manifest, indent=1))
        except OSError as error:
            return OSError, f"cannot write {self.folder / MANIFEST}: {error}"
        return None

    # -- writing ------------------------------------------------------------------------

    @property
    def buffer_bytes(self) -> int:
        """Bytes of this rank's transfer buffers (SST's own copy of a step not included)."""
        held = [*self._slots, *([] if self._copy is None else [self._copy])]
        return sum(buffer.nbytes for buffer in held)

    def write(
        self,
        step: int,
        time: float,
        fields: Mapping[str, np.ndarray],
        pipelines: Sequence[str] = (),
    ) -> None:
        """Send one step (collective).

        Parameters
        ----------
        step : int
            Time step number, the same on every rank and larger than the last one written.
        time : float
            Simulated time.
        fields : mapping of str to ndarray
            This rank's piece of each field sent (interior cells, any memory layout), a
            subset of the writer's ``fields``, the same names on every rank.
        pipelines : sequence of str
            Names of the pipelines due at this step, passed on to the readers.

        Raises
        ------
        ValueError
            Unknown names, pieces of the wrong shape or type, or steps that differ between
            ranks or do not increase (on every rank alike).
        """
        from mpi4py import MPI

        if self._comm is None:
            raise ValueError("write() on a closed TransitWriter")
        started = clock.perf_counter()
        problem = self._input_problem(step, time, fields, pipelines)
        names = [] if problem else [name for name in self.fields if name in fields]
        mask = sum(1 << self.fields.index(name) for name in names)
        number = int(step) if problem is None else 0
        agreed = np.array([problem is None, number, -number, mask, -mask], dtype=np.int64)
        self._comm.Allreduce(MPI.IN_PLACE, agreed, op=MPI.MIN)
        if not agreed[0]:
            problems = self._comm.allgather(problem)
            first = next(r for r, message in enumerate(problems) if message is not None)
            raise ValueError(f"TransitWriter.write on rank {first}: {problems[first]}")
        if agreed[1] != -agreed[2] or agreed[3] != -agreed[4]:
            raise ValueError(
                f"TransitWriter.write needs the same step and field names on every rank; "
                f"steps range from {agreed[1]} to {-agreed[2]}"
            )
        if self._last_step is not None and number <= self._last_step:
            raise ValueError(
                f"steps must increase: got {number} after {self._last_step} was written"
            )
        checked = clock.perf_counter()
        if self.is_aggregator:
            transfer, put, end_step = self._write_group(
                number, float(time), names, fields, pipelines
            )
        else:
            transfer, put, end_step = self._send_pieces(names, fields), 0.0, 0.0
        self._last_step = number
        self.timings.append(WriteTiming(number, checked - started, transfer, put, end_step))

    def _input_problem(self, step, time, fields, pipelines) -> str | None:
        if isinstance(step, bool) or not isinstance(step, Integral):
            return f"step must be an integer, got {step!r}"
        if isinstance(time, bool) or not isinstance(time, Real) or not math.isfinite(time):
            return f"time must be a finite number, got {time!r}"
        if not isinstance(fields, Mapping):
            return f"fields must map field names to arrays, got {type(fields).__name__}"
        unknown = [name for name in fields if name not in self.fields]
        if unknown:
            return f"unknown fields {unknown}; this writer sends {list(self.fields)}"
        shape = self._pencils[self._rank].shape
        for name, piece in fields.items():
            if not isinstance(piece, np.ndarray) or piece.shape != shape:
                return (
                    f"field {name!r} must be this rank's {self.orientation}-pencil piece, an "
                    f"array of shape {shape}; got {getattr(piece, 'shape', type(piece))}"
                )
            if piece.dtype != self.dtype:
                return f"field {name!r} must hold {self.dtype} values, got {piece.dtype}"
        if isinstance(pipelines, str) or not all(isinstance(p, str) for p in pipelines):
            return f"pipelines must be a sequence of names, got {pipelines!r}"
        return None

    def _send_pieces(self, names, fields) -> float:
        """A member's part: its pieces to the aggregator, in field order."""
        started = clock.perf_counter()
        if self._pencils[self._rank].size == 0:
            return 0.0
        for name in names:
            piece = fields[name]
            if not piece.flags.c_contiguous:
                if self._copy is None:
                    self._copy = np.empty(piece.shape, dtype=self.dtype)
                self._copy[...] = piece
                piece = self._copy
            self._comm.Send(piece, dest=self._aggregator_rank, tag=self.fields.index(name))
        return clock.perf_counter() - started

    def _slot(self, user: int, rank: int) -> np.ndarray:
        """The rotating buffer of the ``user``-th buffered piece, shaped as ``rank``'s piece."""
        index = user % self._slot_count
        while len(self._slots) <= index:
            self._slots.append(np.empty(self._slot_elements, dtype=self.dtype))
        shape = self._pencils[rank].shape
        return self._slots[index][: int(np.prod(shape))].reshape(shape)

    def _write_group(self, step, time, names, fields, pipelines) -> tuple[float, float, float]:
        """An aggregator's part: the group's pieces into one SST step."""
        import adios2.bindings as adios

        engine, variables, comm = self._engine, self._variables, self._comm
        started = clock.perf_counter()
        transfer = 0.0
        engine.BeginStep()
        engine.Put(variables["step"], np.array([step], dtype=np.int64), adios.Mode.Sync)
        engine.Put(variables["time"], np.array([time], dtype=np.float64), adios.Mode.Sync)
        content = {
            "writer_id": self.writer_id,
            "aggregators": self.aggregators,
            "group": self.group,
            "fields": list(names),
            "pipelines": list(pipelines),
        }
        engine.Put(variables["content"], json.dumps(content))
        pieces = [
            (name, rank)
            for name in names
            for rank in self._group_ranks
            if self._pencils[rank].size > 0
        ]
        # Pieces that pass through a buffer: the members' (received) and the aggregator's
        # own when strided (SST's Put reads memory as contiguous, whatever the strides).
        buffered = [
            (name, rank)
            for name, rank in pieces
            if rank != self._rank or not fields[name].flags.c_contiguous
        ]
        requests = {}

        def receive(user: int) -> None:
            name, rank = buffered[user]
            if rank != self._rank:
                buffer = self._slot(user, rank)
                requests[user] = comm.Irecv(buffer, source=rank, tag=self.fields.index(name))

        for user in range(min(self._slot_count, len(buffered))):
            receive(user)
        user = 0
        for name, rank in pieces:
            pencil = self._pencils[rank]
            variable = variables[name]
            variable.SetSelection([list(pencil.start), list(pencil.shape)])
            if (name, rank) == (buffered[user] if user < len(buffered) else None):
                data = self._slot(user, rank)
                if rank == self._rank:
                    data[...] = fields[name]
                else:
                    waiting = clock.perf_counter()
                    requests.pop(user).Wait()
                    transfer += clock.perf_counter() - waiting
                engine.Put(variable, data, adios.Mode.Sync)
                # This buffer is free again: the piece that rotates into it may come.
                if user + self._slot_count < len(buffered):
                    receive(user + self._slot_count)
                user += 1
            else:
                engine.Put(variable, fields[name], adios.Mode.Sync)
        ending = clock.perf_counter()
        engine.EndStep()
        end_step = clock.perf_counter() - ending
        return transfer, ending - started - transfer, end_step

    # -- closing ------------------------------------------------------------------------

    def _release_stream(self) -> None:
        # SST's queue and buffers go with the ADIOS object, not at interpreter exit.
        self._close_sst()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def close(self) -> None:
        """End the streams (readers see their end) and free the communicator (collective).

        Waits until attached readers have released the steps they were sent.
        """
        if self._comm is None:
            return
        self._release_stream()
        self._comm.Free()
        self._comm = None

    def __enter__(self) -> TransitWriter:
        return self

    def __exit__(self, *exception) -> None:
        self.close()


def read_manifest(run_dir) -> dict | None:
    """The manifest of ``run_dir``'s transit streams, or None when there is none (yet)."""
    try:
        manifest = json.loads((transit_folder(run_dir) / MANIFEST).read_text())
    except (FileNotFoundError, ValueError):
        return None
    return manifest if manifest.get("format") == FORMAT else None


class _ReaderStream:
    """One attached SST stream of a reader."""

    def __init__(self, adios, path: Path, name: str):
        import adios2.bindings as bindings

        self.path = path
        self.name = name
        self.io = adios.DeclareIO(name)
        self.io.SetEngine("SST")
        self.io.SetParameters(
            {
                "OpenTimeoutSecs": str(OPEN_TIMEOUT_SECONDS),
                "SpeculativePreloadMode": "OFF",
                **TRANSPORT_PARAMETERS,
            }
        )
        self.engine = self.io.Open(str(path), bindings.Mode.Read)
        self.held: int | None = None  # writer step index of the step begun, if any

    def value(self, name: str, dtype):
        import adios2.bindings as bindings

        value = np.zeros(1, dtype=dtype)
        self.engine.Get(self.io.InquireVariable(name), value, bindings.Mode.Sync)
        return value[0]

    def content(self) -> dict:
        import adios2.bindings as bindings

        return json.loads(self.engine.Get(self.io.InquireVariable("content"), bindings.Mode.Sync))

    def release(self) -> None:
        if self.held is not None:
            self.engine.EndStep()
            self.held = None

    def drain(self) -> bool:
        """Release every step that is ready now; False when the stream has ended."""
        import adios2.bindings as bindings

        while (status := self.engine.BeginStep(bindings.StepMode.Read, 0.0)) == (
            bindings.StepStatus.OK
        ):
            self.engine.EndStep()
        return status == bindings.StepStatus.NotReady


class TransitReader:
    """Attached to the transit streams of a run; yields whole fields step by step.

    Parameters
    ----------
    run_dir : path
        Output folder of the run (which may not have started yet).
    timeout : float, optional
        Seconds to wait for a live writer when attaching and for each next step; None
        waits as long as it takes. Attaching completes at the writer's next step after
        the wait, whatever the timeout.

    Raises
    ------
    TimeoutError
        No live writer within ``timeout``.

    Notes
    -----
    Not MPI: one process. Iterating yields ``(step, time, fields)`` with ``fields`` a dict
    of global arrays (fresh ones every step) and ends when the run closes its streams or
    dies (see :attr:`end_status`). :attr:`pipelines` names the pipelines due at the step
    last returned. :meth:`close` detaches; the run goes on, and a new reader may attach.
    """

    def __init__(self, run_dir, timeout: float | None = None):
        import adios2.bindings as bindings

        if not isinstance(run_dir, str | os.PathLike):
            raise TypeError(f"run_dir must be a path, got {run_dir!r}")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, Real) or not timeout > 0
        ):
            raise ValueError(
                f"timeout must be a positive number of seconds or None, got {timeout!r}"
            )
        self.run_dir = Path(run_dir)
        self.timeout = None if timeout is None else float(timeout)
        self.manifest: dict = {}
        self.pipelines: tuple[str, ...] = ()
        self.skipped = 0
        #: None while the run goes on; "end of stream" after it closed, "writer lost" if
        #: it died.
        self.end_status: str | None = None
        self._adios = bindings.ADIOS()
        self._opened = 0
        self._streams: list[_ReaderStream] = []
        self._attach()

    @property
    def fields(self) -> tuple[str, ...]:
        """Names of the fields the writer may send."""
        return tuple(self.manifest["fields"])

    @property
    def global_shape(self) -> tuple[int, int, int]:
        """Cells along x, y, z."""
        return tuple(self.manifest["global_shape"])

    def _deadline(self) -> float | None:
        return None if self.timeout is None else clock.monotonic() + self.timeout

    def _attach(self) -> None:
        deadline = self._deadline()
        folder = transit_folder(self.run_dir)
        while True:
            manifest = read_manifest(self.run_dir)
            if manifest is None:
                waiting = f"no {MANIFEST} yet"
            else:
                paths = [folder / name for name in manifest["streams"]]
                identities = [_cmanager_id(_contact_path(path)) for path in paths]
                if any(writer_alive(path) is False for path in paths):
                    waiting = "no live writer (the run has not started or has ended)"
                elif _clashing(identities):
                    # Opening both would route one writer's messages to the other, which
                    # would crash it. The writer avoids this; a stale pair can still meet.
                    waiting = "two streams share an EVPath CManager ID"
                else:
                    problem = self._open_all(paths, manifest["queue_full_policy"] == "Block")
                    # A new run writes its manifest once its streams are open: one that
                    # changed meanwhile means these streams may belong to another run.
                    if problem is None and read_manifest(self.run_dir) != manifest:
                        self._detach()
                        problem = "the run was restarted while attaching"
                    if problem is None:
                        self.manifest = manifest
                        return
                    waiting = problem
            if deadline is not None and clock.monotonic() >= deadline:
                raise TimeoutError(
                    f"no transit stream to attach to in {folder} after {self.timeout:g} s: "
                    f"{waiting}"
                )
            clock.sleep(ATTACH_POLL)

    def _open_all(self, paths, blocking: bool) -> str | None:
        """Open every stream; on failure close those opened and say why.

        ``blocking``: the writer's queue full policy is Block.
        """
        # A reader that dies between registering with a writer and that writer's next
        # step leaves the writer a dangling connection, which crashes it (TCP control) or
        # hangs it (ENet) at that step. Termination signals wait until attaching is over.
        deferred = {signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGINT}
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, deferred)
        try:
            for path in paths:
                self._opened += 1
                try:
                    stream = _ReaderStream(self._adios, path, f"transit-reader-{self._opened}")
                except RuntimeError as error:
                    self._detach()
                    return f"cannot open {path}: {_reason(error)}"
                self._streams.append(stream)
                if not blocking or len(self._streams) == len(paths):
                    continue
                # Each open lasts until its writer's next step or two, while the streams
                # opened before fill their queues; with Block a full queue would stop the
                # run before the next open could complete. Nothing has been read yet:
                # empty them (their reserved steps go too).
                for opened in self._streams:
                    if not opened.drain():
                        self._detach()
                        return f"{opened.path} ended while attaching"
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        return None

    def _begin(self, stream: _ReaderStream, deadline) -> bool:
        """Begin the stream's next step; False when the stream has ended."""
        import adios2.bindings as bindings

        while True:
            wait = BEGIN_STEP_SLICE
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - clock.monotonic()))
            status = stream.engine.BeginStep(bindings.StepMode.Read, wait)
            if status == bindings.StepStatus.OK:
                stream.held = stream.engine.CurrentStep()
                return True
            if status != bindings.StepStatus.NotReady:
                ended = status == bindings.StepStatus.EndOfStream
                self.end_status = "end of stream" if ended else "writer lost"
                return False
            if deadline is not None and clock.monotonic() >= deadline:
                raise TimeoutError(f"no new step from {stream.path} in {self.timeout:g} s")

    def read(self):
        """The next step every stream delivered: ``(step, time, fields)``, or None at the end.

        Raises TimeoutError when no step came within ``timeout``; the steps already begun
        are kept, so calling again goes on from there.
        """
        if self.end_status is not None or not self._streams:
            return None
        deadline = self._deadline()
        released = set()
        while True:
            for stream in self._streams:
                if stream.held is None and not self._begin(stream, deadline):
                    for other in self._streams:
                        other.release()
                    return None
            target = max(stream.held for stream in self._streams)
            behind = [stream for stream in self._streams if stream.held < target]
            if not behind:
                break
            for stream in behind:
                released.add(stream.held)
                stream.release()
        self.skipped += len(released)
        return self._assemble(target)

    def _assemble(self, index: int):
        import adios2.bindings as bindings

        contents = [stream.content() for stream in self._streams]
        steps = {int(stream.value("step", np.int64)) for stream in self._streams}
        writers = {content["writer_id"] for content in contents}
        if len(steps) != 1 or len(writers) != 1 or writers != {self.manifest["writer_id"]}:
            raise RuntimeError(
                f"the streams of {transit_folder(self.run_dir)} disagree at writer step "
                f"{index} (steps {sorted(steps)}, writers {sorted(writers)}); the run was "
                "restarted while attaching: attach again"
            )
        first = self._streams[0]
        step, time = steps.pop(), float(first.value("time", np.float64))
        names = contents[0]["fields"]
        dtype = np.dtype(self.manifest["dtype"])
        fields = {name: np.empty(self.global_shape, dtype=dtype) for name in names}
        covered = dict.fromkeys(names, 0)
        copies = []
        for stream in self._streams:
            for name in names:
                blocks = stream.engine.BlocksInfo(name, index)
                if not blocks:  # every piece of this group is empty
                    continue
                variable = stream.io.InquireVariable(name)
                for block in blocks:
                    start = [int(n) for n in block["Start"].split(",")]
                    count = [int(n) for n in block["Count"].split(",")]
                    target = fields[name][
                        tuple(slice(a, a + n) for a, n in zip(start, count, strict=True))
                    ]
                    variable.SetSelection([start, count])
                    if not target.flags.c_contiguous:
                        copies.append((target, np.empty(count, dtype=dtype)))
                        target = copies[-1][1]
                    stream.engine.Get(variable, target, bindings.Mode.Deferred)
                    covered[name] += target.size
        for stream in self._streams:
            stream.engine.PerformGets()
        for target, received in copies:
            target[...] = received
        for stream in self._streams:
            stream.release()
        size = int(np.prod(self.global_shape))
        missing = [name for name, cells in covered.items() if cells != size]
        if missing:
            raise RuntimeError(
                f"writer step {index} of {transit_folder(self.run_dir)} does not cover the "
                f"grid for {missing}"
            )
        self.pipelines = tuple(contents[0]["pipelines"])
        return step, time, fields

    def __iter__(self):
        while (item := self.read()) is not None:
            yield item

    def _detach(self) -> None:
        for stream in self._streams:
            if self.end_status != "writer lost":
                stream.release()
            stream.engine.Close()
            self._adios.RemoveIO(stream.name)
        self._streams = []

    def close(self) -> None:
        """Detach from the run's streams; the run goes on."""
        self._detach()

    def __enter__(self) -> TransitReader:
        return self

    def __exit__(self, *exception) -> None:
        self.close()
