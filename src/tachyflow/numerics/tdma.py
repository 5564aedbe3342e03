"""Batched tridiagonal (Thomas) solves along the middle axis of 3D arrays.

The systems share one set of bands ``lower``, ``diagonal``, ``upper`` (length ``n``) and
differ by a per-line shift of the diagonal, which is how the pressure Poisson equation
looks after Fourier transforms in the other two directions (Kwon, Park & Choi: FFT in two
directions, TDMA in the third). The innermost loop runs over the last, contiguous axis,
so a whole plane of systems is swept at once.

``periodic=True`` solves cyclic systems (``lower[0]`` couples the first unknown to the
last, ``upper[-1]`` the last to the first) with the Sherman–Morrison formula. A *pinned*
line has its first unknown fixed to zero: it makes the singular zero mode of a Neumann
or periodic Poisson problem solvable (the solution is then defined up to a constant).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from tachyflow.numerics.compiled import kernel


def _open_solver(parts: int):
    """The open systems' kernel for right-hand sides of ``parts`` float64 values per unknown
    (1: real, 2: complex, given as its float64 view). ``parts`` is a constant of the
    compiled code: the rows' loops then vectorise, where numba's complex arithmetic and a
    run-time count did not (a rank's 128 x 33 complex lines of 128 at 128^3 on 2 ranks:
    3.1 -> 2.0 ms)."""

    @kernel(error_model="numpy", parallel=True)
    def solve(lower, diagonal, upper, shift, scaled, weights, pinned, rhs):  # pragma: no cover
        # One real division per row and line: the right-hand side is multiplied by the
        # pivot's reciprocal, not divided by it. A plane's factors stay in cache.
        n0, n, _ = rhs.shape
        n2 = shift.shape[1]
        for i in prange(n0):
            factor = np.empty((n, n2))  # each line set its own (threads take the i's)
            inverse = np.empty(n2)
            plane = rhs[i]
            for k in range(n2):
                if pinned[i, k]:
                    inverse[k] = 0.0
                else:
                    inverse[k] = 1.0 / (diagonal[0] + shift[i, k] + scaled[i, k] * weights[0])
                factor[0, k] = upper[0] * inverse[k]
            row = plane[0]
            for k in range(n2):
                for value in range(parts * k, parts * k + parts):
                    row[value] *= inverse[k]
            for k in range(n2):  # a pinned line's first unknown is 0, whatever its row held
                if pinned[i, k]:
                    for value in range(parts * k, parts * k + parts):
                        row[value] = 0.0
            for j in range(1, n):
                for k in range(n2):
                    inverse[k] = 1.0 / (
                        diagonal[j]
                        + shift[i, k]
                        + scaled[i, k] * weights[j]
                        - lower[j] * factor[j - 1, k]
                    )
                    factor[j, k] = upper[j] * inverse[k]
                row, above = plane[j], plane[j - 1]
                for k in range(n2):
                    for value in range(parts * k, parts * k + parts):
                        row[value] = (row[value] - lower[j] * above[value]) * inverse[k]
            for j in range(n - 2, -1, -1):
                row, below = plane[j], plane[j + 1]
                for k in range(n2):
                    for value in range(parts * k, parts * k + parts):
                        row[value] -= factor[j, k] * below[value]

    return solve


_SOLVE_OPEN = {np.dtype(np.float64): _open_solver(1), np.dtype(np.complex128): _open_solver(2)}


def _cyclic_solver(parts: int):
    """The cyclic systems' kernel for right-hand sides of ``parts`` float64 values per
    unknown (as :func:`_open_solver`)."""

    @kernel(error_model="numpy")
    def solve(lower, diagonal, upper, shift, pinned, rhs, factor, z):  # pragma: no cover
        # Sherman–Morrison: A = T + u v^T with u = (gamma, 0, ..., 0, upper[-1]),
        # v = (1, 0, ..., 0, lower[0] / gamma); T is A with the corners folded into its
        # diagonal. z solves T z = u: per line, real.
        n0, n, _ = rhs.shape
        n2 = shift.shape[1]
        alpha = lower[0]
        beta = upper[n - 1]
        pivot = np.empty(n2)
        scale = np.empty(parts * n2)
        for i in range(n0):
            plane = rhs[i]
            row = plane[0]
            for k in range(n2):
                gamma = -(diagonal[0] + shift[i, k])
                # x[0] = 0 removes both corner couplings of a pinned line: an open system.
                pivot[k] = 1.0 if pinned[i, k] else diagonal[0] + shift[i, k] - gamma
                factor[0, k] = 0.0 if pinned[i, k] else upper[0] / pivot[k]
                z[0, k] = 0.0 if pinned[i, k] else gamma / pivot[k]
            for k in range(n2):
                for value in range(parts * k, parts * k + parts):
                    row[value] = 0.0 if pinned[i, k] else row[value] / pivot[k]
            for j in range(1, n):
                last = j == n - 1
                source = beta if last else 0.0
                for k in range(n2):
                    diagonal_j = diagonal[j] + shift[i, k]
                    if last and not pinned[i, k]:
                        diagonal_j -= alpha * beta / -(diagonal[0] + shift[i, k])
                    pivot[k] = diagonal_j - lower[j] * factor[j - 1, k]
                    factor[j, k] = upper[j] / pivot[k]
                    z[j, k] = (source - lower[j] * z[j - 1, k]) / pivot[k]
                row, above = plane[j], plane[j - 1]
                for k in range(n2):
                    for value in range(parts * k, parts * k + parts):
                        row[value] = (row[value] - lower[j] * above[value]) / pivot[k]
            for j in range(n - 2, -1, -1):
                row, below = plane[j], plane[j + 1]
                for k in range(n2):
                    for value in range(parts * k, parts * k + parts):
                        row[value] -= factor[j, k] * below[value]
                    z[j, k] -= factor[j, k] * z[j + 1, k]
            for k in range(n2):
                gamma = -(diagonal[0] + shift[i, k])
                denominator = 1.0 + z[0, k] + alpha * z[n - 1, k] / gamma
                for value in range(parts * k, parts * k + parts):
                    numerator = plane[0, value] + alpha * plane[n - 1, value] / gamma
                    scale[value] = 0.0 if pinned[i, k] else numerator / denominator
            for j in range(n):
                row = plane[j]
                for k in range(n2):
                    for value in range(parts * k, parts * k + parts):
                        row[value] -= scale[value] * z[j, k]

    return solve


_SOLVE_CYCLIC = {
    np.dtype(np.float64): _cyclic_solver(1),
    np.dtype(np.complex128): _cyclic_solver(2),
}


def solve_tridiagonal_lines(
    lower, diagonal, upper, rhs, shift=None, pinned=None, periodic=False, scaled=None,
    weights=None,
):
    """Solve ``n0 * n2`` tridiagonal systems along axis 1 of ``rhs``, in place.

    Row ``j`` of the system of line ``(i, k)`` reads ``lower[j] x[j-1] + (diagonal[j] +
    shift[i, k] + scaled[i, k] weights[j]) x[j] + upper[j] x[j+1] = rhs[i, j, k]``.

    Parameters
    ----------
    lower, diagonal, upper : array of shape (n,)
        Bands. ``lower[0]`` and ``upper[-1]`` are ignored unless ``periodic``, where they
        are the corner couplings.
    rhs : float64 or complex128 array of shape (n0, n, n2)
        Right-hand sides; overwritten with the solutions and returned. Complex right-hand
        sides (Fourier modes) are solved with the same real bands.
    shift : array of shape (n0, n2), optional
        Added to the diagonal of each line (default 0).
    pinned : bool array of shape (n0, n2), optional
        Lines whose first unknown is set to 0 (for singular zero modes).
    periodic : bool
        Cyclic systems, solved with Sherman–Morrison (needs ``n >= 3``).
    scaled : array of shape (n0, n2), optional
        A second per-line shift, multiplied by ``weights[j]`` in row ``j`` (the azimuthal
        eigenvalue over r² of a Poisson equation in cylindrical coordinates); open systems
        only.
    weights : array of shape (n,), optional
        Row weights of ``scaled``.
    """
    rhs = np.asarray(rhs)
    if rhs.ndim != 3 or rhs.dtype not in (np.float64, np.complex128):
        raise TypeError(
            f"rhs must be a 3D float64 or complex128 array, got {rhs.ndim}D {rhs.dtype}"
        )
    n0, n, n2 = rhs.shape
    bands = [np.ascontiguousarray(band, dtype=np.float64) for band in (lower, diagonal, upper)]
    for name, band in zip(("lower", "diagonal", "upper"), bands, strict=True):
        if band.shape != (n,):
            raise ValueError(f"{name} band has shape {band.shape}, expected ({n},)")
    shift = np.zeros((n0, n2)) if shift is None else np.ascontiguousarray(shift, np.float64)
    pinned = (
        np.zeros((n0, n2), dtype=np.bool_)
        if pinned is None
        else np.ascontiguousarray(pinned, dtype=np.bool_)
    )
    if shift.shape != (n0, n2) or pinned.shape != (n0, n2):
        raise ValueError(
            f"shift {shift.shape} and pinned {pinned.shape} must have shape ({n0}, {n2})"
        )
    if (scaled is None) != (weights is None):
        raise ValueError("scaled and weights go together: give both or neither")
    if scaled is not None:
        if periodic:
            raise ValueError("a weighted shift is supported for open systems only")
        scaled = np.ascontiguousarray(scaled, np.float64)
        weights = np.ascontiguousarray(weights, np.float64)
        if scaled.shape != (n0, n2) or weights.shape != (n,):
            raise ValueError(
                f"scaled {scaled.shape} and weights {weights.shape} must have shapes "
                f"({n0}, {n2}) and ({n},)"
            )
    if rhs.size == 0:
        return rhs
    if periodic and n < 3:
        raise ValueError(f"cyclic tridiagonal systems need at least 3 unknowns, got {n}")
    # The kernels read the lines' values as float64, side by side along the last axis.
    values = rhs if rhs.strides[2] == rhs.itemsize else rhs.copy()
    if periodic:
        scratch = (np.empty((n, n2)), np.empty((n, n2)))
        _SOLVE_CYCLIC[rhs.dtype](*bands, shift, pinned, values.view(np.float64), *scratch)
    else:
        if scaled is None:  # adding 0.0 changes no value: the plain systems, bit for bit
            scaled, weights = np.zeros((n0, n2)), np.zeros(n)
        _SOLVE_OPEN[rhs.dtype](*bands, shift, scaled, weights, pinned, values.view(np.float64))
    if values is not rhs:
        rhs[...] = values
    return rhs


@numba.njit(error_model="numpy", inline="always")
def eliminate_plane(lower, inverse_pivot, source, at, lines, to):  # pragma: no cover
    """The forward sweep of a :class:`FactoredTridiagonal`'s systems in one plane
    (compiled, for kernels): rows ``j`` of the plane ``source[at]`` (lines along its axis
    0, side by side along axis 1) eliminated into the plane ``lines[to]``; ``source`` and
    ``lines`` are 4D, ``at`` and ``to`` pairs of indices, and the two planes may be the
    same. :func:`substitute_row` from the last row up completes the solve."""
    # Whole rows at a time, indexed from the arguments: LLVM vectorises the rows' loops
    # (writing through views of a plane made here it did not, or not all).
    (a0, a1), (t0, t1) = at, to
    n, n2 = lines.shape[2], lines.shape[3]
    for k in range(n2):
        lines[t0, t1, 0, k] = source[a0, a1, 0, k] * inverse_pivot[0]
    for j in range(1, n):
        for k in range(n2):
            lines[t0, t1, j, k] = (
                source[a0, a1, j, k] - lower[j] * lines[t0, t1, j - 1, k]
            ) * inverse_pivot[j]


@numba.njit(error_model="numpy", inline="always")
def substitute_row(factor, lines, to, j):  # pragma: no cover
    """Row ``j`` of the plane ``lines[to]`` (4D, ``to`` a pair of indices) solved by the
    backward sweep, once the row below is (compiled, for kernels; the last row is solved
    by :func:`eliminate_plane` already)."""
    t0, t1 = to
    for k in range(lines.shape[3]):
        lines[t0, t1, j, k] -= factor[j] * lines[t0, t1, j + 1, k]


@numba.njit(error_model="numpy", inline="always")
def sweep_plane(lower, inverse_pivot, factor, source, at, lines, to):  # pragma: no cover
    """Both sweeps (:func:`eliminate_plane`, then :func:`substitute_row` from the last row
    up) of a :class:`FactoredTridiagonal`'s systems in one plane (compiled, for kernels)."""
    eliminate_plane(lower, inverse_pivot, source, at, lines, to)
    for j in range(lines.shape[2] - 2, -1, -1):
        substitute_row(factor, lines, to, j)


