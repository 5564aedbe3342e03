"""Parallel checkpoints: every rank writes its own piece of one self-describing file.

A checkpoint ``step_XXXXXXXX.ckpt`` holds distributed arrays in their *global* C-order
layout, written collectively with MPI-IO (a subarray file view per rank,
``Write_all``), so no rank ever holds more than its own piece and a restart reads the
file on any number of ranks and any process grid. Layout of the file::

    0       header (64 bytes): magic, format version, offset, length and CRC-32 of the
            trailer; written last, so a file without it was never finished
    4096    array 0, then array 1, ... (each global array, float64, 4096-aligned)
    ...     trailer (JSON): step, time, scalars, replicated arrays (base64), the global
            shape, and per array its offset and a checksum

The checksum of an array is a position-weighted sum of its 64-bit words modulo 2**64
(odd weights from the global index): each rank adds its piece's share, so it is the same
whatever the decomposition, is verified on reading at any rank count, and detects every
single-bit flip and any exchange of two different values.

Writes are atomic: the file is written as ``.step_XXXXXXXX.ckpt.partial``, synced, and
renamed once every rank is done; older checkpoints beyond ``keep`` are removed only then.
The environment variable ``TACHYFLOW_FAULT_CHECKPOINT_AFTER=N`` or ``N@STEP`` (a
fault-injection hook for tests) kills every rank with SIGKILL after it wrote N arrays of
a checkpoint (of step STEP only, when given).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import signal
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tachyflow.errors import ConfigError
from tachyflow.parallel import agreement
from tachyflow.parallel.collective_file import CollectiveFile
from tachyflow.parallel.pieces import allgather_small

FORMAT = "tachyflow-checkpoint-2"
SUFFIX = ".ckpt"
MAGIC = b"TACHYFLOW-CKPT\x00\x00"
HEADER = struct.Struct("<16sIQQI")  # magic, version, trailer offset, length, CRC-32
VERSION = 2
ALIGNMENT = 4096
_WEIGHT = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: spreads the weights


@dataclass(frozen=True)
class PieceLayout:
    """Where this rank's piece lies in a global array (C order).

    Attributes
    ----------
    global_shape, start, shape : tuple of int
        The global array's shape, the global index of the piece's first element and the
        piece's shape (which may contain zeros).
    """

    global_shape: tuple[int, ...]
    start: tuple[int, ...]
    shape: tuple[int, ...]

    @property
    def size(self) -> int:
        """Elements in this rank's piece."""
        return int(np.prod(self.shape))


@dataclass(frozen=True)
class Checkpoint:
    """What a checkpoint holds besides its distributed arrays (equal on every rank)."""

    path: Path
    step: int
    time: float
    scalars: dict[str, float]
    replicated: dict[str, np.ndarray]
    arrays: tuple[str, ...]


def checkpoint_path(folder, step: int) -> Path:
    """The name of the checkpoint of ``step`` in ``folder``."""
    return Path(folder) / f"step_{step:08d}{SUFFIX}"


def _checksum_share(piece: np.ndarray, layout: PieceLayout) -> int:
    """This rank's share of an array's checksum (summed over the ranks modulo 2**64)."""
    if piece.size == 0:
        return 0
    total = np.uint64(0)
    inner = np.zeros(piece.shape[1:], dtype=np.uint64)  # global index within a slab
    for axis, (start, count) in enumerate(zip(layout.start[1:], piece.shape[1:], strict=True)):
        index = np.arange(start, start + count, dtype=np.uint64)
        stride = int(np.prod(layout.global_shape[axis + 2 :], dtype=np.int64))
        inner += (index * np.uint64(stride)).reshape(
            [-1 if a == axis else 1 for a in range(piece.ndim - 1)]
        )
    slab = int(np.prod(layout.global_shape[1:], dtype=np.int64))
    words = np.ascontiguousarray(piece).view(np.uint64)
    with np.errstate(over="ignore"):
        for i in range(piece.shape[0]):  # slab by slab: temporaries the size of one slab
            index = inner + np.uint64((layout.start[0] + i) * slab)
            weights = index * _WEIGHT | np.uint64(1)
            total += (words[i] * weights).sum(dtype=np.uint64)
    return int(total)


