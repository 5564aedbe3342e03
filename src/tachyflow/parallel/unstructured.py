"""Distribution of an unstructured cell graph over ranks, and its halo exchange (Jeon & Choi).

Rank 0 holds the global graph (the cells and the pairs of cells sharing a face), cuts it
into one part per rank with METIS (pymetis) or takes a given partition, and hands every
rank its cells in Jeon & Choi's order: *interior* cells (all neighbours on the rank), then
*boundary* cells (a neighbour elsewhere), then *external* (halo) cells owned by other
ranks, grouped by owner. The halo plan — which owned values each neighbour needs, and
where the values from each neighbour land — is built once; :class:`HaloExchange` then
moves the values of one vector either with persistent point-to-point requests or with an
MPI-3 neighbourhood collective on a distributed-graph communicator.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from mpi4py import MPI

from tachyflow.errors import DecompositionError
from tachyflow.parallel import agreement
from tachyflow.parallel.reductions import Reductions

HALO_MODES = ("p2p", "neighborhood")


def metis_partition(cells: int, face_cells: np.ndarray, parts: int) -> np.ndarray:
    """k-way METIS partition of the cell graph (pymetis): the part of every cell."""
    if parts == 1:
        return np.zeros(cells, dtype=np.int64)
    import pymetis

    xadj, adjncy = cell_graph(cells, face_cells)
    _, membership = pymetis.part_graph(parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy))
    return np.asarray(membership, dtype=np.int64)


def cell_graph(cells: int, face_cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR adjacency ``(xadj, adjncy)`` of cells that share a face."""
    first = np.concatenate((face_cells[:, 0], face_cells[:, 1]))
    second = np.concatenate((face_cells[:, 1], face_cells[:, 0]))
    order = np.argsort(first, kind="stable")
    xadj = np.zeros(cells + 1, dtype=np.int64)
    np.add.at(xadj, first + 1, 1)
    return np.cumsum(xadj), second[order].astype(np.int64)


def read_partition(path, cells: int) -> np.ndarray:
    """A partition file: one part number per line (METIS's ``.part`` format)."""
    try:
        partition = np.loadtxt(Path(path), dtype=np.int64, ndmin=1)
    except (OSError, ValueError) as error:
        raise DecompositionError(f"cannot read partition file {str(path)!r}: {error}") from None
    if partition.size != cells:
        raise DecompositionError(
            f"partition file {str(path)!r} has {partition.size} entries, the mesh has {cells} "
            "cells"
        )
    return partition


@dataclass(frozen=True)
class _Piece:
    """One rank's share, as rank 0 sends it."""

    cells: np.ndarray  # global ids in local order: interior, boundary, external
    interior: int
    owned: int
    neighbours: np.ndarray  # ranks this rank exchanges with
    receive_counts: np.ndarray  # external cells from each neighbour (contiguous, in order)
    send_indices: tuple[np.ndarray, ...]  # local owned indices each neighbour needs
    faces: np.ndarray  # global ids of the internal faces with an owned cell
    face_cells: np.ndarray  # (faces, 2) local indices of their cells


def _pieces(cells: int, face_cells: np.ndarray, partition: np.ndarray, parts: int):
    """Every rank's :class:`_Piece` (on rank 0)."""
    side = partition[face_cells]
    cut = side[:, 0] != side[:, 1]
    local_index = np.full(cells, -1, dtype=np.int64)
    pieces, external_of = [], []
    for rank in range(parts):
        owned = np.flatnonzero(partition == rank)
        mine = side == rank
        crossing = cut & mine.any(axis=1)
        across = face_cells[crossing][~mine[crossing]]  # the other side's cells
        near = face_cells[crossing][mine[crossing]]
        boundary = np.unique(near)
        interior = np.setdiff1d(owned, boundary, assume_unique=True)
        external = np.unique(across)
        external = external[np.lexsort((external, partition[external]))]
        order = np.concatenate((interior, boundary, external))
        neighbours, counts = np.unique(partition[external], return_counts=True)
        faces = np.flatnonzero(mine.any(axis=1))
        local_index[order] = np.arange(order.size)
        local_faces = local_index[face_cells[faces]]
        local_index[order] = -1
        pieces.append([order, interior.size, owned.size, neighbours, counts, faces, local_faces])
        external_of.append(external)
    # What rank q sends to rank r: r's external cells owned by q, in r's (global id) order.
    for rank, piece in enumerate(pieces):
        order, owned = piece[0], piece[2]
        local_index[order[:owned]] = np.arange(owned)
        sends = []
        for neighbour in piece[3]:
            wanted = external_of[neighbour]
            sends.append(local_index[wanted[partition[wanted] == rank]])
        local_index[order[:owned]] = -1
        piece.append(tuple(sends))
    return [
        _Piece(order, interior, owned, neighbours, counts, sends, faces, local_faces)
        for order, interior, owned, neighbours, counts, faces, local_faces, sends in pieces
    ]


