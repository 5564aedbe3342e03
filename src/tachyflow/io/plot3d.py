"""2D structured grids in Plot3D files, and C-grids as SU2 native meshes.

Plot3D (NASA's PLOT3D grid format, 2D, no iblank): per block ``ni nj`` node counts, then
all ``x`` with ``i`` running fastest, then all ``y``. Two layouts and two encodings:

- multi-block (the usual): a block count, the dimensions of every block, then the blocks;
  single-block: the dimensions of the one block, then its coordinates;
- formatted (ASCII, whitespace-separated) or unformatted (Fortran sequential records, each
  framed by its byte count as a 4-byte integer: the count, the dimensions, one record per
  block with its x and y), 8- or 4-byte reals, either byte order.

:func:`read_plot3d` detects layout, encoding, precision and byte order. Arrays are
``x[i, j]`` of shape ``(ni, nj)`` nodes, as in :mod:`tachyflow.numerics.airfoil_grids`.

:func:`write_su2` writes a grid in SU2's native format (``NDIME``, ``NELEM`` quads,
``NPOIN``, ``NMARK``), merging the two branches of a C-grid's wake cut into one line of
points so SU2 sees one connected mesh; markers ``airfoil`` (the wall), ``farfield`` (the
outer boundary and both outflow ends) and, for grids whose ``j = 0`` line is partly neither
wall nor cut (an H-grid ahead of a plate), ``symmetry``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tachyflow.io.files import replacing

_REALS = {"double": "f8", "single": "f4"}


def write_plot3d(
    path,
    blocks: Sequence[tuple[np.ndarray, np.ndarray]],
    formatted: bool = False,
    multi_block: bool = True,
    precision: str = "double",
    byteorder: str = "<",
) -> Path:
    """Write 2D grid blocks ``[(x, y), ...]`` (node arrays ``(ni, nj)``) to ``path``.

    ``multi_block=False`` writes the single-block layout (one block only). ``precision``
    is ``"double"`` or ``"single"`` and ``byteorder`` ``"<"`` or ``">"`` (unformatted).
    The file is replaced atomically.
    """
    blocks = [_check_block(x, y, number) for number, (x, y) in enumerate(blocks)]
    if not blocks:
        raise ValueError("a Plot3D file needs at least one block")
    if not multi_block and len(blocks) != 1:
        raise ValueError(f"the single-block layout holds one block, got {len(blocks)}")
    if precision not in _REALS:
        raise ValueError(f"precision must be 'double' or 'single', got {precision!r}")
    if byteorder not in ("<", ">"):
        raise ValueError(f"byteorder must be '<' or '>', got {byteorder!r}")
    dims = [n for x, _ in blocks for n in x.shape]
    with replacing(path) as temporary:
        if formatted:
            with open(temporary, "w") as out:
                if multi_block:
                    out.write(f"{len(blocks)}\n")
                for x, _ in blocks:
                    out.write(f"{x.shape[0]} {x.shape[1]}\n")
                for x, y in blocks:
                    values = np.concatenate([x.ravel(order="F"), y.ravel(order="F")])
                    if precision == "single":
                        values = values.astype(np.float32).astype(np.float64)
                    for start in range(0, len(values), 4):
                        out.write(" ".join(repr(float(v)) for v in values[start : start + 4]))
                        out.write("\n")
        else:
            integer, real = f"{byteorder}i4", f"{byteorder}{_REALS[precision]}"
            with open(temporary, "wb") as out:
                if multi_block:
                    _record(out, np.array([len(blocks)], dtype=integer), byteorder)
                _record(out, np.array(dims, dtype=integer), byteorder)
                for x, y in blocks:
                    data = np.concatenate([x.ravel(order="F"), y.ravel(order="F")])
                    _record(out, data.astype(real), byteorder)
    return Path(path)


def read_plot3d(path) -> list[tuple[np.ndarray, np.ndarray]]:
    """The blocks ``[(x, y), ...]`` of a 2D Plot3D grid file, in any layout of
    :func:`write_plot3d`."""
    raw = Path(path).read_bytes()
    if not raw:
        raise ValueError(f"{path}: empty file")
    for byteorder in ("<", ">"):  # a file framed as Fortran records all through is binary
        records = _records(raw, byteorder)
        if records:
            return _unformatted_blocks(records, byteorder, path)
    try:
        text = raw.decode("ascii", errors="strict")
    except UnicodeDecodeError:
        raise ValueError(
            f"{path}: neither Fortran records nor ASCII text: not a 2D Plot3D grid file"
        ) from None
    return _formatted_blocks(text, path)


def _check_block(x, y, number: int) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or x.shape != y.shape or min(x.shape) < 1:
        raise ValueError(
            f"block {number}: x and y must be 2D node arrays of one shape, got "
            f"{x.shape} and {y.shape}"
        )
    return x, y


def _record(out, data: np.ndarray, byteorder: str) -> None:
    marker = struct.pack(f"{byteorder}i", data.nbytes)
    out.write(marker)
    out.write(data.tobytes())
    out.write(marker)


def _records(raw: bytes, byteorder: str) -> list[bytes] | None:
    """The Fortran records of ``raw``, or None if it is not framed that way."""
    records, offset = [], 0
    while offset < len(raw):
        if offset + 4 > len(raw):
            return None
        (size,) = struct.unpack(f"{byteorder}i", raw[offset : offset + 4])
        end = offset + 4 + size
        if size < 0 or end + 4 > len(raw) or raw[end : end + 4] != raw[offset : offset + 4]:
            return None
        records.append(raw[offset + 4 : end])
        offset = end + 4
    return records


def _unformatted_blocks(records: list[bytes], byteorder: str, path):
    integer = np.dtype(f"{byteorder}i4")
    if len(records[0]) == 4:  # multi-block: the count, then the dimensions
        count = int(np.frombuffer(records[0], dtype=integer)[0])
        dims = np.frombuffer(records[1], dtype=integer)
        data = records[2:]
    else:
        count, dims, data = 1, np.frombuffer(records[0], dtype=integer), records[1:]
    if len(dims) != 2 * count or len(data) != count:
        raise ValueError(
            f"{path}: expected {count} blocks of 2D dimensions, got {len(dims)} dimensions "
            f"and {len(data)} data records (3D grids and iblank are not read)"
        )
    blocks = []
    for number, record in enumerate(data):
        ni, nj = (int(n) for n in dims[2 * number : 2 * number + 2])
        width = len(record) // (2 * ni * nj) if ni * nj else 0
        if width not in (4, 8) or len(record) != 2 * ni * nj * width:
            raise ValueError(
                f"{path}: block {number} of {ni} x {nj} nodes has a record of "
                f"{len(record)} bytes, not 2 x {ni * nj} reals"
            )
        values = np.frombuffer(record, dtype=f"{byteorder}f{width}").astype(np.float64)
        blocks.append(_unflatten(values, ni, nj))
    return blocks


def _formatted_blocks(text: str, path):
    lines = text.splitlines()
    tokens = text.split()
    multi = bool(lines) and len(lines[0].split()) == 1
    try:
        count = int(tokens[0]) if multi else 1
        start = 1 if multi else 0
        dims = [int(t) for t in tokens[start : start + 2 * count]]
    except (ValueError, IndexError):
        raise ValueError(f"{path}: not a 2D Plot3D grid (bad header)") from None
    if count < 1 or len(dims) != 2 * count or min(dims) < 1:
        raise ValueError(
            f"{path}: not a 2D Plot3D grid (bad header: {count} block(s) need {2 * count} "
            f"positive dimensions, got {dims})"
        )
    try:
        values = np.array(tokens[start + 2 * count :], dtype=np.float64)
    except ValueError:
        raise ValueError(f"{path}: not a 2D Plot3D grid (coordinates not numbers)") from None
    needed = sum(2 * dims[2 * b] * dims[2 * b + 1] for b in range(count))
    if len(dims) != 2 * count or len(values) != needed:
        raise ValueError(
            f"{path}: header asks for {needed} coordinates in {count} 2D blocks, the file "
            f"holds {len(values)}"
        )
    blocks, offset = [], 0
    for number in range(count):
        ni, nj = dims[2 * number], dims[2 * number + 1]
        blocks.append(_unflatten(values[offset : offset + 2 * ni * nj], ni, nj))
        offset += 2 * ni * nj
    return blocks


def _unflatten(values: np.ndarray, ni: int, nj: int) -> tuple[np.ndarray, np.ndarray]:
    x = values[: ni * nj].reshape((ni, nj), order="F")
    y = values[ni * nj :].reshape((ni, nj), order="F")
    return np.ascontiguousarray(x), np.ascontiguousarray(y)


def su2_connectivity(grid) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Points, quads and marker lines of a structured grid as one unstructured mesh.

    Returns ``points (n, 2)``, ``quads (ni * nj, 4)`` counter-clockwise, and a dict of
    marker name to lines ``(m, 2)``. The upper branch of the wake cut is mapped onto the
    lower one (node ``(ni - i, 0)`` is node ``(i, 0)``), so the cut disappears.
    """
    ni, nj = grid.x.shape[0] - 1, grid.x.shape[1] - 1
    node = np.arange((ni + 1) * (nj + 1)).reshape(ni + 1, nj + 1)
    w = grid.wake_cells
    if w:
        cut = np.arange(w + 1)
        if not (
            np.array_equal(grid.x[cut, 0], grid.x[ni - cut, 0])
            and np.array_equal(grid.y[cut, 0], grid.y[ni - cut, 0])
        ):
            raise ValueError("the wake cut's two branches do not coincide node for node")
        node[ni - cut, 0] = node[cut, 0]
    used, numbered = np.unique(node, return_inverse=True)
    node = numbered.reshape(node.shape)
    points = np.column_stack([grid.x.ravel()[used], grid.y.ravel()[used]])
    quads = np.stack(
        [node[:-1, :-1], node[1:, :-1], node[1:, 1:], node[:-1, 1:]], axis=-1
    ).reshape(-1, 4)
    bottom = np.stack([node[:-1, 0], node[1:, 0]], axis=-1)
    wall = np.arange(*grid.wall)
    symmetry = np.setdiff1d(np.arange(w, ni - w), wall)
    markers = {
        "airfoil": bottom[wall],
        "farfield": np.concatenate(
            [
                np.stack([node[:-1, nj], node[1:, nj]], axis=-1),
                np.stack([node[0, 1:], node[0, :-1]], axis=-1),
                np.stack([node[ni, :-1], node[ni, 1:]], axis=-1),
            ]
        ),
    }
    if len(symmetry):
        markers["symmetry"] = bottom[symmetry]
    return points, quads, markers


def write_su2(path, grid) -> Path:
    """Write ``grid`` (a :class:`~tachyflow.numerics.airfoil_grids.StructuredGrid`) as an
    SU2 native 2D mesh (quads, VTK type 9; marker lines, type 3), atomically."""
    points, quads, markers = su2_connectivity(grid)
    with replacing(path) as temporary, open(temporary, "w") as out:
        out.write("% SU2 mesh written by tachyflow: structured grid, wake cut merged\n")
        out.write("NDIME= 2\n")
        out.write(f"NELEM= {len(quads)}\n")
        for number, quad in enumerate(quads):
            out.write(f"9 {quad[0]} {quad[1]} {quad[2]} {quad[3]} {number}\n")
        out.write(f"NPOIN= {len(points)}\n")
        for number, (x, y) in enumerate(points):
            out.write(f"{float(x)!r} {float(y)!r} {number}\n")
        out.write(f"NMARK= {len(markers)}\n")
        for name, lines in markers.items():
            out.write(f"MARKER_TAG= {name}\nMARKER_ELEMS= {len(lines)}\n")
            for a, b in lines:
                out.write(f"3 {a} {b}\n")
    return Path(path)