def _checksum(comm, piece: np.ndarray, layout: PieceLayout) -> int:
    """The array's checksum (collective)."""
    return sum(allgather_small(comm, _checksum_share(piece, layout))) % 2**64


def _blocks(layout: PieceLayout) -> tuple:
    """The global shape, start and shape of this rank's piece (CollectiveFile's order)."""
    return layout.global_shape, layout.start, layout.shape


def _aligned(offset: int) -> int:
    return -(-offset // ALIGNMENT) * ALIGNMENT


def _fault_after(step: int) -> int | None:
    """The test hook's array count for the checkpoint of ``step``, if it asks for one."""
    arrays, _, at = os.environ.get("TACHYFLOW_FAULT_CHECKPOINT_AFTER", "").partition("@")
    if not arrays.isdigit() or (at and at != str(step)):
        return None
    return int(arrays)


def write_checkpoint(
    comm,
    folder,
    step: int,
    time: float,
    pieces: dict[str, np.ndarray],
    layout: PieceLayout,
    scalars: dict[str, float] | None = None,
    replicated: dict[str, np.ndarray] | None = None,
    keep: int = 2,
) -> Path:
    """Write the checkpoint of ``step`` into ``folder`` and prune old ones (collective).

    Parameters
    ----------
    comm : mpi4py.MPI.Intracomm
        The ranks holding the pieces.
    pieces : dict of str to ndarray
        This rank's piece of each distributed array (float64, shape ``layout.shape``).
    layout : PieceLayout
        Where the pieces lie in the global arrays (the same for every array).
    scalars, replicated : dict, optional
        Numbers and small arrays equal on every rank (rank 0's are written).
    keep : int
        Checkpoints kept in ``folder``, this one included.
    """

    folder = Path(folder)
    path = checkpoint_path(folder, step)
    partial = folder / f".{path.name}.partial"
    names = sorted(pieces)
    for name in names:
        if pieces[name].shape != tuple(layout.shape):
            raise ValueError(
                f"checkpoint array {name!r} has shape {pieces[name].shape}, its layout says "
                f"{layout.shape}"
            )
    array_bytes = int(np.prod(layout.global_shape, dtype=np.int64)) * 8
    offsets = [ALIGNMENT + k * _aligned(array_bytes) for k in range(len(names))]
    checksums = [_checksum(comm, pieces[name], layout) for name in names]
    trailer = {
        "format": FORMAT,
        "step": int(step),
        "time": float(time),
        "scalars": {k: float(v) for k, v in (scalars or {}).items()},
        "replicated": {k: _encoded(v) for k, v in (replicated or {}).items()},
        "global_shape": list(layout.global_shape),
        "arrays": {
            name: {"offset": offset, "checksum": checksum}
            for name, offset, checksum in zip(names, offsets, checksums, strict=True)
        },
        "ranks": comm.Get_size(),
    }
    encoded = json.dumps(trailer).encode()
    trailer_offset = ALIGNMENT + len(names) * _aligned(array_bytes)
    fault = _fault_after(step)
    agreement.on_root(comm, lambda: folder.mkdir(parents=True, exist_ok=True))
    problem = None
    with CollectiveFile(comm, partial, "w", *_blocks(layout)) as file:
        try:
            for written, (name, offset) in enumerate(zip(names, offsets, strict=True)):
                if fault is not None and written == fault:
                    os.kill(os.getpid(), signal.SIGKILL)
                file.write_piece(offset, pieces[name])
            file.write_on_root(trailer_offset, encoded)
            crc = zlib.crc32(encoded)
            header = HEADER.pack(MAGIC, VERSION, trailer_offset, len(encoded), crc)
            file.write_on_root(0, header)
            file.sync()
        except OSError as error:  # raised on every rank (CollectiveFile agrees)
            problem = error
    if problem is not None:
        if comm.Get_rank() == 0:
            partial.unlink(missing_ok=True)
        kept = sorted(folder.glob(f"step_*{SUFFIX}"))
        problem = OSError(
            problem.errno,
            f"{problem.strerror}; checkpoint {path.name} not written, the newest whole one "
            f"kept: {kept[-1] if kept else 'none'}",
        )
    agreement.agree(comm, problem)

    def publish() -> None:
        os.replace(partial, path)
        _sync_folder(folder)
        for old in sorted(folder.glob(f"step_*{SUFFIX}"))[:-keep]:
            old.unlink()

    agreement.on_root(comm, publish)
    return path


def _encoded(values) -> dict:
    """A replicated array for the trailer: its bytes in base64 (a record of a million
    numbers, an acoustics record's, as JSON numbers took 2 s to write and twice the room)."""
    array = np.asarray(values)
    return {"dtype": array.dtype.str, "shape": list(array.shape),
            "base64": base64.b64encode(array.tobytes()).decode("ascii")}


def _decoded(entry: dict) -> np.ndarray:
    """A replicated array of the trailer: base64, or numbers (checkpoints written before
    2026-12-02)."""
    if "values" in entry:
        return np.asarray(entry["values"], dtype=entry["dtype"]).reshape(entry["shape"])
    data = base64.b64decode(entry["base64"])
    return np.frombuffer(data, dtype=entry["dtype"]).reshape(tuple(entry["shape"])).copy()


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def checkpoint_candidates(folder) -> list[Path]:
    """The checkpoints in ``folder``, newest first; files left by a writer that was killed
    are removed (call this on one rank, holding the run folder's lock). ConfigError when
    there are none."""
    folder = Path(folder)
    for leftover in folder.glob(f".step_*{SUFFIX}.partial"):
        leftover.unlink(missing_ok=True)
    found = sorted(folder.glob(f"step_*{SUFFIX}"), reverse=True)
    if not found:
        older = sorted(folder.glob("step_*.npz"))
        raise ConfigError(
            f"--restart latest: no checkpoint in {folder}"
            + (
                f" ({len(older)} in the .npz format of tachyflow 0.1, which this version "
                "does not read)"
                if older
                else ""
            )
        )
    return found


def _read_description(path: Path, global_shape) -> dict:
    """The trailer of ``path``, checked against its header and the case's grid (any grid
    where ``global_shape`` is None)."""
    if not path.is_file():
        what = "is a directory" if path.is_dir() else (
            "is not a regular file (a pipe, a device or a socket)" if path.exists()
            else "does not exist")
        raise ConfigError(f"checkpoint {str(path)!r} {what}")
    problem = f"checkpoint {path} is corrupt or not a tachyflow checkpoint"
    try:
        with path.open("rb") as stream:
            magic, version, offset, length, crc = HEADER.unpack(stream.read(HEADER.size))
            if magic != MAGIC:
                raise ConfigError(f"{problem}: no checkpoint header (unfinished or not one)")
            if version != VERSION:
                raise ConfigError(f"{problem}: format version {version}, expected {VERSION}")
            stream.seek(offset)
            encoded = stream.read(length)
    except (OSError, struct.error) as error:
        raise ConfigError(f"{problem}: {error}") from None
    if len(encoded) != length or zlib.crc32(encoded) != crc:
        raise ConfigError(f"{problem}: its description is truncated or damaged")
    trailer = json.loads(encoded)
    if global_shape is not None and tuple(trailer["global_shape"]) != tuple(global_shape):
        raise ConfigError(
            f"checkpoint {path} holds a {tuple(trailer['global_shape'])} grid, the case's "
            f"grid is {tuple(global_shape)}"
        )
    return trailer


def _describe(comm, path, global_shape) -> tuple[Checkpoint, dict]:
    """Check ``path`` (on rank 0) and describe it on every rank (collective); ConfigError,
    on every rank, when it is missing, unfinished, damaged or for another grid."""
    path = Path(path)
    trailer = agreement.on_root(comm, lambda: _read_description(path, global_shape), share=True)
    replicated = {name: _decoded(entry) for name, entry in trailer["replicated"].items()}
    return Checkpoint(
        path=path,
        step=int(trailer["step"]),
        time=float(trailer["time"]),
        scalars=dict(trailer["scalars"]),
        replicated=replicated,
        arrays=tuple(trailer["arrays"]),
    ), trailer


def read_checkpoint(comm, path, layout: PieceLayout) -> tuple[Checkpoint, dict]:
    """Every array of a checkpoint, this rank's piece of each, checksums verified
    (collective). Returns the checkpoint's description and the pieces by name."""

    checkpoint, trailer = _describe(comm, path, layout.global_shape)
    pieces = {}
    array_bytes = int(np.prod(layout.global_shape, dtype=np.int64)) * 8
    with CollectiveFile(comm, checkpoint.path, "r", *_blocks(layout)) as file:
        size = file.size()
        for name, entry in trailer["arrays"].items():
            if entry["offset"] + array_bytes > size:
                agreement.agree(
                    comm, ConfigError(f"checkpoint {path} is truncated (array {name!r})")
                )
            with agreement.collectively(comm, OSError):
                piece = file.read_piece(entry["offset"])
            if _checksum(comm, piece, layout) != entry["checksum"]:
                agreement.agree(
                    comm,
                    ConfigError(
                        f"checkpoint {path} is damaged: array {name!r} does not match its checksum"
                    ),
                )
            pieces[name] = piece
    return checkpoint, pieces


def read_checkpoint_windows(comm, path, ranges_of) -> tuple[Checkpoint, tuple, dict]:
    """A checkpoint of any grid, read for interpolation onto another (collective): its
    checksums verified on a partition into slabs along the first axis, then each of its
    solver arrays' window that this rank needs: ``ranges_of(old shape)`` gives the old
    indices (per axis a list of at most two ``(start, stop)``, from
    :func:`tachyflow.numerics.regrid.index_ranges`), laid end to end in the window.
    Observers' arrays are left out (they belong to the old grid). Returns the
    description, the old grid's shape and the windows by name."""
    checkpoint, trailer = _describe(comm, path, None)
    shape = tuple(int(n) for n in trailer["global_shape"])
    ranges = ranges_of(shape)
    bounds = np.linspace(0, shape[0], comm.Get_size() + 1).astype(int)
    rank = comm.Get_rank()
    read_checkpoint(comm, path, PieceLayout(shape, (int(bounds[rank]), 0, 0),
                                            (int(bounds[rank + 1] - bounds[rank]), *shape[1:])))
    padded = [list(axis) + [(0, 0)] * (2 - len(axis)) for axis in ranges]
    lengths = [sum(stop - start for start, stop in axis) for axis in padded]
    names = [name for name in trailer["arrays"] if not name.startswith("observer/")]
    windows = {name: np.empty(lengths) for name in names}
    for choice in itertools.product(range(2), repeat=3):
        boxes = [padded[axis][choice[axis]] for axis in range(3)]
        start = tuple(box[0] for box in boxes)
        extent = tuple(box[1] - box[0] for box in boxes)
        placed = tuple(
            slice(offset, offset + size)
            for offset, size in zip(
                (sum(b - a for a, b in padded[axis][: choice[axis]]) for axis in range(3)),
                extent, strict=True)
        )
        # Every rank reads the same eight boxes in turn (some of them empty).
        with CollectiveFile(comm, checkpoint.path, "r", shape, start, extent) as file:
            for name in names:
                with agreement.collectively(comm, OSError):
                    piece = file.read_piece(trailer["arrays"][name]["offset"])
                windows[name][placed] = piece
    return checkpoint, shape, windows