class UnstructuredDecomposition(Reductions):
    """Cells of an unstructured mesh distributed over the ranks of ``comm`` (collective).

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
    cells : int
        Number of cells (the same on every rank).
    face_cells : ndarray or None
        ``(faces, 2)`` pairs of cells sharing each internal face; read on ``root`` only.
    partition : "metis", array or path
        ``"metis"`` (k-way METIS on ``root``), the part of every cell, or a partition
        file with one part per line (read on ``root``).
    root : int

    Attributes
    ----------
    cells : ndarray
        Global ids of this rank's cells in local order (interior, boundary, external).
    interior, owned : int
        Counts of interior cells and of owned (interior + boundary) cells.
    faces, face_cells : ndarray
        Global ids of the internal faces with an owned cell, and their cells' local ids.
    partition : ndarray or None
        The part of every cell, on ``root`` (None elsewhere).

    Raises
    ------
    DecompositionError
        More ranks than cells, a partition of the wrong length or with parts outside
        ``[0, P)``, or a rank left without cells (on every rank).
    """

    def __init__(self, comm, cells: int, face_cells=None, partition="metis", root: int = 0):
        self.comm = comm
        size = comm.Get_size()
        if not isinstance(cells, int | np.integer) or cells < 1:
            raise DecompositionError(f"a mesh needs at least one cell, got {cells!r}")
        if size > cells:
            raise DecompositionError(f"{size} ranks for {cells} cells: at most one rank per cell")

        def plan():
            parts = self._partition(cells, face_cells, partition, size)
            return parts, _pieces(cells, face_cells, parts, size)

        self.partition, pieces = agreement.on_root(comm, plan, root) or (None, None)
        piece = comm.scatter(pieces, root=root)
        self.root = root
        self.global_cells = cells
        self.cells = piece.cells
        self.interior, self.owned = piece.interior, piece.owned
        self.neighbours = piece.neighbours
        self.receive_counts = piece.receive_counts
        self.send_indices = piece.send_indices
        self.faces, self.face_cells = piece.faces, piece.face_cells

    @staticmethod
    def _partition(cells, face_cells, partition, size) -> np.ndarray:
        if isinstance(partition, str) and partition == "metis":
            parts = metis_partition(cells, face_cells, size)
        elif isinstance(partition, str | Path):
            parts = read_partition(partition, cells)
        else:
            parts = np.asarray(partition, dtype=np.int64)
            if parts.shape != (cells,):
                raise DecompositionError(
                    f"partition must give a part for each of {cells} cells, got shape "
                    f"{parts.shape}"
                )
        if parts.min() < 0 or parts.max() >= size:
            raise DecompositionError(
                f"partition parts must be in [0, {size}) for {size} ranks, got "
                f"[{parts.min()}, {parts.max()}]"
            )
        empty = np.setdiff1d(np.arange(size), parts)
        if empty.size:
            raise DecompositionError(
                f"the partition leaves rank(s) {empty.tolist()} without cells"
            )
        return parts

    @property
    def external(self) -> int:
        """Number of halo (external) cells."""
        return self.cells.size - self.owned

    def select(self, values, selection: np.ndarray) -> np.ndarray:
        """``values[selection]`` of an array held on ``root``, where every rank names its
        own ``selection`` of global indices (collective)."""
        selections = self.comm.gather(selection, root=self.root)
        pieces = None
        if selections is not None:
            values = np.asarray(values)
            pieces = [values[chosen] for chosen in selections]
        return self.comm.scatter(pieces, root=self.root)

    def scatter(self, values, owned_only: bool = False) -> np.ndarray:
        """Every rank's share of a per-cell array held on ``root`` (collective): its owned
        cells, then its external ones unless ``owned_only``."""
        return self.select(values, self.cells[: self.owned] if owned_only else self.cells)

    def local_index(self, global_cells: np.ndarray) -> np.ndarray:
        """Local indices of cells of this rank given by global id (-1 where not here)."""
        order = np.argsort(self.cells)
        position = np.searchsorted(self.cells, global_cells, sorter=order)
        position = np.minimum(position, self.cells.size - 1)
        found = order[position]
        return np.where(self.cells[found] == global_cells, found, -1)

    def gather(self, owned_values: np.ndarray):
        """The global per-cell array on ``root`` from every rank's owned values, None
        elsewhere (collective)."""
        parts = self.comm.gather(
            (self.cells[: self.owned], owned_values[: self.owned]), root=self.root
        )
        if parts is None:
            return None
        result = np.empty((self.global_cells, *owned_values.shape[1:]), dtype=owned_values.dtype)
        for cells, values in parts:
            result[cells] = values
        return result

    def owned_items(self, item_cells) -> np.ndarray:
        """Indices of the items (faces, particles, ...) in cells this rank owns, given the
        cell of every item on ``root`` (collective)."""
        pieces = None
        if self.comm.Get_rank() == self.root:
            owners = self.partition[np.asarray(item_cells)]
            pieces = [np.flatnonzero(owners == rank) for rank in range(self.comm.Get_size())]
        return self.comm.scatter(pieces, root=self.root)

    def slowest(self, values: np.ndarray) -> np.ndarray:
        """The ``values`` of the rank whose first entry is largest (collective): e.g. the
        time split of the rank that took longest."""
        every = np.empty((self.comm.Get_size(), values.size))
        self.comm.Allgather(np.ascontiguousarray(values, dtype=float), every)
        return every[np.argmax(every[:, 0])]

    def __repr__(self) -> str:
        return (
            f"UnstructuredDecomposition({self.global_cells} cells, {self.comm.Get_size()} "
            f"ranks, {self.owned} owned here)"
        )

    def free(self) -> None:
        """Nothing to release: the communicator is the caller's (collective, for symmetry)."""

    def halo(self, vector: np.ndarray, mode: str = "p2p") -> HaloExchange:
        """A halo exchange bound to ``vector`` (owned then external entries)."""
        return HaloExchange(self, vector, mode)


