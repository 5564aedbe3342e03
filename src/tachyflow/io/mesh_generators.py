"""Generated boxes of exact cell counts: hexahedra, and perturbed tetrahedra (tests,
benchmarks and ``box:CELLS`` / ``tet:CELLS`` meshes)."""

from __future__ import annotations

import numpy as np

from tachyflow.io.mesh import UnstructuredMesh, build_mesh

# Kuhn (Freudenthal) split of a cube into 6 tetrahedra along its main diagonal, corners
# numbered by bits (x = 1, y = 2, z = 4). Every cube uses the same split, so the diagonals
# drawn on shared cube faces agree and the tets conform across cells. Each tet walks from
# corner 0 to corner 7 along the axes in one order; vertex order is chosen per tet so that
# all six have positive VTK orientation.
_KUHN_TETS = np.array(
    [
        [0, 1, 3, 7],
        [0, 3, 2, 7],
        [0, 2, 6, 7],
        [0, 6, 4, 7],
        [0, 4, 5, 7],
        [0, 5, 1, 7],
    ]
)


def _check_box(shape, lengths) -> tuple[tuple[int, int, int], np.ndarray]:
    if (
        len(shape) != 3
        or not all(isinstance(n, int | np.integer) and not isinstance(n, bool) for n in shape)
        or min(shape) < 1
    ):
        raise ValueError(f"shape must be 3 positive integers (nx, ny, nz), got {shape!r}")
    lengths = np.asarray(lengths, dtype=np.float64)
    if lengths.shape != (3,) or not (np.isfinite(lengths).all() and (lengths > 0).all()):
        raise ValueError(f"lengths must be 3 positive finite numbers, got {lengths.tolist()!r}")
    return tuple(int(n) for n in shape), lengths


def _box_points(shape, lengths) -> np.ndarray:
    """Grid points of a box, x fastest: point (i, j, k) is i + (nx+1) * (j + (ny+1) * k)."""
    axes = [np.linspace(0.0, length, n + 1) for n, length in zip(shape, lengths, strict=True)]
    z, y, x = np.meshgrid(axes[2], axes[1], axes[0], indexing="ij")
    return np.column_stack([x.ravel(), y.ravel(), z.ravel()])


def _box_corners(shape) -> np.ndarray:
    """Point ids of the 8 corners of each box cell, x fastest, corners numbered by bits."""
    nx, ny, nz = shape
    k, j, i = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    origin = (i + (nx + 1) * (j + (ny + 1) * k)).ravel().astype(np.int64)
    offsets = np.array(
        [(bit & 1) + (nx + 1) * (((bit >> 1) & 1) + (ny + 1) * (bit >> 2)) for bit in range(8)]
    )
    return origin[:, None] + offsets


def box_hex_mesh(shape: tuple[int, int, int], lengths=(1.0, 1.0, 1.0)) -> UnstructuredMesh:
    """A box ``[0, Lx] x [0, Ly] x [0, Lz]`` of uniform hexahedra.

    Parameters
    ----------
    shape : tuple of 3 int
        Cells along x, y, z; the mesh has ``nx * ny * nz`` cells, x running fastest.
    lengths : tuple of 3 float
        Box side lengths.

    Returns
    -------
    UnstructuredMesh
        One ``hexahedron`` block.

    Raises
    ------
    ValueError
        If ``shape`` is not 3 positive integers or ``lengths`` not 3 positive numbers.
    """
    shape, lengths = _check_box(shape, lengths)
    # VTK's hexahedron goes round the bottom face, then the top one.
    corners = _box_corners(shape)[:, [0, 1, 3, 2, 4, 5, 7, 6]]
    return build_mesh(_box_points(shape, lengths), [("hexahedron", corners)])


