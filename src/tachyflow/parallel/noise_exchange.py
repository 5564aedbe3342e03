"""FW-H noise sources of surface points from the flow ranks that own their stencils (Kwon,
Park & Choi).

Every surface point needs the 8 values of each of u, v, w and p around it (trilinear
interpolation, :mod:`tachyflow.numerics.interpolation`); they live on the ranks that own
those y-pencil columns, while the point's panel is integrated on its *destination* rank.
:class:`NoiseSourceExchange` moves what is needed, in one of four ways:

``"two-sided"``
    One ``Isend``/``Irecv`` per point and stencil owner, carrying that owner's raw stencil
    values (at most 32 doubles); the destination interpolates and forms the source terms.
``"put"`` (Kwon, Park & Choi's Type A)
    The same raw values, one ``MPI_Put`` per point and owner into a window on the
    destination.
``"aggregated-put"`` (Type B)
    Everything bound for one target packed into one buffer and put once.
``"source-put"`` (Type C)
    The rank owning the cell that contains the point holds its whole stencil within its
    ghost layer of width 1 (every stencil index is within one cell of that cell, for every
    staggering); it interpolates and forms the 4 source terms ``[U_n, L_x, L_y, L_z]``
    itself and puts only those, aggregated per target: 4 doubles per point instead of 32.

Only the ranks that own stencil cells or are destinations take part: they form the
surface communicator (Kwon, Park & Choi's ``MPI_COMM_SURF``), split from the decomposition's; the
others hold ``COMM_NULL`` and return at once. The plan — which values each rank packs in
which order, to whom, at which window offset, and where each received value goes — is a
function of the points, normals and destinations, which every rank holds, so every rank
builds it alone, once, with no communication beyond a check that those inputs agree.
Messages carry no headers: both sides enumerate the same items in the same order.

Synchronisation of the one-sided methods (``sync``), and why each is correct:

``"lock"`` (passive target)
    Origins ``Lock(shared)`` each target, put, ``Unlock``: on return from ``Unlock`` the
    puts are complete at the target. A barrier over the surface communicator then tells
    every target that all its origins have unlocked, and the target reads its window inside
    a shared lock of its own window (which makes the window memory the puts wrote visible
    to its loads, as the MPI standard's examples of this pattern do). Nothing stops an
    origin from starting the *next* exchange while a slow target is still reading, so the
    window is double-buffered: exchange ``k`` writes half ``k mod 2``. An origin can only
    reach exchange ``k + 2`` (the same half again) after the barrier of ``k + 1``, which
    the target enters after reading ``k``: one barrier per exchange suffices.
``"fence"``
    ``Fence`` opens the epoch, puts, ``Fence`` closes it, then targets read. A put issued
    after the opening fence reaches a target only once that target called the fence, which
    it does after reading the previous exchange's data: one buffer suffices.
``"pscw"``
    Each rank ``Post``\\ s an exposure epoch to the group of ranks that put to it and
    ``Start``\\ s an access epoch to the group it puts to (all post before any start, so
    no cycle of waits), puts, ``Complete``, ``Wait``, then reads. An origin's puts of the
    next exchange wait for the target's next ``Post``, which follows its reading.

Values a rank owns for its own points are copied locally and never pass through MPI. All
methods interpolate the same values with the same weights, in the same order and with the
same arithmetic (the ``sources`` object's ``from_values`` where raw values arrive,
``from_fields`` where they are read in place), so they give bitwise-identical results.

``method="auto"`` and ``sync="auto"``: the measured fastest, :data:`AUTO_METHOD` with
:data:`AUTO_SYNC`. Evidence: ``tachyflow bench noise-exchange --points 20000`` (20,184
points on a sphere, 64³ periodic grid, contiguous panel shares; MPICH 5.0.2 ch4:ucx, AMD
EPYC, 2 cores shared with other work, 1-minute load 0.6-0.9 before each launch), 4
launches of 30 interleaved samples per rank count; the median over launches of each
launch's median exchange time of the slowest rank, in ms:

================== ========= ========= ========= ==================================
variant            lock      fence     pscw      messages sent per rank (bytes)
================== ========= ========= ========= ==================================
two-sided, 2 ranks 25.1                          5412 / 5104 (246 B each)
put (A)            6.44      5.89      5.80      5412 / 5104 (246 B each)
aggregated-put (B) 2.10      2.05      1.96      1 / 1 (1.27 MiB)
source-put (C)     1.08      0.93      **0.81**  1 / 1 (158 KiB)
two-sided, 3 ranks 145                           2136 / 5844 / 4028
put (A)            11.5      8.43      8.22      2136 / 5844 / 4028
aggregated-put (B) 2.95      2.84      2.87      2 / 2 / 2
source-put (C)     1.59      1.21      **1.10**  2 / 1 / 2
================== ========= ========= ========= ==================================

``source-put``/``pscw`` was the fastest in every launch at both rank counts (3 ranks
oversubscribe the 2 cores; two-sided suffers most from that). With PSCW, B is 2.96×
(2 ranks) and 2.87× (3 ranks) faster than A, and C 2.41× and 2.62× faster than B (the
seed: 1.74× and 2.97×). By the medians, lock is the slowest synchronisation of every
one-sided method, PSCW the fastest but for aggregated-put at 3 ranks (fence, by 1 %).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import numpy as np
from mpi4py import MPI

from tachyflow.numerics.grid import StaggeredGrid
from tachyflow.numerics.interpolation import (
    CORNER_OFFSETS,
    CORNERS,
    QUANTITIES,
    check_points,
    ghosted_flat_indices,
    interpolation_stencils,
    take_values,
)
from tachyflow.parallel.agreement import collectively
from tachyflow.parallel.halo import HaloExchange
from tachyflow.parallel.pencil import PencilDecomposition

METHODS = ("two-sided", "put", "aggregated-put", "source-put")
SYNC_MODES = ("lock", "fence", "pscw")
AUTO_METHOD = "source-put"
AUTO_SYNC = "pscw"
PHASES = ("pack", "communication", "unpack", "source")
SOURCE_TERMS = 4  # U_n, L_x, L_y, L_z
STENCIL_VALUES = len(QUANTITIES) * CORNERS  # raw values per point
_TAG = 61  # point-to-point tag of the two-sided method
_UNIT_NORMAL_TOLERANCE = 1e-6


@dataclass(frozen=True)
class _Runs:
    """Contiguous runs of a buffer (in items) and the peer each goes to or comes from.

    ``displacements`` are item offsets in the peer's window (outgoing runs only).
    """

    peers: np.ndarray
    starts: np.ndarray
    stops: np.ndarray
    displacements: np.ndarray | None = None

    def __len__(self) -> int:
        return self.peers.size


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and stops of the runs of equal consecutive ``keys``."""
    if keys.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    return np.concatenate(([0], change)), np.concatenate((change, [keys.size]))