@kernel(error_model="numpy", parallel=True)
def _solve_factored(
    lower, inverse_pivot, factor, rhs, target, at_i, at_j, at_k, chunks
):  # pragma: no cover
    # rhs: the right-hand sides with an axis of length 1 after the first (see
    # sweep_plane). target of shape (0, 0, 0): none, the solution overwrites rhs. Otherwise
    # rhs is only read: a plane's sweeps run in a plane-sized buffer (in cache; one per run
    # of planes, ``chunks`` runs: one per thread), then added to target's block at
    # (at_i, at_j, at_k).
    n0, _, n, n2 = rhs.shape
    add = target.shape[0] > 0
    for chunk in prange(chunks):
        buffer = np.empty((1, 1, n, n2) if add else (0, 0, 0, 0))
        for i in range(chunk * n0 // chunks, (chunk + 1) * n0 // chunks):
            if add:
                sweep_plane(lower, inverse_pivot, factor, rhs, (i, 0), buffer, (0, 0))
                for j in range(n):
                    for k in range(n2):
                        target[at_i + i, at_j + j, at_k + k] += buffer[0, 0, j, k]
            else:
                sweep_plane(lower, inverse_pivot, factor, rhs, (i, 0), rhs, (i, 0))


_NO_TARGET = np.empty((0, 0, 0))


class FactoredTridiagonal:
    """One tridiagonal matrix factorised once, then applied to every line along axis 1.

    For systems that are the same on every line (implicit viscous terms): the solve is a
    forward and a backward sweep with no division.
    """

    def __init__(self, lower, diagonal, upper):
        self.lower = np.ascontiguousarray(lower, dtype=np.float64)
        diagonal = np.asarray(diagonal, dtype=np.float64)
        upper = np.asarray(upper, dtype=np.float64)
        n = len(diagonal)
        self.inverse_pivot = np.empty(n)
        self.factor = np.empty(n)
        previous_factor = 0.0
        for j in range(n):
            pivot = diagonal[j] - (self.lower[j] * previous_factor if j else 0.0)
            self.inverse_pivot[j] = 1.0 / pivot
            previous_factor = self.factor[j] = upper[j] / pivot

    def solve(self, rhs: np.ndarray, add_to: np.ndarray | None = None, at=(0, 0, 0)):
        """Solve in place for a float64 array of shape ``(n0, n, n2)``; returns it.

        With ``add_to``, a C-ordered array holding from index ``at`` a block of ``rhs``'s
        shape (a ghosted field and its first owned point), the solution is added to that
        block instead (an implicit increment added to its field) and ``rhs`` is left
        unchanged: one pass over the field, nothing written back to ``rhs``. Returns
        ``add_to`` then.
        """
        if add_to is None:
            add_to, at = _NO_TARGET, (0, 0, 0)
        elif not add_to.flags.c_contiguous or add_to.dtype != np.float64:
            raise ValueError("add_to must be a C-ordered float64 array (the whole field)")
        elif len(at) != 3 or any(
            not 0 <= start <= extent - size
            for start, size, extent in zip(at, rhs.shape, add_to.shape, strict=True)
        ):
            raise ValueError(
                f"a block of shape {rhs.shape} at {tuple(at)} does not fit in add_to of "
                f"shape {add_to.shape}"
            )
        if rhs.size:
            chunks = min(numba.get_num_threads(), rhs.shape[0])
            _solve_factored(
                self.lower, self.inverse_pivot, self.factor, rhs[:, None], add_to,
                *map(int, at), chunks,
            )
        return rhs if add_to is _NO_TARGET else add_to


@kernel(error_model="numpy")
def _factor_periodic_diffusion(coupling, inverse_pivot, upper, z, denominator):  # pragma: no cover
    n1, n = inverse_pivot.shape
    for j in range(n1):
        if coupling[j] == 0.0:  # an explicit row: the identity, never solved
            continue
        a = -coupling[j]
        b = 1.0 + 2.0 * coupling[j]
        # Sherman–Morrison: A = T + u vᵀ, u = (γ, 0, ..., 0, a), v = (1, 0, ..., 0, a / γ),
        # T tridiagonal with the corners folded into its first and last diagonal entries.
        gamma = -b
        for k in range(n):
            diagonal = b
            if k == 0:
                diagonal = b - gamma
            elif k == n - 1:
                diagonal = b - a * a / gamma
            pivot = diagonal - (a * upper[j, k - 1] if k else 0.0)
            inverse_pivot[j, k] = pivot
            upper[j, k] = a / pivot
        z[j, 0] = gamma / inverse_pivot[j, 0]
        for k in range(1, n):
            source = a if k == n - 1 else 0.0
            z[j, k] = (source - a * z[j, k - 1]) / inverse_pivot[j, k]
        for k in range(n - 2, -1, -1):
            z[j, k] -= upper[j, k] * z[j, k + 1]
        denominator[j] = 1.0 + z[j, 0] + a * z[j, n - 1] / gamma
        for k in range(n):
            inverse_pivot[j, k] = 1.0 / inverse_pivot[j, k]


@kernel(error_model="numpy")
def _solve_factored_periodic_diffusion(
    coupling, inverse_pivot, upper, z, denominator, rhs, lines
):  # pragma: no cover
    n0, n1, n = rhs.shape
    for j in range(n1):
        if coupling[j] == 0.0:
            continue
        a = -coupling[j]
        gamma = -(1.0 + 2.0 * coupling[j])
        # The lines of row j side by side, lines[k, i]: every sweep runs over i, contiguous.
        for i in range(n0):
            for k in range(n):
                lines[k, i] = rhs[i, j, k]
        for i in range(n0):
            lines[0, i] *= inverse_pivot[j, 0]
        for k in range(1, n):
            for i in range(n0):
                lines[k, i] = (lines[k, i] - a * lines[k - 1, i]) * inverse_pivot[j, k]
        for k in range(n - 2, -1, -1):
            for i in range(n0):
                lines[k, i] -= upper[j, k] * lines[k + 1, i]
        for i in range(n0):
            scale = (lines[0, i] + a * lines[n - 1, i] / gamma) / denominator[j]
            for k in range(n):
                rhs[i, j, k] = lines[k, i] - scale * z[j, k]


class FactoredPeriodicDiffusion:
    """The cyclic systems ``(1 + 2 c_j) x_k - c_j (x_{k-1} + x_{k+1}) = rhs[i, j, k]``
    (cyclic in k, the last axis) factorised once per row ``j``, then solved for any
    right-hand side: an implicit periodic diffusion step (the θ direction of a cylindrical
    grid, ``c_j = α Δt ν / (2 r_j² Δθ²)``). Rows with ``c_j = 0`` are the identity and
    cost nothing.

    Parameters
    ----------
    coupling : array of shape (n1,)
        ``c_j >= 0``.
    n : int
        Unknowns per cyclic system (``>= 3``).
    """

    def __init__(self, coupling, n: int):
        if n < 3:
            raise ValueError(f"cyclic systems need at least 3 unknowns, got {n}")
        self.coupling = np.ascontiguousarray(coupling, dtype=np.float64)
        if self.coupling.ndim != 1:
            raise ValueError(f"coupling must be 1D, got shape {self.coupling.shape}")
        n1 = len(self.coupling)
        self.n = n
        self.inverse_pivot = np.zeros((n1, n))
        self.upper = np.zeros((n1, n))
        self.z = np.zeros((n1, n))
        self.denominator = np.ones(n1)
        _factor_periodic_diffusion(
            self.coupling, self.inverse_pivot, self.upper, self.z, self.denominator
        )

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """Solve in place for a C-contiguous float64 array of shape ``(n0, n1, n)``;
        returns it."""
        if rhs.ndim != 3 or rhs.dtype != np.float64 or not rhs.flags.c_contiguous:
            raise TypeError(f"rhs must be a C-contiguous 3D float64 array, got {rhs.dtype} "
                            f"{rhs.ndim}D")
        if rhs.shape[1:] != (len(self.coupling), self.n):
            raise ValueError(
                f"rhs has shape {rhs.shape}, expected (n0, {len(self.coupling)}, {self.n})"
            )
        if rhs.size:
            lines = np.empty((self.n, rhs.shape[0]))
            _solve_factored_periodic_diffusion(
                self.coupling, self.inverse_pivot, self.upper, self.z, self.denominator,
                rhs, lines,
            )
        return rhs


def solve_periodic_diffusion(rhs: np.ndarray, coupling: np.ndarray) -> np.ndarray:
    """Solve ``(1 + 2 c_j) x_k - c_j (x_{k-1} + x_{k+1}) = rhs[i, j, k]``, cyclic in k
    (the last, contiguous axis), in place (:class:`FactoredPeriodicDiffusion` factorised
    for this one solve). ``n >= 3``. Rows with ``c_j = 0`` are left as they are."""
    if rhs.ndim != 3 or rhs.dtype != np.float64 or not rhs.flags.c_contiguous:
        raise TypeError(f"rhs must be a C-contiguous 3D float64 array, got {rhs.dtype} "
                        f"{rhs.ndim}D")
    coupling = np.ascontiguousarray(coupling, dtype=np.float64)
    if coupling.shape != (rhs.shape[1],):
        raise ValueError(f"coupling has shape {coupling.shape}, expected ({rhs.shape[1]},)")
    return FactoredPeriodicDiffusion(coupling, rhs.shape[2]).solve(rhs)
