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