@dataclass(frozen=True)
class _Route:
    """Who sends which items where, seen from one rank (all ids are item ids).

    ``outgoing``: items this rank owns for other ranks, sorted by (target, id);
    ``incoming``: items other ranks own for this rank, sorted by (origin, id), which is
    also their order in this rank's window or receive buffer; ``local``: items owned by
    and bound for this rank. Runs are per peer and per (peer, point). ``window_items``:
    how many items each rank receives from the others (the size of its window).
    """

    outgoing: np.ndarray
    incoming: np.ndarray
    local: np.ndarray
    targets: _Runs
    origins: _Runs
    target_points: _Runs
    origin_points: _Runs
    window_items: np.ndarray


def _route(owner, destination, point, me: int, size: int) -> _Route:
    """The route of items with these owners, destinations and points, for rank ``me``.

    A target lays its window out by origin (ascending), each origin's region in item id
    order; an origin finds its region's offset by counting the remote items bound for the
    same target from lower-numbered origins, from data every rank holds.
    """
    ids = np.arange(owner.size)
    remote = owner != destination
    mask = remote & (owner == me)
    outgoing = ids[mask][np.lexsort((ids[mask], destination[mask]))]
    mask = remote & (destination == me)
    incoming = ids[mask][np.lexsort((ids[mask], owner[mask]))]
    local = ids[(owner == me) & (destination == me)]
    before_me = remote & (owner < me)
    region = np.bincount(destination[before_me], minlength=size)

    def outgoing_runs(keys):
        starts, stops = _runs(keys)
        targets = destination[outgoing[starts]] if starts.size else starts
        first = np.searchsorted(destination[outgoing], targets)  # start of each target
        return _Runs(targets, starts, stops, region[targets] + starts - first)

    def incoming_runs(keys):
        starts, stops = _runs(keys)
        return _Runs(owner[incoming[starts]] if starts.size else starts, starts, stops)

    n_points = int(point.max(initial=0)) + 1
    return _Route(
        outgoing,
        incoming,
        local,
        outgoing_runs(destination[outgoing]),
        incoming_runs(owner[incoming]),
        outgoing_runs(destination[outgoing] * n_points + point[outgoing]),
        incoming_runs(owner[incoming] * n_points + point[incoming]),
        np.bincount(destination[remote], minlength=size),
    )


