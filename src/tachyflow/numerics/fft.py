"""Planned FFTs (FFTW through pyFFTW) along one axis, and modified wavenumbers.

Plans are made once for fixed, aligned arrays (DESIGN: "plans are built once") and then
executed many times. FFTW is used rather than scipy.fft because it measured about twice
as fast here on the strided batches a pencil solver transforms (docs/benchmarks.md).
"""

from __future__ import annotations

import numpy as np

from tachyflow.runtime import threads_per_rank

PLANNING = {"estimate": "FFTW_ESTIMATE", "measure": "FFTW_MEASURE", "patient": "FFTW_PATIENT"}
DIRECTIONS = {
    "r2c": "FFTW_FORWARD",
    "c2r": "FFTW_BACKWARD",
    "forward": "FFTW_FORWARD",
    "backward": "FFTW_BACKWARD",
    "dct": "FFTW_REDFT10",
    "idct": "FFTW_REDFT01",
}


def empty(shape, dtype) -> np.ndarray:
    """An uninitialised array aligned for FFTW's SIMD kernels."""
    import pyfftw  # here, not above: a command line's planning choices need none of it

    return pyfftw.empty_aligned(tuple(shape), dtype=dtype)


class AxisTransform:
    """One planned FFT along ``axis`` from ``source`` into ``target`` (unnormalised).

    ``kind``: ``"r2c"`` (real to half-spectrum), ``"c2r"`` (its inverse; destroys the
    source), ``"forward"`` or ``"backward"`` (complex to complex, may be in place),
    ``"dct"`` or ``"idct"`` (real to real, may be in place: the cosine transforms DCT-II and
    DCT-III, FFTW's REDFT10 and REDFT01, which diagonalise a second difference with zero
    gradient at both ends; one after the other multiply by ``2 n``). Empty arrays (a rank
    with an empty piece) make a transform that does nothing.
    """

    def __init__(
        self,
        source: np.ndarray,
        target: np.ndarray,
        axis: int,
        kind: str,
        planning: str = "measure",
    ):
        if kind not in DIRECTIONS:
            raise ValueError(f"transform kind must be one of {sorted(DIRECTIONS)}: {kind!r}")
        if planning not in PLANNING:
            raise ValueError(f"planning must be one of {sorted(PLANNING)}, got {planning!r}")
        self.source, self.target = source, target
        self._plan = None
        if source.size and target.size:
            import pyfftw

            direction = DIRECTIONS[kind]
            flags = [PLANNING[planning]] + (["FFTW_DESTROY_INPUT"] if kind == "c2r" else [])
            # Planning with MEASURE overwrites the arrays: plan on them before they hold data.
            self._plan = pyfftw.FFTW(
                source,
                target,
                axes=(axis,),
                direction=direction,
                flags=flags,
                threads=threads_per_rank(),
            )

    def __call__(self) -> np.ndarray:
        """Transform the current contents of ``source`` into ``target``."""
        if self._plan is not None:
            self._plan.execute()
        return self.target


def half_spectrum_length(n: int) -> int:
    """Number of complex coefficients of a real transform of length ``n``."""
    return n // 2 + 1


def laplacian_eigenvalues(n: int, spacing: float, count: int | None = None) -> np.ndarray:
    """Eigenvalues of the periodic second difference ``(f[j-1] - 2 f[j] + f[j+1]) / h²``.

    Entry ``m`` belongs to Fourier mode ``m`` (of a complex transform, or the first
    ``count = n // 2 + 1`` of a real one) and equals ``-(2 - 2 cos(2 π m / n)) / h²``: the
    exact "modified wavenumber" of the discrete operator, not the spectral ``-k²``, so a
    Poisson solve inverts the discrete operator. Modes ``m`` and ``n - m`` share it.
    """
    m = np.arange(n if count is None else count)
    return -(2.0 - 2.0 * np.cos(2.0 * np.pi * m / n)) / spacing**2