def perturbed_tet_mesh(
    shape: tuple[int, int, int],
    lengths=(1.0, 1.0, 1.0),
    perturbation: float = 0.2,
    seed: int = 0,
) -> UnstructuredMesh:
    """A box of tetrahedra with randomly moved vertices, a test of skewed geometry.

    Each cell of a ``shape`` box grid is split into 6 tetrahedra (Kuhn/Freudenthal split,
    conforming across cells). Each point then moves by a uniform random amount in
    ``[-perturbation * h, perturbation * h]`` along each axis (``h`` the grid spacing of that
    axis), except along the axes where it lies on the box boundary: points on a box face
    move within the face, points on an edge along the edge, corners stay, so the box is
    kept exactly.

    Parameters
    ----------
    shape : tuple of 3 int
        Box cells along x, y, z; the mesh has ``6 * nx * ny * nz`` tetrahedra.
    lengths : tuple of 3 float
        Box side lengths.
    perturbation : float
        Largest move as a fraction of the spacing, in ``[0, 0.25)``: below 1/4 no
        tetrahedron can be inverted.
    seed : int
        Seed of the random moves; the mesh is a function of all arguments.

    Returns
    -------
    UnstructuredMesh
        One ``tetra`` block, cell ``6 * b + t`` being tetrahedron ``t`` of box cell ``b``
        (x fastest).

    Raises
    ------
    ValueError
        If ``shape``, ``lengths`` or ``perturbation`` are out of range.
    """
    shape, lengths = _check_box(shape, lengths)
    if not 0.0 <= perturbation < 0.25:
        raise ValueError(
            f"perturbation must be in [0, 0.25) so that no tetrahedron inverts, "
            f"got {perturbation!r}"
        )
    points = _box_points(shape, lengths)
    spacing = lengths / np.array(shape)
    moves = np.random.default_rng(seed).uniform(-1.0, 1.0, size=points.shape)
    moves *= perturbation * spacing
    on_boundary = np.isclose(points, 0.0, rtol=0.0, atol=1e-12 * lengths.max()) | np.isclose(
        points, lengths, rtol=1e-12, atol=0.0
    )
    moves[on_boundary] = 0.0
    points += moves
    tets = _box_corners(shape)[:, _KUHN_TETS].reshape(-1, 4)
    return build_mesh(points, [("tetra", tets)])


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def box_shape(cells: int, kind: str = "hex") -> tuple[int, int, int]:
    """The most cube-like box grid for exactly ``cells`` cells of ``kind``.

    Among the grids ``nx * ny * nz`` of the right size (``cells`` for hexahedra,
    ``cells / 6`` for tetrahedra, 6 per box cell), the one of least surface
    ``nx ny + ny nz + nz nx`` is chosen: the closest to a cube, and the fewest faces.

    Parameters
    ----------
    cells : int
        Number of cells wanted, positive.
    kind : {"hex", "tet"}
        Cell type.

    Returns
    -------
    tuple of 3 int
        ``(nx, ny, nz)`` in increasing order.

    Raises
    ------
    ValueError
        If ``kind`` is unknown, ``cells`` not positive, or, for tetrahedra, not a multiple
        of 6 (the message names the nearest counts that are).
    """
    if kind not in ("hex", "tet"):
        raise ValueError(f"kind must be 'hex' or 'tet', got {kind!r}")
    if isinstance(cells, bool) or not isinstance(cells, int | np.integer) or cells < 1:
        raise ValueError(f"cells must be a positive integer, got {cells!r}")
    cells = int(cells)
    boxes = cells
    if kind == "tet":
        if cells % 6:
            below, above = cells - cells % 6, cells - cells % 6 + 6
            nearest = f"{below} or {above}" if below else f"{above}"
            raise ValueError(
                f"a tet box has 6 tetrahedra per box cell, so cells must be a multiple of 6, "
                f"got {cells}: nearest counts that work are {nearest}"
            )
        boxes = cells // 6
    best = None
    for nx in _divisors(boxes):
        if nx**3 > boxes:
            break
        rest = boxes // nx
        for ny in _divisors(rest):
            nz = rest // ny
            if ny < nx or nz < ny:
                continue
            candidate = (nx * ny + ny * nz + nz * nx, (nx, ny, nz))
            best = min(best, candidate) if best else candidate
    return best[1]


def box_mesh(cells: int, kind: str = "hex", **kw) -> UnstructuredMesh:
    """A box mesh of exactly ``cells`` cells with cube-shaped grid cells.

    The grid is :func:`box_shape`'s and, unless ``lengths`` is given, the box is
    ``(nx, ny, nz) / max(nx, ny, nz)`` so that its longest side is 1 and grid cells are
    cubes.

    Parameters
    ----------
    cells : int
        Exact number of cells; for ``"tet"`` a multiple of 6.
    kind : {"hex", "tet"}
        :func:`box_hex_mesh` or :func:`perturbed_tet_mesh`.
    **kw
        Further arguments of that generator (``lengths``; ``perturbation``, ``seed``).

    Returns
    -------
    UnstructuredMesh
        A mesh of ``cells`` cells.

    Raises
    ------
    ValueError
        As :func:`box_shape`, or for invalid generator arguments.
    """
    shape = box_shape(cells, kind)
    kw.setdefault("lengths", np.array(shape) / max(shape))
    if kind == "hex":
        return box_hex_mesh(shape, **kw)
    return perturbed_tet_mesh(shape, **kw)