class NoiseSourceExchange:
    """FW-H source terms of surface points, gathered from the ranks owning the flow.

    Parameters
    ----------
    decomposition : PencilDecomposition
        The flow's decomposition; its global shape and periodicity must match ``grid``.
    grid : StaggeredGrid
        The flow's grid.
    halo : HaloExchange
        The halo of the flow's ghosted y-pencils (width at least 1; with corners for
        ``"source-put"``, whose stencils reach diagonal ghosts).
    points : array_like, shape (n, 3)
        Surface points (panel centres); with walls in y, between the first and last cell
        centres. Identical on every rank.
    normals : array_like, shape (n, 3)
        Unit normals of the points' panels. Identical on every rank.
    destination : array_like of int, shape (n,)
        Rank (of ``decomposition.comm``) that integrates each point's panel, e.g. from
        :func:`tachyflow.parallel.pieces.panel_share`. Identical on every rank.
    method : {"auto", "two-sided", "put", "aggregated-put", "source-put"}
        How values travel (see the module notes); ``"auto"`` is :data:`AUTO_METHOD`.
    sync : {"lock", "fence", "pscw", "auto"}
        Synchronisation of the one-sided methods; ``"auto"`` is :data:`AUTO_SYNC`.
        Ignored by ``"two-sided"``.
    sources : object
        What turns stencils into source terms where the values are (keyword only): an
        object with ``from_values(values, weights, normals)`` and ``from_fields(fields,
        flat, weights, normals, out)``, such as
        :class:`tachyflow.acoustics.sources.PermeableSourceTerms`. This layer only moves
        the data it needs.

    Attributes
    ----------
    mine : numpy.ndarray
        Global indices of the points whose destination is this rank, ascending: the rows
        of what :meth:`exchange` returns.
    timings : dict
        Seconds of the last exchange on this rank: ``pack`` (copying values into send
        buffers), ``communication`` (messages or puts and their synchronisation),
        ``unpack`` (copying received values out) and ``source`` (interpolation and source
        terms).
    statistics : dict
        The plan's traffic on this rank: ``messages_sent``/``messages_received``,
        ``bytes_sent``/``bytes_received``, peers, and ``local_values`` (values copied
        without MPI).

    Raises
    ------
    ValueError, TypeError
        Unknown method or sync, grid and decomposition that do not match, a halo of
        another decomposition or orientation, points/normals/destination of wrong shapes or
        values (normals not unit, destinations out of range, points outside the walls), or
        inputs that differ between ranks. Raised on every rank alike.

    Notes
    -----
    Construction, :meth:`update` and :meth:`free` are collective over
    ``decomposition.comm``; :meth:`exchange` and :meth:`stencil_values` over the surface
    communicator (other ranks return at once).
    """

    def __init__(
        self,
        decomposition: PencilDecomposition,
        grid: StaggeredGrid,
        halo: HaloExchange,
        points,
        normals,
        destination,
        method: str = "auto",
        sync: str = "auto",
        *,
        sources,
    ):
        self.decomposition = decomposition
        self.grid = grid
        self.halo = halo
        self._surface_comm = MPI.COMM_NULL
        self._window = None
        self._groups: list = []
        with collectively(decomposition.comm, (ValueError, TypeError)):
            self.method, self.sync = _check_method(method, sync)
            self.sources = _check_sources(sources)
            self._check_geometry()
        self._owner_table = _owner_table(decomposition)
        self.timings = dict.fromkeys(PHASES, 0.0)
        self._build(points, normals, destination)

    # -- set-up --------------------------------------------------------------------------------

    def _check_geometry(self) -> None:
        decomposition, grid, halo = self.decomposition, self.grid, self.halo
        if tuple(decomposition.global_shape) != tuple(grid.shape):
            raise ValueError(
                f"decomposition of {decomposition.global_shape} cells but the grid has "
                f"{tuple(grid.shape)}"
            )
        expected = (getattr(grid, "periodic_x", True), grid.periodic_y, True)
        if tuple(decomposition.periodic) != expected:
            raise ValueError(
                f"decomposition periodic in (x, y, z) = {decomposition.periodic}, the grid "
                f"needs {expected}"
            )
        if not isinstance(halo, HaloExchange):
            raise TypeError(f"halo must be a HaloExchange, got {type(halo).__name__}")
        if halo.decomposition is not decomposition or halo.orientation != "y":
            raise ValueError("halo must be a y-pencil HaloExchange of the same decomposition")
        if self.method == "source-put" and not halo.corners:
            raise ValueError(
                "method 'source-put' reads diagonal ghosts: the halo needs corners=True"
            )

    def _checked_surface(self, points, normals, destination):
        points = check_points(points)
        n = points.shape[0]
        normals = np.ascontiguousarray(normals, dtype=np.float64)
        if normals.shape != (n, 3):
            raise ValueError(f"normals must have shape ({n}, 3) like points, got {normals.shape}")
        if not np.all(np.isfinite(normals)):
            raise ValueError("normals must be finite")
        error = np.abs(np.linalg.norm(normals, axis=1) - 1.0).max(initial=0.0)
        if error > _UNIT_NORMAL_TOLERANCE:
            raise ValueError(f"normals must be unit vectors, got |n| off by {error:.3g}")
        destination = np.asarray(destination)
        if destination.shape != (n,):
            raise ValueError(
                f"destination must have shape ({n},) like points, got {destination.shape}"
            )
        if n and destination.dtype.kind not in "iu":
            raise TypeError(f"destination must hold integer ranks, got {destination.dtype}")
        destination = destination.astype(np.int64)
        size = self.decomposition.size
        bad = np.flatnonzero((destination < 0) | (destination >= size))
        if bad.size:
            raise ValueError(
                f"destination of point {bad[0]} is rank {destination[bad[0]]}, outside "
                f"0..{size - 1} ({bad.size} point(s) are)"
            )
        return points, normals, destination

    def _build(self, points, normals, destination) -> None:
        """Check the surface on every rank, then plan (collective over the decomposition)."""
        comm = self.decomposition.comm
        with collectively(comm, (ValueError, TypeError)):
            points, normals, destination = self._checked_surface(points, normals, destination)
            stencils = interpolation_stencils(self.grid, points)
            hasher = hashlib.blake2b(digest_size=8)
            for array in (points, normals, destination):
                hasher.update(array.tobytes())
            digest = int.from_bytes(hasher.digest(), "little") >> 1  # fits an int64
        extremes = np.array([digest, -digest], dtype=np.int64)
        comm.Allreduce(MPI.IN_PLACE, extremes, op=MPI.MIN)
        if extremes[0] != -extremes[1]:
            raise ValueError(
                "points, normals and destination must be identical on every rank; they differ"
            )
        self.points, self.normals, self.destination = points, normals, destination
        me, size = self.decomposition.rank, self.decomposition.size
        entry_owner = self._owner_table[stencils.indices[..., 0], stencils.indices[..., 2]]
        cell_owner = self._owner_table[stencils.cells[:, 0], stencils.cells[:, 2]]
        involved = np.zeros(size, dtype=bool)
        involved[entry_owner.ravel()] = True
        involved[destination] = True
        self.surface_ranks = np.flatnonzero(involved)
        self._surface_comm = comm.Split(0 if involved[me] else MPI.UNDEFINED, me)
        self.mine = np.flatnonzero(destination == me)
        self.timings = dict.fromkeys(PHASES, 0.0)
        if self._surface_comm == MPI.COMM_NULL:
            self.statistics = _statistics(0, 0, 0, 0, 0, 0, 0)
            return
        surface_rank = np.cumsum(involved) - 1  # world rank -> rank in the surface comm
        self._me = int(surface_rank[me])
        row_of_point = np.full(points.shape[0], -1, dtype=np.int64)
        row_of_point[self.mine] = np.arange(self.mine.size)
        if self.method == "source-put":
            route = _route(cell_owner, destination, np.arange(points.shape[0]), me, size)
            self._plan_sources(route, stencils, row_of_point)
            width = SOURCE_TERMS
        else:
            entries = np.arange(entry_owner.size)
            point = entries // STENCIL_VALUES
            route = _route(entry_owner.ravel(), destination[point], point, me, size)
            self._plan_values(route, stencils, row_of_point)
            width = 1
        aggregated = self.method in ("aggregated-put", "source-put")
        sends = route.targets if aggregated else route.target_points
        receives = route.origins if aggregated else route.origin_points
        self._incoming_size = route.incoming.size * width
        self._parity = 0
        self.statistics = _statistics(
            len(sends),
            len(receives),
            route.outgoing.size * width * 8,
            route.incoming.size * width * 8,
            len(route.targets),
            len(route.origins),
            route.local.size * width,
        )
        # Views of each run, made once: (buffer, peer's surface rank, window displacement,
        # size of the peer's window, which the lock mode's second buffer follows).
        halves = route.window_items * width
        self._views = [
            (
                self._send_buffer[a * width : b * width],
                int(surface_rank[peer]),
                int(d * width),
                int(halves[peer]),
            )
            for peer, a, b, d in zip(
                sends.peers, sends.starts, sends.stops, sends.displacements, strict=True
            )
        ]
        if self.method == "two-sided":
            self._receive_buffer = np.empty(self._incoming_size)
            self._receive_views = [
                (self._receive_buffer[a * width : b * width], int(surface_rank[peer]))
                for peer, a, b in zip(receives.peers, receives.starts, receives.stops, strict=True)
            ]
        else:
            self._allocate_window(
                surface_rank[route.targets.peers], surface_rank[route.origins.peers]
            )

    def _plan_values(self, route: _Route, stencils, row_of_point) -> None:
        """Pack and unpack indices of the raw-value methods (items: stencil entries)."""
        start = self.decomposition.local_start("y")
        shape, width = self.halo.shape, self.halo.width
        indices = stencils.indices.reshape(-1, 3)

        def packing(entries):
            quantity = (entries % STENCIL_VALUES) // CORNERS
            flat = ghosted_flat_indices(indices[entries], start, shape, width)
            return quantity.astype(np.int64), flat

        def position(entries):
            point, slot = np.divmod(entries, STENCIL_VALUES)
            return row_of_point[point] * STENCIL_VALUES + slot

        self._send_quantity, self._send_flat = packing(route.outgoing)
        self._local_quantity, self._local_flat = packing(route.local)
        self._local_positions = position(route.local)
        self._unpack_positions = position(route.incoming)
        self._send_buffer = np.empty(route.outgoing.size)
        self._local_buffer = np.empty(route.local.size)
        self._values = np.empty((self.mine.size, len(QUANTITIES), CORNERS))
        self._weights = np.ascontiguousarray(stencils.weights[self.mine])
        self._mine_normals = np.ascontiguousarray(self.normals[self.mine])

    def _plan_sources(self, route: _Route, stencils, row_of_point) -> None:
        """Indices of the source-put method (items: points). This rank computes the points
        of its cells, outgoing ones first (by target), then its own."""
        computed = np.concatenate((route.outgoing, route.local))
        corners = stencils.lower[computed][:, :, None, :] + CORNER_OFFSETS
        start = self.decomposition.local_start("y")
        flat = ghosted_flat_indices(corners, start, self.halo.shape, self.halo.width)
        self._compute_flat = np.ascontiguousarray(flat)
        self._weights = np.ascontiguousarray(stencils.weights[computed])
        self._compute_normals = np.ascontiguousarray(self.normals[computed])
        self._local_rows = np.arange(route.outgoing.size, computed.size)
        self._local_positions = row_of_point[route.local]
        self._unpack_positions = row_of_point[route.incoming]
        # The computed terms are the send buffer: outgoing rows come first, by target.
        self._terms = np.empty((computed.size, SOURCE_TERMS))
        self._send_buffer = self._terms.reshape(-1)

    def _allocate_window(self, targets, origins) -> None:
        """The window (collective over the surface communicator) and the PSCW groups."""
        doubles = self._incoming_size * (2 if self.sync == "lock" else 1)
        info = MPI.INFO_NULL
        if self.sync != "lock":
            info = MPI.Info.Create()
            info.Set("no_locks", "true")  # lets the library skip lock bookkeeping
        self._window = MPI.Win.Allocate(max(doubles, 1) * 8, 8, info=info, comm=self._surface_comm)
        if info != MPI.INFO_NULL:
            info.Free()
        self._window_memory = np.frombuffer(self._window.tomemory(), dtype=np.float64)
        self._targets = [int(peer) for peer in targets]
        if self.sync == "pscw":
            group = self._surface_comm.Get_group()
            self._target_group = group.Incl(self._targets) if self._targets else None
            self._origin_group = group.Incl([int(p) for p in origins]) if len(origins) else None
            self._groups = [g for g in (self._target_group, self._origin_group) if g is not None]
            group.Free()

    # -- exchange ----------------------------------------------------------------------------

    def _flat_fields(self, u, v, w, p):
        flat = []
        for name, field in zip(QUANTITIES, (u, v, w, p), strict=True):
            if not isinstance(field, np.ndarray) or field.dtype != np.float64:
                raise TypeError(f"{name} must be a float64 numpy array")
            if field.shape != self.halo.shape or not field.flags.c_contiguous:
                raise ValueError(
                    f"{name} must be a C-contiguous ghosted y-pencil of shape "
                    f"{self.halo.shape}, got shape {field.shape}"
                )
            flat.append(field.reshape(-1))
        return flat

    def exchange(self, u, v, w, p) -> np.ndarray:
        """Source terms ``[U_n, L_x, L_y, L_z]`` of this rank's points (collective over the
        surface communicator).

        Parameters
        ----------
        u, v, w, p : numpy.ndarray
            The flow's ghosted y-pencils (shape ``halo.shape``, float64, C-ordered) with
            current ghosts: as an ``IncompressibleSolver`` leaves them after a step.

        Returns
        -------
        numpy.ndarray, shape (len(mine), 4)
            One row per point of :attr:`mine`.
        """
        fields = self._flat_fields(u, v, w, p)
        if self._surface_comm == MPI.COMM_NULL:
            return np.empty((0, SOURCE_TERMS))
        if self.method == "source-put":
            return self._exchange_sources(fields)
        values = self._gather_values(fields)
        started = time.perf_counter()
        result = self.sources.from_values(values, self._weights, self._mine_normals)
        self.timings["source"] = time.perf_counter() - started
        return result

    def stencil_values(self, u, v, w, p) -> np.ndarray:
        """The raw stencil values of this rank's points, as its destination receives them
        (collective over the surface communicator; raw-value methods only).

        Returns
        -------
        numpy.ndarray, shape (len(mine), 4, 8)
            Values of u, v, w, p at the corners of :attr:`mine`'s stencils.

        Raises
        ------
        ValueError
            With ``method="source-put"``, which moves no raw values.
        """
        if self.method == "source-put":
            raise ValueError("method 'source-put' moves source terms, not stencil values")
        fields = self._flat_fields(u, v, w, p)
        if self._surface_comm == MPI.COMM_NULL:
            return np.empty((0, len(QUANTITIES), CORNERS))
        return self._gather_values(fields).copy()

    def _gather_values(self, fields) -> np.ndarray:
        """This rank's stencil values (a buffer reused by the next exchange)."""
        started = time.perf_counter()
        take_values(*fields, self._send_quantity, self._send_flat, self._send_buffer)
        take_values(*fields, self._local_quantity, self._local_flat, self._local_buffer)
        values = self._values
        flat = values.reshape(-1)
        flat[self._local_positions] = self._local_buffer
        packed = time.perf_counter()
        incoming = self._communicate()
        communicated = time.perf_counter()
        flat[self._unpack_positions] = incoming
        unpacked = time.perf_counter()
        self._finish_reading()
        self.timings.update(
            pack=packed - started,
            communication=communicated - packed + time.perf_counter() - unpacked,
            unpack=unpacked - communicated,
            source=0.0,
        )
        return values

    def _exchange_sources(self, fields) -> np.ndarray:
        started = time.perf_counter()
        self.sources.from_fields(
            fields, self._compute_flat, self._weights, self._compute_normals, self._terms
        )
        computed = time.perf_counter()
        incoming = self._communicate()
        communicated = time.perf_counter()
        result = np.empty((self.mine.size, SOURCE_TERMS))
        result[self._local_positions] = self._terms[self._local_rows]
        result[self._unpack_positions] = incoming.reshape(-1, SOURCE_TERMS)
        unpacked = time.perf_counter()
        self._finish_reading()
        self.timings.update(
            pack=0.0,
            communication=communicated - computed + time.perf_counter() - unpacked,
            unpack=unpacked - communicated,
            source=computed - started,
        )
        return result

    def _communicate(self) -> np.ndarray:
        """Move the send buffer's runs; return the incoming values (a view)."""
        if self.method == "two-sided":
            return self._send_receive()
        window, memory = self._window, self._window_memory
        if self.sync == "lock":
            parity = self._parity
            for target in self._targets:
                window.Lock(target, MPI.LOCK_SHARED)
            for buffer, target, displacement, half in self._views:
                window.Put(buffer, target, displacement + parity * half)
            for target in self._targets:
                window.Unlock(target)
            self._surface_comm.Barrier()
            # Reading inside a lock of our own window makes the puts visible to our loads.
            window.Lock(self._me, MPI.LOCK_SHARED)
            self._parity ^= 1
            offset = parity * self._incoming_size
            return memory[offset : offset + self._incoming_size]
        if self.sync == "fence":
            window.Fence(MPI.MODE_NOPRECEDE | MPI.MODE_NOSTORE)
            for buffer, target, displacement, _ in self._views:
                window.Put(buffer, target, displacement)
            window.Fence(MPI.MODE_NOSUCCEED | MPI.MODE_NOSTORE)
            return memory[: self._incoming_size]
        if self._origin_group is not None:
            window.Post(self._origin_group, MPI.MODE_NOSTORE)
        if self._target_group is not None:
            window.Start(self._target_group)
            for buffer, target, displacement, _ in self._views:
                window.Put(buffer, target, displacement)
            window.Complete()
        if self._origin_group is not None:
            window.Wait()
        return memory[: self._incoming_size]

    def _finish_reading(self) -> None:
        """End the read of the window that :meth:`_communicate` opened (lock mode); timed
        as communication, like the lock that opened it."""
        if self._window is not None and self.sync == "lock":
            self._window.Unlock(self._me)

    def _send_receive(self) -> np.ndarray:
        comm = self._surface_comm
        requests = [comm.Irecv(buffer, peer, _TAG) for buffer, peer in self._receive_views]
        requests += [comm.Isend(buffer, peer, _TAG) for buffer, peer, _, _ in self._views]
        MPI.Request.Waitall(requests)
        return self._receive_buffer

    # -- life cycle --------------------------------------------------------------------------

    def update(self, points, normals, destination) -> None:
        """Re-plan for moved or re-assigned points (collective over the decomposition).

        Takes the same arguments, with the same checks, as the constructor; the window
        and the surface communicator are rebuilt for the new set of ranks.
        """
        self._release()
        self._build(points, normals, destination)

    def _release(self) -> None:
        for group in self._groups:
            group.Free()
        self._groups = []
        if self._window is not None:
            self._window.Free()
            self._window = None
        if self._surface_comm != MPI.COMM_NULL:
            self._surface_comm.Free()
        self._surface_comm = MPI.COMM_NULL

    def free(self) -> None:
        """Release the window, groups and surface communicator (collective over the
        surface communicator; a no-op on other ranks and when called again)."""
        self._release()

    def __enter__(self) -> NoiseSourceExchange:
        return self

    def __exit__(self, *exc_info) -> None:
        self.free()

    def __repr__(self) -> str:
        return (
            f"NoiseSourceExchange({self.points.shape[0]} points, method={self.method!r}, "
            f"sync={self.sync!r}, {self.surface_ranks.size} of {self.decomposition.size} "
            "ranks in the surface communicator)"
        )