def neumann_laplacian_eigenvalues(n: int, spacing: float) -> np.ndarray:
    """Eigenvalues of the second difference with zero gradient at both ends (the ghost
    beyond each end equal to the end value), one per cosine (DCT-II) mode ``m``:
    ``-(2 - 2 cos(π m / n)) / h²``."""
    m = np.arange(n)
    return -(2.0 - 2.0 * np.cos(np.pi * m / n)) / spacing**2


def stretched_neumann_eigenpairs(widths: np.ndarray):
    """The eigen-decomposition of the finite-volume second difference on cells of
    ``widths``, zero gradient at both ends: ``(L p)_i = (flux_{i+1/2} - flux_{i-1/2}) /
    width_i`` with ``flux_{i+1/2} = (p_{i+1} - p_i) / gap_{i+1/2}``, ``gap`` the distance
    between the centres.

    ``L = W⁻¹ A`` with ``W`` the widths and ``A`` symmetric, so ``L = B Λ F`` with
    ``F = Qᵀ W^½``, ``B = W^-½ Q`` (``B F = I``) from the symmetric ``W^-½ A W^-½ =
    Q Λ Qᵀ`` (LAPACK's ``dsyevd``, once). Returns ``(eigenvalues, forward, backward)``,
    the eigenvalues descending from the constant mode's 0 (set exactly) as the cosine
    transform's modes run; on uniform cells they equal
    :func:`neumann_laplacian_eigenvalues` to round-off.
    """
    from scipy.linalg import eigh

    widths = np.asarray(widths, dtype=np.float64)
    if widths.ndim != 1 or widths.size < 1 or not np.all(widths > 0):
        raise ValueError(f"widths must be a 1-D array of positive widths, got {widths!r}")
    n = widths.size
    conductance = 2.0 / (widths[:-1] + widths[1:])  # 1 / gap between neighbouring centres
    operator = np.zeros((n, n))
    index = np.arange(n - 1)
    operator[index, index + 1] = operator[index + 1, index] = conductance
    operator[index, index] -= conductance
    operator[index + 1, index + 1] -= conductance
    root = np.sqrt(widths)
    values, vectors = eigh(operator / np.outer(root, root), driver="evd")
    order = np.argsort(values)[::-1]
    values, vectors = values[order], vectors[:, order]
    values[0] = 0.0  # the constant mode, whatever the round-off
    forward = np.ascontiguousarray(vectors.T * root[None, :])
    backward = np.ascontiguousarray(vectors / root[:, None])
    return values, forward, backward


class DenseAxisTransform:
    """``data ← M data`` along ``axis`` in place, ``M`` a dense square matrix (a BLAS
    matrix product per call): the x "transform" of a stretched x in the pressure solve
    (:func:`stretched_neumann_eigenpairs`), with the interface of :class:`AxisTransform`.
    ``data`` must be C-ordered with ``axis`` 0 or 1; the product goes through a work
    array of ``data``'s shape, made once."""

    def __init__(self, data: np.ndarray, axis: int, matrix: np.ndarray):
        if axis not in (0, 1) or not data.flags.c_contiguous:
            raise ValueError(f"a dense transform needs C-ordered data and axis 0 or 1, got "
                             f"axis {axis!r}")
        n = data.shape[axis] if data.size else matrix.shape[0]
        if matrix.shape != (n, n):
            raise ValueError(f"matrix of shape {matrix.shape} for an axis of {n} points")
        self.source = self.target = data
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float64)
        self.axis = axis
        self._work = np.empty_like(data) if data.size else None

    def __call__(self) -> np.ndarray:
        """Multiply the current contents of the data along the axis, in place."""
        if self._work is None:
            return self.target
        data = self.target
        if self.axis == 0:
            lines = data.reshape(data.shape[0], -1)
            np.matmul(self.matrix, lines, out=self._work.reshape(lines.shape))
        else:  # one product per index along axis 0 (a slab's y)
            lines = data.reshape(data.shape[0], data.shape[1], -1)
            np.matmul(self.matrix, lines, out=self._work.reshape(lines.shape))
        np.copyto(data, self._work)
        return data