class HaloExchange:
    """Fills the external entries of one vector with their owners' values (collective).

    ``start()`` packs the owned values the neighbours need and starts the transfer;
    ``wait()`` completes it; between them the caller computes what needs no halo (Jeon & Choi's
    overlap of the exchange with the interior rows of the matrix–vector product).
    The requests are made once, for this vector: ``p2p`` as persistent sends and receives
    per neighbour, ``neighborhood`` as one ``Ineighbor_alltoallv`` on a distributed-graph
    communicator of the neighbours.
    """

    def __init__(self, decomposition: UnstructuredDecomposition, vector: np.ndarray, mode: str):
        if mode not in HALO_MODES:
            raise ValueError(f"halo mode must be one of {HALO_MODES}, got {mode!r}")
        if vector.shape[0] != decomposition.cells.size or not vector.flags.c_contiguous:
            raise ValueError(
                f"the vector must be contiguous with {decomposition.cells.size} entries (owned "
                f"and external), got shape {vector.shape}"
            )
        self.mode = mode
        self.vector = vector
        comm = decomposition.comm
        owned = decomposition.owned
        self._indices = decomposition.send_indices
        send_counts = np.array([len(i) for i in self._indices], dtype=np.int64)
        self._packed = np.empty(int(send_counts.sum()), dtype=vector.dtype)
        starts = np.concatenate(([0], np.cumsum(send_counts)))
        self._slots = [self._packed[a:b] for a, b in itertools.pairwise(starts)]
        receive = vector[owned:]
        neighbours = decomposition.neighbours.tolist()
        self._graph = None
        if mode == "p2p":
            offsets = np.concatenate(([0], np.cumsum(decomposition.receive_counts)))
            self._requests = [
                comm.Recv_init(receive[a:b], peer, 11)
                for peer, (a, b) in zip(neighbours, itertools.pairwise(offsets), strict=True)
            ] + [
                comm.Send_init(slot, peer, 11)
                for peer, slot in zip(neighbours, self._slots, strict=True)
            ]
        else:
            self._graph = comm.Create_dist_graph_adjacent(neighbours, neighbours, reorder=False)
            counts = decomposition.receive_counts
            receive_displacements = np.cumsum(counts) - counts
            self._arguments = (
                [self._packed, (send_counts.tolist(), starts[:-1].tolist())],
                [receive, (decomposition.receive_counts.tolist(), receive_displacements.tolist())],
            )
            self._requests = []
        self._active = None

    def start(self) -> None:
        """Pack the owned values the neighbours need and start the exchange."""
        for indices, slot in zip(self._indices, self._slots, strict=True):
            np.take(self.vector, indices, out=slot)
        if self.mode == "p2p":
            MPI.Prequest.Startall(self._requests)
            self._active = self._requests
        else:
            self._active = [self._graph.Ineighbor_alltoallv(*self._arguments)]

    def wait(self) -> None:
        """Complete the exchange: the external entries now hold their owners' values."""
        MPI.Request.Waitall(self._active)
        self._active = None

    def exchange(self) -> None:
        """``start()`` then ``wait()``."""
        self.start()
        self.wait()

    def free(self) -> None:
        """Release the persistent requests and the graph communicator (collective)."""
        for request in self._requests:
            request.Free()
        self._requests = []
        if self._graph is not None:
            self._graph.Free()
            self._graph = None