def _check_method(method, sync) -> tuple[str, str]:
    if method == "auto":
        method = AUTO_METHOD
    if method not in METHODS:
        raise ValueError(f"method must be 'auto' or one of {METHODS}, got {method!r}")
    if sync == "auto":
        sync = AUTO_SYNC
    if sync not in SYNC_MODES:
        raise ValueError(f"sync must be 'auto' or one of {SYNC_MODES}, got {sync!r}")
    return method, sync


def _check_sources(sources):
    """The source-term object the exchange applies (from the acoustics layer)."""
    if not (
        callable(getattr(sources, "from_values", None))
        and callable(getattr(sources, "from_fields", None))
    ):
        raise TypeError(
            "sources must have from_values() and from_fields() (e.g. "
            f"tachyflow.acoustics.sources.PermeableSourceTerms), got {type(sources).__name__}"
        )
    return sources


def _owner_table(decomposition: PencilDecomposition) -> np.ndarray:
    """Rank owning each (x, z) column of the y-pencils, shape (nx, nz)."""
    nx, _, nz = decomposition.global_shape
    table = np.full((nx, nz), -1, dtype=np.int64)
    for rank, pencil in enumerate(decomposition.all_pencils("y")):
        if pencil.size:
            table[pencil.start[0] : pencil.stop[0], pencil.start[2] : pencil.stop[2]] = rank
    return table


def _statistics(sent, received, bytes_sent, bytes_received, targets, origins, local) -> dict:
    return {
        "messages_sent": int(sent),
        "messages_received": int(received),
        "bytes_sent": int(bytes_sent),
        "bytes_received": int(bytes_received),
        "targets": int(targets),
        "origins": int(origins),
        "local_values": int(local),
    }
